"""archiver login and the login options of archiver crawl, when something is wrong: one line,
the right exit code, nothing written, no value shown."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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
