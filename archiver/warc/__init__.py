"""WARC 1.1 records: built from exchanges, written by the single writer, read back by the one
reader.
"""
