"""The contracts: every rule refuses with an error that names its field, and JSON is lossless.

Every front (PettingZoo, Gymnasium, the runner, the LLM parser) relies on these models to turn a
bad move into one error naming the offending field, so the rules are checked one by one; the
round-trip properties are what make logs replayable byte for byte.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from replicalab.models import (
    FEASIBILITY_DIMENSIONS,
    AlternativeSuggestion,
    ConversationEntry,
    DimensionCheck,
    EpisodeLog,
    FeasibilityCheckResult,
    JudgeExponents,
    LabManagerAction,
    LabManagerActionType,
    LabManagerObservation,
    Penalties,
    Protocol,
    RewardBreakdown,
    RewardConfig,
    ScientistAction,
    ScientistActionType,
    ScientistObservation,
    StepRecord,
    SuggestionChange,
    ValidationIssue,
    ValidationResult,
)
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario
from replicalab.scenarios.types import NormalizedScenarioPack
from tests.plans import assert_rejected

PROPOSING = ("propose_protocol", "revise_protocol")
FLAG_FIELDS = tuple(f"{dim}_ok" for dim in FEASIBILITY_DIMENSIONS)
VALID_PROPOSAL: dict[str, Any] = {
    "action_type": "propose_protocol",
    "sample_size": 8,
    "controls": ["shuffled labels", "independent code review"],
    "technique": "fine-tune the baseline with three seeds",
    "duration_days": 5,
    "required_equipment": ["4-GPU training server"],
    "required_reagents": ["cloud GPU credits"],
    "rationale": "Smallest run that still tests the claim.",
}

# --------------------------------------------------------------------------- helpers


def verdict(action_type: str, *, failing: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    """A Lab Manager verdict whose `feasible` agrees with its flags (`failing` dims are False)."""
    flags = {flag: flag.removesuffix("_ok") not in failing for flag in FLAG_FIELDS}
    data: dict[str, Any] = {
        "action_type": action_type,
        "feasible": all(flags.values()),
        **flags,
        "explanation": "grounded check",
    }
    data.update(extra)
    return data


def sample_pack() -> NormalizedScenarioPack:
    return generate_scenario(11, "ml_benchmark", "hard")


def feasibility_result() -> FeasibilityCheckResult:
    checks = {dim: DimensionCheck() for dim in FEASIBILITY_DIMENSIONS}
    checks["budget"] = DimensionCheck(ok=False, reasons=["cost 900 over 860"])
    issue = ValidationIssue(severity="error", category="budget", message="over", constraint_id="c2")
    return FeasibilityCheckResult(
        **checks,
        estimated_cost=900.0,
        required_staff=3,
        substitution_options={"8-GPU training server": ["4-GPU training server"]},
        validation_result=ValidationResult(issues=[issue]),
    )


def reward_breakdown() -> RewardBreakdown:
    return RewardBreakdown(
        rigor=0.5,
        feasibility=1.0,
        fidelity=0.75,
        parsimony=1.0,
        base=3.75,
        bonuses={"efficiency": 0.5},
        penalties={"invalid_action": 1.0},
        total=3.25,
        notes=["one invalid action"],
    )


def one_of_every_model() -> list[BaseModel]:
    """A valid instance of every contract, so generic properties can sweep them all."""
    pack = sample_pack()
    protocol = Protocol.model_validate({k: v for k, v in VALID_PROPOSAL.items() if k != "action_type"})
    check = feasibility_result()
    entry = ConversationEntry(role="scientist", message="hi", round_number=1, action_type="accept")
    breakdown = reward_breakdown()
    step = StepRecord(
        index=0,
        agent="scientist",
        round_number=1,
        action={"action_type": "accept"},
        action_type="accept",
        rewards={"scientist": 0.5, "lab_manager": 0.5},
        reward_components={"scientist": {"judge": 0.5}, "lab_manager": {"judge": 0.5}},
    )
    return [
        protocol,
        ScientistAction.model_validate(VALID_PROPOSAL),
        LabManagerAction.model_validate(verdict("accept")),
        check,
        check.validation_result,
        SuggestionChange(
            field="duration_days", original="9", revised="7", reason="time limit", tradeoff="fewer seeds"
        ),
        AlternativeSuggestion(
            revised_protocol=protocol,
            improved=True,
            pre_check=check,
            post_check=check,
            remaining_failures=["budget"],
        ),
        entry,
        breakdown,
        step,
        EpisodeLog(
            episode_id=pack.scenario_id,
            seed=pack.seed,
            template=pack.template,
            difficulty=pack.difficulty,
            scenario_id=pack.scenario_id,
            max_rounds=6,
            reward_config=RewardConfig(
                name="default", judge_exponents=JudgeExponents(rigor=2.0), penalties=Penalties(stalling=0.5)
            ),
            transcript=[entry],
            steps=[step],
            final_protocol=protocol,
            reward_breakdown=breakdown,
            verdict="agreement",
            rounds_used=1,
            invalid_action_count=0,
            total_rewards={"scientist": 0.5, "lab_manager": 0.0},
        ),
        pack,
        pack.paper,
        pack.constraints[0],
        pack.resources[0],
        pack.allowed_substitutions[0],
        pack.hidden_reference_spec,
        pack.lab,
        pack.scientist_observation,
        pack.lab_manager_observation,
    ]


# --------------------------------------------------------------------------- ScientistAction rules


@pytest.mark.parametrize("kind", [*PROPOSING, "request_info", "accept"])
def test_minimal_valid_actions(kind: str) -> None:
    data: dict[str, Any] = {"action_type": kind}
    if kind in PROPOSING:
        data = {**VALID_PROPOSAL, "action_type": kind}
    elif kind == "request_info":
        data["questions"] = ["Is the GPU server free next week?"]
    action = ScientistAction.model_validate(data)
    assert action.action_type is ScientistActionType(kind)


def test_accept_needs_no_fields() -> None:
    action = ScientistAction(action_type=ScientistActionType.ACCEPT)
    assert action.sample_size == 0 and action.controls == [] and action.technique == ""


@pytest.mark.parametrize("kind", PROPOSING)
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sample_size", 0),
        ("technique", ""),
        ("technique", "   "),
        ("rationale", ""),
        ("rationale", " \n"),
        ("questions", ["Which GPU?"]),
    ],
)
def test_proposal_rules(kind: str, field: str, value: object) -> None:
    assert_rejected(ScientistAction, field, {**VALID_PROPOSAL, "action_type": kind, field: value})


@pytest.mark.parametrize("kind", ["request_info", "accept"])
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sample_size", 3),
        ("controls", ["baseline"]),
        ("technique", "grid search"),
        ("duration_days", 2),
        ("required_equipment", ["GPU"]),
        ("required_reagents", ["dataset"]),
    ],
)
def test_non_proposals_carry_no_protocol(kind: str, field: str, value: object) -> None:
    data: dict[str, Any] = {"action_type": kind, field: value}
    if kind == "request_info":
        data["questions"] = ["How many staff?"]
    assert_rejected(ScientistAction, field, data)


def test_request_info_needs_a_question_and_accept_refuses_one() -> None:
    assert_rejected(ScientistAction, "questions", {"action_type": "request_info"})
    assert_rejected(ScientistAction, "questions", {"action_type": "accept", "questions": ["Why?"]})


def test_rationale_is_allowed_on_every_move() -> None:
    ask = ScientistAction(action_type="request_info", questions=["Budget?"], rationale="need numbers")
    done = ScientistAction(action_type="accept", rationale="the plan fits")
    assert ask.rationale == "need numbers" and done.rationale == "the plan fits"


@pytest.mark.parametrize(("field", "value"), [("sample_size", -1), ("duration_days", -3)])
def test_negative_counts_refused(field: str, value: int) -> None:
    assert_rejected(ScientistAction, field, {**VALID_PROPOSAL, field: value})
    protocol = {k: v for k, v in VALID_PROPOSAL.items() if k != "action_type"}
    assert_rejected(Protocol, field, {**protocol, field: value})


def test_unknown_action_type_refused() -> None:
    assert_rejected(ScientistAction, "action_type", {"action_type": "bribe"})
    assert_rejected(LabManagerAction, "action_type", verdict("shrug"))


def test_to_protocol_keeps_the_payload() -> None:
    action = ScientistAction.model_validate(VALID_PROPOSAL)
    protocol = action.to_protocol()
    assert protocol == Protocol.model_validate(
        {k: v for k, v in VALID_PROPOSAL.items() if k != "action_type"}
    )
    assert Protocol.model_validate_json(protocol.model_dump_json()) == protocol


# --------------------------------------------------------------------------- LabManagerAction rules


@pytest.mark.parametrize("flag", FLAG_FIELDS)
def test_feasible_must_equal_the_and_of_the_flags(flag: str) -> None:
    dim = flag.removesuffix("_ok")
    lying = verdict("report_feasibility", failing=(dim,))
    lying["feasible"] = True
    assert_rejected(LabManagerAction, "feasible", lying)
    honest = LabManagerAction.model_validate(verdict("report_feasibility", failing=(dim,)))
    assert honest.feasible is False


def test_all_flags_true_but_reported_infeasible_refused() -> None:
    data = verdict("report_feasibility")
    data["feasible"] = False
    assert_rejected(LabManagerAction, "feasible", data)


def test_accept_needs_feasible_and_reject_needs_infeasible() -> None:
    assert_rejected(LabManagerAction, "feasible", verdict("accept", failing=("budget",)))
    assert_rejected(LabManagerAction, "feasible", verdict("reject"))
    assert LabManagerAction.model_validate(verdict("accept")).feasible
    assert not LabManagerAction.model_validate(verdict("reject", failing=("policy",))).feasible


def test_suggested_protocol_only_with_suggest_alternative() -> None:
    protocol = {k: v for k, v in VALID_PROPOSAL.items() if k != "action_type"}
    assert_rejected(LabManagerAction, "suggested_protocol", verdict("suggest_alternative"))
    for kind in ("report_feasibility", "accept"):
        assert_rejected(LabManagerAction, "suggested_protocol", verdict(kind, suggested_protocol=protocol))
    assert_rejected(
        LabManagerAction,
        "suggested_protocol",
        verdict("reject", failing=("staff",), suggested_protocol=protocol),
    )
    for failing in ((), ("budget",)):
        action = LabManagerAction.model_validate(
            verdict("suggest_alternative", failing=failing, suggested_protocol=protocol)
        )
        assert action.suggested_protocol is not None
        assert action.suggested_protocol.sample_size == protocol["sample_size"]


@pytest.mark.parametrize("explanation", ["", "   "])
def test_explanation_must_not_be_empty(explanation: str) -> None:
    assert_rejected(LabManagerAction, "explanation", verdict("accept", explanation=explanation))


def test_missing_flag_refused() -> None:
    data = verdict("accept")
    del data["policy_ok"]
    assert_rejected(LabManagerAction, "policy_ok", data)


# --------------------------------------------------------------------------- shared rules


@pytest.mark.parametrize("instance", one_of_every_model(), ids=lambda m: type(m).__name__)
def test_extra_keys_forbidden(instance: BaseModel) -> None:
    data = instance.model_dump()
    data["unexpected_key"] = 1
    assert_rejected(type(instance), "unexpected_key", data)


@pytest.mark.parametrize("instance", one_of_every_model(), ids=lambda m: type(m).__name__)
def test_every_model_round_trips_and_is_frozen(instance: BaseModel) -> None:
    cls = type(instance)
    assert cls.model_validate_json(instance.model_dump_json()) == instance
    assert cls.model_validate(instance.model_dump()) == instance
    name = next(iter(cls.model_fields))
    with pytest.raises(ValidationError):
        setattr(instance, name, getattr(instance, name))


@pytest.mark.parametrize("field", ["controls", "required_equipment", "required_reagents", "questions"])
@pytest.mark.parametrize("blank", ["", "  ", "\t\n"])
def test_empty_list_items_refused(field: str, blank: str) -> None:
    data: dict[str, Any] = {**VALID_PROPOSAL, field: ["fine", blank]}
    if field == "questions":
        data = {"action_type": "request_info", "questions": ["fine", blank]}
    assert_rejected(ScientistAction, field, data)
    if field != "questions":
        protocol = {k: v for k, v in data.items() if k != "action_type"}
        assert_rejected(Protocol, field, protocol)


def test_strings_and_list_items_are_stripped() -> None:
    action = ScientistAction.model_validate(
        {
            **VALID_PROPOSAL,
            "technique": "  grid search \n",
            "rationale": "\tbecause ",
            "controls": ["  shuffled labels  ", "\nreview\t"],
            "required_equipment": [" GPU "],
        }
    )
    assert action.technique == "grid search"
    assert action.rationale == "because"
    assert action.controls == ["shuffled labels", "review"]
    assert action.required_equipment == ["GPU"]
    ask = ScientistAction(action_type="request_info", questions=["  Budget?  "])
    assert ask.questions == ["Budget?"]
    lm = LabManagerAction.model_validate(verdict("accept", explanation="  all checks pass "))
    assert lm.explanation == "all checks pass"
    entry = ConversationEntry(role="system", message="  start  ", round_number=0)
    assert entry.message == "start"


def test_conversation_entry_rules() -> None:
    assert_rejected(ConversationEntry, "role", {"role": "judge", "message": "x", "round_number": 0})
    assert_rejected(
        ConversationEntry, "round_number", {"role": "scientist", "message": "x", "round_number": -1}
    )


def test_validation_result_views() -> None:
    error = ValidationIssue(severity="error", category="budget", message="over", constraint_id="c2")
    warning = ValidationIssue(severity="warning", category="reference", message="misses x")
    assert ValidationResult(issues=[warning]).ok
    mixed = ValidationResult(issues=[warning, error])
    assert not mixed.ok and mixed.errors == [error] and mixed.warnings == [warning]
    assert_rejected(ValidationIssue, "severity", {"severity": "fatal", "category": "x", "message": "m"})


def test_feasibility_result_views() -> None:
    check = feasibility_result()
    assert not check.feasible and not check.budget_ok and check.protocol_ok
    assert check.failed_dimensions == ["budget"]
    assert "budget" in check.summary and "cost 900 over 860" in check.summary


def test_derived_views_are_kept_and_a_copy_derives_them_afresh() -> None:
    check = feasibility_result()
    assert check.flags is check.flags and not check.feasible  # derived once, then kept
    passing = check.model_copy(update={"budget": DimensionCheck()})
    assert passing.feasible and passing.flags == (True,) * len(FEASIBILITY_DIMENSIONS)
    assert check.model_dump() == FeasibilityCheckResult.model_validate(check.model_dump()).model_dump()
    assert "flags" not in check.model_dump() and "feasible" not in check.model_dump_json()


def test_reward_scores_bounded() -> None:
    good = reward_breakdown().model_dump()
    for field in ("rigor", "feasibility", "fidelity", "parsimony"):
        assert_rejected(RewardBreakdown, field, {**good, field: 1.5})
        assert_rejected(RewardBreakdown, field, {**good, field: -0.1})


# --------------------------------------------------------------------------- JSON round trips (hypothesis)

free_text = st.text(max_size=40)
item_text = st.text(min_size=1, max_size=25).filter(lambda s: s.strip() != "")
items = st.lists(item_text, max_size=4)
counts = st.integers(min_value=0, max_value=10_000)


@st.composite
def scientist_actions(draw: st.DrawFn) -> ScientistAction:
    kind = draw(st.sampled_from(list(ScientistActionType)))
    if kind.value in PROPOSING:
        return ScientistAction(
            action_type=kind,
            sample_size=draw(st.integers(min_value=1, max_value=10_000)),
            controls=draw(items),
            technique=draw(item_text),
            elements=draw(items),
            duration_days=draw(st.integers(min_value=1, max_value=10_000)),
            required_equipment=draw(items),
            required_reagents=draw(items),
            rationale=draw(item_text),
        )
    questions = draw(st.lists(item_text, min_size=1, max_size=3)) if kind.value == "request_info" else []
    return ScientistAction(action_type=kind, questions=questions, rationale=draw(free_text))


protocols = st.builds(
    Protocol,
    sample_size=counts,
    controls=items,
    technique=free_text,
    elements=items,
    duration_days=counts,
    required_equipment=items,
    required_reagents=items,
    rationale=free_text,
)


@st.composite
def lab_manager_actions(draw: st.DrawFn) -> LabManagerAction:
    flags = {flag: draw(st.booleans()) for flag in FLAG_FIELDS}
    feasible = all(flags.values())
    kinds = ["report_feasibility", "suggest_alternative", "accept" if feasible else "reject"]
    kind = draw(st.sampled_from(kinds))
    suggested = draw(protocols) if kind == "suggest_alternative" else None
    return LabManagerAction(
        action_type=LabManagerActionType(kind),
        feasible=feasible,
        suggested_protocol=suggested,
        explanation=draw(item_text),
        **flags,
    )


entries = st.builds(
    ConversationEntry,
    role=st.sampled_from(["scientist", "lab_manager", "system"]),
    message=free_text,
    round_number=counts,
    action_type=st.none() | free_text,
)


@settings(max_examples=200, deadline=None)
@given(scientist_actions())
def test_scientist_action_round_trip(action: ScientistAction) -> None:
    assert ScientistAction.model_validate_json(action.model_dump_json()) == action


@settings(max_examples=200, deadline=None)
@given(lab_manager_actions())
def test_lab_manager_action_round_trip(action: LabManagerAction) -> None:
    assert LabManagerAction.model_validate_json(action.model_dump_json()) == action


@settings(max_examples=200, deadline=None)
@given(protocols)
def test_protocol_round_trip(protocol: Protocol) -> None:
    assert Protocol.model_validate_json(protocol.model_dump_json()) == protocol


@settings(max_examples=200, deadline=None)
@given(entries)
def test_conversation_entry_round_trip(entry: ConversationEntry) -> None:
    assert ConversationEntry.model_validate_json(entry.model_dump_json()) == entry


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**32),
    template=st.sampled_from(BUILTIN_TEMPLATES),
    difficulty=st.sampled_from(DIFFICULTIES),
    history=st.lists(entries, max_size=3),
    protocol=st.none() | protocols,
)
def test_generated_pack_and_observations_round_trip(
    seed: int,
    template: str,
    difficulty: str,
    history: list[ConversationEntry],
    protocol: Protocol | None,
) -> None:
    pack = generate_scenario(seed, template, difficulty)
    # The generator skips validation for speed; full validation must accept what it built.
    assert NormalizedScenarioPack.model_validate(pack.model_dump()) == pack
    assert NormalizedScenarioPack.model_validate_json(pack.model_dump_json()) == pack
    scientist = pack.scientist_observation.model_copy(
        update={"conversation_history": history, "current_protocol": protocol}
    )
    lab_manager = pack.lab_manager_observation.model_copy(
        update={"conversation_history": history, "current_protocol": protocol}
    )
    assert ScientistObservation.model_validate_json(scientist.model_dump_json()) == scientist
    assert LabManagerObservation.model_validate_json(lab_manager.model_dump_json()) == lab_manager
