"""Whether an HTML page shows media: the test that sends a page to yt-dlp's generic extractor
(``--media yt-dlp``) when no site extractor claims its URL. (pure)

yt-dlp's generic extractor finds media in ``<video>``/``<audio>``/``<source>`` elements,
``<embed>`` and ``<object>``, JSON-LD ``VideoObject``/``AudioObject``, ``og:video`` and
``twitter:player`` properties, embedded players (an ``<iframe>`` whose address names a player,
an embed or a video), JW Player and Video.js set-ups, and playlist or manifest URLs in the
markup. A page with none of these costs no extraction: the test is a handful of byte
patterns, looked for in the decoded page, so a false positive costs one run of the generic
extractor and a false negative is a page whose media only a script builds (which the browser
stage captures).
"""

from __future__ import annotations

import re

_MEDIA = re.compile(
    rb"<(?:video|audio|embed|object)\b"
    rb"|og:video|twitter:player|\"(?:Video|Audio)Object\""
    rb"|<iframe\b[^>]{0,2000}?\bsrc\s*=\s*[\"']?[^\"'\s>]{0,2000}?(?:player|embed|video)"
    rb"|\bjwplayer\s*\(|\bvideojs\s*\(|\.m3u8\b|\.mpd\b",
    re.IGNORECASE,
)


def shows_media(html: bytes) -> bool:
    """Whether the (decoded) page has markup yt-dlp's generic extractor reads media from."""
    return _MEDIA.search(html) is not None


__all__ = ["shows_media"]
