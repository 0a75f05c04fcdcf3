"""Pictures of a page once it was read: the viewport, the whole page, a thumbnail.

``--screenshots`` takes any of three kinds (the ones Browsertrix Crawler's ``--screenshot``
offers, under the names archiver's records use):

- ``view``: what a reader sees first, the viewport (PNG; the window less what the browser
  keeps of it, as ``Page.getLayoutMetrics`` reports in ``cssLayoutViewport``);
- ``full``: the whole page, top to bottom (PNG): the content size from
  ``Page.getLayoutMetrics`` (``cssContentSize``) captured beyond the viewport
  (``Page.captureScreenshot`` with ``captureBeyondViewport`` and a clip), at most
  :data:`MAX_FULL_PAGE_HEIGHT` pixels tall and four windows wide (an endless page is cut there);
- ``thumbnail``: the viewport scaled to :data:`THUMBNAIL_WIDTH` pixels wide, as a JPEG (quality
  :data:`THUMBNAIL_QUALITY`): small enough to list every page of a crawl in a report.

They are taken after the page was read, behaviours done (a consent dialog accepted is not in the
picture), in this order, each in its own protocol command (DevTools protocol, Page domain).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the settings read KINDS: the protocol client is not loaded for them
    from archiver.browser.cdp import Params, Session

#: The kinds, in the order they are taken.
KINDS = ("view", "full", "thumbnail")
#: The media type of each kind's picture.
MEDIA_TYPES = {"view": "image/png", "full": "image/png", "thumbnail": "image/jpeg"}
#: The tallest full-page screenshot, in CSS pixels (an endless page is cut there).
MAX_FULL_PAGE_HEIGHT = 16384
THUMBNAIL_WIDTH = 320
THUMBNAIL_QUALITY = 75


def screenshot_params(kind: str, window: tuple[int, int], layout: dict[str, Any]) -> Params:
    """``Page.captureScreenshot``'s parameters for ``kind`` (``layout``: the reply of
    ``Page.getLayoutMetrics``; ``window`` stands for the viewport it lacks)."""
    viewport = layout.get("cssLayoutViewport") or {}
    width = int(viewport.get("clientWidth") or window[0])
    height = int(viewport.get("clientHeight") or window[1])
    if kind == "view":
        return {"format": "png"}
    if kind == "thumbnail":
        scale = THUMBNAIL_WIDTH / width
        clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": scale}
        return {"format": "jpeg", "quality": THUMBNAIL_QUALITY, "clip": clip}
    if kind == "full":
        size = layout.get("cssContentSize") or layout.get("contentSize") or {}
        full_width = max(1, min(int(size.get("width", width)), width * 4))
        full_height = max(1, min(int(size.get("height", height)), MAX_FULL_PAGE_HEIGHT))
        clip = {"x": 0, "y": 0, "width": full_width, "height": full_height, "scale": 1}
        return {"format": "png", "captureBeyondViewport": True, "clip": clip}
    raise ValueError(f"unknown screenshot kind {kind!r}")


async def take_screenshots(
    session: Session, kinds: tuple[str, ...], window: tuple[int, int], command_timeout: float
) -> dict[str, bytes]:
    """The pictures of ``kinds`` (in :data:`KINDS` order), by kind."""
    layout = await session.send("Page.getLayoutMetrics", timeout=command_timeout)
    shots = {}
    for kind in KINDS:
        if kind in kinds:
            params = screenshot_params(kind, window, layout)
            shot = await session.send("Page.captureScreenshot", params, timeout=command_timeout)
            shots[kind] = base64.b64decode(shot["data"])
    return shots


__all__ = [
    "KINDS",
    "MAX_FULL_PAGE_HEIGHT",
    "MEDIA_TYPES",
    "THUMBNAIL_QUALITY",
    "THUMBNAIL_WIDTH",
    "screenshot_params",
    "take_screenshots",
]
