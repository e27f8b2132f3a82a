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
from replicalab.text import affirmed, content_words, occurs, spaced

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


class _Plan:
    """The protocol's texts in the spaced form phrase tests read, each joined once on first use
    (one protocol meets several review and forbidden-practice constraints)."""

    __slots__ = ("_controls", "_texts", "protocol")

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self._controls: str | None = None
        self._texts: str | None = None

    def _controls_text(self) -> str:
        if self._controls is None:
            self._controls = "".join(map(spaced, self.protocol.controls))
        return self._controls

    def controls_mention(self, phrase: str) -> bool:
        return occurs(phrase, self._controls_text())

    def affirms(self, phrase: str) -> bool:
        """Some plan text names `phrase` without negating it (a cheap whole-plan test first)."""
        if self._texts is None:
            protocol = self.protocol
            self._texts = spaced(protocol.technique) + spaced(protocol.rationale) + self._controls_text()
        if not occurs(phrase, self._texts):
            return False
        return any(affirmed(phrase, text) for text in plan_texts(self.protocol))


def _max_duration(c: Constraint, q: float, plan: _Plan) -> str | None:
    days = plan.protocol.duration_days
    return f"duration {days} days exceeds the limit of {q:g} days" if days > q else None


def _max_budget(c: Constraint, q: float, plan: _Plan) -> str | None:
    cost = estimate_protocol_cost(plan.protocol)
    return f"estimated cost {cost:g} exceeds the budget of {q:g} credits" if cost > q else None


def _max_staff(c: Constraint, q: float, plan: _Plan) -> str | None:
    load = estimate_staff_load(plan.protocol)
    return f"needs {load} staff but at most {q:g} are available" if load > q else None


def _min_sample(c: Constraint, q: float, plan: _Plan) -> str | None:
    n = plan.protocol.sample_size
    return f"sample size {n} is below the minimum of {q:g}" if n < q else None


def _max_sample(c: Constraint, q: float, plan: _Plan) -> str | None:
    n = plan.protocol.sample_size
    return f"sample size {n} is above the preferred cap of {q:g}" if n > q else None


def _min_controls(c: Constraint, q: float, plan: _Plan) -> str | None:
    distinct = len(set(plan.protocol.controls))
    return f"{distinct} distinct controls, at least {q:g} required" if distinct < q else None


def _required_review(c: Constraint, q: float, plan: _Plan) -> str | None:
    if not c.term or plan.controls_mention(c.term):
        return None
    return f"no control includes the {c.term}"


def _forbidden_practice(c: Constraint, q: float, plan: _Plan) -> str | None:
    if not c.term or not plan.affirms(c.term):
        return None
    return f"the plan uses a forbidden practice: {c.term}"


# Constraint kind -> (the dimension that enforces it, the test that says how it is violated).
_CONSTRAINT_RULES = {
    "max_duration_days": ("schedule", _max_duration),
    "max_budget": ("budget", _max_budget),
    "max_staff": ("staff", _max_staff),
    "min_sample_size": ("protocol", _min_sample),
    "max_sample_size": ("protocol", _max_sample),
    "min_controls": ("protocol", _min_controls),
    "required_review": ("protocol", _required_review),
    "forbidden_practice": ("policy", _forbidden_practice),
}


def _constraint_issues(constraints: list[Constraint], plan: _Plan) -> list[ValidationIssue]:
    """One issue per constraint the plan violates, naming it, in the constraints' order."""
    issues = []
    for c in constraints:
        rule = _CONSTRAINT_RULES.get(c.kind)
        if rule is None:  # not a kind the contract allows: nothing to enforce
            continue
        dimension, violation = rule
        violated = violation(c, c.quantity if c.quantity is not None else 0.0, plan)
        if violated is not None:
            severity, label = ("error", "hard") if c.hard else ("warning", "soft")
            issues.append(_issue(severity, dimension, f"{c.id} ({label}): {violated}", c.id))
    return issues


def _item_issues(
    protocol: Protocol,
    scenario: NormalizedScenarioPack,
    kind: str,
) -> list[ValidationIssue]:
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
    issues: list[ValidationIssue] = []
    if protocol.sample_size < 1:
        issues.append(_issue("error", "protocol", "sample_size must be at least 1"))
    if protocol.duration_days < 1:
        issues.append(_issue("error", "protocol", "duration_days must be at least 1"))
    if not protocol.technique:
        issues.append(_issue("error", "protocol", "technique is missing"))
    if not protocol.controls:
        issues.append(_issue("warning", "protocol", "no controls: results cannot be compared"))
    issues += _constraint_issues(scenario.constraints, _Plan(protocol))
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
    issues += _item_issues(protocol, scenario, "equipment")
    issues += _item_issues(protocol, scenario, "reagent")
    if include_reference:
        seen = frozenset().union(*(content_words(text) for text in plan_texts(protocol)))
        for element in scenario.hidden_reference_spec.required_elements:
            wanted = content_words(element)
            if wanted and len(wanted & seen) < _REFERENCE_COVERAGE * len(wanted):
                issues.append(_issue("warning", "reference", f"does not address: {element}"))
    return construct(ValidationResult, issues=issues)
