"""A model's turn: ask the injected model, parse, and feed parse errors back.

The model is injected as a `GenerateFn`, so this module makes no calls of its own. Each failed
parse is answered with a correction naming what went wrong (no JSON, malformed JSON, or the
fields that broke the contract), up to `max_retries` times. Both agents' LLM policies use it,
each with its own parser and schema reminder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pydantic import Field

from replicalab.models import Contract
from replicalab.parsing import OutputParseError

GenerateFn = Callable[[list[dict[str, str]]], str]
"""The injected model: chat messages ({"role", "content"} dicts) in, raw completion text out."""

A = TypeVar("A")


class RetryMetadata(Contract):
    """How a call went: how many model calls it took and why the last failed one failed."""

    attempt_count: int = Field(ge=1)  # model calls made; 1 = success on the first try
    retry_count: int = Field(ge=0)  # attempt_count - 1
    last_error_code: str | None = None  # code of the latest failed attempt, None if none failed
    last_error_message: str | None = None


def call_with_retry(
    generate_fn: GenerateFn,
    system_prompt: str,
    user_message: str,
    parse: Callable[[str], A],
    *,
    action_name: str,
    schema_reminder: str,
    max_retries: int = 2,
) -> tuple[A, RetryMetadata]:
    """The parsed action and how it went, in at most 1 + `max_retries` calls of `generate_fn`.

    `parse` raises its seat's `OutputParseError` on output it refuses; after the last failed
    attempt that error is raised. `action_name` and `schema_reminder` go into the corrections.
    """
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": user_message}]
    last_error: OutputParseError | None = None
    attempts = max_retries + 1
    for attempt in range(1, attempts + 1):
        raw_text = generate_fn([dict(message) for message in messages])
        try:
            action = parse(raw_text)
        except OutputParseError as error:
            last_error = error
            if attempt < attempts:
                messages.append({"role": "assistant", "content": raw_text})
                messages.append({"role": "user", "content": _correction(error, action_name, schema_reminder)})
            continue
        metadata = RetryMetadata(
            attempt_count=attempt,
            retry_count=attempt - 1,
            last_error_code=None if last_error is None else last_error.code,
            last_error_message=None if last_error is None else last_error.message,
        )
        return action, metadata
    assert last_error is not None  # the loop runs at least once and returns on success
    raise last_error


def _correction(error: OutputParseError, action_name: str, schema_reminder: str) -> str:
    if error.code == "no_json":
        head = "Your previous response did not contain a JSON object."
    elif error.code == "invalid_json":
        head = f"Your previous response contained malformed JSON: {error.message}."
    else:
        head = (
            f"Your previous response was JSON but failed {action_name} validation: "
            f"{error.message}. Fix the validation error."
        )
    return f"{head} Respond with exactly one JSON object and nothing else.\n{schema_reminder}"
