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

All randomness is one block of uniforms drawn from `default_rng([seed, template, difficulty])`,
so generation is cheap and identical in any process.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter

import numpy as np

from replicalab.lab_costs import estimate_protocol_cost, estimate_staff_load
from replicalab.models import (
    Constraint,
    ItemKind,
    LabManagerObservation,
    Protocol,
    ResourceItem,
    ScientistObservation,
    Substitution,
    construct,
)
from replicalab.scenarios.registry import check_difficulty, get_template, template_key
from replicalab.scenarios.types import (
    DIFFICULTIES,
    HiddenReferenceSpec,
    LabFacts,
    NormalizedScenarioPack,
    PaperCase,
    TemplateData,
    quantity_table,
    term_table,
)

DEFAULT_MAX_ROUNDS = 6
_EXTRA_ITEMS = (3, 5)  # how many catalogue items beyond the case's needs a lab lists
_UNAVAILABLE_EXTRA_P = {"easy": 0.2, "medium": 0.35, "hard": 0.5}
_MIN_CONTROLS = {"easy": 2, "medium": 3, "hard": 3}
_MAX_STAFF_LOAD = 5  # the most people `estimate_staff_load` can ask for
_N_UNIFORMS = 64


@dataclass(frozen=True)
class _CasePlan:
    """What a case needs, computed once per template: items, their swaps, plan costs."""

    case: PaperCase
    needs: tuple[tuple[str, ResourceItem, ResourceItem], ...]  # (name, item stocked, item missing)
    swaps: dict[str, tuple[Substitution, ...]]  # essential name -> its template substitutions
    ref_cost: float
    ref_staff: int
    rules: dict[str, list[Constraint]]  # difficulty -> the constraints that depend on the paper only
    rule_quantities: dict[str, dict[str, tuple[float, ...]]]  # difficulty -> `quantity_table(rules)`
    rule_terms: dict[str, dict[str, tuple[str, ...]]]  # difficulty -> `term_table(rules)`
    floor: dict[str, tuple[float, int]]  # difficulty -> (cost, staff) of the minimal plan
    reference: HiddenReferenceSpec  # the case's hidden spec, with its technique filled in


@dataclass(frozen=True)
class _TemplatePlan:
    data: TemplateData
    key: int
    spares: dict[str, ResourceItem]  # any item name -> the item, available, not essential (a substitute)
    extras: tuple[tuple[str, ResourceItem, ResourceItem], ...]  # catalogue (name, stocked, unavailable)
    rank_keys: Callable[[list[float]], tuple[float, ...]]  # uniforms -> the catalogue's sort keys
    cases: tuple[_CasePlan, ...]
    subs_by_original: dict[str, tuple[Substitution, ...]]


_plans: dict[str, _TemplatePlan] = {}


def _plan(template: str) -> _TemplatePlan:
    data = get_template(template)
    cached = _plans.get(template)
    if cached is not None and cached.data is data:
        return cached
    kinds: dict[str, ItemKind] = {item.name: item.kind for item in data.catalogue}
    subs: dict[str, list[Substitution]] = {}
    for sub in data.substitutions:
        subs.setdefault(sub.original, []).append(sub)
    cases = []
    for case in data.cases:
        essentials: tuple[tuple[str, ItemKind], ...] = tuple(
            (n, "equipment") for n in case.needed_equipment
        ) + tuple((n, "reagent") for n in case.needed_reagents)
        for name, kind in essentials:
            kinds[name] = kind
        needs = tuple((name, *_stock(name, kind, True)) for name, kind in essentials)
        reference = published_protocol(case)
        rules: dict[str, list[Constraint]] = {
            level: _case_constraints(case, level, first_id=4) for level in DIFFICULTIES
        }
        cases.append(
            _CasePlan(
                case=case,
                needs=needs,
                swaps={name: tuple(subs.get(name, ())) for name, _ in essentials},
                ref_cost=estimate_protocol_cost(reference),
                ref_staff=estimate_staff_load(reference),
                rules=rules,
                rule_quantities={level: quantity_table(rules[level]) for level in DIFFICULTIES},
                rule_terms={level: term_table(rules[level]) for level in DIFFICULTIES},
                reference=case.hidden_reference.model_copy(update={"technique": case.technique}),
                floor={level: _floor(minimal_protocol(case, level, {})) for level in DIFFICULTIES},
            )
        )
    plan = _TemplatePlan(
        data=data,
        key=template_key(template),
        spares={name: _item(name, kind, "available", False) for name, kind in kinds.items()},
        extras=tuple((item.name, *_stock(item.name, item.kind, False)) for item in data.catalogue),
        # The i-th catalogue item sorts by uniform 16 + i % 16 (the catalogue has at least 4 items,
        # so the getter returns a tuple).
        rank_keys=itemgetter(*(16 + i % 16 for i in range(len(data.catalogue)))),
        cases=tuple(cases),
        subs_by_original={k: tuple(v) for k, v in subs.items()},
    )
    _plans[template] = plan
    return plan


def _floor(protocol: Protocol) -> tuple[float, int]:
    return estimate_protocol_cost(protocol), estimate_staff_load(protocol)


def _item(name: str, kind: ItemKind, status: str, essential: bool) -> ResourceItem:
    """Resource items are frozen values, built once per template plan and shared by its packs."""
    return construct(ResourceItem, name=name, kind=kind, status=status, essential=essential)


def _stock(name: str, kind: ItemKind, essential: bool) -> tuple[ResourceItem, ResourceItem]:
    """The item as the lab lists it when it has it, and when it is booked / out of stock."""
    unavailable = "booked" if kind == "equipment" else "out_of_stock"
    return _item(name, kind, "available", essential), _item(name, kind, unavailable, essential)


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
    # Disjoint slices of the block feed disjoint decisions, so changing one never shifts another.
    draw = iter(u[0:8])  # case, how many items go missing, which substitute rescues each
    extra_draw = iter(u[32:44])  # how many catalogue extras, and whether each is unavailable
    sub_draw = iter(u[44:60])  # which optional substitutions the lab allows

    cp = plan.cases[int(next(draw) * len(plan.cases))]
    case = cp.case

    # Which essential items are unavailable (those with the smallest of uniforms 8...), and the
    # substitute the lab has instead. The hard coin is drawn at every level.
    n_missing = {"easy": 0, "medium": 1, "hard": 1 + (next(draw) < 0.5)}[level]
    missing: set[str] = set()
    if n_missing:
        needs = cp.needs
        order = sorted(range(len(needs)), key=u[8 : 8 + len(needs)].__getitem__)
        missing = {needs[i][0] for i in order[:n_missing]}
    swaps: dict[str, str] = {}
    chosen_subs: list[Substitution] = []
    items: dict[str, ResourceItem] = {}
    for name, stocked, short in cp.needs:
        if name in missing:
            options = cp.swaps[name]
            sub = options[int(next(draw) * len(options))]
            swaps[name] = sub.alternative
            chosen_subs.append(sub)
            items[name] = short
        else:
            items[name] = stocked
    for alt in swaps.values():
        items[alt] = plan.spares[alt]
    # The first catalogue extras in a seeded order, each unavailable with the level's odds.
    n_extra = _EXTRA_ITEMS[0] + int(next(extra_draw) * (_EXTRA_ITEMS[1] - _EXTRA_ITEMS[0] + 1))
    picked = []
    for i in sorted(range(len(plan.extras)), key=plan.rank_keys(u).__getitem__):
        extra = plan.extras[i]
        if extra[0] not in items:
            picked.append(extra)
            if len(picked) == n_extra:
                break
    p_unavailable = _UNAVAILABLE_EXTRA_P[level]
    for name, stocked, short in picked:
        items[name] = short if next(extra_draw, 0.0) < p_unavailable else stocked

    # Substitutions the lab allows: the ones that rescue a missing item, plus a seeded share of
    # the others whose both ends the lab lists.
    substitutions = list(chosen_subs)
    taken = {id(sub) for sub in chosen_subs}
    for name in items:
        for sub in plan.subs_by_original.get(name, ()):
            if id(sub) in taken or sub.alternative not in items:
                continue
            if next(sub_draw, 0.0) < 0.5:
                substitutions.append(sub)

    # Lab numbers, bounded below by the minimal plan so that one always passes every check.
    min_cost, min_staff = cp.floor[level]  # swaps change names, not counts
    ref_cost = max(cp.ref_cost, min_cost)
    slack = u[60]
    if level == "easy":
        budget = ref_cost * (1.25 + 0.35 * slack)
        time_limit = case.base_duration_days + 1 + int(4 * u[61])
        staff = max(cp.ref_staff, min_staff) + 2 + int(2 * u[62])
        spent = 0.0
    elif level == "medium":
        budget = ref_cost * (0.85 + 0.2 * slack)
        time_limit = case.base_duration_days - 1 - int(2 * u[61])
        staff = max(cp.ref_staff, min_staff) + (u[62] < 0.5)
        spent = 0.1 * u[63]
    else:
        budget = min_cost + (ref_cost - min_cost) * (0.1 + 0.3 * slack)
        time_limit = case.min_duration_days + int(2 * u[61])
        staff = min_staff
        spent = 0.1 + 0.15 * u[63]
    budget_remaining = float(max(round(budget / 10.0) * 10.0, math.ceil(min_cost * 1.02 / 10.0) * 10.0))
    budget_total = float(round(budget_remaining / (1.0 - spent) / 10.0) * 10.0)
    time_limit = max(time_limit, case.min_duration_days)

    lab_rules = _lab_constraints(budget_remaining, time_limit, staff)
    constraints = lab_rules + cp.rules[level]
    resources = list(items.values())
    lab = construct(
        LabFacts,
        budget_total=budget_total,
        budget_remaining=budget_remaining,
        staff_count=staff,
        time_limit_days=time_limit,
        safety_restrictions=list(plan.data.safety_restrictions),
    )
    pack = construct(
        NormalizedScenarioPack,
        scenario_id=f"{template}-{level}-{seed}",
        template=template,
        difficulty=level,
        seed=seed,
        domain_id=plan.data.domain_id,
        case_id=case.case_id,
        paper=case.paper,
        experiment_goal=case.experiment_goal,
        task_summary=case.task_summary,
        success_criteria=list(case.success_criteria),
        constraints=constraints,
        resources=resources,
        allowed_substitutions=substitutions,
        hidden_reference_spec=cp.reference,
        lab=lab,
        scientist_observation=construct(
            ScientistObservation,
            paper=case.paper,
            experiment_goal=case.experiment_goal,
            constraints=constraints,
            resources=resources,
            substitutions=substitutions,
            conversation_history=[],
            current_protocol=None,
            round_number=1,
            max_rounds=DEFAULT_MAX_ROUNDS,
        ),
        lab_manager_observation=_lab_manager_observation(lab, resources),
    )
    # The pack's bound and term tables, filled from their parts rather than re-derived: the lab's
    # rules come first, with kinds of their own and no terms; the case's part is shared by its packs.
    pack.__dict__["quantities"] = {**quantity_table(lab_rules), **cp.rule_quantities[level]}
    pack.__dict__["terms"] = dict(cp.rule_terms[level])
    return pack


def _lab_constraints(budget: float, time_limit: int, staff: int) -> list[Constraint]:
    """The rules set by the lab's numbers: ids c1-c3. Every constraint binds to a check (spec §2).

    A staff cap no plan can exceed (the staff formula tops out at `_MAX_STAFF_LOAD`) would be
    decorative, so c3 is stated only when it can bind.
    """
    rules = [_lab_rule("max_duration_days", float(time_limit)), _lab_rule("max_budget", budget)]
    if staff < _MAX_STAFF_LOAD:
        rules.append(_lab_rule("max_staff", float(staff)))
    return rules


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
        index, kind, True, description.format(q=quantity), quantity=quantity, comparator="<=", unit=unit
    )


def _constraint(
    index: int,
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
        id=f"c{index}",
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
        _constraint(first_id + i, kind, hard, text, **extra)  # type: ignore[arg-type]
        for i, (kind, hard, text, extra) in enumerate(specs)
    ]


def _lab_manager_observation(lab: LabFacts, resources: list[ResourceItem]) -> LabManagerObservation:
    equipment_available: list[str] = []
    equipment_booked: list[str] = []
    reagents_in_stock: list[str] = []
    reagents_out_of_stock: list[str] = []
    for r in resources:
        if r.kind == "equipment":
            (equipment_available if r.status == "available" else equipment_booked).append(r.name)
        else:
            (reagents_in_stock if r.status == "available" else reagents_out_of_stock).append(r.name)
    return construct(
        LabManagerObservation,
        budget_total=lab.budget_total,
        budget_remaining=lab.budget_remaining,
        equipment_available=equipment_available,
        equipment_booked=equipment_booked,
        reagents_in_stock=reagents_in_stock,
        reagents_out_of_stock=reagents_out_of_stock,
        staff_count=lab.staff_count,
        time_limit_days=lab.time_limit_days,
        safety_restrictions=lab.safety_restrictions,
        conversation_history=[],
        current_protocol=None,
        round_number=1,
        max_rounds=DEFAULT_MAX_ROUNDS,
        feasibility=None,
        suggestion=None,
    )
