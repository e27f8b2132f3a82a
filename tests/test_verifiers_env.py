"""The verifiers environment plays ReplicaLab episodes exactly as the Gymnasium env does.

Rollouts go through a real `openai.AsyncOpenAI` client to a real HTTP server on 127.0.0.1 that
replies with scripted Scientist moves; each rollout's reward, metrics and transcript must equal
what the Gymnasium text env gives for the same replies. Needs the `[verifiers]` extra.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

vf = pytest.importorskip(
    "verifiers", reason="the [verifiers] extra is not installed: pip install -e '.[verifiers]'"
)
openai = pytest.importorskip("openai", reason="the [verifiers] extra is not installed")
if not hasattr(vf, "MultiTurnEnv"):
    pytest.skip(
        f"verifiers {vf.__version__} keeps no classic MultiTurnEnv; tests/test_verifiers_v1.py covers it",
        allow_module_level=True,
    )

from replicalab.agents import build_scientist_system_prompt  # noqa: E402
from replicalab.envs.verifiers_env import SUPPORTED, ReplicaLabEnv, load_environment  # noqa: E402
from replicalab.scenarios import ScenarioKey, generate_scenario  # noqa: E402
from tests.chat_oracle import ACCEPT, GARBAGE, baseline_proposal, gymnasium_outcome  # noqa: E402

Reply = Callable[[list[dict[str, Any]]], str]  # request messages -> the assistant's text


class ChatServer:
    """POST /v1/chat/completions on 127.0.0.1 (port 0), answered by `reply`; records requests."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[list[dict[str, Any]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                messages = body["messages"]
                server.requests.append(messages)
                text = server.reply(messages)
                payload = json.dumps(
                    {
                        "id": f"chatcmpl-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def client_for(server: ChatServer) -> Any:
    client = openai.AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0)
    return vf.OpenAIChatCompletionsClient(client)


def scripted(script: dict[str, list[str]]) -> Reply:
    """Replies by scenario (known by its system prompt) and turn (the assistant messages so far)."""

    def reply(messages: list[dict[str, Any]]) -> str:
        turn = sum(1 for m in messages if m["role"] == "assistant")
        return script[messages[0]["content"]][turn]

    return reply


def evaluate(env: ReplicaLabEnv, server: ChatServer, num_examples: int) -> list[dict[str, Any]]:
    results = env.evaluate_sync(
        client=client_for(server), model="scripted", num_examples=num_examples, state_columns=["verdict"]
    )
    return sorted(results["outputs"], key=lambda output: output["example_id"])


def test_the_dataset_is_every_template_difficulty_and_seed_with_its_opening() -> None:
    env = load_environment(num_seeds=2, max_rounds=4)
    rows = env.get_dataset()
    ids = [row["info"]["scenario_id"] for row in rows]
    assert len(ids) == len(set(ids)) == 3 * 3 * 2
    assert ids[:3] == [
        "math_reasoning-train-easy-0",
        "math_reasoning-train-medium-0",
        "math_reasoning-train-hard-0",
    ]
    row = rows[7]
    key = ScenarioKey.parse(row["info"]["scenario_id"])
    pack = generate_scenario(key.seed, key.template, key.difficulty)
    system, user = row["prompt"]
    assert (system["role"], system["content"]) == ("system", build_scientist_system_prompt(pack))
    assert user["role"] == "user" and user["content"].startswith("Round 1 of 4\n")


def test_the_rubric_weighs_the_return_and_logs_the_judge_score() -> None:
    env = load_environment(num_seeds=1)
    names = [func.__name__ for func in env.rubric.rubrics[0].funcs]
    assert (names, env.rubric.rubrics[0].weights) == (["scientist_return", "judge_score"], [1.0, 0.0])


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"split": "dev"}, "split: unknown split 'dev'; valid: train, validation, test"),
        ({"max_rounds": 1}, "max_rounds: must be at least 2"),
        ({"templates": ["chemistry"]}, "template: unknown template 'chemistry'"),
        ({"difficulties": ["extreme"]}, "difficulty: unknown difficulty 'extreme'"),
        ({"num_seeds": 0}, "num_seeds: must be a positive int"),
        ({"reward_config": "dense"}, "reward_config: unknown preset 'dense'"),
    ],
)
def test_bad_arguments_are_refused_by_name(arguments: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        load_environment(**arguments)


def test_each_split_draws_its_own_scenarios() -> None:
    rows = {split: load_environment(split, num_seeds=1).get_dataset()["info"] for split in ("train", "test")}
    assert [row["scenario_id"].replace("-train-", "-test-") for row in rows["train"]] == [
        row["scenario_id"] for row in rows["test"]
    ]


@pytest.fixture(scope="module")
def scripted_run() -> Iterator[tuple[list[dict[str, Any]], dict[str, list[str]], ChatServer]]:
    """Three scenarios, each played: prose (refused), the baseline's proposal, accept."""
    env = load_environment(num_seeds=1, templates=["ml_benchmark"], max_rounds=5)
    ids = [row["info"]["scenario_id"] for row in env.get_dataset()]
    replies = {scenario_id: [GARBAGE, baseline_proposal(scenario_id), ACCEPT] for scenario_id in ids}
    system_prompts = {row["prompt"][0]["content"]: row["info"]["scenario_id"] for row in env.get_dataset()}
    with ChatServer(scripted({system: replies[sid] for system, sid in system_prompts.items()})) as server:
        yield evaluate(env, server, num_examples=3), replies, server


@pytest.mark.slow
def test_rollouts_score_what_the_gymnasium_env_gives_for_the_same_replies(
    scripted_run: tuple[list[dict[str, Any]], dict[str, list[str]], ChatServer],
) -> None:
    outputs, replies, _ = scripted_run
    assert len(outputs) == 3
    for output in outputs:
        scenario_id = output["info"]["scenario_id"]
        expected = gymnasium_outcome(scenario_id, replies[scenario_id], max_rounds=5)
        assert output["reward"] == pytest.approx(expected["return"])
        assert output["metrics"]["scientist_return"] == pytest.approx(expected["return"])
        assert output["metrics"]["judge_score"] == pytest.approx(expected["judge"])
        assert output["verdict"] == expected["verdict"]
    assert any(output["verdict"] == "agreement" for output in outputs)


@pytest.mark.slow
def test_the_environment_answers_each_move_with_the_next_observation(
    scripted_run: tuple[list[dict[str, Any]], dict[str, list[str]], ChatServer],
) -> None:
    outputs, replies, server = scripted_run
    for output in outputs:
        scenario_id = output["info"]["scenario_id"]
        expected = gymnasium_outcome(scenario_id, replies[scenario_id], max_rounds=5)
        completion = output["completion"]
        assistant = [m["content"] for m in completion if m["role"] == "assistant"]
        user = [m["content"] for m in completion if m["role"] == "user"]
        assert assistant == replies[scenario_id]
        assert output["prompt"][1]["content"] == expected["prompts"][0]
        assert user[:-1] == expected["prompts"][1:-1]  # the observations between the moves
        assert "move refused (no_json)" in user[0]  # the prose was refused, by the episode
        assert user[-1].startswith(f"The episode is over: {expected['verdict']}.")
    assert len(server.requests) == 3 * 3  # one model call per Scientist move, no more


@pytest.mark.slow
def test_a_model_that_never_acts_plays_to_the_round_limit() -> None:
    env = load_environment(num_seeds=1, templates=["finance_trading"], difficulties=["hard"], max_rounds=3)
    (row,) = env.get_dataset()
    with ChatServer(lambda messages: GARBAGE) as server:
        (output,) = evaluate(env, server, num_examples=1)
    expected = gymnasium_outcome(row["info"]["scenario_id"], [GARBAGE] * 3, max_rounds=3)
    assert expected["verdict"] == "round_limit"
    assert output["reward"] == pytest.approx(expected["return"]) and expected["return"] < 0
    assert len(server.requests) == 3
    assert output["completion"][-1]["content"].startswith("The episode is over: round_limit.")


@pytest.mark.slow
def test_the_judge_score_can_be_the_reward() -> None:
    env = load_environment(num_seeds=1, templates=["math_reasoning"], return_weight=0.0, score_weight=1.0)
    rows = env.get_dataset()
    script = {
        row["prompt"][0]["content"]: [baseline_proposal(row["info"]["scenario_id"], read=True), ACCEPT]
        for row in rows
    }
    with ChatServer(scripted(script)) as server:
        outputs = evaluate(env, server, num_examples=3)
    for output in outputs:
        assert output["reward"] == pytest.approx(output["metrics"]["judge_score"])
    assert any(output["reward"] > 0 for output in outputs)


def test_verifiers_loads_the_environment_by_name() -> None:
    """verifiers' convention: `load_environment(ID)` imports the module named ID and calls its
    `load_environment` with the given arguments."""
    env = vf.load_environment("replicalab", split="validation", num_seeds=2)
    assert isinstance(env, ReplicaLabEnv)
    assert env.env_id == "replicalab"


def test_the_supported_versions_are_the_extras_pin() -> None:
    requirements = importlib.metadata.requires("replicalab") or []
    (pin,) = [
        r.split(";")[0] for r in requirements if r.startswith("verifiers") and 'extra == "verifiers"' in r
    ]
    assert set(pin.removeprefix("verifiers").split(",")) == set(SUPPORTED.split(","))
    assert hasattr(vf, "MultiTurnEnv")  # the installed release is a supported one


def test_a_release_without_the_classic_api_is_refused_with_the_fix(tmp_path: Path) -> None:
    # verifiers 0.4 as installed: a package whose root holds only its version (the API moved to
    # verifiers.v1), found first on the path.
    package = tmp_path / "verifiers"
    package.mkdir()
    (package / "__init__.py").write_text('__version__ = "0.4.0"\n')
    info = tmp_path / "verifiers-0.4.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: verifiers\nVersion: 0.4.0\n")
    run = subprocess.run(
        [sys.executable, "-c", "import replicalab.envs.verifiers_env"],
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    error = run.stderr.strip().splitlines()[-1]
    assert error.startswith("ImportError:") and "verifiers 0.4.0 is installed" in error
    assert f"verifiers {SUPPORTED}" in error and "pip install 'verifiers<0.4'" in error
