"""Running the server: uvicorn with the app, a ready line once it listens, the log configured.

`replicalab serve` calls `serve`; `loopback` runs the same server in a thread.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Callable

import uvicorn

from replicalab.baselines.server import events
from replicalab.baselines.server.app import create_app, uvicorn_config
from replicalab.baselines.server.settings import ServerSettings

Address = tuple[str, int]


class ReadyServer(uvicorn.Server):
    """uvicorn's server, calling `on_ready` with the address it bound (the port it was given,
    or the one the system chose for port 0) once it accepts connections."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[Address], None] | None = None) -> None:
        super().__init__(config)
        self.on_ready = on_ready
        self.address: Address | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().startup(sockets)
        if self.started:
            bound = self.servers[0].sockets[0].getsockname()
            self.address = (str(bound[0]), int(bound[1]))
            if self.on_ready is not None:
                self.on_ready(self.address)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        events.event("server_stopping", open_sessions=len(self.config.app.state.sessions))
        await super().shutdown(sockets)
        events.event("server_stopped")


def url_of(address: Address) -> str:
    host, port = address
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def print_ready(address: Address) -> None:
    """The ready line, on stdout: what a script waits for, with the address to use."""
    url = url_of(address)
    print(f"replicalab serve: ready on {url} (WebSocket {url.replace('http', 'ws', 1)}/ws)", flush=True)


def serve(settings: ServerSettings, host: str, port: int, log_json: bool = False) -> None:
    """Serve until SIGINT or SIGTERM (open requests get `settings.shutdown_timeout_s` to finish,
    then uvicorn raises the signal again: the process ends as that signal ends it)."""
    events.configure(json_lines=log_json)
    server = ReadyServer(uvicorn_config(create_app(settings), settings, host, port), print_ready)
    events.event(
        "server_starting",
        host=host,
        port=port,
        max_sessions=settings.max_sessions,
        token=settings.token is not None,
    )
    server.run()
    if not server.started:
        sys.exit(1)
