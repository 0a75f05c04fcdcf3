"""WARC 1.1 files: records built from exchanges, written by the single writer under their names,
read back by the one reader.
"""
