"""What each agent sees on its turn: the Scientist the paper and the public brief, the Lab
Manager the lab's private facts and the grounded check; both the conversation so far."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from replicalab.models.actions import Protocol
from replicalab.models.base import MAX_LIST_ITEMS, Contract, Credits, StaffCount, TimeLimit
from replicalab.models.brief import Candidates, Constraint, Paper, ResourceItem, Substitution
from replicalab.models.checks import AlternativeSuggestion, FeasibilityCheckResult
from replicalab.models.rates import CostRates


class ConversationEntry(Contract):
    role: Literal["scientist", "lab_manager", "system"]
    message: str
    round_number: int = Field(ge=0)
    action_type: str | None = None


class ScientistObservation(Contract):
    """What the Scientist may see: the paper, the public lab brief, the negotiation so far."""

    paper: Paper
    experiment_goal: str
    constraints: list[Constraint]
    resources: list[ResourceItem] = Field(max_length=MAX_LIST_ITEMS)  # a plan may ask for them all
    substitutions: list[Substitution]
    candidates: Candidates = Field(default_factory=Candidates)
    cost_rates: CostRates | None = None  # what the lab charges, once the Lab Manager has said it
    conversation_history: list[ConversationEntry] = Field(default_factory=list)
    current_protocol: Protocol | None = None
    quoted_cost: Credits | None = None  # the lab's price of the protocol on the table, once checked
    # the Lab Manager's latest counter-proposal, which `accept` adopts, and the lab's price of it
    suggested_protocol: Protocol | None = None
    suggested_cost: Credits | None = None
    round_number: int = Field(default=0, ge=0)
    max_rounds: int = Field(default=6, ge=1)


class LabManagerObservation(Contract):
    """The lab's private facts plus the grounded check of the protocol on the table."""

    budget_total: Credits
    budget_remaining: Credits
    equipment_available: list[str]
    equipment_booked: list[str]
    reagents_in_stock: list[str]
    reagents_out_of_stock: list[str]
    staff_count: StaffCount
    time_limit_days: TimeLimit
    safety_restrictions: list[str]
    conversation_history: list[ConversationEntry] = Field(default_factory=list)
    current_protocol: Protocol | None = None
    round_number: int = Field(default=0, ge=0)
    max_rounds: int = Field(default=6, ge=1)
    feasibility: FeasibilityCheckResult | None = None
    suggestion: AlternativeSuggestion | None = None

    @model_validator(mode="after")
    def _budget_within_total(self) -> LabManagerObservation:
        check_budget(self.budget_total, self.budget_remaining)
        return self


def check_budget(total: float, remaining: float) -> None:
    """Refuse a lab that has more budget left than it had in all."""
    if remaining > total:
        raise ValueError(f"budget_remaining: {remaining:g} exceeds budget_total {total:g}")
