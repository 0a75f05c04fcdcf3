"""``archiver login``: make a login profile, by hand through the login page or by a script;
and the unattended login a crawl with ``--login-script`` runs before it starts.

A person: ``archiver login URL --profile DIR`` prints the address of the login page
(:mod:`archiver.commands.loginpage`), where the login browser's tab is shown and worked; Done
saves the profile. Where a display exists (``$DISPLAY``, ``$WAYLAND_DISPLAY``) the browser's
own window opens too (``--headless`` keeps it hidden, ``--headful`` asks for it). A script:
``archiver login [URL] --profile DIR --login-script FILE`` logs in without anyone and serves no
page. Either way the login browser uses the crawl's settings (``--config``: the User-Agent,
which some sites bind a session to; ``--chromium``).

Exit codes: 0 saved, 1 the login failed (the message names the step; the previous profile is
kept), 2 wrong usage, 3 interrupted (Ctrl-C, SIGTERM, a hang-up unless
detached: nothing saved).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import IO, Any

from archiver import urls
from archiver.browser.login import LoginBrowser
from archiver.browser.steps import Step
from archiver.commands.exits import EXIT_INTERRUPTED, EXIT_OK
from archiver.commands.hangup import hangup_stops
from archiver.config.settings import Settings, load_settings, parse_duration
from archiver.errors import LoginError, SettingsError
from archiver.login.profile import Profile
from archiver.login.script import read_script
from archiver.login.session import LoginOptions, log_in

#: How long a person has to log in before the command gives up.
DEFAULT_TIMEOUT = 3600.0


def add_parser(sub: Any, port_type: Any) -> None:
    """The ``login`` subcommand's options (``sub``: the CLI's subparsers)."""
    login = sub.add_parser(
        "login",
        help="log in once in a browser and save the session as a profile for crawls",
        description=(
            "Open Chromium at URL for a person to log in, through a page archiver serves on "
            "127.0.0.1 (it shows the browser's tab and sends clicks and keys to it; its address "
            "is printed) and in the browser's own window where a display exists. Done on that "
            "page saves the session's cookies and localStorage in DIR (mode 0700); crawls use "
            "it with --profile DIR. With --login-script FILE the login runs unattended. Nothing "
            "of the login is recorded. Exit codes: 0 saved, 1 login failed (the previous "
            "profile is kept), 2 usage, 3 interrupted."
        ),
    )
    login.add_argument("url", nargs="?", metavar="URL", help="the login page")
    login.add_argument(
        "--profile",
        required=True,
        metavar="DIR",
        help="the profile directory to write, made mode 0700 (required: no default)",
    )
    login.add_argument(
        "--login-script",
        metavar="FILE",
        help=(
            "log in unattended with this login script (TOML steps; see README) (default: none: "
            "a person logs in at the login page)"
        ),
    )
    login.add_argument(
        "--config",
        metavar="FILE",
        help="the crawl's TOML settings: its User-Agent, --chromium (default: none)",
    )
    login.add_argument(
        "--chromium",
        metavar="PATH",
        help="the Chromium executable (default: chromium, chromium-browser or google-chrome)",
    )
    login.add_argument(
        "--port",
        type=port_type,
        default=0,
        help="port of the login page on 127.0.0.1; 0 picks a free one (default: 0)",
    )
    display = login.add_mutually_exclusive_group()
    display.add_argument(
        "--headful",
        dest="headful",
        action="store_true",
        default=None,
        help="show the browser's window (default: when $DISPLAY or $WAYLAND_DISPLAY is set)",
    )
    display.add_argument(
        "--headless",
        dest="headful",
        action="store_false",
        help="never show a window (default: when there is no display)",
    )
    login.add_argument(
        "--timeout",
        metavar="DURATION",
        default="1h",
        help="how long to wait for Done (default: 1h)",
    )


def has_display(environ: Mapping[str, str]) -> bool:
    """Whether a window can be shown (an X or a Wayland display)."""
    return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def cmd_login(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {"profile": args.profile}
    if args.login_script:
        overrides["login_script"] = args.login_script
    if args.chromium:
        overrides["chromium"] = args.chromium
    settings = load_settings(Path(args.config) if args.config else None, overrides)
    timeout = parse_duration(args.timeout, "--timeout") or DEFAULT_TIMEOUT
    headless = not (has_display(os.environ) if args.headful is None else args.headful)
    url = _start_url(args.url)
    steps: tuple[Step, ...] = ()
    if settings.login_script is not None:
        script = read_script(settings.login_script, os.environ)
        steps = script.steps
    elif url is None:
        raise SettingsError("login", "give the login page's URL (or --login-script FILE)")
    options = login_options(settings, headless=headless)
    work = _unattended(url, options, steps) if steps else _by_hand(url, options, args.port, timeout)
    profile = _run_interruptible(work)
    if profile is None:
        _say("archiver login: interrupted: nothing was saved\n")
        return EXIT_INTERRUPTED
    print(f"archiver login: profile saved in {settings.profile}: {profile.summary()}")
    return EXIT_OK


def login_options(settings: Settings, *, headless: bool = True) -> LoginOptions:
    assert settings.profile is not None
    return LoginOptions(
        profile_dir=settings.profile,
        chromium=settings.chromium,
        headless=headless,
        user_agent=settings.user_agent,
    )


async def log_in_for_crawl(settings: Settings, say: IO[str]) -> None:
    """``archiver crawl --login-script FILE --profile DIR``: log in afresh before the crawl
    (each scheduled run does). Raises :class:`LoginError` or :class:`SettingsError`."""
    assert settings.login_script is not None
    script = read_script(settings.login_script, os.environ)
    if script.start_url is None:
        raise SettingsError(
            "--login-script", f"{script.path}: the first step must be a goto (the login page)"
        )
    profile = await _unattended(None, login_options(settings), script.steps)
    say.write(f"archiver: logged in with {script.path}: {profile.summary()}\n")


async def _unattended(url: str | None, options: LoginOptions, steps: tuple[Step, ...]) -> Profile:
    return await log_in(url, options, steps=steps)


async def _by_hand(
    url: str | None,
    options: LoginOptions,
    port: int,
    timeout: float,  # noqa: ASYNC109 - for the person, a LoginError when it runs out
) -> Profile:
    from archiver.commands.loginpage import serving  # noqa: PLC0415 - aiohttp.web, only here

    async with serving(port) as page:

        async def interact(browser: LoginBrowser) -> None:
            """The page shows the tab (the login page loaded), then waits for Done."""
            await page.show(browser)
            where = " (and in the browser's window)" if not options.headless else ""
            print(
                f"archiver login: log in at {page.url}{where}, then press Done (Ctrl-C gives up)",
                flush=True,
            )
            await page.until_done(browser)

        try:
            async with asyncio.timeout(timeout):
                profile = await log_in(url, options, interact=interact)
        except TimeoutError:
            await page.status("failed", "timed out: nothing was saved")
            raise LoginError(f"no Done within {timeout:g} s: nothing was saved") from None
        except LoginError as exc:
            await page.status("failed", str(exc))
            raise
        await page.status("saved", f"saved: {profile.summary()}; you may close this page")
        return profile


def _run_interruptible(work: Coroutine[Any, Any, Profile]) -> Profile | None:
    """Run the login; None when SIGINT, SIGTERM or a hang-up (:func:`hangup_stops`) stopped
    it (its browser is closed, the browser's state deleted)."""

    async def main() -> Profile | None:
        task = asyncio.ensure_future(work)
        loop = asyncio.get_running_loop()
        watched = [signal.SIGINT, signal.SIGTERM]
        if hangup_stops(signal.getsignal(signal.SIGHUP), os.environ):
            watched.append(signal.SIGHUP)
        else:  # detached: a SIGHUP must not kill the login (its default action would)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)

        def stop(signame: str) -> None:
            # once: a second signal must not cut short the browser's close (bounded), which
            # stops Chromium and deletes the session it holds on disk
            if not task.cancelling() and not task.done():
                _say(f"archiver login: {signame}: closing the login browser\n")
                task.cancel()

        for sig in watched:
            loop.add_signal_handler(sig, stop, sig.name)
        try:
            return await task
        except asyncio.CancelledError:
            return None
        finally:
            for sig in watched:
                with contextlib.suppress(Exception):
                    loop.remove_signal_handler(sig)

    profile: Profile | None = asyncio.run(main())
    return profile


def _say(text: str) -> None:
    """A word on standard error, if it is still there (a hang-up closed the terminal)."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(text)
        sys.stderr.flush()


def _start_url(url: str | None) -> str | None:
    if url is None:
        return None
    try:
        return urls.seed_url(url)
    except urls.InvalidURLError as exc:
        raise SettingsError("login", f"{url!r} is not an http(s) URL: {exc}") from None


__all__ = ["add_parser", "cmd_login", "has_display", "log_in_for_crawl", "login_options"]
