"""The `archiver` command, run as a subprocess: real argv, real exit codes, real output.

One crawl of a local test site (module-scoped) feeds the index, verify, report and replay runs.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from archiver.commands.cli import build_parser, main, typed_overrides
from archiver.config.settings import option_name, setting_fields
from tests.docs.registry import documents
from tests.docs.shell import DocShell, workdir
from tests.support.site import SiteServer
from tests.support.tools import REPO_ROOT, tools_venv

PHOTO = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def archiver(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Run:
    proc = subprocess.run(
        [sys.executable, "-m", "archiver", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
        cwd=REPO_ROOT,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def archiver_many(*argvs: list[str], env: dict[str, str] | None = None) -> list[Run]:
    """Several `archiver` runs at once (each start-up imports aiohttp & co: ~0.6 s of CPU)."""
    return run_many(*([sys.executable, "-m", "archiver", *argv] for argv in argvs), env=env)


def run_many(*commands: list[str], env: dict[str, str] | None = None) -> list[Run]:
    procs = [
        subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO_ROOT,
        )
        for command in commands
    ]
    runs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        runs.append(Run(proc.returncode, out, err))
    return runs


def fast(*extra: str) -> list[str]:
    return [
        "--frontier", "memory", "--robots", "ignore", "--sitemaps", "off", "--per-host-delay", "0",
        *extra,
    ]  # fmt: skip


def build_site(site: SiteServer) -> set[str]:
    site.add_page(
        "/",
        '<html><head><title>Home</title><link rel="stylesheet" href="/s.css"></head><body>'
        '<a href="/a.html">a</a> <a href="/old">old</a> <a href="/missing.html">404</a>'
        '<img src="/img/photo.png"></body></html>',
    )
    site.add_page("/a.html", '<html><body><a href="/">home</a><img src="/copy.png"></body></html>')
    site.add_redirect("/old", "/a.html")
    site.add_file("/s.css", b"body { background: url(/img/bg.png) }", "text/css")
    site.add_file("/img/bg.png", PHOTO[:100], "image/png")
    site.add_file("/img/photo.png", PHOTO, "image/png")
    site.add_file("/copy.png", PHOTO, "image/png")
    paths = ["/", "/a.html", "/old", "/missing.html", "/s.css", "/img/bg.png", "/img/photo.png"]
    return {site.url(p) for p in [*paths, "/copy.png"]}


@dataclass
class Crawled:
    run: Run
    out: Path
    seed: str
    urls: set[str]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawled]:
    out = tmp_path_factory.mktemp("cli") / "crawl"
    with SiteServer().running_in_thread() as site:
        urls = build_site(site)
        # one fetch at a time: the copy of the photo is fetched after the original is written
        run = archiver("crawl", site.url("/"), "-o", str(out), *fast("--per-host-concurrency", "1"))
        yield Crawled(run, out, site.url("/"), urls)


# -- help, version, usage -------------------------------------------------------------------------


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_subcommand_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    names = sorted(subparsers())
    assert names == [
        "add",
        "crawl",
        "ignore",
        "index",
        "keygen",
        "login",
        "patch",
        "pause",
        "qa",
        "queue",
        "rebuild-frontier",
        "replay",
        "report",
        "serve-sample",
        "unpause",
        "verify",
        "version",
        "wacz",
    ]
    top = archiver("--help")  # `crawl --help` runs as a subprocess below
    assert top.code == 0 and top.err == ""
    for name in names:
        assert name in top.out
        with pytest.raises(SystemExit) as exited:
            main([name, "--help"])
        captured = capsys.readouterr()
        assert exited.value.code == 0, captured.err
        assert captured.out.startswith(f"usage: archiver {name}") and captured.err == ""


def test_every_option_explains_its_default() -> None:
    for name, parser in subparsers().items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction) or not action.option_strings:
                continue
            assert action.help and "default" in action.help, (name, action.option_strings)


@documents("archiver crawl --help")
def test_crawl_help_lists_every_setting(doc: DocShell, tmp_path: Path) -> None:
    done = doc.run("archiver crawl --help", cwd=workdir(tmp_path))
    assert done.returncode == 0 and done.stderr == ""
    text = done.stdout
    for f in setting_fields():
        if f.metadata["cli"]:
            assert option_name(f) in text, option_name(f)
    assert "--scope {page,prefix,host,domain,any}" in text
    assert "(default: 1GB)" in text and "(default: 30s)" in text and "(default: on)" in text


def test_version() -> None:
    run, flag = archiver_many(["version"], ["--version"])
    assert run.code == 0 and run.out.startswith("archiver/0.1.0 (aiohttp/")
    assert "Python 3." in run.out
    assert flag.out.strip() == "archiver 0.1.0"


def test_no_command_is_a_usage_error() -> None:
    run = archiver()
    assert run.code == 2 and "usage: archiver" in run.err and "Traceback" not in run.err


# -- wrong values: one line, the option, what it accepts, exit 2 ----------------------------------


BAD_VALUES: list[tuple[list[str], str, str]] = [
    (["crawl", "http://x.test/", "--scope", "everything"], "--scope", "page, prefix, host"),
    (["crawl", "http://x.test/", "--workers", "many"], "--workers", "an integer >= 1"),
    (["crawl", "http://x.test/", "-w", "0"], "--workers", "an integer >= 1"),
    (["crawl", "http://x.test/", "--progress", "sometimes"], "--progress", "auto, on, off"),
    (["crawl", "http://x.test/", "--digest", "md5"], "--digest", "sha1, sha256"),
    (["crawl", "http://x.test/", "--max-body-size", "lots"], "--max-body-size", "100MB"),
    (["crawl", "http://x.test/", "--per-host-delay", "soon"], "--per-host-delay", "45s"),
    (["crawl", "http://x.test/", "--frontier", "mysql"], "--frontier", "sqlite, memory"),
    (["crawl", "http://x.test/", "--robots", "maybe"], "--robots", "obey, ignore"),
    (["crawl", "http://x.test/", "--exclude", "(unclosed"], "--exclude", "regular expression"),
    (["crawl", "http://x.test/", "--header", "no colon"], "--header", "'Name: value'"),
    (["crawl", "http://x.test/", "--resolve", "x.test=not-ip"], "--resolve", "HOST=IP"),
    (["crawl", "http://x.test/", "--no-such-option"], "--no-such-option", "unrecognized"),
    (["crawl", "--workers"], "--workers", "expected one argument"),
    (["replay", "somewhere", "--port", "http"], "--port", "0-65535"),
    (["serve-sample", "--port", "70000"], "--port", "0-65535"),
    (["crawl"], "seeds", "at least one seed URL"),
    (["crawl", "ftp://x.test/"], "seeds", "not an http(s) URL"),
    (["frobnicate"], "frobnicate", "invalid choice"),
]


def check_one_line(code: int, out: str, err: str, option: str, allowed: str) -> None:
    assert code == 2, (code, out, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("archiver") and option in lines[0] and allowed in lines[0], lines
    assert "Traceback" not in err and out == ""


def with_output(args: list[str]) -> list[str]:
    return [*args, "-o", "/nonexistent/never-created"] if args[0] == "crawl" else args


@pytest.mark.parametrize(("args", "option", "allowed"), BAD_VALUES)
def test_wrong_values_are_one_line(
    args: list[str], option: str, allowed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every case through main([...]) in-process (the same code the command runs)."""
    try:
        code = main(with_output(args))
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    check_one_line(code, captured.out, captured.err, option, allowed)
    assert not Path("/nonexistent/never-created").exists()


def test_wrong_values_as_a_subprocess() -> None:
    """A sample of each kind as real `archiver` runs: real argv, real exit code."""
    cases = [BAD_VALUES[i] for i in (0, 12, 14, 16)]
    runs = archiver_many(*(with_output(args) for args, _, _ in cases))
    for (_, option, allowed), run in zip(cases, runs, strict=True):
        check_one_line(run.code, run.out, run.err, option, allowed)


# -- config file: CLI > config > defaults ----------------------------------------------------------


def test_config_precedence(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(
        "[crawl]\nworkers = 3\nfrontier = 'memory'\n"
        "[politeness]\nmax_tries = 2\nrobots = 'ignore'\nper_host_delay = '0'\n"
        "[warc]\ndescription = 'from the config'\n"
        "[output]\nstats_interval = '1m'\n"
    )
    with SiteServer().running_in_thread() as site:
        site.add_page("/", "<html><body>hello</body></html>")
        run = archiver(
            "crawl", site.url("/"), "--config", str(config), "-o", str(tmp_path / "out"),
            "--workers", "5", "--description", "from the command line", "-q",
        )  # fmt: skip
    assert run.code == 0, run.err
    settings = json.loads((tmp_path / "out" / "state" / "crawl.json").read_text())["settings"]
    assert settings["workers"] == 5  # command line over config
    assert settings["description"] == "from the command line"
    assert settings["max_tries"] == 2 and settings["frontier"] == "memory"  # config over default
    assert settings["stats_interval"] == 60.0
    assert settings["compress_level"] == 1 and settings["scope"] == "host"  # defaults


def test_only_options_typed_override_the_config_file() -> None:
    """No setting reaches the overrides unless typed: not the empty positional seed list, not a
    flag's default, not an appended list's empty start (each would replace the --config value)."""
    parser = build_parser()
    assert typed_overrides(parser.parse_args(["crawl", "--config", "job.toml"])) == {}
    assert typed_overrides(parser.parse_args(["crawl", "--config", "job.toml", "-q"])) == {
        "quiet": True
    }
    typed = parser.parse_args(["crawl", "http://a.test/", "--no-cookies", "--exclude", "x", "-vv"])
    assert typed_overrides(typed) == {
        "seeds": ("http://a.test/",),
        "cookie_jar": False,
        "exclude": ["x"],
        "verbose": 2,
    }


def test_every_setting_of_a_config_file_survives_an_empty_command_line(tmp_path: Path) -> None:
    """Each setting given in a config file keeps its value when the command line names none
    (the settings are read the way `archiver crawl --config FILE` reads them)."""
    from archiver.commands.cli import _settings_from_args  # noqa: PLC0415

    config = tmp_path / "all.toml"
    config.write_text(
        "[crawl]\nseeds = ['http://a.test/']\nworkers = 3\noverwrite = true\n"
        "[scope]\nexclude = ['x']\nsitemaps = 'off'\n"
        "[fetch]\ncookie_jar = false\nheader = ['X-A: 1']\n"
        "[output]\nquiet = true\nverbose = 1\n"
    )
    settings = _settings_from_args(build_parser().parse_args(["crawl", "--config", str(config)]))
    assert settings.seeds == ("http://a.test/",) and settings.workers == 3 and settings.overwrite
    assert settings.exclude == ("x",) and settings.sitemaps == "off" and not settings.cookie_jar
    assert settings.header == (("X-A", "1"),) and settings.quiet and settings.verbose == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[crawl]\nwrokers = 3\n", "unknown setting [crawl] wrokers"),
        ("[crawling]\nworkers = 3\n", "unknown section [crawling]"),
        ("[scope]\nworkers = 3\n", "unknown setting [scope] workers"),
        ("[crawl]\nworkers = 'three'\n", "[crawl] workers"),
        ("[scope]\nscope = 'galaxy'\n", "page, prefix, host, domain, any"),
        ("[crawl]\nworkers = \n", "not valid TOML"),
    ],
)
def test_bad_config_is_one_line(
    tmp_path: Path, text: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    code = main(["crawl", "http://x.test/", "--config", str(config)])
    captured = capsys.readouterr()
    assert code == 2
    assert len(captured.err.splitlines()) == 1 and expected in captured.err, captured.err
    assert "Traceback" not in captured.err


def test_missing_config_file() -> None:
    run = archiver("crawl", "http://x.test/", "--config", "/nonexistent/crawl.toml")
    assert run.code == 2 and len(run.err_lines) == 1 and "no such file" in run.err


# -- the subcommands on a real crawl ---------------------------------------------------------------


def test_crawl(crawled: Crawled) -> None:
    run, out = crawled.run, crawled.out
    assert run.code == 0, run.err
    assert run.out == ""
    assert "archiver: completed" in run.err and "Traceback" not in run.err
    for expected in ("index.cdxj", "crawl.log.jsonl", "summary.json", str(out)):
        assert expected in run.err
    warcs = sorted((out / "warcs").glob("*.warc.gz"))
    assert warcs and not list((out / "warcs").glob("*.open"))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["revisits"] == 1
    assert summary["captures"] == len(crawled.urls)
    index = (out / "index.cdxj").read_text().splitlines()
    assert len(index) == len(crawled.urls)
    events = [json.loads(line) for line in (out / "crawl.log.jsonl").read_text().splitlines()]
    fetched = {e["url"] for e in events if e["event"] == "fetch"}
    assert fetched == crawled.urls
    for event in (e for e in events if e["event"] == "fetch"):
        assert {"url", "status", "size", "mime", "duration", "depth", "via", "retries"} <= set(
            event
        )
        assert event["outcome"] == "captured"


def test_index(crawled: Crawled, tmp_path: Path) -> None:
    run = archiver("index", str(crawled.out), "-o", str(tmp_path / "again.cdxj"))
    assert run.code == 0, run.err
    assert "wrote 8 index lines" in run.out
    assert (tmp_path / "again.cdxj").read_text() == (crawled.out / "index.cdxj").read_text()


def test_verify(crawled: Crawled) -> None:
    run, as_json = archiver_many(
        ["verify", str(crawled.out)], ["verify", str(crawled.out), "--json"]
    )
    assert run.code == 0, run.out + run.err
    assert as_json.code == 0 and json.loads(as_json.out)


def test_report(crawled: Crawled, tmp_path: Path) -> None:
    target = tmp_path / "r.html"
    run = archiver("report", str(crawled.out), "-o", str(target))
    assert run.code == 0, run.err
    assert str(target) in run.out
    html = target.read_text()
    assert html.startswith("<!DOCTYPE html>") and crawled.seed in html


def test_report_of_a_directory_that_is_not_a_crawl(tmp_path: Path) -> None:
    run = archiver("report", str(tmp_path))
    assert run.code == 1 and len(run.err_lines) == 1 and "no summary.json" in run.err


def read_lines(proc: subprocess.Popen[bytes], count: int, timeout: float = 90) -> list[str]:
    assert proc.stdout is not None
    fd, buf = proc.stdout.fileno(), b""
    while buf.count(b"\n") < count:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"no output in {timeout} s: {buf!r}"
        chunk = os.read(fd, 4096)
        assert chunk, f"exited early: {buf!r} {proc.stderr.read() if proc.stderr else b''!r}"
        buf += chunk
    return buf.decode().splitlines()


def http_get(url: str) -> tuple[int, bytes]:
    rest = url.removeprefix("http://")
    hostport, _, path = rest.partition("/")
    host, _, port = hostport.partition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("GET", "/" + path, headers={"Accept-Encoding": "identity"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_replay(crawled: Crawled) -> None:
    venv = tools_venv()
    proc = subprocess.Popen(
        [sys.executable, "-m", "archiver", "replay", str(crawled.out), "--port", "0",
         "--pywb-venv", str(venv)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
    )  # fmt: skip
    try:
        lines = read_lines(proc, 4)
        assert lines[0].startswith("archiver: pywb 2.10"), lines
        base = lines[0].split(" at ")[1].split()[0]
        opened = lines[1].split()[-1]
        assert opened == base + crawled.seed
        status, body = http_get(opened)
        assert status == 200 and b"<iframe" in body  # pywb's framed replay with its banner
        seed_line = next(
            json.loads(line.split(" ", 2)[2])
            for line in (crawled.out / "index.cdxj").read_text().splitlines()
            if json.loads(line.split(" ", 2)[2])["url"] == crawled.seed
        )
        ts = next(
            line.split(" ")[1]
            for line in (crawled.out / "index.cdxj").read_text().splitlines()
            if json.loads(line.split(" ", 2)[2]) == seed_line
        )
        status, body = http_get(f"{base}{ts}id_/{crawled.seed}")
        assert status == 200 and b"<title>Home</title>" in body
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        with pytest.raises(OSError):
            http_get(opened)  # pywb is gone
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_replay_without_pywb(crawled: Crawled, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ARCHIVER_PYWB"}
    env["PATH"] = str(tmp_path)  # no wayback anywhere
    missing, wrong = archiver_many(
        ["replay", str(crawled.out)],
        ["replay", str(crawled.out), "--pywb-venv", str(tmp_path / "nope")],
        env=env,
    )
    assert missing.code == 1, missing
    assert len(missing.err_lines) == 1 and "pywb is not installed" in missing.err
    assert "pipx install pywb" in missing.err and "Traceback" not in missing.err
    assert wrong.code == 1 and len(wrong.err_lines) == 1 and "pipx install pywb" in wrong.err
    env["ARCHIVER_PYWB"] = str(tmp_path)  # a directory without a Python in it
    run = archiver("replay", str(crawled.out), env=env)
    assert run.code == 1 and "no bin/python" in run.err


def test_replay_of_a_directory_that_is_not_a_crawl(tmp_path: Path) -> None:
    run = archiver("replay", str(tmp_path), "--pywb-venv", str(tools_venv()))
    assert run.code == 1 and len(run.err_lines) == 1 and "no index.cdxj" in run.err
