"""What generation reads off a template, worked out once per template and shared by its packs.

A template's items and rules do not depend on the seed, so they are built here once:
each pack then only draws which of them it uses. Items and constraints are frozen values, so
packs may share them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from replicalab.models import (
    Candidates,
    Constraint,
    ItemKind,
    Protocol,
    ResourceItem,
    Substitution,
)
from replicalab.scenarios.difficulty import LEVELS
from replicalab.scenarios.paper import candidates_of, voice_of
from replicalab.scenarios.registry import get_template, template_key
from replicalab.scenarios.rules import adequate_days, case_constraints, safety_constraints
from replicalab.scenarios.types import (
    DIFFICULTIES,
    SPLITS,
    Difficulty,
    HiddenReferenceSpec,
    PaperCase,
    Split,
    TemplateData,
)
from replicalab.scenarios.wording import Voice

# The Lab Manager's four name lists, in its observation's order, by (kind, available).
SHELVES = {("equipment", True): 0, ("equipment", False): 1, ("reagent", True): 2, ("reagent", False): 3}


@dataclass(frozen=True)
class Listed:
    """An item as a lab lists it, with the facts a pack reads off it: a field of a pydantic model
    costs several times as much to read, and packs list the same items over and over."""

    item: ResourceItem
    kind: ItemKind  # the item's kind, which its price reads
    shelf: int  # which of the Lab Manager's name lists the item goes in (`SHELVES`)

    @classmethod
    def of(cls, item: ResourceItem) -> Listed:
        return cls(item, item.kind, SHELVES[item.kind, item.available])


@dataclass(frozen=True)
class Stock:
    """One item as the lab lists it when it has it, and when it is booked / out of stock."""

    name: str
    stocked: Listed
    missing: Listed

    @classmethod
    def of(cls, name: str, kind: ItemKind, essential: bool) -> Stock:
        unavailable = "booked" if kind == "equipment" else "out_of_stock"
        return cls(
            name,
            Listed.of(ResourceItem(name=name, kind=kind, status="available", essential=essential)),
            Listed.of(ResourceItem(name=name, kind=kind, status=unavailable, essential=essential)),
        )


@dataclass(frozen=True)
class Need:
    """An item the case's method needs, with the template's substitutions for it (medium and hard
    labs lack some needs and have one substitute instead)."""

    stock: Stock
    substitutions: tuple[Substitution, ...]


@dataclass(frozen=True)
class CasePlan:
    """One paper case, with what every pack of it shares."""

    case: PaperCase
    needs: tuple[Need, ...]  # equipment, then reagents, in the case's order
    rules: dict[Difficulty, list[Constraint]]  # the case's constraints, then the safety rules
    candidates: Candidates  # its public candidate lists
    voice: Voice  # how its candidates are said in its split's wording (`voice_of`)


@dataclass(frozen=True)
class TemplatePlan:
    data: TemplateData
    key: int  # `template_key` of the name, which seeds the template's packs
    catalogue: tuple[Stock, ...]  # the extras a lab may list, in the template's order
    spares: dict[str, Listed]  # catalogue name -> the item available, as a substitute
    substitutions_of: dict[str, tuple[Substitution, ...]]  # original name -> its substitutions
    cases: dict[Split, tuple[CasePlan, ...]]  # by split, in the template's order


_plans: dict[str, TemplatePlan] = {}


def template_plan(template: str) -> TemplatePlan:
    """The plan of a registered template, rebuilt when the name is registered anew."""
    data = get_template(template)
    plan = _plans.get(template)
    if plan is None or plan.data is not data:
        plan = _plans[template] = _make_plan(template, data)
    return plan


def _make_plan(template: str, data: TemplateData) -> TemplatePlan:
    substitutions_of: dict[str, tuple[Substitution, ...]] = {}
    for sub in data.substitutions:
        substitutions_of[sub.original] = (*substitutions_of.get(sub.original, ()), sub)
    catalogue = tuple(Stock.of(item.name, item.kind, essential=False) for item in data.catalogue)
    safety_rules = safety_constraints(data.restricted_practices)
    return TemplatePlan(
        data=data,
        key=template_key(template),
        catalogue=catalogue,
        spares={stock.name: stock.stocked for stock in catalogue},
        substitutions_of=substitutions_of,
        cases={
            split: tuple(
                _case_plan(case, substitutions_of, safety_rules) for case in data.cases if case.split == split
            )
            for split in SPLITS
        },
    )


def _case_plan(
    case: PaperCase, substitutions_of: dict[str, tuple[Substitution, ...]], safety_rules: list[Constraint]
) -> CasePlan:
    kinds: list[tuple[str, ItemKind]] = [(name, "equipment") for name in case.needed_equipment]
    kinds += [(name, "reagent") for name in case.needed_reagents]
    return CasePlan(
        case=case,
        needs=tuple(
            Need(Stock.of(name, kind, essential=True), substitutions_of.get(name, ())) for name, kind in kinds
        ),
        rules={level: case_constraints(case, level) + safety_rules for level in DIFFICULTIES},
        candidates=candidates_of(case),
        voice=voice_of(case),
    )


class PlanParts(NamedTuple):
    """The fields of a plan that its price and staff read (`replicalab.prices.Plan`): the
    generator prices three plans a pack from these alone, without validating a `Protocol` of
    case data that is valid already."""

    sample_size: int
    controls: list[str]
    duration_days: int
    required_equipment: list[str]
    required_reagents: list[str]


def published_protocol(case: PaperCase, reference: HiddenReferenceSpec) -> Protocol:
    """The study's own plan as a pack's paper reports it: its sample size, technique and
    controls (`reference`), the full duration, the original items."""
    return Protocol(
        **published_parts(case, reference)._asdict(),
        technique=reference.technique,
        elements=list(reference.required_elements),
        rationale=f"Replicate {case.title} as published.",
    )


def published_parts(case: PaperCase, reference: HiddenReferenceSpec) -> PlanParts:
    """The priced fields of `published_protocol`."""
    return PlanParts(
        sample_size=max(reference.sample_size, case.min_sample_size),
        controls=[*reference.original_controls, case.required_review],
        duration_days=case.base_duration_days,
        required_equipment=list(case.needed_equipment),
        required_reagents=list(case.needed_reagents),
    )


def minimal_protocol(
    case: PaperCase, difficulty: Difficulty, swaps: dict[str, str], reference: HiddenReferenceSpec
) -> Protocol:
    """The smallest plan that still tests the case's claim in a pack whose study is `reference`,
    with `swaps` applied to its items: the least sample size, the duration that earns full credit
    under the shortest time limit a lab of the case sets, and as many of the original controls
    (then the other candidates) as the level asks for, with the review."""
    return Protocol(
        **minimal_parts(case, difficulty, swaps, reference)._asdict(),
        technique=reference.technique,
        elements=list(reference.required_elements),
        rationale=f"Smallest faithful test of: {case.title}",
    )


def minimal_parts(
    case: PaperCase, difficulty: Difficulty, swaps: dict[str, str], reference: HiddenReferenceSpec
) -> PlanParts:
    """The priced fields of `minimal_protocol`."""
    originals = list(reference.original_controls)
    others = [c.name for c in case.controls if c.name not in originals]
    controls = [*originals, *others][: LEVELS[difficulty].min_controls - 1]
    return PlanParts(
        sample_size=case.min_sample_size,
        controls=[*controls, case.required_review],
        duration_days=adequate_days(case.min_duration_days),
        required_equipment=[swaps.get(n, n) for n in case.needed_equipment],
        required_reagents=[swaps.get(n, n) for n in case.needed_reagents],
    )
