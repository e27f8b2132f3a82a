"""The parallel env: one step is one agent's turn, judged against the mask that agent observed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from replicalab.envs import replicalab_v3
from replicalab.moves import LAB_MANAGER, SCIENTIST

MODES = ["structured", "text"]


@pytest.mark.parametrize("mode", MODES)
def test_every_action_the_observed_mask_allows_is_accepted(mode: str) -> None:
    env = replicalab_v3.parallel_env(action_mode=mode)
    allowed = 0
    for seed in range(60):
        observations, _ = env.reset(seed=seed)
        for agent in env.possible_agents:
            env.action_space(agent).seed(seed)
        while env.agents:
            actions = {a: env.action_space(a).sample(observations[a]["action_mask"]) for a in env.agents}
            movers = [a for a in env.agents if observations[a]["action_mask"].any()]
            assert len(movers) == 1  # exactly one agent may act in a step
            observations, _, _, _, infos = env.step(actions)
            assert infos[movers[0]]["error"] is None, (seed, movers[0], infos[movers[0]]["error"])
            allowed += 1
    assert allowed > 300


def test_one_step_is_one_turn_and_the_waiting_agents_action_is_ignored() -> None:
    env = replicalab_v3.parallel_env()
    observations, _ = env.reset(seed=3)
    episode = env.session.episode
    assert episode is not None
    assert observations[SCIENTIST]["action_mask"].any() and not observations[LAB_MANAGER]["action_mask"].any()
    junk: dict[str, Any] = {LAB_MANAGER: "anything at all"}
    move = env.action_space(SCIENTIST).sample(observations[SCIENTIST]["action_mask"])
    observations, rewards, terminations, _, infos = env.step({SCIENTIST: move, **junk})
    assert episode.agent_selection == LAB_MANAGER and episode.round_number == 1
    assert infos[LAB_MANAGER]["error"] is None and episode.invalid_action_count == 0
    assert set(rewards) == set(terminations) == {SCIENTIST, LAB_MANAGER}
    assert not observations[SCIENTIST]["action_mask"].any() and observations[LAB_MANAGER]["action_mask"].any()
    stance = int(np.flatnonzero(observations[LAB_MANAGER]["action_mask"])[-1])
    _, _, _, _, infos = env.step({LAB_MANAGER: stance, SCIENTIST: None})  # the Scientist may send None
    assert infos[LAB_MANAGER]["error"] is None and episode.invalid_action_count == 0
    assert episode.agent_selection == SCIENTIST and episode.round_number == 2
