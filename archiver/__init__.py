"""archiver: an archiving web crawler that writes byte-exact WARC/1.1, CDXJ and WACZ."""

__version__ = "0.1.0"
