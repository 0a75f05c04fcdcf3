"""One fetch for requests made at the same moment: tabs loading pages of one site ask for the same
stylesheet, script or font together, and the server must see it once.

:class:`SharedRequests` wraps a :class:`~archiver.browser.exchange.RequestHandler`: while a
``GET`` or ``HEAD`` for a URL is being answered, the same request from another tab (or frame)
waits for that answer instead of being performed again. Requests with a body, and those that
ask for part of a resource (``Range``) or set conditions (``If-*``), are always performed on
their own. Answers are not kept once given: what the crawl already holds is the handler's
business (it answers from its records).
"""

from __future__ import annotations

import asyncio

from archiver.browser.exchange import BrowserRequest, BrowserResponse, Refusal, RequestHandler

_SHARED_METHODS = frozenset({"GET", "HEAD"})
_OWN_HEADERS = ("range", "if-")


def shareable(request: BrowserRequest) -> bool:
    """Whether another request for the same URL may get this request's answer."""
    if request.method not in _SHARED_METHODS or request.body:
        return False
    return not any(name.lower().startswith(_OWN_HEADERS) for name, _ in request.headers)


class _AbandonedError(Exception):
    """The request being waited for was cancelled (its tab closed): ask again."""


class SharedRequests:
    """A handler whose concurrent identical requests share one answer (see the module doc)."""

    def __init__(self, handler: RequestHandler) -> None:
        self.handler = handler
        self._answering: dict[tuple[str, str], asyncio.Future[BrowserResponse | Refusal]] = {}
        #: requests answered with another request's answer
        self.shared = 0

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        if not shareable(request):
            return await self.handler(request)
        key = (request.method, request.url)
        while (pending := self._answering.get(key)) is not None:
            try:
                answer = await asyncio.shield(pending)
            except _AbandonedError:
                continue  # the first asker went away: the next one asks the handler
            self.shared += 1
            return answer
        future: asyncio.Future[BrowserResponse | Refusal] = (
            asyncio.get_running_loop().create_future()
        )
        self._answering[key] = future
        try:
            answer = await self.handler(request)
        except asyncio.CancelledError:
            _fail(future, _AbandonedError())
            raise
        except Exception as exc:
            _fail(future, exc)
            raise
        else:
            future.set_result(answer)
            return answer
        finally:
            del self._answering[key]


def _fail(future: asyncio.Future[BrowserResponse | Refusal], exc: BaseException) -> None:
    future.set_exception(exc)
    future.exception()  # marked as retrieved: nobody may be waiting for it
