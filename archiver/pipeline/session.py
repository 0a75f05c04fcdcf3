"""Is the crawl's login session still alive? Judged on what the crawl fetches, and by a check URL.

A crawl with a session (``--profile``, ``--cookies``) says how the site shows that the session
ended, with ``--logged-out`` rules (:mod:`archiver.policy.loggedout`), a ``--login-check``
URL, or both:

* **Rules**: every response the crawl fetches for a lease (the leased URL, and every request a
  browser page makes) is judged before it is recorded (:meth:`SessionWatch.judge`, called by
  :meth:`archiver.pipeline.capture.Capturer.fetch`). A sign raises
  :class:`~archiver.errors.SessionEndedError`: nothing of that response is archived, the lease
  stays in flight (so a resumed crawl fetches its URL again, and the WARC records its lease
  wrote are cut on resume), and the crawler stops resumably (exit 3).
* **Check URL**: a page of the site that only a logged-in reader gets with a 2xx (an account
  page, ``/api/me``). It is fetched, and never archived, when the crawl starts (a profile that
  expired already stops the crawl before anything is captured), and after each capture of a
  leased URL, before its links are queued, and again once a browser loaded the page
  (:meth:`SessionWatch.confirm`): a lease goes on only once a check *begun after its capture
  ended* found the session alive, so a page captured after the session ended is never counted
  done, and what a login wall links to is never queued, even where no rule can see it. One
  check serves every lease that finished before it began, so the cost is at most one or two
  requests per page, and far fewer with several workers; rules cost nothing and are the first
  choice where the site shows the end. The check is booked with its host's politeness gate
  like any request. A check that cannot be fetched (the site is down) stops the crawl
  resumably too: the session cannot be vouched for.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from archiver import urls
from archiver.errors import FetchError, SessionEndedError
from archiver.fetch.fetcher import Fetcher
from archiver.frontier.base import Frontier
from archiver.models import Exchange
from archiver.policy.loggedout import SessionPolicy, logged_out


@dataclass(slots=True)
class _Check:
    started: float
    task: asyncio.Task[str | None]


class SessionWatch:
    """Judges responses and runs the check URL for one crawl run (see the module docstring)."""

    def __init__(self, policy: SessionPolicy, fetcher: Fetcher, frontier: Frontier) -> None:
        self.policy = policy
        self._fetcher = fetcher
        self._frontier = frontier
        self._check: _Check | None = None
        #: the first sign seen: every later confirmation ends the same way
        self.ended: SessionEndedError | None = None

    def judge(self, ex: Exchange) -> None:
        """Raise :class:`SessionEndedError` when ``ex`` shows the session ended (its spool is
        then released: nothing of it is archived)."""
        sign = logged_out(ex, self.policy.rules)
        if sign is not None:
            ex.response.close()
            raise self._end(ex.target_uri, sign)

    async def verify(self) -> None:
        """The check URL, fetched now (the crawl's start); raises when the session is over."""
        if self.policy.check_url is not None:
            await self.confirm(asyncio.get_running_loop().time())

    async def confirm(self, finished: float) -> None:
        """Return once a check begun at or after loop time ``finished`` found the session alive;
        raise :class:`SessionEndedError` when it found it ended. Without a check URL: at once."""
        if self.policy.check_url is None:
            return
        while True:
            if self.ended is not None:
                raise SessionEndedError(self.ended.url, self.ended.sign, self.policy.hint)
            check = self._check
            if check is not None and check.started >= finished:
                sign = await asyncio.shield(check.task)
                if sign is not None:
                    raise self._end(self.policy.check_url, sign)
                return
            if check is not None and not check.task.done():
                # begun before this lease finished: it cannot vouch for it; wait for it to end
                with contextlib.suppress(Exception):
                    await asyncio.shield(check.task)
                continue
            loop = asyncio.get_running_loop()
            self._check = _Check(loop.time(), asyncio.create_task(self._fetch_check()))

    async def close(self) -> None:
        check = self._check
        if check is not None and not check.task.done():
            check.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await check.task

    async def _fetch_check(self) -> str | None:
        """The check URL's verdict: None while logged in, else the sign."""
        url = self.policy.check_url
        assert url is not None
        wait = self._frontier.reserve(urls.host_port(url))
        if wait > 0:
            await asyncio.sleep(wait)
        try:
            ex = await self._fetcher.fetch(url)
        except FetchError as exc:
            return f"(the --login-check URL) could not be fetched: {exc.reason.value}"
        try:
            sign = logged_out(ex, self.policy.rules)
            if sign is None and not 200 <= ex.status < 300:
                sign = f"answered {ex.status} to the --login-check request"
            return sign
        finally:
            ex.response.close()

    def _end(self, url: str, sign: str) -> SessionEndedError:
        if self.ended is None:
            self.ended = SessionEndedError(url, sign, self.policy.hint)
        return SessionEndedError(url, sign, self.policy.hint)


__all__ = ["SessionWatch"]
