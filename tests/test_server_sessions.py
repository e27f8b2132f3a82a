"""Sessions under the operator's limits, on a real uvicorn on 127.0.0.1: configs beyond the
limits refused, one transport per session, per-client caps, the reset budget, the shorter
timeout of a session that never stepped, a `state` that costs one digest per step, and OpenEnv's
generic client."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openenv", reason="the server tests need the [server] extra (openenv-core)")
httpx = pytest.importorskip("httpx", reason="the server tests need httpx")
from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from websockets.asyncio.client import connect as connect_async  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import ClientConnection, connect  # noqa: E402

from replicalab.agents import build_baseline_scientist_action  # noqa: E402
from replicalab.baselines.server.budget import ResetBudget  # noqa: E402
from replicalab.baselines.server.http_routes import NEW_SESSION, SESSION_HEADER  # noqa: E402
from replicalab.baselines.server.loopback import LoopbackServer, serve_in_thread  # noqa: E402
from replicalab.baselines.server.models import EnvConfig, ErrorCode, WireError  # noqa: E402
from replicalab.baselines.server.sessions import SessionTable  # noqa: E402
from replicalab.baselines.server.settings import Limits, ServerSettings  # noqa: E402
from replicalab.envs.scientist_v2 import ScientistEnv  # noqa: E402


def _ask(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(message))
    reply: dict[str, Any] = json.loads(ws.recv(timeout=10))
    return reply


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with serve_in_thread(ServerSettings(max_sessions=8, max_sessions_per_client=4)) as live:
        yield live


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"max_rounds": 10**6}, "config.max_rounds"),
        ({"step_cap": 10**6}, "config.step_cap"),
        ({"split": "test"}, "config.split"),
    ],
)
def test_a_config_beyond_the_operators_limits_is_refused(
    server: LoopbackServer, config: dict[str, Any], field: str
) -> None:
    with connect(server.ws_url) as ws:
        reply = _ask(ws, {"type": "reset", "data": {"config": config}})
        assert reply["data"]["code"] == "NOT_ALLOWED" and reply["data"]["message"].startswith(field)
        assert _ask(ws, {"type": "reset", "data": {"config": {"max_rounds": 20}}})["type"] == "observation"


def test_the_operator_chooses_the_splits_and_presets_served() -> None:
    limits = Limits(splits=("test",), reward_configs=("sparse",))
    with pytest.raises(ValueError, match="split"):
        ServerSettings(limits=limits)  # the default config's split is not served
    settings = ServerSettings(config=EnvConfig(split="test", reward_config="sparse"), limits=limits)
    with serve_in_thread(settings) as live, connect(live.ws_url) as ws:
        refused = _ask(
            ws, {"type": "reset", "data": {"config": {"split": "test", "reward_config": "default"}}}
        )
        assert refused["data"]["code"] == "NOT_ALLOWED"
        assert _ask(ws, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
    with pytest.raises(ValueError, match="splits"):
        Limits(splits=("tset",))


def test_a_websocket_session_is_out_of_reach_over_http(server: LoopbackServer) -> None:
    with connect(server.ws_url) as ws:
        _ask(ws, {"type": "reset", "data": {"seed": 3, "episode_id": "ws-only"}})
        assert _ask(ws, {"type": "state"})["data"]["session_id"] is None
        (session,) = [s for s in server.sessions.sessions() if s.env.episode_id == "ws-only"]
        header = {SESSION_HEADER: session.id}  # as if its id had leaked
        with httpx.Client(base_url=server.url, timeout=10) as http:
            for response in (
                http.get("/state", headers=header),
                http.post("/step", json={"action": {"text": "{}"}}, headers=header),
                http.post("/reset", json={}, headers=header),
                http.post("/close", headers=header),
            ):
                assert (response.status_code, response.json()["error"]["code"]) == (404, "UNKNOWN_SESSION")
        state = _ask(ws, {"type": "state"})["data"]
        assert state["step_count"] == 0 and state["episode_id"] == "ws-only"
        ws.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000


def test_one_client_holds_at_most_its_share_of_sessions(server: LoopbackServer) -> None:
    held = [connect(server.ws_url) for _ in range(4)]
    try:
        for ws in held:
            assert _ask(ws, {"type": "reset", "data": {}})["type"] == "observation"
        with connect(server.ws_url) as fifth:
            assert json.loads(fifth.recv(timeout=10))["data"]["code"] == "TOO_MANY_SESSIONS"
        refused = httpx.post(f"{server.url}/reset", json={}, headers={SESSION_HEADER: "new"}, timeout=10)
        assert (refused.status_code, refused.json()["error"]["code"]) == (429, "TOO_MANY_SESSIONS")
    finally:
        for ws in held:
            ws.close()


def test_the_reset_budget_paces_a_burst_and_refuses_a_second_one_queued() -> None:
    now = [0.0]
    budget = ResetBudget(4.0, lambda: now[0])  # 4 a second, in bursts of 4
    assert [budget.reserve() for _ in range(8)] == [0.0] * 4 + [0.25, 0.5, 0.75, 1.0]
    with pytest.raises(WireError) as refused:
        budget.reserve()  # a whole burst waits already
    assert refused.value.code is ErrorCode.TOO_MANY_RESETS and refused.value.status == 429
    now[0] = 0.5  # two tokens back, four owed: the next waits for three
    assert budget.reserve() == 0.75 and not budget.full
    now[0] = 60.0
    assert budget.full and budget.reserve() == 0.0
    assert ResetBudget(0.5, lambda: 0.0).reserve() == 0.0  # below one a second: bursts of one


def _neighbour_episode(url: str, seed: int) -> tuple[str, str]:
    """A baseline episode played over `url`: the served log digest and the local one."""
    local = ScientistEnv()
    local.reset(seed=seed)
    with connect(url) as ws:
        _ask(ws, {"type": "reset", "data": {"seed": seed, "episode_id": "neighbour"}})
        while not local.episode.done:
            move = build_baseline_scientist_action(local.episode.scientist_observation())
            local.step(move.model_dump(mode="json"))
            _ask(ws, {"type": "step", "data": {"move": move.model_dump(mode="json")}})
        served = _ask(ws, {"type": "state"})["data"]["log_sha256"]
    expected = hashlib.sha256(local.episode.to_log("neighbour").model_dump_json().encode()).hexdigest()
    return served, expected


def test_resets_beyond_the_budget_are_paced_over_websocket_and_refused_over_http() -> None:
    settings = ServerSettings(max_resets_per_s=2.0)

    async def http_burst(url: str) -> list[tuple[int, str | None]]:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            opened = await http.post("/reset", json={}, headers={SESSION_HEADER: NEW_SESSION})
            header = {SESSION_HEADER: opened.headers[SESSION_HEADER]}
            replies = await asyncio.gather(
                *(http.post("/reset", json={"seed": n}, headers=header) for n in range(12))
            )
            after = await http.get("/state", headers=header)
            assert after.status_code == 200  # the session outlives its refused resets
        return [(r.status_code, r.json().get("error", {}).get("code")) for r in replies]

    with serve_in_thread(settings) as live:
        churned: list[str] = []

        def churn() -> None:  # a WebSocket client resetting with a new config: three bursts' worth
            with connect(live.ws_url) as ws:
                for n in range(6):
                    config = {"max_rounds": 2 + n, "action_mode": ("structured", "text")[n % 2]}
                    churned.append(_ask(ws, {"type": "reset", "data": {"seed": n, "config": config}})["type"])

        churner = threading.Thread(target=churn)
        churner.start()
        served, expected = _neighbour_episode(live.ws_url, seed=2)
        churner.join(timeout=60)
        assert served == expected  # the neighbour's episode is the local one
        assert churned == ["observation"] * 6  # paced, never refused
        replies = asyncio.run(http_burst(live.url))
    refused = [reply for reply in replies if reply[0] != 200]
    assert refused and set(refused) == {(429, "TOO_MANY_RESETS")}
    assert len(replies) - len(refused) >= 2  # a whole burst ran


def test_new_sessions_and_resets_without_one_draw_on_their_addresss_budget() -> None:
    now = [0.0]
    table = SessionTable(ServerSettings(max_resets_per_s=2.0), clock=lambda: now[0])
    mine, theirs = table.address_budget("10.0.0.1"), table.address_budget("10.0.0.2")
    assert table.address_budget("10.0.0.1") is mine and theirs is not mine
    assert [mine.reserve(refuse_beyond_burst=False) for _ in range(6)] == [0.0, 0.0, 0.5, 1.0, 1.5, 2.0]
    with pytest.raises(WireError, match="new session or reset without one"):
        mine.reserve()  # a reset without a session, with opens queued beyond a burst
    now[0] = 60.0
    table.reap()  # a budget back to a whole burst is forgotten
    assert table.address_budget("10.0.0.1") is not mine

    async def open_at_once(url: str, count: int) -> list[str]:
        async def one() -> str:
            async with connect_async(url) as ws:
                await ws.send(json.dumps({"type": "reset", "data": {}}))
                return str(json.loads(await ws.recv())["type"])

        return await asyncio.gather(*(one() for _ in range(count)))

    async def stateless_burst(url: str, count: int) -> list[int]:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            replies = await asyncio.gather(*(http.post("/reset", json={"seed": n}) for n in range(count)))
        return [reply.status_code for reply in replies]

    with serve_in_thread(ServerSettings(max_resets_per_s=4.0)) as live:
        assert asyncio.run(open_at_once(live.ws_url, 8)) == ["observation"] * 8  # paced, never refused
        statuses = asyncio.run(stateless_burst(live.url, 16))
    assert 429 in statuses and statuses.count(200) >= 4


def test_a_session_that_never_stepped_times_out_first() -> None:
    settings = ServerSettings(unstepped_timeout_s=0.3, idle_timeout_s=120)
    with serve_in_thread(settings) as live, connect(live.ws_url) as idle, connect(live.ws_url) as playing:
        _ask(idle, {"type": "reset", "data": {}})
        _ask(playing, {"type": "reset", "data": {"seed": 0}})
        _ask(playing, {"type": "step", "data": {"text": "not json"}})
        assert json.loads(idle.recv(timeout=10))["data"]["code"] == "IDLE_TIMEOUT"
        with pytest.raises(ConnectionClosed) as closed:
            idle.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        assert _ask(playing, {"type": "state"})["data"]["step_count"] == 1  # past 0.3 s, still open


def test_state_in_a_loop_hashes_the_log_once_per_step(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[int] = []
    with connect(server.ws_url) as ws:
        _ask(ws, {"type": "reset", "data": {"seed": 4, "episode_id": "looped"}})
        (session,) = [s for s in server.sessions.sessions() if s.env.episode_id == "looped"]
        episode = session.env.env.episode
        original = episode.to_log
        monkeypatch.setattr(episode, "to_log", lambda *a: built.append(1) or original(*a))
        digests = {_ask(ws, {"type": "state"})["data"]["log_sha256"] for _ in range(50)}
        assert len(digests) == 1 and len(built) == 1
        _ask(ws, {"type": "step", "data": {"text": "not json"}})
        after = {_ask(ws, {"type": "state"})["data"]["log_sha256"] for _ in range(50)}
        assert len(after) == 1 and after != digests and len(built) == 2


def test_openenvs_generic_client_plays_like_the_local_env(server: LoopbackServer) -> None:
    local = ScientistEnv()
    observation, _ = local.reset(seed=6)
    with GenericEnvClient(base_url=server.url).sync() as env:
        result = env.reset(seed=6)
        assert result.observation["features"] == observation["observation"].tolist()
        for _ in range(3):
            step = {"move": {"action_type": "request_info", "questions": ["What equipment is available?"]}}
            observation, reward, terminated, truncated, _ = local.step(step["move"])
            result = env.step(step)
            assert result.observation["features"] == observation["observation"].tolist()
            assert (result.reward, result.done) == (reward, terminated or truncated)
        assert env.state()["step_count"] == 3
