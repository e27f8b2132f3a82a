"""The HTTP endpoints, on OpenEnv's conventions.

`POST /reset`, `POST /step`, `GET /state` carry OpenEnv's bodies and replies. As in OpenEnv's
own server, a reset without a session plays nothing further: it answers the episode's first
observation and keeps nothing; its env is built from the request alone (the server's defaults
and the request's config), and without a seed it draws a fresh one, so no client's reset
depends on another's. A client that wants to step over HTTP opens a session with the
header `X-Session-Id: new` on its reset and sends the id it gets back (same header) with each
request; `POST /close` ends it. `GET /health`, `/metadata`, `/schema` and `/capacity` describe
the server. Each request's work takes a turn of its client address's budget (`budget`).
"""

from __future__ import annotations

import secrets
from functools import cache
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from replicalab.baselines.server import events
from replicalab.baselines.server.environment import ScientistServerEnv
from replicalab.baselines.server.guards import client_of
from replicalab.baselines.server.models import (
    ErrorCode,
    ReplicaLabAction,
    ReplicaLabObservation,
    ReplicaLabState,
    WireError,
)
from replicalab.baselines.server.sessions import Session, SessionTable
from replicalab.baselines.server.websocket import parse_object

SEED_BITS = 63  # a seedless stateless reset's fresh seed (the wire's seeds are non-negative)

SESSION_HEADER = "X-Session-Id"
NEW_SESSION = "new"
STEP_FIELDS = frozenset({"action", "timeout_s", "request_id"})  # OpenEnv's StepRequest


def add_info_routes(app: FastAPI, table: SessionTable) -> None:
    """`/health`, `/capacity`, `/metadata`, `/schema`: OpenEnv's replies."""

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "healthy"}

    @app.get("/capacity")
    async def capacity() -> dict[str, int]:
        return {"active_sessions": len(table), "max_sessions": table.settings.max_sessions}

    @app.get("/metadata")
    async def metadata() -> dict[str, Any]:
        return ScientistServerEnv.get_metadata().model_dump()

    @app.get("/schema")
    async def schema() -> dict[str, Any]:
        return _schemas()


@cache
def _schemas() -> dict[str, Any]:
    """The wire types' JSON schemas: built once (milliseconds of the loop), then served."""
    return {
        "action": ReplicaLabAction.model_json_schema(),
        "observation": ReplicaLabObservation.model_json_schema(),
        "state": ReplicaLabState.model_json_schema(),
    }


def add_session_routes(app: FastAPI, table: SessionTable) -> None:
    """`/reset`, `/step`, `/state`, `/close`: each one's work in a turn of its address's budget."""
    settings = table.settings

    def turn(request: Request) -> Any:
        client = client_of(request.scope)
        if table.turned_away(client):
            raise WireError(ErrorCode.TOO_MANY_REQUESTS, "this client address has a full queue already")
        return table.budget(client).turn(table.stopping, settings.max_queued_per_client)

    @app.post("/reset")
    async def reset(request: Request) -> JSONResponse:
        data = parse_object(await request.body())
        asked = request.headers.get(SESSION_HEADER)
        async with turn(request):
            if asked is None:
                return JSONResponse(_stateless_reset(table, data))
            session = (
                table.open("http", client_of(request.scope)) if asked == NEW_SESSION else table.get(asked)
            )
            try:
                reply = session.env.reset(data)
            except WireError:
                if asked == NEW_SESSION:  # a session whose first reset failed holds no episode
                    table.close(session, "reset_failed")
                raise
        return JSONResponse(reply, headers={SESSION_HEADER: session.id})

    @app.post("/step")
    async def step(request: Request) -> dict[str, Any]:
        data = parse_object(await request.body())
        async with turn(request):
            session = _session(table, request)
            if set(data) - STEP_FIELDS or "action" not in data:
                raise WireError(
                    ErrorCode.VALIDATION_ERROR, "body: expected {action[, timeout_s, request_id]}"
                )
            return session.env.step(data["action"])

    @app.get("/state")
    async def state(request: Request) -> dict[str, Any]:
        async with turn(request):
            return _session(table, request).env.state.model_dump()

    @app.post("/close")
    async def close(request: Request) -> dict[str, bool]:
        return {"closed": table.close(_session(table, request), "client_closed")}


def _stateless_reset(table: SessionTable, data: dict[str, Any]) -> dict[str, Any]:
    """A reset that keeps nothing, on an env of its own: the server's defaults and the request's
    config, never another client's; a fresh seed unless the request names one."""
    env = ScientistServerEnv(table.settings.config, table.settings.limits)
    if data.get("seed") is None:
        data = {**data, "seed": secrets.randbits(SEED_BITS)}
    return env.reset(data)


def _session(table: SessionTable, request: Request) -> Session:
    session_id = request.headers.get(SESSION_HEADER)
    if session_id is None:
        raise WireError(
            ErrorCode.NO_SESSION,
            f"{SESSION_HEADER}: missing; a reset with `{SESSION_HEADER}: {NEW_SESSION}` opens an HTTP "
            "session and returns its id (a reset without it keeps no episode), or play over /ws",
        )
    return table.get(session_id)


def add_error_handlers(app: FastAPI) -> None:
    """A refusal answers its request alone with its code; a fault is logged with its trace. A
    request refused because its address's queue is full closes its connection too: the address
    is cooling down, and its next request must come on a new connection, which is held."""

    @app.exception_handler(WireError)
    async def refused(request: Request, exc: WireError) -> JSONResponse:
        events.event(
            "request_refused", code=exc.code.value, path=request.url.path, client=client_of(request.scope)
        )
        flooding = exc.code is ErrorCode.TOO_MANY_REQUESTS
        headers = {"connection": "close"} if flooding else None
        return JSONResponse({"error": exc.payload()}, status_code=exc.status, headers=headers)

    @app.exception_handler(Exception)
    async def fault(request: Request, exc: Exception) -> JSONResponse:
        events.logger.exception("internal_error", exc_info=exc, extra={"fields": {"path": request.url.path}})
        error = WireError(ErrorCode.INTERNAL_ERROR, "internal error")
        return JSONResponse({"error": error.payload()}, status_code=error.status)
