"""Scenarios, plans and moves the episode, judge and env tests build on."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel, ValidationError

from replicalab.episode import (
    Episode,
)
from replicalab.models import (
    FEASIBILITY_DIMENSIONS,
    RATIONALE_WORD_LIMIT,
    LabManagerAction,
    LabManagerActionType,
    Protocol,
    ScientistAction,
    ScientistActionType,
)
from replicalab.scenarios import (
    HiddenReferenceSpec,
    NormalizedScenarioPack,
    generate_scenario,
    get_template,
    minimal_protocol,
)

TEMPLATES = ("math_reasoning", "ml_benchmark", "finance_trading")
COMBOS = [(t, d) for t in TEMPLATES for d in ("easy", "medium", "hard")]


def good_plan(pack: NormalizedScenarioPack) -> Protocol:
    """The case's minimal feasible plan, which claims the hidden reference's elements."""
    case = next(c for c in get_template(pack.template).cases if c.case_id == pack.case_id)
    swaps = {
        item.name: pack.substitutes[item.name.lower()][0]
        for item in pack.resources
        if item.essential and not item.available
    }
    return minimal_protocol(case, pack.difficulty, swaps, pack.hidden_reference_spec)


def visible_texts(pack: NormalizedScenarioPack) -> list[str]:
    """Every text the Scientist can see in its first observation."""
    obs = pack.scientist_observation
    paper = obs.paper
    texts = [paper.title, paper.hypothesis, paper.method, paper.key_finding, obs.experiment_goal]
    texts += [c.description for c in obs.constraints]
    texts += [r.name for r in obs.resources]
    texts += [f"{s.original} {s.alternative} {s.condition} {s.tradeoff}" for s in obs.substitutions]
    return texts


def random_protocol(pack: NormalizedScenarioPack, rng: np.random.Generator) -> Protocol:
    """A protocol mixing sensible and junk parts, duplicates and padding included."""
    texts = visible_texts(pack)
    vocabulary = " ".join([*texts, *pack.hidden_reference_spec.required_elements]).split()
    reviews = [c.term for c in pack.constraints if c.kind == "required_review" and c.term]
    control_pool = [
        *reviews,
        "baseline comparison",
        "Baseline  comparison",
        "the baseline",
        *pack.hidden_reference_spec.required_elements,
        "of the",
        texts[2],
    ]
    item_pool = [r.name for r in pack.resources] + ["unicorn centrifuge", "quantum abacus"]
    technique_pool = [
        "",
        pack.paper.method,
        " ".join(pack.paper.method.split()[:6]),
        "guess",
        *pack.candidates.techniques,
    ]
    element_pool = [*pack.candidates.elements, "guess", "of the", texts[0]]

    def pick(pool: list[str], most: int) -> list[str]:
        return [pool[i] for i in rng.integers(0, len(pool), int(rng.integers(0, most + 1)))]

    limit = pack.lab.time_limit_days
    return Protocol(
        sample_size=int(rng.integers(0, 80)),
        controls=pick(control_pool, 7),
        technique=technique_pool[int(rng.integers(0, len(technique_pool)))],
        elements=pick(element_pool, 6),
        duration_days=int(rng.integers(0, limit + 6)),
        required_equipment=pick(item_pool, 4),
        required_reagents=pick(item_pool, 3),
        rationale=" ".join(pick(vocabulary, RATIONALE_WORD_LIMIT)),
    )


PACK = generate_scenario(5, "ml_benchmark", "medium")

ACCEPT = ScientistAction(action_type=ScientistActionType.ACCEPT)

ASK_BUDGET = ScientistAction(
    action_type=ScientistActionType.REQUEST_INFO, questions=["What budget is available?"]
)


def propose(protocol: Protocol, kind: str = "propose_protocol") -> ScientistAction:
    return ScientistAction(action_type=ScientistActionType(kind), **protocol.model_dump(), questions=[])


def bad_plan(pack: NormalizedScenarioPack) -> Protocol:
    """A plan the grounded Lab Manager objects to (too few samples, far too long)."""
    return good_plan(pack).model_copy(update={"sample_size": 1, "duration_days": 400})


def stance(
    episode: Episode, kind: LabManagerActionType, *, lie: bool = False, suggested: Protocol | None = None
) -> LabManagerAction:
    """A Lab Manager move with the grounded flags (all True when `lie`) and the given stance."""
    check = episode.check
    flags = {f"{dim}_ok": lie or check is None or getattr(check, dim).ok for dim in FEASIBILITY_DIMENSIONS}
    return LabManagerAction(
        action_type=kind,
        feasible=all(flags.values()),
        **flags,
        suggested_protocol=suggested,
        explanation=f"{kind.value} by a test",
    )


def new(pack: NormalizedScenarioPack = PACK, **kwargs: object) -> Episode:
    return Episode(pack, **kwargs)  # type: ignore[arg-type]


def with_secret_reference(pack: NormalizedScenarioPack) -> HiddenReferenceSpec:
    """`pack`'s hidden spec with every text and number replaced by a marker a leak would show."""
    return pack.hidden_reference_spec.model_copy(
        update={
            "summary": "SECRET-SUMMARY",
            "required_elements": ["SECRET-ELEMENT"],
            "flexible_elements": ["SECRET-FLEX"],
            "target_metric": "SECRET-METRIC",
            "target_value": 987654.321,
        }
    )


def assert_rejected(model: type[BaseModel], field: str, data: dict[str, Any]) -> None:
    """`model` refuses `data` with an error located at `field` or whose message starts with it.

    The message check matters: pydantic echoes the whole input in `str(error)`, so a plain
    substring test would pass for any field name that appears in the input.
    """
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    named = [
        err
        for err in caught.value.errors()
        if field in err["loc"] or err["msg"].startswith(f"Value error, {field}:")
    ]
    assert named, f"no error names {field!r}: {caught.value.errors()}"
