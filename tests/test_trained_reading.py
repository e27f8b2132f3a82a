"""A model trained on one view of the paper is evaluated on that view: `train --reading` records
it in config.json, and `evaluate --scientist PATH.zip` observes as the model was trained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replicalab.baselines.policies.structured import trained_reading
from replicalab.baselines.training.maskable_ppo import TrainConfig, recorded_settings


def test_a_reading_the_env_lacks_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="reading"):
        TrainConfig(reading="pictures")


def test_the_config_records_the_reading_and_the_evaluation_reads_it_back(tmp_path: Path) -> None:
    settings = recorded_settings(TrainConfig(reading="facts"))
    assert settings["reading"] == "facts" and settings["provenance"]["reading"] == "facts"
    (tmp_path / "config.json").write_text(json.dumps(settings), encoding="utf-8")
    assert trained_reading(str(tmp_path / "model.zip")) == "facts"
    # a checkpoint, saved in the run's checkpoints folder, was trained on the run's view
    assert trained_reading(str(tmp_path / "checkpoints" / "model_16384_steps.zip")) == "facts"
    assert trained_reading(str(tmp_path / "elsewhere" / "model.zip")) == "text"  # no config beside it
    assert trained_reading("mymodule:policy") == "text"
