"""A real ReplicaLab server on the loopback address, for the server tests: uvicorn in a thread
of the test process, on a free port, stopped on exit (or the command that runs one in its own
process). The test can read the server's session
table (`LiveServer.sessions`) to compare what the server holds with a local env."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn

from replicalab.baselines.server.app import ServerSettings, create_app, uvicorn_config
from replicalab.baselines.server.sessions import SessionTable


@dataclass
class LiveServer:
    url: str  # http://127.0.0.1:PORT
    ws_url: str  # ws://127.0.0.1:PORT/ws
    sessions: SessionTable
    thread: threading.Thread

    def alive(self) -> bool:
        return self.thread.is_alive()


def free_port() -> int:
    """A port of the loopback address that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def server_command(port: int, max_sessions: int) -> list[str]:
    """The command that runs `replicalab serve`'s server in its own process on `port`."""
    return [
        sys.executable,
        "-m",
        "replicalab.baselines.server",
        "--port",
        str(port),
        "--max-sessions",
        str(max_sessions),
    ]


@contextmanager
def live_server(settings: ServerSettings | None = None) -> Iterator[LiveServer]:
    settings = settings or ServerSettings()
    app = create_app(settings)
    port = free_port()
    server = uvicorn.Server(uvicorn_config(app, settings, "127.0.0.1", port))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield LiveServer(f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/ws", app.state.sessions, thread)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
