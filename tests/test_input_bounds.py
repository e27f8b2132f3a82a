"""Bounded contracts: every number and text an agent or a file can send has a documented maximum,
every action is validated when it enters an episode whatever built it, and the reference
policies never build an action their own contract refuses."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import grounded_lab_response, respond
from replicalab.episode import Episode
from replicalab.models import (
    MAX_CREDITS,
    MAX_DURATION_DAYS,
    MAX_LIST_ITEMS,
    MAX_SAMPLE_SIZE,
    MAX_STAFF,
    MAX_TEXT_CHARS,
    Constraint,
    EpisodeLog,
    LabManagerAction,
    LabManagerActionType,
    Protocol,
    ScientistAction,
    ScientistActionType,
)
from replicalab.moves import LAB_MANAGER, SCIENTIST, ActionError, coerce_action
from replicalab.prices import estimate_protocol_cost, estimate_staff_load
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, NormalizedScenarioPack, generate_scenario
from replicalab.scenarios.io import load_pack, save_pack
from replicalab.scenarios.registry import get_template, register_template_file
from replicalab.scenarios.types import LabFacts, PaperCase
from tests.plans import ASK_BUDGET, PACK, assert_rejected, good_plan, new, propose, stance


def assert_rejected_by(build: Any, field: str) -> None:
    """`build()` raises a ValidationError located at `field` (or whose message starts with it)."""
    with pytest.raises(ValidationError) as caught:
        build()
    errors = caught.value.errors()
    assert any(field in e["loc"] or e["msg"].startswith(f"Value error, {field}:") for e in errors), errors


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GOOD = propose(good_plan(PACK))
NUMBER_LIMITS = {"sample_size": MAX_SAMPLE_SIZE, "duration_days": MAX_DURATION_DAYS}
TEXT_FIELDS = ("technique", "rationale")
LIST_FIELDS = ("controls", "required_equipment", "required_reagents")

too_large = st.integers(min_value=MAX_SAMPLE_SIZE + 1, max_value=10**300)
number_fields = st.sampled_from(sorted(NUMBER_LIMITS))


def _refused(outcome_error: ActionError | None, field: str) -> None:
    assert outcome_error is not None and outcome_error.code == "invalid_action"
    assert outcome_error.message.startswith(field)


def _assert_whole(episode: Episode) -> None:
    """The episode survived: it can go on or has ended with a verdict, and its log is valid JSON."""
    if episode.done:
        assert episode.verdict is not None
    text = episode.to_log().model_dump_json()
    assert EpisodeLog.model_validate_json(text).model_dump_json() == text


# --------------------------------------------------------------------------- numbers (item: overflow)


@SETTINGS
@given(field=number_fields, value=too_large)
def test_a_too_large_number_is_invalid_action_on_every_path(field: str, value: int) -> None:
    """Text and dict: the episode refuses the move; a copy or `model_construct` with the value
    cannot even be built (a contract validates however it is made), naming the field."""
    payload = {**GOOD.model_dump(mode="json"), field: value}
    for build in (
        lambda: GOOD.model_copy(update={field: value}),
        lambda: ScientistAction.model_construct(**{**GOOD.model_dump(), field: value}),
    ):
        assert_rejected_by(build, field)
    paths: dict[str, object] = {"text": json.dumps(payload), "dict": payload}
    for path, action in paths.items():
        episode = new()
        outcome = episode.step(coerce_action(SCIENTIST, action))
        _refused(outcome.error, field)
        assert episode.protocol is None and episode.agent_selection == LAB_MANAGER, path
        _assert_whole(episode)


@SETTINGS
@given(field=number_fields, value=too_large, build=st.sampled_from(["dict", "text"]))
def test_a_suggestion_with_a_too_large_number_refuses_the_lab_managers_move(
    field: str, value: int, build: str
) -> None:
    episode = new()
    episode.step(GOOD)
    honest = stance(episode, LabManagerActionType.SUGGEST_ALTERNATIVE, suggested=good_plan(PACK))
    suggested = {**good_plan(PACK).model_dump(mode="json"), field: value}
    move: object
    data = {**honest.model_dump(mode="json"), "suggested_protocol": suggested}
    move = data if build == "dict" else json.dumps(data)
    outcome = episode.step(coerce_action(LAB_MANAGER, move))
    _refused(outcome.error, "suggested_protocol." + field)
    assert episode.last_lab_action is None  # a refused move is no consent
    episode.step(ScientistAction(action_type=ScientistActionType.ACCEPT))
    assert episode.done and episode.verdict != "agreement" and episode.breakdown is not None
    _assert_whole(episode)


@SETTINGS
@given(
    sample_size=st.integers(0, MAX_SAMPLE_SIZE),
    duration=st.integers(0, MAX_DURATION_DAYS),
    counts=st.tuples(*[st.integers(0, MAX_LIST_ITEMS)] * 3),
)
def test_the_formulas_stay_finite_up_to_the_bounds(
    sample_size: int, duration: int, counts: tuple[int, int, int]
) -> None:
    controls, equipment, reagents = ([f"x{i}" for i in range(n)] for n in counts)
    protocol = Protocol(
        sample_size=sample_size,
        duration_days=duration,
        controls=controls,
        required_equipment=equipment,
        required_reagents=reagents,
    )
    assert math.isfinite(estimate_protocol_cost(protocol)) and 1 <= estimate_staff_load(protocol) <= 5


def test_a_plan_at_every_bound_plays_a_whole_episode() -> None:
    names = [f"item {i}" for i in range(MAX_LIST_ITEMS)]
    plan = good_plan(PACK).model_copy(
        update={
            "sample_size": MAX_SAMPLE_SIZE,
            "duration_days": MAX_DURATION_DAYS,
            "required_equipment": names,
        }
    )
    episode = new()
    episode.step(propose(Protocol.model_validate(plan.model_dump())))
    assert episode.step(grounded_lab_response(episode)).error is None
    episode.step(ScientistAction(action_type=ScientistActionType.ACCEPT))
    assert episode.done and episode.breakdown is not None and math.isfinite(episode.totals[SCIENTIST])
    _assert_whole(episode)


@pytest.mark.parametrize("field", sorted(NUMBER_LIMITS))
def test_number_bounds_are_documented_maxima(field: str) -> None:
    limit = NUMBER_LIMITS[field]
    base = good_plan(PACK).model_dump()
    assert Protocol.model_validate({**base, field: limit}).model_dump()[field] == limit
    assert_rejected(Protocol, field, {**base, field: limit + 1})
    assert_rejected(ScientistAction, field, {**GOOD.model_dump(), field: limit + 1})


# --------------------------------------------------------------------------- entry validation


def test_copies_and_model_construct_validate_like_the_constructor() -> None:
    """pydantic's `model_copy(update=...)` and `model_construct` skip validation; a contract's do
    not, so no action that breaks its contract can reach an episode, whatever built it."""
    for update, field in (({"sample_size": -5}, "sample_size"), ({"technique": None}, "technique")):
        assert_rejected_by(lambda update=update: GOOD.model_copy(update=update), field)
        assert_rejected_by(
            lambda update=update: ScientistAction.model_construct(**{**GOOD.model_dump(), **update}), field
        )
    episode = new()
    episode.step(GOOD)
    reply = grounded_lab_response(episode)
    for update, field in (
        ({"feasible": not reply.feasible}, "feasible"),
        ({"explanation": None}, "explanation"),
    ):
        assert_rejected_by(lambda update=update: reply.model_copy(update=update), field)
    copied = GOOD.model_copy(update={"sample_size": "7", "technique": "  t  "})
    assert copied.sample_size == 7 and copied.technique == "t"  # coerced and stripped as validated
    assert GOOD.model_copy() == GOOD and GOOD.model_copy(deep=True) == GOOD


# --------------------------------------------------------------------------- text caps


@pytest.mark.parametrize("field", TEXT_FIELDS)
def test_one_text_cap_on_every_path(field: str) -> None:
    over = "x" * (MAX_TEXT_CHARS + 1)
    at = "x" * MAX_TEXT_CHARS
    payload = {**GOOD.model_dump(mode="json"), field: over}
    _refused(new().step(coerce_action(SCIENTIST, payload)).error, field)
    assert_rejected_by(lambda: GOOD.model_copy(update={field: over}), field)
    text = coerce_action(SCIENTIST, json.dumps(payload))
    assert isinstance(text, ActionError) and text.code == "invalid_json"  # over the parser's cap
    assert_rejected(ScientistAction, field, payload)
    assert new().step(coerce_action(SCIENTIST, {**payload, field: at})).error is None


def test_ten_megabytes_of_rationale_never_reach_the_log() -> None:
    episode = new()
    outcome = episode.step(
        coerce_action(SCIENTIST, {**GOOD.model_dump(mode="json"), "rationale": "x" * 10**7})
    )
    _refused(outcome.error, "rationale")
    assert len(episode.to_log().model_dump_json()) < 20_000


@pytest.mark.parametrize("field", [*LIST_FIELDS, "questions"])
def test_lists_are_capped_and_so_are_their_items(field: str) -> None:
    base = (ASK_BUDGET if field == "questions" else GOOD).model_dump()
    assert_rejected(ScientistAction, field, {**base, field: ["q"] * (MAX_LIST_ITEMS + 1)})
    assert_rejected(ScientistAction, field, {**base, field: ["q" * (MAX_TEXT_CHARS + 1)]})
    assert_rejected(
        LabManagerAction,
        "explanation",
        {**stance(new(), LabManagerActionType.REPORT_FEASIBILITY).model_dump(), "explanation": "e" * 20_001},
    )


# --------------------------------------------------------------------------- the reference policies

# Names the lab lacks, as long as the caps allow: the longest explanations and suggestions.
long_names = st.lists(st.text("abcdefgh ", min_size=1, max_size=400).map(str.strip).filter(bool), max_size=64)


@SETTINGS
@given(
    seed=st.integers(0, 10**6),
    template=st.sampled_from(BUILTIN_TEMPLATES),
    difficulty=st.sampled_from(DIFFICULTIES),
    equipment=long_names,
    essentials=st.booleans(),
    sample_size=st.integers(1, MAX_SAMPLE_SIZE),
    duration=st.integers(0, MAX_DURATION_DAYS),
)
@example(  # an explanation naming 64 long unknown items, over the cap before it is cut
    seed=1,
    template="ml_benchmark",
    difficulty="hard",
    equipment=[f"{i} " + "x" * 300 for i in range(MAX_LIST_ITEMS)],
    essentials=False,
    sample_size=10,
    duration=100,
)
def test_the_reference_policies_never_break_the_contract(
    seed: int,
    template: str,
    difficulty: str,
    equipment: list[str],
    essentials: bool,
    sample_size: int,
    duration: int,
) -> None:
    """The grounded Lab Manager's answer to any valid plan, and the baseline's moves, validate
    as they are: the episode trusts them, and a replay validates them from the log."""
    pack = generate_scenario(seed, template, difficulty)
    if essentials:  # the list is full of unknown items and every essential is missing
        equipment = [*equipment, *(f"spare {i}" for i in range(MAX_LIST_ITEMS))][:MAX_LIST_ITEMS]
    plan = Protocol(
        sample_size=sample_size,
        duration_days=duration,
        technique="t",
        required_equipment=equipment,
        rationale="r",
    )
    answer, _, _ = respond(plan, pack)
    assert LabManagerAction.model_validate(answer.model_dump()) == answer
    episode = Episode(pack)
    while not episode.done:
        if episode.agent_selection == SCIENTIST:
            move: ScientistAction | LabManagerAction = build_baseline_scientist_action(
                episode.scientist_observation()
            )
        else:
            move = grounded_lab_response(episode)
        assert type(move).model_validate(move.model_dump()) == move
        episode.step(move)


def test_the_baseline_keeps_its_contract_on_a_pack_of_extremes(tmp_path: Any) -> None:
    """A hand-written pack with a paper title at the text cap and more required reviews than a
    plan can hold: the baseline still proposes a valid plan."""
    pack = PACK
    title = "T" * MAX_TEXT_CHARS
    reviews = [
        Constraint(id=f"r{i}", kind="required_review", description="d", hard=False, term=f"review {i}")
        for i in range(MAX_LIST_ITEMS)
    ]
    paper = pack.paper.model_copy(update={"title": title})
    constraints = [*pack.constraints, *reviews]
    data = pack.model_dump()
    data["paper"]["title"] = title
    data["constraints"] = [c.model_dump() for c in constraints]
    data["scientist_observation"]["paper"] = paper.model_dump()
    data["scientist_observation"]["constraints"] = data["constraints"]
    extreme = NormalizedScenarioPack.model_validate(data)
    action = build_baseline_scientist_action(extreme.scientist_observation)
    assert ScientistAction.model_validate(action.model_dump()) == action
    assert len(action.controls) == MAX_LIST_ITEMS and len(action.rationale) <= MAX_TEXT_CHARS


# --------------------------------------------------------------------------- packs and templates


LAB = PACK.lab.model_dump()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("budget_total", -1.0),
        ("budget_total", math.inf),
        ("budget_total", math.nan),
        ("budget_total", MAX_CREDITS * 2),
        ("budget_remaining", -0.5),
        ("staff_count", 0),
        ("staff_count", MAX_STAFF + 1),
        ("time_limit_days", 0),
        ("time_limit_days", -3),
        ("time_limit_days", MAX_DURATION_DAYS + 1),
    ],
)
def test_lab_facts_refuse_impossible_values(field: str, value: float) -> None:
    assert_rejected(LabFacts, field, {**LAB, field: value})


def test_a_lab_cannot_have_more_left_than_it_had() -> None:
    assert_rejected(LabFacts, "budget_remaining", {**LAB, "budget_remaining": LAB["budget_total"] + 10})


def _edited(path: Any, edit: Any) -> Any:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda d: d["lab"].update(budget_total=-100.0), "budget_total"),
        (lambda d: d["lab_manager_observation"].update(staff_count=0), "staff_count"),
        (lambda d: d["lab_manager_observation"].update(budget_remaining=1e6), "budget_remaining"),
        (lambda d: d["constraints"][0].update(quantity=-1.0), "quantity"),
        (lambda d: d["constraints"][0].update(quantity=1e300), "quantity"),
        (lambda d: d["scientist_observation"]["constraints"][0].update(quantity=float("inf")), "quantity"),
        (lambda d: d.update(seed=-1), "seed"),
    ],
)
def test_a_loaded_pack_refuses_impossible_values_naming_the_field(
    tmp_path: Any, edit: Any, named: str
) -> None:
    path = _edited(save_pack(PACK, tmp_path / "pack.json"), edit)
    with pytest.raises(ValidationError, match=named.replace(".", r"\.")):
        load_pack(path)
    assert load_pack(save_pack(PACK, tmp_path / "fine.json")) == PACK


def test_a_constraint_bound_cannot_exceed_what_a_plan_can_reach() -> None:
    base = {"id": "c", "description": "d", "hard": True}
    limits = {
        "min_sample_size": MAX_SAMPLE_SIZE,
        "max_duration_days": MAX_DURATION_DAYS,
        "max_budget": MAX_CREDITS,
        "max_staff": MAX_STAFF,
        "min_controls": MAX_LIST_ITEMS,
    }
    for kind, limit in limits.items():
        assert Constraint(**base, kind=kind, quantity=limit).quantity == limit  # type: ignore[arg-type]
        assert_rejected(Constraint, "quantity", {**base, "kind": kind, "quantity": limit * 2})


def test_a_paper_case_needs_its_minimal_plan_within_its_own(tmp_path: Any) -> None:
    case = get_template("ml_benchmark").cases[0].model_dump()
    low = case["sample_size_range"][0]
    assert_rejected(PaperCase, "sample_size_range", {**case, "min_sample_size": low + 1})
    assert_rejected(
        PaperCase, "min_duration_days", {**case, "min_duration_days": case["base_duration_days"] + 1}
    )
    assert_rejected(PaperCase, "sample_size_range", {**case, "sample_size_range": (low, MAX_SAMPLE_SIZE + 1)})
    assert_rejected(PaperCase, "required_count", {**case, "required_count": len(case["elements"])})
    data = get_template("ml_benchmark").model_dump()
    data["template"] = "bounded_family"
    data["cases"][0]["min_duration_days"] = 10**6
    path = tmp_path / "family.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValidationError, match="min_duration_days"):
        register_template_file(path)
