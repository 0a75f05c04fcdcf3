"""When SIGHUP stops a command: the one rule the crawl and the login share."""

from __future__ import annotations

import signal
from collections.abc import Mapping


def hangup_stops(handler: object, environ: Mapping[str, str]) -> bool:
    """Whether SIGHUP stops a crawl (or a login) as SIGTERM does (gracefully, exit 3): a closed
    terminal or a dropped SSH session must not kill it on the spot (SIGHUP's default action),
    losing the summary and leaving crawl.json at "running" (a login: leaving its browser
    running, the session it holds on disk). Not when the user detached the command:
    ``nohup`` starts it with SIGHUP ignored, and a systemd service (``INVOCATION_ID`` set)
    has no terminal to hang up, where a SIGHUP is at most a reload request: both are ignored."""
    return handler != signal.SIG_IGN and "INVOCATION_ID" not in environ


__all__ = ["hangup_stops"]
