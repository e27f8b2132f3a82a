"""The FastAPI app of the ReplicaLab server, on OpenEnv's conventions, and how uvicorn runs it.

`WS /ws` (`websocket`) holds one session per connection; the HTTP endpoints (`http_routes`)
follow OpenEnv's server; `guards` checks where a request comes from, the token, and reads each
body within its limits; `protocol` bounds connections, the time for a request's headers and what
a WebSocket may leave unread. Every refusal is typed (`ErrorCode`) and touches one request only:
the server and the other sessions carry on. Env work runs on the event loop, charged to the
client address's budget (`budget`): a step takes about a millisecond, less than a hop to a
thread pool would add.

There is one way in, whatever starts it: `replicalab serve` runs `create_app(settings)` under
`uvicorn_config`, and `uvicorn replicalab.baselines.server.app:app` (what OpenEnv's manifest
names) serves the same app with the default settings and `$REPLICALAB_TOKEN`. In both, the app's
lifespan gives uvicorn the server's protocols and limits before it binds (`protocol.
guard_uvicorn`), and refuses to start beyond the loopback address without a token, or under a
server whose settings it cannot reach.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import uvicorn
from fastapi import FastAPI, WebSocket

from replicalab.baselines.server import events
from replicalab.baselines.server.guards import Guard, Receive, Scope, Send
from replicalab.baselines.server.http_routes import add_error_handlers, add_info_routes, add_session_routes
from replicalab.baselines.server.protocol import STOPPING, TABLE, guard_uvicorn
from replicalab.baselines.server.sessions import SessionTable
from replicalab.baselines.server.settings import TOKEN_ENV, ServerSettings, is_loopback
from replicalab.baselines.server.websocket import serve_websocket


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    """The server's app; `settings` bound its sessions (the defaults without)."""
    settings = settings or ServerSettings()
    table = SessionTable(settings)
    app = GuardedApp(
        settings,
        title="ReplicaLab environment server",
        lifespan=_reaping(table),
        docs_url=None,
        redoc_url=None,
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


def _reaping(table: SessionTable) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[Any]]:
    """The app's lifespan: a task that closes idle HTTP sessions while it runs, and, in the
    lifespan's state (which uvicorn shares with every connection), the event the protocols set
    when the server starts to stop and the table they ask whether to turn a client away."""
    settings = table.settings
    period = min(settings.unstepped_timeout_s, settings.idle_timeout_s) / 4

    async def reap() -> None:
        while True:
            await asyncio.sleep(min(period, 5.0))
            table.reap()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        reaper = asyncio.create_task(reap())
        table.stopping = asyncio.Event()
        yield {STOPPING: table.stopping, TABLE: table}
        reaper.cancel()

    return lifespan


class GuardedApp(FastAPI):
    """FastAPI's app that, before it starts, gives the uvicorn server running it the server's
    protocols and limits, or refuses to start (uvicorn then exits). It looks at the lifespan
    before FastAPI wraps it: uvicorn's settings are reached through the `receive` of the
    lifespan uvicorn runs, the one place an app can see them."""

    def __init__(self, settings: ServerSettings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            problem = self._guard(receive)
            if problem is not None:
                await receive()  # lifespan.startup
                await send({"type": "lifespan.startup.failed", "message": problem})
                return
        await super().__call__(scope, receive, send)

    def _guard(self, receive: Receive) -> str | None:
        """What stops the start, if anything."""
        config = getattr(getattr(receive, "__self__", None), "config", None)
        if not isinstance(config, uvicorn.Config):
            return "replicalab's server runs under uvicorn only: `replicalab serve` (docs/serving.md)"
        if self.settings.token is None and config.uds is None and not is_loopback(config.host):
            return f"--host {config.host}: beyond the loopback address every client needs ${TOKEN_ENV}"
        guard_uvicorn(config, self.settings)
        if config.log_config is not None and not events.logger.handlers:
            events.configure(json_lines=False)  # uvicorn's command line: the same log as serve's
        return None


def uvicorn_config(app: FastAPI, settings: ServerSettings, host: str, port: int) -> uvicorn.Config:
    """How uvicorn runs `app`: `replicalab serve` and the loopback servers alike."""
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False, lifespan="on")
    guard_uvicorn(config, settings)
    return config


def __getattr__(name: str) -> FastAPI:
    """`app`: the server with the default settings and `$REPLICALAB_TOKEN`, for `uvicorn
    replicalab.baselines.server.app:app` and OpenEnv's manifest; built on first use, so
    importing the module builds nothing."""
    if name == "app":
        return create_app(ServerSettings.from_environment())
    raise AttributeError(name)
