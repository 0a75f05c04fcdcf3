"""localStorage: put into a fresh browser (a crawl with a login profile), and watched in a tab
(the login session, :mod:`archiver.browser.login`).

Sites that log in with scripts often keep the session, or what their scripts turn into a
cookie, in ``localStorage`` (Web Storage, HTML Standard section 12.2); a crawl with a profile
must start with it, or such pages render logged out. The protocol only reaches an origin's
storage through a frame of that origin (``DOMStorage.setDOMStorageItem`` answers "Frame not
found" otherwise), and a crawl's browser has no network. So each origin gets a tab of its own,
at a page of that origin which the tab itself answers with an empty document
(``Fetch.fulfillRequest``: nothing reaches the network, the crawl's handler or a WARC file),
the items are set there, and the tab is closed. Storage is per browser, so every page loaded
afterwards finds them; a relaunched browser (a fresh profile) is seeded again.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import Mapping

from archiver.browser.cdp import Connection, Params, Session
from archiver.browser.errors import BrowserError

#: The document an origin's seeding tab is given: nothing that runs or loads.
EMPTY_DOCUMENT = b"<!DOCTYPE html><title></title>"

_SET_ITEMS = """((items) => {
  for (const [key, value] of Object.entries(items)) localStorage.setItem(key, value);
  return location.origin;
})(%s)"""


async def seed_local_storage(
    connection: Connection,
    storage: Mapping[str, Mapping[str, str]],
    *,
    timeout: float,  # noqa: ASYNC109 - per origin, a BrowserError when it runs out
) -> None:
    """Set each origin's items in the browser's localStorage (see the module docstring).
    Raises :class:`BrowserError` when an origin cannot be seeded."""
    for origin, items in storage.items():
        if items:
            await _seed_origin(connection, origin, items, timeout)


async def _seed_origin(
    connection: Connection,
    origin: str,
    items: Mapping[str, str],
    timeout: float,  # noqa: ASYNC109 - per command, a BrowserError when it runs out
) -> None:
    browser = connection.browser
    created = await browser.send("Target.createTarget", {"url": "about:blank"}, timeout=timeout)
    target = str(created["targetId"])
    try:
        attached = await browser.send(
            "Target.attachToTarget", {"targetId": target, "flatten": True}, timeout=timeout
        )
        session = connection.session(attached["sessionId"])
        loaded = asyncio.Event()
        session.on("Fetch.requestPaused", lambda params: _answer_later(session, params))
        session.on("Page.loadEventFired", lambda _: loaded.set())
        await session.send("Page.enable", timeout=timeout)
        await session.send("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, timeout=timeout)
        navigation = await session.send("Page.navigate", {"url": origin + "/"}, timeout=timeout)
        if navigation.get("errorText"):
            raise BrowserError(f"localStorage of {origin}: {navigation['errorText']}")
        if not await session.wait(loaded, timeout):
            raise BrowserError(f"localStorage of {origin}: the page did not load")
        reply = await session.send(
            "Runtime.evaluate",
            {"expression": _SET_ITEMS % json.dumps(dict(items)), "returnByValue": True},
            timeout=timeout,
        )
        if reply.get("result", {}).get("value") != origin:
            raise BrowserError(f"localStorage of {origin} could not be set")
    finally:
        with contextlib.suppress(BrowserError):
            await browser.send("Target.closeTarget", {"targetId": target}, timeout=timeout)


def _answer_later(session: Session, params: Params) -> None:
    asyncio.get_running_loop().create_task(_answer(session, params))


async def _answer(session: Session, params: Params) -> None:
    with contextlib.suppress(BrowserError):
        await session.send(
            "Fetch.fulfillRequest",
            {
                "requestId": params["requestId"],
                "responseCode": 200,
                "responseHeaders": [{"name": "Content-Type", "value": "text/html"}],
                "body": base64.b64encode(EMPTY_DOCUMENT).decode("ascii"),
            },
            timeout=10.0,
        )


class StorageLog:
    """The localStorage items a tab's pages set, by origin, from the ``DOMStorage`` events of
    its session (enabled before anything loads, so a fresh browser's whole localStorage):
    the events name every origin the tab visited, where reading the storage later would need
    a frame of each origin still open."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, str]] = {}

    async def watch(self, session: Session, *, timeout: float) -> None:  # noqa: ASYNC109
        session.on("DOMStorage.domStorageItemAdded", self._set)
        session.on("DOMStorage.domStorageItemUpdated", self._set)
        session.on("DOMStorage.domStorageItemRemoved", self._removed)
        session.on("DOMStorage.domStorageItemsCleared", self._cleared)
        await session.send("DOMStorage.enable", timeout=timeout)

    def _origin(self, params: Params) -> str | None:
        storage = params.get("storageId", {})
        if not storage.get("isLocalStorage"):
            return None  # sessionStorage ends with the tab
        origin = storage.get("securityOrigin") or str(storage.get("storageKey", "")).rstrip("/")
        return str(origin) if str(origin).startswith(("http://", "https://")) else None

    def _set(self, params: Params) -> None:
        origin = self._origin(params)
        if origin is not None:
            self.items.setdefault(origin, {})[str(params["key"])] = str(params["newValue"])

    def _removed(self, params: Params) -> None:
        origin = self._origin(params)
        if origin is not None:
            self.items.get(origin, {}).pop(str(params["key"]), None)

    def _cleared(self, params: Params) -> None:
        origin = self._origin(params)
        if origin is not None:
            self.items.pop(origin, None)

    def snapshot(self) -> dict[str, dict[str, str]]:
        """The origins with items, and their items."""
        return {origin: dict(items) for origin, items in self.items.items() if items}


__all__ = ["EMPTY_DOCUMENT", "StorageLog", "seed_local_storage"]
