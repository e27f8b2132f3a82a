"""The ASGI layer in front of the app: where a request comes from and what it names, the
operator's token, and an HTTP body read whole, within its size limit and its time limit, before
any route sees it.

A browser page may aim requests at a server on this machine: one with an `Origin` header is
served only from a loopback origin or one the operator allows (`allowed_origins`), and one that
reached a loopback address only if its `Host` names this machine (or `allowed_hosts` does), so
no page can reach it through a name that resolves to the loopback (DNS rebinding); both get 403
(`FORBIDDEN_ORIGIN`). A request that reached a non-loopback address of a server without a token
is refused, whatever started the server. A request without the token is refused (401; a
WebSocket handshake 403) except `GET /health`, which a container's health check asks. A body over `max_body_bytes` is refused with 413 whether
its Content-Length says so or its chunks show it; one that takes longer than `body_timeout_s`
to arrive gets 408, so a client that never finishes its body holds nothing for long.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.responses import JSONResponse

from replicalab.baselines.server import events
from replicalab.baselines.server.models import ErrorCode, WireError
from replicalab.baselines.server.settings import ANY, ServerSettings, is_loopback

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/health"})


def client_of(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def host_name(authority: str) -> str:
    """`example.org` of `example.org:8000`, `::1` of `[::1]:8000`."""
    if authority.startswith("["):
        return authority[1 : authority.find("]")] if "]" in authority else authority
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def origin_allowed(origin: str | None, allowed: tuple[str, ...]) -> bool:
    """No `Origin` (not a browser), a loopback origin, or one the operator named."""
    if origin is None or ANY in allowed or origin in allowed:
        return True
    scheme, _, authority = origin.partition("://")
    return scheme in ("http", "https") and is_loopback(host_name(authority))


def host_allowed(scope: Scope, allowed: tuple[str, ...]) -> bool:
    """On a loopback address, a `Host` naming this machine (or one the operator named); beyond
    it, any unless the operator named some (the token guards those addresses)."""
    name = host_name(header(scope, b"host") or "")
    if ANY in allowed or name in allowed:
        return True
    server = scope.get("server")
    if server is None or is_loopback(str(server[0])):
        return is_loopback(name)
    return not allowed


def reached_beyond_loopback(scope: Scope) -> bool:
    server = scope.get("server")
    return server is not None and not is_loopback(str(server[0]))


def presented_token(scope: Scope) -> str | None:
    """The token in `Authorization: Bearer TOKEN`, or the password of `Basic` credentials (what
    a client sends for a URL like `http://user:TOKEN@host`)."""
    kind, _, value = (header(scope, b"authorization") or "").partition(" ")
    if kind.lower() == "bearer":
        return value.strip()
    if kind.lower() == "basic":
        try:
            credentials = base64.b64decode(value.strip(), validate=True).decode("utf-8")
            return credentials.partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return None
    return None


async def refuse(scope: Scope, receive: Receive, send: Send, error: WireError) -> None:
    """Answer with `error` (HTTP) or decline the handshake (WebSocket), and log it."""
    events.event("request_refused", code=error.code.value, path=scope.get("path"), client=client_of(scope))
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    response = JSONResponse(
        {"error": error.payload()}, status_code=error.status, headers={"connection": "close"}
    )
    await response(scope, receive, send)


class Guard:
    """ASGI middleware: the token, then the whole HTTP body, before the app."""

    def __init__(self, app: ASGIApp, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        settings = self.settings
        if not origin_allowed(header(scope, b"origin"), settings.allowed_origins):
            forbidden = WireError(
                ErrorCode.FORBIDDEN_ORIGIN, "Origin: this server does not serve that origin"
            )
            await refuse(scope, receive, send, forbidden)
            return
        if not host_allowed(scope, settings.allowed_hosts):
            forbidden = WireError(ErrorCode.FORBIDDEN_ORIGIN, "Host: this server does not serve that name")
            await refuse(scope, receive, send, forbidden)
            return
        token = settings.token
        if token is None and reached_beyond_loopback(scope):
            unguarded = "token: this server has none, so it serves the loopback address only"
            await refuse(scope, receive, send, WireError(ErrorCode.UNAUTHORIZED, unguarded))
            return
        if token is not None and scope.get("path") not in OPEN_PATHS:
            given = presented_token(scope)
            if given is None or not secrets.compare_digest(given.encode(), token.encode()):
                await refuse(
                    scope, receive, send, WireError(ErrorCode.UNAUTHORIZED, "token: missing or wrong")
                )
                return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        with contextlib.suppress(asyncio.CancelledError):  # the drain ran out of time: no fault
            await self._http(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            body = await asyncio.wait_for(self._body(scope, receive), self.settings.body_timeout_s)
        except WireError as error:
            await refuse(scope, receive, send, error)
            return
        except (TimeoutError, asyncio.TimeoutError):
            timeout = f"body: not received in {self.settings.body_timeout_s:g} s"
            await refuse(scope, receive, send, WireError(ErrorCode.REQUEST_TIMEOUT, timeout))
            return
        except asyncio.CancelledError:
            # The server's drain ended while this body was still arriving: the client is told
            # if the process lives long enough to answer, and the log shows no fault.
            stopping = WireError(ErrorCode.SHUTTING_DOWN, "server: stopped before the body arrived")
            await refuse(scope, receive, send, stopping)
            return
        if body is None:  # the client hung up mid-body: nobody to answer
            return
        await self.app(scope, _replay(body, receive), send)

    async def _body(self, scope: Scope, receive: Receive) -> bytes | None:
        limit = self.settings.max_body_bytes
        too_large = WireError(ErrorCode.MESSAGE_TOO_LARGE, f"body: over {limit} bytes")
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            raise too_large
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > limit:
                raise too_large
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the app the body read already, then the client's own messages."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed
