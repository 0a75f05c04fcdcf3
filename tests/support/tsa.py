"""An RFC 3161 time stamp authority on 127.0.0.1 for tests: OpenSSL's ``ts -reply`` (the
implementation FreeTSA, authsign's default authority, runs) behind a small aiohttp handler.

RFC 3161 section 3.4 (time-stamp protocol via HTTP): the request is POSTed as
``application/timestamp-query``, the answer is ``application/timestamp-reply``. The
authority's certificate comes from :class:`tests.support.pki.TestCA`; its chain (the
authority, then the root) is put in every token, as authsign asks (``certReq``) and needs
(it reads the chain from the token).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from aiohttp import web

from tests.support.pki import TestCA

#: OpenSSL's TSA configuration (openssl-ts(1), "CONFIGURATION FILE OPTIONS")
CONFIG = """\
[ tsa ]
default_tsa = tsa_config

[ tsa_config ]
dir = {dir}
serial = $dir/serial
crypto_device = builtin
signer_cert = $dir/tsa.pem
certs = $dir/root.pem
signer_key = $dir/tsa.key
signer_digest = sha256
default_policy = 1.3.6.1.4.1.99999.1
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = no
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""
OPENSSL_TIMEOUT = 60.0


def openssl() -> str:
    path = shutil.which("openssl")
    if path is None:
        raise RuntimeError("the openssl command is missing (scripts/test installs it)")
    return path


@asynccontextmanager
async def time_stamp_authority(ca: TestCA, workdir: Path) -> AsyncIterator[str]:
    """Serve a TSA whose certificate ``ca`` issued; yields its URL."""
    workdir.mkdir(parents=True, exist_ok=True)
    tsa = ca.tsa()
    (workdir / "tsa.pem").write_bytes(tsa.pem)
    (workdir / "tsa.key").write_bytes(tsa.key_pem())
    (workdir / "root.pem").write_bytes(ca.root.pem)
    (workdir / "serial").write_text("01\n")
    config = workdir / "openssl-tsa.cnf"
    config.write_text(CONFIG.format(dir=workdir))
    lock = asyncio.Lock()  # the serial file is read and written by each reply

    async def reply(request: web.Request) -> web.Response:
        query = await request.read()
        async with lock:
            with tempfile.TemporaryDirectory(dir=workdir) as tmp:
                (Path(tmp) / "q.tsq").write_bytes(query)
                proc = await asyncio.create_subprocess_exec(
                    openssl(), "ts", "-reply", "-config", str(config),
                    "-queryfile", str(Path(tmp) / "q.tsq"), "-out", str(Path(tmp) / "r.tsr"),
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                )  # fmt: skip
                _, err = await asyncio.wait_for(proc.communicate(), OPENSSL_TIMEOUT)
                if proc.returncode != 0:
                    return web.Response(status=500, text=err.decode(errors="replace"))
                body = (Path(tmp) / "r.tsr").read_bytes()
        return web.Response(body=body, content_type="application/timestamp-reply")

    app = web.Application()
    app.router.add_post("/", reply)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/"
    finally:
        await runner.cleanup()
