"""archiver.config.assemble: settings become each component's configuration here only."""

from __future__ import annotations

from pathlib import Path

from archiver.config.assemble import frontier_config
from archiver.config.settings import Settings


def test_frontier_config_from_settings(tmp_path: Path) -> None:
    settings = Settings(
        seeds=("http://a.example/",),
        frontier="redis://127.0.0.1:6379/2",
        crawl_id="big",
        lease_timeout=45.0,
        workers=32,
        per_host_concurrency=3,
        per_host_delay=1.5,
        max_retry_after=90.0,
        max_crawl_delay=None,
    )
    config = frontier_config(settings, state_db=tmp_path / "f.sqlite", process_id="host-1")
    assert config.shared
    assert (config.backend, config.crawl_id, config.process_id) == (
        "redis://127.0.0.1:6379/2",
        "big",
        "host-1",
    )
    assert (config.lease_timeout, config.max_claim, config.state_db) == (
        45.0,
        32,
        tmp_path / "f.sqlite",
    )
    gate = config.host_gate()
    assert (gate.concurrency, gate.delay, gate.max_pause) == (3, 1.5, 90.0)
    assert gate.max_crawl_delay == float("inf")
    sqlite = frontier_config(Settings(seeds=("http://a.example/",)), state_db=tmp_path / "x")
    assert not sqlite.shared and sqlite.backend == "sqlite"
