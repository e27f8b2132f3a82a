"""No prose is scored and no negation fools a check: a plan's rationale, whatever it says within
the word limit (negations of every candidate the study did not use and of every forbidden
practice, the study's elements named last or not at all), changes no score of the judge, no
check of the lab, no validation issue and no answer of the Lab Manager."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replicalab.agents import check_feasibility, compose_lab_manager_response, suggest_alternative
from replicalab.judge import build_reward_breakdown
from replicalab.models import RATIONALE_WORD_LIMIT, Protocol
from replicalab.scenarios import DIFFICULTIES, generate_scenario
from replicalab.scenarios.types import SPLITS, NormalizedScenarioPack
from replicalab.validation import validate_protocol
from tests.plans import TEMPLATES


def _study_plan(pack: NormalizedScenarioPack) -> Protocol:
    """The study's own claims with the lab's reviews and needed items."""
    reference = pack.hidden_reference_spec
    reviews = list(pack.terms.get("required_review", ()))
    items = [item.item for item in pack.essentials]
    return Protocol(
        sample_size=max(1, reference.sample_size),
        controls=[*reference.original_controls, *reviews],
        technique=reference.technique,
        elements=list(reference.required_elements),
        duration_days=max(1, pack.lab.time_limit_days // 2),
        required_equipment=[i.name for i in items if i.kind == "equipment"],
        required_reagents=[i.name for i in items if i.kind == "reagent"],
        rationale="A plan.",
    )


def _rewrites(pack: NormalizedScenarioPack) -> list[str]:
    """Rationales that a reader of prose could be fooled by."""
    reference = pack.hidden_reference_spec
    unused = [e for e in pack.candidates.elements if e not in reference.required_elements]
    unused += [c for c in pack.candidates.controls if c not in reference.original_controls]
    unused += [t for t in pack.candidates.techniques if t != reference.technique]
    practices = list(pack.terms.get("forbidden_practice", ()))
    return [
        " ".join(f"No {name}." for name in unused),
        " ".join(f"{name} is avoided." for name in practices),
        " ".join(f"We use {name}." for name in practices),
        "Some preamble words. " * 10 + "; ".join(reference.required_elements),
        " ".join(f"{name} is kept." for name in unused),
    ]


def _within_limit(text: str) -> str:
    return " ".join(text.split()[:RATIONALE_WORD_LIMIT]) or "x"


def _everything(protocol: Protocol, pack: NormalizedScenarioPack) -> tuple[object, ...]:
    check = check_feasibility(protocol, pack)
    suggestion = suggest_alternative(protocol, check, pack)
    answer = compose_lab_manager_response(check, suggestion)
    breakdown = build_reward_breakdown(protocol, pack, check, rounds_used=4)
    offered = (
        None if suggestion is None else suggestion.revised_protocol.model_copy(update={"rationale": "x"})
    )
    return (
        check,
        validate_protocol(protocol, pack),
        breakdown,
        answer.model_dump(exclude={"suggested_protocol"}),
        offered,
    )


@settings(max_examples=60, deadline=None)
@given(
    template=st.sampled_from(TEMPLATES),
    difficulty=st.sampled_from(DIFFICULTIES),
    split=st.sampled_from(SPLITS),
    seed=st.integers(0, 10_000),
    free=st.text(st.characters(codec="ascii"), max_size=400),
    pick=st.integers(0, 4),
)
def test_any_rationale_within_the_limit_changes_no_score_and_no_check(
    template: str, difficulty: str, split: str, seed: int, free: str, pick: int
) -> None:
    pack = generate_scenario(seed, template, difficulty, split=split)
    plan = _study_plan(pack)
    expected = _everything(plan, pack)
    for rationale in (_within_limit(free), _within_limit(_rewrites(pack)[pick])):
        rewritten = plan.model_copy(update={"rationale": rationale})
        assert _everything(rewritten, pack) == expected
