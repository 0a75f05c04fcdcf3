"""Public code from the npm registry that a test runs but archiver must not ship, fetched when a
test needs it.

The Browsertrix Behaviors bundle (npm package ``browsertrix-behaviors``, ``dist/behaviors.js``)
is AGPL-3.0-licensed; archiver loads a user's copy with ``--behavior-script`` and never ships
one, so the tests that prove the real bundle runs fetch it the way the README tells a user to:
``npm pack`` (the ordinary client, which checks the registry's integrity hash). Its SHA-256 is
also checked against the value pinned here, and it is unpacked once into the git-ignored
``.cache/npm/`` of the checkout (:mod:`tests.support.registry_cache`); later sessions reuse
it. Nothing of it is committed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.registry_cache import DOWNLOAD_TIMEOUT, PinnedArchive, unpacked
from tests.support.tools import REPO_ROOT

CACHE = REPO_ROOT / ".cache" / "npm"


class NpmPackageError(RuntimeError):
    """A package could not be fetched or does not match its pinned digest."""


class NpmPackage(PinnedArchive):
    """A pinned npm package: name, version and the SHA-256 of the archive ``npm pack`` writes."""

    __slots__ = ()


#: The Browsertrix Behaviors bundle as Browsertrix Crawler 1.x loads it.
BROWSERTRIX_BEHAVIORS = NpmPackage(
    "browsertrix-behaviors",
    "0.8.4",
    "c745560996f97aa43af8a70263a9edc3cc6c4a6c4c4bc148d31c2e24fda96fc9",
)


def package_tree(package: NpmPackage) -> Path:
    """The unpacked ``package/`` folder of ``package``, fetched and checked on first use."""
    return unpacked(package, CACHE, lambda into: _pack(package, into), NpmPackageError) / "package"


def _pack(package: NpmPackage, into: Path) -> Path:
    spec = f"{package.name}@{package.version}"
    try:
        proc = subprocess.run(
            ["npm", "pack", "--silent", spec],
            cwd=into,
            capture_output=True,
            text=True,
            timeout=DOWNLOAD_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        raise NpmPackageError("npm is not installed (scripts/test installs it)") from None
    found = sorted(into.glob("*.tgz"))
    if proc.returncode != 0 or len(found) != 1:
        raise NpmPackageError(
            f"npm pack {spec} failed (is the npm registry reachable?):\n{proc.stderr[-3000:]}"
        )
    return found[0]


__all__ = ["BROWSERTRIX_BEHAVIORS", "NpmPackage", "NpmPackageError", "package_tree"]
