"""Fault tests' tools: what a crawl left behind judged, and a terminal to hang up.

``archiver verify`` (the command, run in this process) judges every WARC file of the crawl
directory, ``.open`` ones included, and the index when there is one; warcio, an independent
reader, must read every record of every file too. A fault may stop a crawl; it must never
leave a WARC file that either of them refuses.

:class:`Terminal` is a pseudo-terminal a crawl runs on as its controlling terminal, closed
by the test as a dropped SSH session closes one (the kernel then sends SIGHUP). The filesystem
faults (a full disk at one part of a crawl directory) are in :mod:`tests.support.filesystem`.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
from collections import Counter
from pathlib import Path

from archiver.commands.cli import main
from tests.support.warcs import Rec, read_records, warc_paths


def assert_archive_sound(out: Path, *, stopped: bool = False) -> list[Rec]:
    """``archiver verify OUT`` passes and warcio reads every record of every WARC file under
    ``OUT/warcs`` (``.open`` files too); the records, for the test's own assertions.

    ``stopped``: the crawl was interrupted by the fault, so a file may still be ``.open``
    (captures the frontier did not commit, which the resume repair cuts) and the index may
    name it by its final name: the files are verified without the index, and the one error
    allowed is a ``.open`` file's ``not-closed``."""
    printed = io.StringIO()
    target = out / "warcs" if stopped else out
    with contextlib.redirect_stdout(printed):
        code = main(["verify", "--json", str(target)])
    report = json.loads(printed.getvalue())
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    if stopped:
        errors = [
            f for f in errors if not (f["rule"] == "not-closed" and f["file"].endswith(".open"))
        ]
    assert not errors, json.dumps(errors, indent=1)
    assert code == 0 or stopped
    warcs = out / "warcs"
    paths = [*warc_paths(warcs), *sorted(warcs.glob("*.warc.gz.open"))]
    records = [record for path in paths for record in read_records(path)]
    assert records, f"no WARC record under {warcs}"
    return records


def captured_once(records: list[Rec]) -> Counter[str]:
    """How many response or revisit records each URL has (a test asserts each is 1)."""
    return Counter(
        r.uri or "" for r in records if r.type in ("response", "revisit") and r.uri is not None
    )


#: Runs a command with a terminal as its controlling terminal: started in a session of its own
#: (``start_new_session``), it opens the terminal (a session leader without one acquires the
#: first it opens), makes it its standard streams and executes the command. Closing the
#: terminal's other side is then a hang-up: the kernel sends SIGHUP to this process.
_ON_TERMINAL = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
for n in (0, 1, 2):
    os.dup2(fd, n)
os.close(fd)
os.execvp(sys.argv[2], sys.argv[2:])
"""


class Terminal:
    """A pseudo-terminal whose output is read (and dropped) as it comes, so that a program
    writing to it never blocks; :meth:`hang_up` closes it, as a dropped SSH session does."""

    def __init__(self) -> None:
        self.master, slave = os.openpty()
        self.name = os.ttyname(slave)
        os.close(slave)
        self.output = bytearray()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.master, self._read)

    def _read(self) -> None:
        try:
            self.output += os.read(self.master, 65536)
        except OSError:  # the other side is gone (EIO): nothing more to read
            self._loop.remove_reader(self.master)

    async def start(self, *argv: str, cwd: Path) -> asyncio.subprocess.Process:
        """Run ``argv`` with this terminal as its controlling terminal."""
        return await asyncio.create_subprocess_exec(
            sys.executable, "-c", _ON_TERMINAL, self.name, *argv,
            cwd=cwd, start_new_session=True, stdin=asyncio.subprocess.DEVNULL,
        )  # fmt: skip

    def hang_up(self) -> None:
        if self.master >= 0:
            self._loop.remove_reader(self.master)
            os.close(self.master)
            self.master = -1
