"""`replicalab serve` as an operator runs it: the ready line with the address, one log line per
session event (JSON lines with --log-json), a stop on SIGTERM whatever its clients do, a token
required beyond the loopback address, and a start that never loads OpenEnv's web interface."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("openenv", reason="the server tests need the [server] extra (openenv-core)")
httpx = pytest.importorskip("httpx", reason="the server tests need httpx")
from typer.testing import CliRunner  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from replicalab.baselines.cli.main import app  # noqa: E402
from replicalab.baselines.server.loopback import free_port, start_process  # noqa: E402


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
        for opening in (
            b"GET /heal",
            b"POST /reset HTTP/1.1\r\nHost: localhost\r\nContent-Length: 50\r\n\r\n{",
        ):
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


# --------------------------------------------------------------------------- one guarded entry point

MANIFEST = Path(__file__).resolve().parent.parent / "openenv.yaml"
TOKEN = "correct-horse-battery-staple"
SPOOFED = {"X-Forwarded-For": "203.0.113.9"}


def _manifest_app() -> str:
    found = re.search(r"^app: (\S+)$", MANIFEST.read_text(encoding="utf-8"), flags=re.M)
    assert found is not None
    return found.group(1)


def _uvicorn(host: str, port: int, env: dict[str, str]) -> subprocess.Popen[str]:
    """`python -m uvicorn APP --host H --port P`, as OpenEnv's runtimes start the manifest's app."""
    command = [sys.executable, "-m", "uvicorn", _manifest_app(), "--host", host, "--port", str(port)]
    return subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)


def _until_healthy(url: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("the server did not start")


def _what_it_enforces(url: str) -> dict[str, object]:
    """What a client meets: the token, the limits, who it is charged as, the frame limit."""
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    seen: dict[str, object] = {"without_token": httpx.get(f"{url}/capacity").status_code}
    seen["capacity"] = httpx.get(f"{url}/capacity", headers=bearer).json()
    opened = httpx.post(
        f"{url}/reset", json={"seed": 1}, headers={**bearer, **SPOOFED, "X-Session-Id": "new"}
    )
    seen["reset"] = opened.json()["observation"]["features"]
    ws_url = url.replace("http", "ws", 1) + "/ws"
    with connect(ws_url, additional_headers=bearer, max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"config": {"max_rounds": 99}}}))
        seen["over_limits"] = json.loads(ws.recv(timeout=30))["data"]["code"]
        ws.send("x" * 300_000)  # over 4 × --max-body-bytes: dropped unread
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
        seen["frame_close"] = closed.value.rcvd.code if closed.value.rcvd else None
    return seen


def test_uvicorn_through_the_manifests_entry_point_enforces_what_serve_does() -> None:
    env = {**os.environ, "REPLICALAB_TOKEN": TOKEN}
    port = free_port()
    manifest = _uvicorn("127.0.0.1", port, env)
    serve = start_process([], stderr=subprocess.PIPE, env=env)
    try:
        _until_healthy(f"http://127.0.0.1:{port}", manifest)
        through_manifest = _what_it_enforces(f"http://127.0.0.1:{port}")
        through_serve = _what_it_enforces(serve.url)
    finally:
        manifest.terminate()
        serve.process.terminate()
        logs = [manifest.communicate(timeout=60)[1], serve.process.communicate(timeout=60)[1]]
    assert through_manifest == through_serve
    assert through_serve["without_token"] == 401 and through_serve["over_limits"] == "NOT_ALLOWED"
    assert through_serve["frame_close"] == 1009
    assert through_serve["capacity"] == {"active_sessions": 0, "max_sessions": 64}
    for log in logs:  # the session was charged to the peer, not to what the header claims
        assert "client=127.0.0.1" in log and "203.0.113.9" not in log
        assert "Traceback" not in log


def test_uvicorn_through_the_manifest_refuses_to_start_beyond_the_loopback_without_a_token() -> None:
    env = {key: value for key, value in os.environ.items() if key != "REPLICALAB_TOKEN"}
    process = _uvicorn("0.0.0.0", free_port(), env)
    _, log = process.communicate(timeout=120)
    assert process.returncode != 0 and "REPLICALAB_TOKEN" in log


# --------------------------------------------------------------------------- SIGTERM with queued work


def _handshake_from(address: str, port: int) -> socket.socket:
    sock = socket.socket()
    sock.settimeout(30)
    sock.bind((address, 0))
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        b"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101")
    return sock


RESET_FRAME = bytes([0x81, 0x80 | 29]) + b"\0\0\0\0" + b'{"type": "reset", "data": {}}'


def _bare_from(address: str, port: int) -> socket.socket:
    sock = socket.socket()
    sock.bind((address, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def test_sigterm_with_handshakes_queued_for_their_sessions_exits_without_a_traceback() -> None:
    # a budget so small that a few resets overdraw it, and one queue deep enough for forty
    options = ["--log-json", "--client-ms-per-second", "0.001", "--max-queued-per-client", "50"]
    options += ["--max-overdraft", "1000000000"]  # so the queued handshakes are answered, not dropped
    options += ["--flood-cooldown", "600"]  # and a flooding address's connections held till the end
    server = start_process(options, stderr=subprocess.PIPE)
    port = int(server.url.rsplit(":", 1)[1])
    held: list[socket.socket] = []
    try:
        held = [_handshake_from(f"127.0.0.{n}", port) for n in range(1, 6)]  # five live sessions
        deadline = time.monotonic() + 60
        while httpx.get(f"{server.url}/capacity").json()["active_sessions"] < 5:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        held[0].sendall(RESET_FRAME * 40)  # never read: they overdraw the budget, then one waits
        held += [_handshake_from("127.0.0.1", port) for _ in range(40)]  # forty wait behind it
        held += [_bare_from("127.0.0.9", port) for _ in range(32 + 50 + 10)]  # ten held, unread
        # the server takes connections in the order they came: once a later one is answered,
        # it has taken (and held) the flooder's
        held.append(_handshake_from("127.0.0.10", port))
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=60) == -signal.SIGTERM
    finally:
        if server.process.poll() is None:
            server.process.kill()
        for sock in held:
            sock.close()
    assert server.process.stderr is not None
    log = server.process.stderr.read()
    assert "Traceback" not in log and "Exception in ASGI application" not in log
    assert json.loads(log.splitlines()[-1])["event"] == "server_stopped"
    assert "cooldown_started" in [json.loads(line)["event"] for line in log.splitlines()]
