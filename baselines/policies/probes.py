"""Probes of what the benchmark measures: a Scientist that memorizes and one that reads.

Both plan alike (`planned`): the baseline's opening (its items, duration and reviews), with a
technique, controls, the elements the rationale addresses and a sample size put in, then fitted
to the brief's bounds: its sample-size range, the lab's staff (the staff terms are the lab's
fixed rule), then its budget at the prices the Scientist knows (the most samples that fit, then
the longest duration). They differ only in where those text choices come from:

- `MemorizerScientist` remembers, for each paper title of the train split, the choices the
  hidden study made most often over the packs it was fitted on (the study's draw does not
  depend on the difficulty, so the title is the whole public key). On a paper
  it never saw it plays the baseline. What it scores on held-out papers against what it scores
  on train papers is the generalization gap.
- `PublicReaderScientist` reads the paper's method (`replicalab.reading`): the candidates it
  affirms, and the sample size the key finding reports.

Later turns follow the baseline's decision tree (accept, or revise on a blocker), keeping the
plan's own rationale.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from replicalab.agents import build_baseline_scientist_action
from replicalab.episode import Episode
from replicalab.lab_costs import CLASSIC_RATES, estimate_protocol_cost, estimate_staff_load
from replicalab.models import CostRates, Protocol, ScientistAction, ScientistActionType, ScientistObservation
from replicalab.reading import addresses, read_paper
from replicalab.scenarios import DIFFICULTIES, generate_scenario, template_names

COSTS_QUESTION = "What does each part of the plan cost?"


class Choices(NamedTuple):
    """A plan's text choices and its sample size (None: the baseline's)."""

    technique: str | None
    elements: tuple[str, ...]
    controls: tuple[str, ...]
    sample_size: int | None


def planned(observation: ScientistObservation, choices: Choices) -> ScientistAction:
    """The baseline's opening with `choices` put in, its sample size fit to the public bounds
    (sample size, budget)."""
    opening = build_baseline_scientist_action(observation)
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
            elif c.kind in ("max_sample_size", "max_budget", "max_staff"):
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
        duration_days=opening.duration_days,
        required_equipment=opening.required_equipment,
        required_reagents=opening.required_reagents,
        rationale=addresses(choices.elements),
    )
    protocol = _within_staff(protocol, bounds.get("max_staff", math.inf), least)
    protocol = _within_budget(protocol, bounds.get("max_budget", math.inf), observation.cost_rates, least)
    return ScientistAction(action_type=ScientistActionType.PROPOSE_PROTOCOL, **protocol.model_dump())


def _within_staff(protocol: Protocol, staff: float, least: int) -> Protocol:
    """The plan trimmed to the lab's staff: no more than 20 samples, then no more than 5 days,
    while the staff terms put it over."""
    for field, limit in (("sample_size", max(20, least)), ("duration_days", 5)):
        if estimate_staff_load(protocol) > staff and getattr(protocol, field) > limit:
            protocol = protocol.model_copy(update={field: limit})
    return protocol


def _within_budget(protocol: Protocol, budget: float, rates: CostRates | None, least: int) -> Protocol:
    """The plan priced at `rates` (the classic terms until the lab has told its own) and fitted
    to the budget: the most samples that fit (not below `least`), then the longest duration."""
    if estimate_protocol_cost(protocol, rates=rates) <= budget:
        return protocol
    terms = rates or CLASSIC_RATES
    if terms.per_sample > 0:
        fixed = estimate_protocol_cost(protocol, 0, rates)
        n = max(least, min(protocol.sample_size, math.floor((budget - fixed) / terms.per_sample)))
        protocol = protocol.model_copy(update={"sample_size": n})
    over = estimate_protocol_cost(protocol, rates=rates) - budget
    if over > 0 and terms.per_day > 0:
        days = max(1, protocol.duration_days - math.ceil(over / terms.per_day))
        protocol = protocol.model_copy(update={"duration_days": days})
    return protocol


class _Planner:
    """A Scientist that opens with its own choices (`choices`; None: the baseline's opening) and
    then follows the baseline, keeping its rationale."""

    name = "planner"

    def choices(self, observation: ScientistObservation) -> Choices | None:
        raise NotImplementedError

    def act(self, episode: Episode) -> ScientistAction:
        observation = episode.scientist_observation()
        protocol = observation.current_protocol
        if protocol is None:
            choices = self.choices(observation)
            if choices is None:
                return build_baseline_scientist_action(observation)
            return planned(observation, choices)
        move = build_baseline_scientist_action(observation)
        if move.action_type is ScientistActionType.REVISE_PROTOCOL and protocol.rationale.startswith(
            "Addresses"
        ):
            return move.model_copy(update={"rationale": protocol.rationale})
        return move


class PublicReaderScientist(_Planner):
    """Plans from what the paper's method affirms and the sample size its finding reports; with
    `ask`, first asks the Lab Manager what each part of the plan costs, and prices the plan with
    its answer instead of the classic terms."""

    name = "reader"

    def __init__(self, ask: bool = False) -> None:
        self.ask = ask
        if ask:
            self.name = "reader-asks"

    def act(self, episode: Episode) -> ScientistAction:
        observation = episode.scientist_observation()
        if self.ask and observation.current_protocol is None and observation.cost_rates is None:
            return ScientistAction(action_type=ScientistActionType.REQUEST_INFO, questions=[COSTS_QUESTION])
        return super().act(episode)

    def choices(self, observation: ScientistObservation) -> Choices:
        reading = read_paper(observation.paper, observation.candidates)
        technique = reading.techniques[0] if reading.techniques else None
        return Choices(technique, reading.elements, reading.controls, observation.paper.reported_sample_size)


class MemorizerScientist(_Planner):
    """Plays, for a paper it was fitted on, the choices its study made most often; otherwise the
    baseline. Fitted on the train split's packs of `seeds` (every registered template and
    difficulty unless given)."""

    name = "memorizer"

    def __init__(
        self,
        seeds: Iterable[int] = range(50),
        templates: Iterable[str] | None = None,
        difficulties: Iterable[str] = DIFFICULTIES,
    ) -> None:
        seen: dict[str, list[Choices]] = {}
        levels = tuple(difficulties)
        for template in templates or template_names():
            for seed in seeds:
                for level in levels:
                    pack = generate_scenario(seed, template, level, "train")
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
        return self.table.get(observation.paper.title)


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
