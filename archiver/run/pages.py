"""The crawl's page list, ``pages.jsonl``: one JSON line per page (its URL, capture time,
title, and with ``--text`` its text), the page list a WACZ carries (WACZ 1.1.1,
"pages/pages.jsonl").

The file is opened for append and line-buffered: a page is listed (written through) before its
lease is committed, so a ``kill -9`` never loses the entry of a page the frontier counts as
done; the half line a killed run left is cut first (:func:`archiver.run.output.cut_torn_line`).
A line that cannot be written (a full disk) is a :class:`~archiver.errors.WriteError`: the
crawl stops with the lease uncommitted, and lists the page when it captures it again.
"""

from __future__ import annotations

import contextlib
import json
from datetime import datetime
from pathlib import Path

import orjson

from archiver.errors import WriteError
from archiver.run.output import cut_torn_line
from archiver.timefmt import warc_date


class PageList:
    """``pages.jsonl`` of one run, open for append (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        cut_torn_line(path)
        self.path = path
        self._file = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115

    def add(self, url: str, date: datetime, title: str | None, text: str | None = None) -> None:
        """List a page: its URL, capture time, title and text (``None``: not kept)."""
        entry = {"url": url, "ts": warc_date(date), "title": title}
        if text is not None:
            entry["text"] = text
        try:
            line = orjson.dumps(entry).decode("utf-8")
        except TypeError:  # a lone surrogate in a title: orjson refuses it, escaped JSON keeps it
            line = json.dumps(entry)
        try:
            self._file.write(line + "\n")
        except OSError as exc:  # a full disk: the lease must not be committed unlisted
            raise WriteError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def close(self) -> None:
        with contextlib.suppress(OSError):  # line-buffered: nothing is left to lose
            self._file.close()


__all__ = ["PageList"]
