"""A chat backend for any OpenAI-compatible server (vLLM, Ollama, llama.cpp's server, hosted APIs).

`ChatBackend.complete` sends one chat completion request and returns its text with what the
server reported about it (`Completion`), or raises `LLMCallError` with one of `LLM_ERROR_CODES`:

- `llm_http_error`: an error status, refused at once (400, 401, 404, ...) or still failing after
  the retries (408, 409, 429, 5xx);
- `llm_timeout` / `llm_connection_error`: no answer in `timeout_s`, or no connection, after the
  retries;
- `llm_bad_response`: a 200 whose body is not a chat completion (not JSON, or the wrong shape);
- `llm_empty`: a chat completion without a choice, or whose message has no content.

Retries are this module's own loop over a client built with `max_retries=0`, so every retry is
counted and every wait is known: the wait before retry n (from 0) is the server's Retry-After
when it sends one, else `backoff_s * 2**n` times a jitter drawn uniformly from [0.5, 1), and never
more than `max_backoff_s`. The jitter comes from the backend's own seeded generator; it moves
only wall-clock time, never what an episode logs.

The API key is read from `REPLICALAB_API_KEY`, else `OPENAI_API_KEY`; a local server needs none
and gets a placeholder. The `openai` package is the optional extra `replicalab[llm]`: this module
imports without it, and `ChatBackend` says how to install it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import ssl
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from replicalab.models import Contract

if TYPE_CHECKING:
    import openai

__all__ = [
    "API_KEY_VARIABLES",
    "INSTALL_HINT",
    "LLM_ERROR_CODES",
    "BackendConfig",
    "ChatBackend",
    "Completion",
    "LLMCallError",
    "LLMErrorCode",
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
API_KEY_VARIABLES = ("REPLICALAB_API_KEY", "OPENAI_API_KEY")  # read in this order
INSTALL_HINT = "the llm backend needs the openai package: pip install 'replicalab[llm]'"
_PLACEHOLDER_KEY = "EMPTY"  # what vLLM's docs send to a server started without --api-key
_RETRY_STATUSES = frozenset({408, 409, 429})  # and every 5xx: the statuses openai's client retries
_MAX_MESSAGE_CHARS = 300  # of a server's error text quoted in an error message
# The client's plain `post` sends the request as built and returns the body's bytes: the typed
# `chat.completions.create` would walk every message through its parameter types and parse a
# ChatCompletion, about 1 ms a call that buys nothing here (the body is validated below).
_CHAT_PATH = "/chat/completions"
# Requests go round-robin to this many async clients, each with its own connection pool: the
# pool scans all its connections at every request and response, so one pool for 64 requests in
# flight spent about a third of the client's time there.
_ASYNC_CLIENTS = 16

Messages = Sequence[Mapping[str, str]]


class BackendConfig(Contract):
    """Where to send chat requests and how to sample; everything but the API key."""

    base_url: str  # the server's OpenAI API root, e.g. http://localhost:8000/v1
    model: str = Field(min_length=1)  # the served model's name
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)  # None: the server's default
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1)  # of one completion
    extra_body: dict[str, JsonValue] = Field(default_factory=dict)  # server-specific arguments
    send_seed: bool = True  # give each request the sampling seed its caller derived
    timeout_s: float = Field(default=120.0, gt=0.0)  # of one HTTP request
    max_retries: int = Field(default=3, ge=0, le=20)  # of one completion, after its first try
    backoff_s: float = Field(default=0.5, ge=0.0)  # the first retry's wait, before jitter
    max_backoff_s: float = Field(default=30.0, ge=0.0)  # no wait is longer

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"must start with http:// or https://, got {value!r}")
        return value.rstrip("/")


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


class ChatBackend:
    """Chat completions from one server and model, async (`complete`) or blocking (`complete_sync`).

    Called with the messages alone (`backend(messages)`) it is a `GenerateFn`, the route of
    `LLMScientist` and `--generate-fn`: it returns the text or raises `LLMCallError`. The async
    clients (requests take them in turn) belong to the event loop that first used them; a call
    from another loop gets clients of its own. `aclose()` / `close()` release the connections.
    """

    def __init__(self, config: BackendConfig, *, api_key: str | None = None, jitter_seed: int = 0) -> None:
        try:
            import openai
        except ImportError:
            raise ImportError(INSTALL_HINT) from None
        self.config = config
        self._openai = openai
        self._api_key = api_key or _api_key_from_environment()
        self._jitter = np.random.default_rng(jitter_seed)
        self._async: tuple[asyncio.AbstractEventLoop, list[openai.AsyncOpenAI]] | None = None
        self._requests = itertools.count()  # picks the async client of a request
        self._tls: ssl.SSLContext | None = None  # shared by the async clients
        self._sync: openai.OpenAI | None = None

    def __call__(self, messages: Messages) -> str:
        return self.complete_sync(messages).text

    async def complete(self, messages: Messages, *, seed: int | None = None) -> Completion:
        request = self._request(messages, seed)
        client = self._async_client()
        started = time.perf_counter()
        for retry in range(self.config.max_retries + 1):
            try:
                body = await client.post(_CHAT_PATH, cast_to=bytes, body=request)
            except self._openai.APIError as error:
                await asyncio.sleep(self._wait_or_raise(error, retry, started))
                continue
            return self._completion(body, started, retry)
        raise AssertionError("unreachable: the last retry raises")  # pragma: no cover

    def complete_sync(self, messages: Messages, *, seed: int | None = None) -> Completion:
        """`complete` for a caller without an event loop; the same retries and error codes."""
        request = self._request(messages, seed)
        if self._sync is None:
            self._sync = self._openai.OpenAI(**self._client_arguments())
        started = time.perf_counter()
        for retry in range(self.config.max_retries + 1):
            try:
                body = self._sync.post(_CHAT_PATH, cast_to=bytes, body=request)
            except self._openai.APIError as error:
                time.sleep(self._wait_or_raise(error, retry, started))
                continue
            return self._completion(body, started, retry)
        raise AssertionError("unreachable: the last retry raises")  # pragma: no cover

    async def aclose(self) -> None:
        if self._async is not None:
            loop, clients = self._async
            self._async = None
            if loop is asyncio.get_running_loop():
                for client in clients:
                    await client.close()
        self.close()

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
            self._sync = None

    # ------------------------------------------------------------------ the parts

    def _client_arguments(self) -> dict[str, Any]:
        return {
            "base_url": self.config.base_url,
            "api_key": self._api_key,
            "timeout": self.config.timeout_s,
            "max_retries": 0,  # retries are this module's, so that each is counted
        }

    def _async_client(self) -> openai.AsyncOpenAI:
        """The running loop's clients in turn, each made on first use."""
        loop = asyncio.get_running_loop()
        if self._async is None or self._async[0] is not loop:
            self._async = (loop, [])
        clients = self._async[1]
        if len(clients) < _ASYNC_CLIENTS:
            if self._tls is None:  # loading the CA certificates takes ~50 ms: once, not per pool
                self._tls = ssl.create_default_context()
            pool = self._openai.DefaultAsyncHttpxClient(verify=self._tls)
            clients.append(self._openai.AsyncOpenAI(**self._client_arguments(), http_client=pool))
            return clients[-1]
        return clients[next(self._requests) % _ASYNC_CLIENTS]

    def _request(self, messages: Messages, seed: int | None) -> dict[str, Any]:
        config = self.config
        request: dict[str, Any] = {"model": config.model, "messages": [dict(m) for m in messages]}
        for name in ("temperature", "top_p", "max_tokens"):
            value = getattr(config, name)
            if value is not None:
                request[name] = value
        if seed is not None and config.send_seed:
            request["seed"] = seed
        request.update(config.extra_body)
        return request

    def _wait_or_raise(self, error: openai.APIError, retry: int, started: float) -> float:
        """How long to wait before the next try after `error`, or the `LLMCallError` it ends in."""
        openai = self._openai
        retry_after: float | None = None
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            code: LLMErrorCode = "llm_http_error"
            message = f"HTTP {status}: {_clip(str(error.message))}"
            retriable = status in _RETRY_STATUSES or status >= 500
            retry_after = _retry_after(error.response.headers)
        elif isinstance(error, openai.APITimeoutError):  # before APIConnectionError, its base
            code, message, retriable = "llm_timeout", f"no answer within {self.config.timeout_s:g} s", True
        elif isinstance(error, openai.APIConnectionError):
            code, retriable = "llm_connection_error", True
            message = f"cannot reach {self.config.base_url}: {_clip(str(error.__cause__ or error))}"
        else:  # APIResponseValidationError and whatever else the client finds wrong with a body
            code, message, retriable = "llm_bad_response", _clip(str(error)), False
        if not retriable or retry >= self.config.max_retries:
            if retry:
                message += f" (after {retry} {'retry' if retry == 1 else 'retries'})"
            raise LLMCallError(code, message, latency_s=time.perf_counter() - started, retries=retry)
        if retry_after is not None:
            return min(retry_after, self.config.max_backoff_s)
        backoff = self.config.backoff_s * 2.0**retry * float(self._jitter.uniform(0.5, 1.0))
        return min(backoff, self.config.max_backoff_s)

    def _completion(self, body: bytes, started: float, retries: int) -> Completion:
        """The text and usage of a 200's body, or the `LLMCallError` that says what is wrong."""
        latency = time.perf_counter() - started

        def failed(code: LLMErrorCode, message: str) -> LLMCallError:
            return LLMCallError(code, message, latency_s=latency, retries=retries)

        try:
            reply = _ChatReply.model_validate_json(body)
        except ValidationError as error:
            preview = _clip(body.decode("utf-8", "replace"))
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


def _api_key_from_environment() -> str:
    for name in API_KEY_VARIABLES:
        value = os.environ.get(name)
        if value:
            return value
    return _PLACEHOLDER_KEY


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


def _clip(text: str) -> str:
    """`text` short enough to quote, with what JSON cannot carry (lone surrogates) escaped, so
    an error message can always be logged."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[: _MAX_MESSAGE_CHARS - 1] + "…"
