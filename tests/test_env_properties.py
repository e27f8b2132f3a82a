"""Properties of the AEC env under hostile input: text never crashes, episodes always end, and
nothing hidden reaches the Scientist."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from replicalab.agents import (
    ScientistOutputParseError,
    build_baseline_scientist_action,
    parse_scientist_output,
)
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.envs import replicalab_v3
from replicalab.envs.spaces import QUESTIONS, SCIENTIST_NVEC
from replicalab.episode import EpisodeOverError
from replicalab.models import FEASIBILITY_DIMENSIONS, EpisodeLog, LabManagerAction, ScientistAction
from replicalab.moves import AGENTS, LAB_MANAGER, SCIENTIST
from replicalab.scenarios import NormalizedScenarioPack
from tests.model_text import FIELDS, MODEL_TEXT, VALUES
from tests.plans import ACCEPT, ASK_BUDGET, COMBOS, PACK, good_plan, propose

PARSER_CODES = {"no_json", "invalid_json", "invalid_action"}
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------- text mode


def _text_env() -> replicalab_v3.raw_env:
    env = replicalab_v3.env(action_mode="text", reward_config="default")
    env.reset(seed=1)
    return env


def _expected_code(text: str) -> str | None:
    try:
        parse_scientist_output(text)
    except ScientistOutputParseError as exc:
        return exc.code
    return None


def _assert_turn_handled(env: replicalab_v3.raw_env, text: str) -> None:
    """Step the Scientist with `text` and check a malformed one is refused as the spec says."""
    episode = env.episode
    before = (episode.invalid_action_count, len(episode.transcript))
    env.step(text)
    error = env.infos[SCIENTIST]["error"]
    code = _expected_code(text)
    if code is None:  # well-formed: legal now, or refused only because no protocol exists yet
        assert error is None or error["code"] == "illegal_action"
        return
    assert code in PARSER_CODES and error is not None and error["code"] == code
    assert env.agent_selection == LAB_MANAGER and not episode.done
    assert episode.invalid_action_count == before[0] + 1
    assert len(episode.transcript) == before[1] + 1
    assert episode.transcript[-1].role == "system" and episode.transcript[-1].action_type == code
    assert env.infos[SCIENTIST]["reward_components"]["invalid_action"] == -1.0
    assert env.rewards[SCIENTIST] == -1.0
    log = episode.to_log().model_dump_json()  # a refused move is always loggable
    assert EpisodeLog.model_validate_json(log).steps[-1].error_code == code


@SETTINGS
@given(text=MODEL_TEXT)
@example(text="no json at all")  # no_json
@example(text='{"action_type": "accept",')  # invalid_json
@example(text='{"action_type": "propose_protocol"}')  # invalid_action
@example(text='{"action_type": "accept"}')  # well-formed, illegal without a protocol
@example(text='{"action_type": "accept", "\ud800": 1} \udcff')  # lone surrogates
def test_arbitrary_model_text_never_crashes_and_costs_the_turn(text: str) -> None:
    _assert_turn_handled(_text_env(), text)


def test_sampled_text_actions_are_handled() -> None:
    env = _text_env()
    space = env.action_space(SCIENTIST)
    space.seed(0)
    codes = set()
    for _ in range(40):
        env.reset(seed=1)
        text = space.sample()
        codes.add(_expected_code(text))
        _assert_turn_handled(env, text)
    assert codes <= PARSER_CODES and codes
    for seed in range(40):  # with the action-type mask: a well-formed move of a legal type
        env.reset(seed=seed)
        for agent in env.agent_iter(30):
            obs, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            env.step(env.action_space(agent).sample(obs["action_mask"]))
            assert env.infos[agent]["error"] is None
        assert env.episode.invalid_action_count == 0


# --------------------------------------------------------------------------- no runaway episode

_PYDANTIC = [
    ACCEPT,
    ASK_BUDGET,
    propose(good_plan(PACK)),
    propose(good_plan(PACK), "revise_protocol"),
    *(
        LabManagerAction(
            action_type=kind,
            feasible=ok,
            suggested_protocol=suggested,
            explanation="a learned reply",
            **dict.fromkeys((f"{d}_ok" for d in FEASIBILITY_DIMENSIONS), ok),
        )
        for kind, ok, suggested in (
            ("accept", True, None),
            ("reject", False, None),
            ("report_feasibility", False, None),
            ("suggest_alternative", True, good_plan(PACK)),
        )
    ),
]
ANY_ACTION = st.one_of(
    st.none(),
    st.integers(-2, 10**30),
    st.floats(),
    st.text(max_size=80),
    MODEL_TEXT,
    st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=5),
    st.sampled_from(_PYDANTIC),
    st.sampled_from(_PYDANTIC).map(lambda a: a.model_dump()),
    st.integers(0, 2**32).map(
        lambda s: np.random.default_rng(s).integers(0, SCIENTIST_NVEC)
    ),  # mostly masked out
    st.lists(st.integers(-1, 3), max_size=4),
    st.builds(object),
)


def _assert_in_space(env: replicalab_v3.raw_env, agent: str) -> None:
    assert env.observation_space(agent).contains(env.observe(agent))


@pytest.mark.parametrize("mode", ["structured", "text"])
@SETTINGS
@given(
    actions=st.lists(ANY_ACTION, min_size=1, max_size=14),
    max_rounds=st.integers(2, 6),
    step_cap=st.one_of(st.none(), st.integers(1, 14)),
    seed=st.integers(0, 2**16),
)
def test_any_action_sequence_ends_in_time(
    mode: str, actions: list[Any], max_rounds: int, step_cap: int | None, seed: int
) -> None:
    env = replicalab_v3.env(action_mode=mode, max_rounds=max_rounds, step_cap=step_cap)
    env.reset(seed=seed)
    scenario = env.episode.scenario.model_dump_json()
    bound = 2 * max_rounds if step_cap is None else min(2 * max_rounds, step_cap)
    steps = 0
    while not env.episode.done:
        assert steps < bound
        _assert_in_space(env, env.agent_selection)
        env.step(actions[steps % len(actions)])
        steps += 1
    episode = env.episode
    assert episode.verdict is not None and episode.to_log().verdict == episode.verdict
    assert episode.truncated == (episode.verdict == "truncated")
    assert len(episode.to_log().steps) == steps
    for agent in AGENTS:
        _assert_in_space(env, agent)
        assert not env.observe(agent)["action_mask"].any()
        assert env.terminations[agent] or env.truncations[agent]
    assert episode.scientist_mask() == episode.lab_manager_mask() == (False,) * 4
    assert episode.scenario.model_dump_json() == scenario  # so a group's rollouts share one
    with pytest.raises(EpisodeOverError):
        episode.step(ACCEPT)
    for _ in AGENTS:
        env.step(None)
    assert env.agents == []


# --------------------------------------------------------------------------- no information leak

_PROBING = [
    "What is the target metric of the reference?",
    "What is the total budget?",
    "Which required elements does the original protocol have?",
    "Why does it fail?",
]


def _secrets(pack: NormalizedScenarioPack) -> tuple[list[str], re.Pattern[str] | None]:
    """Hidden strings (lower case) and a pattern for the private budget total, if it differs.

    A target metric or element that the paper, the goal or the candidate lists already name is
    public by design (which candidates the study used is the secret), so it is not counted.
    """
    hidden = pack.hidden_reference_spec
    candidates = [*pack.candidates.techniques, *pack.candidates.elements, *pack.candidates.controls]
    public = " ".join(
        map(str, [pack.experiment_goal, *pack.paper.model_dump().values(), *candidates])
    ).lower()
    # an element the paper's method states is public by design; the others are secrets
    secrets = [element.lower() for element in hidden.required_elements if element.lower() not in public]
    if hidden.target_metric.lower() not in public:
        secrets.append(hidden.target_metric.lower())
    total = pack.lab.budget_total
    if total == pack.lab.budget_remaining:
        return secrets, None
    forms = {re.escape(str(total)), re.escape(f"{total:g}")}
    # a cost estimate may equal the total by chance; "cost 930" does not reveal a budget
    return secrets, re.compile(r"(?<![\d.])(?<!cost )(?:" + "|".join(sorted(forms)) + r")(?![\d])")


def _scientist_move(
    env: replicalab_v3.raw_env, obs: dict[str, Any], rng: np.random.Generator, policy: str
) -> Any:
    episode = env.episode
    roll = rng.random()
    if roll < 0.3:
        asked = [QUESTIONS[int(rng.integers(len(QUESTIONS)))], _PROBING[int(rng.integers(4))]]
        return {"action_type": "request_info", "questions": asked}
    if policy == "baseline" or roll < 0.5:
        return build_baseline_scientist_action(episode.scientist_observation())
    return env.action_space(SCIENTIST).sample(obs["action_mask"])


def _lab_manager_move(env: replicalab_v3.raw_env, obs: dict[str, Any], rng: np.random.Generator) -> Any:
    if rng.random() < 0.5:
        return grounded_lab_response(env.episode)
    return env.action_space(LAB_MANAGER).sample(obs["action_mask"])


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_nothing_hidden_reaches_the_scientist(template: str, difficulty: str) -> None:
    budget_checked = 0
    for mode in ("text", "structured"):
        env = replicalab_v3.env(
            action_mode=mode, templates=[template], difficulties=[difficulty], render_mode="ansi"
        )
        env.action_space(SCIENTIST).seed(0)
        env.action_space(LAB_MANAGER).seed(0)
        for seed in range(14):
            env.reset(seed=seed)
            rng = np.random.default_rng(seed)
            policy = "baseline" if seed % 2 else "random"
            seen = [env.system_prompt, json.dumps(env.infos[SCIENTIST], default=str)]
            for agent in env.agent_iter(40):
                obs, _, terminated, truncated, info = env.last()
                if agent == SCIENTIST:
                    seen += [json.dumps(info, default=str), env.render() or ""]
                    if mode == "text":
                        seen.append(obs["prompt"])
                if terminated or truncated:
                    env.step(None)
                elif agent == SCIENTIST:
                    env.step(_scientist_move(env, obs, rng, policy))
                else:
                    env.step(_lab_manager_move(env, obs, rng))
            seen.append(env.render() or "")
            text = "\n".join(seen).lower()
            secrets, budget = _secrets(env.episode.scenario)
            for secret in secrets:
                assert secret not in text, (env.episode.scenario.scenario_id, secret)
            if budget is not None:
                budget_checked += 1
                assert not budget.search(text), (env.episode.scenario.scenario_id, budget.pattern)
            assert "answer:" in text or not any(
                e.action_type == "request_info" for e in env.episode.transcript
            )
    if difficulty != "easy":
        assert budget_checked > 0


def test_scientist_infos_hold_only_public_keys() -> None:
    env = replicalab_v3.env(action_mode="text")
    env.reset(seed=0)
    assert set(env.infos[SCIENTIST]) == {"round", "reward_components", "error", "system_prompt"}
    env.step(propose(good_plan(env.episode.scenario)))
    env.step(grounded_lab_response(env.episode))
    env.step(ScientistAction.model_validate({"action_type": "accept"}))
    assert set(env.infos[SCIENTIST]) == {"round", "reward_components", "error", "verdict", "judge"}
    assert set(env.infos[SCIENTIST]["judge"]) == {"rigor", "feasibility", "fidelity", "parsimony", "total"}
