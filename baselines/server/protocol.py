"""uvicorn's HTTP/1.1 protocol with the two bounds it lacks: a time limit on a request's
headers, and a cap on open connections that makes room by dropping the oldest connection still
waiting for its headers (so half-open connections never lock a new client out).

uvicorn takes the protocol class as its `http` setting; this subclass only adds timers and the
cap around its connection events. A connection upgraded to a WebSocket hands its transport to
the WebSocket protocol and leaves this one's timer with nothing to do.
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from replicalab.baselines.server import events
from replicalab.baselines.server.settings import ServerSettings

_BUSY = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class GuardedH11Protocol(H11Protocol):
    header_timeout_s = 10.0
    max_connections = 1024

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.opened_at = self.loop.time()
        self._header_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        if len(self.connections) > self.max_connections and not self._evict_oldest_waiting():
            events.event("connection_refused", reason="max_connections", client=self._client())
            transport.write(_BUSY)
            transport.close()
            return
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()  # the next request's headers have the same time limit

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        super().connection_lost(exc)

    def waiting_for_headers(self) -> bool:
        """Whether this connection is open, still HTTP, and has sent no whole request head."""
        return (
            not self.transport.is_closing()
            and self.transport.get_protocol() is self
            and self.conn.their_state is h11.IDLE
        )

    def _arm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_overdue)

    def _headers_overdue(self) -> None:
        self._header_timer = None
        if self.waiting_for_headers():
            events.event("connection_dropped", reason="header_timeout", client=self._client())
            self.transport.close()

    def _evict_oldest_waiting(self) -> bool:
        waiting = [
            c
            for c in self.connections
            if isinstance(c, GuardedH11Protocol) and c is not self and c.waiting_for_headers()
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c.opened_at)
        events.event("connection_dropped", reason="max_connections", client=oldest._client())
        oldest.transport.close()
        return True

    def _client(self) -> str:
        return self.client[0] if self.client else "unknown"


def guarded_protocol(settings: ServerSettings) -> type[GuardedH11Protocol]:
    """The protocol class for uvicorn's `http` setting, with `settings`' bounds."""
    return type(
        "GuardedH11Protocol",
        (GuardedH11Protocol,),
        {"header_timeout_s": settings.header_timeout_s, "max_connections": settings.max_connections},
    )
