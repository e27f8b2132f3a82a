"""The grounded Lab Manager: check a protocol against the lab, propose a fix, answer in one action.

Everything here is a pure function of the protocol and the scenario pack, so the env can back a
learned Lab Manager with the same verdict the judge reads, and an episode replays byte for byte.

Pipeline (seed, AGT 05-07)::

    check_feasibility(protocol, scenario)          -> FeasibilityCheckResult (7 dimensions)
    suggest_alternative(protocol, check, scenario) -> AlternativeSuggestion | None
    compose_lab_manager_response(check, suggestion, explanation_renderer) -> LabManagerAction
    respond(protocol, scenario, renderer)          -> all three in one call

The check runs validation once (`lab_issues`: `validate_protocol` without the hidden-reference
warnings, given the cost and staff the check estimates anyway) and hands each dimension its share
of the errors, then adds what the lab knows beyond validation: the lab cannot supply an item it
does not list, nor a booked or out-of-stock item even when a substitute exists (the reason names
the substitute), and the budget and staff are compared with the lab's own numbers. A dimension's
`reasons` say why it fails and are empty when it passes. Hidden-reference warnings never reach a
reason, so nothing the Lab Manager says leaks the hidden spec.

The fixer applies the seed's steps in order: swap unavailable equipment, then reagents, for
their first available allowed substitute (and add a missing essential item, or its substitute);
clamp the duration to the time limit; halve the sample size until the budget fits (at most ten
halvings, never below 1 nor below a hard minimum sample size). Every step but the additions can
only lower cost, staff and duration, so it cannot add a failure; when the additions do (an extra
item can break the budget or the staff), the plan is rebuilt without them. Hence a suggestion
never fails a dimension its protocol passed. In a `SuggestionChange` an empty `original` means
an addition and an empty `revised` a removal (a swap whose substitute is already in the plan).

The answer follows the seed's table, read top to bottom: all seven pass -> accept; an improving
suggestion that leaves only protocol/policy failures -> suggest_alternative; lab failures and no
suggestion -> reject; only protocol/policy fail -> report_feasibility; a suggestion that does not
improve -> reject; and the case the table leaves open (improved, lab failures remain) ->
suggest_alternative, with the explanation listing what remains (spec §4).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from replicalab.lab_costs import estimate_protocol_cost, estimate_staff_load
from replicalab.models import (
    FEASIBILITY_DIMENSIONS,
    LAB_DIMENSIONS,
    MAX_LIST_ITEMS,
    AlternativeSuggestion,
    DimensionCheck,
    FeasibilityCheckResult,
    LabManagerAction,
    LabManagerActionType,
    Protocol,
    Substitution,
    SuggestionChange,
    ValidationResult,
    clip_text,
    construct,
)
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.validation import lab_issues

__all__ = [
    "AlternativeSuggestion",
    "DimensionCheck",
    "ExplanationRenderer",
    "FeasibilityCheckResult",
    "SuggestionChange",
    "check_feasibility",
    "compose_lab_manager_response",
    "respond",
    "suggest_alternative",
]

ExplanationRenderer = Callable[
    [LabManagerActionType, FeasibilityCheckResult, AlternativeSuggestion | None], str
]
"""Replaces the default explanation: (action type, check, suggestion) -> text."""

_estimate_protocol_cost = estimate_protocol_cost  # the seed's names for the shared formulas
_estimate_staff_load = estimate_staff_load

_MAX_HALVINGS = 10
_ITEM_FIELD = {"equipment": "required_equipment", "reagent": "required_reagents"}
_UNAVAILABLE = {"equipment": "booked", "reagent": "out of stock"}
_PASS = DimensionCheck()  # shared by every passing dimension (values are frozen: never mutate)
_ALL_PASS = (_PASS,) * len(FEASIBILITY_DIMENSIONS)  # the seven dimensions of a passing check
_ALL_OK = (True,) * len(FEASIBILITY_DIMENSIONS)  # and its flags
_CLEAN = ValidationResult()  # what validation says of a plan it finds nothing wrong with (shared)


def _require(value: object, cls: type, name: str) -> None:
    if not isinstance(value, cls):
        raise TypeError(f"{name}: expected {cls.__name__}, got {type(value).__name__}")


# --------------------------------------------------------------------------- the seven checks


def _errors_by_dimension(validation: ValidationResult) -> dict[str, list[str]]:
    """Error messages per dimension that validation raised any issue in (a warning adds the key,
    not a message); an issue of an unknown category counts against the protocol."""
    errors: dict[str, list[str]] = {}
    for issue in validation.issues:
        if issue.category == "reference":
            continue
        dim = issue.category if issue.category in FEASIBILITY_DIMENSIONS else "protocol"
        messages = errors.setdefault(dim, [])
        if issue.severity == "error":
            messages.append(issue.message)
    return errors


def _dimension(reasons: list[str]) -> DimensionCheck:
    return construct(DimensionCheck, ok=False, reasons=reasons) if reasons else _PASS


def _build_protocol_check(errors: dict[str, list[str]]) -> DimensionCheck:
    """The plan's own validity: validate_protocol's impossible values and violated hard rules."""
    return _dimension(errors.get("protocol", []))


def _within_lab(reasons: list[str], over: bool, reason: str) -> DimensionCheck:
    """Validation's reasons against a limit; failing those, the lab's own limit (which holds even
    when no constraint states it)."""
    return _dimension(reasons if reasons or not over else [reason])


def _check_budget(
    cost: float, scenario: NormalizedScenarioPack, errors: dict[str, list[str]]
) -> DimensionCheck:
    remaining = scenario.lab.budget_remaining
    return _within_lab(
        errors.get("budget", []),
        cost > remaining,
        f"estimated cost {cost:g} exceeds the remaining budget of {remaining:g} credits",
    )


def _check_items(
    requested: list[str],
    scenario: NormalizedScenarioPack,
    kind: str,
    errors: list[str] | None,
    options: dict[str, list[str]],
) -> DimensionCheck:
    """Validation's item errors, plus the items the lab cannot hand over as asked.

    Validation flags every such item, so when it raised nothing about the dimension (`errors`
    is None) the items pass without a second walk.
    """
    if errors is None:
        return _PASS
    known = scenario.resource_by_name
    reasons: list[str] = []
    seen: set[str] = set()
    for name in requested:
        key = name.lower()
        if key in seen:
            continue
        seen.add(key)
        item = known.get(key)
        if item is None or item.kind != kind:
            reasons.append(f"the lab has no {kind} named {name}")
        elif not item.available:
            subs = scenario.substitutes.get(key)
            if subs:  # without one, validation has already reported the item as an error
                options[name] = list(subs)
                reasons.append(f"{name} is {_UNAVAILABLE[kind]}; the lab can offer {subs[0]}")
    return _dimension(reasons + errors)


def _check_equipment(
    protocol: Protocol,
    scenario: NormalizedScenarioPack,
    errors: dict[str, list[str]],
    options: dict[str, list[str]],
) -> DimensionCheck:
    return _check_items(protocol.required_equipment, scenario, "equipment", errors.get("equipment"), options)


def _check_reagents(
    protocol: Protocol,
    scenario: NormalizedScenarioPack,
    errors: dict[str, list[str]],
    options: dict[str, list[str]],
) -> DimensionCheck:
    return _check_items(protocol.required_reagents, scenario, "reagent", errors.get("reagents"), options)


def _check_schedule(errors: dict[str, list[str]]) -> DimensionCheck:
    """Validation already compares duration_days with time_limit_days and the duration cap."""
    return _dimension(errors.get("schedule", []))


def _check_staff(
    staff: int, scenario: NormalizedScenarioPack, errors: dict[str, list[str]]
) -> DimensionCheck:
    available = scenario.lab.staff_count
    return _within_lab(
        errors.get("staff", []), staff > available, f"needs {staff} staff but the lab has {available}"
    )


def _check_policy(errors: dict[str, list[str]]) -> DimensionCheck:
    """Hard forbidden practices the plan affirms (validation reads them negation-aware)."""
    return _dimension(errors.get("policy", []))


def check_feasibility(protocol: Protocol, scenario: NormalizedScenarioPack) -> FeasibilityCheckResult:
    """Run the seven dimension checks on `protocol` in `scenario`; deterministic, no LLM."""
    _require(protocol, Protocol, "protocol")  # validate_protocol's errors, word for word
    _require(scenario, NormalizedScenarioPack, "scenario")
    cost = _estimate_protocol_cost(protocol)
    staff = _estimate_staff_load(protocol)
    issues = lab_issues(protocol, scenario, cost, staff)
    lab = scenario.lab
    options: dict[str, list[str]] = {}
    dimensions, validation = _ALL_PASS, _CLEAN  # when validation raised nothing and the lab's numbers hold
    if issues or cost > lab.budget_remaining or staff > lab.staff_count:
        validation = construct(ValidationResult, issues=issues)
        errors = _errors_by_dimension(validation)
        dimensions = (
            _build_protocol_check(errors),
            _check_budget(cost, scenario, errors),
            _check_equipment(protocol, scenario, errors, options),
            _check_reagents(protocol, scenario, errors, options),
            _check_schedule(errors),
            _check_staff(staff, scenario, errors),
            _check_policy(errors),
        )
    protocol_check, budget, equipment, reagents, schedule, staff_check, policy = dimensions
    # A new check every call, even when its parts are shared: callers memoise on its identity.
    return construct(
        FeasibilityCheckResult,
        protocol=protocol_check,
        budget=budget,
        equipment=equipment,
        reagents=reagents,
        schedule=schedule,
        staff=staff_check,
        policy=policy,
        estimated_cost=cost,
        required_staff=staff,
        substitution_options=options,
        validation_result=validation,
    )


# --------------------------------------------------------------------------- the fixer


def _with(protocol: Protocol, **changes: object) -> Protocol:
    """`protocol` with some fields replaced by values the fixer derived from valid ones."""
    return construct(Protocol, **{**protocol.__dict__, **changes})


def _change(field: str, original: str, revised: str, reason: str, tradeoff: str) -> SuggestionChange:
    return construct(
        SuggestionChange, field=field, original=original, revised=revised, reason=reason, tradeoff=tradeoff
    )


def _first_substitute(scenario: NormalizedScenarioPack, name: str) -> Substitution | None:
    """The swap behind `scenario.substitutes[name][0]`: the first allowed one the lab has."""
    key = name.lower()
    for sub in scenario.allowed_substitutions:
        if sub.original_key == key:
            alternative = scenario.resource_by_name.get(sub.alternative_key)
            if alternative is not None and alternative.available:
                return sub
    return None


def _swap_unavailable(
    items: list[str], scenario: NormalizedScenarioPack, kind: str, changes: list[SuggestionChange]
) -> list[str]:
    """Each unavailable item replaced by its first available allowed substitute."""
    revised: list[str] = []
    for name in items:
        item = scenario.resource_by_name.get(name.lower())
        sub = None
        if item is not None and item.kind == kind and not item.available:
            sub = _first_substitute(scenario, name)
        if sub is None:
            revised.append(name)
            continue
        reason = f"{name} is {_UNAVAILABLE[kind]}"
        if sub.alternative_key in {n.lower() for n in (*items, *revised)}:
            reason, replacement = f"{reason}; {sub.alternative} is already in the plan", ""
        else:
            replacement = sub.alternative
            revised.append(replacement)
        changes.append(_change(_ITEM_FIELD[kind], name, replacement, reason, sub.tradeoff))
    return revised


def _add_missing_essentials(
    items: list[str], scenario: NormalizedScenarioPack, kind: str, changes: list[SuggestionChange]
) -> list[str]:
    """Each essential item the plan lacks, added itself when available, else its substitute,
    while the list has room (`MAX_LIST_ITEMS`: a suggestion is a protocol, and keeps its caps)."""
    asked = {name.lower() for name in items}
    revised = list(items)
    for item, in_lab, _ in scenario.essentials:
        if item.kind != kind or not in_lab.isdisjoint(asked):
            continue
        if len(revised) >= MAX_LIST_ITEMS:
            break
        if item.available:
            added, tradeoff = item.name, "one more item to pay for and schedule"
        else:
            sub = _first_substitute(scenario, item.name)
            if sub is None:  # nothing the lab has can stand in: the failure remains
                continue
            added, tradeoff = sub.alternative, sub.tradeoff
        revised.append(added)
        asked.add(added.lower())
        changes.append(_change(_ITEM_FIELD[kind], "", added, f"the method needs {item.name}", tradeoff))
    return revised


class _Limits(NamedTuple):
    """The bounds the fixer steers to: the lab's numbers tightened by its hard constraints."""

    budget: float  # credits the plan may cost
    days: int  # longest allowed duration
    min_samples: int  # smallest sample size halving may reach


def _limits(scenario: NormalizedScenarioPack) -> _Limits:
    budget, days, min_samples = scenario.lab.budget_remaining, scenario.lab.time_limit_days, 1
    for c in scenario.constraints:
        if not c.hard or c.quantity is None:
            continue
        if c.kind == "max_budget":
            budget = min(budget, c.quantity)
        elif c.kind == "max_duration_days":
            days = min(days, math.floor(c.quantity))
        elif c.kind == "min_sample_size":
            min_samples = max(min_samples, math.ceil(c.quantity))
    return _Limits(budget, days, min_samples)


def _halve_to_budget(protocol: Protocol, limits: _Limits, changes: list[SuggestionChange]) -> Protocol:
    """Halve the sample size until the cost fits the budget, stopping at the hard minimum."""
    cost = _estimate_protocol_cost(protocol)
    size = protocol.sample_size
    if cost <= limits.budget or size <= limits.min_samples:
        return protocol
    for _ in range(_MAX_HALVINGS):
        size = max(limits.min_samples, size // 2)
        if size == limits.min_samples or _estimate_protocol_cost(protocol, size) <= limits.budget:
            break
    changes.append(
        _change(
            "sample_size",
            str(protocol.sample_size),
            str(size),
            f"estimated cost {cost:g} exceeds the budget of {limits.budget:g} credits",
            "fewer samples: less statistical power",
        )
    )
    return _with(protocol, sample_size=size)


def _revise(
    protocol: Protocol,
    check: FeasibilityCheckResult,
    scenario: NormalizedScenarioPack,
    add_missing: bool,
) -> tuple[Protocol, list[SuggestionChange]]:
    """The seed's fix order: equipment, reagents, duration clamp, sample-size halving."""
    limits = _limits(scenario)
    changes: list[SuggestionChange] = []
    equipment, reagents = protocol.required_equipment, protocol.required_reagents
    if not check.equipment.ok:
        equipment = _swap_unavailable(equipment, scenario, "equipment", changes)
        if add_missing:
            equipment = _add_missing_essentials(equipment, scenario, "equipment", changes)
    if not check.reagents.ok:
        reagents = _swap_unavailable(reagents, scenario, "reagent", changes)
        if add_missing:
            reagents = _add_missing_essentials(reagents, scenario, "reagent", changes)
    duration = protocol.duration_days
    if duration > limits.days >= 1:
        changes.append(
            _change(
                "duration_days",
                str(duration),
                str(limits.days),
                f"{duration} days is over the {limits.days}-day limit",
                "less time: the schedule has no slack for reruns",
            )
        )
        duration = limits.days
    revised = protocol
    if changes:
        revised = _with(
            protocol, required_equipment=equipment, required_reagents=reagents, duration_days=duration
        )
    return _halve_to_budget(revised, limits, changes), changes


def suggest_alternative(
    protocol: Protocol, check_result: FeasibilityCheckResult, scenario: NormalizedScenarioPack
) -> AlternativeSuggestion | None:
    """The revised protocol the lab can offer; None exactly when `check_result` is feasible.

    `check_result` must be `check_feasibility(protocol, scenario)`.
    """
    _require(protocol, Protocol, "protocol")
    _require(check_result, FeasibilityCheckResult, "check_result")
    _require(scenario, NormalizedScenarioPack, "scenario")
    return None if check_result.feasible else _suggest(protocol, check_result, scenario)


def _suggest(
    protocol: Protocol, check_result: FeasibilityCheckResult, scenario: NormalizedScenarioPack
) -> AlternativeSuggestion:
    """`suggest_alternative` of an infeasible check, its arguments known to be of their types."""
    before = check_result.failed_dimensions
    revised, changes = _revise(protocol, check_result, scenario, add_missing=True)
    post = check_feasibility(revised, scenario) if changes else check_result
    after = post.failed_dimensions
    if not set(after) <= set(before):  # only an added item can add a failure: drop additions
        revised, changes = _revise(protocol, check_result, scenario, add_missing=False)
        post = check_feasibility(revised, scenario) if changes else check_result
        after = post.failed_dimensions
    return construct(
        AlternativeSuggestion,
        revised_protocol=revised,
        applied_changes=changes,
        remaining_failures=after,
        improved=set(after) < set(before),
        pre_check=check_result,
        post_check=post,
    )


# --------------------------------------------------------------------------- the answer


def _select_lab_manager_action_type(
    check: FeasibilityCheckResult, suggestion: AlternativeSuggestion | None
) -> LabManagerActionType:
    """The seed's table, read top to bottom; its last row is the case the table leaves open."""
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
    return LabManagerActionType.SUGGEST_ALTERNATIVE  # improved, lab failures remain (spec §4)


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
    _require(check_result, FeasibilityCheckResult, "check_result")
    if suggestion is not None:
        _require(suggestion, AlternativeSuggestion, "suggestion")
    if explanation_renderer is None:
        if check_result.feasible:  # the commonest answer, and a function of two numbers
            return _acceptance(check_result.estimated_cost, check_result.required_staff)
    elif not callable(explanation_renderer):
        raise TypeError(
            f"explanation_renderer: expected a callable, got {type(explanation_renderer).__name__}"
        )
    action_type = _select_lab_manager_action_type(check_result, suggestion)
    suggested = None
    if action_type is LabManagerActionType.SUGGEST_ALTERNATIVE and suggestion is not None:
        suggested = suggestion.revised_protocol
    if explanation_renderer is None:
        explanation = clip_text(_default_explanation(action_type, check_result, suggestion))
    else:
        explanation = explanation_renderer(action_type, check_result, suggestion)
    # Only a renderer's text can break the contract (the default one is never blank at either end).
    trusted = explanation_renderer is None or _is_clean_text(explanation)
    return _action(action_type, check_result.flags, suggested, explanation, trusted)


@lru_cache(maxsize=1024)
def _acceptance(cost: float, staff: int) -> LabManagerAction:
    """The default answer to a check that passes: it reads nothing else, and the pairs recur
    across packs, so each is built once and shared (values are frozen: never mutate)."""
    return _action(LabManagerActionType.ACCEPT, _ALL_OK, None, _accepted(cost, staff), True)


def _action(
    action_type: LabManagerActionType,
    flags: tuple[bool, ...],
    suggested: Protocol | None,
    explanation: str,
    trusted: bool,
) -> LabManagerAction:
    """The action; validated unless `trusted` (its text is known to be clean). The rest keeps its
    rules by construction: `feasible` is the AND of the flags, the table accepts only when all
    pass and rejects only when one fails, and a protocol is suggested exactly with
    suggest_alternative."""
    protocol_ok, budget_ok, equipment_ok, reagents_ok, schedule_ok, staff_ok, policy_ok = flags
    return (construct if trusted else _validated)(
        LabManagerAction,
        action_type=action_type,
        feasible=all(flags),
        protocol_ok=protocol_ok,
        budget_ok=budget_ok,
        equipment_ok=equipment_ok,
        reagents_ok=reagents_ok,
        schedule_ok=schedule_ok,
        staff_ok=staff_ok,
        policy_ok=policy_ok,
        suggested_protocol=suggested,
        explanation=explanation,
    )


def _validated(cls: type[LabManagerAction], **values: object) -> LabManagerAction:
    """`model_validate` with `construct`'s signature, for a text validation must strip or refuse
    (it raises the contract's own error)."""
    return cls.model_validate(values)


def _is_clean_text(text: object) -> bool:
    """A str that validation would keep as it is: non-empty, nothing to strip at either end
    (whatever pydantic strips, `str.isspace` counts as space)."""
    return type(text) is str and text != "" and not text[0].isspace() and not text[-1].isspace()


def respond(
    protocol: Protocol,
    scenario: NormalizedScenarioPack,
    renderer: ExplanationRenderer | None = None,
) -> tuple[LabManagerAction, FeasibilityCheckResult, AlternativeSuggestion | None]:
    """The grounded Lab Manager's turn: check, suggest, compose."""
    check = check_feasibility(protocol, scenario)
    suggestion = None if check.feasible else _suggest(protocol, check, scenario)
    return compose_lab_manager_response(check, suggestion, renderer), check, suggestion
