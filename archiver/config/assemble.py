"""Settings -> the configuration of each component (scope, robots.txt, fetcher, frontier, WARC
writer, browser, politeness, warcinfo, seeds).

Kept apart from the crawler so the crawler orchestrates and these small functions say, in one
place each, how a user's settings become a component's behaviour: nothing else reads a setting
to configure a component (:mod:`archiver.run.wiring` calls these and hands the results on).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import math
import os
import platform
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from archiver import urls
from archiver.browser.behaviors.control import BehaviorScript
from archiver.config.seeds import crawl_rules, wants_browser
from archiver.config.settings import Settings, read_lines_file
from archiver.errors import SettingsError, SigningError
from archiver.fetch.cookiestxt import CookieFileError, CookieLine, parse_text
from archiver.fetch.fetcher import FetchConfig
from archiver.fetch.proxy import ProxyRoutes, parse_direct_hosts, parse_proxy_url
from archiver.frontier.config import FrontierConfig
from archiver.login.profile import Profile, read_profile
from archiver.media.formats import format_spec
from archiver.media.resolver import ResolverConfig
from archiver.policy.credentials import credential_scope
from archiver.policy.loggedout import SessionPolicy, parse_rules, session_hint
from archiver.policy.netguard import AddressPolicy
from archiver.policy.politeness import Politeness
from archiver.policy.robots import HostDelay, Robots, RobotsCache
from archiver.policy.scope import Scope, ScopeRules, seeds_in_order
from archiver.policy.seeds import Seed, SeedLoader, SeedTable
from archiver.policy.sitemaps import SitemapPolicy
from archiver.sign.keys import load_signing_key
from archiver.sign.signer import KeySigner, RemoteSigner, Signer
from archiver.timefmt import Clock, parse_w3c_datetime
from archiver.version import __version__
from archiver.warc.naming import safe_name_part
from archiver.warc.records import RecordFactory
from archiver.warc.writer import IndexJournal, WriterConfig

if TYPE_CHECKING:
    from archiver.browser.pool import BrowserConfig


def default_output(seeds: Iterable[str]) -> Path:
    for seed in seeds:
        try:
            host = urls.hostname(urls.normalize_url(seed))
        except urls.InvalidURLError:
            continue
        return Path("crawls") / safe_name_part(host, default="crawl")
    return Path("crawls") / "crawl"


def scope_rules(s: Settings, seeds: tuple[str, ...]) -> ScopeRules:
    """Scope and trap rules; exclusions from --exclude and --exclude-file."""
    exclude = list(s.exclude)
    if s.exclude_file is not None:
        exclude += read_lines_file(s.exclude_file, "--exclude-file")
    if s.profile is not None and s.logout_urls:
        exclude.append(s.logout_urls)  # a logout link would end the session
    return ScopeRules(
        seeds=seeds,
        mode=s.scope,
        include=s.include,
        exclude=tuple(exclude),
        max_depth=s.max_depth,
        page_requisites=s.page_requisites,
        max_url_length=s.max_url_length,
        max_path_segments=s.max_path_segments,
        max_segment_repeats=s.max_segment_repeats,
        max_query_key_repeats=s.max_query_key_repeats,
        max_pattern_depth=s.max_pattern_depth,
        max_urls_per_host=s.max_urls_per_host,
        extra_hops=s.extra_hops,
        sitemaps=named_sitemaps(s),
    )


def crawl_scope(
    s: Settings, urls: tuple[str, ...], seeds: Iterable[Seed], load: SeedLoader | None = None
) -> Scope:
    """The crawl's scope: its seed URLs, each with its rules (``seeds``, in order), and a
    table of the seeds' rules that asks ``load`` for seeds it was not given (another process's,
    an earlier run's)."""
    return Scope(scope_rules(s, urls), SeedTable(crawl_rules(s), load), seeds=seeds)


def named_sitemaps(s: Settings) -> tuple[str, ...]:
    """The sitemaps of ``--sitemap``, normalised; one that is not an http(s) URL is a usage
    error."""
    found = []
    for url in s.sitemap:
        try:
            found.append(urls.normalize_url(url))
        except urls.InvalidURLError as exc:
            raise SettingsError("--sitemap", f"{url!r} is not an http(s) URL: {exc}") from None
    return seeds_in_order(found)


def sitemap_policy(s: Settings) -> SitemapPolicy:
    """Which sitemaps the crawl reads (robots.txt's and /sitemap.xml with --sitemaps on, the
    named ones always) and which of their entries it keeps (--sitemap-from)."""
    return SitemapPolicy(
        enabled=s.sitemaps == "on",
        max_redirects=s.max_redirects,
        named=named_sitemaps(s),
        newer_than=parse_w3c_datetime(s.sitemap_from) if s.sitemap_from else None,
    )


async def address_policy(s: Settings, seeds: Iterable[str]) -> AddressPolicy:
    """The seeds' own addresses and ports are always allowed: a crawl of a local or intranet
    site asked for by name is what the user wants; the SSRF guard is about where links lead."""
    policy = AddressPolicy(allow_private=s.allow_private)
    await allow_seed_addresses(policy, s, seeds)
    return policy


async def allow_seed_addresses(
    policy: AddressPolicy,
    s: Settings,
    seeds: Iterable[str],
    known: set[tuple[str, int]] | None = None,
) -> None:
    """Allow the addresses of the seeds' hosts (each host and port looked up once; ``known``
    holds those looked up already, for seeds that come in batches)."""
    overrides = dict(s.resolve)
    loop = asyncio.get_running_loop()
    known = set() if known is None else known
    for seed in seeds:
        _, host, port = urls.scheme_host_port(seed)
        if (host, port) in known:
            continue
        known.add((host, port))
        # looked up as the resolver does (fetch.OverrideResolver): "x.test." is "x.test"
        override = overrides.get(host.rstrip("."))
        if override is not None:
            policy.allow(override, port)
            continue
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            continue  # the fetch will fail with a DNS error, logged there
        for info in infos:
            policy.allow(str(info[4][0]), port)


def check_browser(s: Settings, seeds: Iterable[Seed] = ()) -> None:
    """With ``--browser all|auto`` (or a seed's ``browser``) or ``--qa``, Chromium must be
    there: a usage error (one line saying how to install it) before anything is written; so is
    a behaviour option that would do nothing (no page of the crawl goes to the browser: no
    behaviours, --qa or not), or a behaviour file that cannot be read."""
    if not wants_browser(s, seeds):
        for option, given in (("--behavior-script", s.behavior_script), ("--click-selector",
                              s.click_selector)):  # fmt: skip
            if given:
                raise SettingsError(option, "works only with --browser all or auto")
        if not s.qa:
            return
    if s.click_selector and "autoclick" not in s.behaviors:
        raise SettingsError("--click-selector", "works only with autoclick in --behaviors")
    behavior_scripts(s)
    # imported here: a static crawl does not load the browser stage at all
    from archiver.browser.chromium import find_chromium  # noqa: PLC0415
    from archiver.browser.errors import BrowserUnavailableError  # noqa: PLC0415

    try:
        find_chromium(s.chromium)
    except BrowserUnavailableError as exc:
        raise SettingsError("--chromium" if s.chromium else "--browser", str(exc)) from None


#: The largest behaviour file read (a Browsertrix Behaviors bundle is about 200 KB).
MAX_BEHAVIOR_SCRIPT = 8 * 1024 * 1024


def behavior_scripts(s: Settings) -> tuple[BehaviorScript, ...]:
    """The files of ``--behavior-script``, read: one that cannot be read, is not UTF-8 or is
    over :data:`MAX_BEHAVIOR_SCRIPT` bytes is a usage error."""
    scripts = []
    for path in s.behavior_script:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise SettingsError(
                "--behavior-script", f"cannot read {path}: {exc.strerror or exc}"
            ) from None
        if len(data) > MAX_BEHAVIOR_SCRIPT:
            raise SettingsError("--behavior-script", f"{path} is over {MAX_BEHAVIOR_SCRIPT} bytes")
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SettingsError("--behavior-script", f"{path} is not UTF-8 text") from None
        scripts.append(BehaviorScript(path.name, source))
    return tuple(scripts)


def check_media(s: Settings) -> None:
    """With ``--media yt-dlp``, yt-dlp must be installed (it is an optional extra): a usage
    error saying how to install it, before anything is written. Looked up, not imported: only
    the resolver's child processes import it."""
    if s.media != "yt-dlp":
        return
    if importlib.util.find_spec("yt_dlp") is None:
        raise SettingsError(
            "--media", "yt-dlp is not installed: pip install 'archiver[media]' (or yt-dlp)"
        )


def media_resolver_config(s: Settings) -> ResolverConfig:
    """The yt-dlp resolver of ``--media yt-dlp``: the time limit, a child process per two
    workers (at most four: each holds ~100 MB), the format spec of the rendition rule's
    bit-rate cap."""
    return ResolverConfig(
        timeout=s.media_timeout,
        processes=min(max(s.workers // 2, 1), 4),
        format_spec=format_spec(s.media_max_bitrate or None),
    )


def cookie_file(s: Settings) -> tuple[CookieLine, ...]:
    """The cookies the crawl starts with: those of ``--cookies FILE``, then those of the
    ``--profile`` (expired ones dropped), read before the crawl starts: an unreadable or
    malformed file, or a ``--save-cookies`` path in no directory, is a usage error. Values
    never appear in a message."""
    if s.save_cookies is not None and not s.save_cookies.resolve().parent.is_dir():
        raise SettingsError("--save-cookies", f"no such directory: {s.save_cookies.parent}")
    profile = login_profile(s)
    from_profile = profile.cookies if profile is not None else ()
    now = time.time()
    return _cookies_file(s.cookies) + tuple(line for line in from_profile if not line.expired(now))


def login_profile(s: Settings) -> Profile | None:
    """The ``--profile`` (:mod:`archiver.login.profile`), or None."""
    return read_profile(s.profile) if s.profile is not None else None


def _cookies_file(path: Path | None) -> tuple[CookieLine, ...]:
    if path is None:
        return ()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SettingsError("--cookies", f"{path} is not a cookies.txt text file") from None
    except OSError as exc:
        raise SettingsError("--cookies", f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        lines = parse_text(text)
    except CookieFileError as exc:
        raise SettingsError(
            "--cookies", f"{path} is not a Netscape cookies.txt file: {exc}"
        ) from None
    if not lines:
        raise SettingsError("--cookies", f"{path} holds no cookie")
    now = time.time()
    return tuple(line for line in lines if not line.expired(now))


#: the environment variable a signing server's bearer token is read from (never a setting: a
#: setting is written to warcinfo and state/crawl.json)
SIGN_TOKEN_VARIABLE = "ARCHIVER_WACZ_SIGN_TOKEN"


def wants_wacz(s: Settings) -> bool:
    """Whether the crawl is packaged: --wacz, or a signing option (which implies it)."""
    return s.wacz or s.wacz_sign is not None or s.wacz_sign_key is not None


def wacz_signer(s: Settings) -> Signer | None:
    """Who signs the crawl's WACZ, made before the crawl starts: a key that cannot be used is a
    usage error then, not a surprise at the end. The key's bytes never leave the signer."""
    if s.wacz_sign_key is not None:
        try:
            return KeySigner(load_signing_key(s.wacz_sign_key), software_string())
        except SigningError as exc:
            raise SettingsError("--wacz-sign-key", str(exc)) from None
    if s.wacz_sign is not None:
        return RemoteSigner(
            s.wacz_sign,
            timeout=s.wacz_sign_timeout or 60.0,
            token=os.environ.get(SIGN_TOKEN_VARIABLE) or None,
        )
    return None


def proxy_routes(s: Settings) -> ProxyRoutes | None:
    """``--proxy`` and ``--no-proxy-for`` (checked when the settings were read)."""
    if not s.proxy:
        return None
    return ProxyRoutes(parse_proxy_url(s.proxy), parse_direct_hosts(s.no_proxy_for))


def fetch_config(
    s: Settings, seeds: tuple[str, ...], cookies: tuple[CookieLine, ...] = ()
) -> FetchConfig:
    """The fetcher's limits and headers; credential headers are scoped to the seeds' hosts;
    ``cookies`` are those of ``--cookies`` (:func:`cookie_file`)."""
    return FetchConfig(
        connections=max(s.workers, 1),
        user_agent=s.user_agent,
        accept_encoding=s.accept_encoding,
        algorithm=s.digest,
        connect_timeout=s.connect_timeout or 30.0,
        read_timeout=s.read_timeout or 3600.0,
        fetch_timeout=s.fetch_timeout or 24 * 3600.0,
        max_body=s.max_body_size,
        max_header_bytes=s.max_header_size,
        keep_body=8 * 1024 * 1024,
        tls_verify=s.tls_verify,
        resolve=dict(s.resolve),
        extra_headers=dict(s.header),
        credential_scope=credential_scope(seeds, s.credential_host),
        cookies=s.cookie_jar,
        cookie_file=cookies,
        proxy=proxy_routes(s),
    )


def frontier_config(
    s: Settings, *, state_db: Path, process_id: str | None = None
) -> FrontierConfig:
    """The frontier's backend, per-host politeness and (Redis) lease parameters; ``state_db`` is
    the crawl's SQLite database, ``process_id`` names this process in a shared crawl."""
    return FrontierConfig(
        backend=s.frontier,
        state_db=state_db,
        crawl_id=s.crawl_id,
        process_id=process_id,
        lease_timeout=s.lease_timeout or 120.0,
        max_claim=max(s.workers, 1),
        concurrency=s.per_host_concurrency,
        delay=s.per_host_delay or 0.0,
        max_pause=s.max_retry_after or 600.0,
        max_crawl_delay=s.max_crawl_delay if s.max_crawl_delay is not None else math.inf,
    )


def robots_checker(
    s: Settings, *, set_host_delay: HostDelay | None, shared: RobotsCache | None
) -> Robots:
    """robots.txt as ``--robots`` says (RFC 9309: obeyed, or fetched and archived but not
    obeyed), for ``--robots-agent``; a Crawl-delay, capped by ``--max-crawl-delay``, reaches
    the frontier through ``set_host_delay``; ``shared`` is the copy the processes of a crawl
    share."""
    return Robots(
        agent=s.robots_agent,
        obey=s.robots == "obey",
        exempt_requisites=s.robots_exempt_requisites,
        max_crawl_delay=s.max_crawl_delay,
        set_host_delay=set_host_delay,
        shared=shared,
    )


def politeness(s: Settings) -> Politeness:
    """The per-host limits the crawl starts with (its ``control.toml`` may change them)."""
    return Politeness(s.per_host_delay or 0.0, s.per_host_concurrency)


def record_factory(s: Settings, clock: Clock) -> RecordFactory:
    """Records with ``--digest`` digests, dated by ``clock``; request records without cookie
    values with ``--redact-cookies``."""
    return RecordFactory(algorithm=s.digest, clock=clock, redact_cookies=s.redact_cookies)


def writer_config(
    s: Settings, *, directory: Path, journal: IndexJournal, crawl_name: str, host: str
) -> WriterConfig:
    """The single writer's files: in ``directory``, named ``{prefix}-{timestamp}-{serial}-
    {host}.warc.gz`` (the prefix is ``--warc-prefix`` or the crawl's name), rotated at
    ``--warc-size``, synced every ``--fsync-interval``; each capture's index line goes to
    ``journal``."""
    return WriterConfig(
        directory=directory,
        journal=journal,
        prefix=s.warc_prefix or safe_name_part(crawl_name, default="crawl"),
        host=host,
        max_size=s.warc_size or 10**18,
        fsync_interval=s.fsync_interval or 5.0,
        compress_level=s.compress_level,
        warcinfo_fields=warcinfo_fields(s, crawl_name),
    )


def browser_config(s: Settings, state_dir: Path) -> BrowserConfig:
    """The browser stage of ``--browser all|auto``: Chromium, its tabs, how long a page may
    take, its behaviours and screenshots, and the fetcher's User-Agent (so that both agree);
    its profile and logs in ``state_dir``; the ``--profile``'s localStorage."""
    # imported here: a static crawl does not load the browser stage at all
    from archiver.browser.pool import BrowserConfig  # noqa: PLC0415

    return BrowserConfig(
        state_dir=state_dir,
        chromium=s.chromium,
        tabs=s.browser_tabs,
        page_timeout=s.page_timeout,
        behaviors=s.behaviors,
        click_selectors=s.click_selector,
        behavior_scripts=behavior_scripts(s),
        # a replay check (--qa) compares with the page as the crawl saw it: its full-page
        # screenshot is stored with the page
        screenshots=(*s.screenshots, "full") if s.qa else s.screenshots,
        user_agent=s.user_agent,
        local_storage=profile.local_storage if (profile := login_profile(s)) is not None else {},
    )


def session_policy(s: Settings) -> SessionPolicy:
    """How the crawl tells that its login session ended (``--logged-out``, ``--login-check``)
    and what its final message tells the operator to do then."""
    profile = login_profile(s)
    return SessionPolicy(
        rules=parse_rules(s.logged_out),
        check_url=s.login_check,
        hint=session_hint(
            profile=str(s.profile) if s.profile is not None else None,
            login_url=profile.login_url if profile is not None else None,
            login_script=s.login_script is not None,
            cookies_file=s.cookies is not None,
        ),
    )


def warcinfo_fields(s: Settings, crawl_name: str) -> tuple[tuple[str, str], ...]:
    """The warcinfo block of every WARC file: software, policies, the crawl's settings."""
    digest_policy = (
        f"WARC-Block-Digest: {s.digest} of the stored block; WARC-Payload-Digest: {s.digest} "
        "of the entity body with the transfer coding removed and the content coding kept "
        "(WARC 1.1 section 5.9, iipc/warc-specifications#22); sha1 in Base32, others Base16"
    )
    robots = "rfc9309 (obey)" if s.robots == "obey" else "ignore"
    if s.robots == "obey" and s.robots_exempt_requisites:
        robots += "; page requisites exempt"
    tls = (
        "strict (unverifiable servers are not fetched)"
        if s.tls_verify
        else ("capture-anyway (failed certificate verifications are recorded in metadata records)")
    )
    fields = [
        ("software", software_string()),
        ("format", "WARC File Format 1.1"),
        (
            "conformsTo",
            "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        ),
        ("hostname", socket.gethostname()),
        ("operator", s.operator),
        ("description", s.description),
        ("isPartOf", s.crawl_id or crawl_name),
        ("http-header-user-agent", s.user_agent),
        ("robots", robots),
        ("digest-policy", digest_policy),
        ("tls-policy", tls),
        ("request-records", REQUEST_RECORDS_REDACTED if s.redact_cookies else REQUEST_RECORDS),
        ("crawl-settings", s.to_json_text()),
    ]
    return with_operator_fields(fields, s.warc_header)


#: What warcinfo says of request records (SPEC-NOTES D: a redaction must be declared, since it
#: changes "the request as sent", WARC 1.1 section 6.5.2).
REQUEST_RECORDS = (
    "as sent, not redacted (configured credential headers are sent only to the seeds' "
    "hosts and --credential-host hosts, and are redacted from crawl-settings; cookies "
    "go where their domain says, and their values are in no other record)"
)
REQUEST_RECORDS_REDACTED = (
    "as sent, except that the value of every Cookie header is replaced by 'redacted' "
    "(--redact-cookies): these records are not byte-exact, and their WARC-Block-Digest is "
    "that of the redacted block"
)


def with_operator_fields(
    fields: list[tuple[str, str]], given: tuple[tuple[str, str], ...]
) -> tuple[tuple[str, str], ...]:
    """``--warc-header`` fields added to the warcinfo block (WARC 1.1 section 6.2 leaves its
    fields open): one with the name of a field archiver writes replaces that field's value in
    place (names compare case-insensitively, as WARC field names do); the others follow, in
    the order given."""
    out = list(fields)
    index = {name.lower(): i for i, (name, _) in enumerate(out)}
    for name, value in given:
        at = index.get(name.lower())
        if at is None:
            out.append((name, value))
        else:
            out[at] = (out[at][0], value)
    return tuple(out)


def software_string() -> str:
    """``archiver/X (aiohttp/Y; warcio/Z; Python W)`` for warcinfo and the summary."""
    parts = []
    for dist in ("aiohttp", "warcio", "selectolax"):
        try:
            parts.append(f"{dist}/{importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    parts.append(f"Python {platform.python_version()}")
    return f"archiver/{__version__} ({'; '.join(parts)})"
