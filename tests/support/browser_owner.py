"""A process that owns a browser pool, for tests that kill the owner.

``python -m tests.support.browser_owner STATE_DIR`` starts a pool in STATE_DIR, loads one page
(answered by a built-in handler: no server needed), prints ``READY <pgid>`` and waits to be
killed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from archiver.browser.exchange import BrowserRequest, BrowserResponse, Refusal
from archiver.browser.pool import BrowserConfig, BrowserPool

PAGE = b"<!DOCTYPE html><title>owned</title><p>A page loaded by a process about to be killed."


async def answer(request: BrowserRequest) -> BrowserResponse | Refusal:
    if request.is_main_frame:
        return BrowserResponse(200, [("Content-Type", "text/html")], PAGE)
    return Refusal("only the page")


async def main(state_dir: Path) -> None:
    pool = BrowserPool(BrowserConfig(state_dir=state_dir, tabs=1, behaviors=("none",)))
    await pool.start()
    result = await pool.load("http://owner.test/", answer)
    assert result.title == "owned", result
    assert pool.process is not None
    print(f"READY {pool.process.pgid}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
