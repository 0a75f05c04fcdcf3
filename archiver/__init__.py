"""archiver: an archiving web crawler that writes byte-exact WARC/1.1, CDXJ and WACZ.

Python API::

    import asyncio
    from archiver import Settings, crawl

    result = asyncio.run(crawl(Settings(seeds=("https://example.org/",), output=Path("out"))))
    print(result.status, result.warc_files, result.index, result.summary["captures"])

The names are imported when first used (PEP 562), so that importing one module of the package
(``archiver.urls``, a parser) does not import the whole crawler.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from archiver.version import __version__

if TYPE_CHECKING:
    from archiver.config.settings import Settings, load_settings
    from archiver.run.crawler import CrawlResult, crawl

_LAZY = {
    "Settings": "archiver.config.settings",
    "load_settings": "archiver.config.settings",
    "CrawlResult": "archiver.run.crawler",
    "crawl": "archiver.run.crawler",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'archiver' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["CrawlResult", "Settings", "__version__", "crawl", "load_settings"]
