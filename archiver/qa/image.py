"""How alike two screenshots of a page look: the screenshot similarity of a replay check.

Both PNGs are decoded with Pillow, scaled to :data:`COMPARE_WIDTH` pixels wide (keeping their
proportions), and the shorter is extended with white to the taller's height (a replay that
renders half the page scores half); then pixelmatch (the Python port of mapbox's pixelmatch,
which Browsertrix Crawler's QA uses in JavaScript) counts the pixels that differ by more than its
perceptual threshold (YIQ colour distance, anti-aliased pixels not counted). The score is the
share of pixels that do not differ. Scaling down first bounds the work (pixelmatch is a pure
Python loop: about a second per million pixels) and forgives sub-pixel shifts. Only this module
imports Pillow and pixelmatch.
"""

from __future__ import annotations

import io

from PIL import Image, UnidentifiedImageError
from pixelmatch.contrib.PIL import pixelmatch

#: The width both screenshots are compared at.
COMPARE_WIDTH = 320
#: The tallest comparison (a page longer than this, scaled, is compared on its top part).
COMPARE_HEIGHT = 4000
#: pixelmatch's threshold (its default): the colour distance under which pixels are alike.
THRESHOLD = 0.1
#: Pillow refuses images larger than this many pixels (decompression bombs).
MAX_PIXELS = 64 * 1024 * 1024


class ImageError(ValueError):
    """A screenshot that is not a readable PNG."""


def _scaled(png: bytes) -> Image.Image:
    try:
        with Image.open(io.BytesIO(png)) as image:
            if image.width * image.height > MAX_PIXELS:
                raise ImageError(f"a screenshot of {image.width}x{image.height} pixels")
            rgba = image.convert("RGBA")
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise ImageError(f"not a readable screenshot: {exc}") from exc
    height = max(1, round(rgba.height * COMPARE_WIDTH / max(rgba.width, 1)))
    scaled = rgba.resize((COMPARE_WIDTH, height), Image.Resampling.BILINEAR)
    return scaled.crop((0, 0, COMPARE_WIDTH, min(height, COMPARE_HEIGHT)))


def _extended(image: Image.Image, height: int) -> Image.Image:
    if image.height == height:
        return image
    canvas = Image.new("RGBA", (image.width, height), (255, 255, 255, 255))
    canvas.paste(image, (0, 0))
    return canvas


def screenshot_similarity(replayed: bytes, reference: bytes) -> float:
    """From 0 to 1: the share of pixels alike (see the module docstring). Raises
    :class:`ImageError` when either is not a readable image."""
    a, b = _scaled(replayed), _scaled(reference)
    height = max(a.height, b.height)
    a, b = _extended(a, height), _extended(b, height)
    differing = pixelmatch(a, b, threshold=THRESHOLD)
    return round(1.0 - differing / (COMPARE_WIDTH * height), 4)


__all__ = ["COMPARE_WIDTH", "ImageError", "screenshot_similarity"]
