"""Is a protocol sound for this scenario? `validate_protocol` lists every problem, never raises.

Each issue is tagged with the feasibility dimension that owns it (protocol, budget, equipment,
reagents, schedule, staff, policy) so the Lab Manager's seven checks can read their share of
one validation pass; `reference` warnings compare the plan with the hidden reference spec and
are for the judge and the Lab Manager's private view only — never for the Scientist.
Errors are what a check must fail on; warnings are what a careful reviewer would remark.
"""

from __future__ import annotations

from replicalab.lab_costs import estimate_protocol_cost, estimate_staff_load
from replicalab.models import Constraint, Protocol, ValidationIssue, ValidationResult, construct
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.text import affirmed, content_words, mentions

# Constraint kinds by the dimension that enforces them.
_CONSTRAINT_DIMENSION = {
    "max_duration_days": "schedule",
    "max_budget": "budget",
    "max_staff": "staff",
    "min_sample_size": "protocol",
    "max_sample_size": "protocol",
    "min_controls": "protocol",
    "required_review": "protocol",
    "forbidden_practice": "policy",
}
_REFERENCE_COVERAGE = 0.5  # share of an element's content words the plan must mention


def _issue(severity: str, category: str, message: str, constraint_id: str | None = None) -> ValidationIssue:
    return construct(
        ValidationIssue,
        severity=severity,
        category=category,
        message=message,
        constraint_id=constraint_id,
    )


def plan_texts(protocol: Protocol) -> list[str]:
    """The fields that describe what will be done (what policy and fidelity read)."""
    return [protocol.technique, protocol.rationale, *protocol.controls]


def _constraint_issue(c: Constraint, protocol: Protocol) -> ValidationIssue | None:
    """An issue when `protocol` violates `c`, naming it; None when it complies."""
    q = c.quantity if c.quantity is not None else 0.0
    violated: str | None = None
    if c.kind == "max_duration_days" and protocol.duration_days > q:
        violated = f"duration {protocol.duration_days} days exceeds the limit of {q:g} days"
    elif c.kind == "max_budget":
        cost = estimate_protocol_cost(protocol)
        if cost > q:
            violated = f"estimated cost {cost:g} exceeds the budget of {q:g} credits"
    elif c.kind == "max_staff":
        load = estimate_staff_load(protocol)
        if load > q:
            violated = f"needs {load} staff but at most {q:g} are available"
    elif c.kind == "min_sample_size" and protocol.sample_size < q:
        violated = f"sample size {protocol.sample_size} is below the minimum of {q:g}"
    elif c.kind == "max_sample_size" and protocol.sample_size > q:
        violated = f"sample size {protocol.sample_size} is above the preferred cap of {q:g}"
    elif c.kind == "min_controls" and len(set(protocol.controls)) < q:
        violated = f"{len(set(protocol.controls))} distinct controls, at least {q:g} required"
    elif c.kind == "required_review" and c.term:
        if not any(mentions(c.term, control) for control in protocol.controls):
            violated = f"no control includes the {c.term}"
    elif (
        c.kind == "forbidden_practice"
        and c.term
        and any(affirmed(c.term, text) for text in plan_texts(protocol))
    ):
        violated = f"the plan uses a forbidden practice: {c.term}"
    if violated is None:
        return None
    severity = "error" if c.hard else "warning"
    label = "hard" if c.hard else "soft"
    return _issue(severity, _CONSTRAINT_DIMENSION[c.kind], f"{c.id} ({label}): {violated}", c.id)


def _item_issues(protocol: Protocol, scenario: NormalizedScenarioPack, kind: str) -> list[ValidationIssue]:
    requested = protocol.required_equipment if kind == "equipment" else protocol.required_reagents
    dimension = "equipment" if kind == "equipment" else "reagents"
    unavailable_word = "booked" if kind == "equipment" else "out of stock"
    known = scenario.resource_by_name
    issues: list[ValidationIssue] = []
    asked = {name.lower() for name in requested}
    if len(asked) < len(requested):
        issues.append(_issue("warning", dimension, f"duplicate {kind} items requested"))
    for name in requested:
        item = known.get(name.lower())
        if item is None or item.kind != kind:
            issues.append(_issue("warning", dimension, f"unknown {kind}: {name}"))
        elif not item.available:
            subs = scenario.substitutes.get(name.lower())
            if subs:
                issues.append(
                    _issue(
                        "warning",
                        dimension,
                        f"{name} is {unavailable_word}; allowed substitute: {subs[0]}",
                    )
                )
            else:
                issues.append(
                    _issue(
                        "error",
                        dimension,
                        f"{name} is {unavailable_word} and has no allowed substitute",
                    )
                )
    for item in scenario.resources:
        if item.kind != kind or not item.essential or item.name.lower() in asked:
            continue
        alternatives = scenario.substitutes.get(item.name.lower(), [])
        if not any(alt.lower() in asked for alt in alternatives):
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
    issues: list[ValidationIssue] = []
    if protocol.sample_size < 1:
        issues.append(_issue("error", "protocol", "sample_size must be at least 1"))
    if protocol.duration_days < 1:
        issues.append(_issue("error", "protocol", "duration_days must be at least 1"))
    if not protocol.technique:
        issues.append(_issue("error", "protocol", "technique is missing"))
    if not protocol.controls:
        issues.append(_issue("warning", "protocol", "no controls: results cannot be compared"))
    for constraint in scenario.constraints:
        found = _constraint_issue(constraint, protocol)
        if found is not None:
            issues.append(found)
    over_time = protocol.duration_days > scenario.lab.time_limit_days
    if over_time and not any(i.category == "schedule" and i.severity == "error" for i in issues):
        issues.append(
            _issue(
                "error",
                "schedule",
                f"duration {protocol.duration_days} days is over the lab's time limit "
                f"of {scenario.lab.time_limit_days} days",
            )
        )
    issues.extend(_item_issues(protocol, scenario, "equipment"))
    issues.extend(_item_issues(protocol, scenario, "reagent"))
    if include_reference:
        seen = frozenset().union(*(content_words(text) for text in plan_texts(protocol)))
        for element in scenario.hidden_reference_spec.required_elements:
            wanted = content_words(element)
            if wanted and len(wanted & seen) < _REFERENCE_COVERAGE * len(wanted):
                issues.append(_issue("warning", "reference", f"does not address: {element}"))
    return construct(ValidationResult, issues=issues)
