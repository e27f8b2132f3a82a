"""The baseline Scientist: a grounded opening proposal, a revision on a blocker, an accept otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.baseline_scientist import _feedback_indicates_blocker, _infer_domain
from replicalab.models import (
    Constraint,
    ConversationEntry,
    Paper,
    ScientistAction,
    ScientistActionType,
)
from replicalab.scenarios import DIFFICULTIES, generate_scenario
from replicalab.text import mentions
from tests.plans import TEMPLATES
from tests.scientist_briefs import a_protocol, lab_entry, make_observation

PACK_CASES = [(seed, t, d) for t in TEMPLATES for d in DIFFICULTIES for seed in range(12)]
EXPECTED_DOMAIN = {
    "math_reasoning": "mathematics",
    "ml_benchmark": "machine_learning",
    "finance_trading": "finance_trading",
}


def test_baseline_proposes_a_grounded_protocol() -> None:
    action = build_baseline_scientist_action(make_observation())
    assert action.action_type is ScientistActionType.PROPOSE_PROTOCOL
    assert action.required_equipment == ["cloud GPU"]  # booked GPU cluster swapped
    assert action.required_reagents == ["public dataset", "licence key"]  # no substitute known
    assert action.sample_size == 12  # max(min 12, default 10), under max 40
    assert action.duration_days == 10  # the max_duration_days bound
    assert len(action.controls) == 3
    assert action.controls[-1] == "independent code review"
    assert "Sparse Attention Matches Dense Baselines" in action.rationale
    assert "cloud GPU for GPU cluster" in action.rationale
    assert not any(
        mentions("test set tuning", text) for text in [action.technique, action.rationale, *action.controls]
    )
    assert ScientistAction.model_validate(action.model_dump()) == action


def test_baseline_sample_and_duration_defaults_and_caps() -> None:
    obs = make_observation(
        constraints=[
            Constraint(id="c1", kind="max_sample_size", description="cap", hard=True, quantity=6),
            Constraint(id="c2", kind="min_controls", description="controls", hard=True, quantity=4),
        ]
    )
    action = build_baseline_scientist_action(obs)
    assert action.sample_size == 6
    assert action.duration_days == 7
    assert len(action.controls) == 4
    bare = build_baseline_scientist_action(make_observation(constraints=[]))
    assert (bare.sample_size, bare.duration_days, len(bare.controls)) == (10, 7, 2)


def test_baseline_drops_controls_that_name_a_forbidden_practice() -> None:
    obs = make_observation(
        constraints=[
            Constraint(
                id="c1",
                kind="forbidden_practice",
                description="no seeds",
                hard=True,
                term="fixed random seeds",
            ),
        ]
    )
    action = build_baseline_scientist_action(obs)
    assert action.controls == ["published baseline comparison", "held-out test split evaluation"]
    assert not any(mentions("fixed random seeds", c) for c in action.controls)


def test_domain_inference_is_whole_word() -> None:
    paper = Paper(
        title="Results under constraints",
        hypothesis="The retraining-free claim holds.",
        method="Check the claim under the stated constraints.",
        key_finding="A tight estimate.",
    )

    def domain(p: Paper) -> str:
        return _infer_domain(make_observation(paper=p, experiment_goal="Check the constraints."))

    assert domain(paper) == "mathematics"
    assert domain(paper.model_copy(update={"method": "We train a model."})) == "machine_learning"
    backtest = paper.model_copy(update={"method": "An offline backtest of the signal."})
    assert domain(backtest) == "finance_trading"
    on_gpus = paper.model_copy(
        update={"method": "Sieve the integers, iterate the rest on GPUs and find a counterexample."}
    )
    assert domain(on_gpus) == "mathematics"  # more proof hints than ML hints
    assert _infer_domain(make_observation()) == "machine_learning"


@pytest.mark.parametrize(
    ("action_type", "message", "expected"),
    [
        ("reject", "The GPU cluster is booked this week.", True),
        ("suggest_alternative", "Duration exceeds the time limit.", True),
        ("reject", "Estimated cost is over budget.", True),
        ("reject", "The licence key is out of stock.", True),
        ("reject", "Not feasible as proposed: needs 3 people but at most 2 are free.", True),
        ("accept", "Budget is tight but it fits.", False),
        ("report_feasibility", "The GPU cluster is booked.", False),
        ("reject", "The bookedness of the costume is fine.", False),  # whole words only
        ("suggest_alternative", "Consider more controls.", False),
        (None, "Everything is unavailable.", True),
    ],
)
def test_blocker_detection(action_type: str | None, message: str, expected: bool) -> None:
    entry = ConversationEntry(role="lab_manager", message=message, round_number=1, action_type=action_type)
    assert _feedback_indicates_blocker(entry) is expected


def test_baseline_revises_on_a_blocker() -> None:
    obs = make_observation(
        round_number=2,
        current_protocol=a_protocol(),
        conversation_history=[lab_entry("reject", "The GPU cluster is booked.")],
    )
    action = build_baseline_scientist_action(obs)
    assert action.action_type is ScientistActionType.REVISE_PROTOCOL
    assert action.sample_size == 15  # 30 halved, above the minimum of 12
    assert action.duration_days == 6  # 8 less a quarter
    assert action.required_equipment == ["cloud GPU"]
    assert action.required_reagents == ["public dataset"]
    assert action.controls == ["fixed random seeds across runs", "independent code review"]
    assert action.technique == "sparse attention retraining"
    assert "30 → 15" in action.rationale
    assert ScientistAction.model_validate(action.model_dump()) == action


def test_revision_respects_the_floors_and_the_duration_cap() -> None:
    small = a_protocol(sample_size=14, duration_days=30, technique="", controls=["independent code review"])
    obs = make_observation(
        round_number=2,
        current_protocol=small,
        conversation_history=[lab_entry("suggest_alternative", "Too long: exceeds the limit.")],
    )
    action = build_baseline_scientist_action(obs)
    assert action.sample_size == 12  # halving would go below the minimum
    assert action.duration_days == 10  # capped by max_duration_days
    assert action.controls == ["independent code review"]
    assert action.technique  # a domain default fills an empty technique
    tiny = obs.model_copy(
        update={"constraints": [], "current_protocol": a_protocol(sample_size=1, duration_days=1)}
    )
    revised = build_baseline_scientist_action(tiny)
    assert (revised.sample_size, revised.duration_days) == (1, 1)


def test_baseline_accepts_without_a_blocker_and_at_the_round_limit() -> None:
    protocol = a_protocol()
    blocked = [lab_entry("reject", "The GPU cluster is booked.")]
    accept = ScientistAction(action_type="accept")
    at_limit = make_observation(round_number=6, current_protocol=protocol, conversation_history=blocked)
    assert build_baseline_scientist_action(at_limit) == accept
    no_feedback = make_observation(round_number=2, current_protocol=protocol)
    assert build_baseline_scientist_action(no_feedback) == accept
    accepted = make_observation(
        round_number=2, current_protocol=protocol, conversation_history=[lab_entry("accept", "Budget fits.")]
    )
    assert build_baseline_scientist_action(accepted) == accept


def test_baseline_reads_only_the_latest_lab_manager_entry() -> None:
    protocol = a_protocol()
    history = [
        lab_entry("reject", "The GPU cluster is booked.", 1),
        lab_entry("accept", "Looks good.", 2),
        ConversationEntry(
            role="scientist",
            message="Budget is tight, cost exceeds.",
            round_number=3,
            action_type="revise_protocol",
        ),
    ]
    obs = make_observation(round_number=3, current_protocol=protocol, conversation_history=history)
    assert build_baseline_scientist_action(obs).action_type is ScientistActionType.ACCEPT
    reversed_history = [history[1], history[0]]
    obs = obs.model_copy(update={"conversation_history": reversed_history})
    assert build_baseline_scientist_action(obs).action_type is ScientistActionType.REVISE_PROTOCOL


def test_baseline_is_deterministic() -> None:
    obs = make_observation()
    assert build_baseline_scientist_action(obs) == build_baseline_scientist_action(obs)


def _assert_grounded(action: ScientistAction, pack: Any) -> None:
    obs = pack.scientist_observation
    assert ScientistAction.model_validate(action.model_dump()) == action
    texts = [
        action.technique,
        action.rationale,
        *action.controls,
        *action.required_equipment,
        *action.required_reagents,
    ]
    by_name = {r.name.lower(): r for r in obs.resources}
    for c in obs.constraints:
        if c.kind == "forbidden_practice" and c.term:
            assert not any(mentions(c.term, t) for t in texts), (pack.scenario_id, c.term)
        elif c.kind == "required_review" and c.term:
            assert any(mentions(c.term, t) for t in action.controls), (pack.scenario_id, c.term)
        elif c.kind == "max_duration_days" and c.quantity is not None:
            assert action.duration_days <= c.quantity
        elif c.kind == "max_sample_size" and c.quantity is not None:
            assert action.sample_size <= c.quantity
    for item in (*action.required_equipment, *action.required_reagents):
        resource = by_name.get(item.lower())
        assert resource is not None, (pack.scenario_id, item)
        if not resource.available:  # kept only when no available substitute exists
            assert not pack.substitutes.get(item.lower()), (pack.scenario_id, item)


@pytest.mark.parametrize(("seed", "template", "difficulty"), PACK_CASES)
def test_baseline_on_generated_scenarios(seed: int, template: str, difficulty: str) -> None:
    pack = generate_scenario(seed, template, difficulty)
    obs = pack.scientist_observation
    assert _infer_domain(obs) == EXPECTED_DOMAIN[template]
    proposal = build_baseline_scientist_action(obs)
    assert proposal.action_type is ScientistActionType.PROPOSE_PROTOCOL
    assert pack.paper.title in proposal.rationale
    essentials = [r for r in obs.resources if r.essential]
    listed = len(proposal.required_equipment) + len(proposal.required_reagents)
    assert listed <= len(essentials)
    _assert_grounded(proposal, pack)
    blocked = obs.model_copy(
        update={
            "current_protocol": proposal.to_protocol(),
            "round_number": 1,
            "conversation_history": [lab_entry("reject", "Over budget: the cost exceeds it.")],
        }
    )
    revision = build_baseline_scientist_action(blocked)
    assert revision.action_type is ScientistActionType.REVISE_PROTOCOL
    assert revision.sample_size <= proposal.sample_size
    assert revision.duration_days <= max(proposal.duration_days, 1)
    _assert_grounded(revision, pack)
