"""The judge's score is the benchmark's metric: no reward config moves it (a config prices only
the return), and every log records the whole config it was played with."""

from __future__ import annotations

from pathlib import Path

import pytest

from replicalab.baselines.evaluation.runner import Grid, Settings, play_episode, run_grid
from replicalab.baselines.policies.probes import PublicReaderScientist
from replicalab.baselines.policies.seats import BaselineScientist, GroundedLabManager
from replicalab.baselines.training.compare_rewards import compare_rewards
from replicalab.judge import compute_total_reward
from replicalab.judge.bonuses import saved_rounds
from replicalab.models import EpisodeLog, JudgeExponents, Penalties, RewardConfig
from replicalab.moves import SCIENTIST
from replicalab.rewards import get_preset
from replicalab.scenarios import ScenarioKey
from tests.plans import COMBOS

CUSTOM = RewardConfig(
    name="default",  # a custom config may share a preset's name: the log tells them apart
    judge_scale=0.5,
    judge_exponents=JudgeExponents(rigor=2.0, parsimony=0.5),
    all_checks_bonus=3.0,
    efficiency_bonus=0.1,
    penalties=Penalties(no_agreement=1.0),
)


def _cells() -> list[ScenarioKey]:
    return [ScenarioKey(t, "train", d, seed) for t, d in COMBOS for seed in (0, 1)]


def test_the_judges_score_is_the_same_under_every_reward_config() -> None:
    configs = [get_preset("sparse"), get_preset("default"), get_preset("potential"), CUSTOM]
    agreed = 0
    for cell in _cells():
        logs = [
            play_episode(cell, PublicReaderScientist(), GroundedLabManager(), Settings(reward_config=c))
            for c in configs
        ]
        assert len({log.verdict for log in logs}) == 1  # the same game under every config
        assert len({log.model_dump_json(include={"reward_breakdown"}) for log in logs}) == 1
        if logs[0].verdict != "agreement":
            continue
        agreed += 1
        default = logs[1]
        b = default.reward_breakdown
        assert b is not None and b.total == compute_total_reward(b)
        saved = saved_rounds(default.rounds_used)
        judge = [log.steps[-1].reward_components[SCIENTIST]["judge"] for log in logs]
        assert judge[1] == judge[2] == pytest.approx(b.total, abs=1e-12)  # priced as the judge does
        # sparse: no efficiency bonus; every bonus in proportion to the base the config pays
        assert judge[0] == pytest.approx(b.total - 0.25 * saved * b.base / 10, abs=1e-12)
        base = 10 * b.rigor**2 * b.feasibility * b.fidelity * b.parsimony**0.5
        assert judge[3] == pytest.approx(0.5 * base * (1 + (3.0 + 0.1 * saved) / 10), abs=1e-12)
    assert agreed >= 10


def test_compare_rewards_reports_one_score_per_policy() -> None:
    grid = Grid.of(["ml_benchmark"], None, 2)
    rows = compare_rewards(
        grid, {"reader": PublicReaderScientist}, [get_preset("sparse"), get_preset("default")]
    )
    assert rows[0].score == rows[1].score > 0
    assert rows[0].returns.mean != rows[1].returns.mean


# --------------------------------------------------------------------------- the log records the config


def test_a_log_records_the_whole_reward_config() -> None:
    cell = ScenarioKey("finance_trading", "train", "easy", 3)
    log = play_episode(cell, BaselineScientist(), GroundedLabManager(), Settings(reward_config=CUSTOM))
    assert log.reward_config == CUSTOM
    again = EpisodeLog.model_validate_json(log.model_dump_json())
    assert again.reward_config == CUSTOM and again.reward_config != get_preset("default")


def test_resume_refuses_a_file_written_under_another_config_of_the_same_name(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    grid = Grid.of(["ml_benchmark"], ["easy"], 3)
    run_grid(grid, BaselineScientist, settings=Settings(reward_config=CUSTOM), out=out)
    with pytest.raises(ValueError, match=r"run\.jsonl:1: written with reward config 'default' \(.*0\.5"):
        run_grid(grid, BaselineScientist, out=out, resume=True)  # the default preset
    resumed = run_grid(grid, BaselineScientist, settings=Settings(reward_config=CUSTOM), out=out, resume=True)
    assert resumed.resumed == 3
