"""One streaming XML reader for the XML formats links are read from (feeds, DASH manifests,
sitemaps), safe against hostile documents. (pure)

expat reads the document in slices and calls a handler per element, so memory is the handler's
state, not a tree: a feed of a hundred thousand items costs its links. Any document type
declaration stops the parse: without a DTD there are no entities to expand (billion laughs,
quadratic blowup) and nothing external to fetch (XXE), the protections defusedxml applies, for
formats that never need a DTD (RSS 2.0, Atom, RSS 1.0 and OPML declare none; a DASH MPD and a
sitemap are defined by XML schemas). A handler stops the parse early by raising :class:`Enough`.

expat decodes UTF-8, UTF-16, ISO-8859-1 and US-ASCII itself, and the other single-byte codecs
through Python; a document declared in a multi-byte encoding expat lacks (Shift_JIS, EUC-JP,
GB2312, Big5) is decoded by Python's codec and read again as UTF-8 (:func:`as_utf8`).
"""

from __future__ import annotations

import codecs
import re
from typing import Protocol
from xml.parsers import expat

_SLICE = 64 * 1024
#: The XML declaration's encoding name (XML 1.0 section 4.3.3: EncName is ASCII letters,
#: digits, '.', '_' and '-'), read from the first bytes.
_DECLARED_ENCODING = re.compile(
    rb"""\A(?:\xef\xbb\xbf)?\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z][A-Za-z0-9._-]*)["']"""
)
#: What separates a namespace from a local name in the names handlers get. Not a space (which
#: sitemaps use): since expat 2.4.5 (the CVE-2022-25236 fix) a namespace name holding the
#: separator is a syntax error, and a space is legal in one; U+0001 can appear in no XML 1.0
#: document, not even as a character reference.
SEPARATOR = "\x01"
#: expat's name for an attribute in the XML namespace (``xml:base``)
XML_BASE = f"http://www.w3.org/XML/1998/namespace{SEPARATOR}base"


class XmlError(ValueError):
    """Not a well-formed document we read (or one with a document type declaration)."""


class DoctypeError(XmlError):
    """The document has a document type declaration, which is refused (not a syntax error:
    a reader that keeps what came before damage has nothing to keep, the DTD precedes the
    root element)."""


class Enough(Exception):  # noqa: N818 - a signal, not an error
    """Raised by a handler to stop reading: it has all it wants."""


class Handler(Protocol):
    def start(self, name: str, attrs: dict[str, str]) -> None: ...
    def end(self, name: str) -> None: ...
    def text(self, data: str) -> None: ...


def _refuse_dtd(*_: object) -> int:
    raise DoctypeError("a document type declaration (refused: XML bomb and XXE defence)")


def read_xml(data: bytes, handler: Handler, *, final: bool = True) -> bool:
    """Feed ``data`` to ``handler`` (element names are ``namespace SEPARATOR local`` or
    ``local``).

    ``final`` False says ``data`` is only the start of the document (cut at a size limit): the
    parse is not finished, so elements left open at the cut are no error.

    Returns True when all of ``data`` was read, False when the handler stopped it
    (:class:`Enough`). Raises :class:`XmlError` when the document is not well-formed
    (:class:`DoctypeError` when it has a DTD); what the handler was given before the error
    stands (a document cut short still gave its start).
    """
    try:
        return _read(data, handler, final)
    except XmlError:
        raise
    except ValueError:
        transcoded = as_utf8(data)
        if transcoded is None:
            raise XmlError("not well-formed XML: an encoding expat cannot read") from None
        return _read(transcoded, handler, final)


def _read(data: bytes, handler: Handler, final: bool) -> bool:
    parser = expat.ParserCreate(namespace_separator=SEPARATOR)
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse_dtd
    parser.EntityDeclHandler = _refuse_dtd
    parser.ExternalEntityRefHandler = _refuse_dtd
    parser.StartElementHandler = handler.start
    parser.EndElementHandler = handler.end
    parser.CharacterDataHandler = handler.text
    parser.buffer_text = True
    view = memoryview(data)
    try:
        for offset in range(0, len(data), _SLICE):
            parser.Parse(bytes(view[offset : offset + _SLICE]), False)
        if final:
            parser.Parse(b"", True)
    except Enough:
        return False
    except expat.ExpatError as exc:
        raise XmlError(f"not well-formed XML: {exc}") from None
    except LookupError as exc:  # a declared encoding no codec has ("ut2f-8")
        raise XmlError(f"not XML we can read: {exc}") from None
    return True


def as_utf8(data: bytes) -> bytes | None:
    """The document in UTF-8 with its declaration saying so, or None when its declared
    encoding is not a text codec Python knows."""
    declared = _DECLARED_ENCODING.match(data[:1024])
    if declared is None:
        return None
    try:
        codec = codecs.lookup(declared.group(1).decode("ascii"))
    except LookupError:
        return None
    if not codec._is_text_encoding:  # rot13, base64 and kin
        return None
    try:
        text = data[declared.end(1) + 1 :].decode(codec.name, "replace")
    except (UnicodeError, ValueError):
        return None
    return b'<?xml version="1.0" encoding="UTF-8"' + text.encode("utf-8", "replace")


def local_name(name: str) -> str:
    """The local part of a name as handlers get it."""
    return name.rsplit(SEPARATOR, 1)[-1]


def qualified(namespace: str, local: str) -> str:
    """A name in ``namespace`` as handlers get it."""
    return f"{namespace}{SEPARATOR}{local}"


__all__ = [
    "SEPARATOR",
    "XML_BASE",
    "DoctypeError",
    "Enough",
    "Handler",
    "XmlError",
    "as_utf8",
    "local_name",
    "qualified",
    "read_xml",
]
