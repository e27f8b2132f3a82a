"""Scientists that negotiate by a fixed rule instead of asking what the lab charges: what the
negotiation gives to a player who never asks.

- `OpeningRuleScientist` reads the paper perfectly (the public-information oracle's choices,
  every sentence's meaning), so only its negotiation differs from that oracle's: it proposes at
  once the plan that aims at the sample size the reported effect needs and fits the public
  budget at the classic terms times a price factor per difficulty (which the structured
  observation shows; the benchmark fits the factors on train): every public number a cheap rule
  can use, and a guess at the lab's prices. It then either accepts whatever the Lab Manager
  answers (`answer="accept"`: propose once, then accept) or revises with what the quote or the
  counter-proposal teaches (`answer="revise"`: the no-question reviser).
- `TrivialPlanScientist` proposes a plan that tests nothing of the study: the minimum sample
  size, the baseline's technique, items and generic controls, a rationale that addresses no
  element; it adopts the Lab Manager's counter-proposal, so the plan it ends on is feasible.
"""

from __future__ import annotations

from collections.abc import Mapping

from replicalab.baselines.policies.probes import Answer, Choices, Planner, planned, scaled_rates
from replicalab.baselines.policies.readers import PublicOracleScientist
from replicalab.models import CostRates, ScientistAction, ScientistObservation
from replicalab.scenarios import DIFFICULTIES


class OpeningRuleScientist(PublicOracleScientist):
    """Proposes the public oracle's plan fitted to the budget at `factors[difficulty]` × the
    classic terms, without asking; then `answer` (see the module)."""

    def __init__(self, factors: Mapping[str, float], answer: Answer = "accept") -> None:
        super().__init__("propose", answer)
        missing = [level for level in DIFFICULTIES if level not in factors]
        if missing or any(factor <= 0 for factor in factors.values()):
            raise ValueError(f"factors: expected a positive factor for each of {DIFFICULTIES}, got {factors}")
        self.factors = dict(factors)
        self.name = f"opening-{answer}"

    def _plan(self, observation: ScientistObservation, rates: CostRates | None) -> ScientistAction:
        if rates is None:  # the opening: the lab has said nothing of its prices
            assert self._pack is not None, "act sets the pack before planning"
            rates = scaled_rates(self.factors[self._pack.difficulty], observation.resources)
        return planned(observation, self.choices(observation), rates)


class TrivialPlanScientist(Planner):
    """Proposes the plan that tests nothing (see the module), then adopts the counter-proposal."""

    name = "trivial"

    def __init__(self) -> None:
        super().__init__("propose", "adopt")

    def choices(self, observation: ScientistObservation) -> Choices:
        return Choices(None, (), (), 1)
