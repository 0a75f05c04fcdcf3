"""Replay WARCs through a real pywb (2.10, from the tools venv) in `id_` mode.

    with PywbReplay(tmp_path / "pywb", warc_files, cdxj=index_path, warc_root=warc_dir) as replay:
        resp = replay.get_id("http://example.test/", "20240102030405")
        assert resp.status == 200 and resp.memento_datetime is not None

Layout under `root`: `config.yaml` and `collections/<collection>/archive/` holding a symlink per
WARC (at its path relative to `warc_root`, since CDXJ `filename` fields may name a
subdirectory) and `collections/<collection>/indexes/index.cdxj`. The index is either a copy of
`cdxj` (proves *our* index works in pywb) or, with `cdxj=None`, the one pywb's own indexer
writes (`wb-manager index`). pywb reads every `*.cdx`/`*.cdxj` in `indexes/`.

pywb runs in its own process (`pywb_runner.py`, tools venv python) bound to 127.0.0.1 on a port
it chose; its log is `root/pywb.log`. Leaving the block terminates that process by its PID.
`async with` works too (start and stop run in a thread), with `aget_id` for requests.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import selectors
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from .tools import run_tool, tools_python

RUNNER = Path(__file__).with_name("pywb_runner.py")

# The smallest config for id_ replay: no frames, Memento headers on, no proxy, no recording.
CONFIG_YAML = """\
# Written by tests/support/pywb.py: id_ replay of local collections only.
collections_root: collections
framed_replay: false
enable_memento: true
"""


class PywbError(RuntimeError):
    """pywb could not be set up or started."""


@dataclass(frozen=True)
class ReplayResponse:
    """One answer from pywb, as received (redirects are not followed)."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first value of header `name` (case-insensitive), or None."""
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)

    @property
    def memento_datetime(self) -> str | None:
        """`Memento-Datetime` (an HTTP date): which capture pywb served; None when it found none."""
        return self.header("Memento-Datetime")

    @property
    def location(self) -> str | None:
        return self.header("Location")


class PywbReplay:
    def __init__(
        self,
        root: Path,
        warc_files: Sequence[Path],
        *,
        cdxj: Path | None = None,
        collection: str = "crawl",
        warc_root: Path | None = None,
        startup_timeout: float = 30.0,
        request_timeout: float = 30.0,
    ) -> None:
        self.root = root
        self.warc_files = [Path(p) for p in warc_files]
        self.cdxj = cdxj
        self.collection = collection
        self.warc_root = warc_root
        self.startup_timeout = startup_timeout
        self.request_timeout = request_timeout
        self.log_path = root / "pywb.log"
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    # -- set-up -------------------------------------------------------------------------------

    @property
    def collection_dir(self) -> Path:
        return self.root / "collections" / self.collection

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise PywbError("pywb is not running")
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _archive_name(self, warc: Path) -> Path:
        if self.warc_root is None:
            return Path(warc.name)
        try:
            return warc.resolve().relative_to(self.warc_root.resolve())
        except ValueError:
            raise PywbError(f"{warc} is not under warc_root {self.warc_root}") from None

    def _build(self) -> None:
        if not self.warc_files:
            raise PywbError("no WARC files given")
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "config.yaml").write_text(CONFIG_YAML)
        archive = self.collection_dir / "archive"
        indexes = self.collection_dir / "indexes"
        archive.mkdir(parents=True)  # fails if this collection was already built here
        indexes.mkdir()
        linked: list[Path] = []
        for warc in self.warc_files:
            dst = archive / self._archive_name(warc)
            if dst.exists():
                raise PywbError(f"two WARCs map to {dst.relative_to(archive)}")
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.symlink_to(warc.resolve())
            linked.append(dst)
        if self.cdxj is not None:
            shutil.copyfile(self.cdxj, indexes / "index.cdxj")
            return
        # pywb's own indexer over the files already in archive/, `filename` relative to it.
        # (`wb-manager add` would copy them flat into archive/, losing subdirectories.)
        proc = run_tool(["wb-manager", "index", self.collection, *map(str, linked)], cwd=self.root)
        if proc.returncode != 0 or not (indexes / "index.cdxj").exists():
            raise PywbError(f"wb-manager index failed ({proc.returncode}):\n{proc.stderr[-4000:]}")

    # -- process ------------------------------------------------------------------------------

    def start(self) -> None:
        self._build()
        python = tools_python()
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                [str(python), "-I", str(RUNNER), str(self.root)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                bufsize=0,
            )
        try:
            self.port = self._read_port()
        except BaseException:
            self.stop()
            raise

    def _read_port(self) -> int:
        assert self._proc is not None and self._proc.stdout is not None
        out: IO[bytes] = self._proc.stdout
        deadline = time.monotonic() + self.startup_timeout
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(out, selectors.EVENT_READ)
            while b"\n" not in buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PywbError(
                        f"pywb did not start within {self.startup_timeout:g}s\n{self._log_tail()}"
                    )
                if sel.select(left):
                    chunk = os.read(out.fileno(), 64)
                    if not chunk:
                        self._proc.wait(5)
                        raise PywbError(
                            f"pywb exited with {self._proc.returncode} before serving\n"
                            f"{self._log_tail()}"
                        )
                    buf += chunk
        line = buf.split(b"\n", 1)[0]
        if not line.isdigit():
            raise PywbError(f"pywb runner printed {line!r}, not a port\n{self._log_tail()}")
        return int(line)

    def _log_tail(self, size: int = 4000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no pywb log)"
        return f"--- {self.log_path} (tail) ---\n{text[-size:]}"

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        self.port = None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
        finally:
            if proc.stdout is not None:
                proc.stdout.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)

    # -- requests -----------------------------------------------------------------------------

    def get(self, path: str, *, accept_encoding: str = "identity") -> ReplayResponse:
        """GET `path` (starting with "/") from pywb; redirects are returned, not followed.

        pywb negotiates content coding: asked for `identity` it decodes a gzip-encoded capture;
        asked for `gzip` it serves the archived bytes as they are."""
        if self.port is None:
            raise PywbError("pywb is not running")
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.request_timeout)
        try:
            conn.request("GET", path, headers={"Accept-Encoding": accept_encoding})
            resp = conn.getresponse()
            body = resp.read()
            return ReplayResponse(resp.status, resp.reason, resp.getheaders(), body)
        finally:
            conn.close()

    def get_id(
        self, url: str, timestamp: str, *, accept_encoding: str = "identity"
    ) -> ReplayResponse:
        """The capture of `url` nearest `timestamp` (14 digits), unrewritten (`id_` mode).

        pywb serves the *closest* capture, not necessarily this one: compare
        `memento_datetime`. No capture at all is a 404 without Memento-Datetime.
        """
        return self.get(f"/{self.collection}/{timestamp}id_/{url}", accept_encoding=accept_encoding)

    async def aget_id(self, url: str, timestamp: str) -> ReplayResponse:
        return await asyncio.to_thread(self.get_id, url, timestamp)
