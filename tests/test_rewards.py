"""Reward configs and per-step components: presets, named penalties, potential-based shaping."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from replicalab.judge import build_reward_breakdown, compute_total_reward, feasibility_score
from replicalab.judge.breakdown import breakdown_against
from replicalab.judge.public import public_facts
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import Protocol
from replicalab.rewards import (
    PRESETS,
    JudgeExponents,
    Penalties,
    RewardConfig,
    Transition,
    get_preset,
    judge_reward,
    potential,
    reward_components,
)
from replicalab.scenarios import generate_scenario
from tests.plans import COMBOS, good_plan, random_protocol

PACK = generate_scenario(11, "ml_benchmark", "medium")
BREAKDOWN = build_reward_breakdown(good_plan(PACK), PACK)


def _scientist(**fields: object) -> Transition:
    return Transition(agent="scientist", **fields)


# --------------------------------------------------------------------------- configs


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_round_trip_through_json(name: str) -> None:
    config = get_preset(name)
    assert config.name == name
    text = config.model_dump_json()
    again = RewardConfig.model_validate_json(text)
    assert again == config
    assert again.model_dump_json() == text


def test_get_preset_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="default, potential, sparse"):
        get_preset("dense")


def test_config_is_strict_and_frozen() -> None:
    with pytest.raises(ValidationError):
        RewardConfig.model_validate({"name": "x", "typo_bonus": 1.0})
    with pytest.raises(ValidationError):
        RewardConfig(name="x", gamma=0.0)
    with pytest.raises(ValidationError):
        RewardConfig(name="x", penalties=Penalties(stalling=-1.0))
    with pytest.raises(ValidationError):
        get_preset("default").name = "changed"  # type: ignore[misc]


def test_presets_differ_as_documented() -> None:
    sparse, default, shaped = get_preset("sparse"), get_preset("default"), get_preset("potential")
    assert sparse.penalties == Penalties() and sparse.efficiency_bonus == 0.0
    assert sparse.potential == "none" and default.potential == "none"
    assert all(value > 0 for value in default.penalties.model_dump().values())
    assert shaped.potential == "public_total"
    assert shaped.model_dump(exclude={"name", "potential", "gamma"}) == default.model_dump(
        exclude={"name", "potential", "gamma"}
    )


# --------------------------------------------------------------------------- components

_PENALTY_TRIGGERS: dict[str, tuple[Transition, float]] = {
    "invalid_action": (_scientist(error_code="invalid_json"), 1.0),
    "stalling": (_scientist(stalled=True), 1.0),
    "hallucinated_resource": (_scientist(hallucinated_items=3), 3.0),
    "regression": (_scientist(failing_before=1, failing_after=3), 1.0),
    "misreport": (Transition(agent="lab_manager", misreported_flags=2), 2.0),
}


@pytest.mark.parametrize("name", sorted(_PENALTY_TRIGGERS))
def test_each_turn_penalty_comes_from_its_transition_only(name: str) -> None:
    config = get_preset("default")
    transition, multiple = _PENALTY_TRIGGERS[name]
    components = reward_components(config, transition)
    actor = transition.agent
    other = "lab_manager" if actor == "scientist" else "scientist"
    expected = -multiple * getattr(config.penalties, name)
    assert components[actor] == {name: pytest.approx(expected)}
    assert components[other] == {}
    for other_name, (other_transition, _) in _PENALTY_TRIGGERS.items():
        if other_name != name:
            assert name not in reward_components(config, other_transition)[actor]


def test_quiet_transitions_pay_nothing() -> None:
    config = get_preset("default")
    quiet = [
        _scientist(),
        _scientist(failing_before=2, failing_after=2),
        _scientist(failing_before=3, failing_after=1),
        _scientist(failing_before=None, failing_after=5),
        Transition(agent="lab_manager"),
    ]
    for transition in quiet:
        assert reward_components(config, transition) == {"scientist": {}, "lab_manager": {}}


def test_terminal_outcomes() -> None:
    config = get_preset("default")
    agreed = _scientist(terminal=True, verdict="agreement", breakdown=BREAKDOWN)
    value = judge_reward(config, BREAKDOWN)
    assert reward_components(config, agreed) == {
        "scientist": {"judge": value},
        "lab_manager": {"judge": value},
    }
    no_deal = -config.penalties.no_agreement
    for verdict in ("round_limit", "truncated"):
        ended = Transition(agent="lab_manager", terminal=True, verdict=verdict)
        assert reward_components(config, ended) == {
            "scientist": {"no_agreement": no_deal},
            "lab_manager": {"no_agreement": no_deal},
        }
    forced = _scientist(terminal=True, verdict="accept_without_consent")
    assert reward_components(config, forced) == {
        "scientist": {
            "no_agreement": no_deal,
            "accept_without_consent": -config.penalties.accept_without_consent,
        },
        "lab_manager": {"no_agreement": no_deal},
    }


def test_step_cost_is_charged_to_the_actor() -> None:
    config = RewardConfig(name="costly", step_cost=0.05)
    assert reward_components(config, Transition(agent="lab_manager")) == {
        "scientist": {},
        "lab_manager": {"step_cost": -0.05},
    }


def test_sparse_pays_only_the_terminal_judge_reward() -> None:
    config = get_preset("sparse")
    busy = [t for t, _ in _PENALTY_TRIGGERS.values()] + [
        _scientist(phi_before=1.0, phi_after=3.0, error_code="no_json", stalled=True),
        Transition(agent="lab_manager", terminal=True, verdict="round_limit"),
        _scientist(terminal=True, verdict="accept_without_consent"),
    ]
    for transition in busy:
        assert reward_components(config, transition) == {"scientist": {}, "lab_manager": {}}
    agreed = _scientist(terminal=True, verdict="agreement", breakdown=BREAKDOWN)
    assert reward_components(config, agreed)["scientist"] == {"judge": BREAKDOWN.total}


def test_judge_reward_weights() -> None:
    plain = RewardConfig(name="plain")
    assert judge_reward(plain, BREAKDOWN) == pytest.approx(compute_total_reward(BREAKDOWN))
    scaled = RewardConfig(name="scaled", judge_scale=0.1)
    assert judge_reward(scaled, BREAKDOWN) == pytest.approx(0.1 * compute_total_reward(BREAKDOWN))
    squared = RewardConfig(name="sq", judge_exponents=JudgeExponents(fidelity=2.0))
    b = BREAKDOWN
    base = 10 * b.rigor * b.feasibility * b.fidelity**2 * b.parsimony
    assert judge_reward(squared, b) == pytest.approx(base + sum(b.bonuses.values()))


def test_transition_ending_must_be_consistent() -> None:
    with pytest.raises(ValueError, match="verdict: set exactly when"):
        _scientist(terminal=True)
    with pytest.raises(ValueError, match="verdict: set exactly when"):
        _scientist(verdict="round_limit")
    with pytest.raises(ValueError, match="breakdown: an agreement needs"):
        _scientist(terminal=True, verdict="agreement")


def test_transition_counts_are_non_negative() -> None:
    with pytest.raises(ValueError, match="misreported_flags: must be non-negative, got -1"):
        Transition(agent="lab_manager", misreported_flags=-1)
    with pytest.raises(ValueError, match="saved_rounds"):
        _scientist(saved_rounds=-2)


# --------------------------------------------------------------------------- potentials


def test_potential_values() -> None:
    plan = good_plan(PACK)
    check = check_feasibility(plan, PACK)
    for name in sorted(PRESETS):
        assert potential(get_preset(name), None, PACK) == 0.0
    assert potential(get_preset("default"), plan, PACK) == 0.0
    shaped = get_preset("potential")
    judged = judge_reward(shaped, breakdown_against(plan, public_facts(PACK), check))  # no study read
    assert potential(shaped, plan, PACK) == potential(shaped, plan, PACK, check) == judged
    feasible = RewardConfig(name="f", potential="feasibility")
    assert potential(feasible, plan, PACK, check) == feasibility_score(plan, PACK) == 1.0


def _episode_transitions(
    config: RewardConfig, rng: np.random.Generator, index: int
) -> tuple[list[Transition], list[float]]:
    """A random episode: Scientist turns change the protocol (or fail), Lab Manager turns answer.

    Returns its transitions and the potentials of the states the Scientist's decisions pass
    through (a decision is a Scientist turn and the answer to it), the terminal one last.
    """
    template, difficulty = COMBOS[index % len(COMBOS)]
    pack = generate_scenario(int(rng.integers(0, 1000)), template, difficulty)
    rounds = int(rng.integers(1, 7))
    protocol: Protocol | None = None
    phi = 0.0
    phis = [phi]
    transitions = []
    end_on_lab_manager = bool(rng.integers(0, 2))
    for round_index in range(rounds):
        last = round_index == rounds - 1
        if rng.random() < 0.8:  # a valid proposal or revision
            protocol = random_protocol(pack, rng)
        new_phi = potential(config, protocol, pack)
        terminal = last and not end_on_lab_manager
        transitions.append(
            Transition(
                agent="scientist",
                phi_before=phi,
                phi_after=new_phi,
                terminal=terminal,
                verdict="accept_without_consent" if terminal else None,
            )
        )
        phi = new_phi
        phis.append(phi)
        if terminal:
            break
        terminal = last
        transitions.append(
            Transition(
                agent="lab_manager",
                phi_before=phi,
                phi_after=phi,
                terminal=terminal,
                verdict="round_limit" if terminal else None,
            )
        )
    if config.terminal_potential == "zero":
        phis[-1] = 0.0
    return transitions, phis


@pytest.mark.parametrize("kind", ["public_total", "feasibility"])
@pytest.mark.parametrize("gamma", [1.0, 0.9])
@pytest.mark.parametrize("terminal", ["zero", "value"])
def test_shaping_telescopes(kind: str, gamma: float, terminal: str) -> None:
    config = RewardConfig(name="shaped", potential=kind, gamma=gamma, terminal_potential=terminal)
    rng = np.random.default_rng([7, int(gamma * 10), len(kind), len(terminal)])
    nonzero = 0
    for index in range(40):
        transitions, phis = _episode_transitions(config, rng, index)
        paid: list[float] = []  # per Scientist decision
        for t in transitions:
            value = reward_components(config, t)["scientist"].get("shaping", 0.0)
            if t.agent == "scientist":
                paid.append(value)
            else:
                paid[-1] += value
        assert len(paid) == len(phis) - 1
        from_potentials = [gamma * phis[t + 1] - phis[t] for t in range(len(paid))]
        assert paid == pytest.approx(from_potentials, abs=1e-12)
        assert all("shaping" not in reward_components(config, t)["lab_manager"] for t in transitions)
        discounted = sum(gamma**t * f for t, f in enumerate(paid))
        k = len(paid)
        assert math.isclose(discounted, gamma**k * phis[-1] - phis[0], abs_tol=1e-9)
        if gamma == 1.0:
            assert math.isclose(sum(paid), phis[-1] - phis[0], abs_tol=1e-9)
        nonzero += any(paid)
    assert nonzero > 20
