"""A new scenario family is one JSON file: registered from a file, it works in every front (AEC,
parallel, Gymnasium, the runner, the CLI) with no code change, and gets its own observation
column."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, parallel_api_test
from typer.testing import CliRunner

from replicalab.baselines.cli import app
from replicalab.baselines.evaluation.runner import Grid, run_grid
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.seats import BaselineScientist, RandomScientist
from replicalab.envs import replicalab_v3
from replicalab.envs.features import feature_names
from replicalab.envs.scientist_v3 import ScientistEnv
from replicalab.models import DEFAULT_SAMPLE_UNIT
from replicalab.scenarios import generate_scenario, registry

NAME = "clinical_statistics"


def _fourth_family(path: Path) -> Path:
    """A copy of a built-in family under a new name, domain and case ids/titles."""
    data = json.loads(
        (resources.files("replicalab.scenarios") / "data" / "ml_benchmark.json").read_text("utf-8")
    )
    data["template"] = NAME
    data["domain_id"] = "clinical_statistics"
    data["baseline_plan"]["hints"] = ["trial", "cohort", "placebo"]
    data["baseline_plan"]["priority"] = 3
    del data["sample_unit"]  # a family may leave it out
    for case in data["cases"]:
        case["case_id"] = "clin_" + case["case_id"]
        case["title"] = "Re-analysis: " + case["title"]
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def family_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = _fourth_family(tmp_path_factory.mktemp("family") / f"{NAME}.json")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "_registry", dict(registry._registry))
        registry.register_template_file(path)
        yield path


def test_a_family_without_a_sample_unit_counts_samples(family_file: Path) -> None:
    pack = generate_scenario(0, NAME, "medium", "train")
    assert pack.paper.sample_unit == DEFAULT_SAMPLE_UNIT
    n = pack.paper.reported_sample_size
    assert (
        f"The sample size is {n} samples; one sample is an independent repetition" in pack.paper.key_finding
    )
    assert pack.scientist_observation.paper.sample_unit == DEFAULT_SAMPLE_UNIT


def test_the_aec_and_parallel_envs_pass_the_api_tests(family_file: Path) -> None:
    api_test(replicalab_v3.env(templates=[NAME]), num_cycles=30)
    parallel_api_test(replicalab_v3.parallel_env(templates=[NAME]), num_cycles=30)


def test_the_gymnasium_env_passes_check_env(family_file: Path) -> None:
    check_env(ScientistEnv(templates=[NAME]), skip_render_check=True)
    env = gym.make("replicalab.envs:ReplicaLab/Scientist-v3", templates=[NAME])
    observation, _ = env.reset(seed=0)
    assert env.observation_space.contains(observation)


def test_its_one_hot_column_is_its_own(family_file: Path) -> None:
    names = feature_names("scientist")
    assert f"template={NAME}" in names
    env = replicalab_v3.env(templates=[NAME])
    env.reset(seed=3)
    features = env.observe("scientist")["observation"]
    template_columns = [i for i, n in enumerate(names) if n.startswith("template=")]
    hot = [names[i] for i in template_columns if features[i] == 1.0]
    assert hot == [f"template={NAME}"]
    difficulty = [n for n, v in zip(names, features, strict=True) if n.startswith("difficulty=") and v == 1.0]
    assert len(difficulty) == 1  # its column did not spill into the difficulty slots
    assert np.all((features >= 0) & (features <= 1))


@pytest.mark.parametrize("scientist", [BaselineScientist, RandomScientist, OracleScientist])
def test_the_runner_plays_it(family_file: Path, scientist: type) -> None:
    result = run_grid(Grid.of([NAME], seeds=3), scientist)
    assert {log.template for log in result.logs} == {NAME}
    assert all(log.verdict is not None for log in result.logs)
    if scientist is OracleScientist:
        assert all(log.verdict == "agreement" for log in result.logs)


def test_the_baseline_proposes_the_familys_own_plan(family_file: Path) -> None:
    (log,) = run_grid(Grid.of([NAME], ["easy"], seeds=1), BaselineScientist).logs
    proposal = log.steps[0].action
    assert isinstance(proposal, dict)
    data = json.loads(family_file.read_text(encoding="utf-8"))
    assert proposal["technique"] == data["baseline_plan"]["technique"]


def test_the_cli_evaluates_it_from_the_file(family_file: Path) -> None:
    result = CliRunner().invoke(
        app, ["evaluate", "--template-file", str(family_file), "-t", NAME, "--seeds", "2", "--no-oracle"]
    )
    assert result.exit_code == 0, result.output
    assert NAME in result.output
