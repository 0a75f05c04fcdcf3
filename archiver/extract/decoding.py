"""Content-Encoding undone for reading a body (RFC 9110 section 8.4): gzip, x-gzip, deflate.

The WARC keeps the bytes as the server sent them; decoding is only for what archiver reads in a
body: links (:mod:`archiver.extract.links`), robots.txt and sitemaps, and the bot-challenge check.
Output is always bounded by a ``limit``, so a small gzip of gigabytes of zeros costs ``limit``
bytes of memory and time.
"""

from __future__ import annotations

import zlib


class ContentDecodingError(ValueError):
    """The body's Content-Encoding is unknown or its data is corrupt; links cannot be read."""


_GZIP_WBITS = zlib.MAX_WBITS | 16
_SLICE = 64 * 1024


def decode_content(body: bytes, content_encoding: str | None, *, limit: int) -> bytes:
    """Undo ``Content-Encoding`` so links can be read; at most ``limit`` bytes come out.

    The WARC keeps the encoded bytes; this is only for extraction. Codings are listed in the
    order they were applied (RFC 9110 section 8.4), so they are undone last first. The output
    and every intermediate result are capped at ``limit`` bytes with ``max_length``, so a small
    gzip of gigabytes of zeros costs ``limit`` bytes of memory and time, not gigabytes. A stream
    cut short (the fetch hit its size cap, the server hung up) gives what could be decoded.
    """
    codings = [token.strip().lower() for token in (content_encoding or "").split(",")]
    codings = [c for c in codings if c and c not in ("identity", "none")]
    for coding in codings:
        if coding not in ("gzip", "x-gzip", "deflate"):
            raise ContentDecodingError(f"unsupported content-coding {coding!r}")
    data = body
    for coding in reversed(codings):
        if coding == "deflate":
            data = _inflate_deflate(data, limit)
        else:
            data = _inflate(data, _GZIP_WBITS, limit, coding)
    return data if len(data) <= limit else data[:limit]


def _inflate_deflate(data: bytes, limit: int) -> bytes:
    """``deflate`` is zlib-wrapped (RFC 9110 section 8.4.1.2), but some servers send raw deflate
    (RFC 1951) and every browser accepts both, so a body without a zlib header is read raw."""
    if len(data) >= 2 and data[0] & 0x0F == 8 and ((data[0] << 8) | data[1]) % 31 == 0:
        try:
            return _inflate(data, zlib.MAX_WBITS, limit, "deflate")
        except ContentDecodingError:
            pass  # a raw stream whose first two bytes happen to look like a zlib header
    return _inflate(data, -zlib.MAX_WBITS, limit, "deflate")


def _inflate(data: bytes, wbits: int, limit: int, coding: str) -> bytes:
    """Decompress with bounded output; gzip members that follow the first are read too (RFC 1952
    section 2.2: a gzip file is a series of members), trailing garbage is ignored as browsers do.

    Input goes in by slices, so zlib's copy of what it has not consumed yet (``unconsumed_tail``)
    stays small, and ``max_length`` stops the output at ``limit``: memory is ``limit`` plus a
    slice whatever the ratio, and the work stops as soon as the limit is reached.
    """
    out = bytearray()
    view = memoryview(data)
    start = 0
    while start < len(data) and len(out) < limit:
        decompressor = zlib.decompressobj(wbits)
        position = start
        try:
            while position < len(data):
                piece = view[position : position + _SLICE]
                position += len(piece)
                out += decompressor.decompress(piece, limit - len(out))
                if len(out) >= limit or decompressor.eof:
                    break
        except zlib.error as exc:
            raise ContentDecodingError(f"corrupt {coding} data: {exc}") from exc
        if not decompressor.eof or wbits != _GZIP_WBITS:
            break  # the limit, the end of a truncated stream, or the end of a zlib stream
        start = position - len(decompressor.unused_data)
        if data[start : start + 2] != b"\x1f\x8b":
            break
    return bytes(out)


__all__ = ["ContentDecodingError", "decode_content"]
