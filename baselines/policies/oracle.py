"""The oracle Scientist: an upper bound that reads the hidden reference and asks the judge.

Regret means little without a reference point, so the oracle plays with full knowledge: the
hidden reference spec, the lab's private facts and the judge's own case facts. It never guesses
at a rule: every candidate protocol is scored by the real judge on the real Lab Manager check
(`build_reward_breakdown` with `check_feasibility`) and priced by the episode's `RewardConfig`
(`judge_reward`), and the oracle proposes the best one, then accepts once accepting would end in
agreement (the Lab Manager consented to a plan that passes every check).

The candidates are separable, which keeps the search small (about 30 judge calls a scenario):
the texts (technique, controls, rationale) decide fidelity and parsimony, the numbers (sample
size, duration) decide rigor, and both share the same item list and control count, so cost and
staff depend on the numbers only. Stage one ranks the text variants on the cheapest numbers;
stage two searches a grid of sample sizes and durations for the best text. Items are the
method's essential items with the first available substitute for each unavailable one — what
the judge calls needed, so parsimony charges nothing.
"""

from __future__ import annotations

import math
from itertools import product

from replicalab.episode import Episode
from replicalab.judge import build_reward_breakdown
from replicalab.judge.facts import CaseFacts, case_facts
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import (
    Protocol,
    ScientistAction,
    ScientistActionType,
    saved_rounds,
)
from replicalab.prices import estimate_protocol_cost
from replicalab.rewards import RewardConfig, judge_reward
from replicalab.scenarios import NormalizedScenarioPack
from replicalab.text import words

_MAX_WORDS = {"technique": 16, "control": 12, "rationale": 60}  # the judge's word budgets
_FILLER_CONTROLS = ("independent repeat of the main measurement", "comparison with the published result")
_SAMPLE_SIZES = 5  # sample sizes tried, spaced geometrically from the minimum to where rigor saturates
_DURATION_SHARES = (1.0, 0.75, 0.5)  # shares of the duration that earns full rigor
_ACCEPT = ScientistAction(action_type=ScientistActionType.ACCEPT)
_ASK_COSTS = ScientistAction(
    action_type=ScientistActionType.REQUEST_INFO, questions=["What does each part of the plan cost?"]
)


def _clip(text: str, limit: int) -> str:
    """The first `limit` words of `text` (as the judge counts words), original spelling kept."""
    if len(words(text)) <= limit:
        return text
    kept = text.split()
    while len(words(" ".join(kept))) > limit:
        kept.pop()
    return " ".join(kept).rstrip(",;:")


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
        clipped = _clip(text, _MAX_WORDS["control"])
        if len(controls) >= len(facts.reviews) + len(extras) and len(controls) >= facts.min_controls:
            break
        if clipped and clipped not in controls:
            controls.append(clipped)
    return controls


def _texts(scenario: NormalizedScenarioPack, facts: CaseFacts) -> list[tuple[str, list[str], str]]:
    """Candidate (technique, controls, rationale) triples, most faithful first."""
    reference = scenario.hidden_reference_spec
    techniques = [reference.technique] if reference.technique else []
    techniques += [
        _clip(reference.summary, _MAX_WORDS["technique"]),
        _clip(scenario.paper.method, _MAX_WORDS["technique"]),
    ]
    control_sets = [
        _controls(facts, list(reference.original_controls)),
        _controls(facts, list(reference.required_elements)),
    ]
    rationale = _clip(
        "Reproduces the reference setup: " + "; ".join(reference.required_elements) + ".",
        _MAX_WORDS["rationale"],
    )
    triples = [(t, c, rationale) for t, c in product(dict.fromkeys(techniques), control_sets)]
    return [triple for i, triple in enumerate(triples) if triple not in triples[:i]]


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

    def protocol(text: tuple[str, list[str], str], n: int, d: int) -> Protocol:
        technique, controls, rationale = text
        return Protocol(
            sample_size=n,
            controls=controls,
            technique=technique,
            duration_days=d,
            required_equipment=equipment,
            required_reagents=reagents,
            rationale=rationale,
        )

    low = facts.min_samples
    text = max(_texts(scenario, facts), key=lambda t: score(protocol(t, low, 1)))
    candidates = [protocol(text, n, d) for n, d in _numbers(facts)]
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
