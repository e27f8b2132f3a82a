"""Is a protocol sound for this scenario? `validate_protocol` lists every problem, never raises.

Each issue is tagged with the feasibility dimension that owns it (protocol, budget, equipment,
reagents, schedule, staff, policy) so the Lab Manager's seven checks can read their share of
one validation pass; `reference` warnings compare the plan with the hidden reference spec and
are for the judge and the Lab Manager's private view only — never for the Scientist.
Errors are what a check must fail on; warnings are what a careful reviewer would remark.

Validation runs on every proposal of every episode, each in a new pack, so it keeps no per-pack
state: numeric rules compare one measure of the plan with the bound, and the rules on names
(reviews, forbidden practices) compare the plan's claims with the terms by name (the same content words).
A plan's claims are its technique, each control and each element entry; the rationale is never
read, so no phrasing of it can break or satisfy a rule. A required review is met by a control
that names it; a forbidden practice is used by a claim that names it. Forbidden practices are the
case's own and the lab's safety rules alike: both are constraints.
"""

from __future__ import annotations

from functools import lru_cache

from replicalab.models import Protocol, ValidationIssue, ValidationResult
from replicalab.prices import estimate_protocol_cost, estimate_staff_load
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.text import content_words, distinct_contents

# Numeric constraint kind -> (the dimension that enforces it, whether the bound is a minimum, how
# a violation reads given the plan's measure and the bound, where its measure sits in `measures`).
_BOUNDS: dict[str, tuple[str, bool, str, int]] = {
    "max_duration_days": ("schedule", False, "duration {} days exceeds the limit of {:g} days", 0),
    "max_budget": ("budget", False, "estimated cost {:g} exceeds the budget of {:g} credits", 1),
    "max_staff": ("staff", False, "needs {} staff but at most {:g} are available", 2),
    "min_sample_size": ("protocol", True, "sample size {} is below the minimum of {:g}", 3),
    "max_sample_size": ("protocol", False, "sample size {} is above the preferred cap of {:g}", 3),
    "min_controls": ("protocol", True, "{} distinct controls, at least {:g} required", 4),
}


@lru_cache(maxsize=1024)
def _issue(severity: str, category: str, message: str, constraint_id: str | None = None) -> ValidationIssue:
    """The issue, a frozen value shared by every check that raises it: a check raises about five,
    and the same few recur across proposals and packs, so most cost a lookup, not a validation."""
    return ValidationIssue(
        severity=severity,
        category=category,
        message=message,
        constraint_id=constraint_id,
    )


def plan_claims(protocol: Protocol) -> frozenset[frozenset[str]]:
    """The keys (`content_words`) of the plan's claims: its technique, controls and elements."""
    return frozenset(map(content_words, (protocol.technique, *protocol.controls, *protocol.elements)))


def _constraint_issues(
    scenario: NormalizedScenarioPack,
    protocol: Protocol,
    controls: tuple[str, ...],
    distinct: int,
    cost: float,
    staff: int,
) -> list[ValidationIssue]:
    """One issue per constraint the plan violates, naming it, in the constraints' order;
    `distinct` is how many of the plan's `controls` are distinct (`distinct_contents`)."""
    measures = (protocol.duration_days, cost, staff, protocol.sample_size, distinct)
    claims = plan_claims(protocol) if scenario.terms else frozenset()
    control_keys = frozenset(map(content_words, controls))
    issues = []
    for c in scenario.constraints:  # a field is read only where its kind uses it: most constraints pass
        kind = c.kind
        rule = _BOUNDS.get(kind)
        if rule is not None:
            dimension, is_minimum, reads, at = rule
            value, bound = measures[at], c.quantity
            if bound is None:
                bound = 0.0
            if not (value < bound if is_minimum else value > bound):
                continue
            violated = reads.format(value, bound)
        elif kind == "required_review":
            term = c.term
            if not term or content_words(term) in control_keys:
                continue
            dimension, violated = "protocol", f"no control names the {term}"
        elif kind == "forbidden_practice":
            term = c.term
            if not term or content_words(term) not in claims:
                continue
            dimension, violated = "policy", f"the plan uses a forbidden practice: {term}"
        else:  # not a kind the contract allows: nothing to enforce
            continue
        severity, label = ("error", "hard") if c.hard else ("warning", "soft")
        issues.append(_issue(severity, dimension, f"{c.id} ({label}): {violated}", c.id))
    return issues


# Item kind -> (the dimension that owns it, what an unavailable one is).
_ITEM_KINDS = {"equipment": ("equipment", "booked"), "reagent": ("reagents", "out of stock")}


def _item_issues(requested: list[str], scenario: NormalizedScenarioPack, kind: str) -> list[ValidationIssue]:
    dimension, unavailable = _ITEM_KINDS[kind]
    known = scenario.resource_by_name
    issues: list[ValidationIssue] = []
    asked: set[str] = set()
    for name in requested:
        key = name.lower()
        asked.add(key)
        item = known.get(key)
        if item is None or item.kind != kind:
            issues.append(_issue("warning", dimension, f"unknown {kind}: {name}"))
        elif not item.available:
            subs = scenario.substitutes.get(key)
            if subs:
                message = f"{name} is {unavailable}; allowed substitute: {subs[0]}"
                issues.append(_issue("warning", dimension, message))
            else:
                message = f"{name} is {unavailable} and has no allowed substitute"
                issues.append(_issue("error", dimension, message))
    if len(asked) < len(requested):  # this warning leads the list
        issues.insert(0, _issue("warning", dimension, f"duplicate {kind} items requested"))
    for item, in_lab, _ in scenario.essentials:
        if item.kind == kind and in_lab.isdisjoint(asked):
            issues.append(
                _issue("error", dimension, f"the method needs {item.name} (or an allowed substitute)")
            )
    return issues


def validate_protocol(
    protocol: Protocol, scenario: NormalizedScenarioPack, *, include_reference: bool = True
) -> ValidationResult:
    """Every problem of `protocol` in `scenario`; errors fail a check, warnings inform.

    `include_reference=False` leaves out the hidden-reference warnings: the Lab Manager's check
    uses it, so nothing it (or a learned Lab Manager reading its check) sees can leak them.
    """
    if not isinstance(protocol, Protocol):
        raise TypeError(f"protocol: expected Protocol, got {type(protocol).__name__}")
    if not isinstance(scenario, NormalizedScenarioPack):
        raise TypeError(f"scenario: expected NormalizedScenarioPack, got {type(scenario).__name__}")
    cost = estimate_protocol_cost(protocol, rates=scenario.lab.rates)
    issues = lab_issues(protocol, scenario, cost, estimate_staff_load(protocol))
    if include_reference:
        claimed = frozenset(map(content_words, protocol.elements))
        for element in scenario.hidden_reference_spec.required_elements:
            if content_words(element) not in claimed:
                issues.append(_issue("warning", "reference", f"does not claim: {element}"))
    return ValidationResult(issues=issues)


def lab_issues(
    protocol: Protocol, scenario: NormalizedScenarioPack, cost: float, staff: int
) -> list[ValidationIssue]:
    """The issues of `validate_protocol(protocol, scenario, include_reference=False)`, for
    arguments known to be of their types and the plan's `estimate_protocol_cost` and
    `estimate_staff_load` (the Lab Manager's check has both already: it passes them in)."""
    issues: list[ValidationIssue] = []
    if protocol.sample_size < 1:
        issues.append(_issue("error", "protocol", "sample_size must be at least 1"))
    if protocol.duration_days < 1:
        issues.append(_issue("error", "protocol", "duration_days must be at least 1"))
    if not protocol.technique:
        issues.append(_issue("error", "protocol", "technique is missing"))
    controls = tuple(protocol.controls)
    distinct = len(distinct_contents(controls))
    if not controls:
        issues.append(_issue("warning", "protocol", "no controls: results cannot be compared"))
    elif distinct < len(controls):  # the repeats the judge charges as padding
        issues.append(_issue("warning", "protocol", "duplicate controls listed"))
    issues += _constraint_issues(scenario, protocol, controls, distinct, cost, staff)
    time_limit = scenario.lab.time_limit_days
    if protocol.duration_days > time_limit and not any(
        i.category == "schedule" and i.severity == "error" for i in issues
    ):
        issues.append(
            _issue(
                "error",
                "schedule",
                f"duration {protocol.duration_days} days is over the lab's time limit of {time_limit} days",
            )
        )
    issues += _item_issues(protocol.required_equipment, scenario, "equipment")
    issues += _item_issues(protocol.required_reagents, scenario, "reagent")
    return issues
