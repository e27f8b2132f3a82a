"""The reward's configuration: every term `replicalab.rewards` pays, named, serialisable."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from replicalab.models.base import Contract, NonEmptyStr

PotentialKind = Literal["none", "public_total", "feasibility"]
"""What Φ reads (`replicalab.rewards.potential`): nothing, the judge's total with no study in its
facts, or the lab's feasibility score; none reads which candidates the study used."""


class JudgeExponents(Contract):
    """Exponents on the judge's scores inside the terminal reward (1 = as the judge weighs it)."""

    rigor: float = Field(default=1.0, ge=0.0)
    feasibility: float = Field(default=1.0, ge=0.0)
    fidelity: float = Field(default=1.0, ge=0.0)
    parsimony: float = Field(default=1.0, ge=0.0)


class Penalties(Contract):
    """Magnitudes (positive) of the named penalties; each enters the reward negated."""

    invalid_action: float = Field(default=0.0, ge=0.0)  # malformed or illegal move
    stalling: float = Field(default=0.0, ge=0.0)  # the agent stalls (see `replicalab.rewards`)
    hallucinated_resource: float = Field(default=0.0, ge=0.0)  # per requested item the lab lacks
    regression: float = Field(default=0.0, ge=0.0)  # new protocol fails more dimensions
    no_agreement: float = Field(default=0.0, ge=0.0)  # to both, when the episode ends without one
    accept_without_consent: float = Field(default=0.0, ge=0.0)  # Scientist accepts over objection
    misreport: float = Field(default=0.0, ge=0.0)  # per flag unlike the grounded check (see rewards)


class RewardConfig(Contract):
    """Every term of the reward (`replicalab.rewards` pays them); an `EpisodeLog` records it whole.

    It prices the return only: the judge's score of an agreed protocol (`RewardBreakdown.total`)
    does not depend on it.
    """

    name: NonEmptyStr
    judge_scale: float = Field(default=1.0, ge=0.0)  # multiplies the terminal judge reward
    judge_exponents: JudgeExponents = Field(default_factory=JudgeExponents)
    all_checks_bonus: float = Field(default=1.0, ge=0.0)  # x base / 10: the judge's ALL_CHECKS_BONUS
    efficiency_bonus: float = Field(default=0.0, ge=0.0)  # per saved round (`saved_rounds`), likewise
    penalties: Penalties = Field(default_factory=Penalties)
    step_cost: float = Field(default=0.0, ge=0.0)  # charged to the acting agent every turn
    potential: PotentialKind = "none"
    gamma: float = Field(default=1.0, gt=0.0, le=1.0)  # discount inside the shaping term
    terminal_potential: Literal["zero", "value"] = "zero"  # Φ of a terminal state
