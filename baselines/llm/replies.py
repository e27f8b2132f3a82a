"""How a chat server's answers are read, whichever client received them: a 200's body as a
`Completion`, or a failure as one of `LLM_ERROR_CODES`, retriable or not (408, 409, 429 and
every 5xx are retried, after the server's Retry-After when it sends one).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError

from replicalab.outages import retried_status

__all__ = [
    "LLM_ERROR_CODES",
    "Completion",
    "Failure",
    "LLMCallError",
    "LLMErrorCode",
    "clip",
    "completion_of",
    "status_failure",
]

LLMErrorCode = Literal[
    "llm_http_error", "llm_timeout", "llm_connection_error", "llm_bad_response", "llm_empty"
]
LLM_ERROR_CODES: tuple[LLMErrorCode, ...] = (
    "llm_http_error",
    "llm_timeout",
    "llm_connection_error",
    "llm_bad_response",
    "llm_empty",
)
_MAX_MESSAGE_CHARS = 300  # of a server's error text quoted in an error message


@dataclass(frozen=True)
class Completion:
    """One answered request: the text, and what the server and the clock said about it."""

    text: str
    prompt_tokens: int | None  # None when the server reports no usage
    completion_tokens: int | None
    latency_s: float  # from the first request to the answer, retries and waits included
    retries: int  # requests made after the first


class LLMCallError(Exception):
    """A completion that could not be had; `code` is one of `LLM_ERROR_CODES`."""

    def __init__(self, code: LLMErrorCode, message: str, *, latency_s: float = 0.0, retries: int = 0) -> None:
        super().__init__(f"{code}: {message}")
        self.code: LLMErrorCode = code
        self.message = message
        self.latency_s = latency_s
        self.retries = retries


def completion_of(body: bytes, started: float, retries: int) -> Completion:
    """The text and usage of a 200's body, or the `LLMCallError` that says what is wrong."""
    latency = time.perf_counter() - started

    def failed(code: LLMErrorCode, message: str) -> LLMCallError:
        return LLMCallError(code, message, latency_s=latency, retries=retries)

    try:
        reply = _ChatReply.model_validate_json(body)
    except ValidationError as error:
        preview = clip(body.decode("utf-8", "replace"))
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise failed(
            "llm_bad_response", f"not a chat completion ({where}: {first['msg']}): {preview}"
        ) from None
    if not reply.choices:
        raise failed("llm_empty", "the completion has no choices")
    text = reply.choices[0].message.content
    if text is None:
        raise failed("llm_empty", "the completion's message has no content")
    usage = reply.usage
    return Completion(
        text=text,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        latency_s=latency,
        retries=retries,
    )


class Failure(NamedTuple):
    """One failed request, whichever client made it: what it ends in, or whether to retry."""

    code: LLMErrorCode
    message: str
    retriable: bool
    retry_after: float | None = None  # the server's wait, in seconds, when it named one


def status_failure(status: int, body: bytes, headers: Mapping[str, str]) -> Failure:
    """An error status: 408, 409, 429 and every 5xx are retried (after Retry-After when the
    server sends one); the rest are refusals. The message quotes the server's error text."""
    retriable = retried_status(status)
    message = f"HTTP {status}: {clip(_error_text(body))}"
    return Failure("llm_http_error", message, retriable, _retry_after(headers))


def _error_text(body: bytes) -> str:
    """The `error.message` of an OpenAI-style error body, else the body as text."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(message, str):
            return message
    return body.decode("utf-8", "replace")


class _Reply(BaseModel):
    """The parts of a chat completion this module reads: a server may send more (ignored), and
    the text is kept exactly as sent (no stripping, unlike a `Contract`)."""

    model_config = ConfigDict(extra="ignore")


class _Message(_Reply):
    content: str | None = None


class _Choice(_Reply):
    message: _Message


class _Usage(_Reply):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class _ChatReply(_Reply):
    choices: list[_Choice]
    usage: _Usage | None = None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """The server's Retry-After in seconds (`retry-after-ms` first, as OpenAI sends it), or None
    when it sends none or an HTTP date."""
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                seconds = float(value) * scale
            except ValueError:
                continue
            if seconds >= 0:
                return seconds
    return None


def clip(text: str) -> str:
    """`text` short enough to quote, with what JSON cannot carry (lone surrogates) escaped, so
    an error message can always be logged."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[: _MAX_MESSAGE_CHARS - 1] + "…"
