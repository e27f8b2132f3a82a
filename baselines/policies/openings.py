"""Scientists that negotiate by a fixed rule instead of asking what the lab charges: what the
negotiation gives to a player who never asks.

- `OpeningRuleScientist` reads the paper perfectly (the public-information oracle's choices,
  every sentence's meaning), so only its negotiation differs from that oracle's: it proposes at
  once, with the sample size a factor of the reported one (a factor per difficulty, which the
  structured observation shows; the benchmark fits them on train), then either accepts whatever
  the Lab Manager answers (`answer="accept"`: propose once, then accept) or revises with what
  the quote or the counter-proposal teaches (`answer="revise"`: the no-question reviser).
- `TrivialPlanScientist` proposes a plan that tests nothing of the study: the minimum sample
  size, the baseline's technique, items and generic controls, a rationale that addresses no
  element; it adopts the Lab Manager's counter-proposal, so the plan it ends on is feasible.
"""

from __future__ import annotations

from collections.abc import Mapping

from replicalab.baselines.policies.probes import Answer, Choices, Planner
from replicalab.baselines.policies.readers import PublicOracleScientist
from replicalab.models import ScientistObservation
from replicalab.scenarios import DIFFICULTIES


class OpeningRuleScientist(PublicOracleScientist):
    """Proposes the public oracle's plan at `factors[difficulty]` × the reported sample size,
    without asking; then `answer` (see the module)."""

    def __init__(self, factors: Mapping[str, float], answer: Answer = "accept") -> None:
        super().__init__("propose", answer)
        missing = [level for level in DIFFICULTIES if level not in factors]
        if missing or any(factor <= 0 for factor in factors.values()):
            raise ValueError(f"factors: expected a positive factor for each of {DIFFICULTIES}, got {factors}")
        self.factors = dict(factors)
        self.name = f"opening-{answer}"

    def choices(self, observation: ScientistObservation) -> Choices:
        read = super().choices(observation)
        assert self._pack is not None, "act sets the pack before planning"
        reported = read.sample_size or 1
        return read._replace(sample_size=max(1, round(self.factors[self._pack.difficulty] * reported)))


class TrivialPlanScientist(Planner):
    """Proposes the plan that tests nothing (see the module), then adopts the counter-proposal."""

    name = "trivial"

    def __init__(self) -> None:
        super().__init__("propose", "adopt")

    def choices(self, observation: ScientistObservation) -> Choices:
        return Choices(None, (), (), 1)
