"""Turn (seed, template, difficulty, split) into one `NormalizedScenarioPack`.

The paper comes from the template's hand-written cases of the split, its study drawn from the
case's variants (`study`); the seed varies the lab around it:
budget, time limit, staff, which catalogue items are stocked, booked or out of stock, and which
substitutions exist. Difficulty tightens the lab mechanically:

- easy: the paper's own plan fits with slack; every essential item is available; the lab
  charges the classic terms.
- medium: the budget pays for the study's plan without part of its samples (`BUDGET_SHARE`),
  at prices drawn around the classic terms (`RATE_RANGE`); one essential item is unavailable
  but has an available allowed substitute.
- hard: a smaller share of the samples on average, at prices above the classic terms; a
  shorter time limit; one or two essential items need a substitution.

So on medium and hard the study's own plan never fits, the best feasible plan sits on the
budget's boundary, and where that boundary lies depends on the lab's prices, which the
Scientist learns by asking or from the quote of a plan it proposed.

Every pack admits a protocol that passes all seven checks: the case's minimal plan with the
substitutes swapped in (`minimal_protocol`), which the bounds are computed from.

All randomness is one block of uniforms (the lab's `Draws`, the study's, the prices', the
paper's wording) from a `default_rng` seeded with one integer that packs seed, template, split
and difficulty side by side, so a pack is identical in any process.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from replicalab.models import LabManagerObservation, ResourceItem, ScientistObservation, Substitution
from replicalab.prices import CLASSIC_ITEM_PRICES, CostRates, estimate_protocol_cost, estimate_staff_load
from replicalab.scenarios.plan import (
    Bounds,
    CasePlan,
    Listed,
    Need,
    Stock,
    TemplatePlan,
    minimal_protocol,
    published_protocol,
    template_plan,
)
from replicalab.scenarios.registry import check_difficulty, check_has_cases, check_split
from replicalab.scenarios.rules import adequate_days, lab_constraints
from replicalab.scenarios.study import STUDY_DRAWS, WORDING_DRAWS, Study, draw_study
from replicalab.scenarios.types import (
    DIFFICULTIES,
    SPLITS,
    Difficulty,
    LabFacts,
    NormalizedScenarioPack,
    PaperCase,
    Split,
)
from replicalab.scenarios.wording import Fact

DEFAULT_MAX_ROUNDS = 6
LAB_DRAWS = 64  # uniforms the lab's decisions draw (`Draws`)
RATE_DRAWS = 24  # uniforms its prices draw: three rates, then one per listed item
RATE_RANGE: dict[Difficulty, tuple[float, float]] = {
    "easy": (1.0, 1.0),
    "medium": (0.6, 1.6),
    "hard": (1.2, 2.4),
}
"""What a lab charges, as multiples of the classic terms: the classic terms themselves on easy,
below or above them on medium, above them on hard (a busy facility that bills its time), so a
plan priced at the classic terms misses the budget's boundary on both harder levels."""
BUDGET_SHARE: dict[Difficulty, tuple[float, float]] = {"medium": (0.85, 0.95), "hard": (0.8, 0.95)}
"""The budget on medium and hard: what the study's own plan costs at the lab's prices without
its samples (its controls, its items with the lab's substitutes, the duration that earns full
credit), plus this share of what its reported sample size costs. The study's plan never fits,
and how many samples do depends on prices the Scientist learns by asking or from a quote.

The shares are high on purpose. A plan sized at the wrong prices ends, after the Lab Manager's
halving, with between half and all of the samples that fit (or, priced too high, with the share
of them that its estimate allowed), so what not knowing the prices costs is a fixed part of the
samples that fit: the more of the study the budget funds, the more a Scientist that does not
find out loses. Hard is tighter than medium on average and its prices are further from the
classic terms."""
_EXTRA_ITEMS = (3, 5)  # how many catalogue items beyond the case's needs a lab lists
_UNAVAILABLE_EXTRA_P = {"easy": 0.2, "medium": 0.35, "hard": 0.5}


class Draws(NamedTuple):
    """One pack's uniforms in [0, 1), named by the decision each feeds.

    They are disjoint slices of one block of 64 (`of`), so a change to one decision never
    shifts the draws of another. A list's i-th thing uses draw i modulo the list's length.
    """

    case: float  # which of the template's paper cases
    second_missing: float  # on hard, below 0.5: a second essential item is unavailable
    rescues: list[float]  # per unavailable essential item, in the case's order: its substitute
    need_ranks: list[float]  # per essential item: the lowest ranks are the unavailable ones
    catalogue_ranks: list[float]  # per catalogue item: the order in which extras are listed
    n_extras: float  # how many extras the lab lists (`_EXTRA_ITEMS`)
    extra_unavailable: list[float]  # per listed extra: below the level's odds, unavailable
    optional_swaps: list[float]  # per other listed substitution: below 0.5, allowed
    budget: float  # where the budget falls in the level's range
    time_limit: float
    staff: float
    spent: float  # the share of the budget already spent (medium and hard)

    @classmethod
    def of(cls, u: list[float]) -> Draws:
        """The named slices of a block of 64 uniforms."""
        return cls(
            case=u[0],
            second_missing=u[1],
            rescues=u[2:8],
            need_ranks=u[8:16],
            catalogue_ranks=u[16:32],
            n_extras=u[32],
            extra_unavailable=u[33:44],
            optional_swaps=u[44:60],
            budget=u[60],
            time_limit=u[61],
            staff=u[62],
            spent=u[63],
        )


def _uniforms(seed: int, template_key: int, split: Split, level: Difficulty) -> list[float]:
    """A pack's uniforms: the lab's block, its study's, its prices', then its paper's wording. One
    integer entropy (seed, template, split and difficulty side by side) gives every combination
    its own stream."""
    entropy = (seed << 36) | (template_key << 4) | (SPLITS.index(split) << 2) | DIFFICULTIES.index(level)
    draws = LAB_DRAWS + STUDY_DRAWS + RATE_DRAWS + WORDING_DRAWS
    values: list[float] = np.random.default_rng(entropy).random(draws).tolist()
    return values


def generate_scenario(
    seed: int, template: str = "math_reasoning", difficulty: str = "easy", split: str = "train"
) -> NormalizedScenarioPack:
    """Generate the pack for (seed, template, difficulty, split); the same inputs give the same
    pack. The paper case is drawn among the template's cases of `split`."""
    seed = _check_seed(seed)
    level = check_difficulty(difficulty)
    part = check_split(split)
    plan = template_plan(template)
    cases = plan.cases[part]
    if not cases:
        check_has_cases(template, part)
    u = _uniforms(seed, plan.key, part, level)
    draws = Draws.of(u[:LAB_DRAWS])
    case = cases[int(draws.case * len(cases))]
    study = _study(case.case, level, u)
    rescues = _choose_rescues(case.needs, level, draws)
    listing = _list_needs(case.needs, rescues, plan.spares)
    listing.update(_pick_extras(plan.catalogue, listing, level, draws))
    substitutions = [sub for _, sub in rescues] + _optional_substitutions(plan, listing, rescues, draws)
    rates = _rates(level, listing, substitutions, u[LAB_DRAWS + STUDY_DRAWS : -WORDING_DRAWS])
    swaps = {need.stock.name: sub.alternative for need, sub in rescues}
    lab = _lab_facts(case, study, level, draws, plan.data.safety_restrictions, rates, swaps)
    return _assemble(
        f"{template}-{part}-{level}-{seed}",
        (template, part, level, seed),
        plan,
        case,
        study,
        listing,
        substitutions,
        lab,
    )


def _study(case: PaperCase, level: Difficulty, u: list[float]) -> Study:
    """The study a pack's uniforms `u` draw for `case`."""
    return draw_study(case, level, u[LAB_DRAWS : LAB_DRAWS + STUDY_DRAWS], u[-WORDING_DRAWS:])


def paper_facts(pack: NormalizedScenarioPack) -> tuple[Fact, ...]:
    """What each sentence of `pack`'s method states (`Study.facts`), drawn again from the pack's
    seed: public meanings of public sentences, the ceiling of what reading can recover. Raises a
    ValueError when the pack is not the one its (seed, template, difficulty, split) generate."""
    plan = template_plan(pack.template)
    u = _uniforms(pack.seed, plan.key, pack.split, pack.difficulty)
    case = next((c.case for c in plan.cases[pack.split] if c.case.case_id == pack.case_id), None)
    study = None if case is None else _study(case, pack.difficulty, u)
    if study is None or study.paper != pack.paper:
        raise ValueError(f"pack: {pack.scenario_id} is not the pack its seed generates")
    return study.facts


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed: expected a non-negative int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed: must be non-negative, got {seed}")
    return int(seed)


def _cycle(draws: list[float], n: int) -> list[float]:
    """One draw for each of n things: the i-th uses draw i modulo the number of draws."""
    return [draws[i % len(draws)] for i in range(n)]


def _choose_rescues(
    needs: tuple[Need, ...], level: Difficulty, draws: Draws
) -> list[tuple[Need, Substitution]]:
    """The essential items the lab lacks, each with the substitution that rescues it, in the
    case's order.

    Easy labs lack nothing; medium labs lack the item of lowest rank; hard labs lack one or two,
    so that a hard pack may need two swaps. The lab has a rescue for each, so every pack stays
    solvable.
    """
    if level == "easy":
        return []
    ranks = _cycle(draws.need_ranks, len(needs))
    by_rank = sorted(range(len(needs)), key=ranks.__getitem__)
    n_missing = 2 if level == "hard" and draws.second_missing < 0.5 else 1
    missing = {needs[i].stock.name for i in by_rank[:n_missing]}
    lacking = [need for need in needs if need.stock.name in missing]
    return [
        (need, need.substitutions[int(u * len(need.substitutions))])
        for need, u in zip(lacking, draws.rescues, strict=False)
    ]


def _list_needs(
    needs: tuple[Need, ...], rescues: list[tuple[Need, Substitution]], spares: dict[str, Listed]
) -> dict[str, Listed]:
    """The case's needs as the lab lists them (those it lacks booked or out of stock), then the
    substitutes it has for those: name -> item, in listing order."""
    lacking = {need.stock.name for need, _ in rescues}
    listing = {
        need.stock.name: need.stock.missing if need.stock.name in lacking else need.stock.stocked
        for need in needs
    }
    for _, sub in rescues:
        listing[sub.alternative] = spares[sub.alternative]
    return listing


def _pick_extras(
    catalogue: tuple[Stock, ...], listing: dict[str, Listed], level: Difficulty, draws: Draws
) -> dict[str, Listed]:
    """A few catalogue items the lab lists beside the case's, so that the needed ones do not
    stand out: the first not listed yet in a seeded order, each unavailable with the level's
    odds."""
    n_extras = _EXTRA_ITEMS[0] + int(draws.n_extras * (_EXTRA_ITEMS[1] - _EXTRA_ITEMS[0] + 1))
    ranks = _cycle(draws.catalogue_ranks, len(catalogue))
    in_order = (catalogue[i] for i in sorted(range(len(catalogue)), key=ranks.__getitem__))
    fresh = [stock for stock in in_order if stock.name not in listing][:n_extras]
    odds = _UNAVAILABLE_EXTRA_P[level]
    return {
        stock.name: stock.missing if u < odds else stock.stocked
        for stock, u in zip(fresh, draws.extra_unavailable, strict=False)
    }


def _optional_substitutions(
    plan: TemplatePlan,
    listing: dict[str, Listed],
    rescues: list[tuple[Need, Substitution]],
    draws: Draws,
) -> list[Substitution]:
    """Substitutions the lab allows beside the rescues: each other one whose both ends it lists,
    on a fair draw, in listing order. They give the Scientist choices that are not needed."""
    rescue_of = {need.stock.name: sub for need, sub in rescues}
    candidates = [
        sub
        for name in listing
        for sub in plan.substitutions_of.get(name, ())
        if sub.alternative in listing and rescue_of.get(name) is not sub  # a rescue is allowed already
    ]
    coins = _cycle(draws.optional_swaps, len(candidates))
    return [sub for sub, coin in zip(candidates, coins, strict=False) if coin < 0.5]


def _lab_facts(
    case: CasePlan,
    study: Study,
    level: Difficulty,
    draws: Draws,
    safety: list[str],
    rates: CostRates,
    swaps: dict[str, str],
) -> LabFacts:
    """The lab's numbers: with slack on easy; on medium and hard a budget below what the study's
    own plan costs at the lab's prices (`BUDGET_SHARE`), so the best feasible plan sits on the
    budget's boundary and depends on prices the Scientist must learn; never below the minimal
    plan with the lab's substitutes at the lab's prices, so that one always passes every check."""
    reference = study.reference
    minimal = minimal_protocol(case.case, level, swaps, reference)
    bounds = Bounds.of(published_protocol(case.case, reference), minimal, rates)
    shortest, published = case.case.min_duration_days, case.case.base_duration_days
    if level == "easy":
        time_limit = published + 1 + int(4 * draws.time_limit)
        staff = bounds.ref_staff + 2 + int(2 * draws.staff)
        spent = 0.0
    elif level == "medium":
        time_limit = published - 1 - int(2 * draws.time_limit)
        staff = bounds.ref_staff + (draws.staff < 0.5)
        spent = 0.1 * draws.spent
    else:
        time_limit = min(shortest + int(2 * draws.time_limit), max(shortest, published - 1))
        staff = bounds.min_staff
        spent = 0.1 + 0.15 * draws.spent
    time_limit = max(time_limit, shortest)
    study_plan = minimal.model_copy(
        update={
            "sample_size": max(reference.sample_size, case.case.min_sample_size),
            "duration_days": adequate_days(time_limit),
        }
    )
    if level == "easy":
        budget = bounds.ref_cost * (1.25 + 0.35 * draws.budget)
    else:
        staff = max(staff, estimate_staff_load(study_plan))  # the budget binds, not the staff
        low, high = BUDGET_SHARE[level]
        fixed = estimate_protocol_cost(study_plan, 0, rates)
        samples = estimate_protocol_cost(study_plan, rates=rates) - fixed
        budget = fixed + samples * (low + (high - low) * draws.budget)
    remaining = float(max(round(budget / 10.0) * 10.0, bounds.least_budget))
    return LabFacts(
        budget_total=float(round(remaining / (1.0 - spent) / 10.0) * 10.0),
        budget_remaining=remaining,
        staff_count=staff,
        time_limit_days=time_limit,
        safety_restrictions=safety,
        rates=rates,
    )


def _rates(
    level: Difficulty, listing: dict[str, Listed], substitutions: list[Substitution], u: list[float]
) -> CostRates:
    """What the lab charges: the classic terms on easy; on medium and hard each rate and each
    listed item's price drawn in `RATE_RANGE` times its classic value (whole credits, items in
    fives), so a Scientist that does not ask prices its plans wrong. An allowed substitute never
    costs more than the item it replaces: taking the lab's swap never breaks the budget."""
    low, high = RATE_RANGE[level]
    if low == high == 1.0:
        return CostRates()

    def drawn(classic: float, x: float, step: float) -> float:
        return max(step, round(classic * (low + (high - low) * x) / step) * step)

    prices = {
        name.lower(): drawn(CLASSIC_ITEM_PRICES[listed.item.kind], x, 5.0)
        for (name, listed), x in zip(listing.items(), u[3:], strict=False)
    }
    for sub in substitutions:
        original, alternative = sub.original_key, sub.alternative_key
        if original in prices and alternative in prices:
            prices[alternative] = min(prices[alternative], prices[original])
    return CostRates(
        per_sample=drawn(10.0, u[0], 1.0),
        per_day=drawn(50.0, u[1], 1.0),
        per_control=drawn(25.0, u[2], 1.0),
        item_prices=prices,
    )


def _assemble(
    scenario_id: str,
    cell: tuple[str, Split, Difficulty, int],
    plan: TemplatePlan,
    case: CasePlan,
    study: Study,
    listing: dict[str, Listed],
    substitutions: list[Substitution],
    lab: LabFacts,
) -> NormalizedScenarioPack:
    """The pack, with both agents' opening observations."""
    template, split, level, seed = cell
    constraints = (
        lab_constraints(lab.budget_remaining, lab.time_limit_days, lab.staff_count) + case.rules[level]
    )
    resources: list[ResourceItem] = []
    shelves: tuple[list[str], ...] = ([], [], [], [])
    for name, listed in listing.items():
        resources.append(listed.item)
        shelves[listed.shelf].append(name)
    paper, goal = study.paper, case.case.experiment_goal
    return NormalizedScenarioPack(
        scenario_id=scenario_id,
        template=template,
        split=split,
        difficulty=level,
        seed=seed,
        domain_id=plan.data.domain_id,
        case_id=case.case.case_id,
        paper=paper,
        candidates=case.candidates,
        experiment_goal=goal,
        task_summary=case.case.task_summary,
        success_criteria=list(study.success_criteria),
        constraints=constraints,
        resources=resources,
        allowed_substitutions=substitutions,
        hidden_reference_spec=study.reference,
        lab=lab,
        scientist_observation=ScientistObservation(
            paper=paper,
            experiment_goal=goal,
            constraints=constraints,
            resources=resources,
            substitutions=substitutions,
            candidates=case.candidates,
            conversation_history=[],
            current_protocol=None,
            round_number=1,
            max_rounds=DEFAULT_MAX_ROUNDS,
        ),
        lab_manager_observation=LabManagerObservation(
            budget_total=lab.budget_total,
            budget_remaining=lab.budget_remaining,
            equipment_available=shelves[0],
            equipment_booked=shelves[1],
            reagents_in_stock=shelves[2],
            reagents_out_of_stock=shelves[3],
            staff_count=lab.staff_count,
            time_limit_days=lab.time_limit_days,
            safety_restrictions=lab.safety_restrictions,
            conversation_history=[],
            current_protocol=None,
            round_number=1,
            max_rounds=DEFAULT_MAX_ROUNDS,
            feasibility=None,
            suggestion=None,
        ),
    )
