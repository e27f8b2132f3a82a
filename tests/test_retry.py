"""A model turn as a state machine: it asks for messages and takes replies, so a blocking model
and an awaited one advance the same turn, and a turn of k calls parses each reply once."""

from __future__ import annotations

import json

import pytest

from replicalab.agents.retry import run_turn
from replicalab.agents.scientist_retry import scientist_turn
from replicalab.parsing import OutputParseError

ACCEPT = json.dumps({"action_type": "accept"})


def test_a_turn_asks_again_with_a_correction_and_ends_on_the_first_parsable_reply() -> None:
    turn = scientist_turn("system", "observe", max_retries=2)
    first = turn.request
    assert first is not None and [m["role"] for m in first] == ["system", "user"]
    turn.answer("prose, no JSON")
    second = turn.request
    assert second is not None and [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert (
        second[2]["content"] == "prose, no JSON" and "did not contain a JSON object" in second[3]["content"]
    )
    turn.answer(ACCEPT)
    assert turn.request is None and turn.calls == 2
    action, metadata = turn.result()
    assert action.action_type == "accept" and turn.parsed() is action
    assert (metadata.attempt_count, metadata.retry_count, metadata.last_error_code) == (2, 1, "no_json")
    with pytest.raises(RuntimeError, match="the turn is over"):
        turn.answer(ACCEPT)


def test_a_turn_that_never_parses_raises_the_last_error_after_its_retries() -> None:
    turn = scientist_turn("system", "observe", max_retries=1)
    with pytest.raises(RuntimeError, match="still needs a reply"):
        turn.result()
    with pytest.raises(RuntimeError, match="still needs a reply"):
        turn.parsed()
    asked: list[int] = []

    def prose(messages: list[dict[str, str]]) -> str:
        asked.append(len(messages))
        return "no"

    with pytest.raises(OutputParseError) as caught:
        run_turn(turn, prose)
    assert asked == [2, 4] and caught.value.raw_text == "no"
    with pytest.raises(OutputParseError):
        turn.parsed()
