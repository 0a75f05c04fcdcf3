"""The private redis-server of ``--processes N``, as real processes: its keeper stops it when
the lifeline closes, a server left by a dead run is stopped (through its own socket) and its
data kept, and a pid file naming somebody else's process never gets that process signalled."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import redis

from archiver.processes.redisserver import PrivateRedis, redis_binary
from tests.support.processes import wait_exited


def alive(pid: int) -> bool:
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return False


def wait_gone(pid: int, guard: float = 60.0) -> None:
    wait_exited([pid], guard)
    assert not alive(pid), f"pid {pid} still running"


async def test_the_keeper_stops_the_server_when_the_lifeline_closes(tmp_path: Path) -> None:
    server = PrivateRedis(tmp_path / "state", redis_binary())
    await server.start()
    assert server.keeper is not None
    client = redis.Redis(unix_socket_path=str(server.socket_path))
    client.set("kept", "yes")
    client.close()
    assert json.loads(server.pid_file.read_text())["redis"] == server.server_pid
    pids = (server.server_pid, server.keeper.pid)
    await server.stop()  # closes our end; nobody else holds one
    for pid in pids:
        wait_gone(pid)
    assert not server.pid_file.exists()
    again = PrivateRedis(tmp_path / "state", redis_binary())
    await again.start()  # the append-only file brings the data back
    client = redis.Redis(unix_socket_path=str(again.socket_path))
    assert client.get("kept") == b"yes"
    client.close()
    await again.stop()


async def test_a_server_left_by_a_dead_run_is_stopped_and_its_data_kept(tmp_path: Path) -> None:
    """What a run leaves when its keeper is gone but redis-server is not (a system without
    prctl, a keeper killed before it could start the server with it): the next start asks
    that server to SHUTDOWN through its socket, then starts its own on the same data."""
    state = tmp_path / "state"
    first = PrivateRedis(state, redis_binary())
    first.directory.mkdir(parents=True)
    # the server alone, as a dead run would leave it
    stray = await asyncio.create_subprocess_exec(*first.server_args(), start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                client = redis.Redis(unix_socket_path=str(first.socket_path))
                client.set("left", "over")
                client.close()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        first.pid_file.write_text(
            json.dumps({"redis": stray.pid, "keeper": 0, "socket": str(first.socket_path)})
        )
        second = PrivateRedis(state, redis_binary())
        await second.start()
        assert await asyncio.wait_for(stray.wait(), 60) == 0  # asked to stop: it did
        client = redis.Redis(unix_socket_path=str(second.socket_path))
        assert client.get("left") == b"over"
        client.close()
        await second.stop()
    finally:
        if stray.returncode is None:
            stray.kill()
            await stray.wait()


async def test_a_pid_file_naming_another_process_signals_nothing(tmp_path: Path) -> None:
    """A pid reused by another program after a crash: /proc shows it is not this crawl's
    server, so it is left alone."""
    state = tmp_path / "state"
    (state / "redis").mkdir(parents=True)
    other = await asyncio.create_subprocess_exec("sleep", "300", start_new_session=True)
    try:
        (state / "redis" / "redis.pid").write_text(
            json.dumps({"redis": other.pid, "keeper": 0, "socket": str(tmp_path / "no.sock")})
        )
        server = PrivateRedis(state, redis_binary())
        await server.start()
        await server.stop()
        assert other.returncode is None and alive(other.pid)  # never signalled
        assert (tmp_path / "state").is_dir()  # nor anything removed that is not ours
    finally:
        os.kill(other.pid, signal.SIGTERM)
        await other.wait()
