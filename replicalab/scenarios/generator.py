"""Turn (seed, template, difficulty) into one `NormalizedScenarioPack`.

The paper comes from the template's hand-written cases; the seed varies the lab around it:
budget, time limit, staff, which catalogue items are stocked, booked or out of stock, and which
substitutions exist. Difficulty tightens the lab mechanically (spec §2):

- easy: the paper's own plan fits with slack; every essential item is available.
- medium: budget and time are cut below the paper's plan; one essential item is unavailable
  but has an available allowed substitute.
- hard: cuts further, down to the smallest plan that still tests the claim; staff is the
  minimum that plan needs; one or two essential items need a substitution.

Every pack admits a protocol that passes all seven checks: the case's minimal plan with the
substitutes swapped in (`minimal_protocol`), which the bounds are computed from.

A pack's constraints, by id: c1-c3 the lab's numbers (duration, budget, staff; c3 only where a
plan could exceed it); from c4 the case's rules (sample size, controls, review, each forbidden
practice, and on hard the soft sample cap); then s1, s2, ... the lab's safety rules, one hard
forbidden practice per restricted practice of the template, in the template's order.

All randomness is one block of uniforms drawn from a `default_rng` seeded with one integer that
packs seed, template and difficulty side by side, so generation is cheap and identical in any
process.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter
from typing import NamedTuple

import numpy as np

from replicalab.lab_costs import estimate_protocol_cost, estimate_staff_load
from replicalab.models import (
    Constraint,
    ItemKind,
    LabManagerObservation,
    Paper,
    Protocol,
    ResourceItem,
    ScientistObservation,
    Substitution,
    construct,
    construct_from,
)
from replicalab.scenarios.registry import check_difficulty, get_template, template_key
from replicalab.scenarios.types import (
    DIFFICULTIES,
    Essential,
    HiddenReferenceSpec,
    LabFacts,
    NormalizedScenarioPack,
    PaperCase,
    TemplateData,
    quantity_table,
    substitution_tables,
    term_table,
)

DEFAULT_MAX_ROUNDS = 6
_EXTRA_ITEMS = (3, 5)  # how many catalogue items beyond the case's needs a lab lists
_EXTRA_SPAN = _EXTRA_ITEMS[1] - _EXTRA_ITEMS[0] + 1
_UNAVAILABLE_EXTRA_P = {"easy": 0.2, "medium": 0.35, "hard": 0.5}
_MIN_CONTROLS = {"easy": 2, "medium": 3, "hard": 3}
_MAX_STAFF_LOAD = 5  # the most people `estimate_staff_load` can ask for
_N_UNIFORMS = 64
_MAX_ESSENTIALS = 4096  # Essentials a template plan keeps for reuse

# Generation runs once per reset, so the template plan below keeps what it reads off the
# template's models (an attribute read on a pydantic model costs several times a slot's) in
# plain slots, computed once per template and shared by its packs.


@dataclass(frozen=True, slots=True, eq=False)
class _Entry:
    """A resource item as packs list it, with what a pack's tables read off it."""

    key: str  # the item's lower-cased name
    item: ResourceItem
    shelf: int  # which of the Lab Manager's four name lists the item goes in (`_SHELVES`)
    needed: bool  # the item is essential


@dataclass(frozen=True, slots=True, eq=False)
class _Swap:
    """A template substitution with the names a pack's tables read off it."""

    sub: Substitution
    original_key: str
    alternative: str
    alternative_key: str


class _Bounds(NamedTuple):
    """A case's numbers at one difficulty, which the lab's numbers are drawn around."""

    min_cost: float  # of the minimal plan
    min_staff: int
    ref_cost: float  # of the paper's own plan, or the minimal plan's if that is more
    ref_staff: int
    least_budget: float  # the least budget the minimal plan fits in, with 2 % to spare


@dataclass(frozen=True)
class _CasePlan:
    """What a case needs, computed once per template: items, their swaps, plan costs."""

    case_id: str  # the case's fields that every pack copies, read once
    paper: Paper
    goal: str
    summary: str
    criteria: list[str]
    needs: tuple[tuple[str, _Entry, tuple[_Swap, ...]], ...]  # (name, item missing, its swaps)
    stocked: dict[str, _Entry]  # every need, as the lab lists it when it has it
    base_days: int
    min_days: int
    rules: dict[str, list[Constraint]]  # difficulty -> the case's constraints, then the safety rules
    rule_quantities: dict[str, dict[str, tuple[float, ...]]]  # difficulty -> `quantity_table(rules)`
    rule_terms: dict[str, dict[str, tuple[str, ...]]]  # difficulty -> `term_table(rules)`
    bounds: dict[str, _Bounds]  # difficulty -> what the lab's numbers are drawn around
    reference: HiddenReferenceSpec  # the case's hidden spec, with its technique filled in


@dataclass(frozen=True)
class _TemplatePlan:
    data: TemplateData
    key: int
    domain_id: str
    safety: list[str]  # the lab's safety restrictions
    spares: dict[str, _Entry]  # any item name -> the item, available, not essential (a substitute)
    extras: tuple[tuple[str, _Entry, _Entry], ...]  # catalogue (name, stocked, unavailable)
    rank_keys: Callable[[list[float]], Sequence[float]]  # uniforms -> the catalogue's sort keys
    cases: tuple[_CasePlan, ...]
    swaps_by_original: dict[str, tuple[_Swap, ...]]
    # (id of an essential item of this plan, lower-cased alternatives the lab has, every allowed
    # alternative) -> its Essential, which is immutable, so packs share it. The plan holds its
    # items, so no id is reused while the table lives. A need has few substitutions, so the table
    # stays small; `_MAX_ESSENTIALS` bounds it for a template with many.
    essentials: dict[tuple[int, tuple[str, ...], tuple[str, ...]], Essential] = field(default_factory=dict)

    def essential(
        self, key: str, item: ResourceItem, in_lab: tuple[str, ...], allowed: tuple[str, ...]
    ) -> Essential:
        """`substitution_tables`' factory of Essentials, sharing equal ones between packs."""
        facts = (id(item), in_lab, allowed)
        found = self.essentials.get(facts)
        if found is None:
            found = Essential.of(key, item, in_lab, allowed)
            if len(self.essentials) < _MAX_ESSENTIALS:
                self.essentials[facts] = found
        return found


_plans: dict[str, _TemplatePlan] = {}


def _plan(template: str) -> _TemplatePlan:
    data = get_template(template)
    cached = _plans.get(template)
    if cached is not None and cached.data is data:
        return cached
    kinds: dict[str, ItemKind] = {item.name: item.kind for item in data.catalogue}
    swaps: dict[str, list[_Swap]] = {}
    made: dict[int, _Swap] = {}  # one per substitution object: generation tells them apart by identity
    for sub in data.substitutions:
        swap = made.get(id(sub))
        if swap is None:
            swap = made[id(sub)] = _Swap(sub, sub.original_key, sub.alternative, sub.alternative_key)
        swaps.setdefault(sub.original, []).append(swap)
    safety_rules = _safety_constraints(data.restricted_practices)
    cases = []
    for case in data.cases:
        essentials: tuple[tuple[str, ItemKind], ...] = tuple(
            (n, "equipment") for n in case.needed_equipment
        ) + tuple((n, "reagent") for n in case.needed_reagents)
        stocked: dict[str, _Entry] = {}
        needs = []
        for name, kind in essentials:
            kinds[name] = kind
            stocked[name], short = _stock(name, kind, True)
            needs.append((name, short, tuple(swaps.get(name, ()))))
        reference = published_protocol(case)
        rules: dict[str, list[Constraint]] = {
            level: _case_constraints(case, level, first_id=4) + safety_rules for level in DIFFICULTIES
        }
        cases.append(
            _CasePlan(
                case_id=case.case_id,
                paper=case.paper,
                goal=case.experiment_goal,
                summary=case.task_summary,
                criteria=case.success_criteria,
                needs=tuple(needs),
                stocked=stocked,
                base_days=case.base_duration_days,
                min_days=case.min_duration_days,
                rules=rules,
                rule_quantities={level: quantity_table(rules[level]) for level in DIFFICULTIES},
                rule_terms={level: term_table(rules[level]) for level in DIFFICULTIES},
                reference=case.hidden_reference.model_copy(update={"technique": case.technique}),
                bounds={
                    level: _bounds(reference, minimal_protocol(case, level, {})) for level in DIFFICULTIES
                },
            )
        )
    plan = _TemplatePlan(
        data=data,
        key=template_key(template),
        domain_id=data.domain_id,
        safety=data.safety_restrictions,
        spares={name: _entry(name, kind, "available", False) for name, kind in kinds.items()},
        extras=tuple((item.name, *_stock(item.name, item.kind, False)) for item in data.catalogue),
        rank_keys=_rank_keys(len(data.catalogue)),
        cases=tuple(cases),
        swaps_by_original={k: tuple(v) for k, v in swaps.items()},
    )
    _plans[template] = plan
    return plan


def _rank_keys(n_items: int) -> Callable[[list[float]], Sequence[float]]:
    """The i-th catalogue item sorts by uniform 16 + i % 16: a slice of the block when there are
    at most 16 items (a list, whose items a sort key reads faster than a tuple's), else a tuple
    (the catalogue has at least 4 items, so the getter returns one)."""
    if n_items <= 16:
        return itemgetter(slice(16, 16 + n_items))
    return itemgetter(*(16 + i % 16 for i in range(n_items)))


def _bounds(reference: Protocol, minimal: Protocol) -> _Bounds:
    """Swaps change the minimal plan's names, not its counts, so one `_Bounds` serves every pack."""
    min_cost, min_staff = estimate_protocol_cost(minimal), estimate_staff_load(minimal)
    return _Bounds(
        min_cost=min_cost,
        min_staff=min_staff,
        ref_cost=max(estimate_protocol_cost(reference), min_cost),
        ref_staff=max(estimate_staff_load(reference), min_staff),
        least_budget=math.ceil(min_cost * 1.02 / 10.0) * 10.0,
    )


# The Lab Manager's name lists, in its observation's order, by (kind, available).
_SHELVES = {("equipment", True): 0, ("equipment", False): 1, ("reagent", True): 2, ("reagent", False): 3}


def _entry(name: str, kind: ItemKind, status: str, essential: bool) -> _Entry:
    """Resource items are frozen values, built once per template plan and shared by its packs."""
    item = construct(ResourceItem, name=name, kind=kind, status=status, essential=essential)
    return _Entry(item.key, item, _SHELVES[kind, item.available], essential)


def _stock(name: str, kind: ItemKind, essential: bool) -> tuple[_Entry, _Entry]:
    """The item as the lab lists it when it has it, and when it is booked / out of stock."""
    unavailable = "booked" if kind == "equipment" else "out_of_stock"
    return _entry(name, kind, "available", essential), _entry(name, kind, unavailable, essential)


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed: expected a non-negative int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed: must be non-negative, got {seed}")
    return int(seed)


def published_protocol(case: PaperCase) -> Protocol:
    """The paper's own plan: full size and duration, every control, the original items."""
    return Protocol(
        sample_size=case.base_sample_size,
        controls=[*case.suggested_controls, case.required_review],
        technique=case.technique,
        duration_days=case.base_duration_days,
        required_equipment=list(case.needed_equipment),
        required_reagents=list(case.needed_reagents),
        rationale=f"Replicate {case.paper.title} as published.",
    )


def minimal_protocol(case: PaperCase, difficulty: str, swaps: dict[str, str]) -> Protocol:
    """The smallest plan that still tests the case's claim, with `swaps` applied to its items."""
    controls = [*case.suggested_controls[: _MIN_CONTROLS[difficulty] - 1], case.required_review]
    return Protocol(
        sample_size=case.min_sample_size,
        controls=controls,
        technique=case.technique,
        duration_days=case.min_duration_days,
        required_equipment=[swaps.get(n, n) for n in case.needed_equipment],
        required_reagents=[swaps.get(n, n) for n in case.needed_reagents],
        rationale=f"Smallest faithful test of: {case.paper.title}",
    )


def generate_scenario(
    seed: int, template: str = "math_reasoning", difficulty: str = "easy"
) -> NormalizedScenarioPack:
    """Generate the pack for (seed, template, difficulty); the same inputs give the same pack."""
    seed = _check_seed(seed)
    level = check_difficulty(difficulty)
    plan = _plan(template)
    # One integer entropy (seed, template, difficulty packed side by side) seeds faster than a
    # list and gives every combination its own stream.
    rng = np.random.default_rng((seed << 34) | (plan.key << 2) | DIFFICULTIES.index(level))
    u = rng.random(_N_UNIFORMS).tolist()
    # Disjoint ranges of the block feed disjoint decisions, so changing one never shifts another:
    # 0 the case; 1 whether a hard lab misses two items; 2-7 which
    # substitute rescues each missing item; 8-15 which items go missing; 16-31 the catalogue's
    # order; 32 how many extras; 33-43 whether each is unavailable; 44-59 which optional
    # substitutions the lab allows; 60-63 the lab's numbers.
    cp = plan.cases[int(u[0] * len(plan.cases))]

    # Which essential items are unavailable (those with the smallest of uniforms 8...), and the
    # substitute the lab has instead.
    entries = dict(cp.stocked)  # name -> entry, in the order the lab lists them
    rescues: list[_Swap] = []
    substitutions: list[Substitution] = []  # the subs of `rescues`, then of the optional swaps
    if level != "easy":
        needs = cp.needs
        order = sorted(range(len(needs)), key=u[8 : 8 + len(needs)].__getitem__)
        missing = {needs[order[0]][0]}
        if level == "hard" and u[1] < 0.5:
            missing.add(needs[order[1]][0])
        choice = iter(u[2:8])
        swaps: dict[str, str] = {}
        for name, short, options in needs:
            if name in missing:
                swap = options[int(next(choice) * len(options))]
                swaps[name] = swap.alternative
                rescues.append(swap)
                substitutions.append(swap.sub)
                entries[name] = short
        for alt in swaps.values():
            entries[alt] = plan.spares[alt]
    # The first catalogue extras in a seeded order, each unavailable with the level's odds.
    n_extra = _EXTRA_ITEMS[0] + int(u[32] * _EXTRA_SPAN)
    picked = []
    extras = plan.extras
    for extra in map(extras.__getitem__, sorted(range(len(extras)), key=plan.rank_keys(u).__getitem__)):
        if extra[0] not in entries:
            picked.append(extra)
            if len(picked) == n_extra:
                break
    p_unavailable = _UNAVAILABLE_EXTRA_P[level]
    for coin, (name, stocked, short) in enumerate(picked, start=33):
        entries[name] = short if u[coin] < p_unavailable else stocked

    # Substitutions the lab allows: the ones that rescue a missing item, plus a seeded share of
    # the others whose both ends the lab lists.
    allowed = list(rescues)
    coins = iter(u[44:60])
    for swaps_of in map(plan.swaps_by_original.get, entries):
        if swaps_of is not None:
            for swap in swaps_of:
                if swap.alternative in entries and swap not in rescues and next(coins, 0.0) < 0.5:
                    allowed.append(swap)
                    substitutions.append(swap.sub)

    # Lab numbers, bounded below by the minimal plan so that one always passes every check.
    min_cost, min_staff, ref_cost, ref_staff, least_budget = cp.bounds[level]
    slack = u[60]
    if level == "easy":
        budget = ref_cost * (1.25 + 0.35 * slack)
        time_limit = cp.base_days + 1 + int(4 * u[61])
        staff = ref_staff + 2 + int(2 * u[62])
        spent = 0.0
    elif level == "medium":
        budget = ref_cost * (0.85 + 0.2 * slack)
        time_limit = cp.base_days - 1 - int(2 * u[61])
        staff = ref_staff + (u[62] < 0.5)
        spent = 0.1 * u[63]
    else:
        budget = min_cost + (ref_cost - min_cost) * (0.1 + 0.3 * slack)
        time_limit = cp.min_days + int(2 * u[61])
        staff = min_staff
        spent = 0.1 + 0.15 * u[63]
    budget_remaining = float(max(round(budget / 10.0) * 10.0, least_budget))
    budget_total = float(round(budget_remaining / (1.0 - spent) / 10.0) * 10.0)
    time_limit = max(time_limit, cp.min_days)

    lab_rules, quantities = _lab_constraints(budget_remaining, time_limit, staff)
    constraints = lab_rules + cp.rules[level]
    # The listing in one pass: the items, the derived lookup by name, the Lab Manager's lists.
    resources: list[ResourceItem] = []
    by_name: dict[str, ResourceItem] = {}
    shelves: tuple[list[str], ...] = ([], [], [], [])
    needed: list[_Entry] = []
    for name, entry in entries.items():
        item = entry.item
        resources.append(item)
        by_name[entry.key] = item
        shelves[entry.shelf].append(name)
        if entry.needed:
            needed.append(entry)
    paper, goal = cp.paper, cp.goal
    lab = construct_from(
        LabFacts,
        {
            "budget_total": budget_total,
            "budget_remaining": budget_remaining,
            "staff_count": staff,
            "time_limit_days": time_limit,
            "safety_restrictions": list(plan.safety),
        },
    )
    pack = construct_from(
        NormalizedScenarioPack,
        {
            "scenario_id": f"{template}-{level}-{seed}",
            "template": template,
            "difficulty": level,
            "seed": seed,
            "domain_id": plan.domain_id,
            "case_id": cp.case_id,
            "paper": paper,
            "experiment_goal": goal,
            "task_summary": cp.summary,
            "success_criteria": list(cp.criteria),
            "constraints": constraints,
            "resources": resources,
            "allowed_substitutions": substitutions,
            "hidden_reference_spec": cp.reference,
            "lab": lab,
            "scientist_observation": construct_from(
                ScientistObservation,
                {
                    "paper": paper,
                    "experiment_goal": goal,
                    "constraints": constraints,
                    "resources": resources,
                    "substitutions": substitutions,
                    "conversation_history": [],
                    "current_protocol": None,
                    "round_number": 1,
                    "max_rounds": DEFAULT_MAX_ROUNDS,
                },
            ),
            "lab_manager_observation": construct_from(
                LabManagerObservation,
                {
                    "budget_total": budget_total,
                    "budget_remaining": budget_remaining,
                    "equipment_available": shelves[0],
                    "equipment_booked": shelves[1],
                    "reagents_in_stock": shelves[2],
                    "reagents_out_of_stock": shelves[3],
                    "staff_count": staff,
                    "time_limit_days": time_limit,
                    "safety_restrictions": lab.safety_restrictions,
                    "conversation_history": [],
                    "current_protocol": None,
                    "round_number": 1,
                    "max_rounds": DEFAULT_MAX_ROUNDS,
                    "feasibility": None,
                    "suggestion": None,
                },
            ),
        },
    )
    # The pack's derived tables, filled from their parts rather than re-derived: each equals what
    # its `NormalizedScenarioPack` property would derive, order included.
    tables = pack.__dict__
    # The lab's numbers come first, with kinds of their own and no terms; the rest is shared.
    quantities.update(cp.rule_quantities[level])
    tables["quantities"] = quantities
    tables["terms"] = dict(cp.rule_terms[level])
    tables["resource_by_name"] = by_name
    tables["substitutes"], tables["essentials"] = substitution_tables(
        by_name,
        ((swap.original_key, swap.alternative, swap.alternative_key) for swap in allowed),
        ((entry.key, entry.item) for entry in needed),
        plan.essential,
    )
    return pack


def _lab_constraints(
    budget: float, time_limit: int, staff: int
) -> tuple[list[Constraint], dict[str, tuple[float, ...]]]:
    """The rules set by the lab's numbers: ids c1-c3, and their `quantity_table`. Every constraint
    binds to a check (spec §2).

    A staff cap no plan can exceed (the staff formula tops out at `_MAX_STAFF_LOAD`) would be
    decorative, so c3 is stated only when it can bind.
    """
    days = float(time_limit)
    rules = [_lab_rule("max_duration_days", days), _lab_rule("max_budget", budget)]
    quantities: dict[str, tuple[float, ...]] = {"max_duration_days": (days,), "max_budget": (budget,)}
    if staff < _MAX_STAFF_LOAD:
        people = float(staff)
        rules.append(_lab_rule("max_staff", people))
        quantities["max_staff"] = (people,)
    return rules, quantities


# kind -> (id number, description with {q} for the bound, unit)
_LAB_RULES = {
    "max_duration_days": (1, "The experiment must finish within {q:g} days.", "days"),
    "max_budget": (2, "Total cost must not exceed {q:g} credits.", "credits"),
    "max_staff": (3, "At most {q:g} staff can be assigned.", "people"),
}


# The lab's numbers take few distinct values across seeds, and constraints are frozen values that
# packs may share, so each rule is built (its text formatted) once per number.
@lru_cache(maxsize=4096)
def _lab_rule(kind: str, quantity: float) -> Constraint:
    index, description, unit = _LAB_RULES[kind]
    return _constraint(
        f"c{index}", kind, True, description.format(q=quantity), quantity=quantity, comparator="<=", unit=unit
    )


def _constraint(
    constraint_id: str,
    kind: str,
    hard: bool,
    description: str,
    *,
    quantity: float | None = None,
    comparator: str | None = None,
    unit: str | None = None,
    term: str | None = None,
) -> Constraint:
    return construct(
        Constraint,
        id=constraint_id,
        kind=kind,
        description=description,
        hard=hard,
        quantity=quantity,
        comparator=comparator,
        unit=unit,
        term=term,
    )


def _case_constraints(case: PaperCase, level: str, first_id: int) -> list[Constraint]:
    """The rules that depend only on the paper and the difficulty (shared between packs)."""
    n_controls = _MIN_CONTROLS[level]
    specs: list[tuple[str, bool, str, dict[str, object]]] = [
        (
            "min_sample_size",
            True,
            f"Use at least {case.min_sample_size} samples to test the claim.",
            dict(quantity=float(case.min_sample_size), comparator=">=", unit="samples"),
        ),
        (
            "min_controls",
            level != "easy",
            f"Include at least {n_controls} controls.",
            dict(quantity=float(n_controls), comparator=">=", unit="controls"),
        ),
        (
            "required_review",
            True,
            f"A control must include the {case.required_review}.",
            dict(term=case.required_review),
        ),
    ]
    specs.extend(
        ("forbidden_practice", True, f"Forbidden practice: {practice}.", dict(term=practice))
        for practice in case.forbidden_practices
    )
    if level == "hard":
        cap = max(case.min_sample_size, round(case.base_sample_size * 0.8))
        specs.append(
            (
                "max_sample_size",
                False,
                f"Prefer at most {cap} samples.",
                dict(quantity=float(cap), comparator="<=", unit="samples"),
            )
        )
    return [
        _constraint(f"c{first_id + i}", kind, hard, text, **extra)  # type: ignore[arg-type]
        for i, (kind, hard, text, extra) in enumerate(specs)
    ]


def _safety_constraints(practices: list[str]) -> list[Constraint]:
    """The lab's safety rules as the brief states them: ids s1, s2, ..., each a hard, public
    forbidden practice that validation checks like the case's own (negation-aware)."""
    return [
        _constraint(f"s{i}", "forbidden_practice", True, f"Lab safety rule: no {practice}.", term=practice)
        for i, practice in enumerate(practices, start=1)
    ]
