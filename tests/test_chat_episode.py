"""A `ChatEpisode` (what the verifiers and TRL adapters share) plays any model text as the
Gymnasium text env does, one round per reply, and names scenarios by their packs' ids."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from replicalab.envs.chat_episode import ChatEpisode, scenario_ids
from replicalab.episode import EpisodeOverError
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, ScenarioKey, generate_scenario
from replicalab.scenarios.types import SPLITS
from tests.chat_oracle import ACCEPT, GARBAGE, baseline_proposal, gymnasium_outcome

SCENARIO = "finance_trading-train-hard-3"
PROPOSAL = baseline_proposal(SCENARIO)

replies = st.one_of(
    st.text(max_size=200),
    st.sampled_from([GARBAGE, ACCEPT, PROPOSAL, "{", "[]", '{"action_type": "request_info"}']),
    st.builds(
        lambda d: json.dumps(d), st.dictionaries(st.sampled_from(["action_type", "x"]), st.text(max_size=20))
    ),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(replies, min_size=1, max_size=5))
@example([PROPOSAL, ACCEPT])
@example(["\udcff"])  # a lone surrogate: refused and still loggable
def test_any_reply_costs_one_round_and_scores_as_the_gymnasium_env(texts: list[str]) -> None:
    chat = ChatEpisode(SCENARIO, max_rounds=4)
    played = []
    for text in texts:
        before = chat.episode.round_number
        observation = chat.play(text)
        played.append(text)
        assert (observation is None) == chat.done
        if chat.done:
            break
        assert chat.episode.round_number == before + 1
        assert observation == chat.observation()
    expected = gymnasium_outcome(SCENARIO, played, max_rounds=4)
    assert chat.scientist_return == pytest.approx(expected["return"])
    if chat.done:
        assert chat.judge_score == pytest.approx(expected["judge"])
        assert chat.closing_message().startswith(f"The episode is over: {expected['verdict']}.")
    else:
        assert chat.judge_score == 0.0
    chat.episode.to_log().model_dump_json()  # the log holds whatever was said


def test_the_chat_opens_with_the_system_prompt_and_the_first_observation() -> None:
    system, user = ChatEpisode(SCENARIO, max_rounds=3).opening()
    assert system["role"] == "system" and "You are the Scientist agent in ReplicaLab." in system["content"]
    assert user == {"role": "user", "content": gymnasium_outcome(SCENARIO, [], max_rounds=3)["prompts"][0]}


def test_playing_after_the_end_is_refused() -> None:
    chat = ChatEpisode(SCENARIO)
    chat.play(PROPOSAL)
    assert chat.play(ACCEPT) is None
    with pytest.raises(EpisodeOverError):
        chat.play(ACCEPT)


@given(
    st.integers(0, 10**6),
    st.sampled_from(BUILTIN_TEMPLATES),
    st.sampled_from(DIFFICULTIES),
    st.sampled_from(SPLITS),
)
def test_a_pack_id_names_the_pack(seed: int, template: str, difficulty: str, split: str) -> None:
    pack = generate_scenario(seed, template, difficulty, split)
    key = ScenarioKey.parse(pack.scenario_id)
    assert (key.template, key.split, key.difficulty, key.seed) == (template, split, difficulty, seed)
    assert ChatEpisode(pack.scenario_id).episode.scenario == pack


@given(st.text(max_size=40))
@example("ml_benchmark-train-easy")
@example("ml_benchmark-train-extreme-3")
@example("ml_benchmark-dev-easy-3")
@example("ml_benchmark-train-easy--3")
def test_text_that_is_no_scenario_id_is_refused_by_name(text: str) -> None:
    try:
        key = ScenarioKey.parse(text)
    except ValueError as error:
        assert str(error).startswith("scenario_id: expected")
    else:
        assert text == f"{key.template}-{key.split}-{key.difficulty}-{key.seed}"


def test_bad_constructor_arguments_are_refused_by_name() -> None:
    with pytest.raises(TypeError, match="scenario_id: expected a str"):
        ScenarioKey.parse(7)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="template: unknown template 'chemistry'"):
        ChatEpisode("chemistry-train-easy-1")
    with pytest.raises(ValueError, match="max_rounds: must be at least 2"):
        ChatEpisode(SCENARIO, max_rounds=1)
    with pytest.raises(
        TypeError, match="reward_config: expected a preset name, a RewardConfig JSON file or a RewardConfig"
    ):
        ChatEpisode(SCENARIO, reward_config=3)  # type: ignore[arg-type]


def test_scenario_ids_cover_the_grid_seed_first() -> None:
    ids = scenario_ids(templates=["ml_benchmark", "math_reasoning"], difficulties=["hard"], num_seeds=3)
    assert ids == [f"{t}-train-hard-{s}" for s in range(3) for t in ("ml_benchmark", "math_reasoning")]
    assert len(scenario_ids(num_seeds=2)) == len(BUILTIN_TEMPLATES) * len(DIFFICULTIES) * 2
    test_cases = {ChatEpisode(i).episode.scenario.case_id for i in scenario_ids("test", num_seeds=20)}
    train_cases = {ChatEpisode(i).episode.scenario.case_id for i in scenario_ids(num_seeds=20)}
    assert test_cases and not test_cases & train_cases  # a split's ids draw from its own cases
    with pytest.raises(ValueError, match="split: unknown split 'dev'; valid: train, validation, test"):
        scenario_ids("dev")
    with pytest.raises(ValueError, match="num_seeds: must be a positive int"):
        scenario_ids(num_seeds=True)
    with pytest.raises(ValueError, match="templates, difficulties: give at least one of each"):
        scenario_ids(templates=[])
