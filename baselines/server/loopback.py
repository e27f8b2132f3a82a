"""A ReplicaLab server on this machine's loopback address, on a free port: in a thread of the
calling process (`serve_in_thread`, e.g. beside a trainer that plays through it) or as its own
`replicalab serve` process (`start_process`, which waits for the ready line).

    with serve_in_thread() as server:
        with ReplicaLabClient(base_url=server.url).sync() as env:
            ...
"""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from fastapi import FastAPI

from replicalab.baselines.server.app import create_app, uvicorn_config
from replicalab.baselines.server.run import ReadyServer, url_of
from replicalab.baselines.server.sessions import SessionTable
from replicalab.baselines.server.settings import ServerSettings

T = TypeVar("T")
HOST = "127.0.0.1"
READY = re.compile(r"replicalab serve: ready on (http://\S+)")


@dataclass
class LoopbackServer:
    url: str  # http://127.0.0.1:PORT
    app: FastAPI
    thread: threading.Thread
    server: ReadyServer

    def on_loop(self, work: Callable[[], T]) -> T:
        """Run `work` on the server's event loop (where its state lives) and return its result."""
        assert self.server.loop is not None

        async def run() -> T:
            return work()

        return asyncio.run_coroutine_threadsafe(run(), self.server.loop).result(timeout=30)

    @property
    def ws_url(self) -> str:
        return self.url.replace("http", "ws", 1) + "/ws"

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def sessions(self) -> SessionTable:
        table: SessionTable = self.app.state.sessions
        return table

    def alive(self) -> bool:
        return self.thread.is_alive()


def free_port() -> int:
    """A port of the loopback address that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serve_in_thread(
    settings: ServerSettings | None = None, start_timeout_s: float = 60.0
) -> Iterator[LoopbackServer]:
    """A server in a daemon thread on a port the system picks; stopped on exit."""
    settings = settings or ServerSettings()
    app = create_app(settings)
    server = ReadyServer(uvicorn_config(app, settings, HOST, 0))
    thread = threading.Thread(target=server.run, daemon=True, name="replicalab-server")
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while server.address is None:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the loopback server did not start")
        time.sleep(0.01)
    try:
        yield LoopbackServer(url_of(server.address), app, thread, server)
    finally:
        server.should_exit = True
        thread.join(timeout=settings.shutdown_timeout_s + 10)


def serve_command(*options: str) -> list[str]:
    """The command that runs `replicalab serve OPTIONS` with this Python."""
    return [sys.executable, "-m", "replicalab.baselines.cli", "serve", *options]


@dataclass
class ServerProcess:
    process: subprocess.Popen[str]
    url: str

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then the exit code."""
        self.process.terminate()
        return self.process.wait(timeout=timeout_s)


def start_process(
    options: Sequence[str] = (), start_timeout_s: float = 120.0, **popen: object
) -> ServerProcess:
    """`replicalab serve --port 0 OPTIONS` on the loopback address, once it printed its ready line;
    its log (stderr) goes where `popen` says (inherited by default)."""
    command = serve_command("--host", HOST, "--port", "0", *options)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, **popen)  # type: ignore[call-overload]
    assert process.stdout is not None
    deadline = time.monotonic() + start_timeout_s
    for line in process.stdout:  # the ready line is the first it prints
        ready = READY.search(line)
        if ready:
            return ServerProcess(process, ready.group(1))
        if time.monotonic() > deadline:
            break
    process.kill()
    process.wait()
    raise RuntimeError(f"replicalab serve did not start (exit code {process.returncode})")
