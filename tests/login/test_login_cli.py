"""archiver login and the login options of archiver crawl, when something is wrong: one line,
the right exit code, nothing written, no value shown."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from archiver.browser.chromium import PROFILE_DIR, profile_users
from archiver.login.session import BROWSER_DIR
from tests.docs.shell import read_until
from tests.support.login_site import LoginSite

REPO = Path(__file__).resolve().parents[2]
SECRET = "pw-never-shown-7731"


def archiver(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args],
        cwd=REPO,
        env={**os.environ, "DISPLAY": "", "WAYLAND_DISPLAY": "", **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def one_line(run: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in run.stderr, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    return lines[0]


def script(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "login.toml"
    path.write_text(text)
    return path


def test_login_needs_a_page_or_a_script(tmp_path: Path) -> None:
    run = archiver("login", "--profile", str(tmp_path / "p"))
    assert run.returncode == 2
    assert one_line(run) == (
        "archiver login: error: login: give the login page's URL (or --login-script FILE)"
    )
    assert not (tmp_path / "p").exists()


def test_a_login_script_needs_a_profile_to_write(tmp_path: Path) -> None:
    path = script(tmp_path, '[[step]]\ngoto = "http://127.0.0.1:9/login"\n')
    run = archiver("crawl", "http://127.0.0.1:9/", "--login-script", str(path))
    assert run.returncode == 2
    assert "--login-script: needs --profile DIR" in one_line(run)


def test_a_missing_profile_says_how_to_make_one(tmp_path: Path) -> None:
    run = archiver("crawl", "http://127.0.0.1:9/", "--profile", str(tmp_path / "none"))
    assert run.returncode == 2
    assert f"--profile: {tmp_path / 'none'} holds no login profile: make one with" in one_line(run)
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("css:form[", "--logged-out: 'css:form[' is not a CSS selector"),
        ("status:abc", "--logged-out: 'status:abc': expected status codes"),
        ("location:(", "--logged-out: 'location:(' is not a regular expression"),
    ],
)
def test_a_wrong_logged_out_rule_is_a_usage_error(rule: str, message: str) -> None:
    run = archiver("crawl", "http://127.0.0.1:9/", "--logged-out", rule)
    assert run.returncode == 2
    assert message in one_line(run)


def test_a_variable_that_is_not_set_is_named_and_nothing_is_started(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        '[[step]]\ngoto = "http://127.0.0.1:9/login"\n'
        '[[step]]\nfill = "#password"\nenv = "MEMBERS_PASSWORD"\n',
    )
    env = {name: value for name, value in os.environ.items() if name != "MEMBERS_PASSWORD"}
    run = subprocess.run(
        [sys.executable, "-m", "archiver", "login", "--profile", str(tmp_path / "p"),
         "--login-script", str(path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 2
    assert one_line(run).endswith(
        "step 2: fills #password from $MEMBERS_PASSWORD, which is not set"
    )
    assert not (tmp_path / "p").exists()


def test_a_script_that_must_start_somewhere_before_a_crawl(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir(mode=0o700)
    path = script(tmp_path, '[[step]]\nclick = "#go"\n')
    run = archiver(
        "crawl",
        "http://127.0.0.1:9/",
        "--profile",
        str(tmp_path / "p"),
        "--login-script",
        str(path),
    )
    assert run.returncode == 2
    assert "the first step must be a goto (the login page)" in one_line(run)


@pytest.mark.usefixtures("chromium_installed")
def test_a_failed_login_names_its_step_and_keeps_the_previous_profile(tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    with LoginSite(password=SECRET).running_in_thread() as site:
        good = script(
            tmp_path,
            (REPO / "config" / "members-login.toml")
            .read_text()
            .replace("https://members.example.org/", site.url("/")),
        )
        made = archiver(
            "login", "--profile", str(profile), "--login-script", str(good),
            env={"MEMBERS_PASSWORD": SECRET},
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        before = {path.name: path.read_bytes() for path in profile.iterdir()}
        wrong = good.read_text().replace("timeout = 30", "timeout = 3")
        good.write_text(wrong)
        failed = archiver(
            "login", "--profile", str(profile), "--login-script", str(good),
            env={"MEMBERS_PASSWORD": "not-the-password"},
        )  # fmt: skip
    assert failed.returncode == 1
    assert one_line(failed) == (
        "archiver login: error: login script step 5 (wait for #members-welcome): "
        "no element matches within 3 s"
    )
    assert "not-the-password" not in failed.stderr + failed.stdout
    assert site.attempts == ["archivist", "archivist"]
    # the profile is the first login's, byte for byte; the login browser's state is gone
    assert {path.name: path.read_bytes() for path in profile.iterdir()} == before


@pytest.mark.usefixtures("chromium_installed")
@pytest.mark.parametrize("signames", [("SIGHUP",), ("SIGTERM",), ("SIGINT", "SIGINT")])
def test_a_login_stopped_by_a_signal_leaves_no_browser_and_keeps_the_previous_profile(
    tmp_path: Path, signames: tuple[str, ...]
) -> None:
    """A person's login over SSH: a dropped connection (SIGHUP), a stop (SIGTERM), Ctrl-C
    pressed twice while the login page is shown: it ends as interrupted (exit 3), with its
    browser closed and the browser's own state (the session it held) deleted (a second signal
    does not cut that short), the profile as it was."""
    profile = tmp_path / "profile"
    profile.mkdir(mode=0o700)
    (profile / "cookies.txt").write_text("# an earlier login's\n")
    before = {path.name: path.read_bytes() for path in profile.iterdir()}
    with LoginSite(password=SECRET).running_in_thread() as site:
        login = subprocess.Popen(
            [sys.executable, "-m", "archiver", "login", site.url("/login"), "--profile",
             str(profile)],
            cwd=REPO,
            env={**os.environ, "DISPLAY": "", "WAYLAND_DISPLAY": ""},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            read_until(login.stdout, r"log in at http://127\.0\.0\.1:\d+/")
            browser_dir = profile / BROWSER_DIR
            users = profile_users(browser_dir / PROFILE_DIR)
            assert users, "the login browser is not running"
            first, *then = signames
            login.send_signal(getattr(signal, first))
            _, said = read_until(login.stderr, f"{first}: closing the login browser")
            for again in then:
                login.send_signal(getattr(signal, again))
            _, err = login.communicate(timeout=60)
            err = said + err
        finally:
            if login.poll() is None:
                login.kill()
                login.communicate()
    assert login.returncode == 3, err
    assert err.strip().splitlines()[-1] == "archiver login: interrupted: nothing was saved"
    assert "Traceback" not in err
    assert not profile_users(browser_dir / PROFILE_DIR)
    assert not browser_dir.exists()
    assert {path.name: path.read_bytes() for path in profile.iterdir()} == before


@pytest.mark.usefixtures("chromium_installed")
def test_a_detached_login_carries_on_after_a_hang_up(tmp_path: Path) -> None:
    """Started with SIGHUP ignored (``nohup``): a hang-up leaves the login page served."""
    profile = tmp_path / "profile"
    with LoginSite(password=SECRET).running_in_thread() as site:
        login = subprocess.Popen(
            [sys.executable, "-m", "archiver", "login", site.url("/login"), "--profile",
             str(profile)],
            cwd=REPO,
            env={**os.environ, "DISPLAY": "", "WAYLAND_DISPLAY": ""},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),  # noqa: PLW1509
        )  # fmt: skip
        try:
            line, _ = read_until(login.stdout, r"log in at http://127\.0\.0\.1:\d+/")
            page = re.search(r"http://127\.0\.0\.1:\d+/[\w-]+/", line)
            assert page is not None, line
            # an ignored signal is dropped when sent: the page answering after it was sent
            # is the login living on
            login.send_signal(signal.SIGHUP)
            with urllib.request.urlopen(page.group(0), timeout=30) as answer:
                assert answer.status == 200
            assert login.poll() is None
            login.send_signal(signal.SIGTERM)
            _, err = login.communicate(timeout=60)
        finally:
            if login.poll() is None:
                login.kill()
                login.communicate()
    assert login.returncode == 3, err
    assert not (profile / BROWSER_DIR).exists()
