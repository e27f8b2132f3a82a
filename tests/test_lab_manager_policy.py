"""The grounded Lab Manager: seven checks, the fix order, the action table.

Every scenario here is a real generated pack and every protocol is built from it (its minimal
feasible plan, the paper's own plan, and perturbations of both), so the checks are tested on the
inputs the env will feed them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import cache

import pytest
from pydantic import ValidationError

from replicalab import models
from replicalab.agents import lab_manager_policy as lm
from replicalab.agents.lab_manager_policy import compose_lab_manager_response, respond
from replicalab.lab.counter_proposal import suggest_alternative
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import (
    FEASIBILITY_DIMENSIONS,
    LAB_DIMENSIONS,
    AlternativeSuggestion,
    DimensionCheck,
    FeasibilityCheckResult,
    LabManagerActionType,
    Protocol,
    SuggestionChange,
)
from replicalab.prices import estimate_protocol_cost, estimate_staff_load
from replicalab.scenarios import (
    BUILTIN_TEMPLATES,
    DIFFICULTIES,
    NormalizedScenarioPack,
    PaperCase,
    generate_scenario,
    get_template,
    minimal_protocol,
    published_protocol,
)
from replicalab.validation import validate_protocol

A = LabManagerActionType
COMBOS = [(t, d) for t in BUILTIN_TEMPLATES for d in DIFFICULTIES]
PROPERTY_SEEDS = range(200)
SEARCH_SEEDS = range(400)
STEP_RANK = {"required_equipment": 0, "required_reagents": 1, "duration_days": 2, "sample_size": 3}


@cache
def pack(seed: int, template: str, difficulty: str) -> NormalizedScenarioPack:
    return generate_scenario(seed, template, difficulty)


def case_of(scenario: NormalizedScenarioPack) -> PaperCase:
    return next(c for c in get_template(scenario.template).cases if c.case_id == scenario.case_id)


def feasible_protocol(scenario: NormalizedScenarioPack) -> Protocol:
    """The generator's minimal plan, with each unavailable essential item swapped."""
    swaps = {
        item.name: scenario.substitutes[item.name.lower()][0]
        for item in scenario.resources
        if item.essential and not item.available
    }
    return minimal_protocol(case_of(scenario), scenario.difficulty, swaps, scenario.hidden_reference_spec)


def paper_protocol(scenario: NormalizedScenarioPack) -> Protocol:
    """The paper's own plan: full size and duration, every control, the original items."""
    return published_protocol(case_of(scenario), scenario.hidden_reference_spec)


def forbidden_terms(scenario: NormalizedScenarioPack) -> list[str]:
    return [c.term for c in scenario.constraints if c.kind == "forbidden_practice" and c.hard and c.term]


def unavailable(scenario: NormalizedScenarioPack, kind: str) -> list[str]:
    return [r.name for r in scenario.resources if r.kind == kind and not r.available]


def edit(protocol: Protocol, **changes: object) -> Protocol:
    return Protocol.model_validate({**protocol.model_dump(), **changes})


def perturbations(scenario: NormalizedScenarioPack, base: Protocol) -> Iterator[Protocol]:
    term = forbidden_terms(scenario)[0]
    booked = unavailable(scenario, "equipment")
    missing = unavailable(scenario, "reagent")
    yield base
    yield edit(base, sample_size=base.sample_size * 2)
    yield edit(base, duration_days=base.duration_days + 5)
    yield edit(base, required_equipment=[*booked, *base.required_equipment[1:]])
    yield edit(base, required_reagents=[*missing, *base.required_reagents])
    yield edit(base, controls=[])
    yield edit(base, technique=f"{base.technique} with {term}")
    yield edit(base, required_equipment=[])
    yield edit(base, required_reagents=[*base.required_reagents, "unobtainium"])
    yield edit(
        base,
        sample_size=base.sample_size * 4,
        duration_days=base.duration_days * 2,
        required_equipment=[*base.required_equipment, *booked],
    )


def find(
    build: Callable[[NormalizedScenarioPack], Protocol | None],
    combos: Sequence[tuple[str, str]] = COMBOS,
) -> tuple[NormalizedScenarioPack, Protocol]:
    """The first (pack, protocol) over seeds and combos for which `build` returns a protocol."""
    for seed in SEARCH_SEEDS:
        for template, difficulty in combos:
            scenario = pack(seed, template, difficulty)
            protocol = build(scenario)
            if protocol is not None:
                return scenario, protocol
    raise AssertionError("no generated scenario fits")


# --------------------------------------------------------------------------- exports, formulas


def test_models_are_reexported_from_the_policy_module() -> None:
    assert lm.DimensionCheck is models.DimensionCheck
    assert lm.FeasibilityCheckResult is models.FeasibilityCheckResult
    assert lm.SuggestionChange is models.SuggestionChange
    assert lm.AlternativeSuggestion is models.AlternativeSuggestion
    for name in lm.__all__:
        assert hasattr(lm, name), name


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


# --------------------------------------------------------------------------- the seven checks


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


def test_policy_understands_negation() -> None:
    scenario = pack(11, "finance_trading", "medium")
    base = feasible_protocol(scenario)
    term = forbidden_terms(scenario)[0]
    used = check_feasibility(edit(base, technique=f"{base.technique} with {term}"), scenario)
    assert used.failed_dimensions == ["policy"]
    assert any(term in r for r in used.policy.reasons)
    for negated in (f"no {term}", f"without {term}", f"we never rely on {term}"):
        check = check_feasibility(edit(base, technique=f"{base.technique}; {negated}"), scenario)
        assert check.feasible, (negated, check.summary)


def test_bad_argument_types_name_the_argument() -> None:
    scenario = pack(0, "math_reasoning", "easy")
    protocol = feasible_protocol(scenario)
    check = check_feasibility(protocol, scenario)
    with pytest.raises(TypeError, match=r"^protocol:"):
        check_feasibility(protocol.model_dump(), scenario)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^scenario:"):
        check_feasibility(protocol, "math_reasoning")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^check_result:"):
        suggest_alternative(protocol, None, scenario)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^check_result:"):
        compose_lab_manager_response({})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^suggestion:"):
        compose_lab_manager_response(check, "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^explanation_renderer:"):
        compose_lab_manager_response(check, None, "x")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the fixer


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


# --------------------------------------------------------------------------- the action table


def _row(
    scenario: NormalizedScenarioPack, protocol: Protocol
) -> tuple[models.LabManagerAction, FeasibilityCheckResult, AlternativeSuggestion | None]:
    action, check, suggestion = respond(protocol, scenario)
    assert models.LabManagerAction.model_validate(action.model_dump()) == action
    assert action.feasible == check.feasible
    for dim in FEASIBILITY_DIMENSIONS:
        assert getattr(action, f"{dim}_ok") == getattr(check, dim).ok
    return action, check, suggestion


def test_row_accept() -> None:
    scenario = pack(1, "ml_benchmark", "medium")
    action, _, _ = _row(scenario, feasible_protocol(scenario))
    assert action.action_type is A.ACCEPT and action.suggested_protocol is None


def test_row_suggest_when_improved_and_only_non_lab_failures_remain() -> None:
    def build(scenario: NormalizedScenarioPack) -> Protocol | None:
        protocol = paper_protocol(scenario)  # over budget, too long, needs unavailable items
        suggestion = respond(protocol, scenario)[2]
        return protocol if suggestion is not None and suggestion.post_check.feasible else None

    scenario, protocol = find(build, [(t, "hard") for t in BUILTIN_TEMPLATES])
    action, check, suggestion = _row(scenario, protocol)
    assert set(check.failed_dimensions) >= {"budget", "schedule"}
    assert suggestion is not None and suggestion.improved and suggestion.post_check.feasible
    assert action.action_type is A.SUGGEST_ALTERNATIVE
    assert action.suggested_protocol == suggestion.revised_protocol
    assert "The revised plan passes every check." in action.explanation
    # The same row when a policy failure survives the lab's fixes.
    term = forbidden_terms(scenario)[0]
    tainted = edit(protocol, technique=f"{protocol.technique} with {term}")
    action, _, suggestion = _row(scenario, tainted)
    assert suggestion is not None and suggestion.remaining_failures == ["policy"]
    assert action.action_type is A.SUGGEST_ALTERNATIVE
    assert "Still failing after these changes: policy." in action.explanation


def test_row_reject_when_lab_fails_and_no_suggestion() -> None:
    scenario = pack(6, "finance_trading", "hard")
    protocol = edit(feasible_protocol(scenario), duration_days=scenario.lab.time_limit_days + 3)
    check = check_feasibility(protocol, scenario)
    action = compose_lab_manager_response(check)
    assert action.action_type is A.REJECT and not action.feasible
    assert action.explanation.endswith("The lab cannot run this plan as proposed.")


def test_row_report_feasibility_when_only_policy_or_protocol_fail() -> None:
    scenario = pack(8, "math_reasoning", "easy")
    base = feasible_protocol(scenario)
    term = forbidden_terms(scenario)[0]
    for protocol in (edit(base, technique=f"{base.technique} with {term}"), edit(base, sample_size=0)):
        action, check, suggestion = _row(scenario, protocol)
        assert not set(check.failed_dimensions) & set(LAB_DIMENSIONS)
        assert suggestion is not None and not suggestion.improved
        assert action.action_type is A.REPORT_FEASIBILITY and action.suggested_protocol is None
        assert compose_lab_manager_response(check).action_type is A.REPORT_FEASIBILITY


def test_row_reject_when_the_suggestion_does_not_improve() -> None:
    scenario = pack(9, "ml_benchmark", "easy")
    base = feasible_protocol(scenario)
    protocol = edit(base, required_equipment=[*base.required_equipment, "time machine"])
    action, check, suggestion = _row(scenario, protocol)
    assert check.failed_dimensions == ["equipment"]
    assert suggestion is not None and not suggestion.improved and not suggestion.applied_changes
    assert action.action_type is A.REJECT and action.suggested_protocol is None


def test_open_row_suggest_when_improved_but_lab_failures_remain() -> None:
    def build(scenario: NormalizedScenarioPack) -> Protocol | None:
        protocol = paper_protocol(scenario)
        suggestion = respond(protocol, scenario)[2]
        if suggestion is None or not suggestion.improved:
            return None
        return protocol if set(suggestion.remaining_failures) & set(LAB_DIMENSIONS) else None

    scenario, protocol = find(build, [(t, "hard") for t in BUILTIN_TEMPLATES])
    action, _, suggestion = _row(scenario, protocol)
    assert suggestion is not None and suggestion.improved
    assert action.action_type is A.SUGGEST_ALTERNATIVE
    assert action.suggested_protocol == suggestion.revised_protocol
    remaining = ", ".join(suggestion.remaining_failures)
    assert f"Still failing after these changes: {remaining}." in action.explanation


def test_unknown_items_cannot_be_fixed_but_others_can() -> None:
    def build(scenario: NormalizedScenarioPack) -> Protocol | None:
        base = feasible_protocol(scenario)
        booked = [
            r.name for r in scenario.resources if r.essential and r.kind == "equipment" and not r.available
        ]
        if not booked:
            return None
        kept = [n for n in base.required_equipment if n != scenario.substitutes[booked[0].lower()][0]]
        return edit(
            base,
            required_equipment=[booked[0], *kept],
            required_reagents=[*base.required_reagents, "unobtainium"],
        )

    scenario, protocol = find(build)
    action, check, suggestion = _row(scenario, protocol)
    assert check.failed_dimensions == ["equipment", "reagents"]
    assert suggestion is not None and suggestion.improved
    assert suggestion.remaining_failures == ["reagents"]
    assert "unobtainium" in suggestion.revised_protocol.required_reagents
    assert action.action_type is A.SUGGEST_ALTERNATIVE


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


def test_select_follows_the_table_top_to_bottom() -> None:
    scenario = pack(2, "math_reasoning", "hard")  # a pack whose schedule fix leaves nothing failing
    base = feasible_protocol(scenario)
    ok = check_feasibility(base, scenario)
    assert lm._select_lab_manager_action_type(ok, None) is A.ACCEPT
    plan_only = check_feasibility(edit(base, sample_size=0), scenario)
    lab = check_feasibility(edit(base, duration_days=99), scenario)
    fixed = suggest_alternative(edit(base, duration_days=99), lab, scenario)
    assert fixed is not None and fixed.improved
    assert lm._select_lab_manager_action_type(lab, fixed) is A.SUGGEST_ALTERNATIVE
    assert lm._select_lab_manager_action_type(lab, None) is A.REJECT
    assert lm._select_lab_manager_action_type(plan_only, None) is A.REPORT_FEASIBILITY
    stuck = fixed.model_copy(update={"improved": False, "remaining_failures": ["schedule"]})
    assert lm._select_lab_manager_action_type(lab, stuck) is A.REJECT
    # An improving suggestion beats "only protocol fails": the table is read top to bottom.
    assert lm._select_lab_manager_action_type(plan_only, fixed) is A.SUGGEST_ALTERNATIVE


# --------------------------------------------------------------------------- explanations


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_explanations_never_leak_the_hidden_spec(template: str, difficulty: str) -> None:
    for seed in range(40):
        scenario = pack(seed, template, difficulty)
        hidden = [e.lower() for e in scenario.hidden_reference_spec.required_elements]
        for base in (feasible_protocol(scenario), paper_protocol(scenario)):
            for protocol in perturbations(scenario, base):
                action, check, _ = respond(protocol, scenario)
                text = action.explanation.lower()
                assert not any(element in text for element in hidden), action.explanation
                for dim in check.failed_dimensions:
                    assert f"{dim}:" in action.explanation
                    for reason in getattr(check, dim).reasons:
                        assert reason in action.explanation
                        assert "does not address" not in reason


def test_explanation_lists_the_changes() -> None:
    scenario = pack(12, "finance_trading", "medium")
    action, _, suggestion = respond(paper_protocol(scenario), scenario)
    assert suggestion is not None and suggestion.applied_changes
    for change in suggestion.applied_changes:
        assert change.tradeoff in action.explanation
        assert change.reason in action.explanation


def test_renderer_replaces_the_explanation() -> None:
    scenario = pack(3, "ml_benchmark", "hard")
    protocol = paper_protocol(scenario)
    seen: list[tuple[LabManagerActionType, FeasibilityCheckResult, AlternativeSuggestion | None]]
    seen = []

    def renderer(
        kind: LabManagerActionType,
        check: FeasibilityCheckResult,
        suggestion: AlternativeSuggestion | None,
    ) -> str:
        seen.append((kind, check, suggestion))
        return f"{kind.value}: {len(check.failed_dimensions)} failing"

    action, check, suggestion = respond(protocol, scenario, renderer)
    assert seen == [(action.action_type, check, suggestion)]
    assert action.explanation == f"{action.action_type.value}: {len(check.failed_dimensions)} failing"
    with pytest.raises(ValidationError, match="explanation"):
        respond(protocol, scenario, lambda *_: "   ")


def test_respond_is_check_then_suggest_then_compose() -> None:
    scenario = pack(13, "math_reasoning", "medium")
    protocol = paper_protocol(scenario)
    action, check, suggestion = respond(protocol, scenario)
    assert check == check_feasibility(protocol, scenario)
    assert suggestion == suggest_alternative(protocol, check, scenario)
    assert action == compose_lab_manager_response(check, suggestion)
    assert isinstance(check.protocol, DimensionCheck)
    assert suggestion is not None
    assert all(isinstance(c, SuggestionChange) for c in suggestion.applied_changes)
