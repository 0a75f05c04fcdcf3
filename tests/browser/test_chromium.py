"""Chromium as a process: found or refused in one line, its whole process group gone after
close, after an exception and after its owner is killed, a crash or a hang costing one page."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from archiver.browser.chromium import (
    ChromiumProcess,
    chromium_flags,
    find_chromium,
    group_members,
    profile_users,
)
from archiver.browser.errors import BrowserError, BrowserUnavailableError, PageTimeoutError
from archiver.browser.exchange import BrowserRequest, BrowserResponse, Refusal
from archiver.browser.pool import BrowserConfig, BrowserPool

REPO = Path(__file__).resolve().parents[2]


def html(body: str) -> BrowserResponse:
    return BrowserResponse(200, [("Content-Type", "text/html")], body.encode())


class Hanging:
    """Answers the page, then holds its ``/hang`` request until cancelled."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        if request.url.endswith("/hang"):
            self.reached.set()
            await asyncio.Event().wait()
        if request.is_main_frame:
            return html("<title>hanging</title><script>fetch('/hang')</script>")
        return Refusal("not needed")


async def simple(request: BrowserRequest) -> BrowserResponse | Refusal:
    if request.is_main_frame:
        return html(f"<title>{request.url.rsplit('/', 1)[1]}</title><p>fine")
    return Refusal("not needed")


# -- finding and starting ------------------------------------------------------------------------


def test_missing_chromium_is_one_line_naming_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BrowserUnavailableError) as caught:
        find_chromium()
    message = str(caught.value)
    assert "\n" not in message
    assert "apt-get install chromium" in message
    assert "chromium, chromium-browser, google-chrome" in message
    with pytest.raises(BrowserUnavailableError, match="--chromium /no/such/chromium"):
        find_chromium("/no/such/chromium")


async def test_pool_start_refuses_a_missing_chromium(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    pool = BrowserPool(BrowserConfig(state_dir=tmp_path / "browser"))
    with pytest.raises(BrowserUnavailableError, match="apt-get install chromium"):
        await pool.start()


async def test_a_chromium_that_does_not_start_is_one_line_with_its_error(tmp_path: Path) -> None:
    fake = tmp_path / "chromium"
    fake.write_text(
        "#!/bin/sh\necho 'error while loading shared libraries: libnss3.so' >&2\nexit 127\n"
    )
    fake.chmod(0o755)
    with pytest.raises(BrowserUnavailableError) as caught:
        await ChromiumProcess.launch(str(fake), tmp_path / "browser", [], timeout=30)
    message = str(caught.value)
    assert "\n" not in message
    assert "did not start" in message
    assert "libnss3.so" in message


# -- no orphans ----------------------------------------------------------------------------------


async def test_close_reaps_the_whole_process_group(
    browser_config: Callable[..., BrowserConfig],
) -> None:
    pool = BrowserPool(browser_config())
    await pool.start(launch=True)
    assert pool.process is not None
    pgid = pool.process.pgid
    result = await pool.load("http://one.test/first", simple)
    assert result.title == "first"
    assert len(group_members(pgid)) > 1  # the browser, its zygotes, renderers...
    assert pool.process.state_dir.joinpath("chromium.pid").exists()
    await pool.close()
    assert group_members(pgid) == []
    assert not pool.config.state_dir.joinpath("chromium.pid").exists()


async def test_an_exception_in_the_owner_leaves_no_chromium(
    browser_config: Callable[..., BrowserConfig],
) -> None:
    pgid = 0
    with pytest.raises(RuntimeError, match="the crawl broke"):
        async with BrowserPool(browser_config()) as pool:
            await pool.load("http://one.test/page", simple)
            assert pool.process is not None
            pgid = pool.process.pgid
            raise RuntimeError("the crawl broke")
    assert pgid and group_members(pgid) == []


def start_owner(state_dir: Path) -> tuple[subprocess.Popen[str], int]:
    owner = subprocess.Popen(
        [sys.executable, "-m", "tests.support.browser_owner", str(state_dir)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert owner.stdout is not None
    line = owner.stdout.readline()
    assert line.startswith("READY "), line
    return owner, int(line.split()[1])


def stop(owner: subprocess.Popen[str]) -> None:
    """kill -9 the owner and reap it."""
    owner.kill()
    owner.wait()
    assert owner.stdout is not None
    owner.stdout.close()


async def wait_until_gone(pgid: int) -> None:
    while group_members(pgid):  # noqa: ASYNC110 - processes have no event to wait on
        await asyncio.sleep(0.05)


async def test_chromium_dies_with_its_killed_owner(
    tmp_path: Path, chromium_installed: None
) -> None:
    """kill -9 of the owner closes the DevTools pipe; Chromium exits on its own."""
    owner, pgid = start_owner(tmp_path / "browser")
    assert group_members(pgid)
    stop(owner)
    await wait_until_gone(pgid)
    assert profile_users(tmp_path / "browser" / "profile") == []


async def test_a_leftover_of_a_killed_owner_is_reaped_at_the_next_start(
    tmp_path: Path, chromium_installed: None
) -> None:
    """A Chromium too busy or hung to notice its owner's death (modelled by stopping it) is
    still there after kill -9; the next run on the same state directory kills it."""
    state = tmp_path / "browser"
    owner, pgid = start_owner(state)
    os.killpg(pgid, signal.SIGSTOP)
    stop(owner)
    leftover = group_members(pgid)
    assert leftover, "the stopped Chromium should have outlived its owner"
    pool = BrowserPool(BrowserConfig(state_dir=state))
    await pool.start()
    assert group_members(pgid) == []
    assert profile_users(state / "profile") == []
    await pool.close()


# -- crashes and hangs cost one page ---------------------------------------------------------------


async def test_chromium_killed_mid_page_fails_that_page_and_the_next_page_works(
    pool: BrowserPool,
) -> None:
    hanging = Hanging()
    page = asyncio.create_task(pool.load("http://crash.test/", hanging))
    await hanging.reached.wait()
    assert pool.process is not None
    first = pool.process
    os.kill(first.pid, signal.SIGKILL)
    with pytest.raises(BrowserError):
        await page
    result = await pool.load("http://crash.test/after", simple)
    assert result.title == "after"
    assert pool.process is not first
    assert (pool.stats.launches, pool.stats.crashes, pool.stats.failed) == (2, 1, 1)
    assert group_members(first.pgid) == []


async def test_a_crashed_tab_fails_its_page_and_the_browser_goes_on(pool: BrowserPool) -> None:
    """The page's renderer crashes (Page.crash, sent on a second session to its tab) while the
    page waits for a request."""
    hanging = Hanging()
    page = asyncio.create_task(pool.load("http://crash.test/", hanging))
    await hanging.reached.wait()
    assert pool.process is not None
    connection = pool.process.connection
    targets = await connection.browser.send("Target.getTargets", timeout=30)
    tab = next(t for t in targets["targetInfos"] if t["url"] == "http://crash.test/")
    attached = await connection.browser.send(
        "Target.attachToTarget", {"targetId": tab["targetId"], "flatten": True}, timeout=30
    )
    with contextlib.suppress(BrowserError):  # the renderer may die before it answers
        await connection.session(attached["sessionId"]).send("Page.crash", timeout=30)
    with pytest.raises(BrowserError, match="crashed"):
        await page
    result = await pool.load("http://crash.test/after", simple)
    assert result.title == "after"
    assert (pool.stats.launches, pool.stats.crashes) == (1, 0)


async def test_a_hung_tab_times_out_and_the_browser_goes_on(
    browser_config: Callable[..., BrowserConfig],
) -> None:
    async def looping(request: BrowserRequest) -> BrowserResponse | Refusal:
        if request.url.endswith("/loop"):
            return html("<title>busy</title><script>for (;;) {}</script>")
        return await simple(request)

    # the timeout is only a setting of this test: the looping page can never finish, and the
    # next page has ten seconds to load its few bytes
    async with BrowserPool(browser_config(page_timeout=10.0, behaviors=("none",))) as pool:
        with pytest.raises(PageTimeoutError, match="page timeout of 10 s"):
            await pool.load("http://hang.test/loop", looping)
        result = await pool.load("http://hang.test/fine", looping)
        assert result.title == "fine"
        assert pool.stats.launches == 1


async def test_chromium_is_replaced_after_restart_after_pages(
    browser_config: Callable[..., BrowserConfig],
) -> None:
    async with BrowserPool(browser_config(restart_after=2, tabs=1)) as pool:
        groups = []
        for n in range(5):
            result = await pool.load(f"http://restart.test/p{n}", simple)
            assert result.title == f"p{n}"
            assert pool.process is not None
            groups.append(pool.process.pgid)
        assert pool.stats.launches == 3
        assert len(set(groups)) == 3
        for pgid in set(groups[:-1]):
            assert group_members(pgid) == []


# -- the protocol connection -----------------------------------------------------------------------


async def test_waiting_commands_fail_at_once_when_the_browser_dies(
    tmp_path: Path, chromium_installed: None
) -> None:
    binary = find_chromium()
    flags = chromium_flags(window=(800, 600))
    process = await ChromiumProcess.launch(binary, tmp_path / "browser", flags)
    try:
        browser = process.connection.browser
        target = await browser.send("Target.createTarget", {"url": "about:blank"}, timeout=30)
        attached = await browser.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, timeout=30
        )
        tab = process.connection.session(attached["sessionId"])
        forever = asyncio.create_task(
            tab.send(
                "Runtime.evaluate",
                {"expression": "new Promise(() => {})", "awaitPromise": True},
                timeout=3600,
            )
        )
        await asyncio.sleep(0)
        process.kill()
        with pytest.raises(BrowserError, match="closed the DevTools connection"):
            await forever
        with pytest.raises(BrowserError, match="closed the DevTools connection"):
            await browser.send("Browser.getVersion", timeout=3600)
    finally:
        await process.close()
    assert group_members(process.pgid) == []
