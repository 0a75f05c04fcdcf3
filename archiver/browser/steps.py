"""The steps of an unattended login, carried out in a tab as a person would.

A login script (:mod:`archiver.login.script` reads the file) is a list of four kinds of step:

* :class:`Goto` a URL, and wait for its load event;
* :class:`Fill` a field (a CSS selector) with a value: the field is focused, what it holds is
  selected, and the value is typed over it with ``Input.insertText``, which the page receives
  as a person's typing (``input`` events its framework listens to), not as a script setting
  ``value``;
* :class:`Click` an element: scrolled into view, then pressed and released at its centre with
  ``Input.dispatchMouseEvent``, a trusted click (``event.isTrusted``), so handlers that ignore
  synthetic clicks run;
* :class:`WaitFor` an element to appear (the members' page after the login redirect).

Every step waits for its element, up to its timeout, across navigations (a page being replaced
has no document to look in for a moment). A failure raises
:class:`~archiver.errors.LoginError` naming the step and its selector; a value to type is
never part of a message or of a step's ``repr``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from archiver.browser.cdp import Session
from archiver.browser.errors import BrowserError
from archiver.errors import LoginError

#: How often an element is looked for while a step waits for it.
POLL_INTERVAL = 0.1

_FIND = """((selector) => {
  const node = document.querySelector(selector);
  if (!node) return null;
  node.scrollIntoView({block: "center", inline: "center"});
  const box = node.getBoundingClientRect();
  return {x: box.left + box.width / 2, y: box.top + box.height / 2,
          width: box.width, height: box.height};
})(%s)"""

_FOCUS = """((selector) => {
  const node = document.querySelector(selector);
  if (!node) return false;
  node.focus();
  if (typeof node.select === "function") node.select();
  else if (node.isContentEditable) document.execCommand("selectAll");
  return document.activeElement === node;
})(%s)"""


@dataclass(frozen=True, slots=True)
class Goto:
    url: str
    timeout: float = 30.0

    def describe(self) -> str:
        return f"goto {self.url}"


@dataclass(frozen=True, slots=True)
class Fill:
    selector: str
    value: str = field(repr=False)
    """What is typed: often a password, so never shown."""
    timeout: float = 30.0
    source: str = ""
    """Where the value comes from, for messages (``$SITE_PASSWORD``), never the value."""

    def describe(self) -> str:
        return f"fill {self.selector}" + (f" from {self.source}" if self.source else "")


@dataclass(frozen=True, slots=True)
class Click:
    selector: str
    timeout: float = 30.0

    def describe(self) -> str:
        return f"click {self.selector}"


@dataclass(frozen=True, slots=True)
class WaitFor:
    selector: str
    timeout: float = 30.0

    def describe(self) -> str:
        return f"wait for {self.selector}"


Step = Goto | Fill | Click | WaitFor


#: Loads a page in the tab and waits for it: ``await navigate(url, timeout)``.
Navigate = Callable[[str, float], Awaitable[None]]


async def run_steps(
    session: Session,
    steps: Sequence[Step],
    navigate: Navigate,
    *,
    on_step: Callable[[int, Step], None] | None = None,
) -> None:
    """Carry out ``steps`` in the tab of ``session``; ``navigate(url, timeout)`` loads a page
    and waits for it (the tab's owner knows its load events). Raises
    :class:`~archiver.errors.LoginError` at the first step that fails."""
    for number, step in enumerate(steps, start=1):
        if on_step is not None:
            on_step(number, step)
        try:
            await _run(session, step, navigate)
        except LoginError as exc:
            raise LoginError(f"login script step {number} ({step.describe()}): {exc}") from None
        except BrowserError as exc:
            raise LoginError(
                f"login script step {number} ({step.describe()}): the browser failed: {exc}"
            ) from None


async def _run(session: Session, step: Step, navigate: Navigate) -> None:
    if isinstance(step, Goto):
        await navigate(step.url, step.timeout)
    elif isinstance(step, WaitFor):
        await _find(session, step.selector, step.timeout)
    elif isinstance(step, Click):
        box = await _find(session, step.selector, step.timeout)
        await click(session, float(box["x"]), float(box["y"]))
    else:
        await _find(session, step.selector, step.timeout)
        focused = await _evaluate(session, _FOCUS % json.dumps(step.selector), step.timeout)
        if not focused:
            raise LoginError("the element cannot take the focus (not a field?)")
        await session.send("Input.insertText", {"text": step.value}, timeout=step.timeout)


async def _find(session: Session, selector: str, timeout: float) -> dict[str, Any]:  # noqa: ASYNC109
    """The element's centre and size, once it is there with a size (rendered)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        try:
            box = await _evaluate(session, _FIND % json.dumps(selector), max(end - loop.time(), 1))
        except BrowserError:
            box = None  # the document is being replaced: look again
        if isinstance(box, dict) and box.get("width") and box.get("height"):
            return box
        if loop.time() >= end:
            raise LoginError(f"no element matches within {timeout:g} s")
        await asyncio.sleep(POLL_INTERVAL)


async def _evaluate(session: Session, expression: str, timeout: float) -> Any:  # noqa: ASYNC109
    reply = await session.send(
        "Runtime.evaluate",
        {"expression": expression, "returnByValue": True, "awaitPromise": True},
        timeout=timeout,
    )
    if "exceptionDetails" in reply:
        details = reply["exceptionDetails"]
        text = details.get("exception", {}).get("description") or details.get("text")
        if "SyntaxError" in str(text) and "querySelector" in str(text):
            raise LoginError("not a valid CSS selector")
        raise BrowserError(f"the page's script context failed: {text}")
    return reply.get("result", {}).get("value")


async def click(session: Session, x: float, y: float, *, timeout: float = 10.0) -> None:  # noqa: ASYNC109
    """A left click at (x, y) of the viewport, as a mouse makes it."""
    base = {"x": x, "y": y}
    await session.send("Input.dispatchMouseEvent", {"type": "mouseMoved", **base}, timeout=timeout)
    for kind, buttons in (("mousePressed", 1), ("mouseReleased", 0)):
        await session.send(
            "Input.dispatchMouseEvent",
            {"type": kind, "button": "left", "buttons": buttons, "clickCount": 1, **base},
            timeout=timeout,
        )


__all__ = ["Click", "Fill", "Goto", "Step", "WaitFor", "click", "run_steps"]
