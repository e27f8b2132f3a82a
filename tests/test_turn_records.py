"""Turn-level training records: the exact messages the server received, the completion it sent,
what the move earned, and one schema for every line, so `datasets` reads the file as a table."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the chat backend needs the [llm] extra: pip install 'replicalab[llm]'")

from benchmarks.openai_stub import Reply, StubServer, completion, fault
from replicalab.baselines.evaluation.rollouts import run_rollouts
from replicalab.baselines.evaluation.runner import Grid, Settings
from replicalab.baselines.evaluation.turn_records import TurnRecord
from replicalab.baselines.llm.backend import BackendConfig, ChatBackend
from replicalab.baselines.policies.chat import ChatPolicy
from replicalab.baselines.policies.roles import ScientistRole
from tests.scripted_models import flaky_model

GRID = Grid.of(["ml_benchmark", "finance_trading"], ["medium"], 2)
KEYS = list(TurnRecord.model_fields)


def flaky_then_down(request: dict[str, Any]) -> Reply:
    """`flaky_model`, except that round 3 is never answered (a 503, every time)."""
    if "Round 3 of" in request["messages"][1]["content"]:
        return fault(503, retry_after_s=0)
    return completion(flaky_model(request["messages"]))


def export(stub: StubServer, path: Path, group_size: int) -> list[dict[str, Any]]:
    backend = ChatBackend(BackendConfig(base_url=stub.base_url, model="stub", max_retries=0))
    scientist = functools.partial(ChatPolicy, ScientistRole(), backend)
    result = run_rollouts(
        GRID,
        scientist,
        concurrency=4,
        group_size=group_size,
        export_turns=path,
        settings=Settings(max_rounds=4),
    )
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    by_id = {log.episode_id: log for log in result.logs}
    for record in records:
        log = by_id[record["episode_id"]]
        assert record["advantage"] == log.advantage and record["group_id"] == log.group_id
        assert record["episode_return"] == log.total_rewards["scientist"]
    return records


def test_each_answered_turn_is_one_record_of_one_schema(stub: StubServer, tmp_path: Path) -> None:
    stub.script = flaky_then_down
    records = export(stub, tmp_path / "turns.jsonl", group_size=1)
    assert all(list(record) == KEYS for record in records)
    assert all(TurnRecord.model_validate(record) for record in records)
    # Rounds 1, 2 and 4 of each episode; round 3 got no completion, so it has no record.
    assert [r["round_number"] for r in records] == [1, 2, 4] * len(GRID.cells())
    assert {r["group_id"] for r in records} == {None} and {r["advantage"] for r in records} == {None}
    round_two = records[1]
    assert round_two["error_code"] == "no_json"  # every attempt was prose: the episode refused it
    assert round_two["completion"] == "I would rather describe the plan in words."


def test_a_record_holds_the_messages_exactly_as_the_server_received_them(
    stub: StubServer, tmp_path: Path
) -> None:
    stub.script = flaky_then_down
    records = export(stub, tmp_path / "turns.jsonl", group_size=1)
    received = [request["messages"] for request in stub.requests]
    for record in records:
        assert record["messages"] in received  # the turn's last call
        assert record["messages"][0]["role"] == "system" and record["messages"][1]["role"] == "user"
    first = records[0]  # round 1: malformed JSON, a correction, then the proposal
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant", "user"]
    assert first["messages"][2]["content"] == '{"action_type": "accept",}'
    assert first["completion"].startswith('{"action_type": "propose_protocol"')


def test_the_reward_of_a_turn_runs_to_the_agents_next_move(stub: StubServer, tmp_path: Path) -> None:
    stub.script = flaky_then_down
    backend = ChatBackend(BackendConfig(base_url=stub.base_url, model="stub", max_retries=0))
    path = tmp_path / "turns.jsonl"
    result = run_rollouts(
        Grid.of(["ml_benchmark"], ["medium"], 1),
        functools.partial(ChatPolicy, ScientistRole(), backend),
        export_turns=path,
        settings=Settings(max_rounds=4),
    )
    (log,) = result.logs
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        step = record["step"]
        assert log.steps[step].agent == "scientist" and log.steps[step].round_number == record["round_number"]
        following = log.steps[step : step + 2]  # the move and the Lab Manager's answer to it
        assert record["reward"] == pytest.approx(sum(s.rewards["scientist"] for s in following))


def test_grouped_records_carry_the_group_and_its_advantage(stub: StubServer, tmp_path: Path) -> None:
    stub.script = flaky_then_down
    records = export(stub, tmp_path / "turns.jsonl", group_size=2)
    assert all(r["group_id"] is not None and r["episode_id"].startswith(r["group_id"] + "/") for r in records)
    assert all(isinstance(r["advantage"], float) for r in records)


def test_datasets_loads_the_export(stub: StubServer, tmp_path: Path) -> None:
    datasets = pytest.importorskip(
        "datasets", reason="datasets is not installed (a heavy package, kept out of the [llm] extra)"
    )
    stub.script = flaky_then_down
    path = tmp_path / "turns.jsonl"
    records = export(stub, path, group_size=2)
    table = datasets.load_dataset("json", data_files=str(path), split="train")
    assert table.num_rows == len(records)
    assert table.column_names == KEYS
    assert table[0]["messages"] == records[0]["messages"]
