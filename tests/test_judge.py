"""The judge: bounded scores, one source of feasibility, no reward for stuffing or padding.

Properties run over the nine (template, difficulty) combinations with seeded random protocols;
metamorphic tests check that changes which cannot improve a plan never raise its scores.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

import numpy as np
import pytest

from replicalab.agents import build_baseline_scientist_action
from replicalab.judge import (
    ALL_CHECKS,
    ALL_CHECKS_BONUS,
    BASE_SCALE,
    EFFICIENCY_BONUS,
    build_reward_breakdown,
    compute_total_reward,
    explain,
    feasibility_score,
    fidelity_score,
    parsimony_score,
    rigor_score,
)
from replicalab.judge.bonuses import FREE_ROUNDS, PAID_ROUNDS
from replicalab.judge.facts import case_facts, read_case_facts
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import Protocol, RewardBreakdown
from replicalab.prices import estimate_protocol_cost, estimate_staff_load
from replicalab.scenarios import generate_scenario
from replicalab.scenarios.types import NormalizedScenarioPack
from tests.plans import COMBOS, good_plan, random_protocol, visible_texts

AXES = ("rigor", "feasibility", "fidelity", "parsimony")


def _scores(b: RewardBreakdown) -> tuple[float, ...]:
    return tuple(getattr(b, axis) for axis in AXES)


def _total(protocol: Protocol, pack: NormalizedScenarioPack) -> float:
    return compute_total_reward(build_reward_breakdown(protocol, pack))


def baseline_plan(pack: NormalizedScenarioPack) -> Protocol:
    return build_baseline_scientist_action(pack.scientist_observation).to_protocol()


def packs(seeds: int) -> Iterator[tuple[NormalizedScenarioPack, np.random.Generator]]:
    for index, (template, difficulty) in enumerate(COMBOS):
        for seed in range(seeds):
            rng = np.random.default_rng([index, seed])
            yield generate_scenario(seed, template, difficulty), rng


# --------------------------------------------------------------------------- bounds and sources


def test_case_facts_are_read_again_for_every_other_pack() -> None:
    first, second = (generate_scenario(seed, "ml_benchmark", "hard") for seed in (0, 1))
    equal = generate_scenario(0, "ml_benchmark", "hard")  # an equal pack, another object
    for pack in (first, first, second, equal, first):
        facts = case_facts(pack)
        assert dataclasses.astuple(facts) == dataclasses.astuple(read_case_facts(pack))
    assert case_facts(first) is case_facts(first)  # the latest pack's facts are kept
    assert case_facts(second).reference_samples == read_case_facts(second).reference_samples


def test_scores_bounded_and_total_consistent_on_random_protocols() -> None:
    for pack, rng in packs(200):
        protocol = random_protocol(pack, rng)
        b = build_reward_breakdown(protocol, pack)
        for axis, value in zip(AXES, _scores(b), strict=True):
            assert 0.0 <= value <= 1.0, (axis, value, pack.scenario_id)
        assert b.parsimony > 0.0
        assert math.isclose(b.base, 10 * b.rigor * b.feasibility * b.fidelity * b.parsimony)
        assert math.isclose(b.total, compute_total_reward(b))
        RewardBreakdown.model_validate(b.model_dump())  # the constructed value obeys the contract


def test_feasibility_comes_only_from_the_check() -> None:
    for pack, rng in packs(40):
        protocol = random_protocol(pack, rng)
        check = check_feasibility(protocol, pack)
        given = build_reward_breakdown(protocol, pack, check)
        assert given == build_reward_breakdown(protocol, pack)
        assert feasibility_score(protocol, pack, check) == feasibility_score(protocol, pack)
        # Feasibility is a function of the check alone: another protocol with the same check
        # (here: the same plan with another rationale) scores the same.
        other = protocol.model_copy(update={"rationale": "unrelated words entirely"})
        assert build_reward_breakdown(other, pack, check).feasibility == feasibility_score(protocol, pack)


def test_infeasible_plans_score_well_below_feasible_ones() -> None:
    only_late = 0
    for seed in range(30):
        pack = generate_scenario(seed, "ml_benchmark", "medium")
        good = good_plan(pack)
        assert check_feasibility(good, pack).feasible
        assert feasibility_score(good, pack) == 1.0
        late = good.model_copy(update={"duration_days": pack.lab.time_limit_days + 1})
        failed = check_feasibility(late, pack).failed_dimensions
        assert "schedule" in failed
        assert feasibility_score(late, pack) < 0.5
        only_late += failed == ["schedule"]  # one hard failure alone already costs half
    assert only_late > 0


def test_soft_warning_is_a_small_deduction() -> None:
    pack = generate_scenario(2, "math_reasoning", "easy")  # min_controls is soft on easy
    good = good_plan(pack)
    reviews = [c.term for c in pack.constraints if c.kind == "required_review" and c.term]
    thin = good.model_copy(update={"controls": reviews})
    check = check_feasibility(thin, pack)
    assert check.feasible
    assert 0.9 <= feasibility_score(thin, pack, check) < 1.0


def test_degenerate_protocols_total_zero_without_bonus() -> None:
    pack = generate_scenario(1, "finance_trading", "easy")
    good = good_plan(pack)
    degenerate = [
        Protocol(),
        good.model_copy(update={"sample_size": 0}),
        good.model_copy(update={"technique": ""}),
        good.model_copy(update={"technique": "the of and"}),
    ]
    for protocol in degenerate:
        b = build_reward_breakdown(protocol, pack, rounds_used=1)
        assert b.rigor == 0.0
        assert b.bonuses == {} and b.penalties == {}
        assert compute_total_reward(b) == 0.0 == b.total


# --------------------------------------------------------------------------- stuffing and padding


@pytest.mark.parametrize("mode", ["appended", "replaced"])
def test_claiming_every_candidate_scores_below_the_honest_plan(mode: str) -> None:
    """Stuffing the claims with every candidate (and every visible text) never pays."""
    for pack, _ in packs(100):
        honest = good_plan(pack)
        everything = [*pack.candidates.elements, *visible_texts(pack)[:3]]
        controls = [*honest.controls, *pack.candidates.controls]
        elements = [*honest.elements, *everything] if mode == "appended" else everything
        stuffed = honest.model_copy(update={"elements": elements, "controls": controls})
        assert _total(stuffed, pack) < _total(honest, pack), pack.scenario_id


def test_pasting_the_method_as_technique_does_not_pay() -> None:
    for pack, _ in packs(30):
        good = good_plan(pack)  # names the case's own technique
        pasted = good.model_copy(update={"technique": pack.paper.method})
        assert fidelity_score(pasted, pack) <= fidelity_score(good, pack)
        assert _total(pasted, pack) < _total(good, pack)


def test_the_technique_earns_its_credit_only_by_naming_the_studys() -> None:
    pack = generate_scenario(8, "math_reasoning", "easy")
    assert pack.hidden_reference_spec.technique  # the generator fills it from the case
    good = good_plan(pack)
    for other in pack.candidates.techniques:
        if other != good.technique:
            assert fidelity_score(good.model_copy(update={"technique": other}), pack) < fidelity_score(
                good, pack
            )
    shuffled = " ".join(reversed(good.technique.upper().split()))  # case and word order aside
    assert fidelity_score(good.model_copy(update={"technique": shuffled}), pack) == fidelity_score(good, pack)
    # a study whose reference names no technique credits any
    reference = pack.hidden_reference_spec.model_copy(update={"technique": ""})
    stranger = pack.model_copy(update={"hidden_reference_spec": reference})
    method = good.model_copy(update={"technique": pack.paper.method})
    assert fidelity_score(method, stranger) == fidelity_score(good, stranger) == fidelity_score(good, pack)


def test_padding_lowers_parsimony_only() -> None:
    pack = generate_scenario(5, "ml_benchmark", "easy")
    good = good_plan(pack)
    assert parsimony_score(good, pack) == 1.0
    unneeded = [r.name for r in pack.resources if not r.essential and r.kind == "reagent"]
    padded = [
        good.model_copy(update={"elements": [*good.elements, "not a candidate"]}),
        good.model_copy(update={"elements": [*good.elements, good.elements[0].upper()]}),
        good.model_copy(update={"required_reagents": [*good.required_reagents, unneeded[0]]}),
        good.model_copy(update={"controls": [*good.controls, "a", "b c", "d e f", "g h i j"]}),
        good.model_copy(update={"controls": [*good.controls, good.controls[0].upper()]}),
    ]
    for protocol in padded:
        assert parsimony_score(protocol, pack) < 1.0
        assert rigor_score(protocol, pack) <= rigor_score(good, pack)
        assert fidelity_score(protocol, pack) <= fidelity_score(good, pack)


def test_fidelity_reads_element_claims_by_name_and_counts_each_once() -> None:
    pack = generate_scenario(0, "math_reasoning", "easy")
    good = good_plan(pack)
    plain = good.model_copy(update={"elements": []})
    assert fidelity_score(good, pack) > fidelity_score(plain, pack)
    repeated = good.model_copy(update={"elements": [*good.elements, *good.elements]})
    assert fidelity_score(repeated, pack) == fidelity_score(good, pack)
    glued = good.model_copy(update={"elements": ["".join(e.split()) for e in good.elements]})
    assert fidelity_score(glued, pack) == fidelity_score(plain, pack)
    partial = good.model_copy(update={"elements": [" ".join(e.split()[:-1]) or "x" for e in good.elements]})
    assert fidelity_score(partial, pack) == fidelity_score(plain, pack)  # a name, not a share of its words
    prose = plain.model_copy(update={"rationale": "; ".join(good.elements)})
    assert fidelity_score(prose, pack) == fidelity_score(plain, pack)  # the rationale is not a claim


# --------------------------------------------------------------------------- metamorphic


def test_reordering_or_duplicating_list_items_never_raises_a_score() -> None:
    for pack, rng in packs(60):
        protocol = random_protocol(pack, rng)
        before = _scores(build_reward_breakdown(protocol, pack))
        fields = ("controls", "required_equipment", "required_reagents")
        shuffled = {f: list(rng.permutation(getattr(protocol, f))) for f in fields}
        duplicated = {
            f: [*getattr(protocol, f), getattr(protocol, f)[0]] for f in fields if getattr(protocol, f)
        }
        for update in (shuffled, duplicated):
            after = _scores(build_reward_breakdown(protocol.model_copy(update=update), pack))
            for axis, old, new in zip(AXES, before, after, strict=True):
                assert new <= old + 1e-12, (axis, update, pack.scenario_id)


def _violations(pack: NormalizedScenarioPack, plan: Protocol) -> Iterator[Protocol]:
    """The plan with one hard constraint broken at a time."""
    min_samples = next(c.quantity for c in pack.constraints if c.kind == "min_sample_size")
    assert min_samples is not None
    yield plan.model_copy(update={"sample_size": int(min_samples) - 1})
    yield plan.model_copy(update={"duration_days": pack.lab.time_limit_days + 1})
    rates = pack.lab.rates
    shortfall = pack.lab.budget_remaining - estimate_protocol_cost(plan, rates=rates)
    extra = int(shortfall // rates.per_sample) + 1
    yield plan.model_copy(update={"sample_size": plan.sample_size + extra})
    for c in pack.constraints:
        if c.kind == "required_review" and c.term:
            kept = [x for x in plan.controls if c.term.lower() not in x.lower()]
            yield plan.model_copy(update={"controls": kept})
        if c.kind == "forbidden_practice" and c.term:
            yield plan.model_copy(update={"controls": [*plan.controls, c.term]})
        if c.kind == "min_controls" and c.hard and c.quantity is not None:
            yield plan.model_copy(update={"controls": plan.controls[-int(c.quantity) + 1 :]})
    for item in pack.resources:
        if item.essential:
            field = "required_equipment" if item.kind == "equipment" else "required_reagents"
            alternatives = {
                s.alternative.lower() for s in pack.allowed_substitutions if s.original == item.name
            }
            kept = [
                x
                for x in getattr(plan, field)
                if x.lower() != item.name.lower() and x.lower() not in alternatives
            ]
            yield plan.model_copy(update={field: kept})
            if not item.available:
                yield plan.model_copy(update={field: [*kept, item.name]})


def _topped_up(plan: Protocol, pack: NormalizedScenarioPack) -> Protocol:
    """`plan` with the most samples the lab's budget pays for at its prices and its staff can
    run (never fewer than its own)."""
    rates = pack.lab.rates
    fixed = estimate_protocol_cost(plan, 0, rates)
    most = math.floor((pack.lab.budget_remaining - fixed) / rates.per_sample)
    topped = plan.model_copy(update={"sample_size": max(plan.sample_size, most)})
    if estimate_staff_load(topped) > pack.lab.staff_count:  # over 20 samples takes one more person
        topped = plan.model_copy(update={"sample_size": max(plan.sample_size, min(most, 20))})
    return topped


def test_violating_a_hard_constraint_never_raises_the_total() -> None:
    # Below the best feasible plan's sample size, samples bought over the budget add power that
    # can outweigh the failed check; the Lab Manager's refusal, not the judge, stops such a
    # plan. So the budget is broken only from a plan that already has the best plan's samples.
    checked = 0
    for pack, _ in packs(25):
        best_n = case_facts(pack).reference_samples
        for plan in (_topped_up(good_plan(pack), pack), baseline_plan(pack)):
            total = _total(plan, pack)
            if not check_feasibility(plan, pack).feasible or total == 0.0:
                continue  # a plan that earns nothing (it tests nothing of the study) has nothing to lose
            for broken in _violations(pack, plan):
                assert not check_feasibility(broken, pack).feasible, broken
                if broken.sample_size > plan.sample_size and plan.sample_size < best_n:
                    continue
                assert _total(broken, pack) <= total, (pack.scenario_id, broken)
                checked += 1
    assert checked > 1000


def _with_budget(pack: NormalizedScenarioPack, factor: float) -> NormalizedScenarioPack:
    """`pack` with its remaining budget and its max_budget bound raised together."""
    remaining = pack.lab.budget_remaining * factor
    constraints = [
        c.model_copy(update={"quantity": remaining}) if c.kind == "max_budget" else c
        for c in pack.constraints
    ]
    budget = {"budget_remaining": remaining, "budget_total": max(pack.lab.budget_total, remaining)}
    return pack.model_copy(
        update={
            "constraints": constraints,
            "lab": pack.lab.model_copy(update=budget),
            "lab_manager_observation": pack.lab_manager_observation.model_copy(update=budget),
            "scientist_observation": pack.scientist_observation.model_copy(
                update={"constraints": constraints}
            ),
        }
    )


def test_total_non_decreasing_as_budget_slack_grows() -> None:
    # Rigor credits power against the best plan the budget pays for, so a fixed plan (or one
    # that its staff or its own costs keep from spending a larger budget) may lose credit when
    # the budget grows; the faithful plan that makes the most of each budget never does.
    for pack, _ in packs(40):
        big = good_plan(pack).model_copy(update={"sample_size": 60})
        for plan in (good_plan(pack), big):
            budgets = [_with_budget(pack, f) for f in (0.5, 1.0, 1.5, 3.0, 10.0)]
            sized = [(_topped_up(plan, b), b) for b in budgets]
            totals = [_total(p, b) for p, b in sized if check_feasibility(p, b).feasible]
            assert totals == sorted(totals), (pack.scenario_id, totals)
        assert (
            _total(big, _with_budget(pack, 10.0)) > _total(big, pack)
            or check_feasibility(big, pack).budget_ok
        )


def awful_plan(pack: NormalizedScenarioPack) -> Protocol:
    practice = next(c.term for c in pack.constraints if c.kind == "forbidden_practice")
    extras = [r.name for r in pack.resources if not r.essential]
    return Protocol(
        sample_size=1,
        controls=["vibes", "vibes", "more vibes", practice],
        technique="guesswork",
        elements=["hope", "hope"],
        duration_days=1,
        required_equipment=["unicorn centrifuge", *extras[:2]],
        required_reagents=["quantum abacus"],
        rationale="It will surely work out fine.",
    )


def test_good_plan_beats_awful_plan_on_every_axis() -> None:
    for pack, _ in packs(30):
        good = build_reward_breakdown(good_plan(pack), pack)
        awful = build_reward_breakdown(awful_plan(pack), pack)
        for axis, g, a in zip(AXES, _scores(good), _scores(awful), strict=True):
            assert g > a, (axis, g, a, pack.scenario_id)
        assert good.total > awful.total
        assert good.feasibility == 1.0 and "all_checks_pass" in good.bonuses


# --------------------------------------------------------------------------- bonuses and caching


def test_efficiency_bonus_only_for_feasible_plans() -> None:
    pack = generate_scenario(9, "finance_trading", "hard")
    good = good_plan(pack)
    b = build_reward_breakdown(good, pack, rounds_used=2)
    quality = b.base / BASE_SCALE
    assert b.bonuses["efficiency"] == pytest.approx(3 * EFFICIENCY_BONUS * quality)  # three rounds are free
    asked = build_reward_breakdown(good, pack, rounds_used=3)
    assert asked.bonuses["efficiency"] == b.bonuses["efficiency"]  # a question costs no bonus
    one_more = build_reward_breakdown(good, pack, rounds_used=4)
    assert one_more.bonuses["efficiency"] == pytest.approx(2 * EFFICIENCY_BONUS * quality)
    window_spent = build_reward_breakdown(good, pack, rounds_used=FREE_ROUNDS + PAID_ROUNDS)
    assert "efficiency" not in window_spent.bonuses
    late = good.model_copy(update={"duration_days": pack.lab.time_limit_days + 1})
    assert build_reward_breakdown(late, pack, rounds_used=1).bonuses == {}


def test_bonuses_scale_with_the_plans_base_and_not_with_the_round_limit() -> None:
    """A feasible plan is paid its bonuses in proportion to its base, so one that tests little
    earns little; the efficiency bonus reads only the rounds used, never the round limit."""
    for pack, _ in packs(6):
        good = build_reward_breakdown(good_plan(pack), pack, rounds_used=2)
        if ALL_CHECKS not in good.bonuses:
            continue
        quality = good.base / BASE_SCALE
        assert good.bonuses[ALL_CHECKS] == pytest.approx(ALL_CHECKS_BONUS * quality)
        assert good.bonuses["efficiency"] == pytest.approx(EFFICIENCY_BONUS * PAID_ROUNDS * quality)
        assert good.total == pytest.approx(good.base * (1 + (ALL_CHECKS_BONUS + 0.75) / BASE_SCALE))


def test_a_plan_that_addresses_none_of_the_study_earns_nothing() -> None:
    """The baseline's technique and items with generic controls and no element: feasible, yet it
    tests nothing of the study, so fidelity is 0 and so are the base and both bonuses."""
    for pack, _ in packs(3):
        good = good_plan(pack)
        generic = [c.term for c in pack.constraints if c.kind == "required_review" and c.term]
        nothing = good.model_copy(
            update={"controls": [*generic, "a placeholder check"], "elements": [], "rationale": "A plan."}
        )
        b = build_reward_breakdown(nothing, pack, rounds_used=2)
        assert b.fidelity == 0.0 and b.total == 0.0 and b.bonuses == {}, pack.scenario_id
        assert build_reward_breakdown(good, pack, rounds_used=2).fidelity > 0.5


def test_facts_are_cached_per_pack_object_not_per_id() -> None:
    pack = generate_scenario(3, "ml_benchmark", "easy")
    plan = good_plan(pack)
    reference = pack.hidden_reference_spec.model_copy(
        update={"required_elements": ["entirely different requirement", "another novel element"]}
    )
    twin = pack.model_copy(update={"hidden_reference_spec": reference})
    assert twin.scenario_id == pack.scenario_id
    first = fidelity_score(plan, pack)
    assert fidelity_score(plan, twin) < first
    assert fidelity_score(plan, pack) == first


def test_explain_names_every_component() -> None:
    pack = generate_scenario(6, "math_reasoning", "medium")
    b = build_reward_breakdown(awful_plan(pack), pack).model_copy(
        update={"penalties": {"custom_penalty": 0.5}}
    )
    text = explain(b)
    for axis in AXES:
        assert f"{axis}" in text and f"{getattr(b, axis):.3f}" in text
    assert "custom_penalty" in text and "0.500" in text
    assert f"{compute_total_reward(b):.3f}" in text
    for note in b.notes:
        assert note in text
    good = build_reward_breakdown(good_plan(pack), pack, rounds_used=3)
    for name, value in good.bonuses.items():
        assert f"{name}  +{value:.3f}" in explain(good)


def test_judge_is_deterministic() -> None:
    for pack, rng in packs(5):
        protocol = random_protocol(pack, rng)
        again = generate_scenario(pack.seed, pack.template, pack.difficulty)
        assert build_reward_breakdown(protocol, pack) == build_reward_breakdown(protocol, again)
