"""Concurrent rollouts against a loopback model server: the runner's log, byte for byte, at any
concurrency; faults recorded inside their episode; GRPO groups with their advantages; resume."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("openai", reason="the chat backend needs the [llm] extra: pip install 'replicalab[llm]'")

from benchmarks.openai_stub import (
    PROPOSAL,
    Reply,
    StubServer,
    completion,
    fault,
    last_user_message,
    malformed,
)
from replicalab.agents import MAX_PROMPT_CHARS
from replicalab.baselines.evaluation import workers
from replicalab.baselines.evaluation.rollouts import group_advantages, rollout_seed, run_rollouts, usage_path
from replicalab.baselines.evaluation.runner import Grid, Settings, policy_seed, run_grid
from replicalab.baselines.llm.backend import BackendConfig, ChatBackend
from replicalab.baselines.policies import roles
from replicalab.baselines.policies.chat import ChatPolicy
from replicalab.baselines.policies.roles import ScientistRole
from replicalab.baselines.policies.seats import RandomScientist
from replicalab.digest import EpisodeDigest
from replicalab.episode import Episode
from replicalab.models import EpisodeLog
from replicalab.scenarios import NormalizedScenarioPack, ScenarioKey, generate_pack
from tests.scripted_models import LLM, SMALL, flaky_model

GRID = Grid.of(["ml_benchmark", "math_reasoning"], ["easy", "hard"], 2)  # 8 cells


def chat(stub: StubServer, **policy: Any) -> functools.partial[ChatPolicy]:
    config = BackendConfig(base_url=stub.base_url, model="stub", max_retries=1, backoff_s=0.0)
    return functools.partial(ChatPolicy, ScientistRole(), ChatBackend(config), **policy)


def flaky_script(request: dict[str, Any]) -> Reply:
    """`flaky_model` served over HTTP, each reply after a delay that differs per request, so
    episodes in flight finish out of order."""
    return completion(flaky_model(request["messages"]), delay_s=(request["seed"] % 7) * 0.002)


def sampled_script(request: dict[str, Any]) -> Reply:
    """A sampled model: its first answer depends on the request's seed (prose or a proposal)."""
    if "No protocol has been proposed yet" in last_user_message(request) and len(request["messages"]) == 2:
        return completion(PROPOSAL if request["seed"] % 2 else "Let me think first.")
    return completion(
        PROPOSAL if "No protocol" in last_user_message(request) else '{"action_type": "accept"}'
    )


def _bytes(path: Path) -> bytes:
    return path.read_bytes()


# --------------------------------------------------------------------------- the runner's log


def test_sync_policies_give_the_runners_bytes_at_any_concurrency(tmp_path: Path) -> None:
    run_grid(SMALL, RandomScientist, out=tmp_path / "grid.jsonl")
    result = run_rollouts(SMALL, RandomScientist, concurrency=5, out=tmp_path / "rollouts.jsonl")
    assert _bytes(tmp_path / "rollouts.jsonl") == _bytes(tmp_path / "grid.jsonl")
    assert result.logs == run_rollouts(SMALL, RandomScientist, concurrency=5).logs  # kept as lines, or not
    assert len(result.logs) == len(SMALL.cells()) and result.usage == []
    assert not usage_path(tmp_path / "rollouts.jsonl").exists()  # no chat seat, no usage


@pytest.mark.parametrize("concurrency", [1, 16])
def test_a_served_model_plays_what_the_generate_fn_route_plays(
    stub: StubServer, tmp_path: Path, concurrency: int
) -> None:
    """The async turn replays the agents' retry loop: same replies, same log, byte for byte, but
    for the model each log's provenance names (the served model's, or the function's)."""
    stub.script = flaky_script
    run_grid(GRID, LLM, out=tmp_path / "sync.jsonl")
    result = run_rollouts(GRID, chat(stub), concurrency=concurrency, out=tmp_path / "async.jsonl")
    sync = _bytes(tmp_path / "sync.jsonl")
    assert result.provenance is not None and result.provenance.model == "stub"
    function = f'"model":"{flaky_model.__module__}:{flaky_model.__qualname__}"'.encode()
    assert _bytes(tmp_path / "async.jsonl") == sync.replace(function, b'"model":"stub"')
    assert result.stats == run_grid(GRID, LLM).stats
    # Round 1 takes a correction, round 2 runs out of retries (3 calls), later rounds correct once.
    assert result.stats["llm_corrections"] > 0 and result.stats["llm_parse_failures"] == len(GRID.cells())


def test_episodes_are_written_in_grid_order_as_they_complete(stub: StubServer, tmp_path: Path) -> None:
    stub.script = flaky_script
    seen: list[EpisodeDigest] = []
    run_rollouts(GRID, chat(stub), concurrency=8, out=tmp_path / "run.jsonl", on_episode=seen.append)
    ids = [json.loads(line)["episode_id"] for line in _bytes(tmp_path / "run.jsonl").splitlines()]
    assert ids == [cell.episode_id("llm", "grounded") for cell in GRID.cells()]
    assert [(d.template, d.difficulty, d.seed) for d in seen] == [
        (c.template, c.difficulty, c.seed) for c in GRID.cells()
    ]


# --------------------------------------------------------------------------- faults


def faulty_script(request: dict[str, Any]) -> Reply:
    """Round 2 of the ML papers answers 500 every time; the maths papers get a malformed body in
    round 3, no choices in round 4, and proposals otherwise."""
    user = last_user_message(request)
    maths = "Domain: mathematics" in request["messages"][0]["content"]
    if not maths and "Round 2 of" in user:
        return fault(500, retry_after_s=0)
    if maths and "Round 3 of" in user:
        return malformed()
    if maths and "Round 4 of" in user:
        return completion("unused", choices=False)
    return completion(PROPOSAL)


def test_every_fault_is_a_refused_move_in_its_episode_and_the_run_goes_on(
    stub: StubServer, tmp_path: Path
) -> None:
    stub.script = faulty_script
    out = tmp_path / "run.jsonl"
    result = run_rollouts(GRID, chat(stub), concurrency=8, out=out, settings=Settings(max_rounds=4))
    assert len(result.logs) == len(GRID.cells())
    for log in result.logs:
        codes = [step.error_code for step in log.steps if step.agent == "scientist"]
        if log.template == "ml_benchmark":
            assert codes == [None, "llm_http_error", None, None]
        else:
            assert codes == [None, None, "llm_bad_response", "llm_empty"]
        assert log.verdict == "round_limit" and EpisodeLog.model_validate_json(log.model_dump_json()) == log
    refused = next(entry.message for entry in result.logs[0].transcript if entry.role == "system")
    assert (
        refused.startswith("scientist move refused (llm_http_error): HTTP 500") and "after 1 retry" in refused
    )
    usage = [json.loads(line) for line in usage_path(out).read_text().splitlines()]
    assert [u["episode_id"] for u in usage] == [log.episode_id for log in result.logs]
    ml = [u for u in usage if u["episode_id"].startswith("ml_")]
    assert all(
        u["failed_calls"] == {"llm_http_error": 1} and u["retries"] == 1 and u["calls"] == 4 for u in ml
    )
    assert result.stats["llm_generate_errors"] == 4 + 4 * 2


class _Bug(Exception):
    pass


class _BuggyScientist:
    name = "buggy"

    async def act(self, episode: Episode) -> str:
        if episode.scenario.seed == 1:
            raise _Bug("a bug of ours is not a model's fault")
        return PROPOSAL if episode.protocol is None else '{"action_type": "accept"}'


def test_a_bug_stops_the_run_and_leaves_whole_lines(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    with pytest.raises(_Bug):
        run_rollouts(GRID, _BuggyScientist, concurrency=3, out=out)
    assert _bytes(out).endswith(b"\n") or _bytes(out) == b""
    assert all(EpisodeLog.model_validate_json(line) for line in _bytes(out).splitlines())


# --------------------------------------------------------------------------- groups


def test_a_group_plays_one_scenario_with_seeds_of_its_own(
    stub: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub.script = sampled_script
    generated: list[ScenarioKey] = []

    def counted(cell: ScenarioKey) -> NormalizedScenarioPack:
        generated.append(cell)
        return generate_pack(cell)

    monkeypatch.setattr(workers, "generate_pack", counted)
    result = run_rollouts(GRID, chat(stub), concurrency=16, group_size=4, out=tmp_path / "run.jsonl")
    assert generated == GRID.cells()  # once a group, shared by its rollouts
    logs = result.logs
    assert len(logs) == 4 * len(GRID.cells())
    for position, cell in enumerate(GRID.cells()):
        group = logs[4 * position : 4 * position + 4]
        group_id = cell.episode_id("llm", "grounded")
        assert [log.episode_id for log in group] == [f"{group_id}/{k}" for k in range(4)]
        assert {log.group_id for log in group} == {group_id}
        assert {log.scenario_id for log in group} == {group[0].scenario_id}
        returns = [log.total_rewards["scientist"] for log in group]
        assert [log.advantage for log in group] == pytest.approx(group_advantages(returns))
    assert len({log.total_rewards["scientist"] for log in logs}) > 1  # the seeds sampled differently
    seeds = {request["seed"] for request in stub.requests}
    assert len(seeds) == len(stub.requests)  # every call samples with a seed of its own


def test_a_role_builds_the_system_prompt_of_the_scenario_before_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = (generate_pack(cell) for cell in GRID.cells()[:2])
    built: list[NormalizedScenarioPack] = []

    def build(scenario: NormalizedScenarioPack) -> str:
        built.append(scenario)
        return f"prompt of {scenario.scenario_id}"

    monkeypatch.setattr(roles, "build_scientist_system_prompt", build)
    role = ScientistRole()
    asked = [first, first, second, first]
    assert [role.system_prompt(pack) for pack in asked] == [f"prompt of {p.scenario_id}" for p in asked]
    assert built == [first, second, first]  # the latest scenario only: a group's rollouts follow each other


def test_rollout_seeds_are_stable_and_distinct() -> None:
    cell = GRID.cells()[0]
    assert rollout_seed(cell, None) == policy_seed(cell) == policy_seed.__wrapped__(cell)  # cached as drawn
    seeds = [rollout_seed(cell, k) for k in range(8)]
    assert len(set(seeds)) == 8 and seeds == [rollout_seed(cell, k) for k in range(8)]
    assert rollout_seed(GRID.cells()[1], 0) not in seeds


def test_group_advantages() -> None:
    assert group_advantages([1.0, 3.0]) == pytest.approx([-1 / math.sqrt(2), 1 / math.sqrt(2)])
    assert group_advantages([2.0, 2.0, 2.0]) == [0.0, 0.0, 0.0]
    assert group_advantages([2.0, 2.0 + 1e-10]) == [0.0, 0.0]
    assert group_advantages([5.0]) == [0.0]


@given(st.lists(st.floats(-100, 100), min_size=2, max_size=16))
def test_advantages_are_centred_and_scaled_unless_flat(returns: list[float]) -> None:
    advantages = group_advantages(returns)
    assert len(advantages) == len(returns)
    if all(a == 0.0 for a in advantages):
        return
    assert math.fsum(advantages) == pytest.approx(0.0, abs=1e-6)
    mean = math.fsum(advantages) / len(advantages)
    variance = math.fsum((a - mean) ** 2 for a in advantages) / (len(advantages) - 1)
    assert variance == pytest.approx(1.0, rel=1e-6)


def test_logs_outside_groups_keep_their_bytes(tmp_path: Path) -> None:
    (log,) = run_grid(Grid.of(["ml_benchmark"], ["easy"], 1), RandomScientist).logs
    assert (
        b"group_id" not in log.model_dump_json().encode()
        and b"advantage" not in log.model_dump_json().encode()
    )
    grouped = log.model_copy(update={"group_id": "g", "advantage": -0.5})
    assert EpisodeLog.model_validate_json(grouped.model_dump_json()) == grouped


# --------------------------------------------------------------------------- resume


@pytest.fixture
def clean(stub: StubServer, tmp_path: Path) -> tuple[bytes, bytes]:
    stub.script = sampled_script
    run_rollouts(
        GRID,
        chat(stub),
        group_size=3,
        concurrency=8,
        out=tmp_path / "clean.jsonl",
        export_turns=tmp_path / "clean.turns.jsonl",
    )
    return _bytes(tmp_path / "clean.jsonl"), _bytes(tmp_path / "clean.turns.jsonl")


class _Killed(Exception):
    pass


@pytest.mark.parametrize("after", [1, 4, 13])
def test_a_run_killed_mid_group_resumes_to_the_clean_files(
    stub: StubServer, tmp_path: Path, clean: tuple[bytes, bytes], after: int
) -> None:
    out, turns = tmp_path / "run.jsonl", tmp_path / "run.turns.jsonl"
    seen: list[EpisodeDigest] = []

    def kill(digest: EpisodeDigest) -> None:
        seen.append(digest)
        if len(seen) == after:
            raise _Killed

    with pytest.raises(_Killed):
        run_rollouts(
            GRID, chat(stub), group_size=3, concurrency=8, out=out, export_turns=turns, on_episode=kill
        )
    assert _bytes(out).count(b"\n") == after  # a partial group, which resume plays again
    result = run_rollouts(
        GRID, chat(stub), group_size=3, concurrency=8, out=out, export_turns=turns, resume=True
    )
    assert result.resumed == after - after % 3
    assert (_bytes(out), _bytes(turns)) == clean
    usage = [json.loads(line)["episode_id"] for line in usage_path(out).read_text().splitlines()]
    assert usage == [json.loads(line)["episode_id"] for line in clean[0].splitlines()]


@pytest.mark.parametrize(("jobs", "concurrency"), [(2, 1), (2, 5), (3, 16)])
def test_worker_processes_write_the_bytes_of_one_process(
    stub: StubServer, tmp_path: Path, clean: tuple[bytes, bytes], jobs: int, concurrency: int
) -> None:
    out, turns = tmp_path / "workers.jsonl", tmp_path / "workers.turns.jsonl"
    seen: list[EpisodeDigest] = []
    result = run_rollouts(
        GRID,
        chat(stub),
        group_size=3,
        concurrency=concurrency,
        jobs=jobs,
        out=out,
        export_turns=turns,
        on_episode=seen.append,
    )
    assert (_bytes(out), _bytes(turns)) == clean
    assert [d.episode_id for d in seen] == [json.loads(line)["episode_id"] for line in clean[0].splitlines()]
    assert 2 * result.stats["llm_calls"] == len(stub.requests)  # the clean run's calls, once each
    usage = [json.loads(line)["episode_id"] for line in usage_path(out).read_text().splitlines()]
    assert usage == [d.episode_id for d in seen]


def test_a_run_of_worker_processes_killed_midway_resumes_to_the_clean_files(
    stub: StubServer, tmp_path: Path, clean: tuple[bytes, bytes]
) -> None:
    out, turns = tmp_path / "run.jsonl", tmp_path / "run.turns.jsonl"
    seen: list[EpisodeDigest] = []

    def kill(digest: EpisodeDigest) -> None:
        seen.append(digest)
        if len(seen) == 7:
            raise _Killed

    arguments: dict[str, Any] = {
        "group_size": 3,
        "concurrency": 4,
        "jobs": 2,
        "out": out,
        "export_turns": turns,
    }
    with pytest.raises(_Killed):
        run_rollouts(GRID, chat(stub), on_episode=kill, **arguments)
    assert _bytes(out).count(b"\n") == 7
    result = run_rollouts(GRID, chat(stub), resume=True, **arguments)
    assert result.resumed == 6
    assert (_bytes(out), _bytes(turns)) == clean


def test_resume_after_a_cut_mid_line(stub: StubServer, tmp_path: Path, clean: tuple[bytes, bytes]) -> None:
    out = tmp_path / "run.jsonl"
    out.write_bytes(clean[0][: len(clean[0]) // 2])
    run_rollouts(GRID, chat(stub), group_size=3, concurrency=4, out=out, resume=True)
    assert _bytes(out) == clean[0]


def test_bad_arguments_are_named(stub: StubServer) -> None:
    for name, value in (("concurrency", 0), ("group_size", -1), ("concurrency", True), ("jobs", 0)):
        with pytest.raises(ValueError, match=name):
            run_rollouts(GRID, RandomScientist, **{name: value})
    with pytest.raises(ValueError, match="resume"):
        run_rollouts(GRID, RandomScientist, resume=True)
    with pytest.raises(ValueError, match="prompt_chars"):
        chat(stub, prompt_chars=100)()


# --------------------------------------------------------------------------- the prompt budget


def test_the_prompt_budget_bounds_every_user_message(stub: StubServer) -> None:
    stub.script = flaky_script
    run_rollouts(Grid.of(["ml_benchmark"], ["hard"], 2), chat(stub, prompt_chars=2_000), concurrency=2)
    prompts = [r["messages"][1]["content"] for r in stub.requests]
    assert max(map(len, prompts)) <= 2_000 < max(len(r["messages"][0]["content"]) for r in stub.requests)
    assert all(
        p.endswith("Respond with exactly one JSON object (a ScientistAction) and nothing else.")
        for p in prompts
    )
    assert any("cut to fit the prompt" in p for p in prompts)
    assert chat(stub)().prompt_chars == MAX_PROMPT_CHARS
