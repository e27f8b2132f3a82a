"""The runner: deterministic grid runs, parallel = serial byte for byte, resume after a kill,
the oracle as an upper bound, the LLM Scientist through its retry loop, and the metrics."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from replicalab.baselines.evaluation.metrics import (
    EpisodeDigest,
    Estimate,
    digest,
    mean_components,
    summarize,
    t_critical,
)
from replicalab.baselines.evaluation.runner import (
    Grid,
    Settings,
    play_episode,
    policy_seed,
    run_grid,
)
from replicalab.baselines.policies.interface import Policy
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.seats import (
    BaselineScientist,
    GroundedLabManager,
    LLMScientist,
    RandomScientist,
)
from replicalab.models import EpisodeLog
from replicalab.rewards import get_preset
from replicalab.scenarios import ScenarioKey
from tests.scripted_models import LLM, SMALL, flaky_model

# --------------------------------------------------------------------------- a scripted model


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


# --------------------------------------------------------------------------- grid and seeds


def test_grid_order_and_validation() -> None:
    grid = Grid.of(["ml_benchmark"], ["hard", "easy"], [3, 1])
    assert grid.cells() == [
        ScenarioKey("ml_benchmark", "train", "hard", 3),
        ScenarioKey("ml_benchmark", "train", "hard", 1),
        ScenarioKey("ml_benchmark", "train", "easy", 3),
        ScenarioKey("ml_benchmark", "train", "easy", 1),
    ]
    assert len(Grid.of(seeds=2).cells()) == 3 * 3 * 2
    with pytest.raises(ValueError, match="unknown template 'nope'"):
        Grid.of(["nope"])
    with pytest.raises(ValueError, match="difficulty"):
        Grid.of(None, ["brutal"])
    with pytest.raises(ValueError, match="seed"):
        Grid.of(seeds=[-1])


def test_policy_seed_is_stable_and_distinct() -> None:
    cells = Grid.of(seeds=20).cells()
    seeds = [policy_seed(cell) for cell in cells]
    assert len(set(seeds)) == len(seeds)
    assert seeds == [policy_seed(cell) for cell in cells]
    # A random policy replays its episode exactly from the derived seed.
    cell = ScenarioKey("math_reasoning", "train", "hard", 5)
    first = play_episode(cell, RandomScientist(), GroundedLabManager())
    again = play_episode(cell, RandomScientist(seed=123), GroundedLabManager())
    assert first.model_dump_json() == again.model_dump_json()
    assert first.episode_id == cell.episode_id("random", "grounded")
    assert first.episode_id == "math_reasoning-train-hard-5/random/grounded"


# --------------------------------------------------------------------------- files


def test_parallel_run_writes_the_same_bytes(tmp_path: Path) -> None:
    serial, parallel = tmp_path / "serial.jsonl", tmp_path / "parallel.jsonl"
    one = run_grid(SMALL, RandomScientist, jobs=1, out=serial)
    two = run_grid(SMALL, RandomScientist, jobs=2, out=parallel)
    assert serial.read_bytes() == parallel.read_bytes()
    assert one.logs == two.logs
    ids = [json.loads(line)["episode_id"] for line in _lines(serial)]
    assert ids == [cell.episode_id("random", "grounded") for cell in SMALL.cells()]
    assert all(line.endswith(b"\n") for line in _lines(serial))


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("clean") / "run.jsonl"
    run_grid(SMALL, RandomScientist, out=path)
    return path.read_bytes()


@pytest.mark.parametrize("cut", [0.0, 0.37, 0.5, 0.99])
def test_resume_after_a_cut_mid_line_gives_the_clean_bytes(
    tmp_path: Path, clean_run: bytes, cut: float
) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(clean_run[: int(len(clean_run) * cut)])
    kept = path.read_bytes().count(b"\n")
    result = run_grid(SMALL, RandomScientist, out=path, resume=True, jobs=2 if cut == 0.5 else 1)
    assert path.read_bytes() == clean_run
    assert result.resumed == kept
    assert len(result.logs) == len(SMALL.cells())


class _Killed(Exception):
    pass


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_run_killed_midway_leaves_whole_lines_and_resumes(
    tmp_path: Path, clean_run: bytes, jobs: int
) -> None:
    path = tmp_path / "run.jsonl"
    seen: list[EpisodeDigest] = []

    def kill_after_seven(episode: EpisodeDigest) -> None:
        seen.append(episode)
        if len(seen) == 7:
            raise _Killed

    with pytest.raises(_Killed):
        run_grid(SMALL, RandomScientist, out=path, jobs=jobs, on_episode=kill_after_seven)
    data = path.read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == 7
    assert clean_run.startswith(data)
    run_grid(SMALL, RandomScientist, out=path, resume=True, jobs=jobs)
    assert path.read_bytes() == clean_run


def test_resume_of_a_finished_file_changes_nothing(tmp_path: Path, clean_run: bytes) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(clean_run)
    result = run_grid(SMALL, RandomScientist, out=path, resume=True)
    assert result.resumed == len(SMALL.cells()) and path.read_bytes() == clean_run


def test_resume_refuses_a_file_of_another_run(tmp_path: Path, clean_run: bytes) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(clean_run[: clean_run.index(b"\n") + 1])
    with pytest.raises(ValueError, match="not the next one of this grid"):
        run_grid(SMALL, BaselineScientist, out=path, resume=True)
    with pytest.raises(ValueError, match="reward config 'default'"):
        run_grid(
            SMALL,
            RandomScientist,
            out=path,
            resume=True,
            settings=Settings(reward_config=get_preset("sparse")),
        )
    path.write_bytes(b"{not json}\n")
    with pytest.raises(ValueError, match=r"run.jsonl:1: not an EpisodeLog line"):
        run_grid(SMALL, RandomScientist, out=path, resume=True)
    assert path.read_bytes() == b"{not json}\n"  # refused files are left alone
    with pytest.raises(ValueError, match="needs an output file"):
        run_grid(SMALL, RandomScientist, resume=True)


@pytest.mark.skipif(sys.platform == "win32", reason="flock is POSIX")
def test_two_runs_cannot_write_one_file(tmp_path: Path) -> None:
    import fcntl

    path = tmp_path / "run.jsonl"
    path.write_bytes(b"")
    with path.open("a+b") as other:
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        with pytest.raises(ValueError, match="another run is writing to this file"):
            run_grid(SMALL, RandomScientist, out=path)
    run_grid(SMALL, RandomScientist, out=path)
    assert path.read_bytes().count(b"\n") == len(SMALL.cells())


# --------------------------------------------------------------------------- policies


POLICIES = {"baseline": BaselineScientist, "random": RandomScientist, "llm": LLM}
FULL = Grid.of(seeds=20)  # 3 templates × 3 difficulties × 20 seeds


@pytest.fixture(scope="module")
def full_runs() -> dict[str, list[EpisodeLog]]:
    runs = {name: run_grid(FULL, factory).logs for name, factory in POLICIES.items()}
    runs["oracle"] = run_grid(FULL, OracleScientist).logs
    return runs


def test_oracle_scores_at_least_every_policy_on_every_seed(full_runs: dict[str, list[EpisodeLog]]) -> None:
    oracle = full_runs["oracle"]
    assert all(log.verdict == "agreement" for log in oracle)
    for name in POLICIES:
        for mine, best in zip(full_runs[name], oracle, strict=True):
            assert (mine.template, mine.difficulty, mine.seed) == (best.template, best.difficulty, best.seed)
            assert digest(best).score >= digest(mine).score - 1e-9, (name, mine.episode_id)
        overall = summarize(full_runs[name], oracle)[-1]
        assert overall.regret is not None and overall.regret > 0
        assert overall.normalised is not None and 0 <= overall.normalised < 1
    assert summarize(oracle, oracle)[-1].regret == 0.0


def test_oracle_accepts_only_with_consent(full_runs: dict[str, list[EpisodeLog]]) -> None:
    for log in full_runs["oracle"][:40]:
        kinds = [step.action_type for step in log.steps]
        assert kinds == ["propose_protocol", "accept", "accept"]
        assert log.reward_breakdown is not None and log.reward_breakdown.feasibility == 1.0


def test_llm_scientist_survives_malformed_output_and_counts_retries() -> None:
    grid = Grid.of(["math_reasoning"], None, 5)
    result = run_grid(grid, LLM)
    n = len(grid.cells())
    # Per episode: round 1 = 2 calls (1 retry), round 2 = 3 calls, all failed, round 3 = 2 calls.
    assert result.stats == {
        "llm_calls": 7 * n,
        "llm_corrections": 4 * n,
        "llm_parse_failures": n,
        "llm_generate_errors": 0,
    }
    for log in result.logs:
        assert log.verdict is not None and log.rounds_used == 3
        refused = [step for step in log.steps if step.error_code is not None]
        assert [(s.agent, s.round_number, s.error_code) for s in refused] == [("scientist", 2, "no_json")]
        assert refused[0].action == "I would rather describe the plan in words."
        assert log.invalid_action_count == 1
    assert result.stats == run_grid(grid, LLM, jobs=2).stats


def test_llm_scientist_records_the_parsed_moves() -> None:
    scientist = LLMScientist(flaky_model, max_retries=0)
    log = play_episode(ScenarioKey("finance_trading", "train", "easy", 2), scientist, GroundedLabManager())
    # Without retries every first attempt in rounds 1 and 3 fails too.
    assert [s.error_code for s in log.steps if s.agent == "scientist"][:3] == [
        "invalid_json",
        "no_json",
        "invalid_json",
    ]
    assert scientist.stats()["llm_parse_failures"] >= 3
    with pytest.raises(ValueError, match="max_retries"):
        LLMScientist(flaky_model, max_retries=-1)


def test_every_policy_satisfies_the_protocol() -> None:
    for factory in (*POLICIES.values(), OracleScientist, GroundedLabManager):
        policy = factory()
        assert isinstance(policy, Policy) and policy.name


def test_random_scientist_moves_are_legal() -> None:
    logs = run_grid(Grid.of(seeds=10), RandomScientist).logs
    assert all(log.invalid_action_count == 0 for log in logs)
    kinds = {step.action_type for log in logs for step in log.steps if step.agent == "scientist"}
    assert kinds == {"propose_protocol", "revise_protocol", "request_info", "accept"}


# --------------------------------------------------------------------------- metrics


def test_t_critical_matches_known_quantiles() -> None:
    known = {1: 12.7062, 2: 4.3027, 5: 2.5706, 10: 2.2281, 30: 2.0423, 120: 1.9799, 1000: 1.9623}
    for df, value in known.items():
        assert t_critical(df) == pytest.approx(value, abs=2e-4)
    with pytest.raises(ValueError):
        t_critical(0)


def test_estimate() -> None:
    est = Estimate.of([1.0, 2.0, 3.0, 4.0])
    assert est.mean == 2.5
    assert est.half_width == pytest.approx(t_critical(3) * math.sqrt(5 / 3 / 4))
    assert math.isnan(Estimate.of([7.0]).half_width) and Estimate.of([7.0]).mean == 7.0
    assert math.isnan(Estimate.of([]).mean)


def test_summaries_and_components(full_runs: dict[str, list[EpisodeLog]]) -> None:
    logs = full_runs["random"]
    rows = summarize(logs, full_runs["oracle"])
    assert [row.label for row in rows[:3]] == [
        "math_reasoning/easy",
        "math_reasoning/medium",
        "math_reasoning/hard",
    ]
    assert rows[-1].label == "overall" and rows[-1].episodes == len(logs) == 180
    assert sum(row.episodes for row in rows[:-1]) == 180
    overall = rows[-1]
    assert overall.agreement_rate == pytest.approx(sum(log.verdict == "agreement" for log in logs) / 180)
    assert overall.score.mean == pytest.approx(sum(digest(log).score for log in logs) / 180)
    components = mean_components(logs)
    assert sum(components.values()) == pytest.approx(overall.returns.mean)
    assert "no_agreement" in components  # round-limit endings pay on the Lab Manager's turn
    assert sum(mean_components(full_runs["oracle"]).values()) == pytest.approx(
        sum(digest(log).scientist_return for log in full_runs["oracle"]) / 180
    )
    llm = summarize(full_runs["llm"])[-1]
    assert llm.invalid_rate > 0 and llm.regret is None
    with pytest.raises(ValueError, match="no oracle episode"):
        summarize(logs, full_runs["oracle"][:10])
