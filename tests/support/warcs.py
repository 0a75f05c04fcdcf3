"""Reading what a crawl wrote, with warcio (an independent reader), for assertions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator


@dataclass
class Rec:
    file: str
    offset: int
    type: str
    headers: list[tuple[str, str]]
    block: bytes

    def get(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def get_all(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name.lower()]

    @property
    def uri(self) -> str | None:
        return self.get("WARC-Target-URI")


def warc_paths(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.warc.gz"))


def read_records(path_or_dir: Path) -> list[Rec]:
    """Every record of a WARC file (or of every WARC under a directory), block bytes raw."""
    paths = warc_paths(path_or_dir) if path_or_dir.is_dir() else [path_or_dir]
    out: list[Rec] = []
    for path in paths:
        with open(path, "rb") as fh:
            iterator = ArchiveIterator(fh, no_record_parse=True)
            for record in iterator:
                block = record.raw_stream.read()
                out.append(
                    Rec(
                        file=path.name,
                        offset=iterator.get_record_offset(),
                        type=record.rec_type,
                        headers=list(record.rec_headers.headers),
                        block=block,
                    )
                )
    return out


def responses(path_or_dir: Path, url: str | None = None) -> list[Rec]:
    return [
        r
        for r in read_records(path_or_dir)
        if r.type in ("response", "revisit") and (url is None or r.uri == url)
    ]
