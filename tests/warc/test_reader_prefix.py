"""archiver.warc.reader.read_prefix_at: a record's head and the start of its block, read at an
index line's offset without inflating (or judging) the rest of the record.

Earlier crawls' records are read this way for their ids, dates and HTTP validators
(archiver.dedup.sources), so a large original costs a header's worth of work.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from archiver.errors import WarcFormatError
from archiver.warc.reader import read_prefix_at, read_record_at
from tests.warc.test_reader import WarcBuilder, http_response

BODY = os.urandom(3 << 20)  # incompressible: its member is as large as the body


def big_record(tmp_path: Path, *, compress: bool = True) -> tuple[Path, int, int, bytes]:
    warc = WarcBuilder()
    block, payload = http_response(BODY)
    warc.capture("http://example.com/big", block, payload)
    path = warc.write(tmp_path, compress=compress)
    offset, length = warc.extents(compress=compress)[1]
    return path, offset, length, block


@pytest.mark.parametrize("compress", [True, False], ids=["gzip", "uncompressed"])
def test_the_prefix_is_the_start_of_the_block(tmp_path: Path, compress: bool) -> None:
    path, offset, length, block = big_record(tmp_path, compress=compress)
    prefix = read_prefix_at(path, offset, length, 100)
    assert prefix.head.record_type == "response"
    assert prefix.head.target_uri == "http://example.com/big"
    assert prefix.head.content_length == len(block)
    assert prefix.block == block[:100]
    assert not prefix.whole
    everything = read_prefix_at(path, offset, length, len(block) + 10)
    assert everything.block == block
    assert everything.whole


def test_only_the_prefix_is_read_the_rest_is_not_judged(tmp_path: Path) -> None:
    """A member whose end is corrupt still gives its head: the CRC is never reached. Judging
    the record is read_record_at's job, which refuses it."""
    path, offset, length, block = big_record(tmp_path)
    data = bytearray(path.read_bytes())
    data[offset + length - 6] ^= 0x01  # the gzip trailer's CRC-32
    path.write_bytes(bytes(data))
    prefix = read_prefix_at(path, offset, length, 4096)
    assert prefix.block == block[:4096]
    with pytest.raises(WarcFormatError):
        read_record_at(path, offset, length)


def test_a_slice_cut_inside_the_block_gives_what_is_there(tmp_path: Path) -> None:
    path, offset, _, block = big_record(tmp_path, compress=False)
    prefix = read_prefix_at(path, offset, 5000, len(block))
    assert 0 < len(prefix.block) < 5000
    assert block.startswith(prefix.block)
    assert not prefix.whole


@pytest.mark.parametrize(
    ("delta", "why"),
    [(1, "no WARC version line"), (10**9, "outside the file")],
)
def test_no_record_there_is_an_error(tmp_path: Path, delta: int, why: str) -> None:
    path, offset, length, _ = big_record(tmp_path)
    with pytest.raises(WarcFormatError, match=why):
        read_prefix_at(path, offset + delta, length, 100)
