"""The grounded Lab Manager's policy: the action table read top to bottom, the explanations, the
pipeline check -> suggest -> compose, and a composed action that is the very one full validation
gives, whatever the renderer says."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import ValidationError

from replicalab import models
from replicalab.agents import build_baseline_scientist_action
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
    LabManagerAction,
    LabManagerActionType,
    Protocol,
    SuggestionChange,
)
from replicalab.scenarios import BUILTIN_TEMPLATES, NormalizedScenarioPack, generate_scenario
from tests.lab_plans import (
    edit,
    feasible_protocol,
    find,
    forbidden_terms,
    pack,
    paper_protocol,
    perturbations,
)
from tests.plans import COMBOS

A = LabManagerActionType
Renderer = Callable[[LabManagerActionType, FeasibilityCheckResult, AlternativeSuggestion | None], object]

# --------------------------------------------------------------------------- exports, arguments


def test_models_are_reexported_from_the_policy_module() -> None:
    assert lm.DimensionCheck is models.DimensionCheck
    assert lm.FeasibilityCheckResult is models.FeasibilityCheckResult
    assert lm.SuggestionChange is models.SuggestionChange
    assert lm.AlternativeSuggestion is models.AlternativeSuggestion
    for name in lm.__all__:
        assert hasattr(lm, name), name


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
    tainted = edit(protocol, elements=[*protocol.elements, term])
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
    for protocol in (edit(base, elements=[*base.elements, term]), edit(base, sample_size=0)):
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


def test_select_follows_the_table_top_to_bottom() -> None:
    scenario = pack(1, "math_reasoning", "hard")  # a pack whose schedule fix leaves nothing failing
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


# --------------------------------------------------------------------------- composing without revalidating
# compose_lab_manager_response builds the action without validating what it derived from the
# check; the result must be the very action full validation gives, whatever the renderer says.


def _cases() -> list[tuple[FeasibilityCheckResult, AlternativeSuggestion | None]]:
    cases = []
    for seed in range(12):
        for template in ("math_reasoning", "ml_benchmark", "finance_trading"):
            scenario = generate_scenario(seed, template, "hard")
            proposal = build_baseline_scientist_action(scenario.scientist_observation).to_protocol()
            oversized = proposal.model_copy(update={"sample_size": 900, "duration_days": 90})
            bare = Protocol(sample_size=1, technique="x", duration_days=1, rationale="r")
            # a hard lab's budget rarely funds the baseline's opening; at the minimum sample size it does
            least = next(int(c.quantity or 1) for c in scenario.constraints if c.kind == "min_sample_size")
            smallest = proposal.model_copy(update={"sample_size": least})
            for protocol in (proposal, smallest, oversized, bare):
                check = check_feasibility(protocol, scenario)
                cases.append((check, suggest_alternative(protocol, check, scenario)))
    return cases


CASES = _cases()


def _validated(
    check: FeasibilityCheckResult, suggestion: AlternativeSuggestion | None, explanation: object
) -> LabManagerAction:
    action = compose_lab_manager_response(check, suggestion)
    return LabManagerAction.model_validate({**action.__dict__, "explanation": explanation})


def test_every_answer_table_row_is_covered() -> None:
    kinds = {compose_lab_manager_response(check, s).action_type for check, s in CASES}
    assert {LabManagerActionType.ACCEPT, LabManagerActionType.SUGGEST_ALTERNATIVE} <= kinds
    assert len(kinds) >= 3


@pytest.mark.parametrize(
    "text",
    ["plain", "  padded both sides \n", "\u2003em spaces\u3000", "\x1cfile separators\x1f", "a"],
)
def test_the_action_is_the_validated_one(text: str) -> None:
    for check, suggestion in CASES:
        action = compose_lab_manager_response(check, suggestion, lambda *_: text)
        expected = _validated(check, suggestion, text)
        assert action == expected
        assert action.model_dump_json() == expected.model_dump_json()
        assert action.__pydantic_fields_set__ == expected.__pydantic_fields_set__
        default = compose_lab_manager_response(check, suggestion)
        assert (
            default.model_dump_json() == _validated(check, suggestion, default.explanation).model_dump_json()
        )


@pytest.mark.parametrize("bad", ["", "   ", "\n\t", 42, None])
def test_a_text_validation_refuses_is_refused(bad: object) -> None:
    check, suggestion = CASES[0]
    renderer: Renderer = lambda *_: bad  # noqa: E731
    with pytest.raises(ValidationError, match="explanation"):
        compose_lab_manager_response(check, suggestion, renderer)  # type: ignore[arg-type]
