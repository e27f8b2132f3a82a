"""The lab a pack draws around its paper case: which items it lists and has, which
substitutions it allows, what it charges, and its budget, time limit and staff.

Each decision reads its own slice of the pack's uniforms (`Draws`) and the level's row of the
difficulty table (`LEVELS`), so a change to one decision never shifts the draws of another.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from replicalab.models import CostRates, Substitution
from replicalab.prices import draw_rates, estimate_protocol_cost, estimate_staff_load
from replicalab.scenarios.difficulty import LEVELS, Slack
from replicalab.scenarios.paper import Study, draws_for
from replicalab.scenarios.plan import (
    CasePlan,
    Listed,
    Need,
    Stock,
    TemplatePlan,
    minimal_parts,
    published_parts,
)
from replicalab.scenarios.rules import adequate_days
from replicalab.scenarios.types import Difficulty, LabFacts

LAB_DRAWS = 64  # uniforms the lab's decisions draw (`Draws`)
_EXTRA_ITEMS = (3, 5)  # how many catalogue items beyond the case's needs a lab lists


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


def _choose_rescues(
    needs: tuple[Need, ...], level: Difficulty, draws: Draws
) -> list[tuple[Need, Substitution]]:
    """The essential items the lab lacks, each with the substitution that rescues it, in the
    case's order.

    A lab lacks the level's `missing_essentials`, those of lowest rank (the most on a fair coin),
    so that a hard pack may need two swaps. The lab has a rescue for each, so every pack stays
    solvable.
    """
    least, most = LEVELS[level].missing_essentials
    if most == 0:
        return []
    ranks = draws_for(draws.need_ranks, len(needs))
    by_rank = sorted(range(len(needs)), key=ranks.__getitem__)
    n_missing = most if most > least and draws.second_missing < 0.5 else least
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
    ranks = draws_for(draws.catalogue_ranks, len(catalogue))
    fresh: list[Stock] = []
    for i in sorted(range(len(catalogue)), key=ranks.__getitem__):
        if len(fresh) == n_extras:
            break
        if catalogue[i].name not in listing:
            fresh.append(catalogue[i])
    odds = LEVELS[level].extra_unavailable
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
    coins = draws_for(draws.optional_swaps, len(candidates))
    return [sub for sub, coin in zip(candidates, coins, strict=False) if coin < 0.5]


def draw_lab(
    plan: TemplatePlan,
    case: CasePlan,
    study: Study,
    level: Difficulty,
    draws: Draws,
    price_draws: list[float],
) -> tuple[dict[str, Listed], list[Substitution], LabFacts]:
    """The lab of a pack: the items it lists (name -> item, in listing order), the substitutions it
    allows (the rescues first) and its facts."""
    rescues = _choose_rescues(case.needs, level, draws)
    listing = _list_needs(case.needs, rescues, plan.spares)
    listing.update(_pick_extras(plan.catalogue, listing, level, draws))
    substitutions = [sub for _, sub in rescues] + _optional_substitutions(plan, listing, rescues, draws)
    items = [(name, listed.kind) for name, listed in listing.items()]
    rates = draw_rates(LEVELS[level].price_range, items, substitutions, price_draws)
    swaps = {need.stock.name: sub.alternative for need, sub in rescues}
    lab = _lab_facts(case, study, level, draws, plan.data.safety_restrictions, rates, swaps)
    return listing, substitutions, lab


def _lab_facts(
    case: CasePlan,
    study: Study,
    level: Difficulty,
    draws: Draws,
    safety: list[str],
    rates: CostRates,
    swaps: dict[str, str],
) -> LabFacts:
    """The lab's numbers, drawn as the level's row says (`LEVELS`): with slack on easy; on medium
    and hard a budget below what the plan the study needs (the samples its reported effect
    needs) costs at the lab's prices, so the best feasible plan sits on the budget's boundary
    and depends on prices the Scientist must learn; never below the minimal plan with the lab's
    substitutes at the lab's prices, so that one always passes every check. The staff can always
    run the needed plan: the budget binds, not the staff. Each plan is priced only where the
    level reads its price."""
    row = LEVELS[level]
    minimal = minimal_parts(case.case, level, swaps, study.reference)
    published = published_parts(case.case, study.reference)  # the paper's own plan
    time_limit = _time_limit(case, level, draws.time_limit)
    min_staff = estimate_staff_load(minimal)
    staff = max(estimate_staff_load(published), min_staff) if row.staff_from == "paper" else min_staff
    staff = row.staff.of(staff, draws.staff)
    least_spent, spread_spent = row.spent
    spent = least_spent + spread_spent * draws.spent
    study_plan = minimal._replace(sample_size=study.needed_samples, duration_days=adequate_days(time_limit))
    staff = max(staff, estimate_staff_load(study_plan))
    min_cost = estimate_protocol_cost(minimal, rates=rates)
    fixed = estimate_protocol_cost(study_plan, 0, rates)  # all but its samples
    samples = study_plan.sample_size * rates.per_sample  # (whole credits: the sums are exact)
    if isinstance(row.budget, Slack):  # over the dearest of the study's, the paper's and the minimal plan
        study_cost = max(estimate_protocol_cost(published, rates=rates), min_cost, fixed + samples)
        budget = study_cost * (row.budget.least + row.budget.spread * draws.budget)
    else:
        low, high = row.budget.low, row.budget.high
        budget = fixed + samples * (low + (high - low) * draws.budget)
    least_budget = math.ceil(min_cost * 1.02 / 10.0) * 10.0  # the minimal plan, 2 % to spare, in tens
    remaining = float(max(round(budget / 10.0) * 10.0, least_budget))
    return LabFacts(
        budget_total=float(round(remaining / (1.0 - spent) / 10.0) * 10.0),
        budget_remaining=remaining,
        staff_count=staff,
        time_limit_days=time_limit,
        safety_restrictions=safety,
        rates=rates,
    )


def _time_limit(case: CasePlan, level: Difficulty, u: float) -> int:
    """The lab's time limit, drawn from the uniform `u` around the case's published or shortest
    duration as the level's row says, never under the shortest."""
    row = LEVELS[level]
    shortest, published = case.case.min_duration_days, case.case.base_duration_days
    time_limit = row.time_limit.of(published if row.time_from == "published" else shortest, u)
    if row.time_below_published:
        time_limit = min(time_limit, max(shortest, published - 1))
    return max(time_limit, shortest)
