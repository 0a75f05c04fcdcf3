"""Reading a PDF's link references with pypdf: URI link annotations and URLs in the page text
(ISO 32000-1). Standard library and pypdf only, so that :mod:`archiver.extract.isolated` can run
this file as a script in a child process that starts in a tenth of a second (importing the
``archiver`` package would load the whole crawler first).

* link annotations (section 12.5.6.5: ``/Annots`` entries of ``/Subtype /Link``) whose action is
  a URI action (section 12.6.4.7: ``/A << /S /URI /URI (…) >>``), in page order;
* ``http://`` and ``https://`` URLs in the page text (what a reader clicks in most viewers even
  without an annotation), trailing punctuation removed.

The references come out as written; :mod:`archiver.extract.pdf` resolves them. Reading stops at
``max_pages``, at ``max_refs`` references, and when the process has used ``cpu_seconds`` of CPU
time (checked between pages: CPU, not wall-clock time, so a busy machine does not cut a reading
short); every pypdf failure becomes ``error``, never an exception.

As a script: ``python pdfread.py MAX_PAGES MAX_REFS CPU_SECONDS MEMORY_BYTES`` reads the PDF on
stdin and writes a JSON object on stdout, after capping its own address space (``RLIMIT_AS``)
and CPU time (``RLIMIT_CPU``, the kernel's kill a little after ``CPU_SECONDS``).
"""

from __future__ import annotations

import io
import json
import logging
import math
import re
import resource
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

from pypdf import PdfReader

#: the share of the reader's CPU budget spent on pages before it answers with what it has (the
#: rest is for parsing the file's structure and answering); the kernel kills it past the budget
SOFT_SHARE = 0.7
_TEXT_URL = re.compile(r"https?://[^\s<>\"'{}|\\^`\[\]]{3,2048}")
_TRAILING = ".,;:!?)]}'\""


@dataclass(slots=True)
class PdfRefs:
    refs: list[str] = field(default_factory=list)  #: annotation URIs and text URLs, in order
    pages: int = 0  #: pages read
    page_count: int = 0  #: pages the document has (as far as it could be read)
    error: str | None = None  #: why it could not be read to its end


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


def read_refs(
    body: bytes, *, max_pages: int, max_refs: int, cpu_seconds: float | None = None
) -> PdfRefs:
    """The link references of the first ``max_pages`` pages a PDF body (content-decoded) has,
    as many as ``cpu_seconds`` of this process's CPU time allow."""
    found = PdfRefs()
    stop_at = time.process_time() + cpu_seconds if cpu_seconds is not None else None
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings are about the file
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = PdfReader(io.BytesIO(body), strict=False)
            found.page_count = len(reader.pages)
            for page in reader.pages:
                if found.pages >= max_pages or len(found.refs) >= max_refs:
                    break
                if stop_at is not None and time.process_time() >= stop_at:
                    break
                found.pages += 1
                annotations = page.get("/Annots")
                if annotations is not None:
                    for annotation in annotations.get_object():
                        uri = _uri_of(annotation)
                        if uri and uri.strip():
                            found.refs.append(uri.strip())
                found.refs += text_urls(page.extract_text() or "")
    except Exception as exc:  # hostile input: any pypdf failure is the file's
        found.error = f"{type(exc).__name__}: {exc}"
        return found
    if found.page_count > found.pages and len(found.refs) < max_refs:
        why = "in time" if found.pages < max_pages else "(--pdf-max-pages)"
        found.error = f"read the first {found.pages} of {found.page_count} pages {why}"
    return found


def main(argv: list[str]) -> int:
    """Read the body on stdin, write the references as JSON on stdout, within the limits."""
    max_pages, max_refs, cpu_seconds, memory = argv
    resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
    cpu_limit = math.ceil(float(cpu_seconds) / SOFT_SHARE) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit))
    sys.setrecursionlimit(4000)  # pypdf recurses over nested objects; a deep one ends here
    body = sys.stdin.buffer.read()
    found = read_refs(
        body, max_pages=int(max_pages), max_refs=int(max_refs), cpu_seconds=float(cpu_seconds)
    )
    sys.stdout.write(json.dumps(asdict(found)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
