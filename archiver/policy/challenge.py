"""Bot challenges: a CDN's or firewall's interstitial served in place of the page asked for.

A crawler without a JavaScript engine never passes a challenge, and archiving one as the page
means replay shows "Just a moment..." instead of the site. What an archive wants is to back
off (the site is telling the crawler it is going too fast or looks like a bot), try again later,
and report the pages it could not get; grab-site users and Zeno (which discards challenge pages)
ask for exactly this. Detection relies on what the providers document, so ordinary pages never
match: a response header that only challenges carry, or, where a provider has none, its status
code together with a body marker that only its challenge page contains.

* Cloudflare: ``cf-mitigated: challenge`` on every challenge page type (Cloudflare's "Detect a
  Challenge Page response"); older set-ups without it: 403/503 from ``Server: cloudflare``
  whose body loads ``/cdn-cgi/challenge-platform/``.
* AWS WAF: ``x-amzn-waf-action: challenge`` (status 202) or ``captcha`` (405).
* Vercel: ``x-vercel-mitigated: challenge``.
* DataDome: 403 with an ``x-datadome`` header and a body that loads ``captcha-delivery.com``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from archiver.extract.decoding import ContentDecodingError, decode_content
from archiver.models import Exchange

#: only the start of a body is searched for markers (challenge pages are small)
BODY_PREFIX = 64 * 1024


def provider(ex: Exchange) -> str | None:
    """:func:`detect` on a fetched exchange, its body content-decoded when it can be (only a
    403 or a 503 has its body looked at)."""
    body = ex.body if ex.status in (403, 503) else None
    if body:
        with contextlib.suppress(ContentDecodingError):  # else: the bytes as sent
            body = decode_content(body, ex.header("Content-Encoding"), limit=BODY_PREFIX)
    return detect(ex.status, ex.header, body)


def detect(status: int, header: Callable[[str], str | None], body: bytes | None) -> str | None:
    """The provider whose challenge this response is (``cloudflare``, ``aws-waf``, ``vercel``,
    ``datadome``), or None for an ordinary response. ``header`` looks a response header up by
    name (any case)."""
    if _value(header, "cf-mitigated") == "challenge":
        return "cloudflare"
    if _value(header, "x-amzn-waf-action") in ("challenge", "captcha"):
        return "aws-waf"
    if _value(header, "x-vercel-mitigated") == "challenge":
        return "vercel"
    if status not in (403, 503) or not body:
        return None
    start = body[:BODY_PREFIX]
    if _value(header, "server") == "cloudflare" and b"/cdn-cgi/challenge-platform/" in start:
        return "cloudflare"
    if status == 403 and header("x-datadome") is not None and b"captcha-delivery.com" in start:
        return "datadome"
    return None


def _value(header: Callable[[str], str | None], name: str) -> str | None:
    value = header(name)
    return value.strip().lower() if value is not None else None
