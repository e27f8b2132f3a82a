"""`replicalab serve` as an operator runs it: the ready line with the address, one log line per
session event (JSON lines with --log-json), a stop on SIGTERM whatever its clients do, a token
required beyond the loopback address, and a start that never loads OpenEnv's web interface."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import pytest

pytest.importorskip("openenv", reason="the server tests need the [server] extra (openenv-core)")
httpx = pytest.importorskip("httpx", reason="the server tests need httpx")
from typer.testing import CliRunner  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from replicalab.baselines.cli.main import app  # noqa: E402
from replicalab.baselines.server.loopback import start_process  # noqa: E402


def test_serve_prints_its_address_logs_sessions_and_stops_on_sigterm_with_hung_clients() -> None:
    server = start_process(["--log-json", "--max-sessions", "3"], stderr=subprocess.PIPE)
    port = int(server.url.rsplit(":", 1)[1])
    hung: list[socket.socket] = []
    try:
        assert httpx.get(f"{server.url}/capacity", timeout=10).json()["max_sessions"] == 3
        with connect(server.url.replace("http", "ws", 1) + "/ws") as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            ws.recv(timeout=30)
            ws.send("not json")
            ws.recv(timeout=30)
        for opening in (b"GET /heal", b"POST /reset HTTP/1.1\r\nHost: localhost\r\nContent-Length: 50\r\n\r\n{"):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(opening)  # a head and a body that never finish
            hung.append(sock)
        hung_ws = connect(server.url.replace("http", "ws", 1) + "/ws")  # open, never reading
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=60) == -signal.SIGTERM  # uvicorn ends as the signal does
        hung_ws.close()
    finally:
        if server.process.poll() is None:
            server.process.kill()
        for sock in hung:
            sock.close()
    assert server.process.stderr is not None
    lines = [json.loads(line) for line in server.process.stderr.read().splitlines()]
    events = [line["event"] for line in lines]
    assert events[0] == "server_starting" and events[-1] == "server_stopped"
    assert {"session_opened", "session_closed", "message_refused"} <= set(events)
    closed = next(line for line in lines if line["event"] == "session_closed")
    assert closed["reason"] == "client_gone" and closed["transport"] == "ws"
    assert not any("Traceback" in json.dumps(line) for line in lines)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1"])
def test_serve_beyond_the_loopback_address_needs_a_token(host: str) -> None:
    result = CliRunner().invoke(app, ["serve", "--host", host], env={"REPLICALAB_TOKEN": ""})
    assert result.exit_code == 2 and "--token" in result.output


def test_serve_refuses_limits_that_exclude_its_defaults() -> None:
    result = CliRunner().invoke(app, ["serve", "--splits", "test"])
    assert result.exit_code == 2 and "split" in result.output
    result = CliRunner().invoke(app, ["serve", "--max-rounds", "30"])
    assert result.exit_code == 2 and "max_rounds" in result.output


def test_the_server_process_never_imports_openenv() -> None:
    code = (
        "import sys; from replicalab.baselines.server import run, loopback; "
        "from replicalab.baselines.server.app import create_app; create_app(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openenv', 'gradio', 'fastmcp')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def test_a_body_still_arriving_when_the_drain_ends_is_refused_without_a_traceback() -> None:
    server = start_process([], stderr=subprocess.PIPE)
    port = int(server.url.rsplit(":", 1)[1])
    slow: list[socket.socket] = []
    try:
        for _ in range(3):
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(b"POST /reset HTTP/1.1\r\nHost: localhost\r\nContent-Length: 50\r\n\r\n{")
            slow.append(sock)
        httpx.get(f"{server.url}/health", timeout=10)  # the bodies' requests have begun
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=60) == -signal.SIGTERM
        answers = [sock.recv(4096) for sock in slow]
    finally:
        if server.process.poll() is None:
            server.process.kill()
        for sock in slow:
            sock.close()
    assert server.process.stderr is not None
    log = server.process.stderr.read()
    assert "Traceback" not in log and "Exception in ASGI application" not in log
    # Answered with the refusal where the cancelled request runs before the process exits,
    # else the connection just closes: never a 500.
    assert all(
        answer == b"" or (answer.startswith(b"HTTP/1.1 503") and b"SHUTTING_DOWN" in answer)
        for answer in answers
    )
