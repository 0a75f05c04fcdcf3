"""archiver.run.output: a JSON-lines file cut back to its last whole line (a killed run's log)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archiver.run.output import cut_torn_line


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        (b"", b""),
        (b'{"a":1}\n{"b":2}\n', b'{"a":1}\n{"b":2}\n'),
        (b'{"a":1}\n{"b":', b'{"a":1}\n'),
        (b'{"b":', b""),
        (b"x\n" + b"y" * 200_000, b"x\n"),  # a fragment longer than one backwards read
    ],
)
def test_cut_torn_line(tmp_path: Path, content: bytes, kept: bytes) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(content)
    assert cut_torn_line(path) == len(content) - len(kept)
    assert path.read_bytes() == kept
    assert cut_torn_line(tmp_path / "missing.jsonl") == 0
