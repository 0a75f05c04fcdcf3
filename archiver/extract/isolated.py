"""Extractors for hostile formats run in a child process, with CPU and memory caps.

pypdf is written in Python: a crafted PDF can make it loop for minutes, recurse deeply or build
gigabytes of objects, and a call in the crawl's event loop cannot be interrupted. So a PDF is
read by :mod:`archiver.extract.pdfread`, run as a script (standard library and pypdf only, so
the child starts in about a tenth of a second of CPU) in a process of its own: the body goes in
on stdin, the references come back as JSON on stdout and are resolved here. The child caps its
own address space (``RLIMIT_AS``) and CPU time (``RLIMIT_CPU``) before it reads anything, and
answers with the pages it read when its CPU budget is nearly spent; the parent kills it at a
wall-clock guard (three times the budget and ten seconds: a busy machine slows a child without
it spending its CPU) and when the crawl is cancelled. Whatever happens, the cost is one bounded
failure: :attr:`archiver.extract.pdf.PdfLinks.error` says what, and the crawl goes on.
"""

from __future__ import annotations

import asyncio
import json
import sys

from archiver.extract import pdfread
from archiver.extract.found import MAX_LINKS, Collector, Extractor
from archiver.extract.pdf import PdfLimits, PdfLinks, pdf_links
from archiver.extract.pdfread import PdfRefs

#: the wall-clock guard: CPU budget times this, plus GUARD_SECONDS
GUARD_FACTOR = 3.0
GUARD_SECONDS = 10.0


async def read_pdf(
    body: bytes, url: str, *, limits: PdfLimits | None = None, max_links: int = MAX_LINKS
) -> PdfLinks:
    """A PDF's links, read in a child process within the limits."""
    limits = limits or PdfLimits()
    soft = limits.seconds * pdfread.SOFT_SHARE
    argv = [
        sys.executable,
        "-I",  # isolated: no user site, no PYTHON* variables, no current directory on the path
        pdfread.__file__,
        str(limits.max_pages),
        str(max_links * 4),
        repr(soft),
        str(limits.memory),
    ]
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    guard = limits.guard
    if guard is None:
        guard = limits.seconds * GUARD_FACTOR + GUARD_SECONDS
    try:
        output, _ = await asyncio.wait_for(process.communicate(body), guard)
    except TimeoutError:
        return _failed(url, f"the PDF reader was still busy after {guard:g} s")
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    if process.returncode != 0:
        return _failed(
            url,
            f"the PDF reader exited with code {process.returncode} (its caps: "
            f"{limits.seconds:g} s of CPU, {limits.memory // (1024 * 1024)} MiB)",
        )
    try:
        answer = json.loads(output)
        found = PdfRefs(
            refs=[str(ref) for ref in answer["refs"]],
            pages=int(answer["pages"]),
            page_count=int(answer["page_count"]),
            error=answer["error"],
        )
    except (ValueError, KeyError, TypeError) as exc:
        return _failed(url, f"the PDF reader's answer could not be read: {exc}")
    return pdf_links(found, url, max_links=max_links)


def _failed(url: str, error: str) -> PdfLinks:
    return PdfLinks(Collector(url, url, 1, Extractor.PDF).links(), error=error)


__all__ = ["GUARD_FACTOR", "GUARD_SECONDS", "read_pdf"]
