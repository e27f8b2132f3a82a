"""uvicorn's HTTP/1.1 and WebSocket protocols with the bounds they lack, and the uvicorn settings
every way of starting the server applies (`guard_uvicorn`).

- A request's head has `header_timeout_s` to arrive.
- A cap on open connections that nothing can hold: at the cap, a new connection makes room by
  dropping the oldest connection held for a cool-down (below), or else the oldest that holds no
  live session (an HTTP connection, idle, slow or answering; a WebSocket still waiting for its
  session), so only as many connections as there are sessions are ever kept whatever the rest
  do. A connection of an address that floods makes no room: at the cap it is dropped itself.
- An address that floods cools down (`tarpit`): it holds more connections than its sessions and
  its queue could use, or is far over its budget, or one of its WebSockets pings more than
  `max_pings_per_s` (in bursts of `PING_BURST`) or leaves its pongs unread until they pass a
  limit (that connection is dropped at once, with what it left unread). For the cool-down, each
  new connection of the address's is held: its reading paused (what it sent is never parsed),
  answered nothing, and closed when the cool-down ends, so a client that reconnects whenever it
  is refused stalls instead of making the server accept and drop thousands of connections a
  second.
- A text frame that is not UTF-8 is closed (1007) without a traceback.
- On shutdown, every connection tells the app (the `STOPPING` event of the lifespan's state),
  so work waiting for its turn is refused at once instead of holding the drain.

uvicorn takes the protocol classes as its `http` and `ws` settings; these subclasses add timers,
the cap and the checks around its connection events. The app marks a WebSocket connection live
once its session opens, through the `ConnectionMark` this protocol puts in the ASGI scope's
extensions.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import h11
import uvicorn
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from replicalab.baselines.server import events
from replicalab.baselines.server.settings import ServerSettings
from replicalab.baselines.server.tarpit import Tarpit

_BUSY = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
STOPPING = "replicalab_stopping"
"""The lifespan state's key for the event the protocols set when the server starts to stop."""
TABLE = "replicalab_table"
"""The lifespan state's key for the session table, which says whether an address is turned away."""
MARK = "replicalab.connection"
"""The ASGI scope extension that holds a WebSocket connection's `ConnectionMark`."""
PROTOCOL_SLACK = 4
"""uvicorn drops a WebSocket frame this many times over the body limit unread (close code 1009);
one within it is read and refused with MESSAGE_TOO_LARGE, and the session carries on. Pongs
left unread past the same size close the connection."""


PING_BURST = 16
READ_SLICE = 8 * 1024  # bytes of WebSocket frames parsed before the next check


class ConnectionMark:
    """What the app and the protocol tell each other of one WebSocket connection: whether it
    holds a session (the app sets it), and whether it ended or the server is stopping (the
    protocol sets `released`, so nothing of the app waits on a connection that is gone)."""

    def __init__(self) -> None:
        self.live = False
        self.released = asyncio.Event()


def _stopping(app_state: dict[str, Any]) -> None:
    event = app_state.get(STOPPING)
    if isinstance(event, asyncio.Event):
        event.set()


class _Capped:
    """The connection cap, shared by both protocols: a connection holds a live session or not.
    And the time the protocol spends on what a connection sent (request heads, frames, pings)
    is charged to its address's budget, as the app's own work is."""

    max_connections = 1024
    connections: set[Any]
    opened_at: float
    app_state: dict[str, Any]

    def holds_session(self) -> bool:
        return False

    def held(self) -> bool:
        """Whether the tarpit holds this connection for its address's cool-down."""
        return False

    def make_room(self) -> bool:
        """Drop the oldest connection held for a cool-down, or else the oldest that holds no live
        session; False if there is none."""
        idle = [
            c
            for c in self.connections
            if isinstance(c, _Capped) and c is not self and not c.holds_session() and c.is_open()
        ]
        if not idle:
            return False
        oldest = min(idle, key=lambda c: (not c.held(), c.opened_at))
        events.event("connection_dropped", reason="max_connections", client=oldest.peer())
        oldest.drop()
        return True

    def receive_charged(self, data: bytes, receive: Any) -> None:
        """Hand `data` to the protocol (`receive`), charging the time to the address; a
        connection without a live session from an address far over its budget is dropped
        instead, unread, and its address cools down."""
        table = getattr(self, "table", None)
        if table is None:
            receive(data)
            return
        if not self.holds_session() and table.overdrawn(self.peer()):
            self.flooded("overdrawn", logging.DEBUG)
            return
        started = time.perf_counter()
        receive(data)
        table.budget(self.peer()).charge(time.perf_counter() - started)

    def flooded(self, reason: str, level: int = logging.INFO) -> None:
        """Drop this connection, with what it left unread, and cool its address down."""
        events.event("connection_dropped", level, reason=reason, client=self.peer())
        table = self.app_state.get(TABLE)
        if table is not None:
            table.tarpit.cool_down(self.peer(), reason)
        self.drop()

    def is_open(self) -> bool:
        raise NotImplementedError

    def drop(self) -> None:
        raise NotImplementedError

    def peer(self) -> str:
        client = getattr(self, "client", None)
        return str(client[0]) if client else "unknown"


class GuardedH11Protocol(_Capped, H11Protocol):
    header_timeout_s = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.opened_at = self.loop.time()
        self._header_timer: asyncio.TimerHandle | None = None
        self.table: Any = None
        self.tarpit: Tarpit | None = None  # the tarpit holding this connection, if one does
        super().connection_made(transport)
        table = self.app_state.get(TABLE)
        if table is not None and not table.connection_opened(self.peer()):
            self.tarpit = table.tarpit  # nothing counted, nothing to uncount
            transport.pause_reading()
            table.tarpit.hold(self.peer(), self)
            events.event("connection_held", logging.DEBUG, client=self.peer())
        else:
            self.table = table
        if len(self.connections) > self.max_connections:
            if self.tarpit is not None:  # a flooding address makes no room: it loses this one
                self.drop()
                return
            if not self.make_room():
                events.event("connection_refused", reason="max_connections", client=self.peer())
                transport.write(_BUSY)
                transport.close()
                return
        if self.tarpit is None:
            self._arm()

    def data_received(self, data: bytes) -> None:
        if self.tarpit is not None:  # held: uvloop starts reading after `connection_made` paused it
            self.transport.pause_reading()
            return
        self.receive_charged(data, super().data_received)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()  # the next request's headers have the same time limit

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        if self.table is not None:
            self.table.connection_closed(self.peer())
        if self.tarpit is not None:
            self.tarpit.forget(self.peer(), self)
        super().connection_lost(exc)

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        super().handle_websocket_upgrade(event)
        upgraded = self.transport.get_protocol()
        if isinstance(upgraded, GuardedWebSocketProtocol):
            upgraded.opened_at = self.opened_at  # the connection's age, not the upgrade's
            upgraded.table, self.table = self.table, None  # it uncounts the connection now

    def shutdown(self) -> None:
        """uvicorn's drain, and a request whose body is still arriving, or a connection held for
        its address's cool-down, ends now: it would only hold the drain until its time limit."""
        _stopping(self.app_state)
        if self.tarpit is not None:
            self.drop()
            return
        if self.conn.their_state is h11.SEND_BODY:
            self.transport.close()
            return
        super().shutdown()

    def held(self) -> bool:
        return self.tarpit is not None

    def is_open(self) -> bool:
        return not self.transport.is_closing() and self.transport.get_protocol() is self

    def drop(self) -> None:
        self.transport.abort()  # what it left unread goes too: close() would wait for it to read

    def waiting_for_headers(self) -> bool:
        """Whether this connection is open, still HTTP, and has sent no whole request head."""
        return self.is_open() and self.conn.their_state is h11.IDLE

    def _arm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_overdue)

    def _headers_overdue(self) -> None:
        self._header_timer = None
        if self.waiting_for_headers():
            events.event("connection_dropped", reason="header_timeout", client=self.peer())
            self.transport.close()


class GuardedWebSocketProtocol(_Capped, WebSocketsSansIOProtocol):
    max_unread_bytes = 4 * 64 * 1024
    max_pings_per_s = 4.0  # a keep-alive pings every few seconds at most

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.opened_at = self.loop.time()
        self.table: Any = None  # counts the connection, from the upgrade on
        self.mark = ConnectionMark()
        self._pings, self._pinged_at = float(PING_BURST), self.opened_at

    def holds_session(self) -> bool:
        return self.mark.live

    def data_received(self, data: bytes) -> None:
        """Parse what arrived a slice at a time: a flood of small frames (pings) is caught, and
        the connection dropped, after one slice, not after all of a large read."""
        for start in range(0, len(data), READ_SLICE):
            if self.transport.is_closing():
                return
            self.receive_charged(data[start : start + READ_SLICE], super().data_received)

    def is_open(self) -> bool:
        return not self.transport.is_closing()

    def drop(self) -> None:
        self.transport.abort()

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)
        if scope is not None:  # the app's task starts later and finds the mark there
            scope["extensions"][MARK] = self.mark

    def handle_ping(self) -> None:
        """Answer a ping, unless the client pings faster than a keep-alive does, or left more
        than `max_unread_bytes` of replies unread (it is not reading, and its pongs would pile
        up in memory for as long as it pings): then drop it, and its address cools down."""
        if self.transport.is_closing():
            return
        now = self.loop.time()
        self._pings = min(float(PING_BURST), self._pings + (now - self._pinged_at) * self.max_pings_per_s)
        self._pinged_at = now
        self._pings -= 1
        if self._pings < 0 or self.transport.get_write_buffer_size() > self.max_unread_bytes:
            self.close_sent = True  # a close frame would only join the pile it does not read
            self.flooded("ping_flood" if self._pings < 0 else "pongs_unread")
            return
        super().handle_ping()

    async def send(self, message: Any) -> None:
        """uvicorn's, and a handshake answered with an HTTP response (a refusal: 429, 403) counts
        as finished: uvicorn would log an error for each one, a line per refused handshake."""
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and self.close_sent:
            self.handshake_complete = True

    def send_receive_event_to_app(self) -> None:
        frames: list[bytes] = self.frames
        if self.curr_msg_data_type == "text" and not self.close_sent:
            try:
                b"".join(frames).decode()
            except UnicodeDecodeError:
                frames.clear()
                events.event("connection_dropped", reason="invalid_utf8", client=self.peer())
                self.conn.send_close(1007, "invalid UTF-8")
                self.handle_parser_exception()
                return
        super().send_receive_event_to_app()

    def connection_lost(self, exc: Exception | None) -> None:
        self.mark.released.set()
        if self.table is not None:
            self.table.connection_closed(self.peer())
            self.table = None
        super().connection_lost(exc)

    def shutdown(self) -> None:
        _stopping(self.app_state)
        self.mark.released.set()
        super().shutdown()


def guard_uvicorn(config: uvicorn.Config, settings: ServerSettings) -> None:
    """Give uvicorn's `config` the server's protocols and limits: before `config.load()` (as
    `replicalab serve` does) or after it, from the app's lifespan (as when uvicorn's own command
    line loaded the app), since uvicorn reads them per connection. Proxy headers name the client
    only from the proxies `settings` trusts; uvicorn's default trusts 127.0.0.1."""
    http = type(
        "GuardedH11Protocol",
        (GuardedH11Protocol,),
        {"header_timeout_s": settings.header_timeout_s, "max_connections": settings.max_connections},
    )
    ws = type(
        "GuardedWebSocketProtocol",
        (GuardedWebSocketProtocol,),
        {
            "max_connections": settings.max_connections,
            "max_unread_bytes": settings.max_body_bytes * PROTOCOL_SLACK,
        },
    )
    config.http, config.ws = http, ws
    config.ws_max_size = settings.max_body_bytes * PROTOCOL_SLACK
    config.ws_per_message_deflate = settings.ws_compression
    config.timeout_graceful_shutdown = settings.shutdown_timeout_s
    config.proxy_headers = bool(settings.forwarded_allow_ips)
    config.forwarded_allow_ips = list(settings.forwarded_allow_ips)
    if config.loaded:
        config.http_protocol_class, config.ws_protocol_class = http, ws
        app = config.loaded_app
        while isinstance(app, ProxyHeadersMiddleware):
            app = app.app
        if config.proxy_headers:
            app = ProxyHeadersMiddleware(app, trusted_hosts=config.forwarded_allow_ips)
        config.loaded_app = app
