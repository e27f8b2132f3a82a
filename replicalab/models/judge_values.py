"""The judge's values: its bonuses, the rounds an agreement may take for free, its scores of a
final protocol and how an episode ended."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from replicalab.models.base import Contract

ALL_CHECKS_BONUS = 1.0
"""The judge's bonus to a plan that passes all seven checks, at a perfect base; a plan earns it in
proportion to its base (`base / 10`), so a feasible plan that tests little is paid little."""
EFFICIENCY_BONUS = 0.25
"""The judge's bonus per round saved (`saved_rounds`) to a plan that earns `ALL_CHECKS_BONUS`, at
a perfect base, and likewise in proportion to its base."""
FREE_ROUNDS = 3
"""Rounds an agreement may take at no cost to the efficiency bonus: one question, one proposal,
one acceptance. The lab's prices are private, so a Scientist that asks before it proposes needs
three; only rounds beyond them are charged, and information worth having is never taxed away."""
PAID_ROUNDS = 3
"""Rounds after `FREE_ROUNDS` whose saving the efficiency bonus pays for. A fixed window, not the
rounds left before the limit: a bonus that grew with `max_rounds` would, at a long limit, outweigh
the plan it is paid on."""


def saved_rounds(rounds_used: int) -> int:
    """Rounds the efficiency bonus pays for: those of the `PAID_ROUNDS` after `FREE_ROUNDS` that an
    agreement in `rounds_used` rounds leaves unused."""
    return max(0, FREE_ROUNDS + PAID_ROUNDS - max(rounds_used, FREE_ROUNDS))


class RewardBreakdown(Contract):
    """The judge's scores of a final protocol; `total` = 10·r·f·f·p + bonuses − penalties.

    The judge always pays its own bonuses (`ALL_CHECKS_BONUS`, `EFFICIENCY_BONUS`, each times
    `base / 10`), so `total` is the benchmark's score whatever reward config an episode was
    played with.
    """

    rigor: float = Field(ge=0.0, le=1.0)
    feasibility: float = Field(ge=0.0, le=1.0)
    fidelity: float = Field(ge=0.0, le=1.0)
    parsimony: float = Field(ge=0.0, le=1.0)
    base: float  # 10 · rigor · feasibility · fidelity · parsimony
    bonuses: dict[str, float] = Field(default_factory=dict)
    penalties: dict[str, float] = Field(default_factory=dict)  # positive numbers, subtracted
    total: float
    notes: list[str] = Field(default_factory=list)  # one line per deduction, for explain()


Verdict = Literal["agreement", "accept_without_consent", "accept_infeasible", "round_limit", "truncated"]
"""How an episode ended: `agreement` (the Lab Manager consented and the final protocol passes every
check); `accept_without_consent` (the Scientist accepted over an objection); `accept_infeasible`
(it accepted a consent to a plan that fails a check); `round_limit`; `truncated` (step cap)."""
