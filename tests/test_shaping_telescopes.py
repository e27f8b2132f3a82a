"""Potential-based shaping telescopes over the Scientist's decisions, however an episode ends:
accept (agreement or not), the round limit, the step cap on either agent's turn, refused moves."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.baselines.policies.seats import RandomScientist
from replicalab.episode import Episode
from replicalab.models import LabManagerActionType, RewardConfig
from replicalab.moves import LAB_MANAGER, SCIENTIST, coerce_action
from replicalab.rewards import potential
from replicalab.scenarios import generate_scenario
from tests.plans import ACCEPT, ASK_BUDGET, COMBOS, bad_plan, good_plan, propose, stance

SHAPED = [
    RewardConfig(name=f"{kind}-{gamma}-{terminal}", potential=kind, gamma=gamma, terminal_potential=terminal)
    for kind in ("public_total", "feasibility")
    for gamma in (1.0, 0.99, 0.9)
    for terminal in ("zero", "value")
]


def _telescoping_residual(episode: Episode) -> float:
    """Σ_j gamma^j·F_j over the Scientist's decisions (its turn and the answer to it) minus the
    theory's gamma^K·Φ(s_K) - Φ(s_0), where Φ(s_0) = 0 and Φ(s_K) is the terminal potential."""
    config = episode.reward_config
    decisions: list[float] = []
    for step in episode.to_log().steps:
        assert "shaping" not in step.reward_components[LAB_MANAGER]
        shaped = step.reward_components[SCIENTIST].get("shaping", 0.0)
        if step.agent == SCIENTIST:
            decisions.append(shaped)
        else:
            decisions[-1] += shaped  # the answer takes no step of the Scientist's clock
    gamma = config.gamma
    paid = sum(gamma**j * value for j, value in enumerate(decisions))
    terminal = 0.0
    if config.terminal_potential == "value":
        terminal = potential(config, episode.protocol, episode.scenario)
    return paid - gamma ** len(decisions) * terminal


def _junk(agent: str) -> object:
    return coerce_action(agent, "not a move")  # a refused move: no JSON


_ENDINGS = {
    # name: (max_rounds, step_cap, Scientist moves, Lab Manager moves ("grounded", "junk", "lie"))
    "accept": (6, None, ["bad", "good", "accept"], ["grounded", "grounded"]),
    "round_limit": (3, None, ["bad", "good", "bad"], ["grounded", "grounded", "grounded"]),
    "step_cap_on_scientist": (6, 3, ["bad", "good"], ["grounded"]),
    "step_cap_on_lab_manager": (6, 4, ["bad", "good"], ["grounded", "grounded"]),
    "invalid_moves": (3, None, ["bad", "junk", "junk"], ["junk", "junk", "junk"]),
    "accept_infeasible": (6, None, ["bad", "accept"], ["grounded"]),
    "accept_without_consent": (6, None, ["good", "bad", "accept"], ["grounded", "junk"]),
}
_VERDICTS = {
    "accept": "agreement",
    "round_limit": "round_limit",
    "step_cap_on_scientist": "truncated",
    "step_cap_on_lab_manager": "truncated",
    "invalid_moves": "round_limit",
    "accept_infeasible": "accept_infeasible",
    "accept_without_consent": "accept_without_consent",
}


def _scripted(config: RewardConfig, ending: str) -> Episode:
    max_rounds, step_cap, scientist, lab_manager = _ENDINGS[ending]
    pack = generate_scenario(5, "ml_benchmark", "medium")
    episode = Episode(pack, max_rounds=max_rounds, reward_config=config, step_cap=step_cap)
    moves = {SCIENTIST: list(scientist), LAB_MANAGER: list(lab_manager)}
    while not episode.done:
        agent = episode.agent_selection
        move = moves[agent].pop(0)
        if move == "grounded":
            episode.step(grounded_lab_response(episode))
        elif move == "junk":
            episode.step(_junk(agent))  # type: ignore[arg-type]
        elif move == "accept":
            episode.step(ACCEPT)
        else:
            plan = good_plan(pack) if move == "good" else bad_plan(pack)
            episode.step(propose(plan, "revise_protocol" if episode.protocol else "propose_protocol"))
    return episode


@pytest.mark.parametrize("ending", sorted(_ENDINGS))
@pytest.mark.parametrize("config", SHAPED, ids=lambda c: c.name)
def test_shaping_telescopes_for_every_ending(config: RewardConfig, ending: str) -> None:
    episode = _scripted(config, ending)
    assert episode.verdict == _VERDICTS[ending]
    assert abs(_telescoping_residual(episode)) <= 1e-9


def _fuzzed_move(episode: Episode, code: int, scientist: RandomScientist) -> object:
    pack = episode.scenario
    if episode.agent_selection == SCIENTIST:
        kind = "revise_protocol" if episode.protocol else "propose_protocol"
        return [
            lambda: scientist.act(episode),
            lambda: propose(good_plan(pack), kind),
            lambda: propose(bad_plan(pack), kind),
            lambda: ASK_BUDGET,
            lambda: ACCEPT,  # illegal while nothing is on the table
            lambda: _junk(SCIENTIST),
        ][code % 6]()
    return [
        lambda: grounded_lab_response(episode),
        lambda: grounded_lab_response(episode),
        lambda: stance(episode, LabManagerActionType.ACCEPT, lie=True),
        lambda: _junk(LAB_MANAGER),
    ][code % 4]()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    config=st.sampled_from(SHAPED),
    combo=st.sampled_from(COMBOS),
    seed=st.integers(0, 50),
    max_rounds=st.integers(2, 6),
    step_cap=st.one_of(st.none(), st.integers(1, 14)),
    codes=st.lists(st.integers(0, 11), max_size=16),
)
def test_shaping_telescopes_over_any_action_sequence(
    config: RewardConfig,
    combo: tuple[str, str],
    seed: int,
    max_rounds: int,
    step_cap: int | None,
    codes: list[int],
) -> None:
    pack = generate_scenario(seed, *combo)
    episode = Episode(pack, max_rounds=max_rounds, reward_config=config, step_cap=step_cap)
    scientist = RandomScientist(seed)
    for code in codes:
        if episode.done:
            break
        episode.step(_fuzzed_move(episode, code, scientist))  # type: ignore[arg-type]
    while not episode.done:  # then ask and answer until the round limit
        move = ASK_BUDGET if episode.agent_selection == SCIENTIST else grounded_lab_response(episode)
        episode.step(move)
    assert abs(_telescoping_residual(episode)) <= 1e-9
