"""The lab's counter-proposal: the revised protocol it can offer for a plan that fails its check.

The Lab Manager's observation carries it beside the check, so a learned Lab Manager is backed by
the same offer the reference one makes; the episode grades a suggestion against it. A pure
function of the protocol, its check and the scenario pack.

The fixer applies its steps in order: swap unavailable equipment, then reagents, for their first
available allowed substitute; clamp the duration to the time limit; halve the sample size until
the budget fits (at most ten halvings, never below 1 nor below a hard minimum sample size). Every
step can only lower cost, staff and duration, so a suggestion never fails a dimension its
protocol passed. In a `SuggestionChange` an empty `revised` means a removal (a swap whose
substitute is already in the plan). The revised protocol's rationale states the changes and the
revised plan's own cost, never the Scientist's reasoning about the plan it replaces.

The fixer is science-blind: it knows the lab, not the study. It never adds an item the method
needs, nor picks the sample size, controls or duration the study calls for; it only cuts until
the lab can run the plan. Its offer is feasible and usually worse than the best feasible plan
(a halving lands below the budget's boundary), so a Scientist that revises with what the lab
told it beats one that accepts.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from replicalab.checks import require
from replicalab.lab.feasibility import UNAVAILABLE, check_feasibility
from replicalab.models import (
    RATIONALE_WORD_LIMIT,
    AlternativeSuggestion,
    CostRates,
    FeasibilityCheckResult,
    Protocol,
    Substitution,
    SuggestionChange,
)
from replicalab.prices import estimate_protocol_cost
from replicalab.scenarios.types import NormalizedScenarioPack

__all__ = ["suggest_alternative"]

_MAX_HALVINGS = 10
_ITEM_FIELD = {"equipment": "required_equipment", "reagent": "required_reagents"}


def _with(protocol: Protocol, **changes: object) -> Protocol:
    """`protocol` with some fields replaced."""
    return protocol.model_copy(update=changes)


def _change(field: str, original: str, revised: str, reason: str, tradeoff: str) -> SuggestionChange:
    return SuggestionChange(field=field, original=original, revised=revised, reason=reason, tradeoff=tradeoff)


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
        reason = f"{name} is {UNAVAILABLE[kind]}"
        if sub.alternative_key in {n.lower() for n in (*items, *revised)}:
            reason, replacement = f"{reason}; {sub.alternative} is already in the plan", ""
        else:
            replacement = sub.alternative
            revised.append(replacement)
        changes.append(_change(_ITEM_FIELD[kind], name, replacement, reason, sub.tradeoff))
    return revised


class _Limits(NamedTuple):
    """The bounds the fixer steers to: the lab's numbers tightened by its hard constraints."""

    budget: float  # credits the plan may cost
    days: int  # longest allowed duration
    min_samples: int  # smallest sample size halving may reach
    rates: CostRates  # what the lab charges


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
    return _Limits(budget, days, min_samples, scenario.lab.rates)


def _halve_to_budget(
    protocol: Protocol, cost: float, limits: _Limits, changes: list[SuggestionChange]
) -> Protocol:
    """Halve the sample size until the cost fits the budget, stopping at the hard minimum;
    `cost` is the protocol's `estimate_protocol_cost`."""
    size = protocol.sample_size
    if cost <= limits.budget or size <= limits.min_samples:
        return protocol
    for _ in range(_MAX_HALVINGS):
        size = max(limits.min_samples, size // 2)
        if (
            size == limits.min_samples
            or estimate_protocol_cost(protocol, size, limits.rates) <= limits.budget
        ):
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
    protocol: Protocol, check: FeasibilityCheckResult, scenario: NormalizedScenarioPack
) -> tuple[Protocol, list[SuggestionChange]]:
    """The fix order: equipment, reagents, duration clamp, sample-size halving."""
    limits = _limits(scenario)
    changes: list[SuggestionChange] = []
    equipment, reagents = protocol.required_equipment, protocol.required_reagents
    if not check.equipment.ok:
        equipment = _swap_unavailable(equipment, scenario, "equipment", changes)
    if not check.reagents.ok:
        reagents = _swap_unavailable(reagents, scenario, "reagent", changes)
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
    revised, cost = protocol, check.estimated_cost
    if changes:
        revised = _with(
            protocol, required_equipment=equipment, required_reagents=reagents, duration_days=duration
        )
        cost = estimate_protocol_cost(revised, rates=limits.rates)
    return _halve_to_budget(revised, cost, limits, changes), changes


def _stated(changes: list[SuggestionChange], cost: float) -> str:
    """The counter-proposal's rationale: each change with its reason, then the revised plan's
    cost; changes that would take it past the word limit are counted, not listed."""
    closing = f"The revised plan costs {cost:g} credits."
    said = [f"{c.field} {c.original} -> {c.revised or 'removed'} ({c.reason})" for c in changes]
    while said:
        text = f"The lab's revision of the plan on the table: {'; '.join(said)}"
        left = len(changes) - len(said)
        text += f"; and {left} more change{'s' if left > 1 else ''}. " if left else ". "
        if len((text + closing).split()) <= RATIONALE_WORD_LIMIT:
            return text + closing
        said.pop()
    return f"The lab's revision of the plan on the table: {len(changes)} changes. {closing}"


def suggest_alternative(
    protocol: Protocol, check_result: FeasibilityCheckResult, scenario: NormalizedScenarioPack
) -> AlternativeSuggestion | None:
    """The revised protocol the lab can offer; None exactly when `check_result` is feasible.

    `check_result` must be `check_feasibility(protocol, scenario)`.
    """
    require(protocol, Protocol, "protocol")
    require(check_result, FeasibilityCheckResult, "check_result")
    require(scenario, NormalizedScenarioPack, "scenario")
    if check_result.feasible:
        return None
    before = check_result.failed_dimensions
    revised, changes = _revise(protocol, check_result, scenario)
    post = check_result
    if changes:
        cost = estimate_protocol_cost(revised, rates=scenario.lab.rates)
        revised = _with(revised, rationale=_stated(changes, cost))
        post = check_feasibility(revised, scenario)
    after = post.failed_dimensions if changes else before
    return AlternativeSuggestion(
        revised_protocol=revised,
        applied_changes=changes,
        remaining_failures=after,
        improved=set(after) < set(before),
        pre_check=check_result,
        post_check=post,
    )


# --------------------------------------------------------------------------- the answer
