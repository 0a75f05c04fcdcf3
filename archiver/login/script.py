"""The login script: a small declarative TOML file of steps, for logins without a person.

A scheduled crawl behind a login cannot wait for someone to log in; its job logs in afresh at
every run (``--login-script FILE``), so an expired session is never a reason to miss a night.
The file says what a person would do, one ``[[step]]`` table each, in order::

    [[step]]
    goto = "https://members.example.org/login"

    [[step]]
    fill = "#username"            # a CSS selector
    env = "MEMBERS_USER"          # the value: an environment variable's (or value = "...")

    [[step]]
    fill = "#password"
    env = "MEMBERS_PASSWORD"

    [[step]]
    click = "button[type=submit]"

    [[step]]
    wait = "#members-area"        # done once this element is on the page
    timeout = 30                  # seconds, any step (default 30)

Secrets belong in the environment (a systemd ``EnvironmentFile``, a CI secret), never in the
file: a ``fill`` takes ``env``, the name of a variable read when the file is read; ``value``
is for what is no secret (a user name). A variable that is not set is an error naming the
variable, never a value. Selectors are checked when the file is read (Lexbor's CSS parser;
Chromium checks them again when the step runs).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archiver import urls
from archiver.browser.steps import Click, Fill, Goto, Step, WaitFor
from archiver.errors import SettingsError
from archiver.extract.select import selector_error

OPTION = "--login-script"
ACTIONS = ("goto", "fill", "click", "wait")
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 3600.0


@dataclass(frozen=True, slots=True)
class LoginScript:
    """The steps of a login script, values resolved."""

    path: Path
    steps: tuple[Step, ...]

    @property
    def start_url(self) -> str | None:
        """Where the script begins (its first step, a ``goto``), if it says."""
        first = self.steps[0] if self.steps else None
        return first.url if isinstance(first, Goto) else None


def read_script(path: Path, environ: Mapping[str, str]) -> LoginScript:
    """The script in ``path``, its ``env`` values read from ``environ``. Raises
    :class:`SettingsError` naming the step and what is wrong (never a value)."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise SettingsError(OPTION, f"no such file: {path}") from None
    except OSError as exc:
        raise SettingsError(OPTION, f"cannot read {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(OPTION, f"{path} is not valid TOML: {exc}") from None
    extra = sorted(set(data) - {"step"})
    if extra:
        raise SettingsError(OPTION, f"{path}: unknown key {extra[0]!r} (steps are [[step]])")
    tables = data.get("step")
    if not isinstance(tables, list) or not tables:
        raise SettingsError(OPTION, f"{path}: no [[step]]")
    steps = []
    for number, table in enumerate(tables, start=1):
        try:
            steps.append(_step(table, environ))
        except ValueError as exc:
            raise SettingsError(OPTION, f"{path}: step {number}: {exc}") from None
    return LoginScript(path, tuple(steps))


def _step(table: Any, environ: Mapping[str, str]) -> Step:
    if not isinstance(table, dict):
        raise ValueError("expected a table")
    actions = [name for name in ACTIONS if name in table]
    if len(actions) != 1:
        raise ValueError(f"give exactly one of {', '.join(ACTIONS)}")
    action = actions[0]
    allowed = {action, "timeout"} | ({"env", "value"} if action == "fill" else set())
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} for a {action} step")
    timeout = _timeout(table.get("timeout", DEFAULT_TIMEOUT))
    target = table[action]
    if not isinstance(target, str) or not target.strip():
        raise ValueError(f"{action} needs a string")
    if action == "goto":
        try:
            return Goto(urls.normalize_url(target), timeout)
        except urls.InvalidURLError as exc:
            raise ValueError(f"{target!r} is not an http(s) URL: {exc}") from None
    problem = selector_error(target)
    if problem is not None:
        raise ValueError(f"{target!r} is not a CSS selector: {problem}")
    if action == "click":
        return Click(target, timeout)
    if action == "wait":
        return WaitFor(target, timeout)
    return _fill(target, table, environ, timeout)


def _fill(selector: str, table: dict[str, Any], environ: Mapping[str, str], timeout: float) -> Fill:
    if ("env" in table) == ("value" in table):
        raise ValueError("a fill takes env (an environment variable's name) or value")
    if "value" in table:
        value = table["value"]
        if not isinstance(value, str):
            raise ValueError("value must be a string")
        return Fill(selector, value, timeout, "the script")
    name = table["env"]
    if not isinstance(name, str) or not name:
        raise ValueError("env must name an environment variable")
    if name not in environ:
        raise ValueError(f"fills {selector} from ${name}, which is not set")
    return Fill(selector, environ[name], timeout, f"${name}")


def _timeout(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("timeout is a number of seconds")
    seconds = float(value)
    if not 0 < seconds <= MAX_TIMEOUT or math.isnan(seconds):
        raise ValueError(f"timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds")
    return seconds


__all__ = ["LoginScript", "read_script"]
