"""Shapes of scenario content: the hand-written template data and the generated pack.

Template data (papers, catalogues, substitutions) is JSON under `data/`, validated into
`TemplateData` once; the generator turns it plus a seed and a difficulty into a frozen
`NormalizedScenarioPack`, which holds everything a negotiation needs, hidden parts included.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Literal, NamedTuple

from pydantic import Field, model_validator

from replicalab.models import (
    DEFAULT_SAMPLE_UNIT,
    MAX_DURATION_DAYS,
    MAX_LIST_ITEMS,
    MAX_SAMPLE_SIZE,
    Candidates,
    Constraint,
    Contract,
    CostRates,
    Credits,
    ItemKind,
    LabManagerObservation,
    NonEmptyStr,
    Paper,
    ResourceItem,
    SampleUnit,
    ScientistObservation,
    StaffCount,
    Substitution,
    TimeLimit,
    check_budget,
)
from replicalab.text import stated_without_denial

MAX_TECHNIQUE_CANDIDATES = 4  # technique variants a case may list
MAX_ELEMENT_CANDIDATES = 8  # candidate elements a case may list
MAX_CONTROL_CANDIDATES = 6  # candidate controls a case may list

Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[Difficulty, ...] = ("easy", "medium", "hard")
Split = Literal["train", "validation", "test"]
SPLITS: tuple[Split, ...] = ("train", "validation", "test")


class HiddenReferenceSpec(Contract):
    """The plan the original authors ran; only the judge (and an oracle) may read it."""

    summary: NonEmptyStr
    required_elements: list[NonEmptyStr]  # things a faithful replication must include
    flexible_elements: list[NonEmptyStr]  # things that may change without losing fidelity
    target_metric: NonEmptyStr
    target_value: float = Field(allow_inf_nan=False)
    technique: str = ""  # the method as the authors ran it (the variant the generator drew)
    original_controls: list[NonEmptyStr] = Field(default_factory=list)  # the controls they ran
    sample_size: int = Field(default=0, ge=0, le=MAX_SAMPLE_SIZE)  # their n; 0: not known


class CatalogueItem(Contract):
    name: NonEmptyStr
    kind: ItemKind


class Choice(Contract):
    """One thing a study may have done, and the sentence of a method paragraph that says it did."""

    name: NonEmptyStr  # what a protocol writes: a few plain words the judge matches
    clue: NonEmptyStr  # a sentence that names `name` verbatim and affirms it

    @model_validator(mode="after")
    def _sentences_name_the_choice(self) -> Choice:
        """A reader finds a choice only through a sentence that names it (case aside), and the
        clue is what the paper says the study did: a clue that denies its choice would tell the
        reader the opposite of the study the generator drew."""
        for field in ("clue", "negated"):
            sentence = getattr(self, field, None)
            if sentence is not None and self.name.lower() not in sentence.lower():
                raise ValueError(f"{field}: must name {self.name!r} verbatim, got {sentence!r}")
        if not stated_without_denial(self.name, self.clue):
            raise ValueError(f"clue: must affirm {self.name!r}, but a negation governs it in {self.clue!r}")
        return self


class Element(Choice):
    """A candidate element of the method; `negated` says, naming it, that the study did not do it."""

    negated: NonEmptyStr


class PaperCase(Contract):
    """One hand-written study to replicate. Its exact choices vary per pack: the generator draws
    one technique variant, `required_count` of the elements, `control_count` of the controls, the
    study's sample size and its headline number, and writes the public method and finding from
    the draw, so a careful reader recovers most of them and a remembered title does not."""

    case_id: NonEmptyStr
    split: Split  # the set the case belongs to (docs/splits.md: how the built-in ones were set)
    title: NonEmptyStr
    hypothesis: NonEmptyStr  # may use {target}
    method_intro: NonEmptyStr  # the fixed opening of the method paragraph
    finding: NonEmptyStr  # the key finding; uses {n} and {target}
    experiment_goal: NonEmptyStr
    task_summary: NonEmptyStr
    success_criteria: list[NonEmptyStr] = Field(min_length=1)  # may use {target}
    target_metric: NonEmptyStr
    target_range: tuple[float, float]
    target_decimals: int = Field(ge=0, le=4)
    techniques: list[Choice] = Field(min_length=2, max_length=MAX_TECHNIQUE_CANDIDATES)
    elements: list[Element] = Field(min_length=3, max_length=MAX_ELEMENT_CANDIDATES)
    required_count: int = Field(ge=1)
    controls: list[Choice] = Field(min_length=2, max_length=MAX_CONTROL_CANDIDATES)
    control_count: int = Field(ge=1)
    flexible_elements: list[NonEmptyStr] = Field(min_length=1)
    needed_equipment: list[NonEmptyStr] = Field(min_length=1)
    needed_reagents: list[NonEmptyStr] = Field(min_length=1)
    required_review: NonEmptyStr  # e.g. "independent code review"; a control must name it
    forbidden_practices: list[NonEmptyStr] = Field(min_length=1)
    sample_size_range: tuple[int, int]  # the study's n is drawn in it
    min_sample_size: int = Field(ge=1, le=MAX_SAMPLE_SIZE)  # the least that still tests the claim
    base_duration_days: int = Field(ge=1, le=MAX_DURATION_DAYS)
    min_duration_days: int = Field(ge=1, le=MAX_DURATION_DAYS)

    @model_validator(mode="after")
    def _draws_are_possible(self) -> PaperCase:
        low, high = self.sample_size_range
        if not self.min_sample_size <= low <= high <= MAX_SAMPLE_SIZE:
            raise ValueError(
                f"sample_size_range: need min_sample_size <= low <= high <= {MAX_SAMPLE_SIZE}, got {low}, {high}"
            )
        low_target, high_target = self.target_range
        if not (math.isfinite(low_target) and math.isfinite(high_target)):
            raise ValueError(
                f"target_range of {self.case_id!r}: must be finite numbers, got [{low_target}, {high_target}]"
            )
        if low_target > high_target:
            raise ValueError(
                f"target_range of {self.case_id!r}: must be [low, high], got [{low_target}, {high_target}]"
            )
        if self.min_duration_days > self.base_duration_days:
            raise ValueError(
                f"min_duration_days: {self.min_duration_days} exceeds base_duration_days {self.base_duration_days}"
            )
        if self.required_count >= len(self.elements):
            raise ValueError("required_count: must leave at least one candidate element undrawn")
        if self.control_count >= len(self.controls):
            raise ValueError("control_count: must leave at least one candidate control undrawn")
        if "{n}" not in self.finding or "{target}" not in self.finding:
            raise ValueError("finding: must use {n} and {target}")
        names = [c.name.lower() for c in (*self.techniques, *self.elements, *self.controls)]
        if len(set(names)) != len(names):
            raise ValueError("techniques, elements, controls: names must be distinct")
        if self.required_review.lower() in names:
            raise ValueError("required_review: must not be a candidate control")
        return self


class BaselinePlan(Contract):
    """The paper-blind plan of a family's domain, and the words that tell a paper is of it.

    The baseline Scientist proposes the `technique` and `controls` of the registered family
    whose `hints` the paper names most; equal counts go to the higher `priority`, and a paper
    naming none gets the plan of lowest priority (the most general domain).
    """

    technique: NonEmptyStr
    controls: list[NonEmptyStr] = Field(min_length=2)  # the first two always go in; more to meet min_controls
    hints: list[NonEmptyStr] = Field(min_length=1)  # words or phrases, matched whole
    priority: int = 0


class TemplateData(Contract):
    """A scenario family: its domain, its lab catalogue, its substitutions and its papers."""

    template: NonEmptyStr
    domain_id: NonEmptyStr
    safety_restrictions: list[NonEmptyStr] = Field(min_length=1)
    # What a plan's text would say to break the safety restrictions ("live trading" for
    # "offline execution only"), one or more phrases per restriction: each becomes a hard
    # forbidden-practice constraint of every pack, so the lab's rules bind like the paper's.
    restricted_practices: list[NonEmptyStr] = Field(min_length=1)
    baseline_plan: BaselinePlan  # what a paper-blind baseline proposes in this domain
    # What one sample of the family's studies is; the paper names it beside the sample size.
    sample_unit: SampleUnit = DEFAULT_SAMPLE_UNIT
    catalogue: list[CatalogueItem] = Field(min_length=4)  # items beside the cases' needs
    substitutions: list[Substitution] = Field(min_length=1)
    cases: list[PaperCase] = Field(min_length=3)


class LabFacts(Contract):
    """The lab's private numbers; the Lab Manager sees them, the Scientist sees only the brief."""

    budget_total: Credits
    budget_remaining: Credits  # at most budget_total
    staff_count: StaffCount
    time_limit_days: TimeLimit
    safety_restrictions: list[str]
    rates: CostRates = Field(default_factory=CostRates)  # what the lab charges (private)

    @model_validator(mode="after")
    def _budget_within_total(self) -> LabFacts:
        check_budget(self.budget_total, self.budget_remaining)
        return self


class NormalizedScenarioPack(Contract):
    """One generated scenario: the public brief, the private lab, the hidden reference.

    The derived tables below are what the rules, the judge and the env read, each derived from
    the pack's fields on first read.
    """

    scenario_id: str  # f"{template}-{split}-{difficulty}-{seed}"
    template: str
    split: Split
    difficulty: Difficulty
    seed: int = Field(ge=0)
    domain_id: str
    case_id: str
    paper: Paper
    candidates: Candidates
    experiment_goal: str
    task_summary: str
    success_criteria: list[str]
    constraints: list[Constraint]
    resources: list[ResourceItem] = Field(max_length=MAX_LIST_ITEMS)  # a plan may ask for them all
    allowed_substitutions: list[Substitution]
    hidden_reference_spec: HiddenReferenceSpec
    lab: LabFacts
    scientist_observation: ScientistObservation
    lab_manager_observation: LabManagerObservation

    @cached_property
    def resource_by_name(self) -> dict[str, ResourceItem]:
        """Lower-cased name -> item, for the checks' lookups."""
        return {item.key: item for item in self.resources}

    @cached_property
    def substitutes(self) -> dict[str, list[str]]:
        """Lower-cased original -> alternatives that the lab actually has available."""
        return self._substitution_tables[0]

    @cached_property
    def essentials(self) -> tuple[Essential, ...]:
        """The items the method cannot run without, in resource order, with the names that stand
        for each (what validation, the Lab Manager's fixer and the judge read)."""
        return self._substitution_tables[1]

    @cached_property
    def quantities(self) -> dict[str, tuple[float, ...]]:
        """Constraint kind -> the bounds its constraints state, in the constraints' order."""
        return quantity_table(self.constraints)

    @cached_property
    def terms(self) -> dict[str, tuple[str, ...]]:
        """Constraint kind -> the non-empty terms (reviews, forbidden practices), in order."""
        return term_table(self.constraints)

    @cached_property
    def _substitution_tables(self) -> tuple[dict[str, list[str]], tuple[Essential, ...]]:
        return substitution_tables(
            self.resource_by_name,
            self.allowed_substitutions,
            [(item.key, item) for item in self.resources if item.essential],
        )


def quantity_table(constraints: list[Constraint]) -> dict[str, tuple[float, ...]]:
    """Constraint kind -> the bounds its constraints state, in the constraints' order."""
    table: dict[str, tuple[float, ...]] = {}
    for c in constraints:
        if c.quantity is not None:
            table[c.kind] = (*table.get(c.kind, ()), c.quantity)
    return table


def term_table(constraints: list[Constraint]) -> dict[str, tuple[str, ...]]:
    """Constraint kind -> the non-empty terms (reviews, forbidden practices), in order."""
    table: dict[str, tuple[str, ...]] = {}
    for c in constraints:
        if c.term:
            table[c.kind] = (*table.get(c.kind, ()), c.term)
    return table


def substitution_tables(
    by_name: dict[str, ResourceItem],
    substitutions: list[Substitution],
    essential_items: list[tuple[str, ResourceItem]],
) -> tuple[dict[str, list[str]], tuple[Essential, ...]]:
    """A pack's `substitutes` and `essentials`, from its items by lower-cased name, its allowed
    substitutions, and its essential items as (lower-cased name, item) in resource order."""
    substitutes: dict[str, list[str]] = {}
    in_lab: dict[str, list[str]] = {}  # original key -> the keys of its `substitutes`
    allowed: dict[str, list[str]] = {}  # original key -> every allowed alternative's key
    for sub in substitutions:
        original, alternative = sub.original_key, sub.alternative_key
        allowed.setdefault(original, []).append(alternative)
        listed = by_name.get(alternative)
        if listed is not None and listed.available:
            substitutes.setdefault(original, []).append(sub.alternative)
            in_lab.setdefault(original, []).append(alternative)
    essentials = tuple(
        Essential(item, frozenset([key, *in_lab.get(key, ())]), frozenset([key, *allowed.get(key, ())]))
        for key, item in essential_items
    )
    return substitutes, essentials


class Essential(NamedTuple):
    """An item the case's method needs, and the lower-cased names that satisfy the need."""

    item: ResourceItem
    in_lab: frozenset[str]  # its own name and the allowed substitutes the lab has available
    allowed: frozenset[str]  # its own name and every allowed substitute, available or not
