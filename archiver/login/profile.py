"""The profile directory: a login session kept on disk, made once, used by every crawl.

::

    DIR/                  mode 0700: only its owner may enter it
      profile.json        what the session is: when and where it was made, how many cookies,
                          which origins' localStorage; no cookie value, nothing typed
      cookies.txt         every cookie of the session (Netscape format, ``#HttpOnly_`` lines
                          for HttpOnly ones, their expiry as the site set it), mode 0600
      local-storage.json  ``{"https://origin": {"key": "value"}}``, mode 0600

Why files of archiver's own rather than the login browser's user-data directory (Browsertrix
keeps a tarball of Chromium's profile): a static crawl uses the session too, without Chromium,
so the cookies must be in a form the fetcher's jar reads (:mod:`archiver.fetch.cookiestxt`);
Chromium's own cookie database is encrypted with a key of the machine's keyring, and it also
holds what a crawl must never carry (saved passwords, history). The login browser's directory
is deleted once the profile is written.

The cookies are credentials: the directory is created mode 0700 and each file 0600, written
atomically (``profile.json`` last, so a profile is whole or absent), and a directory others can
read is refused, as ssh refuses a private key others can read.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from archiver.errors import SettingsError
from archiver.fetch.cookies import write_private
from archiver.fetch.cookiestxt import CookieFileError, CookieLine, format_text, parse_text
from archiver.timefmt import parse_w3c_datetime, rfc3339

FORMAT = "archiver-profile-1"
META_FILE = "profile.json"
COOKIES_FILE = "cookies.txt"
STORAGE_FILE = "local-storage.json"
#: The option a profile is named by in messages.
OPTION = "--profile"

LocalStorage = Mapping[str, Mapping[str, str]]


@dataclass(frozen=True, slots=True)
class Profile:
    """A login session: the cookies and localStorage a browser had once logged in."""

    cookies: tuple[CookieLine, ...]
    local_storage: LocalStorage
    created: datetime
    """When the session was saved (the person pressed Done, the script's last step passed)."""
    login_url: str
    """The page the login began at."""
    final_url: str = ""
    """The page the browser showed when the session was saved."""
    made_by: str = "login page"
    """``login page`` (a person) or ``login script``."""
    notes: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        """One line about the session, without any value: cookies by host, origins, date."""
        hosts = sorted({line.domain for line in self.cookies})
        shown = ", ".join(hosts[:5]) + (f" and {len(hosts) - 5} more" if len(hosts) > 5 else "")
        origins = len(self.local_storage)
        return (
            f"{len(self.cookies)} cookie(s) for {shown or 'no host'}, localStorage of "
            f"{origins} origin(s), made by the {self.made_by} at {rfc3339(self.created)}"
        )


def private_directory(path: Path) -> Path:
    """``path`` as a directory only its owner may enter: created mode 0700, or set to 0700 when
    it exists and belongs to this user (a directory of someone else's is refused)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
    except OSError as exc:
        raise SettingsError(OPTION, f"cannot make {path}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise SettingsError(OPTION, f"{path} is not a directory")
    if info.st_uid != os.geteuid():
        raise SettingsError(OPTION, f"{path} belongs to another user")
    if stat.S_IMODE(info.st_mode) != 0o700:
        path.chmod(0o700)
    return path


def write_profile(directory: Path, profile: Profile) -> None:
    """Write ``profile`` into ``directory`` (made private), replacing what was there."""
    private_directory(directory)
    comments = [
        "the cookies of a login session made by archiver login (credentials: do not publish)"
    ]
    storage = {origin: dict(items) for origin, items in sorted(profile.local_storage.items())}
    meta = {
        "format": FORMAT,
        "created": rfc3339(profile.created),
        "login_url": profile.login_url,
        "final_url": profile.final_url,
        "made_by": profile.made_by,
        "cookies": len(profile.cookies),
        "cookie_hosts": sorted({line.domain for line in profile.cookies}),
        "local_storage_origins": sorted(storage),
        "notes": list(profile.notes),
    }
    try:
        write_private(directory / COOKIES_FILE, format_text(profile.cookies, comments))
        write_private(directory / STORAGE_FILE, json.dumps(storage, indent=1) + "\n")
        write_private(directory / META_FILE, json.dumps(meta, indent=1) + "\n")
    except OSError as exc:
        raise SettingsError(OPTION, f"cannot write the profile in {directory}: {exc}") from None


def read_profile(directory: Path) -> Profile:
    """The profile in ``directory``. Raises :class:`SettingsError` (a usage error: the crawl
    has not begun) when there is none, it is damaged, or others may read it; no message holds
    a value from it."""
    meta_path = directory / META_FILE
    if not meta_path.is_file():
        raise SettingsError(
            OPTION,
            f"{directory} holds no login profile: make one with "
            f"'archiver login URL --profile {directory}'",
        )
    mode = stat.S_IMODE(directory.stat().st_mode)
    if mode & 0o077:
        raise SettingsError(
            OPTION,
            f"{directory} may be read by others (mode {mode:o}): it holds credentials; "
            f"chmod 700 {directory}",
        )
    meta = _json_file(meta_path)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SettingsError(OPTION, f"{meta_path} is not an archiver profile ({FORMAT})")
    created = parse_w3c_datetime(str(meta.get("created", "")))
    if created is None:
        raise SettingsError(OPTION, f"{meta_path}: no valid 'created' time")
    try:
        cookies = tuple(parse_text((directory / COOKIES_FILE).read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(OPTION, f"cannot read {directory / COOKIES_FILE}: {exc}") from None
    except CookieFileError as exc:
        raise SettingsError(OPTION, f"{directory / COOKIES_FILE}: {exc}") from None
    storage = _storage(_json_file(directory / STORAGE_FILE), directory / STORAGE_FILE)
    return Profile(
        cookies=cookies,
        local_storage=storage,
        created=created,
        login_url=str(meta.get("login_url", "")),
        final_url=str(meta.get("final_url", "")),
        made_by=str(meta.get("made_by", "login page")),
        notes=tuple(str(note) for note in meta.get("notes", ())),
    )


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SettingsError(OPTION, f"{path} is missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        # the error names the position, never the text around it
        reason = exc.strerror if isinstance(exc, OSError) else "not valid JSON"
        raise SettingsError(OPTION, f"cannot read {path}: {reason}") from None


def _storage(data: Any, path: Path) -> dict[str, dict[str, str]]:
    if not isinstance(data, dict):
        raise SettingsError(OPTION, f"{path}: expected an object of origins")
    storage: dict[str, dict[str, str]] = {}
    for origin, items in data.items():
        if not isinstance(items, dict) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in items.items()
        ):
            raise SettingsError(OPTION, f"{path}: the items of {origin} are not strings")
        if not str(origin).startswith(("http://", "https://")):
            raise SettingsError(OPTION, f"{path}: {origin!r} is not an http(s) origin")
        storage[str(origin)] = dict(items)
    return storage


__all__ = [
    "COOKIES_FILE",
    "META_FILE",
    "STORAGE_FILE",
    "LocalStorage",
    "Profile",
    "private_directory",
    "read_profile",
    "write_profile",
]
