"""Run one command and measure it from outside: wall, user+sys CPU, peak RSS.

* **CPU**: user + sys from ``wait4()`` on the child, i.e. the kernel's rusage of the process and
  every descendant it waited for.
* **Peak RSS**: the largest ``VmHWM`` (the kernel's high-water mark of resident memory) read
  from ``/proc/PID/status`` of the process and its descendants while it runs, every
  ``sample`` seconds; ``VmHWM`` never decreases, so only growth in the very last interval
  before exit can be missed. ``wait4()``'s ``ru_maxrss`` is not used: it is inherited across
  ``fork``+``exec``, so a child forked from this (larger) Python process would never report
  less than this process's own size.
* **Wall**: a monotonic clock from spawn to reap.

The command runs in a new session (its own process group) with stdin empty and stdout+stderr
to a log file; on timeout that group, and only that group, is killed by its PID.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Measurement:
    wall_s: float
    user_s: float
    sys_s: float
    peak_rss_kb: int
    rc: int
    timed_out: bool
    load1: float  #: 1-minute load average right after the run

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["cpu_s"] = round(self.cpu_s, 4)
        return d


def _children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found.extend(int(x) for x in fh.read().split())
        except OSError:
            continue
    return found


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc/PID/task/TID/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(_children(p))
    return out


def status_kb(pid: int, field: str) -> int:
    """A ``kB`` field (VmHWM, VmRSS …) of /proc/PID/status, 0 when gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def run(
    argv: Sequence[str],
    *,
    log: Path | None = None,
    timeout: float | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    sample: float = 0.02,
    on_sample: Callable[[int, float], None] | None = None,
    sum_rss: bool = False,
) -> Measurement:
    """Run ``argv`` to completion (or ``timeout``) and measure it.

    ``on_sample(pid, elapsed)`` is called at every sample while the command runs (used by the
    C10K benchmark to read the crawler's RSS while its fetches are in flight). Peak RSS is the
    largest member of the process tree, or with ``sum_rss`` the largest sum over the tree's
    members (several crawl processes working together).
    """
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
    try:
        t0 = time.monotonic()
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
        peak = 0
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            members = [status_kb(member, "VmHWM") for member in tree(proc.pid)]
            peak = max(peak, sum(members) if sum_rss else max(members, default=0))
            if on_sample is not None:
                on_sample(proc.pid, time.monotonic() - t0)
            if timeout is not None and time.monotonic() - t0 > timeout:
                timed_out = True
                try:  # noqa: SIM105
                    os.killpg(proc.pid, signal.SIGKILL)  # the group we created, by its PID
                except ProcessLookupError:
                    pass
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(sample)
        wall = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    finally:
        if log:
            out.close()  # type: ignore[union-attr]
    return Measurement(
        wall_s=round(wall, 4),
        user_s=round(usage.ru_utime, 4),
        sys_s=round(usage.ru_stime, 4),
        peak_rss_kb=peak,
        rc=proc.returncode,
        timed_out=timed_out,
        load1=round(os.getloadavg()[0], 2),
    )


def raise_nofile(want: int) -> tuple[int, int]:
    """Raise this process's open-files limit (inherited by the commands it runs)."""
    import resource  # noqa: PLC0415

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < want:
        try:  # only root may raise the hard limit (up to fs.nr_open)
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
            return want, want
        except (ValueError, OSError):
            want = hard
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)
