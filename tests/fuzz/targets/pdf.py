"""PDF links (:func:`~archiver.extract.pdf.extract_pdf`): URI link annotations and URLs in page
text, read by pypdf.

Oracles (the first byte chooses the form of the input):

* a written PDF (even first byte): the rest of the input, cut at newlines, is up to four URIs
  (printable ASCII, as the format requires of a URI action);
  pypdf's writer makes a PDF with one URI link annotation each (on two pages); reading it back
  must give exactly those URIs that resolve, resolved, in order, each once: what pypdf's own
  writer put there, read back through the reader;
* raw bytes (odd first byte, the mutations libFuzzer makes of the seed PDFs): nothing leaves
  the extractor (pypdf's failures are its ``error``), at most ``max_pages`` pages are read, and
  the pages are normalised URLs, each once, at most ``max_links``.
"""

from __future__ import annotations

import io

from pypdf import PdfWriter
from pypdf.annotations import Link

from archiver import urls
from archiver.extract.pdf import extract_pdf
from tests.fuzz.harness import Bytes, Target, agree

URL = "http://example.com/docs/report.pdf"


def written(uris: list[str]) -> bytes:
    writer = PdfWriter()
    for page in range(2):
        writer.add_blank_page(width=100, height=100)
        for uri in uris[page::2]:
            writer.add_annotation(page_number=page, annotation=Link(rect=(1, 1, 50, 50), url=uri))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def check(data: bytes) -> None:
    source = Bytes(data)
    mode = source.byte()
    rest = source.rest()
    if mode & 1 == 0:
        uris = [piece.decode("latin-1") for piece in rest.split(b"\n")[:4]]
        # a URI action's URI is 7-bit ASCII (ISO 32000-1 section 12.6.4.7); other text goes
        # through PDFDocEncoding, where pypdf's writer keeps a leading "\xfe\xff" or
        # "\xff\xfe" that its reader then takes for a UTF-16 byte-order mark
        uris = [u for u in uris if u.isascii() and u.isprintable() and u.strip() == u]
        body = written(uris)
        found = extract_pdf(body, URL)
        agree(found.error is None, "a written PDF not read", found.error)
        ordered = [uris[i] for page in range(2) for i in range(page, len(uris), 2)]
        expected: dict[str, None] = {}
        own = urls.resolve(URL, "")
        for uri in ordered:
            resolved = urls.resolve(URL, uri.strip())
            if resolved is not None and resolved != own:
                expected.setdefault(resolved, None)
        agree(list(found.links.pages) == list(expected), "annotations differ", found, expected)
        return
    found = extract_pdf(rest, URL, max_pages=3, max_links=5)
    agree(found.pages <= 3, "over max_pages", found)
    pages = found.links.pages
    agree(len(pages) <= 5 and not found.links.requisites, "lists", found)
    agree(len(set(pages)) == len(pages), "duplicates", found)
    for url in pages:
        agree(urls.normalize_url(url) == url, "not normal", url)


def seed(document: bytes) -> bytes:
    return (b"\x01" if document.startswith(b"%PDF") else b"\x00") + document


TARGET = Target(
    name="pdf",
    check=check,
    max_len=4096,
    summary="extract_pdf (link annotations, text URLs, page cap); oracle: URIs written by "
    "pypdf's writer read back; raw mutations bounded and error-mapped",
    seed=seed,
    dictionary=(
        b"%PDF-1.4\n",
        b"/Annots",
        b"/Subtype /Link",
        b"/A << /S /URI /URI (",
        b") >>",
        b"obj",
        b"endobj",
        b"xref",
        b"trailer",
        b"startxref",
        b"/Type /Page",
        b"stream\n",
        b"endstream",
        b"http://example.com/",
    ),
)
