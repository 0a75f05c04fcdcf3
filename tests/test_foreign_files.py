"""WARC and ARC files other tools wrote: ``archiver index``, ``verify --index`` and
``--dedup-from`` on each file of the corpus :mod:`tests.support.foreign` builds (once per
session: pywb's sample archive, Wget, warcio, pywb's recorder, warcprox with Chromium, and
hand-damaged copies).

For every file: the index equals cdxj-indexer's, line for line, but for the differences
docs/foreign-files.md lists (the digest cdxj-indexer makes up for a record that declares none,
and what archiver leaves out as damaged), each checked here by an oracle of its own; ``verify``
accepts the index ``index`` wrote; what is left out is reported, one line each, and the command
exits 1 (0 with ``--allow-partial``). Then one crawl deduplicates against all of them.
"""

from __future__ import annotations

import base64
import gc
import hashlib
import io
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from cdxj_indexer.main import CDXJIndexer
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader
from warcio.exceptions import ArchiveLoadFailed

from archiver.commands import verify
from archiver.commands.cli import main
from archiver.dedup.sources import canonical_digest
from archiver.index.cdxj import ScanReport, scan_warc
from archiver.warc.reader import Damage, RecordInfo, iter_records
from tests.conftest import run_crawl
from tests.docs.registry import documents
from tests.docs.shell import DocShell, workdir
from tests.support.foreign import CORPUS, ForeignFile, build, local_site
from tests.support.site import SiteServer
from tests.support.warcs import read_records

#: The digest of no bytes: what cdxj-indexer 1.5.0 writes for a record without a payload digest.
SHA1_OF_NOTHING = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("foreign"))


def _ids(file: ForeignFile) -> str:
    return file.name


def cdxj_indexer(path: Path) -> tuple[list[str], bool]:
    """cdxj-indexer's lines (--post-append, as archiver's), whatever it read before it gave
    up (it raises at a record it cannot read, and at a whole-file gzip), and whether it did."""
    out = io.StringIO()
    stopped = False
    # making up a digest, it leaves a temporary file to the garbage collector: not ours to fix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        indexer = CDXJIndexer(out, [str(path)], post_append=True)
        try:
            indexer.process_all()
        except ArchiveLoadFailed:
            stopped = True
        del indexer
        gc.collect()
    return out.getvalue().splitlines(), stopped


def _fields(line: str) -> dict[str, str]:
    fields: dict[str, str] = json.loads(line.split(" ", 2)[2])
    return fields


def warcio_payload_digest(path: Path, offset: int) -> str:
    """The payload digest of the record at ``offset`` as warcio reads the payload: the bytes
    after the HTTP head (warcio's parsing), de-chunked by warcio's own chunked reader, content
    coding kept; the whole block when there is no HTTP head."""
    body = warcio_payload(path, offset)
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()


def warcio_payload(path: Path, offset: int) -> bytes:
    """The payload of the record at ``offset`` as warcio reads it (see above). The stream is
    read before warcio is asked for the record's offset: asking first makes it skip to the
    record's end, and the stream reads empty (which is how cdxj-indexer --post-append comes to
    give such a record the digest of nothing)."""
    with open(path, "rb") as fh:
        iterator = ArchiveIterator(fh, arc2warc=True)
        for record in iterator:
            stream = record.raw_stream
            headers = record.http_headers
            if headers is not None and headers.get_header("Transfer-Encoding") == "chunked":
                stream = ChunkedDataReader(stream, decomp_type=None)
            body: bytes = stream.read()
            if iterator.get_record_offset() == offset:
                return body
    raise AssertionError(f"warcio finds no record at {path}@{offset}")


def _declares_digest(path: Path) -> dict[int, bool]:
    return {
        item.offset: item.get("WARC-Payload-Digest") is not None
        for item in iter_records(path, resync=True)
        if isinstance(item, RecordInfo)
    }


def _left_out(path: Path) -> list[Damage]:
    return [item for item in iter_records(path, resync=True) if isinstance(item, Damage)]


@pytest.mark.parametrize("file", CORPUS, ids=_ids)
def test_index_reports_what_it_left_out(
    corpus: Path, file: ForeignFile, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = corpus / file.name
    code = main(["index", str(path), "-o", str(tmp_path / "index.cdxj")])
    err = capsys.readouterr().err
    left = [line for line in err.splitlines() if line.startswith("archiver index: left out ")]
    assert len(left) == file.left_out, err
    assert code == (1 if file.left_out else 0), err
    if file.left_out:
        assert f"{file.left_out} left out (listed above)" in err
        assert "--allow-partial" in err
        code = main(["index", str(path), "-o", str(tmp_path / "index.cdxj"), "--allow-partial"])
        assert code == 0
    lines = (tmp_path / "index.cdxj").read_text().splitlines()
    assert lines == sorted(lines, key=str.encode)


@pytest.mark.parametrize("file", CORPUS, ids=_ids)
def test_index_equals_cdxj_indexer_but_where_it_is_wrong(corpus: Path, file: ForeignFile) -> None:
    """Line for line, but: (1) a record that declares no payload digest gets the digest of its
    payload (checked against warcio's reading of it), where cdxj-indexer writes the digest of
    nothing; (2) a record archiver leaves out as damaged has no line (cdxj-indexer indexes
    some: a cut member, an ARC record whose length is no length)."""
    path = corpus / file.name
    report = ScanReport()
    ours = scan_warc(path, report=report)
    theirs, stopped = cdxj_indexer(path)
    assert len(report.left_out) == file.left_out
    declares = _declares_digest(path)
    regions = [(d.offset, d.resumed or d.offset) for _, d in report.left_out]
    by_offset = {int(_fields(line)["offset"]): line for line in ours}
    computed = 0
    for line in theirs:
        offset = int(_fields(line)["offset"])
        mine = by_offset.pop(offset, None)
        if mine is None:
            assert any(start <= offset < end for start, end in regions), (line, regions)
            continue
        if declares.get(offset, True) or "digest" not in _fields(line):
            assert mine == line
            continue
        assert _fields(line)["digest"] == SHA1_OF_NOTHING  # cdxj-indexer's made-up digest
        if "digest" not in _fields(mine):  # no HTTP head to find the payload after
            assert "status" not in _fields(line), line
            assert mine == line.replace(f'"digest": "{SHA1_OF_NOTHING}", ', "")
            continue
        assert _fields(mine)["digest"] == warcio_payload_digest(path, offset)
        strip = [line.replace(SHA1_OF_NOTHING, _fields(mine)["digest"])]
        assert strip == [mine]
        computed += 1
    if stopped:  # it stops at the damage (losing what it held back); archiver reads on
        last = max((int(_fields(line)["offset"]) for line in theirs), default=-1)
        by_offset = {o: line for o, line in by_offset.items() if o <= last}
    assert not by_offset, f"lines cdxj-indexer does not write: {list(by_offset.values())}"
    if file.name in ("pywb-example.arc", "pywb-example.arc.gz", "wget.warc.gz"):
        assert computed, "an ARC record or a Wget metadata record has no digest of its own"


@pytest.mark.parametrize("file", CORPUS, ids=_ids)
def test_verify_accepts_the_index_archiver_index_wrote(
    corpus: Path, file: ForeignFile, tmp_path: Path
) -> None:
    path = corpus / file.name
    index = tmp_path / "index.cdxj"
    assert main(["index", str(path), "-o", str(index), "--allow-partial"]) == 0
    report = verify.verify([path], index=index)
    index_findings = [f for f in report.findings if verify.RULES[f.rule][1] is verify.Kind.INDEX]
    assert not index_findings, verify.render(report)
    assert report.index_lines_checked == len(index.read_text().splitlines())
    # another tool's file is judged by the standard only: none of archiver's own rules
    assert report.files_archiver == 0
    assert not [f for f in report.findings if verify.RULES[f.rule][1] is verify.Kind.ARCHIVER]
    damage = report.rule_counts["record-malformed"] + report.rule_counts["trailing-garbage"]
    damage += sum(report.rule_counts[r] for r in ("gzip-member-cut", "gzip-member-corrupt"))
    damage += report.rule_counts["gzip-multi-record"]
    assert damage == file.left_out, verify.render(report)


def test_a_file_is_judged_by_its_own_version(corpus: Path) -> None:
    """Wget writes WARC/1.0 with WARC-Target-URI in angle brackets, as 1.0's grammar has it:
    no finding. warcio's file breaks the standard in the two places known of its writer: it
    hashes a chunked body with its framing (not the payload, section 5.9), and it keeps a
    revisit's HTTP head without WARC-Truncated (section 6.7.2's "shall"); nothing else.
    --archiver-rules adds archiver's own (WARC/1.1 only, each response followed by its
    request)."""
    wget = verify.verify([corpus / "wget.warc.gz"])
    # its one finding: Wget 1.21 hashes a chunked body with its framing, as warcio does
    assert dict(wget.rule_counts) == {"payload-digest": 1}, verify.render(wget)
    (finding,) = wget.findings
    (record,) = [
        r
        for r in iter_records(corpus / "wget.warc.gz")
        if isinstance(r, RecordInfo)
        if r.offset == finding.offset
    ]
    assert record.target.endswith("/chunked.txt")
    warcio_file = verify.verify([corpus / "warcio.warc.gz"])
    assert dict(warcio_file.rule_counts) == {"payload-digest": 1, "revisit-truncated": 1}
    strict = verify.verify([corpus / "warcio.warc.gz"], archiver_rules=True)
    # every record is WARC/1.0; the chunked response and the revisit have no request
    assert strict.rule_counts["version"] == 9 and strict.rule_counts["request-missing"] == 2
    assert strict.files_archiver == 1


async def test_dedup_from_uses_every_original_it_should(corpus: Path, tmp_path: Path) -> None:
    """One crawl deduplicates against the index of the whole corpus: every 200 response
    whose payload digest is the payload's (WARC 1.1 section 5.9; warcio's writer and Wget
    hash a chunked body with its framing, which is no payload digest) is served again by a
    local site, and each capture of it becomes a revisit naming an original with that digest
    (an empty payload excepted: always stored whole), whatever tool wrote it."""
    originals, revisits = await _dedup_against(corpus, tmp_path, "all")
    tools = {e["filename"].split("-")[0].split(".")[0] for es in originals.values() for e in es}
    assert {"pywb", "wget", "warcio", "warcprox", "quirks", "damaged"} <= tools
    assert len(originals) > 20
    for digest, entries in originals.items():
        revisit = revisits.get(digest)
        assert revisit is not None, f"no revisit for {digest} ({entries[0]['filename']})"
        assert revisit.get("WARC-Refers-To-Target-URI") in {e["url"] for e in entries}


@pytest.mark.parametrize(
    ("files", "what"),
    [
        (("pywb-example.arc", "pywb-example.arc.gz"), "ARC records (no record id, no digest)"),
        (("wget.warc.gz",), "Wget's bracketed target URIs (WARC/1.0's grammar)"),
        (("warcprox.warc.gz",), "warcprox's Base16 digests"),
    ],
    ids=["arc", "wget", "warcprox"],
)
async def test_dedup_from_uses_originals_each_tool_wrote(
    corpus: Path, tmp_path: Path, files: tuple[str, ...], what: str
) -> None:
    """The same, against one tool's files alone: the revisit can only name them."""
    alone = tmp_path / "alone"
    alone.mkdir()
    for name in files:
        (alone / name).write_bytes((corpus / name).read_bytes())
    originals, revisits = await _dedup_against(alone, tmp_path, what)
    assert originals, what
    for digest, entries in originals.items():
        revisit = revisits[digest]
        (entry,) = [e for e in entries if e["url"] == revisit.get("WARC-Refers-To-Target-URI")][:1]
        record = next(
            r
            for r in iter_records(alone / entry["filename"])
            if isinstance(r, RecordInfo) and r.offset == int(entry["offset"])
        )
        assert revisit.get("WARC-Refers-To-Date") == record.date
        assert revisit.get("WARC-Refers-To") == record.record_id  # None for an ARC record
        if files[0].startswith("wget"):
            assert record.target_uri == f"<{entry['url']}>"
        if files[0].startswith("warcprox"):
            assert not (record.get("WARC-Payload-Digest") or "").startswith(digest[:9])


async def _dedup_against(
    directory: Path, tmp_path: Path, name: str
) -> tuple[dict[str, list[dict[str, str]]], dict[str | None, Any]]:
    """Index ``directory``'s files beside them, serve every original's payload from a local
    site, crawl it with --dedup-from that index: (originals by digest, revisits by digest)."""
    index = directory / "index.cdxj"  # beside the files it names, where --dedup-from looks
    assert main(["index", str(directory), "--allow-partial", "-o", str(index)]) == 0
    check = verify.verify([directory], index=index)
    wrong = {
        (f.file, f.offset) for f in check.findings if f.rule in ("payload-digest", "index-digest")
    }
    originals: dict[str, list[dict[str, str]]] = {}
    for line in index.read_text().splitlines():
        fields = _fields(line)
        if fields.get("status") != "200" or fields.get("mime") == "warc/revisit":
            continue
        if "digest" not in fields or (fields["filename"], int(fields["offset"])) in wrong:
            continue
        # warcprox writes sha1 in Base16: the crawl's revisit names it in Base32
        originals.setdefault(canonical_digest(fields["digest"]), []).append(fields)
    bodies = {digest: _payload(directory, entries[0]) for digest, entries in originals.items()}
    for digest in [d for d, body in bodies.items() if not body]:
        del bodies[digest], originals[digest]  # an empty payload is always stored whole
    out = tmp_path / f"crawl-{len(list(tmp_path.iterdir()))}"
    async with SiteServer() as site:
        paths = []
        for n, body in enumerate(bodies.values()):
            site.add_file(f"/p/{n}", body, "application/octet-stream")
            paths.append(f"/p/{n}")
        links = "".join(f'<a href="{p}">{p}</a>' for p in paths)
        site.add_page("/", f"<html><body>{links}</body></html>")
        result = await run_crawl(out, site.url("/"), dedup_from=(index,), dedup_min_size=0)
    assert result.status == "completed", name
    revisits = {
        r.get("WARC-Payload-Digest"): r for r in read_records(out / "warcs") if r.type == "revisit"
    }
    return originals, revisits


def _payload(corpus: Path, fields: dict[str, str]) -> bytes:
    """The payload bytes of an index line's record, as warcio reads them (de-chunked)."""
    return warcio_payload(corpus / fields["filename"], int(fields["offset"]))


INDEX = "archiver index collection/ -o collection/index.cdxj"
VERIFY = "archiver verify collection/ --index collection/index.cdxj"
DEDUP = (
    "archiver crawl https://example.com/ --output crawls/again --dedup-from collection/index.cdxj"
)


@documents(INDEX, VERIFY, DEDUP)
def test_the_documented_command_lines_run_as_written(
    corpus: Path, tmp_path: Path, doc: DocShell
) -> None:
    """docs/foreign-files.md's three command lines (README's first), as written, on a
    collection of warcprox's and ARC files: each exits 0, the index covers both files, verify
    says OK, and the crawl stores the image warcprox recorded as a revisit of its record."""
    cwd = workdir(tmp_path)
    collection = cwd / "collection"
    collection.mkdir()
    for name in ("warcprox.warc.gz", "pywb-example.arc.gz"):
        (collection / name).write_bytes((corpus / name).read_bytes())
    indexed = doc.run(INDEX, cwd=cwd)
    assert indexed.returncode == 0, indexed.stderr
    names = {
        _fields(line)["filename"] for line in (collection / "index.cdxj").read_text().splitlines()
    }
    assert names == {"warcprox.warc.gz", "pywb-example.arc.gz"}
    checked = doc.run(VERIFY, cwd=cwd)
    assert checked.returncode == 0 and checked.stdout.rstrip().endswith("VERIFY OK"), checked.stdout
    site = local_site()
    with site.running_in_thread():
        crawled = doc.run(DEDUP, cwd=cwd, replace={"https://example.com/": site.url("/")})
    assert crawled.returncode == 0, crawled.stderr
    revisits = [r for r in read_records(cwd / "crawls" / "again" / "warcs") if r.type == "revisit"]
    (image,) = [r for r in revisits if str(r.get("WARC-Target-URI")).endswith("/i.png")]
    assert str(image.get("WARC-Refers-To-Target-URI")).endswith("/i.png")
    assert image.get("WARC-Refers-To") is not None  # warcprox's record id
