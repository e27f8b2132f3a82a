"""`WS /ws`: one session per connection, OpenEnv's messages (`{"type": "reset"|"step"|"state"|
"close", "data": ...}`, answered by `{"type": "observation"|"state"|"error", "data": ...}`).

The session is the connection's alone and ends with it, always with a close frame the client
can read: 1000 after its `close`, 1001 when it idled out, 1008 when it stopped reading its
replies, 1013 when the server had no room for it or its address had too many connections
waiting for their sessions (and 1012 on shutdown). Opening the session and answering each
message take a turn of the client address's budget (`budget`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import orjson
from fastapi import WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect

from replicalab.baselines.server import events
from replicalab.baselines.server.guards import client_of
from replicalab.baselines.server.models import ErrorCode, WireError
from replicalab.baselines.server.protocol import MARK, ConnectionMark
from replicalab.baselines.server.sessions import Session, SessionTable
from replicalab.baselines.server.settings import ServerSettings

_GONE = (TimeoutError, asyncio.TimeoutError, WebSocketDisconnect, RuntimeError, OSError)
"""What sending to a client raises when it stopped reading or is gone."""


async def serve_websocket(ws: WebSocket, table: SessionTable, settings: ServerSettings) -> None:
    """Open the connection's session, answer its messages, and close both together. The
    server's drain cancels a connection it ran out of time for: it ends quietly."""
    with contextlib.suppress(asyncio.CancelledError):
        await _serve_connection(ws, table, settings)


async def _serve_connection(ws: WebSocket, table: SessionTable, settings: ServerSettings) -> None:
    client = client_of(ws.scope)
    if table.turned_away(client):  # refused before the handshake ends: the cheapest answer
        busy = WireError(ErrorCode.TOO_MANY_REQUESTS, "this client address has a full queue already")
        events.event("session_refused", reason=busy.code.value, client=client, transport="ws")
        await ws.send_denial_response(JSONResponse({"error": busy.payload()}, status_code=busy.status))
        return
    await ws.accept()
    mark = ws.scope.get("extensions", {}).get(MARK)
    released = mark.released if isinstance(mark, ConnectionMark) else table.stopping
    try:
        async with table.budget(client).turn(released, settings.max_queued_per_client):
            session = table.open("ws", client)
    except WireError as exc:
        if exc.code is not ErrorCode.SHUTTING_DOWN:  # else the server closes it (1012)
            events.event("session_refused", reason=exc.code.value, client=client, transport="ws")
            await _send(ws, {"type": "error", "data": exc.payload()}, settings.send_timeout_s)
            await _hang_up(ws, 1013, settings.send_timeout_s)  # "try again later"
        return
    if isinstance(mark, ConnectionMark):
        mark.live = True  # no longer one the connection cap may drop
    reason = "server_stopped"
    try:
        reason = await _serve(ws, session, table, settings, released)
    finally:
        table.close(session, reason)


async def _serve(
    ws: WebSocket,
    session: Session,
    table: SessionTable,
    settings: ServerSettings,
    released: asyncio.Event | None,
) -> str:
    """Answer one connection's messages until it ends; why it ended."""
    budget = table.budget(session.client)
    while True:
        timeout = table.timeout(session)
        try:
            message = await asyncio.wait_for(ws.receive(), timeout)
        except (TimeoutError, asyncio.TimeoutError):
            error = WireError(ErrorCode.IDLE_TIMEOUT, f"idle for {timeout:g} s; session closed")
            await _send(ws, {"type": "error", "data": error.payload()}, settings.send_timeout_s)
            await _hang_up(ws, 1001, settings.send_timeout_s)  # "going away"
            return "idle_timeout"
        if message["type"] == "websocket.disconnect":
            return "client_gone"
        table.touch(session)
        text = message.get("text")
        raw: str | bytes = text if text is not None else message.get("bytes") or b""
        try:
            async with budget.turn(released):
                reply = answer(session, raw, settings.max_body_bytes)
                sending = None if reply is None else orjson.dumps(reply).decode()
        except WireError:  # the server is stopping (it closes the connection) or the client left
            return "server_stopped"
        if sending is None:
            await _hang_up(ws, 1000, settings.send_timeout_s)
            return "client_closed"
        if not await _send_text(ws, sending, settings.send_timeout_s):
            await _hang_up(ws, 1008, settings.send_timeout_s)  # policy violation: it must read its replies
            return "not_reading"


def answer(session: Session, raw: str | bytes, limit: int) -> dict[str, Any] | None:
    """The reply to one WebSocket message; None when the client asked to close."""
    try:
        if len(raw) > limit:
            raise WireError(ErrorCode.MESSAGE_TOO_LARGE, f"message: over {limit} bytes")
        message = parse_object(raw)
        kind = message.get("type")
        if kind == "close":
            return None
        if kind == "reset":
            return {"type": "observation", "data": session.env.reset(message.get("data", {}))}
        if kind == "step":
            return {"type": "observation", "data": session.env.step(message.get("data"))}
        if kind == "state":
            return {"type": "state", "data": session.env.state.model_dump()}
        raise WireError(ErrorCode.UNKNOWN_TYPE, f"type: expected reset, step, state or close, got {kind!r}")
    except WireError as exc:
        events.event("message_refused", session=session.tag, code=exc.code.value)
        return {"type": "error", "data": exc.payload()}
    except Exception:
        events.logger.exception("internal_error", extra={"fields": {"session": session.tag}})
        error = WireError(ErrorCode.INTERNAL_ERROR, "internal error")
        return {"type": "error", "data": error.payload()}


def parse_object(text: str | bytes) -> dict[str, Any]:
    """The JSON object a message holds, or INVALID_JSON."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise WireError(ErrorCode.INVALID_JSON, f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise WireError(ErrorCode.INVALID_JSON, f"expected a JSON object, got {type(value).__name__}")
    return value


async def _hang_up(ws: WebSocket, code: int, timeout: float) -> None:
    """Close the connection with `code`, unless the client is gone or not reading."""
    with contextlib.suppress(*_GONE):
        await asyncio.wait_for(ws.close(code=code), timeout)


async def _send(ws: WebSocket, reply: dict[str, Any], timeout: float) -> bool:
    """Send `reply`; False if the client took longer than `timeout` to make room (it stopped
    reading) or is gone."""
    # orjson writes an observation's 200-odd floats twenty times faster than json
    return await _send_text(ws, orjson.dumps(reply).decode(), timeout)


async def _send_text(ws: WebSocket, text: str, timeout: float) -> bool:
    try:
        await asyncio.wait_for(ws.send_text(text), timeout)
    except _GONE:
        return False
    return True
