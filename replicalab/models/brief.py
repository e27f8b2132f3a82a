"""The scenario's public brief: the paper, its candidate choices, the lab's constraints, items
and allowed substitutions."""

from __future__ import annotations

from functools import cached_property
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from replicalab.models.base import (
    MAX_CREDITS,
    MAX_DURATION_DAYS,
    MAX_LIST_ITEMS,
    MAX_SAMPLE_SIZE,
    MAX_STAFF,
    Contract,
    NonEmptyStr,
    Text,
)


class SampleUnit(Contract):
    """What one sample of a family's studies is (a run, an instance, a backtest window), so a
    sample size reads the same in the paper, the plan and the power rule."""

    singular: NonEmptyStr  # "run"
    plural: NonEmptyStr  # "runs"
    meaning: NonEmptyStr  # "a full training and evaluation from its own random seed"


DEFAULT_SAMPLE_UNIT = SampleUnit(
    singular="sample", plural="samples", meaning="an independent repetition of the study's measurement"
)
"""The unit of a family whose data names none."""


class Paper(Contract):
    title: NonEmptyStr
    hypothesis: NonEmptyStr
    method: NonEmptyStr
    key_finding: NonEmptyStr
    reported_sample_size: int | None = Field(
        default=None, ge=1, le=MAX_SAMPLE_SIZE
    )  # the n the finding states
    reported_effect_size: float | None = Field(
        default=None, gt=0.0, le=10.0, allow_inf_nan=False
    )  # the standardized effect (Cohen's d) the finding states, which a replication must detect
    sample_unit: SampleUnit | None = None  # what one of the reported samples is; None: not said


class Candidates(Contract):
    """The choices a paper's study could have made, as the public brief lists them: technique
    variants, method elements and controls, with plausible distractors. The paper's text says
    which ones it ran; the structured action space offers exactly these."""

    techniques: list[NonEmptyStr] = Field(default_factory=list)
    elements: list[NonEmptyStr] = Field(default_factory=list)
    controls: list[NonEmptyStr] = Field(default_factory=list)


ConstraintKind = Literal[
    "max_duration_days",
    "max_budget",
    "max_staff",
    "min_sample_size",
    "max_sample_size",
    "min_controls",
    "required_review",
    "forbidden_practice",
]


# The largest bound each numeric kind of constraint may state: what a protocol or a lab can reach.
_QUANTITY_LIMITS: dict[str, float] = {
    "max_duration_days": MAX_DURATION_DAYS,
    "max_budget": MAX_CREDITS,
    "max_staff": MAX_STAFF,
    "min_sample_size": MAX_SAMPLE_SIZE,
    "max_sample_size": MAX_SAMPLE_SIZE,
    "min_controls": MAX_LIST_ITEMS,
}


class Constraint(Contract):
    """A rule of the lab that a check enforces; `hard` ones fail a check, soft ones warn."""

    id: NonEmptyStr  # stable within a pack, e.g. "c3"
    kind: ConstraintKind
    description: NonEmptyStr
    hard: bool
    quantity: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)  # the bound, for numeric kinds
    comparator: Literal["<=", ">="] | None = None
    unit: Text | None = None  # days, credits, people, samples, controls
    term: Text | None = None  # the review that must appear / the practice that must not

    # A field validator, not a model one: pydantic re-runs a model's "after" validators on every
    # nested instance, and an observation holds a pack's every constraint.
    @field_validator("quantity")
    @classmethod
    def _quantity_within_reach(cls, quantity: float | None, info: ValidationInfo) -> float | None:
        kind = info.data.get("kind", "")
        limit = _QUANTITY_LIMITS.get(kind)
        if limit is not None and quantity is not None and quantity > limit:
            raise ValueError(f"a {kind} bound must be at most {limit:g}, got {quantity:g}")
        return quantity


ItemKind = Literal["equipment", "reagent"]


class ResourceItem(Contract):
    name: NonEmptyStr
    kind: ItemKind
    status: Literal["available", "booked", "out_of_stock"]
    essential: bool = False  # the method cannot run without this item or an allowed substitute

    # Items are shared by the packs of a template, so what lookups read is derived once per item.
    @cached_property
    def available(self) -> bool:
        return self.status == "available"

    @cached_property
    def key(self) -> str:
        """The lower-cased name: items are matched case-insensitively."""
        return self.name.lower()


class Substitution(Contract):
    original: NonEmptyStr
    alternative: NonEmptyStr
    condition: NonEmptyStr  # when the swap is acceptable
    tradeoff: NonEmptyStr  # what it costs the science

    # Substitutions are shared by the packs of a template: their lookup keys are derived once.
    @cached_property
    def original_key(self) -> str:
        return self.original.lower()

    @cached_property
    def alternative_key(self) -> str:
        return self.alternative.lower()
