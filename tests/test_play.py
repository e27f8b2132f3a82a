"""The one game loop: every front's moves go through `play` / `play_async`, which step the same
episode the same way whether a seat answers at once or is awaited."""

from __future__ import annotations

import asyncio

import pytest

from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.episode import Episode
from replicalab.models import ScientistAction
from replicalab.moves import LAB_MANAGER, SCIENTIST
from replicalab.play import Given, play, play_async
from replicalab.scenarios import generate_scenario


def _episode() -> Episode:
    return Episode(generate_scenario(3, "ml_benchmark", "medium"), max_rounds=4)


def _baseline(episode: Episode) -> ScientistAction:
    return build_baseline_scientist_action(episode.scientist_observation())


class _Awaited:
    """The baseline Scientist, its move awaited as a served model's would be."""

    async def act(self, episode: Episode) -> ScientistAction:
        await asyncio.sleep(0)
        return _baseline(episode)


def test_play_runs_to_the_end_and_awaiting_a_seat_changes_nothing() -> None:
    at_once, awaited = _episode(), _episode()
    outcomes = play(at_once, _baseline, grounded_lab_response)
    assert at_once.done and len(outcomes) == len(at_once.to_log().steps)
    asyncio.run(play_async(awaited, _Awaited(), grounded_lab_response))
    assert awaited.to_log() == at_once.to_log()


def test_until_plays_one_move_and_the_replies_up_to_that_seat_s_next_turn() -> None:
    episode = _episode()
    outcomes = play(episode, Given(_baseline(episode)), grounded_lab_response, until=SCIENTIST)
    assert len(outcomes) == 2 and episode.agent_selection == SCIENTIST
    assert [step.agent for step in episode.to_log().steps] == [SCIENTIST, LAB_MANAGER]


def test_play_refuses_a_seat_it_would_have_to_await_and_steps_nothing() -> None:
    episode = _episode()
    with pytest.raises(TypeError, match="scientist: a seat whose move must be awaited needs play_async"):
        play(episode, _Awaited(), grounded_lab_response)
    assert episode.to_log().steps == []
