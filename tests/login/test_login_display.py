"""Where a display exists, the login browser opens a window a person can use directly
(headful), and the login page works the same; --headless keeps it hidden. The display is
Xvfb's (Debian's xvfb, installed by scripts/test), started and stopped by the test. What
tells a window from none is the login browser's own command line (no ``--headless``) and its
environment (the display): headless Chromium lays pages out in an emulated window of the
same size, so nothing a page measures tells them apart."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver.browser.chromium import ProcessInfo, profile_users
from tests.docs.shell import read_until
from tests.support.login_site import USER, LoginSite
from tests.support.viewer import Viewer

pytestmark = pytest.mark.usefixtures("chromium_installed")

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def virtual_display() -> Iterator[str]:
    """An X display of Xvfb's (it picks a free number: -displayfd), for as long as inside."""
    if shutil.which("Xvfb") is None:
        pytest.fail("Xvfb is not installed: apt-get install -y xvfb", pytrace=False)
    read, write = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", "1400x1100x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(write)
    try:
        number = b""
        while not number.endswith(b"\n"):
            chunk = os.read(read, 16)
            assert chunk, "Xvfb did not start"
            number += chunk
        yield ":" + number.decode().strip()
    finally:
        os.close(read)
        server.send_signal(signal.SIGTERM)
        server.wait(30)


def login_browser(profile: Path) -> ProcessInfo:
    """The main process of the login browser writing into ``profile``."""
    (main,) = [
        proc
        for proc in profile_users(profile / ".login-browser" / "profile")
        if "--remote-debugging-pipe" in proc.argv
    ]
    return main


def test_the_login_browser_is_a_window_on_a_display_and_hidden_with_headless(
    tmp_path: Path,
) -> None:
    password = "pw-" + os.urandom(6).hex()
    with LoginSite(password=password).running_in_thread() as site, virtual_display() as display:
        env = {**os.environ, "DISPLAY": display, "WAYLAND_DISPLAY": ""}
        profile = tmp_path / "profile"
        login = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "archiver",
                "login",
                site.url("/login"),
                "--profile",
                str(profile),
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line, _ = read_until(login.stdout, r"log in at http://127\.0\.0\.1:\d+/")
            assert "(and in the browser's window)" in line
            page = re.search(r"http://127\.0\.0\.1:\d+/[\w-]+/", line)
            assert page is not None
            # a Chromium without --headless, on the display
            main = login_browser(profile)
            assert "--headless" not in main.argv
            environ = Path(f"/proc/{main.pid}/environ").read_bytes().split(b"\0")
            assert f"DISPLAY={display}".encode() in environ
            # the same login page works it
            asyncio.run(log_in_at(page.group(0), password, tmp_path / "viewer"))
            _, err = login.communicate(timeout=300)
        finally:
            if login.poll() is None:
                login.kill()
                login.communicate()
        assert login.returncode == 0, err
        assert (profile / "cookies.txt").exists()

        # --headless: no window, even with a display; SIGTERM gives up, nothing saved
        hidden = tmp_path / "hidden"
        login = subprocess.Popen(
            [
                sys.executable, "-m", "archiver", "login", site.url("/login"), "--profile",
                str(hidden), "--headless",
            ],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            line, _ = read_until(login.stdout, r"log in at http://127\.0\.0\.1:\d+/")
            assert "window" not in line
            assert "--headless" in login_browser(hidden).argv
            login.send_signal(signal.SIGTERM)
            _, err = login.communicate(timeout=300)
        finally:
            if login.poll() is None:
                login.kill()
                login.communicate()
        assert login.returncode == 3, err
        assert "interrupted: nothing was saved" in err
        assert sorted(p.name for p in hidden.iterdir()) == []  # not even the browser's state
    assert site.logins == 1


async def log_in_at(page: str, password: str, state: Path) -> None:
    """What a person does at the login page: types the user name and the password into the
    streamed form, sends it, and presses Done once the welcome page shows."""
    async with Viewer(state) as viewer:
        await viewer.open(page)
        await viewer.wait_for("document.body.dataset.loaded.includes('/login')")
        await viewer.click_streamed(190, 118)
        await viewer.type(USER)
        await viewer.click_streamed(190, 178)
        await viewer.type(password)
        await viewer.click_streamed(190, 238)
        await viewer.wait_for("document.body.dataset.loaded.includes('/welcome')")
        await viewer.click_button("done")
        await viewer.wait_for("document.body.dataset.state === 'saved'")
