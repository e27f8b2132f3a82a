"""A model's turn: ask the injected model, parse, and feed parse errors back.

The model is injected as a `GenerateFn` (`run_turn`), or answers a `RetryTurn` the caller
advances itself (a served model, awaited), so this module makes no calls of its own. Each failed
parse is answered with a correction naming what went wrong (no JSON, malformed JSON, or the
fields that broke the contract), up to `max_retries` times. Both agents' LLM policies use it,
each with its own parser and schema reminder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from pydantic import Field

from replicalab.models import Contract
from replicalab.parsing import OutputParseError

GenerateFn = Callable[[list[dict[str, str]]], str]
"""The injected model: chat messages ({"role", "content"} dicts) in, raw completion text out."""

A = TypeVar("A")
A_co = TypeVar("A_co", covariant=True)  # what a turn parses to


class RetryMetadata(Contract):
    """How a call went: how many model calls it took and why the last failed one failed."""

    attempt_count: int = Field(ge=1)  # model calls made; 1 = success on the first try
    retry_count: int = Field(ge=0)  # attempt_count - 1
    last_error_code: str | None = None  # code of the latest failed attempt, None if none failed
    last_error_message: str | None = None


class RetryTurn(Generic[A_co]):
    """One model turn as a state machine that makes no call itself: `request` is the messages
    to send the model next (None once the turn is over), `answer(text)` hands it the reply, and
    `result()` is the parsed action and how it went. A blocking caller (`run_turn`) and
    an awaiting one (a served chat policy) advance the same turn, so the loop is written once.

    `parse` raises its seat's `OutputParseError` on output it refuses; each refusal is answered
    with a correction naming what went wrong, up to `max_retries` times. `action_name` and
    `schema_reminder` go into the corrections.
    """

    def __init__(
        self,
        system_prompt: str,
        user_message: str,
        parse: Callable[[str], A_co],
        *,
        action_name: str,
        schema_reminder: str,
        max_retries: int = 2,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self._messages = [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": user_message},
        ]
        self._parse = parse
        self._action_name = action_name
        self._schema_reminder = schema_reminder
        self._attempts = max_retries + 1
        self.calls = 0  # replies answered so far
        self.replies: list[str] = []
        self._action: A_co | None = None
        self._done = False
        self._last_error: OutputParseError | None = None

    @property
    def request(self) -> list[dict[str, str]] | None:
        """A copy of the messages to send next, or None once the turn is over."""
        if self._done:
            return None
        return [dict(message) for message in self._messages]

    def answer(self, raw_text: str) -> None:
        """The model's reply to `request`; a non-str raises TypeError (the parser's)."""
        if self._done:
            raise RuntimeError("answer: the turn is over")
        self.calls += 1
        self.replies.append(raw_text)
        try:
            self._action = self._parse(raw_text)
        except OutputParseError as error:
            self._last_error = error
            if self.calls < self._attempts:
                correction = _correction(error, self._action_name, self._schema_reminder)
                self._messages.append({"role": "assistant", "content": raw_text})
                self._messages.append({"role": "user", "content": correction})
            else:
                self._done = True
            return
        self._done = True

    def parsed(self) -> A_co:
        """The parsed action; the last `OutputParseError` when every attempt failed to parse.
        (`result` adds how it went, which a caller that counts the calls itself need not build.)"""
        if not self._done:
            raise RuntimeError("the turn still needs a reply")
        if self._action is None:
            assert self._last_error is not None  # a turn over without an action ended in one
            raise self._last_error
        return self._action

    def result(self) -> tuple[A_co, RetryMetadata]:
        """The parsed action and how it went; the last `OutputParseError` when every
        attempt failed to parse."""
        action = self.parsed()
        error = self._last_error
        metadata = RetryMetadata(
            attempt_count=self.calls,
            retry_count=self.calls - 1,
            last_error_code=None if error is None else error.code,
            last_error_message=None if error is None else error.message,
        )
        return action, metadata


def run_turn(turn: RetryTurn[A], generate_fn: GenerateFn) -> tuple[A, RetryMetadata]:
    """`turn` advanced by a blocking model to its end: the parsed action and how it went, in at
    most 1 + its `max_retries` calls of `generate_fn`; after the last failed attempt the last
    `OutputParseError` is raised."""
    while (messages := turn.request) is not None:
        turn.answer(generate_fn(messages))
    return turn.result()


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
