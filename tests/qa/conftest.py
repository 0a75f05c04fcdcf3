"""The replay checks run real Chromium (Debian's package); they never skip: without it they
fail saying how to install it. No Chromium process may outlive a test."""

from tests.browser.conftest import chromium_installed, no_orphans

__all__ = ["chromium_installed", "no_orphans"]
