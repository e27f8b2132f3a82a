"""The oracle Scientist: an upper bound that reads the hidden reference and asks the judge.

Regret means little without a reference point, so the oracle plays with full knowledge: the
hidden reference spec, the lab's private facts and the judge's own case facts. It never guesses
at a rule: every candidate protocol is scored by the real judge on the real Lab Manager check
(`build_reward_breakdown` with `check_feasibility`) and priced by the episode's `RewardConfig`
(`judge_reward`), and the oracle proposes the best one, then accepts once accepting would end in
agreement (the Lab Manager consented to a plan that passes every check).

The claims are known exactly (the study's technique, elements and controls, by name, with the
lab's reviews and its minimum of controls), so the search is over the numbers only (about 30
judge calls a scenario): a grid of sample sizes and durations, each also at the most samples the
budget pays for. Items are the method's essential items with the first available substitute for
each unavailable one — what the judge calls needed, so parsimony charges nothing.
"""

from __future__ import annotations

import math

from replicalab.episode import Episode
from replicalab.judge import build_reward_breakdown
from replicalab.judge.bonuses import saved_rounds
from replicalab.judge.facts import CaseFacts, case_facts
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import (
    Protocol,
    ScientistAction,
    ScientistActionType,
)
from replicalab.prices import estimate_protocol_cost
from replicalab.rewards import RewardConfig, judge_reward
from replicalab.scenarios import NormalizedScenarioPack

_FALLBACK_TECHNIQUE_WORDS = 16  # a study with no named technique: the summary's opening stands in
_FILLER_CONTROLS = ("independent repeat of the main measurement", "comparison with the published result")
_SAMPLE_SIZES = 5  # sample sizes tried, spaced geometrically from the minimum to where rigor saturates
_DURATION_SHARES = (1.0, 0.75, 0.5)  # shares of the duration that earns full rigor
_ACCEPT = ScientistAction(action_type=ScientistActionType.ACCEPT)
_ASK_COSTS = ScientistAction(
    action_type=ScientistActionType.REQUEST_INFO, questions=["What does each part of the plan cost?"]
)


def _clip(text: str, limit: int) -> str:
    """The first `limit` words of `text`."""
    return " ".join(text.split()[:limit])


def _items(scenario: NormalizedScenarioPack) -> tuple[list[str], list[str]]:
    """(equipment, reagents): each essential item, or its first available substitute."""
    chosen: dict[str, list[str]] = {"equipment": [], "reagent": []}
    for item in scenario.resources:
        if not item.essential:
            continue
        name = item.name
        subs = scenario.substitutes.get(name.lower())
        if not item.available and subs:
            name = subs[0]
        kind = scenario.resource_by_name.get(name.lower(), item).kind
        if name not in chosen[kind]:
            chosen[kind].append(name)
    return chosen["equipment"], chosen["reagent"]


def _controls(facts: CaseFacts, extras: list[str]) -> list[str]:
    """The required reviews, then every one of `extras`, then fillers up to the lab's minimum."""
    controls: list[str] = []
    for text in (*facts.reviews, *extras, *_FILLER_CONTROLS):
        if len(controls) >= len(facts.reviews) + len(extras) and len(controls) >= facts.min_controls:
            break
        if text not in controls:
            controls.append(text)
    return controls


def _numbers(facts: CaseFacts) -> list[tuple[int, int]]:
    """(sample size, duration) pairs between the minimum and where rigor saturates."""
    low = facts.min_samples
    top = max(low, math.ceil(facts.reference_samples))
    sizes = {round(low * (top / low) ** (k / (_SAMPLE_SIZES - 1))) for k in range(_SAMPLE_SIZES)}
    sizes |= {low, top}
    if low <= 20 < top:
        sizes.add(20)  # the staff formula adds a person above 20 samples
    days = {max(1, round(facts.adequate_days * share)) for share in _DURATION_SHARES}
    if facts.adequate_days > 5:
        days.add(5)  # and another above 5 days
    return [(n, d) for n in sorted(sizes, reverse=True) for d in sorted(days, reverse=True)]


class OracleScientist:
    """Proposes the best protocol it can find with full knowledge, then accepts on consent to a
    plan that passes every check. With `ask` it first asks what the lab charges, as a Scientist
    that knows the study but not the lab's private facts must."""

    name = "oracle"

    def __init__(self, ask: bool = False) -> None:
        self.ask = ask
        if ask:
            self.name = "oracle-asks"
        self._for: tuple[NormalizedScenarioPack, RewardConfig] | None = None
        self._plan: Protocol | None = None

    def reset(self, seed: int) -> None:
        self._for = None
        self._plan = None

    def act(self, episode: Episode) -> ScientistAction:
        if episode.accept_would_agree:
            return _ACCEPT
        if self.ask and episode.protocol is None and "costs" not in episode.revealed:
            return _ASK_COSTS
        plan = self.plan(episode)
        kind = (
            ScientistActionType.PROPOSE_PROTOCOL
            if episode.protocol is None
            else ScientistActionType.REVISE_PROTOCOL
        )
        return ScientistAction(action_type=kind, questions=[], **plan.model_dump())

    def plan(self, episode: Episode) -> Protocol:
        """The best candidate for this episode (computed once per scenario and reward config)."""
        cached = self._for
        if (
            self._plan is None
            or cached is None
            or cached[0] is not episode.scenario
            or cached[1] is not episode.reward_config
        ):
            self._for = (episode.scenario, episode.reward_config)
            self._plan = best_protocol(
                episode.scenario, episode.reward_config, rounds_used=episode.round_number + 1
            )
        return self._plan


def best_protocol(
    scenario: NormalizedScenarioPack, config: RewardConfig, *, rounds_used: int = 2
) -> Protocol:
    """The candidate with the highest judge reward under `config` (ties: the cheaper plan)."""
    facts = case_facts(scenario)
    equipment, reagents = _items(scenario)

    def score(protocol: Protocol) -> tuple[float, float]:
        check = check_feasibility(protocol, scenario)
        breakdown = build_reward_breakdown(protocol, scenario, check)
        return judge_reward(config, breakdown, saved_rounds(rounds_used)), -estimate_protocol_cost(
            protocol, rates=scenario.lab.rates
        )

    reference = scenario.hidden_reference_spec

    def protocol(n: int, d: int) -> Protocol:
        return Protocol(
            sample_size=n,
            controls=_controls(facts, list(reference.original_controls)),
            technique=reference.technique or _clip(reference.summary, _FALLBACK_TECHNIQUE_WORDS),
            elements=list(reference.required_elements),
            duration_days=d,
            required_equipment=equipment,
            required_reagents=reagents,
            rationale="Reproduces the reference setup.",
        )

    candidates = [protocol(n, d) for n, d in _numbers(facts)]
    candidates += [_most_samples(plan, scenario) for plan in candidates]
    return max(candidates, key=score)


def _most_samples(plan: Protocol, scenario: NormalizedScenarioPack) -> Protocol:
    """`plan` with the most samples the lab's budget pays for at its prices (the boundary where
    the best feasible plan sits when the budget binds), never below its own."""
    rates = scenario.lab.rates
    if rates.per_sample <= 0:
        return plan
    fixed = estimate_protocol_cost(plan, 0, rates)
    most = math.floor((scenario.lab.budget_remaining - fixed) / rates.per_sample)
    return plan.model_copy(update={"sample_size": max(plan.sample_size, min(most, 100))})
