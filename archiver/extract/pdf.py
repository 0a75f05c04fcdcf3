"""Links in PDF documents: URI link annotations and URLs written in the text (ISO 32000-1).
(pure)

Reports, theses and scanned collections link onward from their PDFs, and those links are often
the only way to the pages they cite (Zeno reads PDFs for that reason, at its users' request).
:mod:`archiver.extract.pdfread` reads the references with pypdf (imported by no other module);
here they are resolved against the PDF's URL. All are pages: scope decides on them. A PDF is
hostile input for a parser written in Python, so reading is bounded (``max_pages``, CPU time,
and only the bytes the fetch kept), and :mod:`archiver.extract.isolated` runs it in a child
process with a memory cap; every pypdf failure becomes :attr:`PdfLinks.error`.
"""

from __future__ import annotations

from dataclasses import dataclass

from archiver.extract.found import MAX_LINKS, Collector, Extractor, Links
from archiver.extract.pdfread import PdfRefs, read_refs, text_urls

PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
DEFAULT_MAX_PAGES = 1000
DEFAULT_SECONDS = 10.0
#: the reading process's address space: pypdf needs a few times the file's size
DEFAULT_MEMORY = 1024 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class PdfLimits:
    """How much of a PDF is read: pages, and the reading process's CPU time and memory."""

    max_pages: int = DEFAULT_MAX_PAGES
    seconds: float = DEFAULT_SECONDS  #: CPU seconds
    memory: int = DEFAULT_MEMORY
    #: wall-clock seconds after which the reader is killed; None: three times ``seconds``
    #: and ten seconds (:mod:`archiver.extract.isolated`)
    guard: float | None = None


@dataclass(frozen=True, slots=True)
class PdfLinks:
    links: Links
    pages: int = 0  #: pages read
    page_count: int = 0  #: pages the document has (as far as it could be read)
    error: str | None = None  #: why it could not be read to its end


def is_pdf(body: bytes) -> bool:
    """The ``%PDF-`` header, which readers look for in the first 1024 bytes (section 7.5.2)."""
    return b"%PDF-" in body[:1024]


def pdf_links(found: PdfRefs, url: str, *, max_links: int = MAX_LINKS) -> PdfLinks:
    """The references a reading found, resolved against the PDF's URL, as pages."""
    collect = Collector(url, url, max_links, Extractor.PDF)
    for ref in found.refs:
        collect.page(ref)
        if collect.truncated:
            break
    return PdfLinks(collect.links(), found.pages, found.page_count, found.error)


def extract_pdf(
    body: bytes,
    url: str,
    *,
    max_pages: int = DEFAULT_MAX_PAGES,
    max_links: int = MAX_LINKS,
    seconds: float | None = None,
) -> PdfLinks:
    """The links of a PDF fetched from ``url`` (already content-decoded), read in this process
    (the crawl reads PDFs through :mod:`archiver.extract.isolated`)."""
    found = read_refs(body, max_pages=max_pages, max_refs=max_links * 4, cpu_seconds=seconds)
    return pdf_links(found, url, max_links=max_links)


__all__ = [
    "PDF_TYPES",
    "PdfLimits",
    "PdfLinks",
    "extract_pdf",
    "is_pdf",
    "pdf_links",
    "text_urls",
]
