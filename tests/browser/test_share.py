"""Concurrent identical requests share one answer; the rest are performed on their own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from archiver.browser.exchange import BrowserRequest, BrowserResponse, Refusal
from archiver.browser.pool import BrowserConfig, BrowserPool
from archiver.browser.share import SharedRequests, shareable
from tests.browser.conftest import SiteHandler
from tests.support.spa_site import SpaSite


def request(
    url: str = "https://example.org/app.js",
    method: str = "GET",
    body: bytes | None = None,
    headers: tuple[tuple[str, str], ...] = (),
) -> BrowserRequest:
    return BrowserRequest(method, url, headers, body, True, "Script", False, False, False)


def test_what_may_be_shared() -> None:
    assert shareable(request())
    assert shareable(request(method="HEAD"))
    assert not shareable(request(method="POST", body=b"x"))
    assert not shareable(request(headers=(("Range", "bytes=0-"),)))
    assert not shareable(request(headers=(("If-None-Match", '"abc"'),)))


class Gate:
    """A handler that counts calls and answers only when opened."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.open = asyncio.Event()

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        self.calls.append(request.url)
        await self.open.wait()
        return BrowserResponse(200, [], request.url.encode())


async def test_concurrent_requests_share_one_answer_and_later_ones_ask_again() -> None:
    gate = Gate()
    shared = SharedRequests(gate)
    app = "https://example.org/app.js"
    answers = [asyncio.create_task(shared(request(app))) for _ in range(3)]
    other = asyncio.create_task(shared(request("https://example.org/other.js")))
    post = asyncio.create_task(shared(request("https://example.org/api", "POST", b"1")))
    post_again = asyncio.create_task(shared(request("https://example.org/api", "POST", b"1")))
    await asyncio.sleep(0)  # every task is now waiting: on the gate, or on the first app.js
    gate.open.set()
    results = await asyncio.gather(*answers, other, post, post_again)
    bodies = [r.body for r in results if isinstance(r, BrowserResponse)]
    assert bodies[:3] == [app.encode()] * 3
    assert sorted(gate.calls) == sorted(
        [app, "https://example.org/other.js", "https://example.org/api", "https://example.org/api"]
    )
    assert shared.shared == 2
    await shared(request(app))  # nothing pending any more: asked again
    assert gate.calls.count(app) == 2


async def test_a_cancelled_first_asker_hands_over_and_errors_are_shared() -> None:
    gate = Gate()
    shared = SharedRequests(gate)
    first = asyncio.create_task(shared(request()))
    await asyncio.sleep(0)
    second = asyncio.create_task(shared(request()))
    await asyncio.sleep(0)
    first.cancel()  # its tab closed
    await asyncio.sleep(0)
    gate.open.set()
    answer = await second
    assert isinstance(answer, BrowserResponse)
    assert len(gate.calls) == 2  # the second asked the handler itself

    async def broken(request: BrowserRequest) -> BrowserResponse | Refusal:
        await asyncio.sleep(0)
        raise OSError("disk full")

    failing = SharedRequests(broken)
    outcomes = await asyncio.gather(failing(request()), failing(request()), return_exceptions=True)
    assert [type(outcome) for outcome in outcomes] == [OSError, OSError]


async def test_tabs_asking_for_the_same_file_at_once_reach_the_server_once(
    browser_config: Callable[..., BrowserConfig], spa: SpaSite, handler: SiteHandler
) -> None:
    """Three item pages need /static/item.js; its answer is held until all three tabs have
    asked, so the three requests overlap: the server sees one."""
    script = spa.url("/static/item.js")
    asked = 0
    all_asked = asyncio.Event()

    async def held(request: BrowserRequest) -> BrowserResponse | Refusal:
        if request.url == script:
            await all_asked.wait()
        return await handler(request)

    shared = SharedRequests(held)

    async def counting(request: BrowserRequest) -> BrowserResponse | Refusal:
        nonlocal asked
        if request.url == script:
            asked += 1
            if asked == 3:
                all_asked.set()
        return await shared(request)

    async with BrowserPool(browser_config(tabs=3, behaviors=("none",))) as pool:
        results = await asyncio.gather(
            *(pool.load(spa.url(f"/item/{n}"), counting) for n in (1, 2, 3))
        )
    assert [result.title for result in results] == ["Astrolabe", "Sextant", "Orrery"]
    assert spa.requested().count("GET /static/item.js") == 1
    assert shared.shared >= 2  # two for item.js; the stylesheet or the favicon may overlap too
