"""The crawl's cookie jar: what a site sets with ``Set-Cookie`` is sent back as a browser would.

A site that sets a session cookie on the first visit and requires it afterwards cannot be
crawled without one, so the crawl keeps a jar (on by default, as in a browser and Heritrix;
``--no-cookies`` turns it off).

**Which jar.** aiohttp's :class:`aiohttp.CookieJar`, the RFC 6265 jar the session already
consults (section 5.1.3 domain matching with host-only cookies, 5.1.4 path matching, ``Secure``
only over https, ``Expires``/``Max-Age`` expiry, 5.3 step 11 replacement), with aiohttp's own
lenient ``Set-Cookie`` parser, rather than the standard library's ``http.cookiejar``, whose
RFC 2965-era policy needs urllib request/response adapters around every exchange and whose
stored cookies the session could not use directly. Two settings differ from aiohttp's defaults:

* ``unsafe=True``: aiohttp refuses cookies from hosts that are IP addresses unless told
  otherwise; RFC 6265 and browsers accept them (host-only: an IP address never domain-matches
  another host, which aiohttp enforces), and crawls of ``http://127.0.0.1:8000/`` need them;
* a cookie is sent back exactly as the site set it (:meth:`CrawlCookieJar._build_morsel`):
  aiohttp re-quotes values outside the RFC 2109 token set, so ``sid=YWJj==`` would go back as
  ``sid="YWJj=="``, which servers that do not strip quotes (PHP) read as another session.

No public-suffix list is consulted (RFC 6265 section 5.3 step 5 leaves that to the user agent):
a site could set a cookie for ``Domain=co.uk``; it would reach other hosts under that suffix.

**What it records.** Request records hold the ``Cookie`` header as it was sent (the capture
layer records the bytes on the connection, :mod:`archiver.fetch.capture`), so a replay shows
what the site was given. A configured ``Cookie`` header (``--header``) and the jar's cookies go
as one header (RFC 6265 section 5.4: never two): aiohttp merges them.

**Credentials.** Cookies loaded with ``--cookies FILE`` are the operator's credentials. They go
only where their own domain, path and ``Secure`` flag say (they carry their scope, unlike a
configured header, which :mod:`archiver.policy.credentials` scopes to the seeds' hosts), and,
like configured credential headers, never to a host whose certificate failed verification in
capture-anyway mode (:data:`TRUSTED_CHANNEL`). Their values never reach a log line, warcinfo or
``state/crawl.json``; the jar's own files (``state/cookies.txt``, ``--save-cookies``) hold them
and are created readable by the owner only.

**Where it lives.** Besides this process's memory, a :class:`CookieStore`: a file in the state
directory (:class:`FileCookieStore`, so a resumed crawl sends what it had) or the crawl's Redis
keys (``archiver.frontier.redis``: every process of a shared crawl sends the cookies any of
them received). :class:`CrawlCookies` keeps the two in step around each fetch.

**A browser.** Pages rendered in a browser (:mod:`archiver.browser`) send their requests
through this same fetcher, so they share this jar by construction, and the ``Set-Cookie`` of
every response the page is given lands in it. Chromium's own cookie store must not add a second
``Cookie`` header (RFC 6265 section 5.4 allows one; aiohttp would merge a Cookie among the
request's headers into the jar's): Chromium adds it after the point where the browser stage
intercepts requests, so :class:`archiver.browser.exchange.BrowserRequest` carries none, and
:func:`archiver.fetch.fetcher.relayed_fields` leaves one out of a relayed request all the same.
Cookies a page's script sets (``document.cookie``) go to Chromium's store:
:mod:`archiver.pipeline.cookiesync` keeps that store and this jar in step (what pages set comes
into the jar, through :meth:`CrawlCookieJar.apply` and ``pending``; the jar's cookies go into
the browser), so the fetcher sends what the browser would.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from http.cookies import BaseCookie, Morsel
from pathlib import Path
from typing import Protocol

import aiohttp
from aiohttp.abc import AbstractCookieJar
from yarl import URL

from archiver import atomicfile
from archiver.fetch.cookiestxt import CookieKey, CookieLine, format_text, parse_line

#: False while a request goes to a host whose TLS certificate failed verification
#: (capture-anyway mode): the cookies loaded with ``--cookies`` are withheld from it, as
#: configured credential headers are. Set by the fetcher around each exchange.
TRUSTED_CHANNEL: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "archiver_trusted_channel", default=True
)

#: Store field holding the digest of the ``--cookies`` file applied last: the same file given
#: again on resume (or by another process of a shared crawl) does not undo what the site has
#: set since. Not a cookie key (a domain never starts with ``#``).
LOADED_FILE_FIELD = "#cookies-file"
#: How often at most the state file is rewritten: a kill -9 loses at most this much.
FLUSH_INTERVAL = 1.0

_AIOHTTP_INTERNALS = (
    "_cookies",
    "_host_only_cookies",
    "_expirations",
    "_update_cookies",
    "_delete_cookies",
    "_build_morsel",
)


def check_jar_compatibility(jar: aiohttp.CookieJar) -> list[str]:
    """What of aiohttp's jar internals (used to list and restore cookies) is missing."""
    return [name for name in _AIOHTTP_INTERNALS if not hasattr(jar, name)]


def field_name(key: CookieKey) -> str:
    """A cookie's field in a store: its identity, tab-separated (no tab can occur in it)."""
    return "\t".join(key)


class CrawlCookieJar(aiohttp.CookieJar):
    """aiohttp's RFC 6265 jar that also reports the cookies responses changed.

    The session calls :meth:`update_cookies_from_headers` with every response's ``Set-Cookie``
    fields; the cookies that call added, replaced or deleted are kept in :attr:`pending` (as
    cookies.txt lines, None for a deletion) until :meth:`take_changes`.
    """

    def __init__(self, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(unsafe=True, quote_cookie=True, loop=loop)
        #: cookies changed by responses and not yet handed to the store
        self.pending: dict[CookieKey, CookieLine | None] = {}
        #: the identities of the cookies loaded from ``--cookies`` (credentials)
        self.credential_keys: set[CookieKey] = set()

    # -- aiohttp's hooks ----------------------------------------------------------------------

    def _build_morsel(self, cookie: Morsel[str]) -> Morsel[str]:
        """The cookie to send: its value exactly as the site set it (see the module notes)."""
        morsel: Morsel[str] = Morsel()
        morsel.__setstate__(  # type: ignore[attr-defined]
            {"key": cookie.key, "value": cookie.value, "coded_value": cookie.coded_value}
        )
        return morsel

    def update_cookies_from_headers(self, headers: Sequence[str], response_url: URL) -> None:
        if not headers:
            return
        host = response_url.raw_host or ""
        before = self._snapshot(host)
        super().update_cookies_from_headers(headers, response_url)
        after = self._snapshot(host)
        for key, line in after.items():
            if before.get(key) != line:
                self.pending[key] = line
        for key in before.keys() - after.keys():
            self.pending[key] = None

    def filter_cookies(self, request_url: URL = URL()) -> BaseCookie[str]:  # noqa: B008
        if self.credential_keys and not TRUSTED_CHANNEL.get():
            return self._without_credentials().filter_cookies(request_url)
        return super().filter_cookies(request_url)

    # -- listing and restoring ---------------------------------------------------------------

    def lines(self) -> list[CookieLine]:
        """Every live cookie, as cookies.txt lines."""
        self._do_expiration()
        return [
            self._line(domain, path, morsel)
            for (domain, path), cookies in self._cookies.items()
            for morsel in cookies.values()
        ]

    def apply(self, line: CookieLine) -> None:
        """Store one cookie as it was kept (a file, another process): no RFC 6265 parsing
        again, the absolute expiry kept; an expired one deletes its identity."""
        morsel: Morsel[str] = Morsel()
        morsel.__setstate__(  # type: ignore[attr-defined]
            {"key": line.name, "value": line.value, "coded_value": line.value}
        )
        morsel["path"] = line.path
        if not line.host_only:
            morsel["domain"] = line.domain
        if line.secure:
            morsel["secure"] = True
        if line.http_only:
            morsel["httponly"] = True
        url = URL.build(scheme="https", host=line.domain)
        expiry = float(line.expires) if line.expires else None
        self._update_cookies({line.name: morsel}, url, copy_morsels=False, expiration=expiry)

    def remove(self, key: CookieKey) -> None:
        self._delete_cookies([key])

    def take_changes(self) -> dict[CookieKey, CookieLine | None]:
        changes, self.pending = self.pending, {}
        return changes

    def _line(self, domain: str, path: str, morsel: Morsel[str]) -> CookieLine:
        key = (domain, path, morsel.key)
        expiry = self._expirations.get(key)
        return CookieLine(
            domain=domain,
            host_only=key in self._host_only_cookies,
            path=morsel["path"] or "/",
            secure=bool(morsel["secure"]),
            expires=max(int(expiry), 1) if expiry is not None else 0,
            name=morsel.key,
            value=morsel.coded_value,
            http_only=bool(morsel["httponly"]),
        )

    def _snapshot(self, host: str) -> dict[CookieKey, CookieLine]:
        """The cookies a response from ``host`` can set or delete: those of its domain and the
        domains above it (RFC 6265 section 5.3 step 6)."""
        domains = _domains_of(host)
        return {
            (domain, path, name): self._line(domain, path, morsel)
            for (domain, path), cookies in self._cookies.items()
            if domain in domains
            for name, morsel in cookies.items()
        }

    def _without_credentials(self) -> CrawlCookieJar:
        jar = CrawlCookieJar(loop=self._loop)
        for line in self.lines():
            if line.key not in self.credential_keys:
                jar.apply(line)
        return jar


def _domains_of(host: str) -> set[str]:
    """``a.b.example`` -> itself, ``b.example``, ``example``; an IP address is only itself."""
    labels = host.split(".")
    if ":" in host or host.replace(".", "").isdigit():
        return {host}
    return {".".join(labels[i:]) for i in range(len(labels))}


class CookieStore(Protocol):
    """Where a crawl's cookies are kept besides this process's memory.

    Entries are opaque strings: a field per cookie (:func:`field_name`) holding its cookies.txt
    line, plus :data:`LOADED_FILE_FIELD`. ``version`` counts changes made by anyone (None: only
    this process writes, there is nothing to re-read); ``update`` returns the version its own
    change made (None likewise).
    """

    async def load(self) -> dict[str, str]: ...

    async def version(self) -> int | None: ...

    async def update(self, changes: Mapping[str, str | None]) -> int | None: ...

    async def close(self) -> None: ...


class FileCookieStore:
    """The jar of a crawl one process owns, in ``state/cookies.txt`` (Netscape format).

    Rewritten whole (write, fsync, rename: never a torn file) at most every
    :data:`FLUSH_INTERVAL` seconds after a change, in a thread, and once more at close: a
    kill -9 loses at most the last second's cookies. Expired cookies are dropped on rewrite. A
    write that fails (a full disk) is remembered in :attr:`failure`, not raised: the crawl
    goes on, and a resume would start from the last file written.
    """

    def __init__(self, path: Path, *, interval: float = FLUSH_INTERVAL) -> None:
        self.path = path
        self.interval = interval
        self.failure: str | None = None
        self._entries: dict[str, str] = {}
        self._dirty = False
        self._flush: asyncio.Task[None] | None = None
        self._write_lock = threading.Lock()

    async def load(self) -> dict[str, str]:
        try:
            text = await asyncio.to_thread(self.path.read_text, encoding="utf-8")
        except FileNotFoundError:
            text = ""
        entries: dict[str, str] = {}
        for raw in text.splitlines():
            if raw.startswith(f"# {LOADED_FILE_FIELD} "):
                entries[LOADED_FILE_FIELD] = raw.split(" ", 2)[2]
                continue
            try:
                line = parse_line(raw)
            except ValueError:
                continue  # not ours: a line a person added by hand
            if line is not None:
                entries[field_name(line.key)] = line.to_line()
        self._entries = dict(entries)
        return entries

    async def version(self) -> int | None:
        return None

    async def update(self, changes: Mapping[str, str | None]) -> int | None:
        for name, value in changes.items():
            if value is None:
                self._entries.pop(name, None)
            else:
                self._entries[name] = value
        self._dirty = True
        if self._flush is None or self._flush.done():
            self._flush = asyncio.create_task(self._flush_loop(), name="cookie-state")
        return None

    async def close(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            await asyncio.gather(self._flush, return_exceptions=True)
        if self._dirty:
            self._dirty = False
            await asyncio.to_thread(self._write, dict(self._entries))

    async def _flush_loop(self) -> None:
        while self._dirty:
            await asyncio.sleep(self.interval)
            self._dirty = False
            await asyncio.to_thread(self._write, dict(self._entries))

    def _write(self, entries: dict[str, str]) -> None:
        marker = entries.pop(LOADED_FILE_FIELD, None)
        comments = ["the crawl's cookie jar: a resumed crawl sends these (do not publish)"]
        if marker is not None:
            comments.append(f"{LOADED_FILE_FIELD} {marker}")
        now = time.time()
        lines = [
            line
            for value in entries.values()
            if (line := parse_line(value)) is not None and not line.expired(now)
        ]
        with self._write_lock:
            try:
                write_private(self.path, format_text(lines, comments))
            except OSError as exc:
                self.failure = f"cannot write {self.path}: {exc.strerror or exc}"
            else:
                self.failure = None


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable by the owner only (it holds cookies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomicfile.write_text(path, text, private=True)


class CrawlCookies:
    """The crawl's jar and its store, kept in step around each fetch.

    ``open`` fills the jar from the store (a resumed or shared crawl's cookies), then applies
    the ``--cookies`` file (and the ``--profile``'s cookies) unless the store says that very
    file was applied already; a different one than the store's (a new login before a resume)
    replaces the jar's cookies, the old session's with them.
    ``refresh`` (before a request) re-reads a shared store another process changed;
    ``publish`` (after a response, before its links are queued) hands this process's changes
    to the store, so any process that fetches those links has the cookie first.
    """

    def __init__(
        self,
        jar: CrawlCookieJar,
        store: CookieStore | None = None,
        loaded: Sequence[CookieLine] = (),
    ) -> None:
        self.jar = jar
        self.store = store
        self.loaded = tuple(loaded)
        self._version: int | None = None
        self._lock = asyncio.Lock()

    async def open(self) -> None:
        entries = await self._read() if self.store is not None else {}
        self.jar.credential_keys = {line.key for line in self.loaded}
        marker: dict[str, str] = {}
        if self.loaded:
            digest = loaded_digest(self.loaded)
            before = entries.get(LOADED_FILE_FIELD)
            if before != digest:
                if before is not None:
                    # another file (a new login) is a new session: what the crawl received
                    # in the old one (a session id, a cookie its pages' scripts made from
                    # it) would only be sent with the new one
                    for stale in self.jar.lines():
                        self.jar.remove(stale.key)
                        self.jar.pending[stale.key] = None
                for line in self.loaded:
                    self.jar.apply(line)
                    self.jar.pending[line.key] = line
                marker[LOADED_FILE_FIELD] = digest
        await self.publish(marker)

    async def refresh(self) -> None:
        """Take in what other processes stored since the last look (one cheap read when
        nothing changed)."""
        store = self.store
        if store is None or self._version is None:
            return
        if await store.version() == self._version:
            return
        async with self._lock:
            if await store.version() != self._version:
                await self._read()

    async def publish(self, extra: Mapping[str, str] | None = None) -> None:
        """Hand the jar's changes (and ``extra`` fields) to the store."""
        changes = self.jar.take_changes()
        if not (changes or extra) or self.store is None:
            return
        fields: dict[str, str | None] = {
            field_name(key): None if line is None else line.to_line()
            for key, line in changes.items()
        }
        fields.update(extra or {})
        before = self._version
        after = await self.store.update(fields)
        if after is not None and before is not None and after == before + 1:
            self._version = after  # only this change since the last read: nothing to re-read

    @property
    def failure(self) -> str | None:
        """Why the jar's state could not be kept, if it could not (a full disk)."""
        return getattr(self.store, "failure", None)

    async def close(self) -> None:
        await self.publish()
        if self.store is not None:
            await self.store.close()

    def export(self) -> str:
        """The jar as a cookies.txt file (``--save-cookies``)."""
        return format_text(
            self.jar.lines(), ["written by archiver at the end of a crawl (do not publish)"]
        )

    async def _read(self) -> dict[str, str]:
        """Replace the jar's contents with the store's, keeping changes not yet published."""
        assert self.store is not None
        version = await self.store.version()  # before the read: a later change is seen later
        entries = await self.store.load()
        self._version = version
        stored = _lines(entries)
        keep = self.jar.pending
        for line in self.jar.lines():
            if line.key not in stored and line.key not in keep:
                self.jar.remove(line.key)
        for key, line in stored.items():
            if key not in keep:
                self.jar.apply(line)
        return entries


def _lines(entries: Mapping[str, str]) -> dict[CookieKey, CookieLine]:
    out = {}
    for name, value in entries.items():
        if name == LOADED_FILE_FIELD:
            continue
        try:
            line = parse_line(value)
        except ValueError:
            continue
        if line is not None:
            out[line.key] = line
    return out


def loaded_digest(lines: Iterable[CookieLine]) -> str:
    """What identifies a loaded cookies file (its cookies, not its comments or order)."""
    text = "\n".join(sorted(line.to_line() for line in lines))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_jar(enabled: bool) -> AbstractCookieJar:
    """The session's jar: the crawl's, or aiohttp's dummy jar with ``--no-cookies``."""
    return CrawlCookieJar() if enabled else aiohttp.DummyCookieJar()


__all__ = [
    "LOADED_FILE_FIELD",
    "TRUSTED_CHANNEL",
    "CookieStore",
    "CrawlCookieJar",
    "CrawlCookies",
    "FileCookieStore",
    "check_jar_compatibility",
    "field_name",
    "loaded_digest",
    "make_jar",
    "write_private",
]
