"""End to end: crawls behind a login, on a local members' site (tests/support/login_site.py:
a form login behind a CSRF token, a session set by a script after a fetch() login, a members'
area whose scripts turn localStorage into cookies, a logout link, a session that expires after
N requests).

- A person logs in through archiver's own login page, played by a test browser that types into
  the streamed tab; the profile then crawls the members' area statically and in the browser,
  and pywb replays the members' pages.
- A scheduled job with a login script logs in unattended at each of two runs.
- A session that expires in the middle of a crawl stops it (exit 3, the profile named as
  expired); after a new login the same command resumes, until every page is captured once,
  none of them a login wall; so does a --login-check URL, which no rule helps; so does a crawl
  of two processes on an operator's Redis, whose shared jar each new login renews.
- The password and the cookie values are found only in request records, and with
  --redact-cookies nowhere in what the crawl wrote.
"""

from __future__ import annotations

import collections
import json
import os
import re
import secrets
import stat
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest
import redis

from archiver.commands import verify
from archiver.fetch.cookiestxt import parse_text
from tests.docs.registry import documents
from tests.docs.shell import DocShell, read_until, workdir
from tests.support.login_site import EXTRAS, MEMBERS_TEXT, PAGES, USER, LoginSite
from tests.support.pywb import PywbReplay
from tests.support.viewer import Viewer
from tests.support.warcs import read_records, responses

pytestmark = pytest.mark.usefixtures("chromium_installed")

REPO = Path(__file__).resolve().parents[2]
#: The README's example site, replaced by the local one in every documented command.
EXAMPLE = "https://members.example.org/"
EXAMPLE_SCRIPT = "/etc/archiver/members-login.toml"
#: The documented commands run here (README.md, "Crawling behind a login").
LOGIN = "archiver login https://members.example.org/login --profile profiles/members"
STATIC = (
    "archiver crawl https://members.example.org/ --profile profiles/members "
    "--logged-out location:/login -o crawls/members"
)
BROWSER = (
    "archiver crawl https://members.example.org/ --profile profiles/members --browser all "
    "--logged-out location:/login -o crawls/members-browser"
)
SCRIPTED_LOGIN = (
    "archiver login --profile profiles/members --login-script /etc/archiver/members-login.toml"
)
JOB = (
    "archiver crawl https://members.example.org/ --job jobs/members --profile profiles/members "
    "--login-script /etc/archiver/members-login.toml --logged-out location:/login"
)
REDACTED = (
    "archiver crawl https://members.example.org/ --profile profiles/members --browser all "
    "--redact-cookies --wacz -o crawls/members-redacted"
)
#: No display: the login browser is headless whatever the machine running the tests has.
NO_DISPLAY = {"DISPLAY": "", "WAYLAND_DISPLAY": ""}
FAST = (
    "--robots", "ignore", "--sitemaps", "off", "--per-host-delay", "0", "--quiet",
    "--min-free-disk", "0",
)  # fmt: skip
RUN_TIMEOUT = 300.0


def made_up_password() -> str:
    return "pw-" + secrets.token_urlsafe(12)


def login_script(tmp_path: Path, site: LoginSite) -> Path:
    """config/members-login.toml, aimed at the local site."""
    text = (REPO / "config" / "members-login.toml").read_text().replace(EXAMPLE, site.url("/"))
    path = tmp_path / "members-login.toml"
    path.write_text(text)
    return path


def replacements(site: LoginSite, script: Path | None = None) -> dict[str, str]:
    replace = {EXAMPLE: site.url("/")}
    if script is not None:
        replace[EXAMPLE_SCRIPT] = str(script)
    return replace


def archiver(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args],
        cwd=REPO,
        env={**os.environ, **NO_DISPLAY, **(env or {})},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


def captured(out: Path) -> collections.Counter[tuple[str, int]]:
    """(path, status) of every response record of a crawl."""
    found: collections.Counter[tuple[str, int]] = collections.Counter()
    for record in responses(out / "warcs"):
        assert record.uri is not None
        path = "/" + record.uri.split("/", 3)[3]
        found[(path, int(record.block.split(b" ", 2)[1]))] += 1
    return found


def members(site: LoginSite, *, extras: bool) -> collections.Counter[tuple[str, int]]:
    paths = site.members_paths() + (["/members/feed.json", *site.extra_paths()] if extras else [])
    return collections.Counter({(path, 200): 1 for path in paths})


Found = collections.Counter[tuple[str, int]]


def of_members(found: Found) -> Found:
    return collections.Counter({k: n for k, n in found.items() if k[0].startswith("/members")})


def listed_pages(out: Path) -> collections.Counter[str]:
    """The URLs of the crawl's page list (pages.jsonl, its header line left out)."""
    lines = (out / "state" / "pages.jsonl").read_text().splitlines()
    return collections.Counter(json.loads(line)["url"] for line in lines if '"url"' in line)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@documents(LOGIN, STATIC, BROWSER)
async def test_a_person_logs_in_through_the_login_page_and_crawls_see_the_members_area(
    doc: DocShell, tmp_path: Path
) -> None:
    cwd = workdir(tmp_path / "work")
    profile = cwd / "profiles" / "members"
    password = made_up_password()
    with LoginSite(password=password).running_in_thread() as site:
        replace = replacements(site)
        login = doc.start(LOGIN, cwd=cwd, replace=replace, env=NO_DISPLAY)
        try:
            line, _ = read_until(login.stdout, r"log in at http://127\.0\.0\.1:\d+/")
            page = re.search(r"http://127\.0\.0\.1:\d+/[\w-]+/", line)
            assert page is not None, line
            async with Viewer(tmp_path / "viewer") as viewer:
                await viewer.open(page.group(0))
                await viewer.wait_for("document.body.dataset.loaded.includes('/login')")
                # the form's fields, typed into as a person would, through the stream
                await viewer.click_streamed(190, 118)
                await viewer.type(USER)
                await viewer.click_streamed(190, 178)
                await viewer.type(password)
                await viewer.press("Enter", 13)
                await viewer.wait_for("document.body.dataset.loaded.includes('/welcome')")
                await viewer.click_button("done")
                await viewer.wait_for("document.body.dataset.state === 'saved'")
            said, err = login.communicate(timeout=RUN_TIMEOUT)
        finally:
            if login.poll() is None:
                login.kill()
                login.communicate()
        assert login.returncode == 0, err
        assert "profile saved in profiles/members: 4 cookie(s) for 127.0.0.1" in said
        assert site.logins == 1
        login_requests = len(site.log)

        # the profile: every cookie (HttpOnly ones the site set, those its scripts set), the
        # localStorage, private; nothing typed; the login browser's own state gone
        assert mode(profile) == 0o700
        assert sorted(p.name for p in profile.iterdir()) == [
            "cookies.txt",
            "local-storage.json",
            "profile.json",
        ]
        assert all(mode(path) == 0o600 for path in profile.iterdir())
        cookies = {line.name: line for line in parse_text((profile / "cookies.txt").read_text())}
        assert set(cookies) == {"pre", "sid", "auth", "view"}
        assert cookies["sid"].http_only and cookies["pre"].http_only
        assert not cookies["auth"].http_only  # set by the page's script
        (session,) = site.sessions.values()
        assert cookies["auth"].value == session.token
        storage = json.loads((profile / "local-storage.json").read_text())
        assert storage == {site.url(""): {"members-token": session.token}}
        meta = json.loads((profile / "profile.json").read_text())
        assert meta["made_by"] == "login page" and meta["login_url"] == site.url("/login")
        for kept in profile.rglob("*"):
            assert password.encode() not in kept.read_bytes(), kept

        static = doc.run(STATIC, cwd=cwd, replace=replace)
        assert static.returncode == 0, static.stderr
        static_log = site.log[login_requests:]
        browser_from = len(site.log)
        browser = doc.run(BROWSER, cwd=cwd, replace=replace)
        assert browser.returncode == 0, browser.stderr
        browser_log = site.log[browser_from:]

    # statically: the members' pages, logged in; what only scripts reach is not found
    assert of_members(captured(cwd / "crawls" / "members")) == members(site, extras=False)
    # the logout link was not followed: the session lived on
    assert not [hit for hit in static_log + browser_log if hit.path == "/logout"]
    # in the browser: the feed its script fetched with the cookie it had just set, and the
    # pages the feed lists; each asked for once
    assert of_members(captured(cwd / "crawls" / "members-browser")) == members(site, extras=True)
    asked = collections.Counter(hit.path for hit in browser_log if hit.path.startswith("/members"))
    assert set(asked.values()) == {1}, asked
    feed = next(hit for hit in browser_log if hit.path == "/members/feed.json")
    assert feed.cookies["feedkey"] == "f-" + session.token
    # nothing of the login was recorded: its POST (the password in its body) is in no WARC
    # (the crawls themselves may GET the public login page, which the site links, and what
    # its script names)
    for crawl in (cwd / "crawls" / "members", cwd / "crawls" / "members-browser"):
        records = read_records(crawl / "warcs")
        assert not [r for r in records if r.type == "request" and r.block.startswith(b"POST")]
        assert not [r for r in records if password.encode() in r.block]
        report = verify.verify([crawl / "warcs"], index=crawl / "index.cdxj")
        assert report.ok, verify.render(report)

    # pywb replays the members' pages and the pages only the browser crawl reached
    out = cwd / "crawls" / "members-browser"
    timestamp = (out / "index.cdxj").read_text().split(" ", 2)[1]
    warcs = sorted((out / "warcs").glob("*.warc.gz"))
    with PywbReplay(
        tmp_path / "pywb", warcs, cdxj=out / "index.cdxj", warc_root=out / "warcs"
    ) as replay:
        for page_path in site.members_paths():
            shown = replay.get_id(site.url(page_path), timestamp)
            assert shown.status == 200 and MEMBERS_TEXT.encode() in shown.body, page_path
        for number, extra in enumerate(site.extra_paths(), start=1):
            shown = replay.get_id(site.url(extra), timestamp)
            assert shown.status == 200 and f"Extra {number}".encode() in shown.body, extra
    assert len(site.members_paths()) == PAGES + 1 and len(site.extra_paths()) == EXTRAS


@documents(SCRIPTED_LOGIN, JOB)
def test_a_login_script_job_logs_in_unattended_on_each_of_two_scheduled_runs(
    doc: DocShell, tmp_path: Path
) -> None:
    cwd = workdir(tmp_path / "work")
    password = made_up_password()
    env = {"MEMBERS_PASSWORD": password, **NO_DISPLAY}
    with LoginSite(password=password).running_in_thread() as site:
        script = login_script(tmp_path, site)
        replace = replacements(site, script)
        made = doc.run(SCRIPTED_LOGIN, cwd=cwd, replace={EXAMPLE_SCRIPT: str(script)}, env=env)
        assert made.returncode == 0, made.stderr
        assert "made by the login script" in made.stdout
        assert site.logins == 1
        first = doc.run(JOB, cwd=cwd, replace=replace, env=env)
        assert first.returncode == 0, first.stderr
        assert site.logins == 2
        second = doc.run(JOB, cwd=cwd, replace=replace, env=env)
        assert second.returncode == 0, second.stderr
        assert site.logins == 3
        sessions = list(site.sessions)
        tokens = list(site.sessions.values())
    for run in (first, second):
        assert "logged in with" in run.stderr and password not in run.stderr + run.stdout
    job = cwd / "jobs" / "members"
    runs = sorted((job / "runs").iterdir())
    assert len(runs) == 2
    # each run crawled with the session its own login made
    for run_dir, sid in zip(runs, sessions[1:], strict=True):
        assert of_members(captured(run_dir)) == members(site, extras=False)
        requests = [r for r in read_records(run_dir / "warcs") if r.type == "request"]
        of_pages = [r for r in requests if b" /members" in r.block.split(b"\r\n", 1)[0]]
        assert of_pages and all(f"sid={sid}".encode() in r.block for r in of_pages)
    log = [json.loads(line) for line in (job / "runs.jsonl").read_text().splitlines()]
    assert [(entry["status"], entry["exit_code"]) for entry in log] == [("completed", 0)] * 2
    for path in (cwd / "profiles").rglob("*"):
        if path.is_file():
            assert password.encode() not in path.read_bytes(), path
    # the logins the runs made themselves: their sessions went with the requests, and are
    # found nowhere else the job wrote but the jar a resume starts from (the owner's alone)
    secrets_ = {password, *sessions, *(session.token for session in tokens)}
    in_requests = 0
    for path in job.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.name.endswith(".warc.gz"):
            in_requests += warc_secrets(data, secrets_, redact=False)
        elif path.name == "cookies.txt" and path.parent.name == "state":
            assert mode(path) == 0o600 and password.encode() not in data, path
        else:
            assert not found_in(data, secrets_), path
    assert in_requests > 0


def resume_until_done(
    command: list[str], script: Path, site: LoginSite, profile: Path
) -> list[subprocess.CompletedProcess[str]]:
    """Run ``command`` until it completes, logging in again after each run that stopped
    because the session ended; every run before the last must have stopped so."""
    env = {"MEMBERS_PASSWORD": site.password}
    runs = []
    for _ in range(10):
        login = archiver("login", "--profile", str(profile), "--login-script", str(script), env=env)
        assert login.returncode == 0, login.stderr
        run = archiver(*command)
        runs.append(run)
        if run.returncode == 0:
            return runs
        assert run.returncode == 3, run.stderr
    raise AssertionError(f"not done in 10 runs: {[r.stderr[-300:] for r in runs]}")


@pytest.mark.parametrize("mode", ["off", "all"])
def test_a_session_that_expires_mid_crawl_stops_it_and_a_new_login_resumes_it(
    tmp_path: Path, mode: str
) -> None:
    out, profile = tmp_path / "crawl", tmp_path / "profile"
    with LoginSite(password=made_up_password(), expire_after=3).running_in_thread() as site:
        script = login_script(tmp_path, site)
        command = [
            "crawl", site.url("/members/"), "-o", str(out), "--profile", str(profile),
            "--browser", mode, "--logged-out", "location:/login", "--workers", "2", *FAST,
        ]  # fmt: skip
        runs = resume_until_done(command, script, site, profile)
        served = collections.Counter((hit.path, hit.status) for hit in site.log)
    first = runs[0]
    assert len(runs) >= 3, [run.stderr for run in runs]
    assert "the login session has ended" in first.stderr
    assert "answered 302, matching --logged-out location:/login" in first.stderr
    assert (
        f"the profile has expired: log in again (archiver login {site.url('/login')} "
        f"--profile {profile}), then run the same command to resume"
    ) in first.stderr
    assert "\nTraceback" not in "".join(run.stderr for run in runs)
    # every page once, none of them a login wall: the walls met were not archived
    assert of_members(captured(out)) == members(site, extras=mode == "all")
    assert not [key for key in captured(out) if key[1] == 302]
    for path in site.members_paths():
        assert served[(path, 200)] == 1, (path, served)
    assert sum(n for (path, status), n in served.items() if status == 302) >= len(runs) - 1
    # the crawl's figures across its runs count no login wall: what they say was captured is
    # what the WARC files hold, and its pages are the members' pages, each once
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed" and len(summary["runs"]) == len(runs)
    assert summary["captures"] == sum(captured(out).values()), summary["captures"]
    pages = len(site.members_paths()) + (EXTRAS if mode == "all" else 0)
    assert summary["pages"] == pages, summary["pages"]
    listed = site.members_paths() + (site.extra_paths() if mode == "all" else [])
    assert listed_pages(out) == collections.Counter(site.url(p) for p in listed)
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)


def test_a_login_check_url_vouches_for_every_page_where_no_rule_can_see(tmp_path: Path) -> None:
    """No --logged-out rule: the login walls are redirects the crawl would follow. The check
    URL stops the crawl before it captures anything with an expired profile, and mid-crawl
    before a login wall's capture counts or leads anywhere."""
    out, profile = tmp_path / "crawl", tmp_path / "profile"
    with LoginSite(password=made_up_password(), expire_after=3).running_in_thread() as site:
        script = login_script(tmp_path, site)
        env = {"MEMBERS_PASSWORD": site.password}
        made = archiver("login", "--profile", str(profile), "--login-script", str(script), env=env)
        assert made.returncode == 0, made.stderr
        site.end_sessions()  # the profile expired before the crawl
        command = [
            "crawl", site.url("/members/"), "-o", str(out), "--profile", str(profile),
            "--login-check", site.url("/api/me"), "--workers", "2", *FAST,
        ]  # fmt: skip
        expired = archiver(*command)
        assert expired.returncode == 3, expired.stderr
        assert "answered 401 to the --login-check request" in expired.stderr
        assert not [hit for hit in site.log if hit.path.startswith("/members")]
        runs = resume_until_done(command, script, site, profile)
        served = collections.Counter((hit.path, hit.status) for hit in site.log)
        checks = sum(1 for hit in site.log if hit.path == "/api/me")
    assert len(runs) >= 3
    assert of_members(captured(out)) == members(site, extras=False)
    # no login wall captured, and none of what it leads to (the login page) was queued
    assert set(captured(out)) <= set(members(site, extras=False)) | {("/sitemap.xml", 404)}
    assert not [hit for hit in site.log if hit.path == "/login" and "next=" in hit.query]
    # a page captured before a failed check was not vouched for: it was cut and fetched again
    # (each page is once in the archive, if not always once on the wire)
    assert all(served[(path, 200)] >= 1 for path in site.members_paths()), served
    # at most a check before each page's links are queued (one serves several), one per start
    assert checks <= 2 * len(site.members_paths()) + len(runs) + 1, checks
    # the figures across the runs count what the WARC files kept, not the captures cut
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed" and len(summary["runs"]) == len(runs) + 1
    assert summary["captures"] == sum(captured(out).values()), summary["captures"]
    assert summary["pages"] == len(site.members_paths()), summary["pages"]
    # the seed's counts leave the withdrawn captures too: they add up to the crawl's
    by_seed = summary["by_seed"]
    assert sum(row["captures"] for row in by_seed) == summary["captures"], by_seed
    assert sum(row["pages"] for row in by_seed) == summary["pages"], by_seed
    assert listed_pages(out) == collections.Counter(site.url(p) for p in site.members_paths())


@pytest.mark.parametrize(
    "redact",
    [pytest.param(False, id="kept"), pytest.param(True, id="redacted", marks=documents(REDACTED))],
)
def test_secrets_are_in_request_records_only_and_with_redaction_nowhere(
    doc: DocShell, tmp_path: Path, redact: bool
) -> None:
    cwd = workdir(tmp_path / "work")
    profile = cwd / "profiles" / "members"
    out = cwd / "crawls" / "members-redacted"
    password = made_up_password()
    env = {"MEMBERS_PASSWORD": password}
    outputs: list[str] = []
    with LoginSite(password=password).running_in_thread() as site:
        script = login_script(tmp_path, site)
        made = archiver("login", "--profile", str(profile), "--login-script", str(script), env=env)
        assert made.returncode == 0, made.stderr
        outputs += [made.stdout, made.stderr]
        # the session: the values of the profile's cookies and localStorage
        session = {line.value for line in parse_text((profile / "cookies.txt").read_text())}
        storage = json.loads((profile / "local-storage.json").read_text())
        session |= {value for items in storage.values() for value in items.values()}
        if redact:
            crawl = doc.run(REDACTED, cwd=cwd, replace=replacements(site))
        else:
            crawl = archiver(
                "crawl", site.url("/"), "--profile", str(profile), "--browser", "all", "--wacz",
                "-o", str(out),
            )  # fmt: skip
        assert crawl.returncode == 0, crawl.stderr
        outputs += [crawl.stdout, crawl.stderr]
        report = archiver("report", str(out))
        assert report.returncode == 0, report.stderr
        outputs += [report.stdout, report.stderr]
        # an error message about the profile names no value
        (profile / "local-storage.json").write_text('{"x": "' + password)
        broken = archiver("crawl", site.url("/"), "--profile", str(profile), "-o", f"{out}-2")
        assert broken.returncode == 2 and "not valid JSON" in broken.stderr
        outputs += [broken.stdout, broken.stderr]
    assert len(session) == 3  # pre, sid, the token (auth, view and the stored token)
    secrets_ = {password, *session}
    assert not [s for s in secrets_ for text in outputs if s in text]

    in_requests = 0
    for path in sorted(out.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.name.endswith(".warc.gz"):
            in_requests += warc_secrets(data, secrets_, redact)
        elif path.suffix == ".wacz":
            with zipfile.ZipFile(path) as package:
                for name in package.namelist():
                    member = package.read(name)
                    if name.endswith(".warc.gz"):
                        warc_secrets(member, secrets_, redact)
                    else:
                        assert not found_in(member, secrets_), (path, name)
        elif path == out / "state" / "cookies.txt":
            # the jar (a resume sends what it had): the owner's alone, and no password
            assert mode(path) == 0o600
            assert password.encode() not in data
        else:
            assert not found_in(data, secrets_), path
    if redact:
        assert in_requests == 0
        infos = [r for r in read_records(out / "warcs") if r.type == "warcinfo"]
        assert infos and all(b"--redact-cookies" in r.block for r in infos)
    else:
        assert in_requests > 0  # the session went with the requests, as sent
    checked = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert checked.ok, verify.render(checked)


def found_in(data: bytes, secrets_: set[str]) -> list[str]:
    return [s for s in secrets_ if s.encode() in data]


def warc_secrets(data: bytes, secrets_: set[str], redact: bool) -> int:
    """How many request records hold a secret; any other record holding one fails."""
    count = 0
    for record in read_records_bytes(data):
        found = found_in(record[1], secrets_)
        if not found:
            continue
        assert record[0] == "request" and not redact, (record[0], found)
        count += 1
    return count


def read_records_bytes(data: bytes) -> list[tuple[str, bytes]]:
    """(type, whole record) of each gzip member of a WARC file."""
    records = []
    while data:
        member = zlib.decompressobj(31)
        raw = member.decompress(data)
        data = member.unused_data
        kind = re.search(rb"\r\nWARC-Type: (\w+)", raw)
        records.append((kind.group(1).decode() if kind else "", raw))
    return records


def test_cookies_page_scripts_set_reach_the_jar_the_processes_of_a_crawl_share(
    tmp_path: Path,
) -> None:
    out, profile = tmp_path / "crawl", tmp_path / "profile"
    with LoginSite(password=made_up_password()).running_in_thread() as site:
        script = login_script(tmp_path, site)
        env = {"MEMBERS_PASSWORD": site.password}
        made = archiver("login", "--profile", str(profile), "--login-script", str(script), env=env)
        assert made.returncode == 0, made.stderr
        (session,) = site.sessions.values()
        crawl = archiver(
            "crawl", site.url("/members/"), "-o", str(out), "--profile", str(profile),
            "--browser", "all", "--processes", "2", "--workers", "2",
            "--logged-out", "location:/login", *FAST,
        )  # fmt: skip
        assert crawl.returncode == 0, crawl.stderr
    assert of_members(captured(out)) == members(site, extras=True)
    # the cookie a page's script set went into the jar the processes share: the private
    # redis-server's append-only file, in a directory only the owner may enter
    shared = out / "state" / "redis"
    kept = b"".join(path.read_bytes() for path in shared.rglob("appendonly.aof*") if path.is_file())
    assert f"feedkey\t{'f-' + session.token}".encode() in kept
    assert mode(shared) == 0o700


def test_a_redis_crawls_processes_share_the_session_and_a_new_login_replaces_it(
    tmp_path: Path,
) -> None:
    """A crawl on a Redis frontier given by the operator, in two processes and the browser:
    the session expires mid-crawl; the supervisor stops the crawl (exit 3, the profile named as
    expired), and each new login replaces the session in the jar the processes share, until
    every page is captured once."""
    from tests.support.redis_server import RedisServer  # noqa: PLC0415

    out, profile = tmp_path / "crawl", tmp_path / "profile"
    with (
        RedisServer(tcp=True) as server,
        LoginSite(password=made_up_password(), expire_after=4).running_in_thread() as site,
    ):
        script = login_script(tmp_path, site)
        command = [
            "crawl", site.url("/members/"), "-o", str(out), "--profile", str(profile),
            "--frontier", server.url, "--crawl-id", "members", "--processes", "2",
            "--browser", "all", "--logged-out", "location:/login", "--workers", "2", *FAST,
        ]  # fmt: skip
        runs = resume_until_done(command, script, site, profile)
        served = collections.Counter((hit.path, hit.status) for hit in site.log)
        feeds = [hit for hit in site.log if hit.path == "/members/feed.json"]
        client = redis.Redis.from_url(server.url, decode_responses=True)
        try:
            stored = client.hgetall("archiver:{members}:cookies")
            jar = {str(name): str(value) for name, value in stored.items()}
        finally:
            client.close()
    assert len(runs) >= 2, [run.stderr for run in runs]
    assert "the profile has expired: log in again" in runs[0].stderr
    assert "\nTraceback" not in "".join(run.stderr for run in runs)
    assert of_members(captured(out)) == members(site, extras=True)
    for path in site.members_paths():
        assert served[(path, 200)] == 1, (path, served)
    # the feed, asked for by a page's script with the cookie that script set, was served
    assert [hit.status for hit in feeds][-1] == 200
    # the shared jar holds the last login's session and nothing of the sessions before it
    # (neither their ids nor the cookies the pages' scripts made from their tokens)
    last = {line.name: line.value for line in parse_text((profile / "cookies.txt").read_text())}
    lines = "\n".join(value for value in jar.values() if "\t" in value)  # not the marker
    held = {line.name: line.value for line in parse_text(lines)}
    assert held["sid"] == last["sid"] and held["auth"] == last["auth"]
    before = {
        value
        for hit in site.log
        for name, value in hit.cookies.items()
        if name in ("sid", "auth") and value not in (last["sid"], last["auth"])
    }
    assert len(before) >= 2 * (len(runs) - 1), before
    assert not [value for value in before for line in jar.values() if value in line]


def test_a_browser_crawl_resumed_after_a_failed_login_check_captures_each_url_once(
    tmp_path: Path,
) -> None:
    """In the browser, with a --login-check URL and no rule: the session ends mid-crawl, and
    the page whose capture the failed check did not vouch for is cut on resume. Its payload was
    stored first by that cut capture: the resumed crawl must store it again, not write a
    revisit of a record that is gone (which the browser, loading the page, could not read back
    either, and fetched once more). Across the runs every URL is in the archive once, and every
    revisit refers to a record the archive holds."""
    out, profile = tmp_path / "crawl", tmp_path / "profile"
    with LoginSite(password=made_up_password(), expire_after=8).running_in_thread() as site:
        script = login_script(tmp_path, site)
        command = [
            "crawl", site.url("/members/"), "-o", str(out), "--profile", str(profile),
            "--browser", "all", "--login-check", site.url("/api/me"), "--workers", "2", *FAST,
        ]  # fmt: skip
        runs = resume_until_done(command, script, site, profile)
    assert len(runs) >= 2, [run.stderr for run in runs]
    assert "\nTraceback" not in "".join(run.stderr for run in runs)
    per_url = collections.Counter(record.uri for record in responses(out / "warcs"))
    assert {uri: n for uri, n in per_url.items() if n != 1} == {}, per_url
    records = read_records(out / "warcs")
    ids = {record.get("WARC-Record-ID") for record in records}
    refers = [record.get("WARC-Refers-To") for record in records if record.type == "revisit"]
    assert [uri for uri in refers if uri not in ids] == [], refers
    assert of_members(captured(out)) == members(site, extras=True)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed", summary
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
