"""Refused model text is logged so that re-parsing it gives the same outcome: whole when a log can
hold it, else by its length and SHA-256; and a log replays to the same bytes either way."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from replicalab.episode import Episode
from replicalab.models import MAX_TEXT_CHARS, EpisodeLog, LabManagerAction, ScientistAction, StepRecord
from replicalab.moves import LAB_MANAGER, SCIENTIST, ActionError, coerce_action
from tests.model_text import MODEL_TEXT
from tests.plans import ASK_BUDGET, PACK, new

LONG_TEXT = st.tuples(st.integers(2_001, MAX_TEXT_CHARS + 50), st.sampled_from(["{", "x", " "])).map(
    lambda pair: '{"action_type": "accept", "rationale": "' + pair[1] * pair[0]
)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _logged_step(agent: str, text: str) -> tuple[Episode, StepRecord]:
    episode = new()
    if agent == LAB_MANAGER:
        episode.step(ASK_BUDGET)
    episode.step(coerce_action(agent, text))
    log = EpisodeLog.model_validate_json(episode.to_log().model_dump_json())
    return episode, log.steps[-1]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agent=st.sampled_from([SCIENTIST, LAB_MANAGER]), text=st.one_of(MODEL_TEXT, LONG_TEXT))
@example(agent=SCIENTIST, text='{"action_type": "accept", "rationale": "\udc80"}')  # '?' would parse
@example(agent=SCIENTIST, text='{"action_type": "accept", "rationale": "' + "x" * 5_000)  # cut at 2,000 once
def test_refused_text_re_parses_to_the_logged_outcome(agent: str, text: str) -> None:
    _, step = _logged_step(agent, text)
    again = coerce_action(agent, text)
    if step.error_code is None or step.error_code == "illegal_action":
        assert not isinstance(again, ActionError)  # parsed; refused, if at all, by the rules
        return
    assert isinstance(again, ActionError)
    if isinstance(step.action, str):  # kept whole: the logged text itself re-parses the same
        assert step.action == text and step.raw_chars is None and step.raw_sha256 is None
        from_log = coerce_action(agent, step.action)
    else:  # too long or not UTF-8: the text is identified by its length and digest
        assert step.action is None and step.raw_chars == len(text) and step.raw_sha256 == _sha256(text)
        assert len(text) > MAX_TEXT_CHARS or text.encode("utf-8", "replace").decode("utf-8") != text
        from_log = again
    assert isinstance(from_log, ActionError)
    assert (from_log.code, from_log.message) == (step.error_code, step.error_message)


def test_a_lone_surrogate_is_not_logged_as_a_question_mark() -> None:
    text = '{"action_type": "request_info", "questions": ["budget\udc80?"]}'
    _, step = _logged_step(SCIENTIST, text)
    assert step.error_code == "invalid_action" and step.action is None
    assert step.raw_chars == len(text) and step.raw_sha256 == _sha256(text)
    as_question_marks = text.encode("utf-8", "replace").decode("utf-8")
    assert not isinstance(coerce_action(SCIENTIST, as_question_marks), ActionError)  # why '?' was wrong


@pytest.mark.parametrize("length", [2_500, MAX_TEXT_CHARS])
def test_refused_text_within_the_cap_is_kept_whole(length: int) -> None:
    text = ("{" + "x" * length)[:length]
    _, step = _logged_step(SCIENTIST, text)
    assert step.error_code == "invalid_json" and step.action == text


def test_text_over_the_cap_is_logged_by_length_and_digest_only() -> None:
    text = "x" * (10 * MAX_TEXT_CHARS)
    episode, step = _logged_step(SCIENTIST, text)
    assert step.action is None and step.raw_chars == len(text) and step.raw_sha256 == _sha256(text)
    assert len(episode.to_log().model_dump_json()) < 10_000


def test_a_log_with_digests_replays_to_the_same_bytes() -> None:
    episode = Episode(PACK)
    texts = ["x" * (MAX_TEXT_CHARS + 1), '{"action_type": "accept", "rationale": "\ud800"}', "{not json"]
    for text in texts:
        episode.step(coerce_action(episode.agent_selection, text))
    log = episode.to_log()
    again = Episode(PACK)
    for step in log.steps:
        if step.error_code is not None:
            raw = step.action if isinstance(step.action, str) else None
            error = ActionError(
                code=step.error_code,
                message=step.error_message or "",
                raw=raw,
                raw_chars=step.raw_chars,
                raw_sha256=step.raw_sha256,
            )
            again.step(error)
        else:
            model = ScientistAction if step.agent == SCIENTIST else LabManagerAction
            again.step(model.model_validate(step.action))
    assert again.to_log().model_dump_json() == log.model_dump_json()
    assert json.loads(log.model_dump_json())["steps"][0]["raw_chars"] == MAX_TEXT_CHARS + 1
