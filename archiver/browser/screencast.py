"""A tab shown elsewhere and worked from elsewhere: its screencast out, a person's input in.

On a server without a display, a person logs in through a page archiver serves
(:mod:`archiver.commands.loginpage`): it shows the login tab's frames and sends back what the
person does with mouse and keyboard. This module is the browser's half, over the DevTools
protocol, as Browsertrix's profile page does it:

* ``Page.startScreencast`` sends a JPEG frame whenever the tab's rendering changes; each is
  acknowledged (``Page.screencastFrameAck``), or Chromium stops sending. Only the newest frame
  is kept: a viewer that falls behind skips frames, never queues them.
* ``Input.dispatchMouseEvent`` and ``Input.dispatchKeyEvent`` give the page trusted events, as
  a person's hand would (``event.isTrusted``); ``Input.insertText`` types a pasted text.

The input is described in plain values (:class:`MouseInput`, :class:`KeyInput`...), checked
here, so the page server passes on what its client sent without trusting it: a value of the
wrong type or out of range is refused with :class:`ValueError`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from dataclasses import dataclass
from typing import Any

from archiver.browser.cdp import Params, Session
from archiver.browser.errors import BrowserError

#: Input commands must not stall a person's typing for long.
INPUT_TIMEOUT = 10.0
MOUSE_EVENTS = {"down": "mousePressed", "up": "mouseReleased", "move": "mouseMoved"}
MOUSE_BUTTONS = ("none", "left", "middle", "right", "back", "forward")
#: Keys that type nothing: their Windows virtual key code (what Chromium's editing commands act
#: on, UI Events KeyboardEvent code values) and, for Enter, the text a keypress gives.
SPECIAL_KEYS: dict[str, tuple[int, str]] = {
    "Backspace": (8, ""),
    "Tab": (9, ""),
    "Enter": (13, "\r"),
    "Escape": (27, ""),
    "PageUp": (33, ""),
    "PageDown": (34, ""),
    "End": (35, ""),
    "Home": (36, ""),
    "ArrowLeft": (37, ""),
    "ArrowUp": (38, ""),
    "ArrowRight": (39, ""),
    "ArrowDown": (40, ""),
    "Delete": (46, ""),
}
#: Input.dispatchKeyEvent modifiers: Alt 1, Ctrl 2, Meta 4, Shift 8.
MODIFIERS_MAX = 15
#: The largest coordinate accepted (CSS pixels).
MAX_COORDINATE = 100_000.0


@dataclass(frozen=True, slots=True)
class Frame:
    """One screencast frame."""

    number: int
    jpeg: bytes
    width: int
    """The page's width in CSS pixels (``deviceWidth``): clicks are given in these."""
    height: int


@dataclass(frozen=True, slots=True)
class MouseInput:
    event: str  #: down, up, move
    x: float
    y: float
    button: str = "none"
    buttons: int = 0
    clicks: int = 0
    modifiers: int = 0


@dataclass(frozen=True, slots=True)
class WheelInput:
    x: float
    y: float
    dx: float
    dy: float


@dataclass(frozen=True, slots=True)
class KeyInput:
    event: str  #: down, up
    key: str  #: the KeyboardEvent ``key`` value: "a", "A", "Enter"...
    code: str = ""
    modifiers: int = 0


@dataclass(frozen=True, slots=True)
class TextInput:
    text: str  #: typed as is (a paste)


Input = MouseInput | WheelInput | KeyInput | TextInput


def parse_input(message: dict[str, Any]) -> Input:
    """An input message of the viewer (JSON decoded); :class:`ValueError` for anything else."""
    kind = message.get("type")
    if kind == "mouse":
        event = _choice(message.get("event"), MOUSE_EVENTS)
        return MouseInput(
            event,
            _coordinate(message.get("x")),
            _coordinate(message.get("y")),
            _choice(message.get("button", "none"), MOUSE_BUTTONS),
            _integer(message.get("buttons", 0), 0, 31),
            _integer(message.get("clicks", 0), 0, 3),
            _integer(message.get("modifiers", 0), 0, MODIFIERS_MAX),
        )
    if kind == "wheel":
        return WheelInput(
            _coordinate(message.get("x")),
            _coordinate(message.get("y")),
            _number(message.get("dx", 0.0), MAX_COORDINATE),
            _number(message.get("dy", 0.0), MAX_COORDINATE),
        )
    if kind == "key":
        key = message.get("key")
        if not isinstance(key, str) or not 1 <= len(key) <= 32:
            raise ValueError("a key needs its name")
        code = message.get("code", "")
        if not isinstance(code, str) or len(code) > 32:
            raise ValueError("a key's code is a short string")
        return KeyInput(
            _choice(message.get("event"), ("down", "up")),
            key,
            code,
            _integer(message.get("modifiers", 0), 0, MODIFIERS_MAX),
        )
    if kind == "text":
        text = message.get("text")
        if not isinstance(text, str) or len(text) > 10_000:
            raise ValueError("a text to type is a string of at most 10000 characters")
        return TextInput(text)
    raise ValueError(f"unknown input {kind!r}")


def _choice(value: Any, allowed: Any) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"expected one of {', '.join(allowed)}")
    return value


def _number(value: Any, limit: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or abs(value) > limit:
        raise ValueError("expected a number")
    return float(value)


def _coordinate(value: Any) -> float:
    number = _number(value, MAX_COORDINATE)
    if number < 0:
        raise ValueError("a coordinate is not negative")
    return number


def _integer(value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"expected an integer from {low} to {high}")
    return value


class Screencast:
    """The frames of one tab, and input given to it."""

    def __init__(self, session: Session, *, quality: int = 70, size: tuple[int, int]) -> None:
        self.session = session
        self.quality = quality
        self.size = size
        self.frame: Frame | None = None
        #: resolved when the next frame comes (then replaced)
        self._next: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._acks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self.session.on("Page.screencastFrame", self._received)
        await self.session.send(
            "Page.startScreencast",
            {
                "format": "jpeg",
                "quality": self.quality,
                "maxWidth": self.size[0],
                "maxHeight": self.size[1],
            },
            timeout=INPUT_TIMEOUT,
        )

    async def stop(self) -> None:
        with contextlib.suppress(BrowserError):
            await self.session.send("Page.stopScreencast", timeout=INPUT_TIMEOUT)
        for task in list(self._acks):
            task.cancel()
        await asyncio.gather(*self._acks, return_exceptions=True)

    def _received(self, params: Params) -> None:
        meta = params.get("metadata", {})
        try:
            jpeg = base64.b64decode(params["data"])
        except (KeyError, ValueError):
            jpeg = b""
        if jpeg:
            self.frame = Frame(
                self.frame.number + 1 if self.frame is not None else 1,
                jpeg,
                int(meta.get("deviceWidth") or self.size[0]),
                int(meta.get("deviceHeight") or self.size[1]),
            )
            arrived, self._next = self._next, asyncio.get_running_loop().create_future()
            arrived.set_result(None)
        task = asyncio.get_running_loop().create_task(self._acknowledge(params.get("sessionId")))
        self._acks.add(task)
        task.add_done_callback(self._acks.discard)

    async def _acknowledge(self, frame_session: Any) -> None:
        with contextlib.suppress(BrowserError):
            await self.session.send(
                "Page.screencastFrameAck", {"sessionId": frame_session}, timeout=INPUT_TIMEOUT
            )

    async def next_frame(self, after: int) -> Frame:
        """The newest frame once it is newer than frame number ``after``."""
        while self.frame is None or self.frame.number <= after:
            await asyncio.shield(self._next)
        return self.frame

    async def give(self, item: Input) -> None:
        """Give the tab one input, as a person's mouse or keyboard would."""
        send = self.session.send
        if isinstance(item, MouseInput):
            params: Params = {
                "type": MOUSE_EVENTS[item.event],
                "x": item.x,
                "y": item.y,
                "button": item.button,
                "buttons": item.buttons,
                "clickCount": item.clicks,
                "modifiers": item.modifiers,
            }
            await send("Input.dispatchMouseEvent", params, timeout=INPUT_TIMEOUT)
        elif isinstance(item, WheelInput):
            params = {"type": "mouseWheel", "x": item.x, "y": item.y}
            params |= {"deltaX": item.dx, "deltaY": item.dy}
            await send("Input.dispatchMouseEvent", params, timeout=INPUT_TIMEOUT)
        elif isinstance(item, KeyInput):
            await send("Input.dispatchKeyEvent", key_params(item), timeout=INPUT_TIMEOUT)
        else:
            await send("Input.insertText", {"text": item.text}, timeout=INPUT_TIMEOUT)


def key_params(item: KeyInput) -> Params:
    """``Input.dispatchKeyEvent`` parameters for a key going down or up: a printable key types
    its character (unless Ctrl, Alt or Meta is held: a shortcut), a special key gives its
    virtual key code, which Chromium's editing acts on."""
    params: Params = {"key": item.key, "modifiers": item.modifiers}
    if item.code:
        params["code"] = item.code
    special = SPECIAL_KEYS.get(item.key)
    if item.event == "up":
        params["type"] = "keyUp"
        if special is not None:
            params["windowsVirtualKeyCode"] = special[0]
        return params
    if special is not None:
        code, text = special
        params["windowsVirtualKeyCode"] = code
        params["type"] = "keyDown" if text else "rawKeyDown"
        if text:
            params["text"] = params["unmodifiedText"] = text
        return params
    shortcut = item.modifiers & 0b0111  # Alt, Ctrl, Meta
    if len(item.key) == 1 and not shortcut:
        params["type"] = "keyDown"
        params["text"] = params["unmodifiedText"] = item.key
    else:
        params["type"] = "rawKeyDown"
        if len(item.key) == 1:
            params["windowsVirtualKeyCode"] = ord(item.key.upper())
    return params


__all__ = [
    "Frame",
    "Input",
    "KeyInput",
    "MouseInput",
    "Screencast",
    "TextInput",
    "WheelInput",
    "key_params",
    "parse_input",
]
