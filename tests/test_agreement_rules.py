"""The rules of an ending: agreement only on a plan that passes every check, no penalty for the
reference Lab Manager's own moves, and a transcript that replays from the logged actions."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.baselines.evaluation.runner import play_episode
from replicalab.baselines.policies.seats import GroundedLabManager, RandomScientist
from replicalab.envs import codec
from replicalab.episode import Episode
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import EpisodeLog, LabManagerAction, LabManagerActionType, Protocol
from replicalab.moves import LAB_MANAGER, SCIENTIST, ActionError, coerce_action
from replicalab.scenarios import (
    BUILTIN_TEMPLATES,
    DIFFICULTIES,
    NormalizedScenarioPack,
    ScenarioKey,
    generate_scenario,
)
from tests.plans import ACCEPT, PACK, bad_plan, good_plan, new, propose, stance

SHARED_OUTCOME = {"judge", "no_agreement"}  # what both agents get at the end of a cooperative game


@pytest.fixture(scope="module")
def random_vs_grounded() -> list[tuple[ScenarioKey, EpisodeLog]]:
    """3,600 episodes of a random Scientist against the reference Lab Manager (default preset)."""
    scientist, lab_manager = RandomScientist(), GroundedLabManager()
    cells = [
        ScenarioKey(t, "train", d, seed)
        for seed in range(400)
        for t in BUILTIN_TEMPLATES
        for d in DIFFICULTIES
    ]
    return [(cell, play_episode(cell, scientist, lab_manager)) for cell in cells]


# --------------------------------------------------------------------------- consent to a failing plan


def test_grounded_lab_manager_never_agrees_on_a_plan_that_fails_its_own_check(
    random_vs_grounded: list[tuple[ScenarioKey, EpisodeLog]],
) -> None:
    verdicts: Counter[str | None] = Counter()
    for cell, log in random_vs_grounded:
        verdicts[log.verdict] += 1
        if log.verdict == "agreement":
            assert log.final_protocol is not None
            pack = generate_scenario(cell.seed, cell.template, cell.difficulty)
            assert check_feasibility(log.final_protocol, pack).feasible, log.episode_id
    assert verdicts["agreement"] > 0
    assert verdicts["accept_infeasible"] > 100  # the random Scientist accepts failing counter-proposals


def test_accepting_a_failing_suggestion_ends_without_agreement() -> None:
    ep = new()
    ep.step(propose(bad_plan(PACK)))
    reply = grounded_lab_response(ep)
    suggested = reply.suggested_protocol
    assert reply.action_type is LabManagerActionType.SUGGEST_ALTERNATIVE and suggested is not None
    assert not check_feasibility(suggested, PACK).feasible  # a counter-proposal that still fails
    assert ep.step(reply).components[LAB_MANAGER] == {}  # the reference answer is never charged
    assert ep.consented and not ep.accept_would_agree
    outcome = ep.step(ACCEPT)
    assert ep.terminated and ep.verdict == "accept_infeasible"
    assert ep.final_protocol == suggested
    assert ep.breakdown is not None and ep.breakdown.bonuses == {}  # judged for the log, never paid
    penalty = {"no_agreement": -ep.reward_config.penalties.no_agreement}
    assert outcome.components == {SCIENTIST: penalty, LAB_MANAGER: penalty}  # no accept_without_consent
    assert ep.transcript[-1].message == "Accepts the suggested protocol."
    assert ep.to_log().verdict == "accept_infeasible"


def test_a_failing_suggestion_can_be_adopted_with_revise_protocol() -> None:
    ep = new()
    ep.step(propose(bad_plan(PACK)))
    suggested = grounded_lab_response(ep).suggested_protocol
    assert suggested is not None
    ep.step(grounded_lab_response(ep))
    outcome = ep.step(propose(suggested, "revise_protocol"))
    assert outcome.error is None and not ep.done and ep.protocol == suggested
    assert ep.check is not None and not ep.check.feasible
    ep.step(grounded_lab_response(ep))
    assert not ep.consented  # the Lab Manager objects to the adopted plan: negotiate on
    ep.step(propose(good_plan(PACK), "revise_protocol"))
    ep.step(grounded_lab_response(ep))
    ep.step(ACCEPT)
    assert ep.verdict == "agreement" and ep.final_protocol == good_plan(PACK)


def test_a_misreported_accept_of_a_failing_plan_is_no_agreement_and_is_penalised() -> None:
    ep = new()
    ep.step(propose(bad_plan(PACK)))
    assert ep.check is not None
    failing = len(ep.check.failed_dimensions)
    outcome = ep.step(stance(ep, LabManagerActionType.ACCEPT, lie=True))
    assert outcome.components[LAB_MANAGER] == {"misreport": -0.25 * failing}
    ep.step(ACCEPT)
    assert ep.verdict == "accept_infeasible" and ep.final_protocol == bad_plan(PACK)


def test_a_suggestion_worse_than_the_labs_own_offer_is_a_misreport() -> None:
    ep = new()
    ep.step(propose(bad_plan(PACK)))
    grounded = ep.suggestion
    assert grounded is not None and ep.check is not None
    # the offer fails only `protocol`: a no-op suggestion also fails what the offer fixes
    beyond = set(ep.check.failed_dimensions) - set(grounded.remaining_failures)
    assert beyond
    table = ep.protocol
    assert table is not None
    outcome = ep.step(stance(ep, LabManagerActionType.SUGGEST_ALTERNATIVE, suggested=table))
    assert outcome.components[LAB_MANAGER] == {"misreport": -0.25 * len(beyond)}
    ep.step(ACCEPT)
    assert ep.verdict == "accept_infeasible"

    ep = new()
    ep.step(propose(bad_plan(PACK)))
    offer = ep.suggestion
    assert offer is not None
    outcome = ep.step(stance(ep, LabManagerActionType.SUGGEST_ALTERNATIVE, suggested=offer.revised_protocol))
    assert outcome.components[LAB_MANAGER] == {}  # the lab's own counter-proposal, honestly flagged


def test_structured_lab_manager_cannot_suggest_the_protocol_on_the_table() -> None:
    plan = good_plan(PACK).model_copy(update={"sample_size": 1})  # only the plan itself can fix this
    ep = new()
    ep.step(propose(plan))
    suggestion = ep.suggestion
    assert suggestion is not None and suggestion.revised_protocol == ep.protocol
    mask = codec.lab_manager_mask(ep)
    assert mask.tolist() == [1, 0, 1, 0]
    refused = codec.decode_lab_manager(1, ep)
    assert isinstance(refused, ActionError) and refused.code == "masked_action"


# --------------------------------------------------------------------------- the reference is never charged


def test_grounded_lab_manager_is_never_penalised(
    random_vs_grounded: list[tuple[ScenarioKey, EpisodeLog]],
) -> None:
    charged: Counter[str] = Counter()
    for _, log in random_vs_grounded:
        for step in log.steps:
            charged.update(set(step.reward_components[LAB_MANAGER]) - SHARED_OUTCOME)
    assert charged == Counter()


def test_a_lab_manager_that_ignores_new_proposals_stalls() -> None:
    ep = new()
    ep.step(propose(bad_plan(PACK)))
    canned = grounded_lab_response(ep)
    ep.step(canned)
    ep.step(propose(bad_plan(PACK), "revise_protocol"))  # the same plan: the same answer is right
    assert "stalling" not in ep.step(canned).components[LAB_MANAGER]
    ep.step(propose(good_plan(PACK), "revise_protocol"))  # a new plan, the old answer
    assert ep.step(canned).components[LAB_MANAGER]["stalling"] == -ep.reward_config.penalties.stalling


def test_the_same_acceptance_of_a_different_plan_is_not_stalling() -> None:
    ep = new()
    plan = good_plan(PACK)
    ep.step(propose(plan))
    first = grounded_lab_response(ep)
    ep.step(first)
    reworded = plan.model_copy(update={"rationale": plan.rationale + " Reworded."})  # same cost, staff
    ep.step(propose(reworded, "revise_protocol"))
    assert grounded_lab_response(ep) == first
    assert ep.step(grounded_lab_response(ep)).components[LAB_MANAGER] == {}


# --------------------------------------------------------------------------- replay


def _fuzzed_lab_manager(episode: Episode, rng: np.random.Generator) -> LabManagerAction:
    """The grounded answer, or a stance with lying flags that may suggest the table's own protocol."""
    if episode.protocol is None or rng.random() < 0.4:
        return grounded_lab_response(episode)
    kind = [LabManagerActionType.ACCEPT, LabManagerActionType.SUGGEST_ALTERNATIVE][int(rng.integers(2))]
    suggested = episode.protocol if kind is LabManagerActionType.SUGGEST_ALTERNATIVE else None
    return stance(episode, kind, lie=True, suggested=suggested)


def _replayed(log: EpisodeLog, pack: NormalizedScenarioPack) -> EpisodeLog:
    replay = Episode(pack, max_rounds=log.max_rounds, reward_config=log.reward_config)
    for step in log.steps:
        if isinstance(step.action, dict):
            replay.step(coerce_action(step.agent, step.action))
        else:
            assert step.error_code is not None and step.error_message is not None
            replay.step(
                ActionError(
                    code=step.error_code,
                    message=step.error_message,
                    raw=step.action,
                    raw_chars=step.raw_chars,
                    raw_sha256=step.raw_sha256,
                )
            )
    return replay.to_log(log.episode_id)


def test_replaying_logged_actions_reproduces_the_log_byte_for_byte() -> None:
    adopted_table = 0
    for seed in range(150):
        rng = np.random.default_rng(seed)
        pack = generate_scenario(seed, BUILTIN_TEMPLATES[seed % 3], DIFFICULTIES[seed // 3 % 3])
        episode = Episode(pack)
        scientist = RandomScientist(seed)
        while not episode.done:
            if episode.agent_selection == SCIENTIST:
                episode.step(coerce_action(SCIENTIST, scientist.act(episode)))
            else:
                episode.step(_fuzzed_lab_manager(episode, rng))
        last = episode.last_lab_action
        ended_on_consent = episode.verdict in ("agreement", "accept_infeasible")
        if ended_on_consent and last is not None and last.suggested_protocol == episode.protocol:
            adopted_table += 1
        log = episode.to_log()
        assert _replayed(log, pack).model_dump_json() == log.model_dump_json(), seed
    assert adopted_table >= 5  # suggestions equal to the protocol on the table, adopted


def test_consent_is_read_from_values_not_objects() -> None:
    """Two equal suggestions, one the table's own object, one a copy: the same ending."""
    endings = []
    for copy in (False, True):
        ep = new()
        ep.step(propose(good_plan(PACK)))
        table = ep.protocol
        assert table is not None
        suggested: Protocol = Protocol.model_validate(table.model_dump()) if copy else table
        ep.step(stance(ep, LabManagerActionType.SUGGEST_ALTERNATIVE, suggested=suggested))
        ep.step(ACCEPT)
        endings.append((ep.verdict, ep.transcript[-1].message, ep.to_log().model_dump_json()))
    assert endings[0] == endings[1]
    assert endings[0][0] == "agreement"
