"""What crosses between the browser and archiver for each request a page makes.

The browser pauses a request (``Fetch.requestPaused``) and the caller's :class:`RequestHandler`
gets a :class:`BrowserRequest`; it answers with a :class:`BrowserResponse` (the exchange as the
server sent it) or a :class:`Refusal`. The functions here turn the paused event into the request
and the response into the ``Fetch.fulfillRequest`` parameters; they are pure.

What Chromium does with a fulfilled response (checked on Chromium 156 by the tests; Playwright's
and Cypress's issue trackers report the same of earlier versions): the body is handed to the
page as it is, never content-decoded, whatever ``Content-Encoding`` says, and
``Content-Length`` does not cut it. So the body given to the browser is the *decoded* payload
and the headers that describe the wire form (``Content-Encoding``, ``Content-Length``,
``Transfer-Encoding``) are left out, while the WARC keeps the wire bytes. Headers travel as
``binaryResponseHeaders`` (NUL-separated ``name: value`` bytes), so a non-UTF-8 header value
reaches the page byte for byte. A 3xx with a ``Location`` is followed by the browser, which
pauses the next request in turn. A protocol message over about 100 MB is never answered
(measured over the pipe: a 70 MB body, a 93 MB message once in base64, is taken; an 80 MB one
leaves the command hanging), so bodies over ``max_body`` (64 MiB) are not given to the browser.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from archiver.extract.decoding import ContentDecodingError, decode_content

#: Bodies larger than this (after content decoding) are not handed to the browser.
MAX_FULFILL_BODY = 64 * 1024 * 1024

#: Response header fields that describe the message framing or the connection (RFC 9110
#: section 7.6.1, RFC 9112 section 6), not the resource: the browser gets the decoded payload.
_FRAMING_FIELDS = frozenset(
    {
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
    }
)
_IDENTITY = frozenset({"", "identity", "none"})


@dataclass(frozen=True, slots=True)
class BrowserRequest:
    """One request the page made, as the browser would send it.

    Chromium adds ``Cookie``, ``Accept-Encoding`` and the connection headers after the point
    where requests are paused, so ``headers`` lacks them: the fetcher sets its own.
    """

    method: str
    url: str
    """Absolute, without the fragment."""
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    """The request body (POST, PUT...), byte for byte; None when there is none."""
    body_complete: bool
    """False when the browser did not report the whole body (a file upload, a stream)."""
    resource_type: str
    """The protocol's Network.ResourceType: Document, Script, Stylesheet, Image, Font, Media,
    XHR, Fetch, Manifest, Other..."""
    is_navigation: bool
    """A document loaded into a frame (the page itself or an iframe)."""
    is_main_frame: bool
    """The page's own document (or a hop of its redirects)."""
    redirected: bool
    """The browser makes this request because an earlier response redirected it."""
    network_id: str = ""
    """The protocol's id of the request (``networkId``; the Network domain's ``requestId``):
    what :attr:`archiver.browser.page.PageResult.initiators` is keyed by."""


@dataclass(frozen=True, slots=True)
class BrowserResponse:
    """The answer for the browser: what the server sent (``models.Exchange`` has all of it)."""

    status: int
    headers: Sequence[tuple[str, str]]
    """The response header fields in order, as received (latin-1 decoded: byte for byte)."""
    body: bytes
    """The payload as received: transfer coding removed, content coding kept."""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Refusal:
    """No answer for this request: the browser sees it fail (the caller logs ``reason``)."""

    reason: str
    error: str = "BlockedByClient"
    """The protocol's Network.ErrorReason the page sees (``BlockedByClient`` in DevTools)."""


class RequestHandler(Protocol):
    """What the caller supplies: performs (or looks up) the request and answers it.

    Return a :class:`Refusal` for anything that is this request's own fault (robots.txt, the
    SSRF guard, scope, a fetch error); an exception stops the page (and is re-raised to whoever
    asked for the page), so raise only for what should stop it.
    """

    def __call__(self, request: BrowserRequest) -> Awaitable[BrowserResponse | Refusal]: ...


class UndeliverableError(ValueError):
    """The response cannot be handed to the browser (too large, undecodable)."""


def browser_request(params: dict[str, Any], main_frame: str) -> BrowserRequest:
    """The request of a ``Fetch.requestPaused`` event (paused at the request stage)."""
    request = params["request"]
    headers = tuple((str(name), str(value)) for name, value in request["headers"].items())
    body, complete = _request_body(request)
    resource_type = str(params.get("resourceType", "Other"))
    navigation = resource_type == "Document"
    return BrowserRequest(
        method=str(request["method"]),
        url=str(request["url"]),
        headers=headers,
        body=body,
        body_complete=complete,
        resource_type=resource_type,
        is_navigation=navigation,
        is_main_frame=navigation and params.get("frameId") == main_frame,
        redirected="redirectedRequestId" in params,
        network_id=str(params.get("networkId") or ""),
    )


def _request_body(request: dict[str, Any]) -> tuple[bytes | None, bool]:
    """The body from ``postDataEntries`` (base64 bytes, exact), not from the deprecated
    ``postData`` string, which loses bytes that are not UTF-8. An entry without bytes (a file,
    a blob the browser streams) makes the body incomplete."""
    if not request.get("hasPostData"):
        return None, True
    entries = request.get("postDataEntries")
    if not entries:
        return None, False
    parts: list[bytes] = []
    complete = True
    for entry in entries:
        data = entry.get("bytes")
        if data is None:
            complete = False
            continue
        try:
            parts.append(base64.b64decode(data, validate=True))
        except (binascii.Error, ValueError):
            complete = False
    return b"".join(parts), complete


def content_codings(headers: Sequence[tuple[str, str]]) -> list[str]:
    """The content codings applied, in order (RFC 9110 section 8.4), identity left out."""
    codings: list[str] = []
    for name, value in headers:
        if name.lower() == "content-encoding":
            codings += [token.strip().lower() for token in value.split(",")]
    return [coding for coding in codings if coding not in _IDENTITY]


def fulfill_params(
    request_id: str, response: BrowserResponse, *, max_body: int = MAX_FULFILL_BODY
) -> dict[str, Any]:
    """The ``Fetch.fulfillRequest`` parameters for ``response``.

    Raises :class:`UndeliverableError` when the body cannot be decoded or is over ``max_body``.
    """
    codings = content_codings(response.headers)
    body = response.body
    if codings:
        try:
            body = decode_content(body, ", ".join(codings), limit=max_body + 1)
        except ContentDecodingError as exc:
            raise UndeliverableError(str(exc)) from exc
    if len(body) > max_body:
        raise UndeliverableError(f"a body over {max_body} bytes")
    fields = [
        (name, value)
        for name, value in response.headers
        if name.lower() not in _FRAMING_FIELDS
        and not (codings and name.lower() == "content-encoding")
        and _clean(name)
        and _clean(value)
        and name.strip()
    ]
    params: dict[str, Any] = {
        "requestId": request_id,
        "responseCode": response.status,
        "binaryResponseHeaders": base64.b64encode(
            b"\0".join(_latin1(name) + b": " + _latin1(value) for name, value in fields)
        ).decode("ascii"),
        "body": base64.b64encode(body).decode("ascii"),
    }
    phrase = response.reason.strip()
    if phrase and phrase.isascii() and phrase.isprintable():
        params["responsePhrase"] = phrase
    return params


def _clean(text: str) -> bool:
    """Fit for one NUL-separated header line: no NUL, CR or LF."""
    return "\0" not in text and "\r" not in text and "\n" not in text


def _latin1(text: str) -> bytes:
    """The header's bytes: they were decoded as latin-1, so this gives them back exactly."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")
