"""A local HTTPS server whose certificate no client trusts (a throwaway trustme CA)."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import trustme
from aiohttp import web


@asynccontextmanager
async def self_signed_server(
    page: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> AsyncIterator[str]:
    """Serve ``page`` at ``/`` over TLS on 127.0.0.1; yields the URL ``https://127.0.0.1:PORT/``.

    The certificate names 127.0.0.1 and localhost but comes from a CA made for this server, so
    verification fails as it does for a self-signed site."""
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    trustme.CA().issue_cert("127.0.0.1", "localhost").configure_cert(server_ctx)
    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ctx)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        yield f"https://127.0.0.1:{port}/"
    finally:
        await runner.cleanup()
