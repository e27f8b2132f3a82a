"""The FastAPI app of the ReplicaLab server, on OpenEnv's conventions, and how uvicorn runs it.

`WS /ws` (`websocket`) holds one session per connection; the HTTP endpoints (`http_routes`)
follow OpenEnv's server; `guards` checks the token and reads each body within its limits;
`protocol` bounds connections and the time for a request's headers. Every refusal is typed
(`ErrorCode`) and touches one request only: the server and the other sessions carry on. Env
steps run on the event loop: they take about a millisecond, less than a hop to a thread pool
would add, and every per-session cost is bounded by the operator's limits (`settings`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import uvicorn
from fastapi import FastAPI, WebSocket

from replicalab.baselines.server.guards import Guard
from replicalab.baselines.server.http_routes import add_error_handlers, add_info_routes, add_session_routes
from replicalab.baselines.server.protocol import guarded_protocol
from replicalab.baselines.server.sessions import SessionTable
from replicalab.baselines.server.settings import ServerSettings
from replicalab.baselines.server.websocket import PROTOCOL_SLACK, serve_websocket


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    """The server's app; `settings` bound its sessions (the defaults without)."""
    settings = settings or ServerSettings()
    table = SessionTable(settings)
    app = FastAPI(
        title="ReplicaLab environment server", lifespan=_reaping(table), docs_url=None, redoc_url=None
    )
    app.state.sessions = table
    app.add_middleware(Guard, settings=settings)
    add_error_handlers(app)
    add_info_routes(app, table)
    add_session_routes(app, table)

    @app.websocket("/ws")
    async def websocket(ws: WebSocket) -> None:
        await serve_websocket(ws, table, settings)

    return app


def _reaping(table: SessionTable) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
    """The app's lifespan: a task that closes idle HTTP sessions while it runs."""
    settings = table.settings
    period = min(settings.unstepped_timeout_s, settings.idle_timeout_s) / 4

    async def reap() -> None:
        while True:
            await asyncio.sleep(min(period, 5.0))
            table.reap()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.create_task(reap())
        yield
        reaper.cancel()

    return lifespan


def uvicorn_config(app: FastAPI, settings: ServerSettings, host: str, port: int) -> uvicorn.Config:
    """How uvicorn runs `app`: `replicalab serve` and the loopback servers alike."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=guarded_protocol(settings),
        ws_max_size=settings.max_body_bytes * PROTOCOL_SLACK,
        ws_per_message_deflate=settings.ws_compression,
        timeout_graceful_shutdown=settings.shutdown_timeout_s,
        log_config=None,
        access_log=False,
        lifespan="on",
    )


def __getattr__(name: str) -> FastAPI:
    """`app`: the server with the default settings, for `uvicorn replicalab.baselines.server.app:app`
    and OpenEnv's manifest; built on first use, so importing the module builds nothing."""
    if name == "app":
        return create_app()
    raise AttributeError(name)
