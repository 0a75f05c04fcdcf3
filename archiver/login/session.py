"""One login, from an empty browser to a profile on disk.

:func:`log_in` opens a login browser (:mod:`archiver.browser.login`: the network to itself,
its state in ``DIR/.login-browser``, deleted afterwards), loads the login page, lets a script
(:mod:`archiver.login.script`) or a person (the caller's ``interact``, the login page server of
:mod:`archiver.commands.loginpage`) log in, then keeps what the browser holds: every cookie
(HttpOnly ones set by responses, those set by scripts) and the localStorage of the origins the
login went through, with the time, as the profile (:mod:`archiver.login.profile`). The profile
is written only once the login went through: a login that fails leaves the previous profile as
it was. Nothing of the session is recorded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from archiver.browser.login import LoginBrowser, LoginBrowserConfig
from archiver.browser.steps import Goto, Step
from archiver.errors import LoginError
from archiver.login.cookies import to_line
from archiver.login.profile import Profile, private_directory, write_profile
from archiver.timefmt import utcnow

#: The login browser's state directory, inside the profile directory (so private too).
BROWSER_DIR = ".login-browser"

#: What the caller does while a person logs in: returns once they are done.
Interact = Callable[[LoginBrowser], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class LoginOptions:
    """Where the profile goes and how the login browser runs."""

    profile_dir: Path
    chromium: str | None = None
    headless: bool = True
    user_agent: str | None = None
    window: tuple[int, int] = (1280, 960)
    page_timeout: float = 60.0
    """The longest the login page may take to load."""


async def log_in(
    url: str | None,
    options: LoginOptions,
    *,
    steps: Sequence[Step] = (),
    interact: Interact | None = None,
    on_step: Callable[[int, Step], None] | None = None,
) -> Profile:
    """Log in (see the module docstring) and write the profile; return it. Raises
    :class:`~archiver.errors.LoginError` (the profile is then not touched) or
    :class:`~archiver.browser.errors.BrowserUnavailableError`."""
    directory = private_directory(options.profile_dir)
    browser = await LoginBrowser.open(
        LoginBrowserConfig(
            state_dir=directory / BROWSER_DIR,
            chromium=options.chromium,
            headless=options.headless,
            window=options.window,
            user_agent=options.user_agent,
        )
    )
    try:
        if url is not None:
            await browser.navigate(url, options.page_timeout)
        if steps:
            await browser.run(steps, on_step)
        if interact is not None:
            await interact(browser)
        gone = browser.gone
        if gone is not None:
            raise LoginError(f"the login browser's tab is gone ({gone}): nothing was saved")
        cookies = [to_line(cookie) for cookie in await browser.cookies()]
        storage = await browser.local_storage()
        final_url = browser.url
    finally:
        await browser.close()
    if not cookies and not storage:
        raise LoginError(
            "the browser holds no cookie and no localStorage: nothing to save "
            "(did the login go through?)"
        )
    first = steps[0] if steps else None
    start = url or (first.url if isinstance(first, Goto) else final_url)
    profile = Profile(
        cookies=tuple(cookies),
        local_storage=storage,
        created=utcnow(),
        login_url=start,
        final_url=final_url,
        made_by="login script" if steps and interact is None else "login page",
    )
    write_profile(directory, profile)
    return profile


__all__ = ["BROWSER_DIR", "Interact", "LoginOptions", "log_in"]
