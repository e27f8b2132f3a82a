"""The grounded verdicts on a protocol: validation's issues, the seven-dimension feasibility
check and the lab's counter-proposal, as the Lab Manager, the judge and the episode read them."""

from __future__ import annotations

from functools import cached_property
from operator import attrgetter
from typing import Literal

from pydantic import Field

from replicalab.models.actions import FEASIBILITY_DIMENSIONS, Protocol
from replicalab.models.base import Contract

# --------------------------------------------------------------------------- validation


class ValidationIssue(Contract):
    severity: Literal["error", "warning"]
    category: str  # a feasibility dimension (FEASIBILITY_DIMENSIONS) or "reference"
    message: str
    constraint_id: str | None = None  # the constraint this issue enforces, if any


class ValidationResult(Contract):
    issues: list[ValidationIssue] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no issue is an error (warnings allowed)."""
        return not any(issue.severity == "error" for issue in self.issues)

    @property
    def errors(self) -> list[ValidationIssue]:
        return [issue for issue in self.issues if issue.severity == "error"]

    @property
    def warnings(self) -> list[ValidationIssue]:
        return [issue for issue in self.issues if issue.severity == "warning"]


# --------------------------------------------------------------------------- feasibility


class DimensionCheck(Contract):
    ok: bool = True
    reasons: list[str] = Field(default_factory=list)


_dimensions_of = attrgetter(*FEASIBILITY_DIMENSIONS)  # a check's seven DimensionChecks, in order


class FeasibilityCheckResult(Contract):
    """The grounded verdict on a protocol; the Lab Manager and the judge both read this one."""

    protocol: DimensionCheck
    budget: DimensionCheck
    equipment: DimensionCheck
    reagents: DimensionCheck
    schedule: DimensionCheck
    staff: DimensionCheck
    policy: DimensionCheck
    estimated_cost: float
    required_staff: int
    substitution_options: dict[str, list[str]] = Field(default_factory=dict)  # item -> usable subs
    validation_result: ValidationResult

    @property
    def protocol_ok(self) -> bool:
        return self.protocol.ok

    @property
    def budget_ok(self) -> bool:
        return self.budget.ok

    @property
    def equipment_ok(self) -> bool:
        return self.equipment.ok

    @property
    def reagents_ok(self) -> bool:
        return self.reagents.ok

    @property
    def schedule_ok(self) -> bool:
        return self.schedule.ok

    @property
    def staff_ok(self) -> bool:
        return self.staff.ok

    @property
    def policy_ok(self) -> bool:
        return self.policy.ok

    @cached_property  # the check is frozen, and every step reads its flags several times
    def flags(self) -> tuple[bool, ...]:
        """The seven dimension verdicts, in `FEASIBILITY_DIMENSIONS` order."""
        return tuple(dim.ok for dim in _dimensions_of(self))

    @property
    def feasible(self) -> bool:
        return all(self.flags)

    @property
    def failed_dimensions(self) -> list[str]:
        return [dim for dim, ok in zip(FEASIBILITY_DIMENSIONS, self.flags, strict=True) if not ok]

    @property
    def summary(self) -> str:
        failed = self.failed_dimensions
        if not failed:
            return f"feasible (cost {self.estimated_cost:g}, staff {self.required_staff})"
        parts = [f"{dim}: {'; '.join(getattr(self, dim).reasons)}" for dim in failed]
        return "infeasible — " + " | ".join(parts)


class SuggestionChange(Contract):
    field: str  # the protocol field changed
    original: str
    revised: str
    reason: str
    tradeoff: str  # what the revision gives up


class AlternativeSuggestion(Contract):
    revised_protocol: Protocol
    applied_changes: list[SuggestionChange] = Field(default_factory=list)
    remaining_failures: list[str] = Field(default_factory=list)  # dimensions still failing
    improved: bool
    pre_check: FeasibilityCheckResult
    post_check: FeasibilityCheckResult
