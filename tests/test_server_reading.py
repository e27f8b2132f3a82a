"""A session's reset config chooses the reading of its observation: the facts view's features on
the wire are the local facts-view env's, and a bad reading is refused naming the field."""

from __future__ import annotations

import numpy as np
import pytest

from replicalab.baselines.server.environment import ScientistServerEnv
from replicalab.baselines.server.models import EnvConfig, ErrorCode, WireError
from replicalab.baselines.server.settings import Limits
from replicalab.envs.features import feature_names
from replicalab.envs.scientist_v3 import ScientistEnv


def test_a_reset_config_reading_facts_serves_the_facts_view() -> None:
    seat = ScientistServerEnv(EnvConfig(), Limits())
    text = seat.reset({"seed": 3})["observation"]["features"]
    facts = seat.reset({"seed": 3, "config": {"reading": "facts"}})["observation"]["features"]
    assert len(text) == len(feature_names("scientist"))
    assert len(facts) == len(feature_names("scientist", reading="facts"))
    local, _ = ScientistEnv(reading="facts").reset(seed=3)
    assert np.array_equal(np.asarray(facts, dtype=np.float32), local["observation"])


def test_a_bad_reading_is_refused_naming_the_field() -> None:
    seat = ScientistServerEnv(EnvConfig(), Limits())
    with pytest.raises(WireError) as refused:
        seat.reset({"seed": 0, "config": {"reading": "hashed"}})
    assert refused.value.code == ErrorCode.VALIDATION_ERROR and "reading" in refused.value.message
