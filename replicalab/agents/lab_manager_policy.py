"""The reference (grounded) Lab Manager: answer a protocol from the lab's check and offer.

Pipeline::

    check_feasibility(protocol, scenario)          -> FeasibilityCheckResult (7 dimensions)
    suggest_alternative(protocol, check, scenario) -> AlternativeSuggestion | None
    compose_lab_manager_response(check, suggestion, explanation_renderer) -> LabManagerAction
    respond(protocol, scenario, renderer)          -> all three in one call

The check and the offer are the lab's facts, part of the rules (`replicalab.lab.feasibility`,
`replicalab.lab.counter_proposal`; re-exported here under the agents module's names); this
module is the policy that answers from them. The answer follows the table, read top to bottom: all seven pass
-> accept; an improving suggestion that leaves only protocol/policy failures ->
suggest_alternative; lab failures and no suggestion -> reject; only protocol/policy fail ->
report_feasibility; a suggestion that does not improve -> reject; and the case the table leaves
open (improved, lab failures remain) -> suggest_alternative, with the explanation listing what
remains.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

from replicalab.checks import require
from replicalab.lab.counter_proposal import suggest_alternative
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import (
    FLAG_FIELDS,
    LAB_DIMENSIONS,
    AlternativeSuggestion,
    DimensionCheck,
    FeasibilityCheckResult,
    LabManagerAction,
    LabManagerActionType,
    Protocol,
    SuggestionChange,
    clip_text,
)
from replicalab.scenarios.types import NormalizedScenarioPack

if TYPE_CHECKING:
    from replicalab.episode import Episode

__all__ = [
    "AlternativeSuggestion",
    "DimensionCheck",
    "ExplanationRenderer",
    "FeasibilityCheckResult",
    "SuggestionChange",
    "check_feasibility",
    "compose_lab_manager_response",
    "grounded_lab_response",
    "respond",
    "suggest_alternative",
]

ExplanationRenderer = Callable[
    [LabManagerActionType, FeasibilityCheckResult, AlternativeSuggestion | None], str
]
"""Replaces the default explanation: (action type, check, suggestion) -> text."""

_NOTHING_ON_THE_TABLE = LabManagerAction(
    action_type=LabManagerActionType.REPORT_FEASIBILITY,
    feasible=False,
    **dict.fromkeys(FLAG_FIELDS, False),
    explanation="No protocol has been proposed yet.",
)


def _select_lab_manager_action_type(
    check: FeasibilityCheckResult, suggestion: AlternativeSuggestion | None
) -> LabManagerActionType:
    """The answer table, read top to bottom; its last row is the case the table leaves open."""
    if check.feasible:
        return LabManagerActionType.ACCEPT
    failed = check.failed_dimensions
    lab_fails = any(dim in LAB_DIMENSIONS for dim in failed)
    if suggestion is None:
        return LabManagerActionType.REJECT if lab_fails else LabManagerActionType.REPORT_FEASIBILITY
    lab_remains = any(dim in LAB_DIMENSIONS for dim in suggestion.remaining_failures)
    if suggestion.improved and not lab_remains:
        return LabManagerActionType.SUGGEST_ALTERNATIVE
    if not lab_fails:
        return LabManagerActionType.REPORT_FEASIBILITY
    if not suggestion.improved:
        return LabManagerActionType.REJECT
    return LabManagerActionType.SUGGEST_ALTERNATIVE  # improved, lab failures remain: say what remains


def _render_change(change: SuggestionChange) -> str:
    if not change.original:
        edit = f"add {change.revised}"
    elif not change.revised:
        edit = f"drop {change.original}"
    else:
        edit = f"{change.original} -> {change.revised}"
    return f"{change.field}: {edit} ({change.reason}; tradeoff: {change.tradeoff})"


def _accepted(cost: float, staff: int) -> str:
    return f"Feasible: all seven checks pass (estimated cost {cost:g} credits, {staff} staff)."


def _default_explanation(
    action_type: LabManagerActionType,
    check: FeasibilityCheckResult,
    suggestion: AlternativeSuggestion | None,
) -> str:
    if action_type is LabManagerActionType.ACCEPT:
        return _accepted(check.estimated_cost, check.required_staff)
    lines = ["Not feasible as proposed."]
    lines.extend(f"{dim}: {'; '.join(getattr(check, dim).reasons)}." for dim in check.failed_dimensions)
    if action_type is LabManagerActionType.SUGGEST_ALTERNATIVE and suggestion is not None:
        lines.append("Suggested changes: " + "; ".join(map(_render_change, suggestion.applied_changes)) + ".")
        remaining = suggestion.remaining_failures
        lines.append(
            f"Still failing after these changes: {', '.join(remaining)}."
            if remaining
            else "The revised plan passes every check."
        )
    elif action_type is LabManagerActionType.REPORT_FEASIBILITY:
        lines.append("The lab can supply what the plan needs; the plan itself must change.")
    elif suggestion is None:
        lines.append("The lab cannot run this plan as proposed.")
    else:
        lines.append(
            "No substitution, shorter schedule or smaller sample the lab can offer "
            "fixes the lab-side failures."
        )
    return "\n".join(lines)


def compose_lab_manager_response(
    check_result: FeasibilityCheckResult,
    suggestion: AlternativeSuggestion | None = None,
    explanation_renderer: ExplanationRenderer | None = None,
) -> LabManagerAction:
    """The typed Lab Manager action for a grounded check (and the suggestion made from it)."""
    require(check_result, FeasibilityCheckResult, "check_result")
    if suggestion is not None:
        require(suggestion, AlternativeSuggestion, "suggestion")
    if explanation_renderer is not None and not callable(explanation_renderer):
        raise TypeError(
            f"explanation_renderer: expected a callable, got {type(explanation_renderer).__name__}"
        )
    if explanation_renderer is None and check_result.feasible:
        return _acceptance(check_result.estimated_cost, check_result.required_staff)
    action_type = _select_lab_manager_action_type(check_result, suggestion)
    suggested = None
    if action_type is LabManagerActionType.SUGGEST_ALTERNATIVE and suggestion is not None:
        suggested = suggestion.revised_protocol
    if explanation_renderer is None:
        explanation = clip_text(_default_explanation(action_type, check_result, suggestion))
    else:
        explanation = explanation_renderer(action_type, check_result, suggestion)
    # The table keeps the action's rules: it accepts only when every flag passes, rejects only
    # when one fails, and suggests a protocol exactly with suggest_alternative.
    if suggested is None and explanation_renderer is None:
        return _shared_answer(action_type, check_result.flags, explanation)
    return _answer(action_type, check_result.flags, explanation, suggested)


def _answer(
    action_type: LabManagerActionType,
    flags: tuple[bool, ...],
    explanation: str,
    suggested: Protocol | None = None,
) -> LabManagerAction:
    return LabManagerAction(
        action_type=action_type,
        feasible=all(flags),
        **dict(zip(FLAG_FIELDS, flags, strict=True)),
        suggested_protocol=suggested,
        explanation=explanation,
    )


# An answer in the default words without a suggestion is a frozen value that recurs across packs
# (the same failures, the same words): shared, most cost a lookup.
_shared_answer = lru_cache(maxsize=1024)(_answer)


@lru_cache(maxsize=1024)  # the commonest answer reads two numbers, which recur across packs: ~2 %
def _acceptance(cost: float, staff: int) -> LabManagerAction:
    """The default answer to a check that passes (a frozen value, shared)."""
    return LabManagerAction(
        action_type=LabManagerActionType.ACCEPT,
        feasible=True,
        **dict.fromkeys(FLAG_FIELDS, True),
        explanation=_accepted(cost, staff),
    )


def respond(
    protocol: Protocol,
    scenario: NormalizedScenarioPack,
    renderer: ExplanationRenderer | None = None,
) -> tuple[LabManagerAction, FeasibilityCheckResult, AlternativeSuggestion | None]:
    """The reference Lab Manager's turn: check, suggest, compose."""
    check = check_feasibility(protocol, scenario)
    suggestion = suggest_alternative(protocol, check, scenario)
    return compose_lab_manager_response(check, suggestion, renderer), check, suggestion


def grounded_lab_response(episode: Episode) -> LabManagerAction:
    """What the reference Lab Manager answers now in `episode`: its response to the episode's
    grounded check and offer, or a report that nothing is on the table yet."""
    check = episode.check
    if check is None:
        return _NOTHING_ON_THE_TABLE
    return compose_lab_manager_response(check, episode.suggestion)
