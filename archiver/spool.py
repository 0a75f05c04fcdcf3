"""A byte buffer that stays in memory while small and moves to a temporary file when it grows.

A response body can be gigabytes; a crawl can have thousands of fetches in flight. Each exchange
keeps its raw bytes in a :class:`Spool`, so memory per fetch stays bounded by ``memory_limit``
(warcprox spools at 512 KiB for the same reason).
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

DEFAULT_MEMORY_LIMIT = 512 * 1024
COPY_CHUNK = 1024 * 1024


class Spool:
    """Append-only bytes, readable once complete. Not thread-safe; owned by one exchange."""

    __slots__ = ("_buffer", "_directory", "_file", "_memory_limit", "size")

    def __init__(self, memory_limit: int = DEFAULT_MEMORY_LIMIT, directory: str | None = None):
        self._memory_limit = memory_limit
        self._directory = directory
        self._buffer: bytearray | None = bytearray()
        self._file: BinaryIO | None = None
        self.size = 0

    @classmethod
    def from_bytes(cls, data: bytes) -> Spool:
        spool = cls(memory_limit=max(len(data), 1))
        spool.write(data)
        return spool

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.size += len(data)
        if self._buffer is not None:
            self._buffer += data
            if len(self._buffer) > self._memory_limit:
                self._file = tempfile.TemporaryFile(  # noqa: SIM115 - owned until close()
                    prefix="archiver-spool-", dir=self._directory
                )
                self._file.write(self._buffer)
                self._buffer = None
            return
        assert self._file is not None
        self._file.write(data)

    def truncate(self, size: int) -> None:
        """Drop everything after the first ``size`` bytes."""
        if size >= self.size:
            return
        self.size = size
        if self._buffer is not None:
            del self._buffer[size:]
        else:
            assert self._file is not None
            self._file.truncate(size)
            self._file.seek(size)

    @property
    def in_memory(self) -> bool:
        return self._buffer is not None

    def getvalue(self) -> bytes:
        """All bytes. Only for spools known to be small (tests, headers)."""
        if self._buffer is not None:
            return bytes(self._buffer)
        assert self._file is not None
        self._file.seek(0)
        data = self._file.read()
        self._file.seek(0, os.SEEK_END)
        return data

    def head(self, limit: int) -> bytes:
        """The first ``limit`` bytes."""
        if self._buffer is not None:
            return bytes(self._buffer[:limit])
        assert self._file is not None
        self._file.seek(0)
        data = self._file.read(limit)
        self._file.seek(0, os.SEEK_END)
        return data

    def open(self) -> BinaryIO:
        """A reader over the bytes from the start (the spool must not be written meanwhile)."""
        if self._buffer is not None:
            return io.BytesIO(self._buffer)
        assert self._file is not None
        self._file.flush()
        fd = os.dup(self._file.fileno())
        reader = os.fdopen(fd, "rb")
        reader.seek(0)
        return reader

    def chunks(self, size: int = COPY_CHUNK) -> Iterator[bytes | memoryview]:
        """The bytes from the start, ``size`` at a time, without ever holding more than one
        chunk (a view of the buffer while in memory; read from the file once spooled)."""
        if self._buffer is not None:
            view = memoryview(self._buffer)
            for start in range(0, len(view), size):
                yield view[start : start + size]
            return
        with self.open() as reader:
            while chunk := reader.read(size):
                yield chunk

    def copy_to(self, out: BinaryIO) -> None:
        if self._buffer is not None:
            out.write(self._buffer)
            return
        with self.open() as reader:
            shutil.copyfileobj(reader, out, COPY_CHUNK)

    def close(self) -> None:
        self._buffer = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __len__(self) -> int:
        return self.size
