"""The FastAPI app of the ReplicaLab server, on OpenEnv's conventions.

Endpoints (docs/serving.md has the manual):
- `WS /ws`: one session per connection, OpenEnv's messages (`{"type": "reset"|"step"|"state"|
  "close", "data": ...}`, answered by `{"type": "observation"|"state"|"error", "data": ...}`).
- `POST /reset`, `POST /step`, `GET /state`, `POST /close`: the same over HTTP; a reset without
  an `X-Session-Id` header opens a session and returns its id (in the body and that header).
- `GET /health`, `GET /metadata`, `GET /schema`, `GET /capacity`.

Every refusal is typed (`ErrorCode`) and touches one request only: the server and the other
sessions carry on. Env steps run on the event loop: they take about a millisecond, less than a
hop to a thread pool would add.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import orjson
import uvicorn
from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import JSONResponse
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import HealthResponse, SchemaResponse, ServerCapacityStatus
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.websockets import WebSocketDisconnect

from replicalab.baselines.server.environment import ScientistServerEnv
from replicalab.baselines.server.models import (
    EnvConfig,
    ErrorCode,
    ReplicaLabAction,
    ReplicaLabObservation,
    ReplicaLabState,
    WireError,
)
from replicalab.baselines.server.sessions import Session, SessionTable
from replicalab.parsing import describe_validation_error

logger = logging.getLogger(__name__)

SESSION_HEADER = "X-Session-Id"
WS_PROTOCOL_SLACK = 4
"""uvicorn drops a WebSocket frame this many times over the body limit unread (close code 1009);
one within it is read and refused with MESSAGE_TOO_LARGE, and the session carries on."""

_HTTP_STATUS = {
    ErrorCode.UNKNOWN_SESSION: 404,
    ErrorCode.MESSAGE_TOO_LARGE: 413,
    ErrorCode.CAPACITY_REACHED: 503,
    ErrorCode.EPISODE_OVER: 409,
    ErrorCode.NOT_RESET: 409,
    ErrorCode.IDLE_TIMEOUT: 404,
}


class ServerSettings(BaseModel):
    """How the server bounds its sessions, and the env arguments a session gets by default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    config: EnvConfig = EnvConfig()
    max_sessions: int = Field(default=64, ge=1)
    idle_timeout_s: float = Field(default=300.0, gt=0)  # a session untouched this long is closed
    max_body_bytes: int = Field(default=1 << 20, ge=1024)  # per HTTP body or WebSocket message
    send_timeout_s: float = Field(default=10.0, gt=0)  # a client that reads nothing this long is dropped


def _validation(exc: ValidationError) -> WireError:
    return WireError(ErrorCode.VALIDATION_ERROR, describe_validation_error(exc, 3))


def _object(text: str | bytes) -> dict[str, Any]:
    """The JSON object a message holds, or INVALID_JSON."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise WireError(ErrorCode.INVALID_JSON, f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise WireError(ErrorCode.INVALID_JSON, f"expected a JSON object, got {type(value).__name__}")
    return value


def reset(session: Session, data: object) -> dict[str, Any]:
    """Reset `session` with a reset body; the observation in OpenEnv's `{observation, reward, done}`."""
    if not isinstance(data, dict):
        raise WireError(ErrorCode.VALIDATION_ERROR, "data: expected an object of reset fields")
    try:
        observation = session.env.reset(**data)
    except ValidationError as exc:
        raise _validation(exc) from None
    return serialize_observation(observation)  # type: ignore[no-any-return]


def step(session: Session, data: object) -> dict[str, Any]:
    """Step `session` with an action body; the observation as `reset` gives it."""
    try:
        action = ReplicaLabAction.model_validate(data)
    except ValidationError as exc:
        raise _validation(exc) from None
    return serialize_observation(session.env.step(action))  # type: ignore[no-any-return]


def state(session: Session) -> dict[str, Any]:
    return session.env.state.model_dump()  # type: ignore[no-any-return]


class BodyLimit:
    """ASGI middleware: an HTTP body over `limit` bytes is refused with 413 and MESSAGE_TOO_LARGE
    before the app reads it (by its Content-Length, or as its chunks arrive)."""

    def __init__(self, app: Callable[..., Awaitable[None]], limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = JSONResponse(
            {"error": WireError(ErrorCode.MESSAGE_TOO_LARGE, f"body: over {self.limit} bytes").payload()},
            status_code=413,
        )
        length = dict(scope["headers"]).get(b"content-length", b"0")
        if not length.isdigit() or int(length) > self.limit:
            await too_large(scope, receive, send)
            return
        seen = 0

        async def counted() -> MutableMapping[str, Any]:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _BodyTooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _BodyTooLarge:
            await too_large(scope, receive, send)


class _BodyTooLarge(Exception):
    pass


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    """The server's app; `settings` bound its sessions (the defaults without)."""
    settings = settings or ServerSettings()
    table = SessionTable(settings.config, settings.max_sessions, settings.idle_timeout_s)

    async def reap_idle() -> None:
        while True:
            await asyncio.sleep(min(settings.idle_timeout_s / 4, 5.0))
            table.reap()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.create_task(reap_idle())
        yield
        reaper.cancel()

    app = FastAPI(title="ReplicaLab environment server", lifespan=lifespan)
    app.state.sessions = table
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)

    @app.exception_handler(WireError)
    async def refused(request: Request, exc: WireError) -> JSONResponse:
        return JSONResponse({"error": exc.payload()}, status_code=_HTTP_STATUS.get(exc.code, 400))

    @app.exception_handler(Exception)
    async def fault(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("internal error", exc_info=exc)
        error = WireError(ErrorCode.INTERNAL_ERROR, "internal error")
        return JSONResponse({"error": error.payload()}, status_code=500)

    async def body(request: Request) -> dict[str, Any]:
        try:
            return _object(await request.body())
        except WireError:
            raise
        except Exception:  # a client that hung up mid-body
            raise WireError(ErrorCode.INVALID_JSON, "body: not received whole") from None

    @app.get("/health")
    async def health() -> HealthResponse:
        return HealthResponse()

    @app.get("/capacity")
    async def capacity() -> ServerCapacityStatus:
        return ServerCapacityStatus.from_counts(len(table), settings.max_sessions)

    @app.get("/metadata")
    async def metadata() -> dict[str, Any]:
        return ScientistServerEnv("", settings.config).get_metadata().model_dump()  # type: ignore[no-any-return]

    @app.get("/schema")
    async def schema() -> SchemaResponse:
        return SchemaResponse(
            action=ReplicaLabAction.model_json_schema(),
            observation=ReplicaLabObservation.model_json_schema(),
            state=ReplicaLabState.model_json_schema(),
        )

    @app.post("/reset")
    async def http_reset(request: Request) -> JSONResponse:
        data = await body(request)
        session_id = request.headers.get(SESSION_HEADER)
        opened = session_id is None
        session = table.open() if session_id is None else table.get(session_id)
        try:
            reply = reset(session, data)
        except WireError:
            if opened:  # a session whose first reset failed holds no episode: free its slot
                table.close(session.id)
            raise
        reply["session_id"] = session.id
        return JSONResponse(reply, headers={SESSION_HEADER: session.id})

    @app.post("/step")
    async def http_step(request: Request) -> dict[str, Any]:
        data = await body(request)
        session = table.get(request.headers.get(SESSION_HEADER))
        extra = set(data) - {"action", "timeout_s", "request_id"}  # OpenEnv's StepRequest fields
        if extra or "action" not in data:
            raise WireError(ErrorCode.VALIDATION_ERROR, "body: expected {action[, timeout_s, request_id]}")
        return step(session, data["action"])

    @app.get("/state")
    async def http_state(request: Request) -> dict[str, Any]:
        return state(table.get(request.headers.get(SESSION_HEADER)))

    @app.post("/close")
    async def http_close(request: Request) -> dict[str, bool]:
        session = table.get(request.headers.get(SESSION_HEADER))
        return {"closed": table.close(session.id)}

    @app.websocket("/ws")
    async def websocket(ws: WebSocket) -> None:
        await ws.accept()
        try:
            session = table.open()
        except WireError as exc:
            await _send(ws, {"type": "error", "data": exc.payload()}, settings.send_timeout_s)
            await _hang_up(ws, 1013, settings.send_timeout_s)  # "try again later"
            return
        session.connection_bound = True
        try:
            await _serve(ws, session, table, settings)
        finally:
            table.close(session.id)

    return app


def uvicorn_config(app: FastAPI, settings: ServerSettings, host: str, port: int) -> uvicorn.Config:
    """How uvicorn runs `app`: `replicalab serve` and the tests' loopback servers alike."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        ws_max_size=settings.max_body_bytes * WS_PROTOCOL_SLACK,
        log_level="warning",
        lifespan="on",
    )


_GONE = (TimeoutError, asyncio.TimeoutError, WebSocketDisconnect, RuntimeError, OSError)
"""What sending to a client raises when it stopped reading or is gone."""


async def _hang_up(ws: WebSocket, code: int, timeout: float) -> None:
    """Close the connection with `code`, unless the client is gone or not reading."""
    with contextlib.suppress(*_GONE):
        await asyncio.wait_for(ws.close(code=code), timeout)


async def _send(ws: WebSocket, reply: dict[str, Any], timeout: float) -> bool:
    """Send `reply`; False if the client took longer than `timeout` to make room (it stopped
    reading) or is gone."""
    try:
        # orjson writes an observation's 200-odd floats twenty times faster than json
        await asyncio.wait_for(ws.send_text(orjson.dumps(reply).decode()), timeout)
    except _GONE:
        return False
    return True


async def _serve(ws: WebSocket, session: Session, table: SessionTable, settings: ServerSettings) -> None:
    """Answer one WebSocket's messages until it closes, idles past the timeout or stops reading."""
    while True:
        try:
            message = await asyncio.wait_for(ws.receive(), settings.idle_timeout_s)
        except (TimeoutError, asyncio.TimeoutError):
            error = WireError(
                ErrorCode.IDLE_TIMEOUT, f"idle for {settings.idle_timeout_s:g} s; session closed"
            )
            await _send(ws, {"type": "error", "data": error.payload()}, settings.send_timeout_s)
            await _hang_up(ws, 1001, settings.send_timeout_s)  # "going away"
            return
        if message["type"] == "websocket.disconnect":
            return
        table.get(session.id)  # marks it active
        text = message.get("text")
        raw: str | bytes = text if text is not None else message.get("bytes") or b""
        closing, reply = _answer(session, raw, settings.max_body_bytes)
        if closing:
            await _hang_up(ws, 1000, settings.send_timeout_s)
            return
        if not await _send(ws, reply, settings.send_timeout_s):
            await _hang_up(ws, 1008, settings.send_timeout_s)  # policy violation: it must read its replies
            return


def _answer(session: Session, raw: str | bytes, limit: int) -> tuple[bool, dict[str, Any]]:
    """(whether the client asked to close, the reply to one WebSocket message)."""
    try:
        if len(raw) > limit:
            raise WireError(ErrorCode.MESSAGE_TOO_LARGE, f"message: over {limit} bytes")
        message = _object(raw)
        kind = message.get("type")
        if kind == "close":
            return True, {}
        if kind == "reset":
            return False, {"type": "observation", "data": reset(session, message.get("data", {}))}
        if kind == "step":
            return False, {"type": "observation", "data": step(session, message.get("data"))}
        if kind == "state":
            return False, {"type": "state", "data": state(session)}
        raise WireError(ErrorCode.UNKNOWN_TYPE, f"type: expected reset, step, state or close, got {kind!r}")
    except WireError as exc:
        return False, {"type": "error", "data": exc.payload()}
    except Exception:
        logger.exception("session %s: internal error", session.id[:8])
        error = WireError(ErrorCode.INTERNAL_ERROR, "internal error")
        return False, {"type": "error", "data": error.payload()}


def __getattr__(name: str) -> FastAPI:
    """`app`: the server with the default settings, for `uvicorn replicalab.baselines.server.app:app`
    and OpenEnv's manifest; built on first use, so importing the module builds nothing."""
    if name == "app":
        return create_app()
    raise AttributeError(name)
