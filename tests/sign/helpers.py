"""Shared by the signing tests: a small site to crawl, and a package changed one byte at a
time."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.site import SiteServer

PAGES = {
    "/": "<html><head><title>Home</title></head><body><h1>Harbour notes</h1>"
    '<p>The lighthouse keeper logs every ship.</p><a href="/tides">tides</a></body></html>',
    "/tides": "<html><head><title>Tides</title></head><body><p>Spring tides bring the "
    "quokkaberry fishermen home.</p><script>var hidden = 'scriptword';</script></body></html>",
}


def add_pages(site: SiteServer) -> None:
    for path, html in PAGES.items():
        site.add_page(path, html)


def digest_of(wacz: Path) -> dict[str, Any]:
    with zipfile.ZipFile(wacz) as zf:
        data: dict[str, Any] = json.loads(zf.read("datapackage-digest.json"))
        return data


def rewrite_member(src: Path, dst: Path, name: str, change: Callable[[bytes], bytes]) -> None:
    """A copy of the package ``src`` at ``dst`` whose member ``name`` is ``change``d; every
    other member is copied as it was (same compression)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", allowZip64=True) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info, change(data) if info.filename == name else data)


def flip_byte(data: bytes, at: int | None = None) -> bytes:
    """``data`` with one byte changed (in the middle unless ``at``)."""
    index = len(data) // 2 if at is None else at
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]
