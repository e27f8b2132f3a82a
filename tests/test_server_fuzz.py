"""A fuzz of the server's WebSocket protocol: thousands of malformed messages across sessions
end with no internal error, the server serving, and another session's episode intact."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openenv", reason="the server tests need the [server] extra (openenv-core)")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.client import ClientConnection, connect

from replicalab.agents import build_baseline_scientist_action
from replicalab.baselines.server.loopback import LoopbackServer, serve_in_thread
from replicalab.baselines.server.models import EnvConfig, ReplicaLabAction, ResetOptions
from replicalab.baselines.server.settings import ServerSettings
from replicalab.envs.scientist_v3 import ScientistEnv

FUZZERS = 3

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)


def _keyed(names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts over the fields a real message has, holding anything: the near misses."""
    return st.dictionaries(st.sampled_from(names), _json, max_size=len(names))


_action = _keyed([*ReplicaLabAction.model_fields, "extra"]) | st.fixed_dictionaries(
    {"text": st.text(max_size=60)}, optional={"seat": st.sampled_from(["scientist", "lab_manager", ""])}
)
_reset = st.fixed_dictionaries(
    {},
    optional={
        "seed": st.integers(min_value=-5, max_value=2**70),
        "options": _keyed([*ResetOptions.model_fields]),
        "config": _keyed([*EnvConfig.model_fields]),
    },
)
_message = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=40),
    _json.map(json.dumps),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["reset", "step", "state", "", "Step"])},
        optional={"data": _json | _action | _reset},
    ).map(json.dumps),
)


def _ask(ws: ClientConnection, message: str | bytes) -> dict[str, Any]:
    ws.send(message)
    reply: dict[str, Any] = json.loads(ws.recv(timeout=10))
    return reply


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with serve_in_thread(ServerSettings(max_sessions=FUZZERS + 1, unstepped_timeout_s=600)) as live:
        yield live


def _fuzz(server: LoopbackServer, examples: int) -> None:
    local = ScientistEnv()
    local.reset(seed=5)
    with connect(server.ws_url) as victim:
        _ask(victim, json.dumps({"type": "reset", "data": {"seed": 5, "episode_id": "victim"}}))
        fuzzers = [connect(server.ws_url) for _ in range(FUZZERS)]
        sent = 0

        @settings(
            max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None
        )
        @given(batch=st.lists(_message, min_size=20, max_size=40))
        def bombard(batch: list[str | bytes]) -> None:
            nonlocal sent
            for i, message in enumerate(batch):
                reply = _ask(fuzzers[i % FUZZERS], message)
                assert reply["type"] in ("observation", "state", "error"), reply
                if reply["type"] == "error":
                    assert reply["data"]["code"] != "INTERNAL_ERROR", message
            sent += len(batch)

        bombard()
        assert sent >= examples * 20
        for ws in fuzzers:  # every fuzzed session still answers
            assert _ask(ws, json.dumps({"type": "reset", "data": {"seed": 0}}))["type"] == "observation"
            ws.close()
        done = False
        while not done:  # the victim's episode goes on as the local one does
            move = build_baseline_scientist_action(local.episode.scientist_observation()).model_dump(
                mode="json"
            )
            _, _, terminated, truncated, _ = local.step(move)
            done = terminated or truncated
            _ask(victim, json.dumps({"type": "step", "data": {"move": move}}))
        state = _ask(victim, json.dumps({"type": "state"}))["data"]
        (session,) = [s for s in server.sessions.sessions() if s.env.episode_id == "victim"]
        served = session.env.env.episode.to_log("victim").model_dump_json()
        assert served == local.episode.to_log("victim").model_dump_json()
        assert state["log_sha256"] == hashlib.sha256(served.encode()).hexdigest()


def test_a_fuzz_of_the_protocol_leaves_the_server_and_other_sessions_intact(server: LoopbackServer) -> None:
    _fuzz(server, examples=100)  # about 3,000 messages


@pytest.mark.slow
def test_a_long_fuzz_of_the_protocol_leaves_the_server_and_other_sessions_intact(
    server: LoopbackServer,
) -> None:
    _fuzz(server, examples=250)  # about 7,500 messages
