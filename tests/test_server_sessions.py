"""Sessions under the operator's limits, on a real uvicorn on 127.0.0.1: configs beyond the
limits refused, one transport per session, per-client caps, the budget per client address, the shorter
timeout of a session that never stepped, a `state` that costs one digest per step, and OpenEnv's
generic client."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("openenv", reason="the server tests need the [server] extra (openenv-core)")
httpx = pytest.importorskip("httpx", reason="the server tests need httpx")
from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402
from websockets.sync.client import ClientConnection, connect  # noqa: E402

from replicalab.agents import build_baseline_scientist_action  # noqa: E402
from replicalab.baselines.server.budget import BURST_S, ClientBudget  # noqa: E402
from replicalab.baselines.server.http_routes import SESSION_HEADER  # noqa: E402
from replicalab.baselines.server.loopback import LoopbackServer, serve_in_thread  # noqa: E402
from replicalab.baselines.server.models import EnvConfig, ErrorCode, WireError  # noqa: E402
from replicalab.baselines.server.sessions import SessionTable  # noqa: E402
from replicalab.baselines.server.settings import Limits, ServerSettings  # noqa: E402
from replicalab.baselines.server.tarpit import RELEASE_BATCH, Tarpit  # noqa: E402
from replicalab.envs.scientist_v3 import ScientistEnv  # noqa: E402


def _wait_until(condition: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


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


class _Clock:
    """A clock the test moves: what a turn took is what the test says it took."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_budget_charges_what_a_turn_took_and_paces_the_next() -> None:
    clock = _Clock()
    budget = ClientBudget(0.1, clock)  # 100 ms of the loop a second

    async def one_turn(took: float) -> None:
        async with budget.turn():
            clock.now += took

    asyncio.run(one_turn(BURST_S + 0.04))  # began within the burst, then overdrew it by 40 ms
    assert budget.delay() == pytest.approx(0.4) and not budget.idle
    clock.now += 0.4
    assert budget.delay() == 0.0 and not budget.idle  # no longer overdrawn, not yet whole
    clock.now += 1.0  # refilled past whole: capped at one burst, whatever the rate
    assert budget.idle and budget.balance == budget.burst == BURST_S


def test_work_that_holds_no_session_queues_only_so_deep_and_a_stop_releases_it() -> None:
    clock = _Clock()
    budget = ClientBudget(0.1, clock)
    budget.charge(100.0)  # overdrawn for 1,000 s of the test's clock, which never moves

    async def scenario() -> tuple[list[BaseException | None], ErrorCode]:
        stopping = asyncio.Event()

        async def queued() -> None:
            async with budget.turn(stopping, queue_limit=3):
                raise AssertionError("an overdrawn budget gave a turn")

        waiting = [asyncio.create_task(queued()) for _ in range(3)]
        while budget.waiting < 3:
            await asyncio.sleep(0)
        with pytest.raises(WireError) as refused:
            async with budget.turn(stopping, queue_limit=3):
                pass
        stopping.set()
        ended = await asyncio.gather(*waiting, return_exceptions=True)
        return [e if isinstance(e, BaseException) else None for e in ended], refused.value.code

    ended, refused = asyncio.run(scenario())
    assert refused is ErrorCode.TOO_MANY_REQUESTS
    assert [getattr(e, "code", None) for e in ended] == [ErrorCode.SHUTTING_DOWN] * 3
    assert budget.waiting == 0


def test_each_address_has_one_budget_forgotten_once_whole() -> None:
    clock = _Clock()
    table = SessionTable(ServerSettings(client_ms_per_s=100), budget_clock=clock)
    mine, theirs = table.budget("10.0.0.1"), table.budget("10.0.0.2")
    assert table.budget("10.0.0.1") is mine and theirs is not mine and mine.rate == 0.1
    mine.charge(5.0)
    table.reap()
    assert table.budget("10.0.0.1") is mine  # still overdrawn: remembered
    clock.now = 600.0
    table.reap()
    assert table.budget("10.0.0.1") is not mine


class _HeldConnection:
    def __init__(self) -> None:
        self.dropped = 0

    def drop(self) -> None:
        self.dropped += 1


def test_a_cooldown_holds_its_connections_closes_them_all_when_it_ends_and_forgets_the_address() -> None:
    tarpit = Tarpit(cooldown_s=0.01)
    held = {f"10.0.{n // 256}.{n % 256}": [_HeldConnection() for _ in range(n % 3)] for n in range(2000)}
    held["10.0.0.2"] += [_HeldConnection() for _ in range(3 * RELEASE_BATCH)]  # closed in batches
    left = _HeldConnection()
    everyone = [connection for connections in held.values() for connection in connections]

    async def scenario() -> None:
        for address, connections in held.items():
            tarpit.cool_down(address, "too_many_connections")
            tarpit.cool_down(address, "overdrawn")  # one cool-down at a time, from its first flood
            for connection in connections:
                tarpit.hold(address, connection)
        tarpit.hold("10.0.0.1", left)
        tarpit.forget("10.0.0.1", left)  # it closed first (its client, or the connection cap)
        assert tarpit.cooling("10.0.0.1") and tarpit.holding("10.0.0.2") == 2 + 3 * RELEASE_BATCH
        while any(tarpit.cooling(address) for address in held) or not all(c.dropped for c in everyone):
            await asyncio.sleep(0.001)

    asyncio.run(scenario())
    assert all(c.dropped == 1 for c in everyone) and left.dropped == 0
    assert not tarpit.holding("10.0.0.2")  # nothing of any address is left


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


def test_an_address_over_its_budget_waits_its_turn_and_another_address_does_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="uvicorn.error")
    settings = ServerSettings(max_overdraft_s=1e9, max_queued_per_client=2, flood_cooldown_s=0.5)

    def cooling() -> bool:
        return live.on_loop(lambda: live.sessions.tarpit.cooling("127.0.0.1"))

    with serve_in_thread(settings) as live, connect(live.ws_url):
        budget = live.sessions.budget("127.0.0.1")
        assert _wait_until(lambda: len(live.sessions) == 1)  # opened within the burst
        live.on_loop(lambda: budget.charge(3600))  # an hour over its budget now
        queued = [connect(live.ws_url) for _ in range(2)]  # wait for their sessions: the queue
        try:
            assert _wait_until(lambda: budget.waiting == 2)
            with pytest.raises(InvalidStatus) as refused:  # refused before its handshake ends
                connect(live.ws_url, open_timeout=10)
            assert refused.value.response.status_code == 429
            assert b"TOO_MANY_REQUESTS" in refused.value.response.body
            # asking past a full queue is a flood: the address cools down (its new connections
            # are held unanswered till it ends), and is refused again once it asks past it again
            assert cooling()
            assert _wait_until(lambda: not cooling())
            stateless = httpx.post(f"{live.url}/reset", json={}, timeout=10)
            assert (stateless.status_code, stateless.json()["error"]["code"]) == (429, "TOO_MANY_REQUESTS")
            assert cooling()
            # another address has its own budget: 127.0.0.2 is this machine too
            transport = httpx.HTTPTransport(local_address="127.0.0.2")
            with httpx.Client(transport=transport, base_url=live.url) as other:
                assert other.post("/reset", json={"seed": 1}, timeout=10).status_code == 200
            assert len(live.sessions) == 1 and budget.waiting == 2
        finally:
            for ws in queued:
                ws.close()
    assert not [r for r in caplog.records if r.name == "uvicorn.error"]  # a refusal is no server error


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
