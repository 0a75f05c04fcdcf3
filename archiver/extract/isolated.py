"""Extractors for hostile formats run in a child process, with a deadline and a memory cap.

pypdf is written in Python: a crafted PDF can make it loop for minutes, recurse deeply or build
gigabytes of objects, and a call in the crawl's event loop cannot be interrupted. So a PDF is
read by ``python -m archiver.extract.isolated`` in a process of its own: the body goes in on
stdin, the links come back as JSON on stdout. The child caps its own address space
(``RLIMIT_AS``) and CPU time (``RLIMIT_CPU``) before it reads anything; the parent kills it at
the deadline (and when the crawl is cancelled). Whatever happens, the cost is one bounded
failure: :attr:`archiver.extract.pdf.PdfLinks.error` says what, and the crawl goes on. A child
per document costs about 0.1 s of CPU to start (BENCHMARKS.md), small beside the fetch of a
PDF, and leaves nothing running between documents.
"""

from __future__ import annotations

import asyncio
import json
import math
import resource
import sys

from archiver.extract.found import MAX_LINKS, Collector, Extractor
from archiver.extract.pdf import PdfLimits, PdfLinks

#: the share of the deadline the reader spends on pages before it answers with what it has
#: (the rest is for starting, parsing the file's structure and answering)
SOFT_SHARE = 0.7


async def pdf_links(
    body: bytes, url: str, *, limits: PdfLimits | None = None, max_links: int = MAX_LINKS
) -> PdfLinks:
    """:func:`archiver.extract.pdf.extract_pdf` in a child process, within the limits'
    seconds and bytes of address space."""
    limits = limits or PdfLimits()
    max_pages, timeout, memory = limits.max_pages, limits.seconds, limits.memory
    argv = [
        sys.executable,
        "-m",
        "archiver.extract.isolated",
        url,
        str(max_pages),
        str(max_links),
        str(memory),
        str(math.ceil(timeout) + 1),
        repr(timeout * SOFT_SHARE),
    ]
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(body), timeout)
    except TimeoutError:
        return _failed(url, f"the PDF reader ran out of time ({timeout:g} s)")
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    if process.returncode != 0:
        return _failed(
            url,
            f"the PDF reader exited with code {process.returncode} "
            f"(memory cap {memory // (1024 * 1024)} MiB)",
        )
    try:
        result = json.loads(output)
        collect = Collector(url, url, max_links, Extractor.PDF)
        for page in result["pages"]:
            collect.add_page(str(page))
        collect.truncated = bool(result["truncated"])
        return PdfLinks(collect.links(), int(result["read"]), int(result["count"]), result["error"])
    except (ValueError, KeyError, TypeError) as exc:
        return _failed(url, f"the PDF reader's answer could not be read: {exc}")


def _failed(url: str, error: str) -> PdfLinks:
    return PdfLinks(Collector(url, url, 1, Extractor.PDF).links(), error=error)


def _child(argv: list[str]) -> int:
    """Read the body on stdin, write the links as JSON on stdout, within the limits given."""
    url, max_pages, max_links, memory, cpu, soft = argv
    resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
    resource.setrlimit(resource.RLIMIT_CPU, (int(cpu), int(cpu)))
    sys.setrecursionlimit(4000)  # pypdf recurses over nested objects; a deep one ends here
    body = sys.stdin.buffer.read()
    from archiver.extract.pdf import extract_pdf  # noqa: PLC0415 - after the limits are set

    found = extract_pdf(
        body, url, max_pages=int(max_pages), max_links=int(max_links), seconds=float(soft)
    )
    answer = {
        "pages": list(found.links.pages),
        "truncated": found.links.truncated,
        "read": found.pages,
        "count": found.page_count,
        "error": found.error,
    }
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))


__all__ = ["pdf_links"]
