"""The Scientist's retry loop: a bad output goes back to the model with a correction, a bounded
number of times."""

from __future__ import annotations

import pytest

from replicalab.agents import (
    RetryMetadata,
    ScientistCallResult,
    ScientistOutputParseError,
    call_scientist_with_retry,
    format_scientist_observation,
)
from replicalab.models import ScientistAction
from tests.scientist_briefs import ACCEPT_JSON, make_observation


class ScriptedModel:
    """A GenerateFn that replays answers and records (a copy of) every message list it got."""

    def __init__(self, *answers: str, vandal: bool = False) -> None:
        self.answers = list(answers)
        self.calls: list[list[dict[str, str]]] = []
        self.vandal = vandal

    def __call__(self, messages: list[dict[str, str]]) -> str:
        self.calls.append([dict(m) for m in messages])
        if self.vandal:  # a misbehaving client that edits what it was given
            messages[0]["content"] = "vandalised"
            messages.append({"role": "user", "content": "injected"})
        return self.answers.pop(0)


def test_first_try_success_has_clean_metadata() -> None:
    model = ScriptedModel(ACCEPT_JSON)
    obs = make_observation()
    result = call_scientist_with_retry(model, "SYSTEM", obs)
    assert isinstance(result, ScientistCallResult)
    assert result.action == ScientistAction(action_type="accept", rationale="fine")
    assert result.metadata == RetryMetadata(attempt_count=1, retry_count=0)
    assert result.metadata.last_error_code is None and result.metadata.last_error_message is None
    assert model.calls == [
        [
            {"role": "system", "content": "SYSTEM"},
            {"role": "user", "content": format_scientist_observation(obs)},
        ]
    ]


def test_retry_sends_the_bad_output_back_with_a_correction() -> None:
    model = ScriptedModel("I accept.", ACCEPT_JSON)
    result = call_scientist_with_retry(model, "SYSTEM", "USER")
    second = model.calls[1]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "I accept."
    assert second[3]["content"].startswith("Your previous response did not contain a JSON object")
    assert result.metadata.attempt_count == 2
    assert result.metadata.retry_count == 1
    assert result.metadata.last_error_code == "no_json"
    assert result.metadata.last_error_message == "no JSON object found in the output"


def test_correction_prompts_name_the_failure() -> None:
    bad_json = '{"action_type": "accept",}'
    bad_action = '{"action_type": "request_info"}'
    model = ScriptedModel(bad_json, bad_action, ACCEPT_JSON)
    result = call_scientist_with_retry(model, "S", "U", max_retries=2)
    third = model.calls[2]
    assert len(third) == 6
    assert third[3]["content"].startswith("Your previous response contained malformed JSON: ")
    assert "line 1, column" in third[3]["content"]
    assert "failed ScientistAction validation: questions: request_info needs" in third[5]["content"]
    assert "Fix the validation error" in third[5]["content"]
    assert third[4] == {"role": "assistant", "content": bad_action}
    assert result.metadata.attempt_count == 3
    assert result.metadata.last_error_code == "invalid_action"


def test_exhaustion_raises_the_last_error_after_max_retries_plus_one_calls() -> None:
    model = ScriptedModel("nothing", "[1]", '{"bad": ')
    with pytest.raises(ScientistOutputParseError) as info:
        call_scientist_with_retry(model, "S", "U", max_retries=2)
    assert len(model.calls) == 3
    assert info.value.code == "invalid_json"
    assert info.value.raw_text == '{"bad": '


def test_zero_retries_means_one_call() -> None:
    model = ScriptedModel("nothing", ACCEPT_JSON)
    with pytest.raises(ScientistOutputParseError) as info:
        call_scientist_with_retry(model, "S", "U", max_retries=0)
    assert info.value.code == "no_json"
    assert len(model.calls) == 1


def test_negative_max_retries_is_refused() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        call_scientist_with_retry(ScriptedModel(ACCEPT_JSON), "S", "U", max_retries=-1)


def test_a_generate_fn_that_mutates_its_input_cannot_corrupt_the_loop() -> None:
    model = ScriptedModel("oops", ACCEPT_JSON, vandal=True)
    result = call_scientist_with_retry(model, "SYSTEM", "USER")
    assert result.metadata.attempt_count == 2
    assert [m["role"] for m in model.calls[1]] == ["system", "user", "assistant", "user"]
    assert model.calls[1][0]["content"] == "SYSTEM"
