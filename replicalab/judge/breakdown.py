"""Assemble the judge's verdict on a protocol: the four scores, bonuses, total, explanation.

`total = 10 · rigor · feasibility · fidelity · parsimony + Σ bonuses - Σ penalties`. The product
means a plan must be good on every axis; a degenerate plan (rigor 0) totals exactly 0, because
the bonuses are paid only to a plan that passes all seven checks and has a positive base, and
each in proportion to the plan's base (`base / 10`), so a feasible plan that tests little of the
study is paid little, however quickly it agreed:

- `all_checks_pass`: the Lab Manager's check passes every dimension.
- `efficiency`: per round saved of the `PAID_ROUNDS` after the `FREE_ROUNDS` an agreement may
  take (when the caller says how many were used). The window is fixed, so the bonus does not
  grow with the round limit.

The judge has no penalties of its own (soft-constraint warnings are already a deduction inside
feasibility, and counting them twice would make them loom larger than a failed check); the
`penalties` field is summed and explained all the same, for breakdowns built by other judges.
The amounts are the judge's own (`ALL_CHECKS_BONUS`, `EFFICIENCY_BONUS`), so the total is the same
score whatever reward config an episode was played with; a `RewardConfig` prices the bonuses of
the return (`replicalab.rewards.judge_reward`), reading from a breakdown whether they were earned.
"""

from __future__ import annotations

from replicalab.judge import scores
from replicalab.judge.bonuses import ALL_CHECKS_BONUS, EFFICIENCY_BONUS, saved_rounds
from replicalab.judge.facts import CaseFacts, case_facts
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import (
    FeasibilityCheckResult,
    Protocol,
    RewardBreakdown,
)
from replicalab.scenarios.types import NormalizedScenarioPack

BASE_SCALE = 10.0
ALL_CHECKS = "all_checks_pass"  # the bonuses' names in a breakdown
EFFICIENCY = "efficiency"


def rigor_score(protocol: Protocol, scenario: NormalizedScenarioPack) -> float:
    return scores.rigor(scores.plan_of(protocol), case_facts(scenario))[0]


def feasibility_score(
    protocol: Protocol,
    scenario: NormalizedScenarioPack,
    check: FeasibilityCheckResult | None = None,
) -> float:
    if check is None:
        check = check_feasibility(protocol, scenario)
    return scores.feasibility(check)[0]


def fidelity_score(protocol: Protocol, scenario: NormalizedScenarioPack) -> float:
    return scores.fidelity(scores.plan_of(protocol), case_facts(scenario))[0]


def parsimony_score(protocol: Protocol, scenario: NormalizedScenarioPack) -> float:
    return scores.parsimony(scores.plan_of(protocol), case_facts(scenario))[0]


def build_reward_breakdown(
    protocol: Protocol,
    scenario: NormalizedScenarioPack,
    check: FeasibilityCheckResult | None = None,
    *,
    rounds_used: int | None = None,
) -> RewardBreakdown:
    """Score `protocol` in `scenario`; `check` must be the Lab Manager's check of this protocol
    (computed here when not given, with the same result). The efficiency bonus needs
    `rounds_used`."""
    if check is None:
        check = check_feasibility(protocol, scenario)
    return breakdown_against(protocol, case_facts(scenario), check, rounds_used=rounds_used)


def breakdown_against(
    protocol: Protocol, facts: CaseFacts, check: FeasibilityCheckResult, *, rounds_used: int | None = None
) -> RewardBreakdown:
    """The breakdown of `protocol` scored against `facts` (the pack's `case_facts`, or a reading
    of the study that stands in for them), with `check` its grounded check."""
    plan = scores.plan_of(protocol)
    claims = scores.claims_of(plan, facts)
    r, rigor_notes = scores.rigor(plan, facts, claims)
    f, feasibility_notes = scores.feasibility(check)
    fi, fidelity_notes = scores.fidelity(plan, facts, claims)
    p, parsimony_notes = scores.parsimony(plan, facts, claims)
    notes = [*rigor_notes, *feasibility_notes, *fidelity_notes, *parsimony_notes]
    base = BASE_SCALE * r * f * fi * p
    bonuses: dict[str, float] = {}
    if base > 0.0 and check.feasible:
        quality = base / BASE_SCALE
        bonuses[ALL_CHECKS] = ALL_CHECKS_BONUS * quality
        saved = 0 if rounds_used is None else saved_rounds(rounds_used)
        if saved:
            bonuses[EFFICIENCY] = EFFICIENCY_BONUS * saved * quality
    return RewardBreakdown(
        rigor=r,
        feasibility=f,
        fidelity=fi,
        parsimony=p,
        base=base,
        bonuses=bonuses,
        total=base + sum(bonuses.values()),
        notes=notes,
    )


def compute_total_reward(breakdown: RewardBreakdown) -> float:
    """10 · rigor · feasibility · fidelity · parsimony + Σ bonuses - Σ penalties."""
    b = breakdown
    base = BASE_SCALE * b.rigor * b.feasibility * b.fidelity * b.parsimony
    return base + sum(b.bonuses.values()) - sum(b.penalties.values())


def explain(breakdown: RewardBreakdown) -> str:
    """A plain-text account naming every score, bonus and penalty with its value, and the notes."""
    b = breakdown
    lines = [
        f"judge total {compute_total_reward(b):.3f} = 10 x rigor x feasibility x fidelity x "
        f"parsimony ({b.base:.3f}) + bonuses - penalties",
        f"  rigor        {b.rigor:.3f}",
        f"  feasibility  {b.feasibility:.3f}",
        f"  fidelity     {b.fidelity:.3f}",
        f"  parsimony    {b.parsimony:.3f}",
    ]
    for title, sign, table in (("bonuses", "+", b.bonuses), ("penalties", "-", b.penalties)):
        if not table:
            lines.append(f"{title}: none")
            continue
        lines.append(f"{title}:")
        lines.extend(f"  {name}  {sign}{value:.3f}" for name, value in sorted(table.items()))
    lines.append("notes:" if b.notes else "notes: none")
    lines.extend(f"  - {note}" for note in b.notes)
    return "\n".join(lines)
