"""Generated packs and plans built from them (the minimal feasible plan, the paper's own plan, and
perturbations of both), so the Lab Manager's check, counter-proposal and answer are tested on the
inputs the env will feed them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import cache

from replicalab.models import Protocol
from replicalab.scenarios import (
    NormalizedScenarioPack,
    PaperCase,
    generate_scenario,
    get_template,
    minimal_protocol,
    published_protocol,
)
from tests.plans import COMBOS

PROPERTY_SEEDS = range(200)
SEARCH_SEEDS = range(400)


@cache
def pack(seed: int, template: str, difficulty: str) -> NormalizedScenarioPack:
    return generate_scenario(seed, template, difficulty)


def case_of(scenario: NormalizedScenarioPack) -> PaperCase:
    return next(c for c in get_template(scenario.template).cases if c.case_id == scenario.case_id)


def feasible_protocol(scenario: NormalizedScenarioPack) -> Protocol:
    """The generator's minimal plan, with each unavailable essential item swapped."""
    swaps = {
        item.name: scenario.substitutes[item.name.lower()][0]
        for item in scenario.resources
        if item.essential and not item.available
    }
    return minimal_protocol(case_of(scenario), scenario.difficulty, swaps, scenario.hidden_reference_spec)


def paper_protocol(scenario: NormalizedScenarioPack) -> Protocol:
    """The paper's own plan: full size and duration, every control, the original items."""
    return published_protocol(case_of(scenario), scenario.hidden_reference_spec)


def forbidden_terms(scenario: NormalizedScenarioPack) -> list[str]:
    return [c.term for c in scenario.constraints if c.kind == "forbidden_practice" and c.hard and c.term]


def unavailable(scenario: NormalizedScenarioPack, kind: str) -> list[str]:
    return [r.name for r in scenario.resources if r.kind == kind and not r.available]


def edit(protocol: Protocol, **changes: object) -> Protocol:
    return Protocol.model_validate({**protocol.model_dump(), **changes})


def perturbations(scenario: NormalizedScenarioPack, base: Protocol) -> Iterator[Protocol]:
    term = forbidden_terms(scenario)[0]
    booked = unavailable(scenario, "equipment")
    missing = unavailable(scenario, "reagent")
    yield base
    yield edit(base, sample_size=base.sample_size * 2)
    yield edit(base, duration_days=base.duration_days + 5)
    yield edit(base, required_equipment=[*booked, *base.required_equipment[1:]])
    yield edit(base, required_reagents=[*missing, *base.required_reagents])
    yield edit(base, controls=[])
    yield edit(base, technique=f"{base.technique} with {term}")
    yield edit(base, required_equipment=[])
    yield edit(base, required_reagents=[*base.required_reagents, "unobtainium"])
    yield edit(
        base,
        sample_size=base.sample_size * 4,
        duration_days=base.duration_days * 2,
        required_equipment=[*base.required_equipment, *booked],
    )


def find(
    build: Callable[[NormalizedScenarioPack], Protocol | None],
    combos: Sequence[tuple[str, str]] = COMBOS,
) -> tuple[NormalizedScenarioPack, Protocol]:
    """The first (pack, protocol) over seeds and combos for which `build` returns a protocol."""
    for seed in SEARCH_SEEDS:
        for template, difficulty in combos:
            scenario = pack(seed, template, difficulty)
            protocol = build(scenario)
            if protocol is not None:
                return scenario, protocol
    raise AssertionError("no generated scenario fits")
