"""The episode state machine: consent, the round limit, the step cap, refused moves, the log."""

from __future__ import annotations

import pytest

from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.episode import Episode, EpisodeOverError
from replicalab.judge import build_reward_breakdown
from replicalab.lab.answers import answer_questions
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import (
    FEASIBILITY_DIMENSIONS,
    EpisodeLog,
    LabManagerAction,
    LabManagerActionType,
    ScientistAction,
    ScientistActionType,
)
from replicalab.moves import LAB_MANAGER, SCIENTIST, ActionError, coerce_action
from replicalab.rewards import get_preset, judge_reward
from replicalab.scenarios import generate_scenario
from tests.plans import ACCEPT, ASK_BUDGET, COMBOS, PACK, bad_plan, good_plan, new, propose, stance

# --------------------------------------------------------------------------- agreement


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_accept_with_consent_is_an_agreement_paid_to_both(template: str, difficulty: str) -> None:
    pack = generate_scenario(3, template, difficulty)
    ep = new(pack)
    ep.step(propose(good_plan(pack)))
    reply = grounded_lab_response(ep)
    assert reply.action_type is LabManagerActionType.ACCEPT
    ep.step(reply)
    outcome = ep.step(ACCEPT)
    assert ep.terminated and not ep.truncated and ep.verdict == "agreement"
    assert ep.final_protocol == good_plan(pack)
    assert ep.breakdown is not None
    paid = judge_reward(ep.reward_config, ep.breakdown, saved_rounds=3)  # agreed in the free rounds
    assert paid > 0 and paid == pytest.approx(ep.breakdown.total, abs=1e-12)  # priced as the judge does
    assert outcome.components[SCIENTIST]["judge"] == outcome.components[LAB_MANAGER]["judge"] == paid
    assert outcome.rewards[SCIENTIST] == outcome.rewards[LAB_MANAGER] == paid
    log = ep.to_log()
    assert log.verdict == "agreement" and log.reward_breakdown == ep.breakdown
    assert log.rounds_used == 2


def test_passing_feasibility_report_is_consent_and_failing_one_is_not() -> None:
    ep = new()
    ep.step(propose(good_plan(PACK)))
    ep.step(stance(ep, LabManagerActionType.REPORT_FEASIBILITY))
    ep.step(ACCEPT)
    assert ep.verdict == "agreement"

    ep = new()
    ep.step(propose(bad_plan(PACK)))
    assert ep.check is not None and not ep.check.feasible
    ep.step(stance(ep, LabManagerActionType.REPORT_FEASIBILITY))
    ep.step(ACCEPT)
    assert ep.verdict == "accept_without_consent"


def test_accept_after_reject_ends_without_consent() -> None:
    ep = new()
    ep.step(propose(bad_plan(PACK)))
    ep.step(stance(ep, LabManagerActionType.REJECT))
    outcome = ep.step(ACCEPT)
    assert ep.terminated and ep.verdict == "accept_without_consent"
    assert ep.final_protocol == bad_plan(PACK)
    p = ep.reward_config.penalties
    assert outcome.components[SCIENTIST] == {
        "no_agreement": -p.no_agreement,
        "accept_without_consent": -p.accept_without_consent,
    }
    assert outcome.components[LAB_MANAGER] == {"no_agreement": -p.no_agreement}


def test_accepting_the_grounded_suggestion_adopts_it() -> None:
    good = good_plan(PACK)
    booked = next(r.name for r in PACK.resources if r.essential and not r.available)
    swapped = PACK.substitutes[booked.lower()][0]
    field = (
        "required_equipment"
        if booked in PACK.lab_manager_observation.equipment_booked
        else "required_reagents"
    )
    # the unavailable original instead of the lab's substitute: the suggestion swaps it back
    long_plan = good.model_copy(update={field: [booked if n == swapped else n for n in getattr(good, field)]})
    ep = new()
    ep.step(propose(long_plan))
    reply = grounded_lab_response(ep)
    assert reply.action_type is LabManagerActionType.SUGGEST_ALTERNATIVE
    suggested = reply.suggested_protocol
    assert suggested is not None and suggested != ep.protocol
    ep.step(reply)
    ep.step(ACCEPT)
    assert ep.verdict == "agreement"
    assert ep.final_protocol == suggested
    assert ep.protocol == long_plan  # the table keeps the Scientist's own last proposal
    expected = build_reward_breakdown(suggested, PACK, check_feasibility(suggested, PACK), rounds_used=2)
    assert ep.breakdown == expected
    assert ep.to_log().final_protocol == suggested
    assert ep.transcript[-1].message == "Accepts the suggested protocol."


def test_accepting_a_learned_suggestion_scores_that_protocol() -> None:
    ep = new()
    ep.step(propose(bad_plan(PACK)))
    own = good_plan(PACK).model_copy(update={"sample_size": good_plan(PACK).sample_size + 1})
    ep.step(stance(ep, LabManagerActionType.SUGGEST_ALTERNATIVE, suggested=own))
    ep.step(ACCEPT)
    assert ep.verdict == "agreement" and ep.final_protocol == own
    assert ep.breakdown == build_reward_breakdown(own, PACK, rounds_used=2)


# --------------------------------------------------------------------------- legality


def test_revise_and_accept_are_illegal_without_a_protocol() -> None:
    ep = new()
    assert ep.scientist_mask() == (True, False, True, False)
    assert ep.lab_manager_mask() == (False,) * 4
    outcome = ep.step(ACCEPT)
    assert outcome.error is not None and outcome.error.code == "illegal_action"
    assert ep.agent_selection == LAB_MANAGER and not ep.done
    assert ep.lab_manager_mask() == (True, False, False, False)
    for kind, ok, suggested in (
        (LabManagerActionType.REJECT, False, None),
        (LabManagerActionType.ACCEPT, True, None),
        (LabManagerActionType.SUGGEST_ALTERNATIVE, True, good_plan(PACK)),
    ):
        probe = new()
        probe.step(ASK_BUDGET)
        move = LabManagerAction(
            action_type=kind,
            feasible=ok,
            suggested_protocol=suggested,
            explanation="no protocol yet",
            **{f"{dim}_ok": ok for dim in FEASIBILITY_DIMENSIONS},
        )
        refused = probe.step(move)
        assert refused.error is not None and refused.error.code == "illegal_action"
    ep.step(grounded_lab_response(ep))
    outcome = ep.step(propose(good_plan(PACK), "revise_protocol"))
    assert outcome.error is not None and outcome.error.code == "illegal_action"
    assert ep.protocol is None and ep.invalid_action_count == 2
    assert [e.action_type for e in ep.transcript if e.role == "system"] == ["illegal_action"] * 2


def test_a_refused_move_costs_the_turn_and_is_logged() -> None:
    ep = new()
    error = coerce_action(SCIENTIST, "I think we should run it twice.")
    assert isinstance(error, ActionError) and error.code == "no_json"
    outcome = ep.step(error)
    assert outcome.error == error
    assert ep.agent_selection == LAB_MANAGER and ep.round_number == 1
    assert outcome.components[SCIENTIST] == {"invalid_action": -1.0}
    assert ep.invalid_action_count == 1
    assert ep.transcript[-1].role == "system" and ep.transcript[-1].action_type == "no_json"
    step = ep.to_log().steps[0]
    assert step.error_code == "no_json" and step.action == "I think we should run it twice."
    assert step.action_type is None and step.rewards == {SCIENTIST: -1.0, LAB_MANAGER: 0.0}


def test_a_refused_lab_manager_move_ends_the_round_and_withdraws_consent() -> None:
    ep = new()
    ep.step(propose(good_plan(PACK)))
    ep.step(grounded_lab_response(ep))  # accept
    ep.step(ASK_BUDGET)
    outcome = ep.step(coerce_action(LAB_MANAGER, {"action_type": "accept"}))
    assert outcome.error is not None and outcome.error.code == "invalid_action"
    assert ep.round_number == 3 and ep.agent_selection == SCIENTIST
    assert ep.last_lab_action is None
    ep.step(ACCEPT)
    assert ep.verdict == "accept_without_consent"


def test_wrong_objects_are_refused_not_raised() -> None:
    ep = new()
    other_agents_moves = (stance(ep, LabManagerActionType.REPORT_FEASIBILITY), ASK_BUDGET)
    for junk in (None, 3, 2.5, [1, 2], *other_agents_moves):
        agent = ep.agent_selection
        error = coerce_action(agent, junk)
        assert isinstance(error, (ActionError, ScientistAction, LabManagerAction))
        outcome = ep.step(error)
        assert outcome.error is not None and outcome.error.code == "wrong_action_type"
        assert ep.agent_selection != agent
    raw = ep.step(object())  # type: ignore[arg-type]  # not even coerced
    assert raw.error is not None and raw.error.code == "wrong_action_type"
    assert ep.invalid_action_count == 7 and ep.round_number == 4


def test_coerce_accepts_models_dicts_and_json_for_both_agents() -> None:
    ask = {"action_type": "request_info", "questions": ["How many days do we have?"]}
    assert coerce_action(SCIENTIST, ask) == ScientistAction.model_validate(ask)
    assert coerce_action(SCIENTIST, ASK_BUDGET) is ASK_BUDGET
    assert coerce_action(SCIENTIST, '{"action_type": "accept"}') == ACCEPT
    report = stance(new(), LabManagerActionType.REPORT_FEASIBILITY)
    assert coerce_action(LAB_MANAGER, report.model_dump()) == report
    assert coerce_action(LAB_MANAGER, report.model_dump_json()) == report
    assert coerce_action(LAB_MANAGER, report) is report
    fenced = f"Here is my verdict:\n```json\n{report.model_dump_json()}\n```"
    assert coerce_action(LAB_MANAGER, fenced) == report  # the same parser reads both agents
    for agent in (SCIENTIST, LAB_MANAGER):
        for text, code in (
            ("no json", "no_json"),
            ('{"action_type":', "invalid_json"),
            ("{not json", "invalid_json"),
            ('{"action_type": "dance"}', "invalid_action"),
        ):
            error = coerce_action(agent, text)
            assert isinstance(error, ActionError) and error.code == code and error.raw == text


@pytest.mark.parametrize("agent", [SCIENTIST, LAB_MANAGER])
@pytest.mark.parametrize(
    "junk", ["\ud800", '{"action_type": "accept", "\udcff": 1}', {"\ud800": 1, "action_type": "accept"}]
)
def test_text_json_cannot_carry_is_refused_and_logged(agent: str, junk: object) -> None:
    error = coerce_action(agent, junk)
    assert isinstance(error, ActionError)
    ep = new()
    if agent == LAB_MANAGER:
        ep.step(ASK_BUDGET)
    assert ep.step(error).error == error
    text = ep.to_log().model_dump_json()
    assert EpisodeLog.model_validate_json(text).steps[-1].error_code == error.code


# --------------------------------------------------------------------------- endings


def test_round_limit_terminates_without_agreement() -> None:
    ep = new(max_rounds=2)
    ep.step(propose(bad_plan(PACK)))
    ep.step(stance(ep, LabManagerActionType.REJECT))
    ep.step(ASK_BUDGET)
    assert not ep.done
    outcome = ep.step(stance(ep, LabManagerActionType.REJECT))
    assert ep.terminated and not ep.truncated and ep.verdict == "round_limit"
    assert ep.final_protocol == bad_plan(PACK) and ep.breakdown is None
    penalty = -ep.reward_config.penalties.no_agreement
    assert outcome.components[SCIENTIST]["no_agreement"] == penalty
    assert outcome.components[LAB_MANAGER]["no_agreement"] == penalty
    assert ep.to_log().rounds_used == 2


def test_step_cap_truncates() -> None:
    ep = new(step_cap=3)
    ep.step(ASK_BUDGET)
    ep.step(grounded_lab_response(ep))
    outcome = ep.step(ASK_BUDGET)
    assert ep.truncated and not ep.terminated and ep.verdict == "truncated"
    assert outcome.components[SCIENTIST]["no_agreement"] == -2.0
    assert len(ep.to_log().steps) == 3 and ep.to_log().verdict == "truncated"


def test_finished_episode_refuses_steps_and_masks_everything() -> None:
    ep = new()
    ep.step(propose(good_plan(PACK)))
    ep.step(grounded_lab_response(ep))
    ep.step(ACCEPT)
    assert ep.scientist_mask() == ep.lab_manager_mask() == (False,) * 4
    before = ep.to_log().model_dump_json()
    for move in (ACCEPT, grounded_lab_response(ep)):
        with pytest.raises(EpisodeOverError):
            ep.step(move)
    assert ep.to_log().model_dump_json() == before


# --------------------------------------------------------------------------- lab manager


def test_misreported_flags_are_penalised_per_flag() -> None:
    ep = new()
    ep.step(propose(bad_plan(PACK)))
    assert ep.check is not None
    failing = len(ep.check.failed_dimensions)
    assert failing >= 2
    outcome = ep.step(stance(ep, LabManagerActionType.ACCEPT, lie=True))
    assert outcome.error is None
    assert outcome.components[LAB_MANAGER]["misreport"] == pytest.approx(-0.25 * failing)

    honest = new()
    honest.step(propose(bad_plan(PACK)))
    assert "misreport" not in honest.step(grounded_lab_response(honest)).components[LAB_MANAGER]

    sparse = new(reward_config=get_preset("sparse"))
    sparse.step(propose(bad_plan(PACK)))
    assert sparse.step(stance(sparse, LabManagerActionType.ACCEPT, lie=True)).rewards == {
        SCIENTIST: 0.0,
        LAB_MANAGER: 0.0,
    }


def test_request_info_is_answered_from_the_lab_facts() -> None:
    ep = new()
    questions = ["What budget is available?", "Which items are unavailable?"]
    ep.step(ScientistAction(action_type=ScientistActionType.REQUEST_INFO, questions=questions))
    ep.step(grounded_lab_response(ep))
    answer = answer_questions(questions, PACK, None)
    reply = ep.transcript[-1]
    assert reply.role == "lab_manager" and reply.message.endswith(" Answer: " + answer)
    assert f"{PACK.lab.budget_remaining:g}" in answer
    ep.step(ASK_BUDGET)
    ep.step(coerce_action(LAB_MANAGER, "garbage"))  # a refused reply answers nothing
    ep.step(propose(good_plan(PACK)))
    ep.step(grounded_lab_response(ep))
    assert "Answer:" not in ep.transcript[-1].message


def test_constructor_refuses_bad_settings() -> None:
    with pytest.raises(TypeError):
        Episode(PACK.model_dump())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        new(max_rounds=0)
    with pytest.raises(TypeError):
        new(max_rounds=True)
    with pytest.raises(ValueError):
        new(step_cap=0)
    with pytest.raises(TypeError):
        new(reward_config="default")
