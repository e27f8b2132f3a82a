"""The counter-proposal: the lab's fixes in a fixed order (swap equipment, swap reagents, fit the
schedule, halve to the budget), science-blind, and never adding a failure."""

from __future__ import annotations

import pytest

from replicalab.agents.lab_manager_policy import compose_lab_manager_response
from replicalab.lab.counter_proposal import suggest_alternative
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import Protocol
from replicalab.prices import estimate_protocol_cost, estimate_staff_load
from replicalab.scenarios import BUILTIN_TEMPLATES, NormalizedScenarioPack
from tests.lab_plans import (
    PROPERTY_SEEDS,
    case_of,
    edit,
    feasible_protocol,
    find,
    pack,
    paper_protocol,
    perturbations,
)
from tests.plans import COMBOS

STEP_RANK = {"required_equipment": 0, "required_reagents": 1, "duration_days": 2, "sample_size": 3}


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_suggestion_never_adds_a_failure(template: str, difficulty: str) -> None:
    for seed in PROPERTY_SEEDS:
        scenario = pack(seed, template, difficulty)
        for base in (feasible_protocol(scenario), paper_protocol(scenario)):
            for protocol in perturbations(scenario, base):
                check = check_feasibility(protocol, scenario)
                suggestion = suggest_alternative(protocol, check, scenario)
                assert (suggestion is None) == check.feasible
                if suggestion is None:
                    continue
                before, after = set(check.failed_dimensions), set(suggestion.remaining_failures)
                assert after <= before, (scenario.scenario_id, protocol, suggestion.applied_changes)
                assert suggestion.improved == (after < before)
                assert suggestion.remaining_failures == suggestion.post_check.failed_dimensions
                assert suggestion.pre_check is check
                assert suggestion.post_check == check_feasibility(suggestion.revised_protocol, scenario)
                ranks = [STEP_RANK[c.field] for c in suggestion.applied_changes]
                assert ranks == sorted(ranks)
                assert (suggestion.revised_protocol == protocol) == (not suggestion.applied_changes)


def test_fix_order_and_each_step() -> None:
    def build(scenario: NormalizedScenarioPack) -> Protocol | None:
        gone = [r for r in scenario.resources if r.essential and not r.available]
        if {r.kind for r in gone} != {"equipment", "reagent"}:
            return None
        return paper_protocol(scenario)  # original items, too long, too big

    scenario, protocol = find(build, [(t, "hard") for t in BUILTIN_TEMPLATES])
    check = check_feasibility(protocol, scenario)
    suggestion = suggest_alternative(protocol, check, scenario)
    assert suggestion is not None
    fields = [c.field for c in suggestion.applied_changes]
    assert fields[-2:] == ["duration_days", "sample_size"]
    assert fields[:-2] == sorted(fields[:-2], key=STEP_RANK.__getitem__)
    assert set(fields[:-2]) == {"required_equipment", "required_reagents"}
    tradeoffs = {(s.original, s.alternative): s.tradeoff for s in scenario.allowed_substitutions}
    for change in suggestion.applied_changes[:-2]:
        assert change.revised == scenario.substitutes[change.original.lower()][0]
        assert change.tradeoff == tradeoffs[(change.original, change.revised)]
    revised = suggestion.revised_protocol
    assert revised.duration_days == scenario.lab.time_limit_days
    # Halving: the first power-of-two cut that fits, or the hard minimum sample size.
    floor = case_of(scenario).min_sample_size
    size, halvings = protocol.sample_size, 0
    while size > floor and estimate_protocol_cost(
        edit(revised, sample_size=size), rates=scenario.lab.rates
    ) > (scenario.lab.budget_remaining):
        size, halvings = max(floor, size // 2), halvings + 1
    assert halvings >= 1
    assert revised.sample_size == size
    assert suggestion.applied_changes[-1].original == str(protocol.sample_size)
    assert suggestion.applied_changes[-1].revised == str(size)


def test_halving_stops_at_the_hard_minimum() -> None:
    scenario = pack(2, "ml_benchmark", "hard")
    base = feasible_protocol(scenario)
    # So many controls that no sample size fits the budget: halving bottoms out at the floor.
    controls = [*base.controls, *(f"extra control {i}" for i in range(60))]
    protocol = edit(base, sample_size=base.sample_size * 64 + 1, controls=controls)
    check = check_feasibility(protocol, scenario)
    suggestion = suggest_alternative(protocol, check, scenario)
    assert suggestion is not None
    assert suggestion.revised_protocol.sample_size == case_of(scenario).min_sample_size
    assert "budget" in suggestion.remaining_failures
    assert "protocol" not in suggestion.remaining_failures


def test_the_fixer_is_science_blind_and_never_adds_a_missing_essential() -> None:
    scenario = pack(4, "math_reasoning", "medium")
    base = feasible_protocol(scenario)
    protocol = edit(base, required_reagents=base.required_reagents[1:])
    check = check_feasibility(protocol, scenario)
    assert "reagents" in check.failed_dimensions
    suggestion = suggest_alternative(protocol, check, scenario)
    assert suggestion is not None
    assert suggestion.revised_protocol.required_reagents == protocol.required_reagents
    assert not any(change.original == "" for change in suggestion.applied_changes)
    assert "reagents" in suggestion.remaining_failures


def test_addition_that_would_break_staff_is_not_made() -> None:
    def build(scenario: NormalizedScenarioPack) -> Protocol | None:
        # Two equipment items, one essential item left out: adding it makes three (+1 staff).
        base = feasible_protocol(scenario)
        dropped = base.required_equipment[0]
        if not scenario.resource_by_name[dropped.lower()].essential:
            return None
        rescue = scenario.substitutes.get(dropped.lower(), [])
        spare = [
            r.name
            for r in scenario.resources
            if r.kind == "equipment"
            and r.available
            and not r.essential
            and r.name not in (*base.required_equipment, *rescue)
        ]
        kept = base.required_equipment[1:]
        if len(kept) + len(spare) < 2:
            return None
        return edit(base, required_equipment=[*kept, *spare][:2])

    generated, protocol = find(build, [(t, "easy") for t in BUILTIN_TEMPLATES])
    load = estimate_staff_load(protocol)
    # The same lab with exactly the staff this plan needs.
    scenario = generated.model_copy(
        update={
            "lab": generated.lab.model_copy(update={"staff_count": load}),
            "constraints": [
                c.model_copy(update={"quantity": float(load)}) if c.kind == "max_staff" else c
                for c in generated.constraints
            ],
        }
    )
    check = check_feasibility(protocol, scenario)
    assert check.failed_dimensions == ["equipment"]
    suggestion = suggest_alternative(protocol, check, scenario)
    assert suggestion is not None
    assert suggestion.applied_changes == [] and suggestion.revised_protocol == protocol
    assert suggestion.remaining_failures == ["equipment"] and not suggestion.improved
    added = edit(
        protocol,
        required_equipment=[*protocol.required_equipment, feasible_protocol(scenario).required_equipment[0]],
    )
    assert check_feasibility(added, scenario).failed_dimensions == ["staff"]


def test_swap_onto_an_item_already_requested_drops_the_original() -> None:
    def build(scenario: NormalizedScenarioPack) -> Protocol | None:
        booked = [
            r.name for r in scenario.resources if r.essential and r.kind == "equipment" and not r.available
        ]
        if not booked:
            return None
        base = feasible_protocol(scenario)  # already holds the substitute
        return edit(base, required_equipment=[*base.required_equipment, booked[0]])

    scenario, protocol = find(build)
    check = check_feasibility(protocol, scenario)
    suggestion = suggest_alternative(protocol, check, scenario)
    assert suggestion is not None and suggestion.post_check.feasible
    (change,) = suggestion.applied_changes
    assert (change.original, change.revised) == (protocol.required_equipment[-1], "")
    assert suggestion.revised_protocol.required_equipment == protocol.required_equipment[:-1]
    assert f"drop {change.original}" in compose_lab_manager_response(check, suggestion).explanation
