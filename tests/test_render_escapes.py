"""Agents' text on a terminal: what would act on it is escaped when rendered, and only then."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replicalab.envs import replicalab_v3
from replicalab.envs.render import render_transcript
from replicalab.episode import Episode
from tests.plans import PACK, good_plan, new, propose

ESCAPES = "\x1b[2J\x1b[31mred\x07\x08\r\x7f\x9b\u202eevil\u200e"


def _episode_saying(text: str) -> Episode:
    episode = new()
    plan = good_plan(PACK).model_copy(update={"rationale": "plan " + text})
    episode.step(propose(plan))
    return episode


def test_agents_control_characters_are_escaped_in_ansi_and_human_rendering(capsys: Any) -> None:
    env = replicalab_v3.env(render_mode="ansi")
    env.reset(seed=0, options={"scenario": PACK})
    env.step(propose(good_plan(PACK).model_copy(update={"rationale": "plan " + ESCAPES})))
    text = env.render()
    assert isinstance(text, str)
    assert not any(ch in text for ch in "\x1b\x07\x08\r\x7f\x9b\u202e\u200e")
    assert "\\x1b[2J\\x1b[31mred\\x07\\x08\\r\\x7f\\x9b\\u202eevil\\u200e" in text
    assert ESCAPES in env.episode.transcript[-1].message  # the data itself is unchanged
    human = replicalab_v3.env(render_mode="human")
    human.reset(seed=0, options={"scenario": PACK})
    human.step(propose(good_plan(PACK).model_copy(update={"rationale": "plan " + ESCAPES})))
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\\x1b[2J" in printed


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=80))
def test_rendered_text_holds_only_printable_characters(text: str) -> None:
    rendered = render_transcript(_episode_saying(text))
    assert all(ch.isprintable() or ch == "\n" for ch in rendered)
