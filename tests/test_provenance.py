"""Every log a run writes says what produced it: the installed version, the game and its version,
both seats, the split, families, levels, reward, reading mode and seeds; a resume refuses a file
another version or grid wrote, and a log without the record (an env's, an older version's) still
reads."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
from pydantic import ValidationError

from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.policies.seats import LLMScientist, RandomScientist
from replicalab.models import EpisodeLog, Provenance, seed_ranges
from replicalab.models.provenance import GAME_VERSION
from replicalab.rewards import get_preset

GRID = Grid.of(["ml_benchmark"], ["easy", "hard"], [3, 4, 5, 9])


def test_every_log_of_a_run_carries_the_runs_provenance(tmp_path: Path) -> None:
    out = tmp_path / "random.jsonl"
    settings = Settings(reward_config=get_preset("potential"), split="validation")
    result = run_grid(GRID, RandomScientist, settings=settings, out=out)
    logs = [EpisodeLog.model_validate_json(line) for line in out.read_bytes().splitlines()]
    assert {log.provenance for log in logs} == {result.provenance}
    assert result.provenance == Provenance(
        package_version=importlib.metadata.version("replicalab"),
        env_id="replicalab_v3",
        policy="random",
        lab_manager="grounded",
        split="validation",
        templates=("ml_benchmark",),
        difficulties=("easy", "hard"),
        reward_preset="potential",
        reading="text",
        seeds="3-5,9",
    )
    assert result.provenance.game_version == GAME_VERSION


def model_answering_prose(messages: list[dict[str, str]]) -> str:
    return "I would rather think it over."


def test_a_language_model_seat_names_its_model() -> None:
    result = run_grid(Grid.of(["ml_benchmark"], ["easy"], 1), lambda: LLMScientist(model_answering_prose))
    assert result.provenance is not None and result.provenance.policy == "llm"
    assert result.provenance.model == f"{__name__}:model_answering_prose"


def test_a_resume_refuses_a_file_another_version_wrote(tmp_path: Path) -> None:
    out = tmp_path / "random.jsonl"
    run_grid(GRID, RandomScientist, out=out)
    older = [
        log.model_copy(update={"provenance": log.provenance.model_copy(update={"package_version": "0.2.0"})})
        for log in map(EpisodeLog.model_validate_json, out.read_bytes().splitlines()[:3])
        if log.provenance is not None
    ]
    out.write_text("".join(log.model_dump_json() + "\n" for log in older), encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"random.jsonl:1: written by random vs grounded .* replicalab 0\.2\.0"
    ):
        run_grid(GRID, RandomScientist, out=out, resume=True)
    assert len(out.read_bytes().splitlines()) == 3  # nothing touched


def test_a_log_without_provenance_reads_and_writes_as_before(tmp_path: Path) -> None:
    result = run_grid(Grid.of(["ml_benchmark"], ["easy"], 1), RandomScientist)
    bare = result.logs[0].model_copy(update={"provenance": None})
    assert '"provenance"' not in bare.model_dump_json()
    assert EpisodeLog.model_validate_json(bare.model_dump_json()) == bare


@pytest.mark.parametrize(
    ("seeds", "written"),
    [([0], "0"), (range(20), "0-19"), ([9, 3, 4, 5, 4], "3-5,9"), ([1, 3, 5], "1,3,5")],
)
def test_seeds_are_written_as_ascending_ranges(seeds: list[int], written: str) -> None:
    assert seed_ranges(seeds) == written


@pytest.mark.parametrize("seeds", ["", "1-", "a", "0-3,", "all"])
def test_a_seed_record_that_is_not_ranges_is_refused_by_name(seeds: str) -> None:
    with pytest.raises(ValidationError, match="seeds"):
        Provenance(policy="p", split="test", templates=(), difficulties=(), reward_preset="r", seeds=seeds)


def test_the_game_id_is_the_envs_version() -> None:
    from replicalab.envs import SCIENTIST_ENV_ID, replicalab_v3
    from replicalab.models.provenance import GAME_ID, GAME_VERSION

    assert replicalab_v3.raw_env.metadata["name"] == GAME_ID
    assert f"ReplicaLab/Scientist-v{GAME_VERSION}" == SCIENTIST_ENV_ID
