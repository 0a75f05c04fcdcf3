"""What the login page's client may send, and what becomes of it (browser.screencast): input
is checked before it reaches the tab, keys become the DevTools events a keyboard gives."""

from __future__ import annotations

from typing import Any

import pytest

from archiver.browser.screencast import (
    KeyInput,
    MouseInput,
    TextInput,
    WheelInput,
    key_params,
    parse_input,
)


def test_the_page_inputs_are_read() -> None:
    assert parse_input(
        {
            "type": "mouse",
            "event": "down",
            "x": 10,
            "y": 20.5,
            "button": "left",
            "buttons": 1,
            "clicks": 1,
            "modifiers": 8,
        }
    ) == MouseInput("down", 10.0, 20.5, "left", 1, 1, 8)
    assert parse_input({"type": "wheel", "x": 1, "y": 2, "dy": -120}) == WheelInput(1, 2, 0, -120)
    assert parse_input({"type": "key", "event": "up", "key": "Enter", "code": "Enter"}) == (
        KeyInput("up", "Enter", "Enter", 0)
    )
    assert parse_input({"type": "text", "text": "pasted"}) == TextInput("pasted")


@pytest.mark.parametrize(
    "message",
    [
        {"type": "mouse", "event": "down", "x": -1, "y": 0},
        {"type": "mouse", "event": "drag", "x": 1, "y": 0},
        {"type": "mouse", "event": "down", "x": "1", "y": 0},
        {"type": "mouse", "event": "down", "x": 1, "y": 1e9},
        {"type": "mouse", "event": "down", "x": 1, "y": 1, "buttons": True},
        {"type": "key", "event": "down", "key": ""},
        {"type": "key", "event": "down", "key": "a", "modifiers": 16},
        {"type": "text", "text": "x" * 10_001},
        {"type": "navigate", "url": "file:///etc/passwd"},
        {},
    ],
)
def test_anything_else_is_refused(message: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        parse_input(message)


def test_keys_become_what_a_keyboard_sends() -> None:
    # a printable key types its character
    assert key_params(KeyInput("down", "é", "KeyE")) == {
        "key": "é",
        "code": "KeyE",
        "modifiers": 0,
        "type": "keyDown",
        "text": "é",
        "unmodifiedText": "é",
    }
    # Enter types a carriage return (a form is sent), Backspace acts by its key code
    enter = key_params(KeyInput("down", "Enter"))
    assert (enter["type"], enter["windowsVirtualKeyCode"], enter["text"]) == ("keyDown", 13, "\r")
    back = key_params(KeyInput("down", "Backspace"))
    assert (back["type"], back["windowsVirtualKeyCode"]) == ("rawKeyDown", 8)
    assert "text" not in back
    # with Ctrl held a letter is a shortcut, not typing
    select_all = key_params(KeyInput("down", "a", "KeyA", modifiers=2))
    assert select_all["type"] == "rawKeyDown" and "text" not in select_all
    assert select_all["windowsVirtualKeyCode"] == ord("A")
    assert key_params(KeyInput("up", "a"))["type"] == "keyUp"
