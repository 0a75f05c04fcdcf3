"""Payload digests seen before (this crawl and earlier ones) and conditional recrawls: what becomes
a revisit record.
"""
