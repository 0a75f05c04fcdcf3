"""Links in PDF documents: URI link annotations and URLs written in the text (ISO 32000-1).
(pure)

Reports, theses and scanned collections link onward from their PDFs, and those links are often
the only way to the pages they cite (Zeno reads PDFs for that reason, at its users' request).
Two sources, both read by pypdf (imported by no other module):

* link annotations (section 12.5.6.5: ``/Annots`` entries of ``/Subtype /Link``) whose action is
  a URI action (section 12.6.4.7: ``/A << /S /URI /URI (…) >>``), in page order;
* ``http://`` and ``https://`` URLs in the page text (what a reader clicks in most viewers
  even without an annotation), trailing punctuation removed.

All are pages: scope decides on them. A PDF is hostile input for a parser written in Python, so
this module is bounded in what it reads (``max_pages``, and only the bytes the fetch kept), and
:mod:`archiver.extract.isolated` runs it in a child process with a deadline and a memory cap;
every pypdf failure becomes :attr:`PdfLinks.error`, never an exception.
"""

from __future__ import annotations

import io
import logging
import re
import time
import warnings
from dataclasses import dataclass
from typing import Any

from pypdf import PdfReader

from archiver.extract.found import MAX_LINKS, Collector, Extractor, Links

PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
DEFAULT_MAX_PAGES = 1000
DEFAULT_SECONDS = 10.0
#: the reading process's address space: pypdf needs a few times the file's size
DEFAULT_MEMORY = 1024 * 1024 * 1024
_TEXT_URL = re.compile(r"https?://[^\s<>\"'{}|\\^`\[\]]{3,2048}")
_TRAILING = ".,;:!?)]}'\""


@dataclass(frozen=True, slots=True)
class PdfLimits:
    """How much of a PDF is read: pages, and the reading process's time and memory."""

    max_pages: int = DEFAULT_MAX_PAGES
    seconds: float = DEFAULT_SECONDS
    memory: int = DEFAULT_MEMORY


@dataclass(frozen=True, slots=True)
class PdfLinks:
    links: Links
    pages: int = 0  #: pages read
    page_count: int = 0  #: pages the document has (as far as it could be read)
    error: str | None = None  #: why it could not be read to its end


def is_pdf(body: bytes) -> bool:
    """The ``%PDF-`` header, which readers look for in the first 1024 bytes (section 7.5.2)."""
    return b"%PDF-" in body[:1024]


def text_urls(text: str) -> list[str]:
    """The http(s) URLs in a page's text, trailing punctuation dropped."""
    return [match.group(0).rstrip(_TRAILING) for match in _TEXT_URL.finditer(text)]


def _uri_of(annotation: Any) -> str | None:
    annotation = annotation.get_object()
    if annotation.get("/Subtype") != "/Link":
        return None
    action = annotation.get("/A")
    if action is None:
        return None
    action = action.get_object()
    if action.get("/S") != "/URI":
        return None
    uri = action.get("/URI")
    if uri is None:
        return None
    uri = uri.get_object()
    if isinstance(uri, bytes):
        return uri.decode("latin-1")
    return str(uri)


def extract_pdf(
    body: bytes,
    url: str,
    *,
    max_pages: int = DEFAULT_MAX_PAGES,
    max_links: int = MAX_LINKS,
    seconds: float | None = None,
) -> PdfLinks:
    """The links of a PDF fetched from ``url`` (already content-decoded), from its first
    ``max_pages`` pages, and from as many as ``seconds`` allow (checked between pages: reading
    a page's text costs about 10 ms, so a long document stops with the links of the pages it
    read, where a deadline that kills the reader would lose them all)."""
    stop_at = time.monotonic() + seconds if seconds is not None else None
    collect = Collector(url, url, max_links, Extractor.PDF)
    pages_read = 0
    page_count = 0
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings are about the file
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = PdfReader(io.BytesIO(body), strict=False)
            page_count = len(reader.pages)
            for page in reader.pages:
                if pages_read >= max_pages:
                    break
                if stop_at is not None and time.monotonic() >= stop_at:
                    break
                pages_read += 1
                annotations = page.get("/Annots")
                if annotations is not None:
                    for annotation in annotations.get_object():
                        uri = _uri_of(annotation)
                        if uri:
                            collect.page(uri.strip())
                for found in text_urls(page.extract_text() or ""):
                    collect.page(found)
                if collect.truncated:
                    break
    except Exception as exc:  # hostile input: any pypdf failure is the file's
        return PdfLinks(collect.links(), pages_read, page_count, f"{type(exc).__name__}: {exc}")
    error = None
    if page_count > pages_read and not collect.truncated:
        why = "in time" if pages_read < max_pages else "(--pdf-max-pages)"
        error = f"read the first {pages_read} of {page_count} pages {why}"
    return PdfLinks(collect.links(), pages_read, page_count, error)


__all__ = ["PDF_TYPES", "PdfLimits", "PdfLinks", "extract_pdf", "is_pdf", "text_urls"]
