"""The LLM Scientist's call: ask the injected model, parse, and feed parse errors back.

The model is injected as a `GenerateFn`, so this module makes no calls of its own. Each failed
parse is answered with a correction naming what went wrong (no JSON, malformed JSON, or the
fields that broke the contract), up to `max_retries` times.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import Field

from replicalab.agents.scientist_prompts import SCHEMA_REMINDER, format_scientist_observation
from replicalab.models import Contract, ScientistAction, ScientistObservation
from replicalab.parsing import ScientistOutputParseError, parse_scientist_output

GenerateFn = Callable[[list[dict[str, str]]], str]
"""The injected model: chat messages ({"role", "content"} dicts) in, raw completion text out."""


class RetryMetadata(Contract):
    """How a call went: how many model calls it took and why the last failed one failed."""

    attempt_count: int = Field(ge=1)  # model calls made; 1 = success on the first try
    retry_count: int = Field(ge=0)  # attempt_count - 1
    last_error_code: str | None = None  # code of the latest failed attempt, None if none failed
    last_error_message: str | None = None


class ScientistCallResult(Contract):
    """The validated action and how many attempts it took."""

    action: ScientistAction
    metadata: RetryMetadata


def call_scientist_with_retry(
    generate_fn: GenerateFn,
    system_prompt: str,
    observation: ScientistObservation | str,
    max_retries: int = 2,
) -> ScientistCallResult:
    """Ask the model for an action, feeding parse errors back; at most 1 + max_retries calls.

    `observation` may already be formatted. After the last failed attempt the last
    `ScientistOutputParseError` is raised; a `generate_fn` that returns a non-str raises TypeError.
    """
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    user = observation if isinstance(observation, str) else format_scientist_observation(observation)
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": user}]
    last_error: ScientistOutputParseError | None = None
    attempts = max_retries + 1
    for attempt in range(1, attempts + 1):
        raw_text = generate_fn([dict(message) for message in messages])
        try:
            action = parse_scientist_output(raw_text)
        except ScientistOutputParseError as error:
            last_error = error
            if attempt < attempts:
                messages.append({"role": "assistant", "content": raw_text})
                messages.append({"role": "user", "content": _build_correction_prompt(error)})
            continue
        metadata = RetryMetadata(
            attempt_count=attempt,
            retry_count=attempt - 1,
            last_error_code=None if last_error is None else last_error.code,
            last_error_message=None if last_error is None else last_error.message,
        )
        return ScientistCallResult(action=action, metadata=metadata)
    assert last_error is not None  # the loop runs at least once and returns on success
    raise last_error


def _build_correction_prompt(error: ScientistOutputParseError) -> str:
    if error.code == "no_json":
        head = "Your previous response did not contain a JSON object."
    elif error.code == "invalid_json":
        head = f"Your previous response contained malformed JSON: {error.message}."
    else:
        head = (
            "Your previous response was JSON but failed ScientistAction validation: "
            f"{error.message}. Fix the validation error."
        )
    return f"{head} Respond with exactly one JSON object and nothing else.\n{SCHEMA_REMINDER}"
