"""A Scientist prompt over its size budget loses its oldest history first; the output contract and
the latest Lab Manager reply always survive, in the env and for an LLM policy alike."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replicalab.agents import MAX_PROMPT_CHARS, MIN_PROMPT_CHARS, format_scientist_observation
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.envs import replicalab_v3
from replicalab.models import ConversationEntry, ScientistAction, ScientistActionType, ScientistObservation
from replicalab.moves import SCIENTIST
from tests.plans import PACK

CLOSING = "Respond with exactly one JSON object (a ScientistAction) and nothing else."
SCHEMA = "ScientistAction keys: action_type, sample_size"


def _entry(i: int, role: str, size: int) -> ConversationEntry:
    return ConversationEntry(role=role, message=f"<{i}>" + "m" * size + f"</{i}>", round_number=i // 2 + 1)  # type: ignore[arg-type]


def _observation(entries: list[ConversationEntry]) -> ScientistObservation:
    return PACK.scientist_observation.model_copy(update={"conversation_history": entries, "round_number": 3})


def _negotiation(n: int, size: int) -> list[ConversationEntry]:
    return [_entry(i, "scientist" if i % 2 == 0 else "lab_manager", size) for i in range(n)]


def _assert_contract(text: str, budget: int, head: str = "Round 3 of 6") -> None:
    assert len(text) <= budget
    assert text.endswith(CLOSING) and SCHEMA in text
    assert text.startswith(head)


def test_the_oldest_history_goes_first_and_the_latest_reply_stays_whole() -> None:
    entries = _negotiation(400, 500)  # about 200k characters of history
    text = format_scientist_observation(_observation(entries))
    _assert_contract(text, MAX_PROMPT_CHARS)
    assert entries[-1].message in text  # the latest Lab Manager reply, whole
    assert entries[-2].message in text and entries[0].message not in text
    kept = [e for e in entries if e.message in text]
    assert kept == entries[-len(kept) :]  # a suffix: newest first to stay
    assert f"({len(entries) - len(kept)} older entries omitted to fit the prompt)" in text
    assert PACK.paper.title in text  # nothing else had to be cut


def test_the_latest_reply_outlives_newer_system_notes() -> None:
    entries = [*_negotiation(100, 800), _entry(100, "system", MAX_PROMPT_CHARS - 2_000)]
    text = format_scientist_observation(_observation(entries))
    _assert_contract(text, MAX_PROMPT_CHARS)
    assert entries[-2].message in text and "<100>" not in text


def test_a_reply_longer_than_the_budget_is_cut_in_its_middle() -> None:
    entries = [*_negotiation(5, 100), _entry(5, "lab_manager", 3 * MAX_PROMPT_CHARS)]
    text = format_scientist_observation(_observation(entries))
    _assert_contract(text, MAX_PROMPT_CHARS)
    assert "<5>" in text and "</5>" in text and "characters cut to fit the prompt" in text


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(0, 30_000), max_size=30),
    budget=st.integers(MIN_PROMPT_CHARS, 3 * MAX_PROMPT_CHARS),
    roles=st.lists(st.sampled_from(["scientist", "lab_manager", "system"]), min_size=30, max_size=30),
)
def test_any_history_fits_any_budget(sizes: list[int], budget: int, roles: list[str]) -> None:
    entries = [_entry(i, roles[i], size) for i, size in enumerate(sizes)]
    obs = _observation(entries)
    text = format_scientist_observation(obs, budget)
    _assert_contract(text, budget)
    whole = format_scientist_observation(obs, 10**9)
    if len(whole) <= budget:
        assert text == whole
    replies = [e for e in entries if e.role == "lab_manager"]
    if replies:  # the latest reply stays whole whenever it fits beside everything that cannot go
        alone = format_scientist_observation(_observation([replies[-1]]), 10**9)
        if len(alone) + 60 <= budget:
            assert replies[-1].message in text


@pytest.mark.parametrize("budget", [0, MIN_PROMPT_CHARS - 1, 2.5e4, True])
def test_a_budget_too_small_or_not_an_int_is_refused(budget: object) -> None:
    with pytest.raises(ValueError, match="max_chars"):
        format_scientist_observation(_observation([]), budget)  # type: ignore[arg-type]


def test_the_text_env_prompt_keeps_the_contract_and_the_latest_reply() -> None:
    env = replicalab_v3.env(action_mode="text", max_rounds=40)
    env.reset(seed=0, options={"scenario": PACK})
    question = ScientistAction(
        action_type=ScientistActionType.REQUEST_INFO,
        questions=[f"Question {i}: " + "why " * 4_000 for i in range(3)],
    )
    for _ in range(8):  # each round adds about 48k characters of questions
        env.step(question)
        env.step(grounded_lab_response(env.unwrapped.episode))
    prompt = env.observe(SCIENTIST)["prompt"]
    assert env.observation_space(SCIENTIST)["prompt"].contains(prompt)
    _assert_contract(prompt, MAX_PROMPT_CHARS, "Round 9 of 40")
    latest = env.unwrapped.episode.transcript[-1]
    assert latest.role == "lab_manager" and latest.message in prompt
