"""The ceiling for an aiohttp crawler: GET every URL of a known list, and nothing else.

    python bare_client.py BASE URLS_FILE [--concurrency 32] [--parse] [--asyncio]

``concurrency`` coroutines share one queue and one ``ClientSession`` (keep-alive pool of the
same size, ``auto_decompress`` off, no redirects followed) and read every body. With
``--parse`` each ``text/html`` body is also parsed with selectolax (Lexbor) and the values of
``href``, ``src`` and ``srcset`` attributes are collected, which is the least link extraction
any crawler does. No URL resolution, no dedup, no WARC: the difference between this and a
crawler is the crawler's own work. uvloop is used when installed (archiver uses it too).
Prints one JSON line: requests, bytes, statuses, links, seconds (inside the event loop).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter

import aiohttp


async def crawl(base: str, paths: list[str], concurrency: int, parse: bool) -> dict[str, object]:
    queue: asyncio.Queue[str] = asyncio.Queue()
    for path in paths:
        queue.put_nowait(base.rstrip("/") + path)
    statuses: Counter[int] = Counter()
    totals = {"requests": 0, "bytes": 0, "links": 0}
    parser: type[LexborHTMLParser] | None = None
    if parse:
        from selectolax.lexbor import LexborHTMLParser  # noqa: PLC0415

        parser = LexborHTMLParser

    async def worker(session: aiohttp.ClientSession) -> None:
        while True:
            try:
                url = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            async with session.get(url, allow_redirects=False) as response:
                body = await response.read()
                if parser is not None and response.content_type == "text/html":
                    links = []
                    for node in parser(body).css("[href], [src], [srcset]"):
                        attrs = node.attributes
                        for name in ("href", "src", "srcset"):
                            value = attrs.get(name)
                            if value:
                                links.append(value)
                    totals["links"] += len(links)
                statuses[response.status] += 1
            totals["requests"] += 1
            totals["bytes"] += len(body)

    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)
    start = time.monotonic()
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    seconds = time.monotonic() - start
    return {
        **totals,
        "status": {str(k): v for k, v in sorted(statuses.items())},
        "seconds": round(seconds, 4),
        "per_second": round(totals["requests"] / seconds, 1) if seconds else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("base")
    parser.add_argument("urls_file", help="one URL path per line (/a/b.html)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--parse", action="store_true", help="extract links with selectolax")
    parser.add_argument("--asyncio", action="store_true", help="the default loop, not uvloop")
    args = parser.parse_args()
    with open(args.urls_file) as fh:
        paths = [line.strip() for line in fh if line.strip()]
    coro = crawl(args.base, paths, args.concurrency, args.parse)
    loop = "asyncio"
    if args.asyncio:
        result = asyncio.run(coro)
    else:
        try:
            import uvloop  # noqa: PLC0415

            loop = f"uvloop {getattr(uvloop, '__version__', '?')}"
            result = uvloop.run(coro)
        except ImportError:
            result = asyncio.run(coro)
    result.update(loop=loop, aiohttp=aiohttp.__version__, concurrency=args.concurrency)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
