"""Reference Scientists: the styles of negotiating, and what a Scientist takes from the paper.

Every one plans alike (`planned`): the baseline's opening (its items and reviews), with a
technique, controls, the elements it claims and a sample size put in, no longer
than the judge's full-credit duration, then fitted to the brief's bounds: its sample-size range,
the lab's staff (the staff terms are the lab's fixed rule), then its budget at the prices the
Scientist knows (the duration and sample size that earn the most rigor within it). They differ
in how they negotiate (`Planner`: ask first or propose at once; accept, adopt the lab's
counter-proposal, or revise with what the lab said) and in where the text choices come from:

- `PublicReaderScientist` reads the paper's method (`replicalab.reading`) and takes the sample
  size the key finding reports; by default it asks, proposes and revises.
- `BlindScientist` reads nothing: every candidate, the sample size the reported effect needs.
- `MemorizerScientist` remembers, for each paper title of the train split, the choices the
  hidden study made most often over the packs it was fitted on (the study's draw does not
  depend on the difficulty, so the title is the whole public key). On a paper it never saw it
  plays the blind policy, so what it scores above the blind one is memory, and what it scores
  on held-out papers against train papers is the generalization gap.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Literal, NamedTuple

from replicalab.agents import build_baseline_scientist_action
from replicalab.episode import Episode
from replicalab.judge.scores import RIGOR_WEIGHTS
from replicalab.models import (
    CLASSIC_ITEM_PRICES,
    CostRates,
    Paper,
    Protocol,
    ResourceItem,
    ScientistAction,
    ScientistActionType,
    ScientistObservation,
)
from replicalab.power import needed_samples, power
from replicalab.prices import CLASSIC_RATES, estimate_protocol_cost, estimate_staff_load
from replicalab.reading import addresses, read_paper
from replicalab.scenarios import DIFFICULTIES, NormalizedScenarioPack, generate_scenario, template_names
from replicalab.scenarios.rules import adequate_days

COSTS_QUESTION = "What does each part of the plan cost?"


class Choices(NamedTuple):
    """A plan's text choices and its sample size (None: the baseline's)."""

    technique: str | None
    elements: tuple[str, ...]
    controls: tuple[str, ...]
    sample_size: int | None


def planned(
    observation: ScientistObservation, choices: Choices, rates: CostRates | None = None
) -> ScientistAction:
    """The baseline's opening with `choices` put in, no longer than the judge's full-credit
    duration under the time limit, its sample size fit to the public bounds (sample size, staff)
    and to the budget at `rates` (the classic terms when None)."""
    opening = build_baseline_scientist_action(observation.model_copy(update={"current_protocol": None}))
    bounds: dict[str, float] = {}
    reviews: list[str] = []
    min_controls = 0
    for c in observation.constraints:
        if c.kind == "required_review" and c.term:
            reviews.append(c.term)
        elif c.quantity is not None:
            if c.kind == "min_controls":
                min_controls = max(min_controls, math.ceil(c.quantity))
            elif c.kind in ("min_sample_size",):
                bounds[c.kind] = max(bounds.get(c.kind, 0.0), c.quantity)
            elif c.kind in ("max_sample_size", "max_budget", "max_staff", "max_duration_days"):
                bounds[c.kind] = min(bounds.get(c.kind, math.inf), c.quantity)
    controls = list(dict.fromkeys([*choices.controls, *reviews]))
    for generic in opening.controls:
        if len(controls) >= min_controls:
            break
        if generic not in controls:
            controls.append(generic)
    least = math.ceil(bounds.get("min_sample_size", 1))
    n = choices.sample_size or opening.sample_size
    n = max(least, min(n, math.floor(bounds.get("max_sample_size", n))))
    protocol = Protocol(
        sample_size=n,
        controls=controls,
        technique=choices.technique or opening.technique,
        duration_days=min(
            opening.duration_days,
            adequate_days(math.floor(bounds.get("max_duration_days", opening.duration_days))),
        ),
        required_equipment=opening.required_equipment,
        required_reagents=opening.required_reagents,
        elements=list(choices.elements),
        rationale=addresses(choices.elements),
    )
    protocol = _within_staff(protocol, bounds.get("max_staff", math.inf), least)
    effect = observation.paper.reported_effect_size
    protocol = _within_budget(protocol, bounds.get("max_budget", math.inf), rates, least, effect)
    return ScientistAction(action_type=ScientistActionType.PROPOSE_PROTOCOL, **protocol.model_dump())


def _within_staff(protocol: Protocol, staff: float, least: int) -> Protocol:
    """The plan trimmed to the lab's staff: no more than 20 samples, then no more than 5 days,
    while the staff terms put it over."""
    for field, limit in (("sample_size", max(20, least)), ("duration_days", 5)):
        if estimate_staff_load(protocol) > staff and getattr(protocol, field) > limit:
            protocol = protocol.model_copy(update={field: limit})
    return protocol


def _within_budget(
    protocol: Protocol, budget: float, rates: CostRates | None, least: int, effect: float | None
) -> Protocol:
    """The plan priced at `rates` (the classic terms until the lab has told its own) and fitted
    to the budget: of the durations up to its own, the one whose best-fitting sample size earns
    the most rigor by the judge's public rule: the power to detect `effect` at that sample size
    (the sample size itself where the paper reports no effect) over that of the most samples
    that fit at its own duration, at most 1, times the design credit, whose duration share
    `RIGOR_WEIGHTS[2]` grows with the duration."""
    if estimate_protocol_cost(protocol, rates=rates) <= budget:
        return protocol
    terms = rates or CLASSIC_RATES
    wanted = protocol.sample_size

    def fitted(days: int) -> Protocol:
        plan = protocol.model_copy(update={"duration_days": days})
        if terms.per_sample <= 0:
            return plan
        fixed = estimate_protocol_cost(plan, 0, rates)
        n = max(least, min(wanted, math.floor((budget - fixed) / terms.per_sample)))
        return plan.model_copy(update={"sample_size": n})

    full = fitted(protocol.duration_days).sample_size  # the judge credits power up to this plan's

    def credit(plan: Protocol) -> tuple[bool, float]:
        fits = estimate_protocol_cost(plan, rates=rates) <= budget
        n = plan.sample_size
        sample = min(1.0, n / full if effect is None else power(effect, n) / max(power(effect, full), 1e-12))
        share = RIGOR_WEIGHTS[2]
        return fits, sample * (1.0 - share + share * plan.duration_days / max(1, protocol.duration_days))

    return max((fitted(days) for days in range(max(1, protocol.duration_days), 0, -1)), key=credit)


def wanted_samples(paper: Paper) -> int | None:
    """The sample size a plan aims for: what the reported effect needs (`needed_samples`), else
    the reported sample size."""
    effect = paper.reported_effect_size
    return paper.reported_sample_size if effect is None else needed_samples(effect)


def known_rates(observation: ScientistObservation) -> CostRates | None:
    """The prices a public-information Scientist can plan with: the lab's once it has said them;
    before that, when the lab has quoted the protocol on the table, the classic terms scaled by
    the quote (the one number a quote gives); otherwise none (the classic terms)."""
    if observation.cost_rates is not None:
        return observation.cost_rates
    protocol, quote = observation.current_protocol, observation.quoted_cost
    if protocol is None or quote is None:
        return None
    classic = estimate_protocol_cost(protocol)
    return scaled_rates(quote / classic if classic > 0 else 1.0, observation.resources)


def scaled_rates(scale: float, resources: Iterable[ResourceItem]) -> CostRates:
    """The classic terms times `scale`, every one of `resources` priced so too."""
    t = CLASSIC_RATES
    return CostRates(
        per_sample=t.per_sample * scale,
        per_day=t.per_day * scale,
        per_control=t.per_control * scale,
        item_prices={item.key: CLASSIC_ITEM_PRICES[item.kind] * scale for item in resources},
    )


Opening = Literal["ask", "propose"]
Answer = Literal["accept", "adopt", "revise"]


class Planner:
    """A Scientist that plans from its own choices (`choices`; None: the baseline's opening) and
    negotiates in one of the reference styles:

    - `opening`: "ask" first asks the Lab Manager what each part of the plan costs, then
      proposes priced at its answer; "propose" proposes at once, priced at the classic terms.
    - `answer`, to the Lab Manager's reply: "accept" accepts whatever it says; "adopt" accepts
      its counter-proposal and its consent, and otherwise follows the baseline's decision tree;
      "revise" accepts only its consent to the plan on the table and otherwise plans again with
      what the reply taught it (the prices it said, or the quote of the failed plan), adopting
      the counter-proposal when nothing new was learned.
    """

    name = "planner"

    def __init__(self, opening: Opening = "propose", answer: Answer = "adopt") -> None:
        self.opening = opening
        self.answer = answer

    def choices(self, observation: ScientistObservation) -> Choices | None:
        raise NotImplementedError

    def act(self, episode: Episode) -> ScientistAction:
        observation = episode.scientist_observation()
        protocol = observation.current_protocol
        if protocol is None:
            if self.opening == "ask" and observation.cost_rates is None:
                return ScientistAction(
                    action_type=ScientistActionType.REQUEST_INFO, questions=[COSTS_QUESTION]
                )
            return self._plan(observation, observation.cost_rates)
        reply = _last_reply(observation)
        if self.answer == "accept" or reply in ("accept", None):
            return _ACCEPT
        if self.answer == "revise":
            revised = self._plan(observation, known_rates(observation))
            if _protocol_of(revised) != protocol:
                return revised.model_copy(update={"action_type": ScientistActionType.REVISE_PROTOCOL})
        if reply == "suggest_alternative":
            return _ACCEPT
        move = build_baseline_scientist_action(observation)
        return move

    def _plan(self, observation: ScientistObservation, rates: CostRates | None) -> ScientistAction:
        choices = self.choices(observation)
        if choices is None:
            return build_baseline_scientist_action(observation)
        return planned(observation, choices, rates)


_ACCEPT = ScientistAction(action_type=ScientistActionType.ACCEPT)


def _last_reply(observation: ScientistObservation) -> str | None:
    """The Lab Manager's latest move type, None before it has answered a proposal."""
    for entry in reversed(observation.conversation_history):
        if entry.role == "lab_manager":
            return entry.action_type
    return None


def _protocol_of(action: ScientistAction) -> Protocol:
    return Protocol(**action.model_dump(exclude={"action_type", "questions"}))


class PublicReaderScientist(Planner):
    """Plans from what the paper's method affirms and the sample size its finding reports. By
    default it plays the best public-information negotiation found: ask what the lab charges,
    propose the plan that fits at those prices, revise with whatever the reply teaches."""

    name = "reader"

    def __init__(self, opening: Opening = "ask", answer: Answer = "revise") -> None:
        super().__init__(opening, answer)

    def choices(self, observation: ScientistObservation) -> Choices:
        reading = read_paper(observation.paper, observation.candidates)
        technique = (*reading.techniques, *observation.candidates.techniques, None)[0]
        return Choices(technique, reading.elements, reading.controls, wanted_samples(observation.paper))


class BlindScientist(Planner):
    """Does not read the paper: claims every candidate element and control, takes the first
    technique and the reported sample size, and negotiates as the public reader does. What it
    scores is what the task gives without reading."""

    name = "blind"

    def __init__(self, opening: Opening = "ask", answer: Answer = "revise") -> None:
        super().__init__(opening, answer)

    def choices(self, observation: ScientistObservation) -> Choices:
        return every_candidate(observation)


def every_candidate(observation: ScientistObservation) -> Choices:
    """Every candidate element and control, the first technique, the sample size the reported
    effect needs."""
    c = observation.candidates
    technique = c.techniques[0] if c.techniques else None
    return Choices(technique, tuple(c.elements), tuple(c.controls), wanted_samples(observation.paper))


class MemorizerScientist(Planner):
    """Plays, for a paper it was fitted on, the choices its study made most often; otherwise the
    blind policy's. Fitted on the train split's packs of `seeds` (every registered template and
    difficulty unless given)."""

    name = "memorizer"

    def __init__(
        self,
        seeds: Iterable[int] = range(50),
        templates: Iterable[str] | None = None,
        difficulties: Iterable[str] = DIFFICULTIES,
    ) -> None:
        super().__init__("ask", "revise")
        seen: dict[str, list[Choices]] = {}
        for pack in train_packs(seeds, templates, difficulties):
            spec = pack.hidden_reference_spec
            seen.setdefault(pack.paper.title, []).append(
                Choices(
                    spec.technique,
                    tuple(spec.required_elements),
                    tuple(spec.original_controls),
                    spec.sample_size,
                )
            )
        self.table = {key: _most_often(plays) for key, plays in seen.items()}

    def choices(self, observation: ScientistObservation) -> Choices | None:
        remembered = self.table.get(observation.paper.title) or every_candidate(observation)
        return remembered._replace(sample_size=wanted_samples(observation.paper))  # public, per pack


def train_packs(
    seeds: Iterable[int], templates: Iterable[str] | None = None, difficulties: Iterable[str] = DIFFICULTIES
) -> Iterator[NormalizedScenarioPack]:
    """The train split's packs of `seeds` for every template (every registered one unless given)
    and difficulty: all that a probe fitted on train may read."""
    levels, chosen = tuple(difficulties), tuple(seeds)
    for template in templates or template_names():
        for seed in chosen:
            for level in levels:
                yield generate_scenario(seed, template, level, "train")


def _most_often(plays: list[Choices]) -> Choices:
    """The modal technique, the elements and controls in at least half the plays, the median n."""
    techniques = Counter(play.technique for play in plays)
    elements = Counter(e for play in plays for e in play.elements)
    controls = Counter(c for play in plays for c in play.controls)
    half = len(plays) / 2
    sizes = sorted(play.sample_size or 0 for play in plays)
    return Choices(
        techniques.most_common(1)[0][0],
        tuple(e for e, count in elements.items() if count >= half),
        tuple(c for c, count in controls.items() if count >= half),
        sizes[len(sizes) // 2] or None,
    )
