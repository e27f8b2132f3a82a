"""Episode digests: what a worker sends instead of a log, and the table made from them.

A parallel run must hand back the same digests and (when asked) the same logs as a serial run,
and a table made from digests must be the one made from logs, to the last bit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replicalab.baselines.evaluation.metrics import summarize
from replicalab.baselines.evaluation.runner import Grid, RunResult, run_grid
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.seats import RandomScientist
from replicalab.digest import EpisodeDigest, Judged, digest
from replicalab.models import EpisodeLog

GRID = Grid.of(seeds=6)  # 54 episodes; the random Scientist ends them every way it can


@pytest.fixture(scope="module")
def serial() -> RunResult:
    return run_grid(GRID, RandomScientist, jobs=1)


@pytest.fixture(scope="module")
def oracle() -> RunResult:
    return run_grid(GRID, OracleScientist, jobs=2)


def test_digest_holds_the_tables_numbers(serial: RunResult) -> None:
    verdicts = set()
    for log in serial.logs:
        made = digest(log)
        verdicts.add((log.verdict, log.reward_breakdown is not None))
        assert (made.episode_id, made.template, made.difficulty, made.seed) == (
            log.episode_id,
            log.template,
            log.difficulty,
            log.seed,
        )
        assert made.verdict == log.verdict
        assert made.scientist_return == log.total_rewards["scientist"]
        assert (made.rounds_used, made.invalid_action_count, made.steps) == (
            log.rounds_used,
            log.invalid_action_count,
            len(log.steps),
        )
        judged = log.reward_breakdown
        if log.verdict == "agreement" and judged is not None:
            assert made.score == judged.total
            assert made.agreed == Judged(judged.rigor, judged.feasibility, judged.fidelity)
        else:  # an accept over the Lab Manager's objection is judged but not agreed
            assert made.score == 0.0 and made.agreed is None
    assert ("accept_without_consent", True) in verdicts and ("agreement", True) in verdicts
    assert ("round_limit", False) in verdicts


def test_parallel_digests_and_logs_equal_the_serial_ones(serial: RunResult) -> None:
    parallel = run_grid(GRID, RandomScientist, jobs=2)
    assert parallel.digests == serial.digests == [digest(log) for log in serial.logs]
    assert all(isinstance(d, EpisodeDigest) for d in parallel.digests)
    assert parallel.logs == serial.logs
    assert parallel.logs is parallel.logs  # built once


def test_a_parallel_run_parses_no_log_until_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str | bytes] = []
    parse = EpisodeLog.model_validate_json

    def counting(data: str | bytes) -> EpisodeLog:
        parsed.append(data)
        return parse(data)

    monkeypatch.setattr(EpisodeLog, "model_validate_json", counting)
    grid = Grid.of(["ml_benchmark"], None, 3)
    result = run_grid(grid, RandomScientist, jobs=2)
    summarize(result.digests)
    assert parsed == []
    assert [log.episode_id for log in result.logs] == [d.episode_id for d in result.digests]
    assert len(parsed) == len(grid.cells())


def test_summaries_of_digests_equal_those_of_logs(serial: RunResult, oracle: RunResult) -> None:
    # repr: every float to the last bit, and NaN (no agreed protocol, one episode) equal to NaN
    assert repr(summarize(serial.digests)) == repr(summarize(serial.logs))
    from_digests = summarize(serial.digests, oracle.digests)
    assert repr(from_digests) == repr(summarize(serial.logs, oracle.logs))
    assert repr(from_digests) == repr(summarize(serial.logs, oracle.digests))
    assert from_digests[-1].regret is not None and from_digests[-1].regret > 0


def test_resumed_episodes_come_back_as_digests_and_logs(tmp_path: Path, serial: RunResult) -> None:
    path = tmp_path / "run.jsonl"
    run_grid(GRID, RandomScientist, out=path)
    clean = path.read_bytes()
    path.write_bytes(clean[: clean.index(b"\n", len(clean) // 3) + 1])
    seen: list[EpisodeDigest] = []
    result = run_grid(GRID, RandomScientist, out=path, resume=True, jobs=2, on_episode=seen.append)
    assert path.read_bytes() == clean
    assert 0 < result.resumed < len(GRID.cells())
    assert seen == result.digests == serial.digests
    assert result.logs == serial.logs
