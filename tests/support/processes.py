"""Waiting for processes the test did not start itself (a supervisor's children, a server a
keeper started): ``waitpid`` only reaps children, so each is watched through a pidfd, which
becomes readable when the process exits (pidfd_open(2), Linux 5.3)."""

from __future__ import annotations

import os
import select
import time
from collections.abc import Iterable


def wait_exited(pids: Iterable[int], timeout: float) -> None:
    """Return once every process of ``pids`` has exited, or after ``timeout`` seconds in all
    (the caller checks which are left)."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue  # gone already
        try:
            select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        finally:
            os.close(fd)
