"""`ReplicaLabClient`: OpenEnv's `EnvClient` for a ReplicaLab server.

    async with ReplicaLabClient(base_url="http://127.0.0.1:8000") as env:
        result = await env.reset(seed=0, config={"action_mode": "text"})
        while not result.done:
            result = await env.step(ReplicaLabAction(text=my_model(result.observation.prompt)))

`.sync()` gives the blocking form (OpenEnv's `SyncEnvClient`). A refused message raises
`ServerError`, whose `code` is the server's `ErrorCode` value. `token=` is the server's
`--token` (sent as the password of the URL's credentials, which OpenEnv's own clients pass on
too: `http://replicalab:TOKEN@host:8000`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from replicalab.baselines.server.models import ReplicaLabAction, ReplicaLabObservation, ReplicaLabState


class ServerError(RuntimeError):
    """The server refused a message: `code` says why (see `ErrorCode`), the text says what."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def with_token(url: str, token: str) -> str:
    """`url` carrying `token` as its credentials' password."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"replicalab:{quote(token, safe='')}@{host}"))


class ReplicaLabClient(EnvClient):
    """One WebSocket session on a ReplicaLab server (see the module docstring)."""

    def __init__(self, base_url: str, token: str | None = None, **kwargs: Any) -> None:
        super().__init__(with_token(base_url, token) if token else base_url, **kwargs)

    def _step_payload(self, action: ReplicaLabAction) -> dict[str, Any]:
        payload: dict[str, Any] = action.model_dump(exclude_none=True, exclude_defaults=True)
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult:
        observation = ReplicaLabObservation(
            **payload["observation"], reward=payload.get("reward"), done=payload.get("done", False)
        )
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> ReplicaLabState:
        state: ReplicaLabState = ReplicaLabState.model_validate(payload)
        return state

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        await self._send(message)
        response: dict[str, Any] = await self._receive()
        if response.get("type") == "error":
            data = response.get("data", {})
            raise ServerError(str(data.get("code")), str(data.get("message")))
        return response
