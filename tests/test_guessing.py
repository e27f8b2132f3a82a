"""Guessing never pays: on the test split, at every difficulty, claiming what the paper does not
state scores no more, on average over packs (paired), than leaving it out. The plans are the
public-information oracle's (every sentence's meaning), judged as proposed."""

from __future__ import annotations

import statistics

import pytest

from replicalab.baselines.policies.probes import Choices, planned
from replicalab.judge import build_reward_breakdown
from replicalab.models import Protocol, ScientistAction
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, NormalizedScenarioPack, generate_scenario
from replicalab.scenarios.generator import paper_facts

SEEDS = range(40)


def _score(pack: NormalizedScenarioPack, choices: Choices) -> float:
    action: ScientistAction = planned(pack.scientist_observation, choices, pack.lab.rates)
    protocol = Protocol(**action.model_dump(exclude={"action_type", "questions"}))
    return build_reward_breakdown(protocol, pack).total


def _stated(pack: NormalizedScenarioPack) -> tuple[Choices, set[str]]:
    """The public oracle's choices, and every candidate the method uses or denies."""
    facts = paper_facts(pack)
    used = {f.candidate for f in facts if f.meaning == "used"}
    told = {f.candidate for f in facts if f.meaning != "mentioned"}
    denied = told - used
    c = pack.candidates
    technique = next((t for t in c.techniques if t in used), next(t for t in c.techniques if t not in denied))
    return (
        Choices(
            technique,
            tuple(e for e in c.elements if e in used),
            tuple(k for k in c.controls if k in used),
            pack.paper.reported_sample_size,
        ),
        told,
    )


@pytest.mark.parametrize("level", DIFFICULTIES)
def test_claiming_what_the_paper_does_not_state_never_pays(level: str) -> None:
    gains: dict[str, list[float]] = {"elements": [], "controls": [], "techniques": []}
    for template in BUILTIN_TEMPLATES:
        for seed in SEEDS:
            pack = generate_scenario(seed, template, level, "test")
            choices, told = _stated(pack)
            base = _score(pack, choices)
            c = pack.candidates
            unstated = [e for e in c.elements if e not in told]
            if unstated:
                wider = choices._replace(
                    elements=tuple(e for e in c.elements if e in choices.elements or e in unstated)
                )
                gains["elements"].append(_score(pack, wider) - base)
            extra = [k for k in c.controls if k not in told]
            if extra:
                gains["controls"].append(
                    _score(pack, choices._replace(controls=(*choices.controls, *extra))) - base
                )
            others = " ".join(t for t in c.techniques if t != choices.technique)
            both = choices._replace(technique=f"{choices.technique} {others}")
            gains["techniques"].append(_score(pack, both) - base)
    for kind, values in gains.items():
        assert values, kind
        assert statistics.fmean(values) <= 0.0, (kind, statistics.fmean(values))
