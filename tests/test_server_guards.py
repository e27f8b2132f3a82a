"""The server's guards against slow and abusive clients, on a real uvicorn on 127.0.0.1: the
token, a request head or body that never finishes, oversized bodies, and half-open connections
filling the connection cap."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

pytest.importorskip("openenv", reason="the server tests need the [server] extra (openenv-core)")
httpx = pytest.importorskip("httpx", reason="the server tests need httpx")
from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from websockets.exceptions import InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from replicalab.baselines.server.client import ReplicaLabClient, with_token  # noqa: E402
from replicalab.baselines.server.loopback import LoopbackServer, serve_in_thread  # noqa: E402
from replicalab.baselines.server.settings import ServerSettings  # noqa: E402

TOKEN = "correct-horse-battery-staple"


def _raw(server: LoopbackServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return sock


def _closed_by_server(sock: socket.socket) -> bytes:
    """What the server sent before closing the connection (it must close it)."""
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


@pytest.fixture(scope="module")
def guarded() -> Iterator[LoopbackServer]:
    with serve_in_thread(ServerSettings(token=TOKEN)) as live:
        yield live


def test_every_request_but_health_needs_the_token(guarded: LoopbackServer) -> None:
    assert httpx.get(f"{guarded.url}/health").status_code == 200
    for path in ("/schema", "/metadata", "/capacity"):
        refused = httpx.get(f"{guarded.url}{path}")
        assert (refused.status_code, refused.json()["error"]["code"]) == (401, "UNAUTHORIZED")
    wrong = httpx.post(
        f"{guarded.url}/reset", json={}, headers={"Authorization": "Bearer wrong-token-of-16+"}
    )
    assert wrong.status_code == 401
    bearer = httpx.post(
        f"{guarded.url}/reset", json={"seed": 1}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert bearer.status_code == 200
    basic = httpx.post(f"{with_token(guarded.url, TOKEN)}/reset", json={"seed": 1})
    assert basic.json() == bearer.json()
    with pytest.raises(InvalidStatus):
        connect(guarded.ws_url, open_timeout=10)


def test_openenv_clients_pass_the_token(guarded: LoopbackServer) -> None:
    with ReplicaLabClient(base_url=guarded.url, token=TOKEN).sync() as env:
        assert not env.reset(seed=0).done
    with GenericEnvClient(base_url=with_token(guarded.url, TOKEN)).sync() as env:
        assert "features" in env.reset(seed=0).observation


@pytest.fixture(scope="module")
def quick() -> Iterator[LoopbackServer]:
    settings = ServerSettings(header_timeout_s=0.3, body_timeout_s=0.3, max_connections=8)
    with serve_in_thread(settings) as live:
        yield live


def test_a_request_head_that_never_ends_is_dropped(quick: LoopbackServer) -> None:
    with _raw(quick) as sock:
        sock.sendall(b"POST /reset HTTP/1.1\r\nHost: localhost\r\n")  # and nothing more
        assert _closed_by_server(sock) == b""


def test_a_body_that_never_ends_gets_408(quick: LoopbackServer) -> None:
    with _raw(quick) as sock:
        sock.sendall(b"POST /reset HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{")
        reply = _closed_by_server(sock).decode()
    assert reply.startswith("HTTP/1.1 408")
    assert json.loads(reply.split("\r\n\r\n", 1)[1])["error"]["code"] == "REQUEST_TIMEOUT"


def test_a_body_declared_too_large_gets_413_unread(quick: LoopbackServer) -> None:
    with _raw(quick) as sock:
        sock.sendall(b"POST /step HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999\r\n\r\n")
        assert _closed_by_server(sock).startswith(b"HTTP/1.1 413")


def test_half_open_connections_never_lock_a_new_client_out() -> None:
    # the head's time limit is far away: the cap alone has to make room, dropping the oldest
    with serve_in_thread(ServerSettings(header_timeout_s=600, max_connections=8)) as live:
        stalled = [_raw(live) for _ in range(40)]  # five times the connection cap
        try:
            for sock in stalled:
                sock.sendall(b"GET /hea")
            with ReplicaLabClient(base_url=live.url).sync() as env:
                result = env.reset(seed=2)
                assert not result.done and result.observation.features
            assert httpx.get(f"{live.url}/health", timeout=10).status_code == 200
            assert _closed_by_server(stalled[0]) == b""  # the oldest made room
        finally:
            for sock in stalled:
                sock.close()
