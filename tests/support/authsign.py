"""authsign, webrecorder's WACZ signing server, run on 127.0.0.1 for tests.

It lives in a venv of its own (``.venv-authsign``, made by ``scripts/tools-venv .venv-authsign
scripts/authsign-requirements.txt uvicorn``; :func:`authsign_venv` makes it on demand). It is
given what it would otherwise ask Let's Encrypt and FreeTSA for: a domain certificate and key
in its data directory (signer.py loads ``cert.pem`` and ``private-key.pem`` when they exist,
and asks ACME only when they do not) and a time stamp authority URL
(:mod:`tests.support.tsa`); its trusted roots are the test CA's.

The listening socket is made here and handed to uvicorn (``--fd``): no free-port race, and a
request sent before the server is ready waits in the socket's backlog instead of failing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import socket
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.pki import AUTHSIGN_PASSPHRASE, TestCA
from tests.support.tools import INSTALL_TIMEOUT, REPO_ROOT, ToolsError

VENV = REPO_ROOT / ".venv-authsign"
REQUIREMENTS = "scripts/authsign-requirements.txt"
STOP_WAIT = 10.0


@functools.cache
def authsign_venv() -> Path:
    """The authsign venv, created or refreshed when missing or stale."""
    proc = subprocess.run(
        [str(REPO_ROOT / "scripts" / "tools-venv"), ".venv-authsign", REQUIREMENTS, "uvicorn"],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    if proc.returncode != 0:
        raise ToolsError(f"tools-venv .venv-authsign failed:\n{proc.stderr[-4000:]}")
    return VENV


@dataclass(frozen=True)
class AuthsignServer:
    url: str  #: ``http://127.0.0.1:PORT``
    domain: str
    log: Path

    @property
    def sign_url(self) -> str:
        return f"{self.url}/sign"

    @property
    def verify_url(self) -> str:
        return f"{self.url}/verify"


CONFIG = """\
signing:
  domain: {domain}
  email: signer@{domain}
  port: 80
  output: {data}
  staging: true
  timestamping:
    - url: {tsa_url}
trusted_roots: {roots}
"""
ROOTS = """\
domain_cert_roots:
  - {fingerprint}
timestamp_cert_roots:
  - {fingerprint}
"""


@contextlib.asynccontextmanager
async def authsign_server(
    ca: TestCA, workdir: Path, tsa_url: str, domain: str
) -> AsyncIterator[AuthsignServer]:
    """authsign signing as ``domain`` with a certificate from ``ca``, time-stamped by the TSA at
    ``tsa_url``; stopped (its process group) on exit."""
    venv = authsign_venv()
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    issued = ca.domain(domain)
    (data / "cert.pem").write_bytes(ca.chain(issued))
    (data / "private-key.pem").write_bytes(issued.key_pem(AUTHSIGN_PASSPHRASE))
    roots = workdir / "roots.yaml"
    roots.write_text(ROOTS.format(fingerprint=ca.fingerprint()))
    config = workdir / "config.yaml"
    config.write_text(CONFIG.format(domain=domain, data=data, tsa_url=tsa_url, roots=roots))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    log = workdir / "authsign.log"
    env = {**os.environ, "CONFIG": str(config), "NO_RENEW": "1"}
    with open(log, "wb") as out:
        proc = await asyncio.create_subprocess_exec(
            str(venv / "bin" / "uvicorn"), "authsign.main:app", "--fd", str(sock.fileno()),
            "--log-level", "warning",
            env=env, cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
            pass_fds=(sock.fileno(),), start_new_session=True,
        )  # fmt: skip
    sock.close()
    try:
        yield AuthsignServer(f"http://127.0.0.1:{port}", domain, log)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            await asyncio.wait_for(proc.wait(), STOP_WAIT)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            await proc.wait()
