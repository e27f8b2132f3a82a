"""The OpenEnv server against a real uvicorn on 127.0.0.1: round trips in both action modes, the
same episodes as the local env, typed refusals of bad input, isolated and bounded sessions, the
idle timeout, a client that stops reading, and nothing hidden in what a Scientist receives."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("openenv", reason="the server tests need the [server] extra (openenv-core)")
httpx = pytest.importorskip("httpx", reason="the server tests need httpx")
orjson = pytest.importorskip("orjson", reason="the server tests need orjson")
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import ClientConnection, connect  # noqa: E402

from replicalab.agents import build_baseline_scientist_action  # noqa: E402
from replicalab.baselines.server.client import ReplicaLabClient, ServerError  # noqa: E402
from replicalab.baselines.server.environment import ScientistServerEnv  # noqa: E402
from replicalab.baselines.server.http_routes import NEW_SESSION, SESSION_HEADER  # noqa: E402
from replicalab.baselines.server.loopback import LoopbackServer, serve_in_thread  # noqa: E402
from replicalab.baselines.server.models import EnvConfig, ReplicaLabAction, ReplicaLabObservation  # noqa: E402
from replicalab.baselines.server.sessions import Session  # noqa: E402
from replicalab.baselines.server.settings import Limits, ServerSettings  # noqa: E402
from replicalab.envs.scientist_v3 import ScientistEnv  # noqa: E402


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with serve_in_thread(ServerSettings(max_sessions=16)) as live:
        yield live


def _served(server: LoopbackServer, episode_id: str) -> Session:
    """The server's session playing the episode a client reset with `episode_id` (a WebSocket
    session's id never leaves the server, so the test finds it by its episode)."""
    (session,) = [s for s in server.sessions.sessions() if s.env.episode_id == episode_id]
    return session


def _wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _ask(ws: ClientConnection, message: object) -> dict[str, Any]:
    ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
    reply: dict[str, Any] = json.loads(ws.recv(timeout=10))
    return reply


def _baseline_actions(
    kwargs: dict[str, Any], seed: int, episode_id: str | None = None
) -> tuple[list[dict[str, Any]], str]:
    """The baseline Scientist's moves in the local env's episode, and that episode's log JSON."""
    env = ScientistEnv(**kwargs)
    env.reset(seed=seed)
    moves: list[dict[str, Any]] = []
    done = False
    while not done:
        move = build_baseline_scientist_action(env.episode.scientist_observation()).model_dump(mode="json")
        moves.append(move)
        _, _, terminated, truncated, _ = env.step(
            json.dumps(move) if kwargs["action_mode"] == "text" else move
        )
        done = terminated or truncated
    return moves, env.episode.to_log(episode_id).model_dump_json()


# --------------------------------------------------------------------------- round trips, determinism


@pytest.mark.parametrize("mode", ["structured", "text"])
def test_an_episode_through_the_client_is_the_local_envs_byte_for_byte(
    server: LoopbackServer, mode: str
) -> None:
    config = EnvConfig(action_mode=mode, templates=["ml_benchmark"] if mode == "text" else None)
    for seed in (0, 7):
        moves, local_log = _baseline_actions(config.env_kwargs(), seed, f"{mode}-{seed}")
        with ReplicaLabClient(base_url=server.url).sync() as env:
            result = env.reset(seed=seed, config=config.model_dump(), episode_id=f"{mode}-{seed}")
            assert (result.observation.prompt is not None) == (mode == "text")
            assert ("system_prompt" in result.observation.info) == (mode == "text")
            for move in moves:
                assert not result.done
                action = (
                    ReplicaLabAction(text=json.dumps(move)) if mode == "text" else ReplicaLabAction(move=move)
                )
                result = env.step(action)
                assert result.observation.info["error"] is None
            assert result.done and result.observation.terminated
            assert result.observation.info["verdict"] == json.loads(local_log)["verdict"]
            assert "judge" in result.observation.info
            state = env.state()
            served_env = _served(server, f"{mode}-{seed}").env
            served = served_env.env.episode.to_log(served_env.episode_id).model_dump_json()
        assert state.session_id is None  # a WebSocket session's id never leaves the server
        assert served == local_log
        assert state.log_sha256 == hashlib.sha256(local_log.encode()).hexdigest()
        assert state.step_count == len(moves)


def test_structured_vectors_step_like_the_local_env(server: LoopbackServer) -> None:
    local = ScientistEnv()
    local_obs, _ = local.reset(seed=3)
    with ReplicaLabClient(base_url=server.url).sync() as env:
        result = env.reset(seed=3)
        assert result.observation.features == local_obs["observation"].tolist()
        assert result.observation.action_mask == local_obs["action_mask"].tolist()
        local.action_space.seed(5)
        for _ in range(4):
            vector = local.action_space.sample(local_obs["action_mask"]).tolist()
            local_obs, reward, terminated, truncated, info = local.step(vector)
            result = env.step(ReplicaLabAction(vector=vector))
            assert result.observation.features == local_obs["observation"].tolist()
            assert (result.reward, result.observation.info) == (reward, json.loads(json.dumps(info)))
            if terminated or truncated:
                break


def test_the_env_codes_a_bad_move_as_locally_and_the_episode_goes_on(server: LoopbackServer) -> None:
    with ReplicaLabClient(base_url=server.url).sync() as env:
        env.reset(seed=1, config={"action_mode": "text"})
        result = env.step(ReplicaLabAction(text="I refuse to answer in JSON"))
        assert result.observation.info["error"]["code"] == "no_json"
        assert result.reward is not None and result.reward < 0 and not result.done
        result = env.step(ReplicaLabAction(move={"action_type": "accept", "surprise": 1}))
        assert result.observation.info["error"]["code"] == "invalid_action"
        with pytest.raises(ServerError) as refused:
            env.step(ReplicaLabAction(vector=[0] * 3))  # no vectors in text mode
        assert refused.value.code == "VALIDATION_ERROR"


def test_http_sessions_play_like_websocket_ones(server: LoopbackServer) -> None:
    moves, local_log = _baseline_actions(EnvConfig().env_kwargs(), 11)
    with httpx.Client(base_url=server.url, timeout=10) as http:
        opened = http.post("/reset", json={"seed": 11}, headers={SESSION_HEADER: NEW_SESSION})
        assert opened.status_code == 200
        session = opened.headers[SESSION_HEADER]
        assert set(opened.json()) == {"observation", "reward", "done"}  # OpenEnv's ResetResponse
        for move in moves:
            stepped = http.post("/step", json={"action": {"move": move}}, headers={SESSION_HEADER: session})
            assert stepped.status_code == 200
        assert stepped.json()["done"] is True
        state = http.get("/state", headers={SESSION_HEADER: session}).json()
        assert state["log_sha256"] == hashlib.sha256(local_log.encode()).hexdigest()
        again = http.post("/step", json={"action": {"move": moves[-1]}}, headers={SESSION_HEADER: session})
        assert (again.status_code, again.json()["error"]["code"]) == (409, "EPISODE_OVER")
        assert http.post("/close", headers={SESSION_HEADER: session}).json() == {"closed": True}
        gone = http.post("/step", json={"action": {"move": moves[0]}}, headers={SESSION_HEADER: session})
        assert (gone.status_code, gone.json()["error"]["code"]) == (404, "UNKNOWN_SESSION")


@pytest.mark.parametrize("mode", ["structured", "text"])
def test_every_observation_on_the_wire_is_the_models_own_dump(mode: str) -> None:
    """The server builds its replies from the env's values without the model: each must be what
    `ReplicaLabObservation` makes of them, field for field, in its order, to the byte."""
    env = ScientistServerEnv(EnvConfig(action_mode=mode), Limits())
    replies = [env.reset({"seed": 3}), env.step({"text": "not json"})]  # one with an error code
    while not replies[-1]["done"]:
        move = build_baseline_scientist_action(env.env.episode.scientist_observation())
        form = {"text": move.model_dump_json()} if mode == "text" else {"move": move.model_dump(mode="json")}
        replies.append(env.step(form))
    assert replies[-1]["observation"]["info"]["verdict"] and "judge" in replies[-1]["observation"]["info"]
    for reply in replies:
        model = ReplicaLabObservation.model_validate(
            {**reply["observation"], "reward": reply["reward"], "done": reply["done"]}
        )
        dumped = model.model_dump(exclude={"reward", "done", "metadata"})
        assert orjson.dumps(reply) == orjson.dumps(
            {"observation": dumped, "reward": model.reward, "done": model.done}
        )


def test_schema_metadata_and_health(server: LoopbackServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as http:
        schema = http.get("/schema").json()
        assert {"text", "move", "vector", "seat"} <= set(schema["action"]["properties"])
        assert {"features", "action_mask", "prompt", "info"} <= set(schema["observation"]["properties"])
        assert http.get("/metadata").json()["name"] == "replicalab"
        assert http.get("/health").json() == {"status": "healthy"}


def test_websocket_compression_is_the_operators_choice(server: LoopbackServer) -> None:
    def played(url: str) -> tuple[str | None, dict[str, Any]]:
        with connect(url) as ws:  # the client offers permessage-deflate, as websockets' does
            reset = {"type": "reset", "data": {"seed": 1, "config": {"action_mode": "text"}}}
            return ws.response.headers.get("Sec-WebSocket-Extensions"), _ask(ws, reset)

    plain = played(server.ws_url)  # the default: replies go uncompressed
    with serve_in_thread(ServerSettings(ws_compression=True)) as live:
        deflated = played(live.ws_url)
    assert plain[0] is None and "permessage-deflate" in (deflated[0] or "")
    assert plain[1] == deflated[1]


# --------------------------------------------------------------------------- bad input


_BAD_MESSAGES: list[tuple[object, str]] = [
    ("{not json", "INVALID_JSON"),
    (b"\xff\xfe", "INVALID_JSON"),
    ("[1, 2]", "INVALID_JSON"),
    ({"type": "dance"}, "UNKNOWN_TYPE"),
    ({"data": {}}, "UNKNOWN_TYPE"),
    ({"type": "step", "data": {}}, "VALIDATION_ERROR"),  # no form given
    ({"type": "step", "data": {"text": "a", "move": {}}}, "VALIDATION_ERROR"),  # two forms
    ({"type": "step", "data": {"text": 3}}, "VALIDATION_ERROR"),
    ({"type": "step", "data": "accept"}, "VALIDATION_ERROR"),
    ({"type": "step", "data": {"text": "{}", "seat": "lab_manager"}}, "WRONG_SEAT"),
    ({"type": "reset", "data": {"seed": -1}}, "VALIDATION_ERROR"),
    ({"type": "reset", "data": {"sed": 1}}, "VALIDATION_ERROR"),
    ({"type": "reset", "data": {"options": {"template": "no_such_template"}}}, "VALIDATION_ERROR"),
    ({"type": "reset", "data": {"config": {"max_rounds": 1}}}, "VALIDATION_ERROR"),
    ({"type": "reset", "data": {"config": {"action_mode": "telepathy"}}}, "VALIDATION_ERROR"),
    ({"type": "reset", "data": []}, "VALIDATION_ERROR"),
    ("x" * (ServerSettings().max_body_bytes + 1), "MESSAGE_TOO_LARGE"),
]


def test_every_bad_message_gets_a_typed_error_and_the_session_carries_on(server: LoopbackServer) -> None:
    with connect(server.ws_url) as ws:
        assert _ask(ws, {"type": "step", "data": {"text": "{}"}})["data"]["code"] == "NOT_RESET"
        assert _ask(ws, {"type": "state"})["data"]["code"] == "NOT_RESET"
        first = _ask(ws, {"type": "reset", "data": {"seed": 4}})
        for message, code in _BAD_MESSAGES:
            reply = _ask(ws, message)
            assert reply["type"] == "error", message
            assert reply["data"]["code"] == code, (message, reply)
            assert reply["data"]["message"]
        state = _ask(ws, {"type": "state"})["data"]
        assert state["step_count"] == 0  # no refused message reached the episode
        again = _ask(ws, {"type": "reset", "data": {"seed": 4}})
        assert again == first
    assert _wait_until(lambda: len(server.sessions) == 0)


def test_bad_http_requests_get_typed_errors(server: LoopbackServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as http:
        new = {SESSION_HEADER: NEW_SESSION}
        session = http.post("/reset", json={}, headers=new).headers[SESSION_HEADER]
        too_large = b"x" * (ServerSettings().max_body_bytes + 1)
        cases = [
            (http.post("/reset", content=b"{oops", headers=new), 400, "INVALID_JSON"),
            (http.post("/reset", json={"seed": "one"}, headers=new), 422, "VALIDATION_ERROR"),
            (http.post("/reset", json={"seed": "one"}), 422, "VALIDATION_ERROR"),
            (http.post("/step", json={"action": {"text": "{}"}}), 400, "NO_SESSION"),
            (http.get("/state"), 400, "NO_SESSION"),
            (
                http.post("/step", json={"action": {"text": "{}"}}, headers={SESSION_HEADER: "guess"}),
                404,
                "UNKNOWN_SESSION",
            ),
            (
                http.post("/step", json={"act": {}}, headers={SESSION_HEADER: session}),
                422,
                "VALIDATION_ERROR",
            ),
            (
                http.post(
                    "/step", json={"action": {"text": "{}", "seat": "x"}}, headers={SESSION_HEADER: session}
                ),
                400,
                "WRONG_SEAT",
            ),
            (
                http.post("/step", content=too_large, headers={SESSION_HEADER: session}),
                413,
                "MESSAGE_TOO_LARGE",
            ),
            (
                http.post(
                    "/step",
                    content=iter([too_large[:1000], too_large[1000:]]),
                    headers={SESSION_HEADER: session},
                ),
                413,
                "MESSAGE_TOO_LARGE",
            ),  # chunked, no Content-Length
            (http.get("/state", headers={SESSION_HEADER: session + "x"}), 404, "UNKNOWN_SESSION"),
        ]
        for response, status, code in cases:
            assert (response.status_code, response.json()["error"]["code"]) == (status, code)
        # a failed first reset opens no session, and a reset without a session keeps none
        assert http.get("/capacity").json()["active_sessions"] == 1
        http.post("/close", headers={SESSION_HEADER: session})


def test_the_server_refuses_sessions_beyond_max_sessions_and_frees_closed_ones() -> None:
    with serve_in_thread(ServerSettings(max_sessions=2)) as live:
        first, second = connect(live.ws_url), connect(live.ws_url)
        for ws in (first, second):
            _ask(ws, {"type": "reset", "data": {"seed": 0}})
        with connect(live.ws_url) as third:
            reply = json.loads(third.recv(timeout=10))
            assert reply["data"]["code"] == "CAPACITY_REACHED"
            with pytest.raises(ConnectionClosed):
                third.recv(timeout=10)
        refused = httpx.post(f"{live.url}/reset", json={}, headers={SESSION_HEADER: NEW_SESSION}, timeout=10)
        assert (refused.status_code, refused.json()["error"]["code"]) == (503, "CAPACITY_REACHED")
        first.close()
        assert _wait_until(lambda: len(live.sessions) == 1)
        with connect(live.ws_url) as fourth:
            assert _ask(fourth, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        assert _ask(second, {"type": "state"})["type"] == "state"  # untouched throughout
        second.close()


def test_idle_sessions_are_closed_and_freed() -> None:
    with serve_in_thread(ServerSettings(idle_timeout_s=0.3)) as live:
        new = {SESSION_HEADER: NEW_SESSION}
        session = httpx.post(f"{live.url}/reset", json={}, headers=new, timeout=10).headers[SESSION_HEADER]
        with connect(live.ws_url) as ws:
            _ask(ws, {"type": "reset", "data": {}})
            reply = json.loads(ws.recv(timeout=10))  # sent when the connection idled out
            assert reply["data"]["code"] == "IDLE_TIMEOUT"
            with pytest.raises(ConnectionClosed):
                ws.recv(timeout=10)
        assert _wait_until(lambda: len(live.sessions) == 0)
        late = httpx.post(
            f"{live.url}/step", json={"action": {"text": "{}"}}, headers={SESSION_HEADER: session}
        )
        assert late.json()["error"]["code"] == "UNKNOWN_SESSION"


def test_a_client_that_stops_reading_is_dropped_and_the_server_keeps_serving() -> None:
    # the flood fills the socket buffers with replies: no budget slows it
    with serve_in_thread(ServerSettings(send_timeout_s=0.3, client_ms_per_s=1e6)) as live:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", int(live.url.rsplit(":", 1)[1])))
        stalled = connect(live.ws_url, sock=sock, max_queue=1)
        stalled.send(json.dumps({"type": "reset", "data": {"config": {"action_mode": "text"}}}))

        def flood() -> None:  # ask for long replies and never read one
            message = json.dumps({"type": "reset", "data": {}})
            try:
                for _ in range(5000):
                    stalled.send(message)
            except (ConnectionClosed, OSError):
                pass

        sender = threading.Thread(target=flood, daemon=True)
        sender.start()
        assert _wait_until(lambda: len(live.sessions) == 0, 60)
        with ReplicaLabClient(base_url=live.url).sync() as env:
            assert not env.reset(seed=0).done
        sock.close()
        sender.join(timeout=10)


# --------------------------------------------------------------------------- isolation and secrecy


def test_sessions_are_isolated_and_their_ids_unguessable(server: LoopbackServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as http:
        new = {SESSION_HEADER: NEW_SESSION}
        ids = [http.post("/reset", json={"seed": 2}, headers=new).headers[SESSION_HEADER] for _ in range(4)]
        assert len(set(ids)) == 4 and all(len(i) >= 43 for i in ids)  # 256 random bits each
        before = [http.get("/state", headers={SESSION_HEADER: i}).json() for i in ids]
        http.post("/step", json={"action": {"text": "nonsense"}}, headers={SESSION_HEADER: ids[0]})
        after = [http.get("/state", headers={SESSION_HEADER: i}).json() for i in ids]
        assert after[0]["step_count"] == 1 and after[1:] == before[1:]
        for i in ids:
            http.post("/close", headers={SESSION_HEADER: i})


def test_a_reset_without_a_session_depends_on_its_request_alone(server: LoopbackServer) -> None:
    local = ScientistEnv()
    local.reset(seed=3)
    continued = local.reset()[0]["observation"].tolist()  # what a shared generator would give next
    with httpx.Client(base_url=server.url, timeout=10) as http:
        first = http.post("/reset", json={"seed": 3}).json()
        other = http.post("/reset", json={"seed": 4, "config": {"action_mode": "text"}}).json()
        again = http.post("/reset", json={"seed": 3}).json()
        seedless = [http.post("/reset", json={}).json()["observation"]["features"] for _ in range(2)]
    assert other["observation"]["prompt"] is not None  # that client's own config
    assert again == first and first["observation"]["prompt"] is None  # the server's defaults, not it
    assert continued not in seedless and seedless[0] != seedless[1]  # fresh entropy each time


def test_nothing_a_scientist_session_returns_holds_the_hidden_study(server: LoopbackServer) -> None:
    probing = {"action_type": "request_info", "questions": ["What is the target metric of the reference?"]}
    checked = 0
    with connect(server.ws_url) as ws:
        for seed in range(12):
            config = {"action_mode": "text" if seed % 2 else "structured"}
            reset = {"seed": seed, "config": config, "episode_id": f"secret-{seed}"}
            replies = [_ask(ws, {"type": "reset", "data": reset})]
            session = _served(server, f"secret-{seed}")
            episode = session.env.env.episode
            pack, hidden = episode.scenario, episode.scenario.hidden_reference_spec
            # what the paper, the goal or the candidates name is public by design
            public = json.dumps([pack.experiment_goal, pack.paper.model_dump(), pack.candidates.model_dump()])
            named = [*hidden.required_elements, hidden.target_metric]
            secrets = [hidden.summary.lower(), *(n.lower() for n in named if n.lower() not in public.lower())]
            baseline = build_baseline_scientist_action(episode.scientist_observation()).model_dump(
                mode="json"
            )
            for move in (probing, baseline):
                if not episode.done:
                    replies.append(_ask(ws, {"type": "step", "data": {"text": json.dumps(move)}}))
            replies.append(_ask(ws, {"type": "state"}))
            seen = json.dumps(replies, ensure_ascii=False).lower()
            for secret in secrets:
                assert secret not in seen, (seed, secret)
            checked += len(secrets)
    assert checked > 12  # some element beyond the summaries was secret, and checked
