"""The constraints a pack states, each bound to a check of validation.

By id: c1-c3 the lab's numbers (duration, budget, staff; c3 only where a plan could exceed it);
from c4 the case's rules (sample size, controls, review, each forbidden practice); then s1, s2, ... the lab's safety rules, one hard forbidden practice per
restricted practice of the template, in the template's order.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import count

from replicalab.models import Constraint, ConstraintKind
from replicalab.scenarios.difficulty import LEVELS
from replicalab.scenarios.types import Difficulty, PaperCase

MAX_STAFF_LOAD = 5  # the most people `estimate_staff_load` can ask for
FIRST_CASE_ID = 4  # the case's rules number on from the lab's c1-c3
ADEQUATE_SHARE_OF_TIME = 0.3  # a plan using this share of the time limit is long enough


def binding_time_limit(lab_limit: int, duration_bounds: tuple[float, ...]) -> int:
    """The days a plan may take: the lab's time limit, or a tighter max_duration_days bound."""
    return min([lab_limit, *map(math.floor, duration_bounds)])


def adequate_days(time_limit: int) -> int:
    """The duration that earns the judge's full duration credit under a time limit: longer plans
    buy no rigor, so the lab's budget is measured against a plan of this length."""
    return max(1, math.ceil(ADEQUATE_SHARE_OF_TIME * max(time_limit, 1)))


def lab_constraints(budget: float, time_limit: int, staff: int) -> list[Constraint]:
    """The rules set by the lab's numbers, c1-c3.

    A staff cap that no plan can exceed (the staff formula tops out at `MAX_STAFF_LOAD`) would
    be decorative, so c3 is stated only when it can bind.
    """
    bounds: dict[ConstraintKind, float] = {"max_duration_days": float(time_limit), "max_budget": budget}
    if staff < MAX_STAFF_LOAD:
        bounds["max_staff"] = float(staff)
    return [_lab_rule(kind, quantity) for kind, quantity in bounds.items()]


# kind -> (id, description with {q} for the bound, unit)
_LAB_RULES: dict[ConstraintKind, tuple[str, str, str]] = {
    "max_duration_days": ("c1", "The experiment must finish within {q:g} days.", "days"),
    "max_budget": ("c2", "Total cost must not exceed {q:g} credits.", "credits"),
    "max_staff": ("c3", "At most {q:g} staff can be assigned.", "people"),
}


# The lab's numbers take few values across seeds, so packs share their rules (constraints are
# frozen): building them anew would cost about 70,000 instructions per pack (5 % of an episode).
@lru_cache(maxsize=4096)
def _lab_rule(kind: ConstraintKind, quantity: float) -> Constraint:
    constraint_id, description, unit = _LAB_RULES[kind]
    return Constraint(
        id=constraint_id,
        kind=kind,
        description=description.format(q=quantity),
        hard=True,
        quantity=quantity,
        comparator="<=",
        unit=unit,
    )


def case_constraints(case: PaperCase, level: Difficulty) -> list[Constraint]:
    """The rules that depend only on the paper and the difficulty, c4 onwards: every pack of the
    case at that difficulty states them."""
    ids = (f"c{number}" for number in count(FIRST_CASE_ID))
    row = LEVELS[level]
    n_controls = row.min_controls
    rules = [
        Constraint(
            id=next(ids),
            kind="min_sample_size",
            description=f"Use at least {case.min_sample_size} samples to test the claim.",
            hard=True,
            quantity=float(case.min_sample_size),
            comparator=">=",
            unit="samples",
        ),
        Constraint(
            id=next(ids),
            kind="min_controls",
            description=f"Include at least {n_controls} controls.",
            hard=row.controls_binding,  # where it does not bind, too few controls only warns
            quantity=float(n_controls),
            comparator=">=",
            unit="controls",
        ),
        Constraint(
            id=next(ids),
            kind="required_review",
            description=f"One control must be the {case.required_review}, named as such.",
            hard=True,
            term=case.required_review,
        ),
    ]
    rules.extend(
        Constraint(
            id=next(ids),
            kind="forbidden_practice",
            description=f"Forbidden practice: {practice}.",
            hard=True,
            term=practice,
        )
        for practice in case.forbidden_practices
    )
    return rules


def safety_constraints(practices: list[str]) -> list[Constraint]:
    """The lab's safety rules as the brief states them: s1, s2, ..., each a hard, public
    forbidden practice that validation checks like the case's own (negation-aware)."""
    return [
        Constraint(
            id=f"s{number}",
            kind="forbidden_practice",
            description=f"Lab safety rule: no {practice}.",
            hard=True,
            term=practice,
        )
        for number, practice in enumerate(practices, start=1)
    ]
