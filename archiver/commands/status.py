"""The status endpoint of a running crawl (``--status-port``): Prometheus metrics, the progress
snapshot as JSON, and a health check, for the monitoring an archivist already runs (Zeno's
``--prometheus``, Browsertrix's ``--healthCheckPort``).

``GET /metrics``
    The Prometheus text exposition format, written by prometheus-client from one
    :meth:`archiver.run.crawler.CrawlControl.snapshot`: counters for pages, captures, revisits,
    bytes received and written, retries, responses by status class, errors and skips by reason,
    and captures per host for the :data:`TOP_HOSTS` busiest hosts only (a crawl meets thousands of
    hosts; a label per host would swamp the scraper); gauges for the queue, the fetches in
    flight, the URLs seen, the seconds since the last progress.
``GET /status``
    The snapshot the progress display draws, as JSON.
``GET /healthz``
    ``200`` while the crawl makes progress, ``503`` when it is stalled: URLs are queued or in
    flight but none has ended (captured, failed, skipped or put back for a retry) for
    ``--stall-after`` seconds. The body is a small JSON object saying which; a crawl the
    operator paused (``DIR/paused``) is ``paused``, not stalled.

It is read-only by construction: three ``GET`` routes (``HEAD`` too) that read a snapshot,
nothing else (any other method is ``405``, RFC 9110 section 15.5.6). It cannot stop or slow the
crawl: it holds no reference to anything but the snapshot function, its handlers do no I/O
besides the answer, and a failure of the server is the server's (aiohttp answers 500), never the
crawl's. It binds 127.0.0.1 unless ``--status-host`` says otherwise; a port that cannot be bound
is a usage error before the crawl starts. It stops when the crawl's run ends. In a crawl shared
through Redis each process serves its own (the queue counts are the crawl's, the rest the
process's).

Served with aiohttp.web, in the crawl's event loop: reading the snapshot there needs no lock
(prometheus-client's own server answers from a thread, which would read the crawl's counters
while the loop changes them), and it stops with ``await`` like every other part of the run.
prometheus-client is imported here and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from archiver.errors import SettingsError
from archiver.run.stats import QaSnapshot, Snapshot
from archiver.version import __version__

#: Hosts with a per-host counter: the busiest ones, as many as the snapshot's ``by_host`` has
#: (bounded label cardinality).
TOP_HOSTS = 20
#: Seconds between two samples of the crawl's progress (for /healthz).
SAMPLE_SECONDS = 1.0


class SnapshotSource(Protocol):
    """What the endpoint reads: a :class:`archiver.run.crawler.CrawlControl` satisfies it."""

    def snapshot(self) -> Snapshot: ...


def progress_count(snapshot: Snapshot) -> int:
    """How many things have ended so far: a number that grows while the crawl moves on."""
    ended = snapshot.captures + snapshot.retries
    return ended + sum(snapshot.failures.values()) + sum(snapshot.skips.values())


@dataclass(slots=True)
class Health:
    """Whether the crawl moves on: sampled every :data:`SAMPLE_SECONDS`, so a stall is seen
    even when nobody asks for a while."""

    stall_after: float
    clock: Callable[[], float] = time.monotonic
    _count: int = -1
    _since: float = 0.0

    def sample(self, snapshot: Snapshot) -> None:
        count = progress_count(snapshot)
        if count != self._count:
            self._count, self._since = count, self.clock()

    def quiet(self) -> float:
        """Seconds since the progress count last changed (0 before the first sample)."""
        return self.clock() - self._since if self._count >= 0 else 0.0

    def verdict(self, snapshot: Snapshot) -> tuple[bool, dict[str, Any]]:
        """``(healthy, body)`` for /healthz."""
        self.sample(snapshot)
        quiet = self.quiet()
        pending = snapshot.queued + snapshot.in_flight
        if snapshot.stopping:
            state = "stopping"
        elif snapshot.paused:
            state = "paused"  # the operator's: no progress is expected, and none is a stall
        elif pending == 0:
            state = "idle"  # nothing to do now (retries waiting, or the end)
        elif quiet >= self.stall_after:
            state = "stalled"
        else:
            state = "running"
        body = {
            "status": state,
            "seconds_since_progress": round(quiet, 1),
            "stall_after": self.stall_after,
            "queued": snapshot.queued,
            "in_flight": snapshot.in_flight,
        }
        return state != "stalled", body


class SnapshotCollector(Collector):
    """Prometheus metrics made from one snapshot at each scrape (a custom collector: the
    crawl's counters are its own, nothing is mirrored into prometheus-client's objects)."""

    def __init__(self, source: SnapshotSource, health: Health) -> None:
        self._source = source
        self._health = health

    def collect(self) -> Iterator[Metric]:
        snap = self._source.snapshot()
        self._health.sample(snap)
        counters = (
            ("pages", "HTML pages captured with a 2xx status", snap.pages),
            ("captures", "Responses and revisits written", snap.captures),
            ("revisits", "Captures written as revisit records", snap.revisits),
            ("bytes_received", "Response bytes received (headers and body)", snap.bytes_received),
            ("bytes_written", "WARC bytes written", snap.bytes_written),
            ("retries", "Fetches put back to be tried again later", snap.retries),
        )
        for name, doc, count in counters:
            yield CounterMetricFamily(f"archiver_{name}", doc, value=count)
        if snap.qa is not None:
            yield from _qa_metrics(snap.qa)
        yield _labelled(
            "archiver_responses", "Captures by HTTP status class", "class", snap.by_status_class
        )
        yield _labelled("archiver_errors", "URLs that failed, by reason", "reason", snap.failures)
        yield _labelled("archiver_skips", "URLs not fetched, by reason", "reason", snap.skips)
        yield _labelled(
            "archiver_host_captures",
            f"Captures per host, for the {TOP_HOSTS} hosts with the most",
            "host",
            snap.by_host,
        )
        gauges: tuple[tuple[str, str, float], ...] = (
            ("queued", "URLs queued (the whole crawl's, when shared)", snap.queued),
            ("in_flight", "Fetches in flight in this process", snap.in_flight),
            ("seen", "URLs seen (queued once)", snap.seen),
            ("elapsed_seconds", "Seconds since this run started", snap.elapsed),
            ("seconds_since_progress", "Seconds since a URL last ended", self._health.quiet()),
            ("stopping", "1 once the crawl is stopping", int(snap.stopping)),
            ("paused", "1 while the operator has the crawl paused", int(snap.paused)),
        )
        for name, doc, value in gauges:
            yield GaugeMetricFamily(f"archiver_{name}", doc, value=value)
        info = GaugeMetricFamily("archiver_info", "The crawler's version", labels=["version"])
        info.add_metric([__version__], 1)
        yield info


def _qa_metrics(qa: QaSnapshot) -> Iterator[Metric]:
    """The replay check of each page (``--qa``); at the end, summary.json's ``qa`` totals."""
    counters = (
        ("pages_checked", "Pages replayed from the archive and checked", qa.checked),
        ("pages_complete", "Pages checked whose replay lacked nothing", qa.complete),
        ("pages_incomplete", "Pages checked whose replay still lacks URLs", qa.incomplete),
        ("misses_found", "URLs a page's replay asked for and the archive lacked", qa.misses_found),
        ("misses_patched", "Of those, URLs captured for the page since", qa.misses_patched),
    )
    for name, doc, count in counters:
        yield CounterMetricFamily(f"archiver_qa_{name}", doc, value=count)


def _labelled(name: str, doc: str, label: str, values: Mapping[str, Any]) -> Metric:
    family = CounterMetricFamily(name, doc, labels=[label])
    for key, value in sorted(values.items()):
        family.add_metric([str(key)], value)
    return family


class StatusServer:
    """The endpoint for one crawl: ``async with serving(...)`` starts and stops it."""

    def __init__(self, source: SnapshotSource, *, stall_after: float) -> None:
        self.source = source
        self.health = Health(stall_after)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SnapshotCollector(source, self.health))
        self._runner: web.AppRunner | None = None
        self.address: tuple[str, int] | None = None

    @property
    def url(self) -> str:
        assert self.address is not None
        host, port = self.address
        return f"http://{f'[{host}]' if ':' in host else host}:{port}/"

    def application(self) -> web.Application:
        app = web.Application(client_max_size=1024)  # requests carry no body worth reading
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/status", self._status)
        app.router.add_get("/healthz", self._healthz)
        return app

    async def start(self, host: str, port: int) -> None:
        runner = web.AppRunner(self.application(), access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port)
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise SettingsError(
                "--status-port", f"cannot listen on {host}:{port}: {exc.strerror or exc}"
            ) from None
        self._runner = runner
        address = runner.addresses[0]
        self.address = (str(address[0]), int(address[1]))

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def sample_forever(self) -> None:
        while True:
            self.health.sample(self.source.snapshot())
            await asyncio.sleep(SAMPLE_SECONDS)

    async def _metrics(self, _: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _status(self, _: web.Request) -> web.Response:
        return _json(self.source.snapshot().to_json())

    async def _healthz(self, _: web.Request) -> web.Response:
        healthy, body = self.health.verdict(self.source.snapshot())
        return _json(body, status=200 if healthy else 503)


def _json(data: Any, status: int = 200) -> web.Response:
    body = json.dumps(data, default=str).encode("utf-8")
    return web.Response(
        body=body,
        status=status,
        content_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


@contextlib.asynccontextmanager
async def serving(
    source: SnapshotSource, host: str, port: int | None, *, stall_after: float
) -> AsyncIterator[StatusServer | None]:
    """Serve the endpoint while the block runs (nothing when ``port`` is None)."""
    if port is None:
        yield None
        return
    server = StatusServer(source, stall_after=stall_after)
    await server.start(host, port)
    sampler = asyncio.create_task(server.sample_forever(), name="status-sampler")
    try:
        yield server
    finally:
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
        await server.stop()


__all__ = [
    "SAMPLE_SECONDS",
    "TOP_HOSTS",
    "Health",
    "SnapshotCollector",
    "StatusServer",
    "progress_count",
    "serving",
]
