"""The Scientist is told every rule it is scored by: each scoring constant's value, and the
scenario's own numbers the rules use, appear in its system prompt."""

from __future__ import annotations

import math

import pytest

from replicalab.agents import build_scientist_system_prompt
from replicalab.judge.bonuses import ALL_CHECKS_BONUS, EFFICIENCY_BONUS, FREE_ROUNDS, PAID_ROUNDS
from replicalab.judge.facts import DEFAULT_MIN_CONTROLS, REFERENCE_SCALE, case_facts
from replicalab.judge.scores import (
    DISTRACTOR_PENALTY,
    FIDELITY_WEIGHTS,
    HARD_FAILURE,
    PADDED_CLAIM,
    RIGOR_WEIGHTS,
    SOFT_WARNING,
    SPARE_CONTROLS,
    UNNEEDED_ITEM,
)
from replicalab.models import (
    FEASIBILITY_DIMENSIONS,
    RATIONALE_WORD_LIMIT,
)
from replicalab.power import ALPHA, TARGET_POWER, needed_samples
from replicalab.prices import STAFF_TERMS
from replicalab.scenarios import DIFFICULTIES, generate_scenario
from replicalab.scenarios.rules import ADEQUATE_SHARE_OF_TIME
from replicalab.scenarios.types import SPLITS
from tests.plans import TEMPLATES

CONSTANTS = {
    "ALPHA": ALPHA,
    "TARGET_POWER": TARGET_POWER,
    "ADEQUATE_SHARE_OF_TIME": ADEQUATE_SHARE_OF_TIME,
    "DISTRACTOR_PENALTY": DISTRACTOR_PENALTY,
    "HARD_FAILURE": HARD_FAILURE,
    "SOFT_WARNING": SOFT_WARNING,
    "UNNEEDED_ITEM": UNNEEDED_ITEM,
    "PADDED_CLAIM": PADDED_CLAIM,
    "SPARE_CONTROLS": SPARE_CONTROLS,
    "ALL_CHECKS_BONUS": ALL_CHECKS_BONUS,
    "EFFICIENCY_BONUS": EFFICIENCY_BONUS,
    "FREE_ROUNDS": FREE_ROUNDS,
    "PAID_ROUNDS": PAID_ROUNDS,
    "RATIONALE_WORD_LIMIT": RATIONALE_WORD_LIMIT,
    "REFERENCE_SCALE": REFERENCE_SCALE,
    **{f"RIGOR_WEIGHTS[{i}]": w for i, w in enumerate(RIGOR_WEIGHTS)},
    **{f"FIDELITY_WEIGHTS[{i}]": w for i, w in enumerate(FIDELITY_WEIGHTS)},
}


def _packs() -> list[tuple[str, str, str]]:
    return [(t, d, s) for t in TEMPLATES for d in DIFFICULTIES for s in SPLITS]


@pytest.mark.parametrize(("template", "difficulty", "split"), _packs())
def test_every_scoring_constant_and_the_scenarios_numbers_are_in_the_prompt(
    template: str, difficulty: str, split: str
) -> None:
    pack = generate_scenario(5, template, difficulty, split=split)
    prompt = build_scientist_system_prompt(pack)
    for name, value in CONSTANTS.items():
        assert f"{value:g}" in prompt, f"{name} = {value:g} is not stated"
    for term in (*STAFF_TERMS, *FEASIBILITY_DIMENSIONS):
        assert term in prompt
    facts = case_facts(pack)
    assert f"/ {facts.min_controls})" in prompt  # the lab's minimum of controls
    assert f") = {facts.adequate_days} days" in prompt  # the adequate duration
    for review in facts.reviews:
        assert review in prompt
    effect = pack.paper.reported_effect_size
    if effect is not None:
        assert f"the needed n is {needed_samples(effect)} per arm" in prompt


def test_the_default_minimum_of_controls_is_stated_when_no_constraint_sets_one() -> None:
    pack = generate_scenario(0, "math_reasoning", "easy")
    kept = [c for c in pack.constraints if c.kind != "min_controls"]
    bare = pack.model_copy(update={"constraints": kept})
    assert f"/ {DEFAULT_MIN_CONTROLS})" in build_scientist_system_prompt(bare)


def test_the_adequate_duration_is_the_stated_share_of_the_time_limit() -> None:
    pack = generate_scenario(2, "finance_trading", "hard")
    limit = pack.lab.time_limit_days
    stated = f"ceil({ADEQUATE_SHARE_OF_TIME:g} x the time limit of {limit} days) = "
    assert stated + f"{math.ceil(ADEQUATE_SHARE_OF_TIME * limit)} days" in build_scientist_system_prompt(pack)
