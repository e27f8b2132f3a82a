"""`check_feasibility` reads its seven dimensions off one validation pass plus the lab's own
numbers; a plan validation finds clean must still answer to the lab's budget and staff, and the
shared parts of a passing check and its answer must not leak between checks. Every scenario is a
real generated pack and every protocol is built from it."""

from __future__ import annotations

import pytest

from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import compose_lab_manager_response, respond
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import FEASIBILITY_DIMENSIONS, LabManagerAction, LabManagerActionType, Protocol
from replicalab.prices import estimate_protocol_cost, estimate_staff_load
from replicalab.scenarios import BUILTIN_TEMPLATES, generate_scenario
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.validation import validate_protocol
from tests.lab_plans import (
    PROPERTY_SEEDS,
    edit,
    feasible_protocol,
    find,
    forbidden_terms,
    pack,
    paper_protocol,
)
from tests.plans import COMBOS

A = LabManagerActionType


def _accepted_proposals() -> list[tuple[NormalizedScenarioPack, LabManagerAction]]:
    found = []
    for template in BUILTIN_TEMPLATES:
        for seed in range(30):
            scenario = generate_scenario(seed, template, "easy")
            protocol = build_baseline_scientist_action(scenario.scientist_observation).to_protocol()
            action, check, _ = respond(protocol, scenario)
            if check.feasible:
                found.append((scenario, action))
    return found


def test_the_lab_numbers_bind_when_no_constraint_states_them() -> None:
    for scenario, _ in _accepted_proposals()[:20]:
        protocol = build_baseline_scientist_action(scenario.scientist_observation).to_protocol()
        passing = check_feasibility(protocol, scenario)
        cost, staff = passing.estimated_cost, passing.required_staff
        silent = scenario.model_copy(
            update={
                "constraints": [c for c in scenario.constraints if c.kind not in ("max_budget", "max_staff")],
                "lab": scenario.lab.model_copy(
                    update={"budget_remaining": cost - 10.0, "staff_count": staff - 1}
                ),
            }
        )
        check = check_feasibility(protocol, silent)
        assert check.validation_result.issues == [], scenario.scenario_id
        assert check.failed_dimensions == ["budget", "staff"], scenario.scenario_id
        assert check.budget.reasons == [
            f"estimated cost {cost:g} exceeds the remaining budget of {cost - 10.0:g} credits"
        ]
        assert check.staff.reasons == [f"needs {staff} staff but the lab has {staff - 1}"]


def test_a_passing_check_is_a_fresh_value_with_every_dimension_clean() -> None:
    cases = _accepted_proposals()
    assert len(cases) > 20
    checks = []
    for scenario, action in cases:
        protocol = build_baseline_scientist_action(scenario.scientist_observation).to_protocol()
        check = check_feasibility(protocol, scenario)
        checks.append(check)
        assert all(
            getattr(check, dim).ok and not getattr(check, dim).reasons for dim in FEASIBILITY_DIMENSIONS
        )
        assert check.substitution_options == {}
        again = compose_lab_manager_response(check)
        assert again == action
        assert again.action_type is LabManagerActionType.ACCEPT and again.suggested_protocol is None
        assert again.explanation == (
            f"Feasible: all seven checks pass (estimated cost {check.estimated_cost:g} credits, "
            f"{check.required_staff} staff)."
        )
    assert len({id(check) for check in checks}) == len(checks)  # callers memoise on a check's identity


@pytest.mark.parametrize(
    ("protocol", "cost", "staff"),
    [
        # 12·10 + 6·50 + 3·25 + 3·100 + 1·75 ; 1 + controls>2 + days>5 + equipment>2
        (
            Protocol(
                sample_size=12,
                controls=["a", "b", "c"],
                duration_days=6,
                required_equipment=["x", "y", "z"],
                required_reagents=["r"],
            ),
            870.0,
            4,
        ),
        # 21·10 + 5·50 + 0 + 2·100 + 2·75 ; 1 + sample>20
        (
            Protocol(
                sample_size=21, duration_days=5, required_equipment=["x", "y"], required_reagents=["r", "s"]
            ),
            810.0,
            2,
        ),
        # all thresholds exactly at the boundary: nothing extra
        (
            Protocol(sample_size=20, controls=["a", "b"], duration_days=5, required_equipment=["x", "y"]),
            200.0 + 250 + 50 + 200,
            1,
        ),
        (Protocol(), 0.0, 1),
    ],
)
def test_cost_and_staff_formulas_are_the_seeds(protocol: Protocol, cost: float, staff: int) -> None:
    assert estimate_protocol_cost(protocol) == cost
    assert estimate_staff_load(protocol) == staff
    scenario = pack(0, "math_reasoning", "easy")
    check = check_feasibility(protocol, scenario)
    assert check.estimated_cost == cost
    assert check.required_staff == staff


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_every_pack_accepts_its_minimal_plan(template: str, difficulty: str) -> None:
    for seed in PROPERTY_SEEDS:
        scenario = pack(seed, template, difficulty)
        protocol = feasible_protocol(scenario)
        action, check, suggestion = respond(protocol, scenario)
        assert check.feasible, (scenario.scenario_id, check.summary)
        assert all(getattr(check, dim).reasons == [] for dim in FEASIBILITY_DIMENSIONS)
        assert suggestion is None
        assert action.action_type is A.ACCEPT and action.suggested_protocol is None


def test_check_is_deterministic_and_carries_its_validation() -> None:
    scenario = pack(7, "ml_benchmark", "hard")
    protocol = paper_protocol(scenario)
    first = respond(protocol, scenario)
    again = respond(protocol, generate_scenario(7, "ml_benchmark", "hard"))
    assert first == again
    check = first[1]
    assert check.validation_result == validate_protocol(protocol, scenario, include_reference=False)
    assert all(issue.category != "reference" for issue in check.validation_result.issues)


def test_booked_item_fails_even_with_a_substitute() -> None:
    def build(scenario: NormalizedScenarioPack) -> Protocol | None:
        essential = [
            r for r in scenario.resources if r.essential and r.kind == "equipment" and not r.available
        ]
        if not essential:
            return None
        base = feasible_protocol(scenario)
        swapped = scenario.substitutes[essential[0].name.lower()][0]
        kept = [n for n in base.required_equipment if n != swapped]
        return edit(base, required_equipment=[essential[0].name, *kept])

    scenario, protocol = find(build)
    booked = protocol.required_equipment[0]
    check = check_feasibility(protocol, scenario)
    subs = scenario.substitutes[booked.lower()]
    assert check.failed_dimensions == ["equipment"]
    assert check.substitution_options == {booked: subs}
    assert any(booked in r and "booked" in r and subs[0] in r for r in check.equipment.reasons)


def test_unknown_and_missing_items_fail() -> None:
    scenario = pack(3, "finance_trading", "easy")
    base = feasible_protocol(scenario)
    unknown = check_feasibility(
        edit(base, required_equipment=[*base.required_equipment, "time machine"]), scenario
    )
    assert unknown.failed_dimensions == ["equipment"]
    assert any("time machine" in r for r in unknown.equipment.reasons)
    # A plan that requests nothing is not automatically feasible.
    bare = check_feasibility(edit(base, required_equipment=[], required_reagents=[]), scenario)
    assert {"equipment", "reagents"} <= set(bare.failed_dimensions)
    assert any("needs" in r for r in bare.equipment.reasons)


def test_lab_numbers_fail_their_dimensions() -> None:
    scenario = pack(5, "math_reasoning", "hard")
    base = feasible_protocol(scenario)
    lab = scenario.lab
    late = check_feasibility(edit(base, duration_days=lab.time_limit_days + 1), scenario)
    assert "schedule" in late.failed_dimensions
    big = edit(base, sample_size=base.sample_size + int(lab.budget_remaining))
    over = check_feasibility(big, scenario)
    assert over.estimated_cost > lab.budget_remaining
    assert "budget" in over.failed_dimensions
    crowded = check_feasibility(
        edit(big, controls=[*base.controls, "extra check", "another check"], duration_days=6), scenario
    )
    assert crowded.required_staff > lab.staff_count  # more samples and controls add people
    assert "staff" in crowded.failed_dimensions
    small = check_feasibility(edit(base, sample_size=1), scenario)
    assert small.failed_dimensions == ["protocol"]


def test_policy_reads_the_claims_and_no_negation_fools_it() -> None:
    scenario = pack(11, "finance_trading", "medium")
    base = feasible_protocol(scenario)
    term = forbidden_terms(scenario)[0]
    used = check_feasibility(edit(base, technique=term), scenario)
    assert used.failed_dimensions == ["policy"]
    assert any(term in r for r in used.policy.reasons)
    for negated in (f"no {term}", f"without {term}", f"we never rely on {term}"):
        check = check_feasibility(edit(base, rationale=negated), scenario)
        assert check.feasible, (negated, check.summary)
        assert check_feasibility(edit(base, rationale=term), scenario).feasible  # prose is not a claim
