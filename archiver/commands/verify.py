"""The judge behind ``archiver verify``: are these WARC files (and their CDXJ index) sound?

warcio and fastwarc hash chunked bodies with their framing (against WARC 1.1 §6.3.2, see
iipc/warc-specifications#22) and miss a truncated last member, so they cannot judge our output.
This module reads every file through :mod:`archiver.warc.reader` (a member walk that trusts
nothing, and goes on after a damaged record so every one is reported) and checks, streaming
each block once through the hashers.

Every rule is of one of three kinds (:class:`Kind`), and the report keeps them apart:

* **WARC 1.x** (``standard``): what the standard requires of any file, judged by the file's own
  version (WARC/1.0 allows angle brackets around ``WARC-Target-URI`` and only whole seconds in
  ``WARC-Date``; WARC/1.1 the reverse): every gzip member valid and holding one record (annex
  D), mandatory fields (section 5), unique record ids, digests that match (section 5.9: the
  payload with the chunked coding removed and the content coding kept, via
  :mod:`archiver.index.payload`), revisits per their profile (section 6.7; a profile the reader
  does not know is reported and not interpreted, section 6.7.1); records other tools write that
  warcio and FastWARC still read (a quirk of the record grammar) are warnings;
* **archiver's own** (``archiver``): what archiver promises of the files it writes, beyond the
  standard: ``WARC/1.1`` only, a ``warcinfo`` first naming the file (implementation guidelines
  #3), every response or revisit followed by its request (same URI and date), sha1 Base32
  digests, the fields pywb needs to resolve a revisit. They judge the files archiver wrote (its
  ``warcinfo`` says ``software: archiver/``), and every file with ``archiver_rules``;
* **index**: a CDXJ index byte-sorted, every line's slice one record that matches it, every
  response and revisit with a line. The index is read as ``archiver index`` writes it (and
  cdxj-indexer): an uncompressed record's length without the empty lines after it, the target
  URI without WARC 1.0's angle brackets, spaces percent-encoded, metadata records indexed.

ARC files (:mod:`archiver.warc.arc`) are judged for their structure and against the index; the
WARC field rules do not apply to them.

Memory is constant per record; across records it grows only by what cross-record rules need
(record ids, and one small entry per response/revisit/resource for revisits and the index).
"""

from __future__ import annotations

import enum
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from archiver.digest import ALGORITHMS, Hasher, label, new_hasher, parse_label
from archiver.errors import WarcFormatError
from archiver.httphead import parse_status_line, start_line
from archiver.index.payload import BlockPayload, HttpPayload, computed_digest, payload_for
from archiver.warc.reader import (
    BlockSink,
    Damage,
    DamageKind,
    RecordHead,
    RecordInfo,
    iter_records,
    read_record_at,
    target_uri_of,
)

#: Findings kept in full per rule; the rest are only counted.
MAX_DETAILS = 200

_WARC_SUFFIXES = (".warc.gz", ".warc", ".arc.gz", ".arc", ".open")
_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z\Z")
#: WARC/1.0's date: whole seconds only (ISO 28500:2009 section 5.4)
_DATE_1_0 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\Z")
_RECORD_ID = re.compile(r"<[A-Za-z][A-Za-z0-9+.-]*:[^\s<>]+>\Z")
_BAD_URI_CHAR = re.compile(r"[\s<>\x00-\x1f\x7f]")
_ABSOLUTE_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_MANDATORY = ("WARC-Record-ID", "WARC-Date", "WARC-Type", "Content-Length")
#: lowercased names of fields that may appear once (WARC 1.1 section 5.1: only
#: WARC-Concurrent-To repeats; extension fields such as WARC-Protocol may repeat too)
_SINGULAR = frozenset(
    name.lower()
    for name in (
        *_MANDATORY,
        "Content-Type",
        "WARC-Target-URI",
        "WARC-Block-Digest",
        "WARC-Payload-Digest",
        "WARC-Refers-To",
        "WARC-Refers-To-Target-URI",
        "WARC-Refers-To-Date",
        "WARC-Profile",
        "WARC-Truncated",
        "WARC-Filename",
    )
)
_NEEDS_TARGET = ("response", "request", "revisit", "resource")
#: the profiles of WARC 1.1 section 6.7, as 1.1, 1.0 and the drafts 0.18 and 0.17 name them
_IDENTICAL = tuple(
    f"http://netpreserve.org/warc/{v}/revisit/identical-payload-digest"
    for v in ("1.1", "1.0", "0.18", "0.17")
)
_NOT_MODIFIED = tuple(
    f"http://netpreserve.org/warc/{v}/revisit/server-not-modified"
    for v in ("1.1", "1.0", "0.18", "0.17")
)
_PROFILES = (*_IDENTICAL, *_NOT_MODIFIED)
#: how archiver's warcinfo names its writer (a file with it is judged by archiver's rules)
_OURS = re.compile(rb"(?:\A|\n)software:[ \t]*archiver/")


class Severity(enum.StrEnum):
    ERROR = "error"  #: breaks a "shall" of the standard or one of archiver's promises: fails
    WARNING = "warning"  #: a "should", or something we could not check


class Kind(enum.StrEnum):
    """Whose rule a finding breaks (see the module docstring)."""

    STANDARD = "standard"  #: violates WARC 1.x (the file's own version)
    ARCHIVER = "archiver"  #: not what archiver writes (its own files, or --archiver-rules)
    INDEX = "index"  #: the CDXJ index does not match the files


S, A, X = Kind.STANDARD, Kind.ARCHIVER, Kind.INDEX
E, W = Severity.ERROR, Severity.WARNING
#: Every rule, its severity, its kind and what it means; the CLI documents this table.
RULES: dict[str, tuple[Severity, Kind, str]] = {
    "no-files": (E, S, "no WARC or ARC file found"),
    "file-unreadable": (E, S, "a file cannot be read"),
    "not-closed": (E, S, "a file still ends in .open: its writer did not finish"),
    "gzip-member-cut": (E, S, "the file ends inside a gzip member (crash tail)"),
    "gzip-member-corrupt": (E, S, "invalid gzip data (deflate, CRC or length check)"),
    "gzip-multi-record": (E, S, "a gzip member holds several records (annex D)"),
    "trailing-garbage": (E, S, "bytes that are no record (after the last, or between two)"),
    "record-malformed": (E, S, "a member or record is not one well-formed record"),
    "record-quirk": (W, S, "a record outside section 4's grammar that warcio still reads"),
    "mandatory-field": (E, S, "a mandatory field is missing"),
    "field-repeated": (E, S, "a non-repeatable field appears twice"),
    "record-id-syntax": (E, S, "a record id is not <URI> without whitespace"),
    "record-id-duplicate": (E, S, "a WARC-Record-ID is used twice"),
    "date-syntax": (E, S, "WARC-Date is not a UTC W3CDTF timestamp its version allows"),
    "target-uri": (E, S, "WARC-Target-URI has whitespace, brackets (1.1) or is relative"),
    "digest-syntax": (E, S, "a digest value cannot be decoded"),
    "digest-algorithm": (W, S, "a digest algorithm archiver cannot check"),
    "block-digest": (E, S, "WARC-Block-Digest does not match the block"),
    "payload-digest": (E, S, "WARC-Payload-Digest does not match the payload"),
    "payload-unreadable": (W, S, "the HTTP payload could not be located"),
    "revisit-fields": (E, S, "a revisit lacks WARC-Profile, or its profile's payload digest"),
    "revisit-truncated": (E, S, "an identical-payload revisit's block lacks WARC-Truncated"),
    "revisit-profile": (W, S, "an unknown revisit profile: not interpreted (6.7.1)"),
    "revisit-digest": (E, S, "a revisit's payload digest differs from its original's"),
    "revisit-refers": (E, S, "Refers-To-Target-URI/-Date differ from the original"),
    "version": (E, A, "the version line is not WARC/1.1"),
    "warcinfo-first": (E, A, "the first record is not a warcinfo record"),
    "warcinfo-filename": (E, A, "warcinfo WARC-Filename differs from the file name"),
    "warcinfo-content-type": (W, A, "warcinfo is not application/warc-fields"),
    "digest-encoding": (W, A, "a digest not in canonical form (sha1 Base32)"),
    "payload-digest-missing": (W, A, "a response without WARC-Payload-Digest"),
    "request-missing": (E, A, "a response/revisit not followed by its request"),
    "request-mismatch": (E, A, "a request's URI or date differs from its response's"),
    "orphan-request": (E, A, "a request not right after the response it names"),
    "metadata-unlinked": (W, A, "metadata Concurrent-To names another capture"),
    "revisit-refers-missing": (E, A, "a revisit lacks Refers-To-Target-URI/-Date (pywb)"),
    "index-file": (E, X, "the index file cannot be read"),
    "index-syntax": (E, X, "an index line is not 'key timestamp {json}'"),
    "index-sorted": (E, X, "the index is not in byte order (LC_ALL=C sort)"),
    "index-filename": (E, X, "an index line names a file that was not verified"),
    "index-slice": (E, X, "an index line's slice is not exactly one record"),
    "index-type": (E, X, "an index line points at a record that is not indexable"),
    "index-url": (E, X, "an index line's url differs from WARC-Target-URI"),
    "index-timestamp": (E, X, "an index line's timestamp differs from WARC-Date"),
    "index-digest": (E, X, "an index line's digest differs from the record's payload digest"),
    "index-status": (E, X, "an index line's status differs from the HTTP status"),
    "index-key": (E, X, "an index line's key differs from the URL's SURT"),
    "index-duplicate": (E, X, "two index lines point at the same record"),
    "index-missing": (E, X, "a response/revisit record has no index line"),
}
#: How the report names each kind.
KIND_TITLES = {
    Kind.STANDARD: "violates WARC 1.x",
    Kind.ARCHIVER: "not what archiver writes",
    Kind.INDEX: "the index",
}

_DAMAGE_RULES = {
    DamageKind.CUT: "gzip-member-cut",
    DamageKind.CORRUPT: "gzip-member-corrupt",
    DamageKind.MULTI: "gzip-multi-record",
    DamageKind.GARBAGE: "trailing-garbage",
    DamageKind.RECORD: "record-malformed",
}


@dataclass(frozen=True, slots=True)
class Finding:
    severity: Severity
    rule: str
    file: str
    offset: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.offset is None else f"{self.file}@{self.offset}"
        return f"{where}: {self.message}" if where else self.message


@dataclass(slots=True)
class VerifyReport:
    """Counters and findings. ``findings`` holds at most :data:`MAX_DETAILS` per rule;
    ``rule_counts`` counts them all."""

    files: int = 0
    #: files judged by archiver's own rules too (archiver wrote them, or archiver_rules)
    files_archiver: int = 0
    bytes: int = 0
    records: Counter[str] = field(default_factory=Counter)
    blocks_checked: int = 0
    blocks_failed: int = 0
    payloads_checked: int = 0
    payloads_failed: int = 0
    index_lines_checked: int = 0
    index_lines_failed: int = 0
    findings: list[Finding] = field(default_factory=list)
    rule_counts: Counter[str] = field(default_factory=Counter)

    @property
    def errors(self) -> int:
        return sum(n for rule, n in self.rule_counts.items() if _severity(rule) is Severity.ERROR)

    @property
    def warnings(self) -> int:
        return sum(self.rule_counts.values()) - self.errors

    @property
    def ok(self) -> bool:
        return self.errors == 0

    def add(self, rule: str, file: str, offset: int | None, message: str) -> None:
        self.rule_counts[rule] += 1
        if self.rule_counts[rule] <= MAX_DETAILS:
            self.findings.append(Finding(_severity(rule), rule, file, offset, message))


def _severity(rule: str) -> Severity:
    return RULES[rule][0]


def _kind(rule: str) -> Kind:
    return RULES[rule][1]


class _RecordCheck:
    """Digest checks and facts gathered while one record's block streams past."""

    __slots__ = ("_feeders", "block", "computed", "info", "payload", "problems", "sniff")

    def __init__(self, head: RecordHead, digests: bool) -> None:
        self.problems: list[tuple[str, str]] = []
        #: the start of a warcinfo block (who wrote the file)
        self.info = bytearray()
        #: the payload digest of a record that declares none (what ``archiver index`` gives
        #: its line): computed only when digests are checked
        self.computed: HttpPayload | BlockPayload | None = None
        #: (declared value, algorithm, hasher) of the block digest
        self.block: tuple[str, str, Hasher] | None = None
        #: (declared value, algorithm, what computes it) of the payload digest
        self.payload: tuple[str, str, HttpPayload | Hasher] | None = None
        self.sniff = bytearray()
        self._feeders: list[Callable[[memoryview], object]] = []
        kind = head.record_type
        ctype = (head.get("Content-Type") or "").replace(" ", "").lower()
        is_http = ctype.startswith("application/http")
        if kind in ("response", "revisit") and is_http:
            self._feeders.append(self._sniff)
        if kind == "warcinfo":
            self._feeders.append(self._keep_info)
        if not digests:
            return
        self.computed = payload_for(head)
        if self.computed is not None:
            self._feeders.append(self.computed.feed)
        declared = self._algorithm(head, "WARC-Block-Digest")
        if declared is not None:
            hasher = new_hasher(declared[1])
            self.block = (*declared, hasher)
            self._feeders.append(hasher.update)
        if kind not in ("response", "request", "resource") or head.get("WARC-Segment-Number"):
            return  # revisits name the original's payload; segments are not checked
        declared = self._algorithm(head, "WARC-Payload-Digest")
        if declared is None:
            return
        payload: HttpPayload | Hasher
        if is_http and kind != "resource":
            payload = HttpPayload(declared[1], request=kind == "request")
            self._feeders.append(payload.feed)
        else:  # not HTTP: the payload is the whole block (WARC 1.1 section 5.9)
            payload = new_hasher(declared[1])
            self._feeders.append(payload.update)
        self.payload = (*declared, payload)

    def _algorithm(self, head: RecordHead, name: str) -> tuple[str, str] | None:
        """(value, algorithm) of a digest field we can check; problems are noted."""
        value = head.get(name)
        if value is None:
            return None
        algorithm = value.partition(":")[0].strip().lower().replace("-", "")
        if algorithm in ALGORITHMS:
            return value, algorithm
        try:
            algorithm, _ = parse_label(value)
        except ValueError:
            self.problems.append(("digest-syntax", f"{name} {value!r} cannot be decoded"))
        else:
            self.problems.append(("digest-algorithm", f"{name} uses {algorithm}: not checked"))
        return None

    def _keep_info(self, data: memoryview) -> None:
        if len(self.info) < 4096:
            self.info += data[: 4096 - len(self.info)]

    def _sniff(self, data: memoryview) -> None:
        if len(self.sniff) < 32:
            self.sniff += data[: 32 - len(self.sniff)]

    def sink(self) -> BlockSink | None:
        feeders = self._feeders
        if not feeders:
            return None
        if len(feeders) == 1:
            return feeders[0]

        def feed(data: memoryview) -> None:
            for feeder in feeders:
                feeder(data)

        return feed

    @property
    def status(self) -> int | None:
        status_line = parse_status_line(start_line(self.sniff))
        return status_line.status if status_line is not None else None


@dataclass(slots=True)
class _Target:
    """What cross-record rules need of a response, revisit or resource record."""

    file: str
    offset: int
    length: int  #: as an index line gives it (uncompressed: without the empty lines after)
    kind: str
    uri: str | None  #: the URI WARC-Target-URI names (RecordHead.target)
    date: str | None
    payload_digest: str | None  #: declared, or else computed (None when neither)
    status: int | None
    extent: int = 0  #: the record's bytes in the file, empty lines after it included


@dataclass(slots=True)
class _Revisit:
    file: str
    offset: int
    digest: str | None
    refers_to: str | None
    refers_uri: str | None
    refers_date: str | None


# ----------------------------------------------------------------------------- the verifier
class _Verifier:
    def __init__(
        self,
        report: VerifyReport,
        digests: bool,
        urlkey: Callable[[str], str] | None,
    ) -> None:
        self.report = report
        self.digests = digests
        self.urlkey = urlkey
        self.files: dict[str, Path] = {}
        self.ids: dict[str, str] = {}
        self.targets: dict[tuple[str, int], _Target] = {}
        self.by_id: dict[str, _Target] = {}
        self.revisits: list[_Revisit] = []
        self._basenames: dict[str, str | None] | None = None
        #: judge every file by archiver's own rules too, not only the files archiver wrote
        self.archiver_rules = False
        self._house = False  #: archiver's rules apply to the file being read

    def add(self, rule: str, file: str, offset: int | None, message: str) -> None:
        if _kind(rule) is Kind.ARCHIVER and not self._house:
            return
        self.report.add(rule, file, offset, message)

    # --------------------------------------------------------------------- one file
    def check_file(self, path: Path, name: str) -> None:
        report = self.report
        report.files += 1
        report.bytes += path.stat().st_size
        self.files[name] = path
        final_name = path.name
        if final_name.endswith(".open"):
            self.add("not-closed", name, None, "file still ends in .open (writer not finished)")
            final_name = final_name.removesuffix(".open")
        current: list[_RecordCheck] = []

        def on_block(head: RecordHead) -> BlockSink | None:
            check = _RecordCheck(head, self.digests)
            current[:] = [check]
            return check.sink()

        first = True
        self._house = self.archiver_rules
        awaiting: RecordInfo | None = None  # a response/revisit waiting for its request
        capture_head: str | None = None  # id of the record metadata may name
        for item in iter_records(path, on_block=on_block, resync=True):
            if isinstance(item, Damage):
                skipped = f" ({item.skipped})" if item.skipped else ""
                self.add(_DAMAGE_RULES[item.kind], name, item.offset, item.reason + skipped)
                if awaiting is not None:
                    self._request_missing(awaiting, name)
                awaiting, capture_head = None, None
                continue
            rec = item
            kind = rec.record_type
            report.records[kind or "(none)"] += 1
            check = current[0]
            for quirk in rec.quirks:
                self.add("record-quirk", name, rec.offset, quirk)
            if first:
                first = False
                if kind == "warcinfo" and _OURS.search(check.info) is not None:
                    self._house = True
                if self._house:
                    report.files_archiver += 1
                if not rec.is_arc:
                    self._check_warcinfo(rec, name, final_name)
            if rec.is_arc:  # ARC: no WARC fields to judge, no digests declared
                if kind == "response":
                    self._remember(rec, check, name)
                continue
            self._check_fields(rec, name)
            self._check_digests(rec, check, name)
            # pairing (archiver's rule): response/revisit, then at once its request
            if awaiting is not None:
                resp, awaiting = awaiting, None
                if kind == "request" and resp.record_id in rec.get_all("WARC-Concurrent-To"):
                    self._check_pair(resp, rec, name)
                else:
                    self._request_missing(resp, name)
                    if kind == "request":
                        self._orphan(rec, name)
            elif kind == "request":
                self._orphan(rec, name)
            if kind in ("response", "revisit"):
                awaiting = rec
            if kind in ("response", "revisit", "resource", "metadata"):
                self._remember(rec, check, name)
            if kind in ("response", "revisit", "resource"):
                capture_head = rec.record_id
            elif kind == "warcinfo":
                capture_head = None
            elif kind == "metadata":
                linked = rec.get_all("WARC-Concurrent-To")
                if linked and capture_head not in linked:
                    self.add(
                        "metadata-unlinked",
                        name,
                        rec.offset,
                        f"metadata Concurrent-To {', '.join(linked)} names no record of the "
                        "capture it follows",
                    )
            if kind == "revisit":
                self._check_revisit(rec, name)
        if first:
            self.add("warcinfo-first", name, None, "the file holds no record")
        if awaiting is not None:
            self._request_missing(awaiting, name)

    def _check_warcinfo(self, rec: RecordInfo, name: str, final_name: str) -> None:
        if rec.record_type != "warcinfo":
            self.add(
                "warcinfo-first",
                name,
                rec.offset,
                f"the first record is a {rec.record_type or 'typeless'} record, not warcinfo",
            )
            return
        filename = rec.get("WARC-Filename")
        if filename != final_name:
            self.add(
                "warcinfo-filename",
                name,
                rec.offset,
                f"WARC-Filename is {filename!r}, the file is {final_name!r}",
            )
        ctype = (rec.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/warc-fields":
            self.add(
                "warcinfo-content-type",
                name,
                rec.offset,
                f"Content-Type {rec.get('Content-Type')!r}",
            )

    def _check_fields(self, rec: RecordInfo, name: str) -> None:
        off = rec.offset
        if rec.version != "WARC/1.1":
            self.add("version", name, off, f"version line {rec.version}, policy is WARC/1.1")
        version_1_0 = rec.version != "WARC/1.1"
        for field_name in _MANDATORY:
            if rec.get(field_name) is None:
                self.add("mandatory-field", name, off, f"no {field_name}")
        for field_name in rec.repeated():
            if field_name in _SINGULAR:
                count = len(rec.get_all(field_name))
                self.add("field-repeated", name, off, f"{field_name} appears {count} times")
        kind = rec.record_type
        rid = rec.record_id
        if rid is not None:
            if not _RECORD_ID.match(rid):
                self.add("record-id-syntax", name, off, f"WARC-Record-ID {rid!r}")
            seen = self.ids.get(rid)
            if seen is not None:
                self.add("record-id-duplicate", name, off, f"{rid} is also at {seen}")
            else:
                self.ids[rid] = f"{name}@{off}"
        for field_name in ("WARC-Concurrent-To", "WARC-Refers-To", "WARC-Warcinfo-ID"):
            for value in rec.get_all(field_name):
                if not _RECORD_ID.match(value):
                    self.add("record-id-syntax", name, off, f"{field_name} {value!r}")
        date = rec.date
        if date is not None and not (_DATE_1_0 if version_1_0 else _DATE).match(date):
            whole = " (WARC/1.0 dates have whole seconds)" if _DATE.match(date) else ""
            self.add("date-syntax", name, off, f"WARC-Date {date!r}{whole}")
        target = rec.target_uri
        if target is None:
            if kind in _NEEDS_TARGET:
                self.add("mandatory-field", name, off, f"{kind} record without WARC-Target-URI")
            return
        if version_1_0 and target.startswith("<") and target.endswith(">"):
            target = target[1:-1]  # WARC/1.0's uri rule is "<" URI ">" (Wget writes it so)
        if _BAD_URI_CHAR.search(target) or not _ABSOLUTE_URI.match(target):
            self.add("target-uri", name, off, f"WARC-Target-URI {rec.target_uri!r}")

    def _check_digests(self, rec: RecordInfo, check: _RecordCheck, name: str) -> None:
        report = self.report
        for rule, message in check.problems:
            self.add(rule, name, rec.offset, message)
        if check.block is not None:
            value, algorithm, hasher = check.block
            got = hasher.digest()
            same = self._compare("WARC-Block-Digest", value, algorithm, got, rec=rec, name=name)
            if same is not None:
                report.blocks_checked += 1
                if not same:
                    report.blocks_failed += 1
        if check.payload is not None:
            value, algorithm, payload = check.payload
            result = payload.result() if isinstance(payload, HttpPayload) else payload.digest()
            if isinstance(result, str):
                self.add("payload-unreadable", name, rec.offset, result)
                return
            same = self._compare(
                "WARC-Payload-Digest", value, algorithm, result, rec=rec, name=name
            )
            if same is not None:
                report.payloads_checked += 1
                if not same:
                    report.payloads_failed += 1
        elif self.digests and rec.record_type == "response" and not rec.get("WARC-Payload-Digest"):
            self.add(
                "payload-digest-missing", name, rec.offset, "response without a payload digest"
            )

    def _compare(
        self, field_name: str, value: str, algorithm: str, got: bytes, *, rec: RecordInfo, name: str
    ) -> bool | None:
        """Whether a declared digest matches; None when the value cannot be decoded."""
        computed = label(algorithm, got)
        if computed == value.strip():  # the usual case: one encode, no decode
            return True
        try:
            _, want = parse_label(value)
        except ValueError:
            self.add("digest-syntax", name, rec.offset, f"{field_name} {value!r} cannot be decoded")
            return None
        if want == got:
            self.add("digest-encoding", name, rec.offset, f"{field_name} {value!r}, not {computed}")
            return True
        rule = "block-digest" if field_name == "WARC-Block-Digest" else "payload-digest"
        what = "the block" if rule == "block-digest" else "the payload (de-chunked, still encoded)"
        self.add(rule, name, rec.offset, f"{field_name} {value}, {what} hashes to {computed}")
        return False

    def _check_pair(self, resp: RecordInfo, req: RecordInfo, name: str) -> None:
        for field_name in ("WARC-Target-URI", "WARC-Date"):
            if resp.get(field_name) != req.get(field_name):
                self.add(
                    "request-mismatch",
                    name,
                    req.offset,
                    f"request {field_name} {req.get(field_name)!r}, its {resp.record_type} "
                    f"has {resp.get(field_name)!r}",
                )

    def _request_missing(self, resp: RecordInfo, name: str) -> None:
        self.add(
            "request-missing",
            name,
            resp.offset,
            f"{resp.record_type} {resp.record_id} for {resp.target_uri} is not followed by a "
            "request naming it in WARC-Concurrent-To",
        )

    def _orphan(self, rec: RecordInfo, name: str) -> None:
        linked = ", ".join(rec.get_all("WARC-Concurrent-To")) or "nothing"
        self.add(
            "orphan-request",
            name,
            rec.offset,
            f"request for {rec.target_uri} (Concurrent-To {linked}) does not follow its response",
        )

    def _remember(self, rec: RecordInfo, check: _RecordCheck, name: str) -> None:
        digest = rec.get("WARC-Payload-Digest")
        if digest is None and check.computed is not None:
            digest = computed_digest(check.computed)
        target = _Target(
            file=name,
            offset=rec.offset,
            length=rec.index_length,
            kind=rec.record_type,
            uri=rec.target,
            date=rec.date,
            payload_digest=digest,
            status=check.status if rec.record_type == "response" else None,
            extent=rec.length,
        )
        self.targets[(name, rec.offset)] = target
        if rec.record_id is not None:
            self.by_id.setdefault(rec.record_id, target)

    def _check_revisit(self, rec: RecordInfo, name: str) -> None:
        """WARC 1.1 section 6.7: the profile decides what a revisit must carry; a reader that
        does not know the profile "shall not attempt to interpret" the record (6.7.1)."""
        off = rec.offset
        profile = rec.get("WARC-Profile")
        if not profile:
            self.add("revisit-fields", name, off, "revisit without WARC-Profile")
            return
        if profile not in _PROFILES:
            self.add("revisit-profile", name, off, f"WARC-Profile {profile!r}: not interpreted")
            return
        identical = profile in _IDENTICAL
        if identical and not rec.get("WARC-Payload-Digest"):
            self.add("revisit-fields", name, off, f"{profile} revisit without WARC-Payload-Digest")
        missing = [
            f for f in ("WARC-Refers-To-Target-URI", "WARC-Refers-To-Date") if not rec.get(f)
        ]
        if missing:
            self.add("revisit-refers-missing", name, off, f"revisit without {', '.join(missing)}")
        if identical and rec.content_length > 0 and rec.get("WARC-Truncated") != "length":
            self.add(
                "revisit-truncated",
                name,
                off,
                f"revisit keeps a {rec.content_length}-byte block but WARC-Truncated is "
                f"{rec.get('WARC-Truncated')!r}, not 'length' (section 6.7.2)",
            )
        self.revisits.append(
            _Revisit(
                file=name,
                offset=off,
                digest=rec.get("WARC-Payload-Digest") if identical else None,
                refers_to=rec.get("WARC-Refers-To"),
                refers_uri=rec.get("WARC-Refers-To-Target-URI"),
                refers_date=rec.get("WARC-Refers-To-Date"),
            )
        )

    # --------------------------------------------------------------------- across files
    def resolve_revisits(self) -> None:
        by_uri_date: dict[tuple[str | None, str | None], _Target] | None = None
        for rev in self.revisits:
            original = self.by_id.get(rev.refers_to) if rev.refers_to else None
            if original is not None:
                refers_uri = target_uri_of(rev.refers_uri) if rev.refers_uri else None
                for have, want, what in (
                    (refers_uri, original.uri, "WARC-Refers-To-Target-URI"),
                    (rev.refers_date, original.date, "WARC-Refers-To-Date"),
                ):
                    if have is not None and have != want:
                        self.add(
                            "revisit-refers",
                            rev.file,
                            rev.offset,
                            f"{what} {have!r}, the record {rev.refers_to} has {want!r}",
                        )
            elif rev.refers_uri and rev.refers_date:
                if by_uri_date is None:
                    by_uri_date = {}
                    for target in self.targets.values():
                        by_uri_date.setdefault((target.uri, target.date), target)
                original = by_uri_date.get((target_uri_of(rev.refers_uri), rev.refers_date))
            if original is None or not original.payload_digest or not rev.digest:
                continue
            if not _same_digest(rev.digest, original.payload_digest):
                self.add(
                    "revisit-digest",
                    rev.file,
                    rev.offset,
                    f"payload digest {rev.digest}, the original at {original.file}@"
                    f"{original.offset} has {original.payload_digest}",
                )

    def check_index(self, index: Path) -> None:
        report = self.report
        label_ = index.name
        matched: set[tuple[str, int]] = set()
        previous: bytes | None = None
        try:
            with open(index, "rb") as fh:
                for lineno, raw in enumerate(fh, 1):
                    line = raw.rstrip(b"\n")
                    if previous is not None and line < previous:
                        self.add(
                            "index-sorted",
                            label_,
                            None,
                            f"line {lineno} sorts before line {lineno - 1} in byte order",
                        )
                    previous = line
                    if not line or line.startswith(b"!"):
                        continue
                    report.index_lines_checked += 1
                    failed_before = sum(report.rule_counts.values())
                    self._check_index_line(label_, lineno, line, matched)
                    if sum(report.rule_counts.values()) > failed_before:
                        report.index_lines_failed += 1
        except OSError as exc:
            self.add("index-file", label_, None, f"cannot read {index}: {exc}")
            return
        for (name, offset), target in self.targets.items():
            if target.kind in ("response", "revisit") and (name, offset) not in matched:
                self.add("index-missing", name, offset, f"{target.kind} {target.uri} not indexed")

    def _check_index_line(
        self, label_: str, lineno: int, line: bytes, matched: set[tuple[str, int]]
    ) -> None:
        def bad(rule: str, message: str) -> None:
            self.add(rule, label_, None, f"line {lineno}: {message}")

        parts = line.split(b" ", 2)
        try:
            if len(parts) != 3:
                raise ValueError("not three space-separated fields")
            key, stamp = parts[0].decode("utf-8"), parts[1].decode("ascii")
            obj = json.loads(parts[2])
            if not isinstance(obj, dict):
                raise ValueError("the JSON block is not an object")
            url, filename = obj["url"], obj["filename"]
            offset, length = int(obj["offset"]), int(obj["length"])
            if not isinstance(url, str) or not isinstance(filename, str):
                raise ValueError("url and filename must be strings")
        except (ValueError, KeyError, TypeError) as exc:
            bad("index-syntax", f"{exc!s}: {line[:120]!r}")
            return
        name = self._resolve(filename)
        path = self.files.get(name) if name is not None else None
        if name is None or path is None:
            bad("index-filename", f"filename {filename!r} is not among the verified files")
            return
        target = self.targets.get((name, offset))
        if target is None or length not in (target.length, target.extent):
            target = self._slice_target(path, name, offset, length, bad)
            if target is None:
                return
        if (name, offset) in matched:
            bad("index-duplicate", f"a second line for {name}@{offset}")
        matched.add((name, offset))
        if target.kind not in ("response", "revisit", "resource", "metadata"):
            bad("index-type", f"{name}@{offset} is a {target.kind or 'typeless'} record")
        if url != target.uri:
            bad("index-url", f"url {url!r}, WARC-Target-URI {target.uri!r}")
        want_stamp = re.sub(r"\D", "", target.date or "")[:14]
        if stamp != want_stamp:
            bad("index-timestamp", f"timestamp {stamp}, WARC-Date {target.date}")
        digest = obj.get("digest")
        if digest is not None and (
            target.payload_digest is None or not _same_digest(str(digest), target.payload_digest)
        ):
            bad("index-digest", f"digest {digest!r}, the payload's {target.payload_digest!r}")
        status = obj.get("status")
        if (
            status not in (None, "-")
            and target.status is not None
            and str(status) != str(target.status)
        ):
            bad("index-status", f"status {status!r}, the HTTP status is {target.status}")
        if self.urlkey is not None:
            try:
                want_key = self.urlkey(url)
            except ValueError as exc:
                bad("index-key", f"no SURT for {url!r}: {exc}")
            else:
                if key != want_key:
                    bad("index-key", f"key {key!r}, SURT of the url is {want_key!r}")

    def _resolve(self, filename: str) -> str | None:
        """The verified file an index ``filename`` names: its path relative to the directory
        given to verify, or failing that its base name when only one file has it (the index
        may be relative to a subdirectory of what was given)."""
        name = filename.removeprefix("./")
        if name in self.files:
            return name
        if self._basenames is None:
            self._basenames = {}
            for known in self.files:
                base = known.rsplit("/", 1)[-1]
                self._basenames[base] = None if base in self._basenames else known
        return self._basenames.get(name.rsplit("/", 1)[-1])

    def _slice_target(
        self,
        path: Path,
        name: str,
        offset: int,
        length: int,
        bad: Callable[[str, str], None],
    ) -> _Target | None:
        """Read a slice the walk did not find as a record, to say what is wrong with it."""
        known = self.targets.get((name, offset))
        try:
            rec = read_record_at(path, offset, length)
        except (WarcFormatError, OSError) as exc:
            hint = f" (the record there is {known.length} bytes)" if known is not None else ""
            bad("index-slice", f"{name}@{offset}+{length} is not one whole record{hint}: {exc}")
            return None
        return _Target(
            file=name,
            offset=offset,
            length=length,
            kind=rec.record_type,
            uri=rec.target,
            date=rec.date,
            payload_digest=rec.get("WARC-Payload-Digest"),
            status=None,
            extent=rec.length,
        )


def _same_digest(a: str, b: str) -> bool:
    """Equal digests whatever their encoding; a CDX digest without a label is sha1."""

    def norm(value: str) -> tuple[str, bytes] | str:
        text = value.strip()
        try:
            return parse_label(text if ":" in text else f"sha1:{text}")
        except ValueError:
            return text

    return norm(a) == norm(b)


def _discover(paths: Sequence[str | os.PathLike[str]]) -> Iterator[tuple[Path, str]]:
    """(path, name) of every WARC file: ``name`` is relative to the directory searched (what an
    index's ``filename`` holds), or the file name for files given directly."""
    for given in paths:
        root = Path(given)
        if root.is_dir():
            found = sorted(
                p for p in root.rglob("*") if p.is_file() and p.name.endswith(_WARC_SUFFIXES)
            )
            for path in found:
                yield path, path.relative_to(root).as_posix()
        else:
            yield root, root.name


def verify(
    paths: Sequence[str | os.PathLike[str]],
    *,
    index: str | os.PathLike[str] | None = None,
    digest_checks: bool = True,
    urlkey: Callable[[str], str] | None = None,
    archiver_rules: bool = False,
) -> VerifyReport:
    """Check WARC and ARC files (directories are searched recursively) and optionally their
    CDXJ index.

    Every file is judged by WARC 1.x; archiver's own rules judge the files archiver wrote, and
    every file with ``archiver_rules``. ``urlkey`` (e.g. the crawler's SURT function) turns on
    the index key check; without it keys are not judged. ``digest_checks=False`` skips hashing
    (a structure-only pass).
    """
    report = VerifyReport()
    verifier = _Verifier(report, digest_checks, urlkey)
    verifier.archiver_rules = archiver_rules
    for path, name in _discover(paths):
        try:
            verifier.check_file(path, name)
        except OSError as exc:
            report.add("file-unreadable", name, None, f"cannot read {path}: {exc}")
    if report.files == 0:
        report.add("no-files", "", None, "no *.warc.gz, *.warc, *.arc.gz, *.arc or *.open file")
    verifier.resolve_revisits()
    if index is not None:
        verifier.check_index(Path(index))
    return report


# ----------------------------------------------------------------------------- output
def _size(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"  # pragma: no cover


def render(report: VerifyReport, *, details: int = 3) -> str:
    """A short human summary: counters, the failing rules of each kind (WARC 1.x, archiver's
    own, the index) with their first details, and a last line ``VERIFY OK`` or
    ``VERIFY FAILED``."""
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(report.records.items()))
    lines = [
        f"{report.files} files, {sum(report.records.values())} records ({kinds or 'none'}), "
        f"{_size(report.bytes)}; judged by WARC 1.x, {report.files_archiver} of them by "
        "archiver's own rules too",
        f"blocks: {report.blocks_checked} checked, {report.blocks_failed} failed; "
        f"payloads: {report.payloads_checked} checked, {report.payloads_failed} failed; "
        f"index lines: {report.index_lines_checked} checked, {report.index_lines_failed} failed",
    ]
    for kind in Kind:
        rules = [r for r in report.rule_counts if _kind(r) is kind]
        if not rules:
            continue
        lines.append(f"{KIND_TITLES[kind]}:")
        order = sorted(rules, key=lambda r: (_severity(r) is not Severity.ERROR, r))
        for rule in order:
            count = report.rule_counts[rule]
            lines.append(f"  {_severity(rule).upper()} {rule} ({count}): {RULES[rule][2]}")
            shown = [f for f in report.findings if f.rule == rule][:details]
            lines.extend(f"    {finding}" for finding in shown)
            if count > len(shown):
                lines.append(f"    ... and {count - len(shown)} more")
    lines.append("VERIFY OK" if report.ok else "VERIFY FAILED")
    return "\n".join(lines)


def to_json(report: VerifyReport) -> dict[str, object]:
    """The report as JSON-ready data (the CLI's ``--json``)."""
    return {
        "ok": report.ok,
        "files": report.files,
        "files_archiver_rules": report.files_archiver,
        "bytes": report.bytes,
        "records": dict(report.records),
        "blocks": {"checked": report.blocks_checked, "failed": report.blocks_failed},
        "payloads": {"checked": report.payloads_checked, "failed": report.payloads_failed},
        "index_lines": {
            "checked": report.index_lines_checked,
            "failed": report.index_lines_failed,
        },
        "errors": report.errors,
        "warnings": report.warnings,
        "rules": {
            rule: {"severity": str(_severity(rule)), "kind": str(_kind(rule)), "count": n}
            for rule, n in sorted(report.rule_counts.items())
        },
        "findings": [
            {
                "severity": str(f.severity),
                "kind": str(_kind(f.rule)),
                "rule": f.rule,
                "file": f.file,
                "offset": f.offset,
                "message": f.message,
            }
            for f in report.findings
        ],
    }
