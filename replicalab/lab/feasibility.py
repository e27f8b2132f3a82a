"""The grounded check of a protocol against the lab: seven dimensions, one verdict.

The Lab Manager answers from this check, the judge reads its feasibility score off it, and the
episode decides agreement by it, so all three share one verdict and an episode replays byte for
byte. It is a pure function of the protocol and the scenario pack.

The check runs validation once (`lab_issues`: `validate_protocol` without the hidden-reference
warnings, given the cost and staff the check estimates anyway) and hands each dimension its share
of the errors, then adds what the lab knows beyond validation: the lab cannot supply an item it
does not list, nor a booked or out-of-stock item even when a substitute exists (the reason names
the substitute), and the budget and staff are compared with the lab's own numbers even when no
constraint states them. A dimension's `reasons` say why it fails and are empty when it passes.
Hidden-reference warnings never reach a reason, so nothing the Lab Manager says leaks the hidden
spec.
"""

from __future__ import annotations

from functools import lru_cache

from replicalab.checks import require
from replicalab.models import (
    FEASIBILITY_DIMENSIONS,
    DimensionCheck,
    FeasibilityCheckResult,
    Protocol,
    ValidationResult,
)
from replicalab.prices import estimate_protocol_cost, estimate_staff_load
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.validation import lab_issues

__all__ = ["ITEM_DIMENSIONS", "UNAVAILABLE", "check_feasibility"]

ITEM_DIMENSIONS = {
    "equipment": ("required_equipment", "equipment"),
    "reagents": ("required_reagents", "reagent"),
}
"""Item dimension -> (the protocol field it reads, the item kind it supplies)."""
UNAVAILABLE = {"equipment": "booked", "reagent": "out of stock"}
"""Item kind -> what an unavailable item of that kind is."""
_PASS = DimensionCheck()  # a passing dimension: a frozen value, shared


def check_feasibility(protocol: Protocol, scenario: NormalizedScenarioPack) -> FeasibilityCheckResult:
    """Run the seven dimension checks on `protocol` in `scenario`; deterministic, no LLM."""
    require(protocol, Protocol, "protocol")
    require(scenario, NormalizedScenarioPack, "scenario")
    cost = estimate_protocol_cost(protocol, rates=scenario.lab.rates)
    staff = estimate_staff_load(protocol)
    validation = ValidationResult(issues=lab_issues(protocol, scenario, cost, staff))
    errors = _errors_by_dimension(validation)
    options: dict[str, list[str]] = {}
    dimensions = {}
    for dim in FEASIBILITY_DIMENSIONS:
        reasons = _reasons(dim, protocol, scenario, cost, staff, errors, options)
        dimensions[dim] = _failing(tuple(reasons)) if reasons else _PASS
    return FeasibilityCheckResult(
        **dimensions,
        estimated_cost=cost,
        required_staff=staff,
        substitution_options=options,
        validation_result=validation,
    )


@lru_cache(maxsize=1024)
def _failing(reasons: tuple[str, ...]) -> DimensionCheck:
    """A failing dimension, a frozen value shared like `_PASS`: a check fails about three, for
    reasons that recur across proposals and packs, so most cost a lookup, not a validation."""
    return DimensionCheck(ok=False, reasons=list(reasons))


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


def _reasons(
    dim: str,
    protocol: Protocol,
    scenario: NormalizedScenarioPack,
    cost: float,
    staff: int,
    errors: dict[str, list[str]],
    options: dict[str, list[str]],
) -> list[str]:
    """Why `dim` fails: validation's errors in it, and what the lab's own facts add."""
    found = errors.get(dim)
    if dim in ITEM_DIMENSIONS:
        if found is None:  # validation flags every item the lab cannot hand over
            return []
        field, kind = ITEM_DIMENSIONS[dim]
        return _item_reasons(getattr(protocol, field), scenario, kind, options) + found
    if found:
        return found
    lab = scenario.lab
    if dim == "budget" and cost > lab.budget_remaining:
        return [f"estimated cost {cost:g} exceeds the remaining budget of {lab.budget_remaining:g} credits"]
    if dim == "staff" and staff > lab.staff_count:
        return [f"needs {staff} staff but the lab has {lab.staff_count}"]
    return []


def _item_reasons(
    requested: list[str], scenario: NormalizedScenarioPack, kind: str, options: dict[str, list[str]]
) -> list[str]:
    """The items of `kind` the lab cannot hand over as asked; substitutes it can offer go into
    `options`."""
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
                reasons.append(f"{name} is {UNAVAILABLE[kind]}; the lab can offer {subs[0]}")
    return reasons
