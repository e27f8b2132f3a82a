"""`compose_lab_manager_response` builds the action without validating what it derived from the
check; the result must be the very action full validation gives, whatever the renderer says."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import ValidationError

from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import compose_lab_manager_response
from replicalab.lab.counter_proposal import suggest_alternative
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import (
    AlternativeSuggestion,
    FeasibilityCheckResult,
    LabManagerAction,
    LabManagerActionType,
    Protocol,
)
from replicalab.scenarios import generate_scenario

Renderer = Callable[[LabManagerActionType, FeasibilityCheckResult, AlternativeSuggestion | None], object]


def _cases() -> list[tuple[FeasibilityCheckResult, AlternativeSuggestion | None]]:
    cases = []
    for seed in range(12):
        for template in ("math_reasoning", "ml_benchmark", "finance_trading"):
            pack = generate_scenario(seed, template, "hard")
            proposal = build_baseline_scientist_action(pack.scientist_observation).to_protocol()
            oversized = proposal.model_copy(update={"sample_size": 900, "duration_days": 90})
            bare = Protocol(sample_size=1, technique="x", duration_days=1, rationale="r")
            for protocol in (proposal, oversized, bare):
                check = check_feasibility(protocol, pack)
                cases.append((check, suggest_alternative(protocol, check, pack)))
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
