"""The profile directory: what a login leaves, what a crawl reads, who may read it."""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from archiver.config.assemble import cookie_file
from archiver.config.settings import Settings
from archiver.errors import SettingsError
from archiver.fetch.cookiestxt import CookieLine
from archiver.login.profile import (
    COOKIES_FILE,
    META_FILE,
    STORAGE_FILE,
    Profile,
    private_directory,
    read_profile,
    write_profile,
)

SECRET = "s3ss10n-v4lue"
WHEN = datetime(2026, 5, 1, 12, 30, 0, tzinfo=UTC)


def profile(**overrides: object) -> Profile:
    values: dict[str, object] = {
        "cookies": (
            CookieLine("members.example.org", True, "/", True, 0, "sid", SECRET, http_only=True),
            CookieLine("example.org", False, "/members", False, 2_000_000_000, "auth", "tok-1"),
        ),
        "local_storage": {"https://members.example.org": {"members-token": "tok-1"}},
        "created": WHEN,
        "login_url": "https://members.example.org/login",
        "final_url": "https://members.example.org/welcome",
    }
    values.update(overrides)
    return Profile(**values)  # type: ignore[arg-type]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_profile_written_is_read_back_whole_and_private(tmp_path: Path) -> None:
    directory = tmp_path / "profiles" / "members"
    write_profile(directory, profile())
    assert mode(directory) == 0o700
    for name in (COOKIES_FILE, STORAGE_FILE, META_FILE):
        assert mode(directory / name) == 0o600, name
    back = read_profile(directory)
    assert back.cookies == profile().cookies  # HttpOnly, host-only, session, expiry kept
    assert back.local_storage == profile().local_storage
    assert back.created == WHEN
    assert back.login_url == "https://members.example.org/login"
    # the description of the session names no value
    meta = (directory / META_FILE).read_text()
    assert SECRET not in meta and "tok-1" not in meta
    assert json.loads(meta)["cookie_hosts"] == ["example.org", "members.example.org"]
    summary = back.summary()
    assert SECRET not in summary and "tok-1" not in summary
    assert summary.startswith("2 cookie(s) for example.org, members.example.org")


def test_an_existing_directory_is_made_private(tmp_path: Path) -> None:
    directory = tmp_path / "open"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)
    private_directory(directory)
    assert mode(directory) == 0o700


def test_a_profile_others_may_read_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "members"
    write_profile(directory, profile())
    os.chmod(directory, 0o755)
    with pytest.raises(SettingsError, match=r"may be read by others .*chmod 700"):
        read_profile(directory)


def test_no_profile_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(
        SettingsError, match="holds no login profile: make one with 'archiver login"
    ):
        read_profile(tmp_path)


def test_a_damaged_profile_is_named_without_its_content(tmp_path: Path) -> None:
    directory = tmp_path / "members"
    write_profile(directory, profile())
    (directory / STORAGE_FILE).write_text('{"https://members.example.org": {"k": "' + SECRET)
    with pytest.raises(SettingsError) as caught:
        read_profile(directory)
    assert "not valid JSON" in str(caught.value) and SECRET not in str(caught.value)
    (directory / STORAGE_FILE).write_text("{}")
    (directory / COOKIES_FILE).write_text(f"example.org\tTRUE\t/\n{SECRET}\n")
    with pytest.raises(SettingsError) as caught:
        read_profile(directory)
    assert "line 1" in str(caught.value) and SECRET not in str(caught.value)


def test_the_crawl_starts_with_the_profile_cookies_after_those_of_a_cookies_file(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "members"
    expired = CookieLine("example.org", True, "/", False, 1000, "old", "gone")
    write_profile(directory, profile(cookies=(*profile().cookies, expired)))
    jar_file = tmp_path / "cookies.txt"
    jar_file.write_text("other.example\tFALSE\t/\tFALSE\t0\tlang\ten\n")
    lines = cookie_file(Settings(seeds=("https://members.example.org/",), profile=directory))
    assert [line.name for line in lines] == ["sid", "auth"]  # the expired one dropped
    both = cookie_file(
        Settings(seeds=("https://members.example.org/",), profile=directory, cookies=jar_file)
    )
    assert [line.name for line in both] == ["lang", "sid", "auth"]
