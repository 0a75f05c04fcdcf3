"""Chromium as a child process: found, launched in its own process group, reaped.

A crawl's browser lives in a directory the caller gives (the crawl's state directory)::

    DIR/profile/        a fresh --user-data-dir, emptied at every launch and deleted at close
                        (it holds what pages stored: cookies, localStorage, a login's session)
    DIR/chromium.pid    {"pid", "pgid", "profile"} of the running browser
    DIR/chromium.log    Chromium's stdout and stderr, truncated at every launch

Chromium starts many processes (zygotes, renderers, the GPU and utility processes). It is
spawned as the leader of a new process group, so that one ``killpg`` reaches all of them, and
with the crash reporter off, because its handler daemonises out of the group (and writes under
``~/.config``). Closing sends ``Browser.close``, waits a little, then kills the group whatever
happened. If the owner dies without closing (``kill -9``), Chromium normally exits when its end
of the DevTools pipe closes, but not when it is busy or hung (seen while it was reading a 100 MB
message); so every start first reaps what an earlier run left: the process groups of the
processes whose command line uses this directory's profile. The pid file says which group that
was, for people and tools; a pid can be reused once its process is gone, so the profile, read
from ``/proc``, is what decides, and nothing else is ever signalled.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import signal
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from archiver.browser.cdp import MAX_MESSAGE, Connection
from archiver.browser.errors import BrowserError, BrowserUnavailableError

#: Tried in order on PATH when no binary is given.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
INSTALL_HINT = (
    "install it (Debian/Ubuntu: apt-get install chromium) or give its path with --chromium"
)

PID_FILE = "chromium.pid"
LOG_FILE = "chromium.log"
PROFILE_DIR = "profile"


def find_chromium(path: str | None = None) -> str:
    """The Chromium executable: ``path`` if given (a file, or a name looked up on PATH), else the
    first of :data:`CHROMIUM_NAMES` on PATH. Raises :class:`BrowserUnavailableError`."""
    if path:
        found = shutil.which(path)
        if found is None:
            raise BrowserUnavailableError(f"--chromium {path}: not an executable file")
        return found
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found is not None:
            return found
    raise BrowserUnavailableError(
        f"Chromium not found (looked for {', '.join(CHROMIUM_NAMES)} on PATH): {INSTALL_HINT}"
    )


def chromium_flags(
    *,
    window: tuple[int, int],
    user_agent: str | None = None,
    sandbox: bool | None = None,
    headless: bool = True,
    offline: bool = True,
) -> list[str]:
    """The command-line switches for a capture browser (without the profile and the pipe).

    ``sandbox`` None means: sandboxed unless running as root, where Chromium refuses to start
    with its sandbox on. ``offline`` False and ``headless`` False are for a login browser
    (:mod:`archiver.browser.login`): it reaches the site itself, and a person may see it.
    """
    if sandbox is None:
        sandbox = os.geteuid() != 0
    flags = [
        *(["--headless"] if headless else []),
        "--disable-gpu",
        "--disable-dev-shm-usage",  # /dev/shm is small in containers
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-sync",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-breakpad",
        "--disable-crashpad-for-testing",  # its handler leaves the process group
        "--disable-hang-monitor",
        "--disable-quic",
        "--password-store=basic",
        "--deny-permission-prompts",
        "--mute-audio",
        "--hide-scrollbars",
        # every tab keeps rendering and running its timers while others load
        "--disable-renderer-backgrounding",
        "--disable-background-timer-throttling",
        "--disable-backgrounding-occluded-windows",
        # The browser's own network is cut off: everything a page loads reaches it through the
        # Fetch domain, answered by archiver's fetcher. Whatever would bypass that (WebSockets,
        # a request the interception does not see) fails instead of reaching the network past
        # archiver's SSRF guard. The rule maps IP literals too.
        *(["--host-resolver-rules=MAP * ~NOTFOUND"] if offline else []),
        # The network service in the browser process: one process fewer per browser, and on
        # some kernels (seen on a Firecracker VM) the out-of-process one crashes at start with
        # "FD ownership violation", which leaves every navigation hanging.
        "--enable-features=NetworkServiceInProcess2",
        # HttpsUpgrades turns http:// navigations into https:// ones: the page asked for must
        # be the page captured. Translate and the media router would only make requests.
        "--disable-features=HttpsUpgrades,Translate,MediaRouter,OptimizationHints",
        f"--window-size={window[0]},{window[1]}",
        "--force-device-scale-factor=1",
    ]
    if not sandbox:
        flags.append("--no-sandbox")
    if user_agent:
        flags.append(f"--user-agent={user_agent}")
    return flags


# -- processes, read from /proc -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    pid: int
    pgid: int
    zombie: bool
    argv: tuple[str, ...]


def processes() -> Iterator[ProcessInfo]:
    """Every process this user can see (Linux ``/proc``); those that vanish meanwhile skipped."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
            with open(f"/proc/{entry.name}/cmdline", "rb") as cmdline:
                argv = cmdline.read().split(b"\0")
        except OSError:
            continue
        yield ProcessInfo(
            pid=int(entry.name),
            pgid=int(fields[2]),
            zombie=fields[0] == b"Z",
            argv=tuple(arg.decode("utf-8", "replace") for arg in argv if arg),
        )


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of a process group."""
    return [proc.pid for proc in processes() if proc.pgid == pgid and not proc.zombie]


def profile_users(profile: Path) -> list[ProcessInfo]:
    """The live processes started with ``--user-data-dir=profile``.

    Chromium's child processes rewrite their command line into one space-separated string (a
    process title), so the switch is looked for as a word of each argument too.
    """
    flag = f"--user-data-dir={profile}"
    return [
        proc
        for proc in processes()
        if not proc.zombie and any(f" {flag} " in f" {arg} " for arg in proc.argv)
    ]


async def reap_leftovers(
    state_dir: Path,
    *,
    timeout: float = 10.0,  # noqa: ASYNC109 - a BrowserUnavailableError when it runs out
) -> list[int]:
    """Kill what an earlier run's Chromium left in ``state_dir``; return the pids found.

    Only processes that use this directory's profile, and the process groups they lead or
    belong to, are signalled; never this process's own group.
    """
    profile = state_dir / PROFILE_DIR
    users = profile_users(profile)
    own_group = os.getpgrp()
    # The pid file names the group, but a pid is reused once its process is gone: the group is
    # only killed if one of its live members still uses this profile.
    groups = {proc.pgid for proc in users if proc.pgid not in (own_group, 0, 1)}
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    for proc in users:
        if proc.pgid not in groups:  # a process that left the group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, signal.SIGKILL)
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while profile_users(profile) or any(group_members(pgid) for pgid in groups):
        if loop.time() > end:
            raise BrowserUnavailableError(
                f"a Chromium left by an earlier run in {state_dir} does not die"
            )
        await asyncio.sleep(0.05)
    (state_dir / PID_FILE).unlink(missing_ok=True)
    return [proc.pid for proc in users]


# -- launching ----------------------------------------------------------------------------------


def _high_fd(fd: int) -> int:
    """A close-on-exec copy of ``fd`` numbered 5 or more, and ``fd`` closed: the child's fds 0-4
    are set by dup2 from these, so no source can be overwritten before it is copied."""
    copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 5)
    os.close(fd)
    return copy


def _spawn(argv: Sequence[str], log_path: Path) -> tuple[int, int, int]:
    """Start ``argv`` as a new process group leader with the DevTools pipe on fds 3 and 4.

    Returns (pid, fd to read Chromium's messages from, fd to write commands to). posix_spawn
    rather than subprocess: it maps the pipe ends onto fds 3 and 4 and sets the process group
    without a ``preexec_fn`` (unsafe in a process with threads).
    """
    commands_read, commands_write = os.pipe()
    replies_read, replies_write = os.pipe()
    child_fds = [
        _high_fd(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)),
        _high_fd(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)),
        _high_fd(commands_read),
        _high_fd(replies_write),
    ]
    devnull, log, child_in, child_out = child_fds
    try:
        pid = os.posix_spawn(
            argv[0],
            list(argv),
            dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, devnull, 0),
                (os.POSIX_SPAWN_DUP2, log, 1),
                (os.POSIX_SPAWN_DUP2, log, 2),
                (os.POSIX_SPAWN_DUP2, child_in, 3),
                (os.POSIX_SPAWN_DUP2, child_out, 4),
            ],
            setpgroup=0,
        )
    except OSError:
        os.close(replies_read)
        os.close(commands_write)
        raise
    finally:
        for fd in child_fds:
            os.close(fd)
    return pid, replies_read, commands_write


async def _connect(read_fd: int, write_fd: int) -> Connection:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0)
    )
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(write_fd, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    connection = Connection(reader, writer, read_transport)
    connection.start()
    return connection


class ChromiumProcess:
    """One running Chromium, its process group and its DevTools connection."""

    def __init__(self, pid: int, state_dir: Path, connection: Connection) -> None:
        self.pid = pid
        self.pgid = pid  # a group leader: setpgroup=0
        self.state_dir = state_dir
        self.connection = connection
        self.returncode: int | None = None

    @classmethod
    async def launch(
        cls,
        binary: str,
        state_dir: Path,
        flags: Sequence[str],
        *,
        timeout: float = 60.0,  # noqa: ASYNC109 - a BrowserUnavailableError when it runs out
    ) -> ChromiumProcess:
        """Reap leftovers, then start Chromium with a fresh profile and wait until it answers.

        Raises :class:`BrowserUnavailableError` (with the end of Chromium's log) when it exits
        or does not answer within ``timeout`` seconds.
        """
        await asyncio.to_thread(state_dir.mkdir, parents=True, exist_ok=True)
        await reap_leftovers(state_dir)
        # an old profile holds thousands of files: emptied outside the event loop
        profile = await asyncio.to_thread(_fresh_profile, state_dir)
        argv = [binary, *flags, f"--user-data-dir={profile}", "--remote-debugging-pipe"]
        log_path = state_dir / LOG_FILE
        try:
            pid, read_fd, write_fd = _spawn(argv, log_path)
        except OSError as exc:
            raise BrowserUnavailableError(f"cannot start Chromium ({binary}): {exc}") from exc
        pid_file = state_dir / PID_FILE
        pid_file.write_text(json.dumps({"pid": pid, "pgid": pid, "profile": str(profile)}))
        process = cls(pid, state_dir, await _connect(read_fd, write_fd))
        try:
            await process.connection.browser.send("Browser.getVersion", timeout=timeout)
        except BrowserError as exc:
            await process.close()
            raise BrowserUnavailableError(
                f"Chromium ({binary}) did not start: {_log_tail(log_path) or exc}"
            ) from None
        return process

    @property
    def alive(self) -> bool:
        """True while the main process runs and its connection is open."""
        self._poll()
        return self.returncode is None and self.connection.error is None

    def _poll(self) -> None:
        if self.returncode is not None:
            return
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere
            self.returncode = -1
            return
        if pid:
            self.returncode = os.waitstatus_to_exitcode(status)

    def kill(self) -> None:
        """SIGKILL the whole process group now."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGKILL)

    async def close(self, *, grace: float = 3.0) -> None:
        """Ask Chromium to quit, then kill its group whatever it did, reap it, and forget it:
        its profile is deleted. Returns once no process of the group is left."""
        loop = asyncio.get_running_loop()
        if self.alive:
            with contextlib.suppress(BrowserError):
                await self.connection.browser.send("Browser.close", timeout=grace)
            end = loop.time() + grace
            while self.returncode is None and loop.time() < end:
                await asyncio.sleep(0.02)
                self._poll()
        self.kill()
        end = loop.time() + 10.0
        while self.returncode is None or group_members(self.pgid):
            if loop.time() > end:
                raise BrowserError(f"Chromium (pid {self.pid}) does not die")
            await asyncio.sleep(0.02)
            self._poll()
        await self.connection.close()
        (self.state_dir / PID_FILE).unlink(missing_ok=True)
        await asyncio.to_thread(shutil.rmtree, self.state_dir / PROFILE_DIR, ignore_errors=True)


def _fresh_profile(state_dir: Path) -> Path:
    profile = state_dir / PROFILE_DIR
    shutil.rmtree(profile, ignore_errors=True)
    profile.mkdir()
    return profile


def _log_tail(path: Path, lines: int = 3) -> str:
    """The last meaningful lines of Chromium's log, on one line."""
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return ""
    noise = ("dbus", "Fontconfig", "vkCreateInstance", "CheckVkSuccessImpl", "unexpected operator")
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    kept = [line for line in kept if not any(word in line for word in noise)]
    return " | ".join(kept[-lines:])[:400]
