"""The judge's values: its scores of a final protocol and how an episode ended. What it pays in
bonuses, and the rounds an agreement may take for free, are the judge's own rules
(`replicalab.judge.bonuses`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from replicalab.models.base import Contract


class RewardBreakdown(Contract):
    """The judge's scores of a final protocol; `total` = 10·r·f·f·p + bonuses − penalties.

    The judge always pays its own bonuses (`judge.bonuses`: all checks, efficiency, each times
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
