"""The Redis frontier's host politeness: the :class:`~archiver.frontier.base.HostPoliteness` of
a crawl shared by processes.

Per-host slots and start times live in Redis (``P:host:HOST``) and are taken inside CLAIM with
the URL, so the limits hold for every process together; what is here is what the rest of a
crawl tells them while it runs: a robots.txt Crawl-delay, a page's second request inside its
lease, the operator's new limits (published in ``P:politeness`` for every process). Each process
also keeps a mirror of its own claims in a :class:`~archiver.policy.politeness.HostGate`, for
the synchronous :meth:`RedisPoliteness.reserve`.
"""

from __future__ import annotations

from archiver.frontier.redis.pump import Pump, ScriptCall
from archiver.policy.politeness import HostGate


class RedisPoliteness:
    """Host politeness for one process of a shared crawl, through its ``pump``."""

    def __init__(self, pump: Pump, gate: HostGate, process_id: str) -> None:
        self._pump = pump
        self._gate = gate
        self._process_id = process_id
        self._key = pump.link.key("politeness")
        #: the crawl-wide politeness last applied from P:politeness (or published from here)
        self._politeness: tuple[float, int] | None = None

    def set_host_delay(self, host: str, seconds: float) -> None:
        """Apply a robots.txt Crawl-delay, for every process (claims read it from Redis)."""
        gate = self._gate
        gate.set_crawl_delay(host, seconds)  # this process's mirror, for ``reserve``
        delay = min(seconds, gate.max_crawl_delay)  # claims space by the longer of it and ours
        self._pump.push(ScriptCall("delay", (gate.concurrency, host, repr(delay))), urgent=True)

    def set_host_spacing(self, host: str, seconds: float) -> None:
        """A seed's delay for ``host``, for every process (``scripts/spacing.lua`` keeps the
        longest in ``P:host:HOST``, which claims read)."""
        gate = self._gate
        gate.set_spacing(host, seconds)  # this process's mirror, for ``reserve``
        self._pump.push(ScriptCall("spacing", (gate.concurrency, host, repr(seconds))), urgent=True)

    def set_politeness(self, delay: float, concurrency: int) -> None:
        """New per-host delay and concurrency for every process of the crawl.

        Applied here at once (every claim and outcome this process sends carries them), and
        published in ``P:politeness``, which each process reads every second or so
        (:meth:`shared_politeness`): per-host limits are the crawl's, not one process's, so
        the latest change made through any process's ``control.toml`` holds for all of them,
        processes that join later included (``scripts/politeness.lua``)."""
        self._apply(delay, concurrency)
        self._politeness = (delay, concurrency)
        change = (concurrency, repr(delay), self._process_id)
        self._pump.push(ScriptCall("politeness", change), urgent=True)

    async def shared_politeness(self) -> tuple[float, int] | None:
        """What another process published in ``P:politeness`` since this one last looked,
        applied here; None when nothing changed."""
        raw = await self._pump.ask("HMGET", self._key, "delay", "concurrency")
        if raw[0] is None or raw[1] is None:
            return None
        shared = (float(raw[0]), int(raw[1]))
        if shared == self._politeness:
            return None
        self._politeness = shared
        self._apply(*shared)
        return shared

    def _apply(self, delay: float, concurrency: int) -> None:
        self._gate.configure(delay=delay, concurrency=concurrency)
        self._pump.politeness_changed()

    def reserve(self, host: str) -> float:
        """Book one more request to ``host`` inside the current lease; the seconds to wait.

        The protocol makes this synchronous, so the wait comes from this process's mirror of
        the host (its own claims, the host's delay) and the booking goes to Redis at once,
        where it spaces every later claim. A request another process started to the same host
        since this lease was claimed is not seen here: with a delay and more than one slot per
        host, this page may start closer than ``delay`` to that one (never to this process's
        own requests); an ``async`` reserve would close that gap.
        """
        gate = self._gate
        wait = gate.reserve(host)
        self._pump.push(
            ScriptCall("reserve", (gate.concurrency, host, repr(gate.delay))), urgent=True
        )
        return wait
