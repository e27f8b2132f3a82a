"""The structured codec: round trips, and masks that are exact (masked in ⇔ accepted)."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import numpy as np
import pytest

from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.envs import codec
from replicalab.envs.spaces import (
    A_CONTROLS,
    A_ELEMENTS,
    A_ITEMS,
    A_TECHNIQUE,
    A_TYPE,
    MAX_CONTROLS,
    MAX_ELEMENTS,
    MAX_ITEMS,
    MAX_TECHNIQUES,
    SCIENTIST_NVEC,
    lab_manager_action_space,
    scientist_action_space,
)
from replicalab.episode import Episode
from replicalab.models import LabManagerAction, ScientistAction
from replicalab.moves import LAB_MANAGER_ACTION_TYPES, ActionError
from replicalab.scenarios import generate_scenario
from tests.plans import ACCEPT, ASK_BUDGET, COMBOS, bad_plan, good_plan, propose

SEEDS = (0, 1, 2)
SAMPLES = 8
BOUNDS = np.cumsum(SCIENTIST_NVEC)[:-1]


def fork(episode: Episode) -> Episode:
    """An independent copy of `episode` that shares its (frozen) scenario and config."""
    memo = {id(episode.scenario): episode.scenario, id(episode.reward_config): episode.reward_config}
    return copy.deepcopy(episode, memo)


def scientist_states() -> Iterator[tuple[Episode, codec.ScientistCodec]]:
    """Scientist turns across templates and difficulties, with and without a protocol."""
    for template, difficulty in COMBOS:
        for seed in SEEDS:
            pack = generate_scenario(seed, template, difficulty)
            scientist_codec = codec.ScientistCodec(pack)
            empty = Episode(pack)
            yield empty, scientist_codec
            tabled = Episode(pack)
            tabled.step(propose(bad_plan(pack) if seed % 2 else good_plan(pack)))
            tabled.step(grounded_lab_response(tabled))
            yield tabled, scientist_codec


def lab_manager_states() -> Iterator[Episode]:
    """Lab Manager turns: no protocol yet, a feasible one, an infeasible one, a sampled one."""
    space = scientist_action_space("structured")
    for template, difficulty in COMBOS:
        for seed in SEEDS:
            pack = generate_scenario(seed, template, difficulty)
            space.seed(seed)
            scientist_codec = codec.ScientistCodec(pack)
            sampled_mask = scientist_codec.mask(Episode(pack).scientist_mask())
            sampled_mask[1:4] = 0  # propose only
            sampled = scientist_codec.decode(space.sample(sampled_mask), (True, False, False, False))
            for first in (ASK_BUDGET, propose(good_plan(pack)), propose(bad_plan(pack)), sampled):
                episode = Episode(pack)
                assert isinstance(first, ScientistAction)
                assert episode.step(first).error is None
                yield episode


def test_component_masks_follow_the_rules_and_the_scenario() -> None:
    for episode, scientist_codec in scientist_states():
        parts = np.split(scientist_codec.mask(episode.scientist_mask()), BOUNDS)
        assert tuple(bool(v) for v in parts[A_TYPE]) == episode.scientist_mask()
        n_tech = len(scientist_codec.techniques)
        assert 1 <= n_tech <= MAX_TECHNIQUES
        assert parts[A_TECHNIQUE].tolist() == [1] * n_tech + [0] * (MAX_TECHNIQUES - n_tech)
        controls = [int(p[1]) for p in parts[A_CONTROLS:A_ELEMENTS]]
        elements = [int(p[1]) for p in parts[A_ELEMENTS:A_ITEMS]]
        items = [int(p[1]) for p in parts[A_ITEMS:]]
        assert controls == [1] * len(scientist_codec.controls) + [0] * (
            MAX_CONTROLS - len(scientist_codec.controls)
        )
        assert elements == [1] * len(scientist_codec.elements) + [0] * (
            MAX_ELEMENTS - len(scientist_codec.elements)
        )
        assert items == [1] * len(scientist_codec.items) + [0] * (MAX_ITEMS - len(scientist_codec.items))
        assert all(p[0] == 1 for p in parts[A_CONTROLS:])  # leaving a slot out is always allowed


def test_masked_in_samples_round_trip_and_are_accepted() -> None:
    space = scientist_action_space("structured")
    space.seed(7)
    kinds: set[str] = set()
    for episode, scientist_codec in scientist_states():
        legal = episode.scientist_mask()
        mask = scientist_codec.mask(legal)
        for _ in range(SAMPLES):
            x = space.sample(mask)
            assert space.contains(x)
            action = scientist_codec.decode(x, legal)
            assert isinstance(action, ScientistAction), action
            assert ScientistAction.model_validate(action.model_dump()) == action  # a legal move
            encoded = scientist_codec.encode(action)
            assert encoded is not None
            np.testing.assert_array_equal(encoded, scientist_codec.canonical(x))
            assert scientist_codec.decode(encoded, legal) == action
            assert fork(episode).step(action).error is None
            kinds.add(action.action_type.value)
    assert kinds == {"propose_protocol", "revise_protocol", "request_info", "accept"}


def test_any_single_masked_out_component_is_refused() -> None:
    space = scientist_action_space("structured")
    space.seed(11)
    refused = 0
    for episode, scientist_codec in scientist_states():
        legal = episode.scientist_mask()
        parts = np.split(scientist_codec.mask(legal), BOUNDS)
        for _ in range(2):
            x = space.sample(scientist_codec.mask(legal))
            for component, allowed in enumerate(parts):
                for value in np.flatnonzero(allowed == 0):
                    flipped = x.copy()
                    flipped[component] = value
                    error = scientist_codec.decode(flipped, legal)
                    assert isinstance(error, ActionError) and error.code == "masked_action"
                    outcome = fork(episode).step(error)
                    assert (
                        outcome.error == error and outcome.components["scientist"]["invalid_action"] == -1.0
                    )
                    refused += 1
    assert refused > 1000


def test_encode_refuses_what_the_space_cannot_express() -> None:
    pack = generate_scenario(0, "math_reasoning", "easy")
    scientist_codec = codec.ScientistCodec(pack)
    plan = good_plan(pack)
    assert scientist_codec.encode(ACCEPT) is not None
    assert scientist_codec.encode(propose(plan)) is not None
    assert scientist_codec.encode(propose(plan.model_copy(update={"sample_size": 101}))) is None
    assert scientist_codec.encode(propose(plan.model_copy(update={"elements": ["astrology"]}))) is None
    assert scientist_codec.encode(propose(plan.model_copy(update={"rationale": "any text"}))) is not None
    assert scientist_codec.encode(propose(plan.model_copy(update={"duration_days": 31}))) is None
    assert scientist_codec.encode(propose(plan.model_copy(update={"technique": "astrology"}))) is None
    assert scientist_codec.encode(propose(plan.model_copy(update={"controls": ["vibes"]}))) is None
    assert (
        scientist_codec.encode(propose(plan.model_copy(update={"required_equipment": ["unicorn"]}))) is None
    )
    assert (
        scientist_codec.encode(
            ScientistAction.model_validate({"action_type": "request_info", "questions": ["Is it sunny?"]})
        )
        is None
    )


@pytest.mark.parametrize(
    "junk",
    [
        None,
        "propose",
        [0] * 3,
        [[0] * 93],
        np.full(SCIENTIST_NVEC.size, -1),
        SCIENTIST_NVEC,
        [float("inf")] * SCIENTIST_NVEC.size,
        [10**30] * SCIENTIST_NVEC.size,
        object(),
        {"a": 1},
    ],
)
def test_malformed_scientist_elements_are_invalid_not_raised(junk: object) -> None:
    pack = generate_scenario(0, "ml_benchmark", "easy")
    error = codec.ScientistCodec(pack).decode(junk, Episode(pack).scientist_mask())
    assert isinstance(error, ActionError) and error.code == "invalid_action"


def test_lab_manager_stance_mask_is_exact() -> None:
    space = lab_manager_action_space()
    seen: set[int] = set()
    for episode in lab_manager_states():
        mask = codec.lab_manager_mask(episode)
        assert mask[0] == 1 and mask.dtype == np.int8
        check = episode.check
        if check is None:
            assert mask.tolist() == [1, 0, 0, 0]
        else:
            assert mask.tolist() == [
                1,
                int(
                    episode.suggestion is not None and episode.suggestion.revised_protocol != episode.protocol
                ),
                int(not check.feasible),
                int(check.feasible),
            ]
        for index in range(space.n):
            move = codec.decode_lab_manager(index, episode)
            if mask[index]:
                assert isinstance(move, LabManagerAction)
                assert move.action_type is LAB_MANAGER_ACTION_TYPES[index]
                assert LabManagerAction.model_validate(move.model_dump()) == move
                outcome = fork(episode).step(move)
                assert outcome.error is None and outcome.components["lab_manager"] == {}
                seen.add(index)
            else:
                assert isinstance(move, ActionError) and move.code == "masked_action"
                assert fork(episode).step(move).error == move
    assert seen == {0, 1, 2, 3}


def test_lab_manager_masks_are_zero_off_turn_and_after_the_end() -> None:
    pack = generate_scenario(4, "finance_trading", "hard")
    episode = Episode(pack)
    assert not codec.lab_manager_mask(episode).any()
    episode.step(propose(good_plan(pack)))
    episode.step(grounded_lab_response(episode))
    episode.step(ACCEPT)
    assert episode.done
    assert not codec.lab_manager_mask(episode).any()
    assert not codec.ScientistCodec(pack).mask(episode.scientist_mask()).any()


@pytest.mark.parametrize("junk", [None, float("inf"), float("nan"), -1, 4, 10**30, [1, 2], "x", 1j])
def test_malformed_lab_manager_elements_are_invalid_not_raised(junk: object) -> None:
    pack = generate_scenario(0, "ml_benchmark", "easy")
    episode = Episode(pack)
    episode.step(propose(good_plan(pack)))
    error = codec.decode_lab_manager(junk, episode)
    assert isinstance(error, ActionError) and error.code == "invalid_action"
