"""README's first crawl and what follows it, each command as written, on the sample site.

One crawl of ``archiver serve-sample`` (the README's ``https://example.org/`` replaced by its
URL) makes ``crawls/example``; verify, report, wacz, ignore and the next day's dedup crawl then
start at once on it, and the two replay commands take turns on pywb's default port while the
dedup crawl runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.registry import documents
from tests.docs.shell import DocShell, environment, fixed_port, read_until, workdir
from tests.support.tools import tools_venv, wacz_validate
from tests.support.warcs import responses

REPO = Path(__file__).resolve().parents[2]
CRAWL_SAMPLE = "./scripts/crawl-sample"
FIRST = ".venv/bin/archiver crawl https://example.org/ --output crawls/example"
VERIFY = "archiver verify crawls/example"
REPORT = "archiver report crawls/example"
WACZ = "archiver wacz crawls/example"
IGNORE = "archiver ignore crawls/example '/calendar/\\d{4}'"
REPLAY = "archiver replay crawls/example"
REPLAY_VENV = "archiver replay --pywb-venv ~/.pywb crawls/example"
DAY2 = (
    "archiver crawl https://example.org/ --output crawls/day2 --dedup-from crawls/day1 "
    "--revalidate-from crawls/day1 --wacz"
)
EXAMPLE = "https://example.org/"
PYWB_PORT = 8080  #: archiver replay's default


@pytest.fixture(scope="module")
def sample() -> Iterator[str]:
    """``archiver serve-sample`` on a free port, as ``scripts/crawl-sample`` starts it."""
    server = subprocess.Popen(
        ["archiver", "serve-sample", "--port", "0"],
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line, _ = read_until(server.stdout, r"sample site at http://127\.0\.0\.1:\d+/")
        yield line.split(" at ")[1].split()[0]
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)


@dataclass
class FirstCrawl:
    cwd: Path
    done: subprocess.CompletedProcess[str]

    @property
    def out(self) -> Path:
        return self.cwd / "crawls" / "example"


@pytest.fixture(scope="module")
def first(doc: DocShell, sample: str, tmp_path_factory: pytest.TempPathFactory) -> FirstCrawl:
    cwd = workdir(tmp_path_factory.mktemp("readme"))
    return FirstCrawl(cwd, doc.run(FIRST, cwd=cwd, replace={EXAMPLE: sample}))


@dataclass
class After:
    """The commands that use the first crawl, started at once; each test collects its own."""

    started: dict[str, subprocess.Popen[str]]
    day2: Path  #: where the next day's crawl runs (crawls/day1 there is the first crawl)

    def finished(self, command: str) -> tuple[int, str, str]:
        process = self.started[command]
        out, err = process.communicate(timeout=240)
        return process.returncode, out, err


@pytest.fixture(scope="module")
def after(
    doc: DocShell, first: FirstCrawl, sample: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[After]:
    assert first.done.returncode == 0, first.done.stderr[-3000:]
    day2 = workdir(tmp_path_factory.mktemp("day2"))
    (day2 / "crawls").mkdir()
    (day2 / "crawls" / "day1").symlink_to(first.out)
    started = {
        DAY2: doc.start(DAY2, cwd=day2, replace={EXAMPLE: sample}),
        VERIFY: doc.start(VERIFY, cwd=first.cwd),
        REPORT: doc.start(REPORT, cwd=first.cwd),
        WACZ: doc.start(WACZ, cwd=first.cwd),
        IGNORE: doc.start(IGNORE, cwd=first.cwd),
    }
    yield After(started, day2)
    for process in started.values():
        if process.poll() is None:
            process.kill()
        process.communicate()


@dataclass
class SampleScript:
    process: subprocess.Popen[str]
    out: Path


@pytest.fixture(scope="module", autouse=True)
def crawl_sample(doc: DocShell, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SampleScript]:
    """``./scripts/crawl-sample``, started with the module (it serves and crawls a sample site
    of its own), from the checkout as the README's first lines say. SAMPLE_OUTPUT (the script's
    variable for where the crawl goes) keeps the checkout clean; PIP_NO_INDEX proves "no
    internet needed": an installed .venv is not installed again."""
    out = tmp_path_factory.mktemp("crawl-sample") / "sample"
    env = {"SAMPLE_OUTPUT": str(out), "PIP_NO_INDEX": "1"}
    process = doc.start(CRAWL_SAMPLE, cwd=REPO, env=env)
    yield SampleScript(process, out)
    if process.poll() is None:
        process.kill()
    process.communicate()


@documents(FIRST)
def test_first_crawl(first: FirstCrawl, sample: str) -> None:
    assert first.done.returncode == 0, first.done.stderr[-3000:]
    summary = json.loads((first.out / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["seeds"] == [sample]
    captured = {str(r.uri) for r in responses(first.out / "warcs")}
    assert sample in captured and sample + "robots.txt" in captured
    assert not [url for url in captured if "/private/" in url]  # robots.txt obeyed
    index = (first.out / "index.cdxj").read_text().splitlines()
    assert len(index) == summary["captures"] >= 30
    assert (first.out / "crawl.log.jsonl").is_file()


@documents(VERIFY)
def test_verify(after: After) -> None:
    code, out, err = after.finished(VERIFY)
    assert code == 0 and "VERIFY OK" in out, out + err


@documents(REPORT)
def test_report(after: After, first: FirstCrawl, sample: str) -> None:
    code, out, err = after.finished(REPORT)
    assert code == 0, out + err
    report = (first.out / "report.html").read_text()
    assert report.startswith("<!DOCTYPE html>") and sample in report


@documents(WACZ)
def test_wacz(after: After, first: FirstCrawl) -> None:
    code, out, err = after.finished(WACZ)
    assert code == 0, out + err
    package = first.out / "example.wacz"  # the path the README gives ReplayWeb.page
    valid, report = wacz_validate(package)
    assert valid, report


@documents(IGNORE)
def test_ignore(after: After, first: FirstCrawl) -> None:
    code, out, err = after.finished(IGNORE)
    assert code == 0, out + err
    assert (first.out / "ignores").read_text().splitlines()[-1] == "/calendar/\\d{4}"


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(REPLAY, marks=documents(REPLAY), id="wayback-on-path"),
        pytest.param(REPLAY_VENV, marks=documents(REPLAY_VENV), id="pywb-venv"),
    ],
)
def test_replay(
    doc: DocShell,
    after: After,
    first: FirstCrawl,
    sample: str,
    command: str,
    tmp_path: Path,
) -> None:
    """pywb is installed where the README says: its ``wayback`` on PATH for the first, a venv
    at ``~/.pywb`` for the second (HOME is a directory of the test in which ``.pywb`` is the
    suite's pywb environment)."""
    pywb = tools_venv()
    (tmp_path / ".pywb").symlink_to(pywb, target_is_directory=True)
    env = {"HOME": str(tmp_path)}
    if command == REPLAY:
        env["PATH"] = f"{environment()['PATH']}{os.pathsep}{pywb / 'bin'}"
    with fixed_port(PYWB_PORT):
        replay = doc.start(command, cwd=first.cwd, env=env)
        try:
            line, _ = read_until(replay.stdout, r"^archiver: pywb .* at http://")
            base = line.split(" at ")[1].split()[0]
            assert base.startswith(f"http://127.0.0.1:{PYWB_PORT}/"), line
            with urllib.request.urlopen(f"{base}id_/{sample}", timeout=60) as page:
                assert page.status == 200 and b"<title>" in page.read()
        finally:
            os.killpg(replay.pid, signal.SIGINT)
            _, err = replay.communicate(timeout=60)
    assert replay.returncode == 0, err[-3000:]


@documents(DAY2)
def test_next_days_crawl_stores_only_what_changed(after: After, first: FirstCrawl) -> None:
    code, out, err = after.finished(DAY2)
    assert code == 0, out + err[-3000:]
    day2 = after.day2 / "crawls" / "day2"
    summary = json.loads((day2 / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["revisits"] > 0
    warcs = {d["warc"] for d in summary["depends_on"]}
    assert warcs and all(Path(w).parent.resolve() == (first.out / "warcs").resolve() for w in warcs)
    assert (day2 / "day2.wacz").is_file()
    kinds = [r.type for r in responses(day2 / "warcs")]
    assert kinds.count("revisit") == summary["revisits"]


@documents(CRAWL_SAMPLE)
def test_crawl_sample(crawl_sample: SampleScript) -> None:
    out, err = crawl_sample.process.communicate(timeout=240)
    assert crawl_sample.process.returncode == 0, err[-3000:]
    assert "installing archiver" not in err
    assert "VERIFY OK" in out and "[crawl-sample] done" in err
    summary = json.loads((crawl_sample.out / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["captures"] >= 30
    assert list((crawl_sample.out / "warcs").glob("*.warc.gz"))
