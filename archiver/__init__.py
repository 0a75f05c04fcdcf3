"""archiver: an archiving web crawler that writes byte-exact WARC/1.1, CDXJ and WACZ.

Python API::

    import asyncio
    from archiver import Settings, crawl

    result = asyncio.run(crawl(Settings(seeds=("https://example.org/",), output=Path("out"))))
    print(result.status, result.warc_files, result.index, result.summary["captures"])
"""

from archiver.config.settings import Settings, load_settings
from archiver.run.crawler import CrawlResult, crawl
from archiver.version import __version__

__all__ = ["CrawlResult", "Settings", "__version__", "crawl", "load_settings"]
