"""The server's guards against slow and abusive clients, on a real uvicorn on 127.0.0.1: the
token, a request head or body that never finishes, oversized bodies, the connection cap (which
drops what holds no session, never a live one), an address's cool-down after a flood (its new
connections held unanswered, then closed), forwarding headers trusted only from named proxies,
WebSocket pings never read and frames that are not UTF-8, and browsers' Origin and Host."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable, Iterator

import pytest

pytest.importorskip("openenv", reason="the server tests need the [server] extra (openenv-core)")
httpx = pytest.importorskip("httpx", reason="the server tests need httpx")
from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from replicalab.baselines.server import events  # noqa: E402
from replicalab.baselines.server.client import ReplicaLabClient, with_token  # noqa: E402
from replicalab.baselines.server.loopback import LoopbackServer, serve_in_thread  # noqa: E402
from replicalab.baselines.server.settings import ServerSettings  # noqa: E402

TOKEN = "correct-horse-battery-staple"


def _wait_until(condition: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


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


def _raw_from(server: LoopbackServer, address: str) -> socket.socket:
    sock = socket.socket()
    sock.settimeout(10)
    sock.bind((address, 0))
    sock.connect(("127.0.0.1", server.port))
    return sock


def test_half_open_connections_never_lock_a_new_client_out() -> None:
    # the head's time limit is far away: the cap alone has to make room, dropping the oldest;
    # the budget is far away too, so a slow first reset on a loaded machine floods nothing
    settings = ServerSettings(header_timeout_s=600, max_connections=8, client_ms_per_s=1_000_000)
    with serve_in_thread(settings) as live:
        stalled = [_raw_from(live, f"127.0.0.{2 + n % 5}") for n in range(40)]  # five times the cap
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


# --------------------------------------------------------------------------- who a request is charged to


def test_forwarding_headers_name_the_client_only_from_a_proxy_the_operator_named() -> None:
    spoofed = {"X-Forwarded-For": "203.0.113.9", "Forwarded": "for=203.0.113.9"}
    for trusted, charged in (((), "127.0.0.1"), (("127.0.0.1",), "203.0.113.9")):
        with serve_in_thread(ServerSettings(forwarded_allow_ips=trusted)) as live:
            reply = httpx.post(f"{live.url}/reset", json={}, headers={**spoofed, "X-Session-Id": "new"})
            assert reply.status_code == 200
            (session,) = live.sessions.sessions()
            assert session.client == charged


# --------------------------------------------------------------------------- the connection cap


def test_the_connection_cap_drops_what_holds_no_session_oldest_first_never_a_live_one() -> None:
    settings = ServerSettings(header_timeout_s=600, body_timeout_s=600, max_connections=6)
    with serve_in_thread(settings) as live:
        sessions = [connect(live.ws_url) for _ in range(2)]
        held: list[socket.socket] = []
        try:
            for ws in sessions:
                ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
                assert json.loads(ws.recv(timeout=10))["type"] == "observation"
            keep_alive = _raw(live)
            keep_alive.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert keep_alive.recv(4096).startswith(b"HTTP/1.1 200")
            slow = [_raw(live) for _ in range(2)]
            for sock in slow:
                sock.sendall(b"POST /reset HTTP/1.1\r\nHost: localhost\r\nContent-Length: 50\r\n\r\n{")
            held = [keep_alive, *slow]
            half_open = [_raw(live) for _ in range(8)]
            held += half_open
            for sock in half_open:
                sock.sendall(b"GET /hea")
            with ReplicaLabClient(base_url=live.url).sync() as env:  # makes room for itself
                assert not env.reset(seed=3).done
            assert _closed_by_server(keep_alive) == b"" and _closed_by_server(slow[0]) == b""
            for ws in sessions:  # the live sessions kept their connections
                ws.send(json.dumps({"type": "state"}))
                assert json.loads(ws.recv(timeout=10))["type"] == "state"
        finally:
            for closing in [*sessions, *held]:
                closing.close()


def test_the_connection_cap_drops_a_handshake_waiting_for_its_session() -> None:
    settings = ServerSettings(max_overdraft_s=1e9, max_connections=3)
    with serve_in_thread(settings) as live, connect(live.ws_url) as holder:
        budget = live.sessions.budget("127.0.0.1")
        assert _wait_until(lambda: len(live.sessions) == 1)
        live.on_loop(lambda: budget.charge(3600))  # an hour over: its next handshakes wait
        waiting = [connect(live.ws_url) for _ in range(2)]
        try:
            assert _wait_until(lambda: budget.waiting == 2)
            transport = httpx.HTTPTransport(local_address="127.0.0.2")
            with httpx.Client(transport=transport, base_url=live.url) as other:
                assert other.get("/health", timeout=10).status_code == 200  # room made
            with pytest.raises(ConnectionClosed):
                waiting[0].recv(timeout=10)  # the oldest waiting handshake was dropped
            assert len(live.sessions) == 1 and holder.protocol.state.name == "OPEN"
        finally:
            for ws in waiting:
                ws.close()


def _closed_unanswered(sock: socket.socket) -> bool:
    """Whether the server closed `sock` without a byte of reply (a reset or an end of stream)."""
    try:
        return _closed_by_server(sock) == b""
    except ConnectionResetError:  # closed with the request still unread in its buffer
        return True


def _held(server: LoopbackServer, address: str) -> int:
    return server.on_loop(lambda: server.sessions.tarpit.holding(address))


def _cooling(server: LoopbackServer, address: str) -> bool:
    return server.on_loop(lambda: server.sessions.tarpit.cooling(address))


def _cooldowns(caplog: pytest.LogCaptureFixture, address: str) -> list[str]:
    """The reasons of the cool-downs `address` was given, from the server's log."""
    started = [r for r in caplog.records if r.getMessage() == "cooldown_started"]
    return [r.fields["reason"] for r in started if r.fields["client"] == address]  # type: ignore[attr-defined]


HEALTH = b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"


def test_an_address_holds_only_the_connections_its_sessions_and_queue_could_use(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=events.LOGGER)
    settings = ServerSettings(max_sessions_per_client=1, max_queued_per_client=1, flood_cooldown_s=1.0)
    with serve_in_thread(settings) as live, connect(live.ws_url):
        with _raw(live) as second, _raw(live) as third:
            third.sendall(HEALTH)
            assert _closed_unanswered(third)  # one too many: held unanswered, then closed
            second.sendall(HEALTH)  # the connections it opened before are served as before
            assert second.recv(4096).startswith(b"HTTP/1.1 200")
        transport = httpx.HTTPTransport(local_address="127.0.0.2")  # another address has its own
        with httpx.Client(transport=transport, base_url=live.url) as other:
            assert other.get("/health", timeout=10).status_code == 200
    assert _cooldowns(caplog, "127.0.0.1") == ["too_many_connections"]


def test_a_flooding_address_is_held_unanswered_while_another_is_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=events.LOGGER)
    settings = ServerSettings(max_sessions_per_client=1, max_queued_per_client=1, flood_cooldown_s=2.0)
    with serve_in_thread(settings) as live:
        holders = [_raw_from(live, "127.0.0.2") for _ in range(2)]  # all its sessions and queue use
        flooding = [_raw_from(live, "127.0.0.2") for _ in range(3)]  # the first begins its cool-down
        try:
            for sock in flooding:
                sock.sendall(HEALTH)
            with ReplicaLabClient(base_url=live.url).sync() as env:  # its neighbour plays meanwhile
                assert not env.reset(seed=4).done
            assert httpx.get(f"{live.url}/health", timeout=10).status_code == 200
            for sock in flooding:  # never answered, closed when the cool-down ends
                assert _closed_unanswered(sock)
        finally:
            for sock in [*holders, *flooding]:
                sock.close()
    held = [r for r in caplog.records if r.getMessage() == "connection_held"]
    assert len(held) == 3 and _cooldowns(caplog, "127.0.0.2") == ["too_many_connections"]


def test_an_address_far_over_its_budget_has_its_next_connections_held_unanswered() -> None:
    with serve_in_thread(ServerSettings(flood_cooldown_s=1.0)) as live, connect(live.ws_url):
        assert _wait_until(lambda: len(live.sessions) == 1)
        live.on_loop(lambda: live.sessions.budget("127.0.0.1").charge(3600))
        assert live.sessions.overdrawn("127.0.0.1")
        with _raw(live) as late:
            late.sendall(HEALTH)
            assert _closed_unanswered(late)
        transport = httpx.HTTPTransport(local_address="127.0.0.2")  # its neighbour is served
        with httpx.Client(transport=transport, base_url=live.url) as other:
            assert other.get("/health", timeout=10).status_code == 200


def test_held_connections_make_room_under_the_connection_cap_and_close_on_shutdown() -> None:
    settings = ServerSettings(max_connections=3, flood_cooldown_s=600)  # held till dropped or stopped
    with serve_in_thread(settings) as live:
        live.on_loop(lambda: live.sessions.budget("127.0.0.2").charge(3600))  # it floods from now
        held = [_raw_from(live, "127.0.0.2") for _ in range(3)]
        try:
            assert _wait_until(lambda: _held(live, "127.0.0.2") == 3)
            with ReplicaLabClient(base_url=live.url).sync() as env:  # makes room for itself
                assert not env.reset(seed=5).done
            assert _held(live, "127.0.0.2") < 3 and _cooling(live, "127.0.0.2")  # held ones made room
        finally:
            live.server.should_exit = True
        live.thread.join(timeout=30)
        assert not live.thread.is_alive()  # the server stopped, closing what it held
        for sock in held:
            assert _closed_unanswered(sock)
            sock.close()


def test_a_flooding_address_makes_no_room_under_the_connection_cap() -> None:
    settings = ServerSettings(max_connections=2, header_timeout_s=600, flood_cooldown_s=600)
    with serve_in_thread(settings) as live:
        live.on_loop(lambda: live.sessions.budget("127.0.0.2").charge(3600))  # it floods from now
        with _raw(live) as neighbour:  # idle, holds no session: the oldest the cap could drop
            held = [_raw_from(live, "127.0.0.2") for _ in range(3)]  # the last two are over the cap
            try:
                assert _closed_unanswered(held[1]) and _closed_unanswered(held[2])  # dropped themselves
                assert _held(live, "127.0.0.2") == 1
                neighbour.sendall(HEALTH)  # it kept its connection
                assert neighbour.recv(4096).startswith(b"HTTP/1.1 200")
            finally:
                for sock in held:
                    sock.close()


# --------------------------------------------------------------------------- WebSocket hygiene


def _handshake(
    server: LoopbackServer, receive_buffer: int | None = None, address: str = "127.0.0.1"
) -> socket.socket:
    sock = socket.socket()
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(30)
    sock.bind((address, 0))
    sock.connect(("127.0.0.1", server.port))
    sock.sendall(
        b"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101")
    return sock


def _frame(opcode: int, payload: bytes) -> bytes:
    """A client frame, masked with a zero key (so its payload goes as is)."""
    assert len(payload) < 126
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + b"\0\0\0\0" + payload


def _close_code(sock: socket.socket) -> int:
    """The code of the close frame the server sent last, reading to the end of the stream."""
    received = _closed_by_server(sock)
    at = received.rfind(b"\x88")
    return int.from_bytes(received[at + 2 : at + 4], "big")


def _ping_flood(sock: socket.socket) -> None:
    """Ping as fast as the socket takes it, reading nothing, until the server hangs up."""
    ping = _frame(0x9, b"p" * 125)
    sent = 0
    with pytest.raises((BrokenPipeError, ConnectionResetError)):
        while sent < 200_000:
            sock.sendall(ping * 64)
            sent += 64


def test_a_client_that_pings_and_never_reads_its_pongs_is_closed(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=events.LOGGER)
    with serve_in_thread(ServerSettings(max_body_bytes=1024)) as live:
        sock = _handshake(live, receive_buffer=4096)
        _ping_flood(sock)
        sock.close()
        assert _wait_until(lambda: any(r.getMessage() == "connection_dropped" for r in caplog.records))
    dropped = [r for r in caplog.records if r.getMessage() == "connection_dropped"]
    assert dropped[0].fields["reason"] in ("ping_flood", "pongs_unread")  # type: ignore[attr-defined]


def test_a_ping_flooder_is_dropped_and_its_next_connections_held_until_its_cooldown_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=events.LOGGER)
    with serve_in_thread(ServerSettings(flood_cooldown_s=2.0)) as live:
        flooder = _handshake(live, address="127.0.0.2")
        _ping_flood(flooder)
        flooder.close()
        assert _cooldowns(caplog, "127.0.0.2") == ["ping_flood"]
        again = _raw_from(live, "127.0.0.2")
        try:
            again.sendall(HEALTH)
            assert httpx.get(f"{live.url}/health", timeout=10).status_code == 200  # others are served
            assert _closed_unanswered(again)  # held unanswered, then closed
        finally:
            again.close()
        held = [r for r in caplog.records if r.getMessage() == "connection_held"]
        assert [r.fields["client"] for r in held] == ["127.0.0.2"]  # type: ignore[attr-defined]
        assert _wait_until(lambda: not _cooling(live, "127.0.0.2"))
        with _raw_from(live, "127.0.0.2") as after:  # served again once the cool-down ended
            after.sendall(HEALTH)
            assert after.recv(4096).startswith(b"HTTP/1.1 200")


def test_a_text_frame_that_is_not_utf8_closes_with_1007_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with serve_in_thread() as live:
        sock = _handshake(live)
        sock.sendall(_frame(0x1, b'{"type": "\xff\xfe"}'))
        assert _close_code(sock) == 1007
        sock.close()
        with connect(live.ws_url) as ws:  # the server carries on
            ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            assert json.loads(ws.recv(timeout=10))["type"] == "observation"
    assert not [r for r in caplog.records if r.exc_info]


# --------------------------------------------------------------------------- browsers


def test_a_browser_page_is_served_only_from_an_allowed_origin_and_a_host_of_this_machine() -> None:
    with serve_in_thread(ServerSettings(allowed_origins=("https://trainer.example",))) as live:
        for origin in ("http://localhost:3000", "http://127.0.0.1", "https://trainer.example"):
            assert httpx.get(f"{live.url}/capacity", headers={"Origin": origin}).status_code == 200
        with connect(live.ws_url, origin="http://localhost:3000") as ws:  # type: ignore[arg-type]
            ws.send(json.dumps({"type": "state"}))
            assert json.loads(ws.recv(timeout=10))["data"]["code"] == "NOT_RESET"
        evil = httpx.get(f"{live.url}/capacity", headers={"Origin": "https://evil.example"})
        assert (evil.status_code, evil.json()["error"]["code"]) == (403, "FORBIDDEN_ORIGIN")
        with pytest.raises(InvalidStatus):
            connect(live.ws_url, origin="https://evil.example", open_timeout=10)  # type: ignore[arg-type]
        rebound = httpx.get(f"{live.url}/capacity", headers={"Host": f"evil.example:{live.port}"})
        assert (rebound.status_code, rebound.json()["error"]["code"]) == (403, "FORBIDDEN_ORIGIN")
