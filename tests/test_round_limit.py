"""The round limit: values that cannot produce an agreement are refused wherever they are given."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from replicalab.baselines.cli import app
from replicalab.baselines.evaluation.runner import Settings, play_episode
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.seats import GroundedLabManager
from replicalab.envs.session import Session
from replicalab.episode import Episode
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, ScenarioKey
from tests.plans import PACK


def test_a_round_limit_that_allows_no_agreement_is_refused() -> None:
    for make in (
        lambda: Episode(PACK, max_rounds=1),
        lambda: Session(max_rounds=1),
        lambda: Settings(max_rounds=1),
    ):
        with pytest.raises(ValueError, match=r"max_rounds: must be at least 2"):
            make()
    with pytest.raises(TypeError, match="max_rounds"):
        Episode(PACK, max_rounds=2.0)  # type: ignore[arg-type]
    result = CliRunner().invoke(app, ["evaluate", "--max-rounds", "1", "--seeds", "1"])
    assert result.exit_code == 2 and "max-rounds" in result.output


def test_two_rounds_are_enough_for_an_agreement() -> None:
    settings = Settings(max_rounds=2)
    agreed = [
        play_episode(ScenarioKey(t, "train", d, 0), OracleScientist(), GroundedLabManager(), settings).verdict
        for t in BUILTIN_TEMPLATES
        for d in DIFFICULTIES
    ]
    assert agreed.count("agreement") >= 7
