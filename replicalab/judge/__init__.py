"""The deterministic judge: four scores, a total, and an explanation.

    build_reward_breakdown(protocol, scenario, check=None, *, rounds_used)
    breakdown_against(protocol, facts, check, *, rounds_used)   # against a reading of the study
    compute_total_reward(breakdown) = 10 · rigor · feasibility · fidelity · parsimony
                                      + Σ bonuses - Σ penalties   (bonuses ∝ base / 10)
    explain(breakdown) -> str

Scores live in `scores`; what the judge reads off a pack (its bounds, the hidden reference's
words) in `facts`; its bonuses and the rounds an agreement may take for free in `bonuses`.
"""

from replicalab.judge.bonuses import (
    ALL_CHECKS_BONUS,
    EFFICIENCY_BONUS,
    FREE_ROUNDS,
    PAID_ROUNDS,
    saved_rounds,
)
from replicalab.judge.breakdown import (
    ALL_CHECKS,
    BASE_SCALE,
    breakdown_against,
    build_reward_breakdown,
    compute_total_reward,
    explain,
    feasibility_score,
    fidelity_score,
    parsimony_score,
    rigor_score,
)

__all__ = [
    "ALL_CHECKS",
    "ALL_CHECKS_BONUS",
    "BASE_SCALE",
    "EFFICIENCY_BONUS",
    "FREE_ROUNDS",
    "PAID_ROUNDS",
    "breakdown_against",
    "build_reward_breakdown",
    "compute_total_reward",
    "explain",
    "feasibility_score",
    "fidelity_score",
    "parsimony_score",
    "rigor_score",
    "saved_rounds",
]
