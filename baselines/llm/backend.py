"""A chat backend for any OpenAI-compatible server (vLLM, Ollama, llama.cpp's server, hosted APIs).

`ChatBackend.complete` sends one chat completion request and returns its text with what the
server reported about it (`Completion`), or raises `LLMCallError` with one of `LLM_ERROR_CODES`:

- `llm_http_error`: an error status, refused at once (400, 401, 404, ...) or still failing after
  the retries (408, 409, 429, 5xx);
- `llm_timeout` / `llm_connection_error`: no answer in `timeout_s`, or no connection, after the
  retries;
- `llm_bad_response`: a 200 whose body is not a chat completion (not JSON, or the wrong shape);
- `llm_empty`: a chat completion without a choice, or whose message has no content.

Requests go out on aiohttp, one connection pool per event loop with no cap on connections:
its cost per request stays flat from 1 to hundreds of requests in flight, where the `openai`
package's httpx transport spends more per request the more are open (`benchmarks.bench_llm`
measures both). The blocking route (`complete_sync`, one request at a time) uses the `openai`
package's client. Both routes read the same statuses, Retry-After headers and failures into the
same codes.

Retries are this module's own loop (the `openai` client is built with `max_retries=0`), so every
retry is counted and every wait is known: the wait before retry n (from 0) is the server's Retry-After
when it sends one, else `backoff_s * 2**n` times a jitter drawn uniformly from [0.5, 1), and never
more than `max_backoff_s`. The jitter comes from the backend's own seeded generator; it moves
only wall-clock time, never what an episode logs.

The API key is read from `REPLICALAB_API_KEY`, else `OPENAI_API_KEY`; a local server needs none
and gets a placeholder. `openai` and `aiohttp` are the optional extra `replicalab[llm]`: this
module imports without them, and `ChatBackend` says how to install them.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from replicalab.models import Contract

if TYPE_CHECKING:
    import aiohttp
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
    "ServerFailing",
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
INSTALL_HINT = "the llm backend needs the openai and aiohttp packages: pip install 'replicalab[llm]'"
_PLACEHOLDER_KEY = "EMPTY"  # what vLLM's docs send to a server started without --api-key
_RETRY_STATUSES = frozenset({408, 409, 429})  # and every 5xx: the statuses openai's client retries
_MAX_MESSAGE_CHARS = 300  # of a server's error text quoted in an error message
# The sync client's plain `post` sends the request as built and returns the body's bytes: the
# typed `chat.completions.create` would walk every message through its parameter types and parse
# a ChatCompletion, about 1 ms a call that buys nothing here (the body is validated below).
_CHAT_PATH = "/chat/completions"

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
    max_failures: int | None = Field(default=None, ge=1)  # failed calls in a row that stop a run

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


class ServerFailing(RuntimeError):
    """`max_failures` calls in a row failed: the server is down or refuses everything, so a run
    stops here rather than play on with every model move refused."""


class ChatBackend:
    """Chat completions from one server and model, async (`complete`) or blocking (`complete_sync`).

    Called with the messages alone (`backend(messages)`) it is a `GenerateFn`, the route of
    `LLMScientist` and `--generate-fn`: it returns the text or raises `LLMCallError`. The async
    connection pool belongs to the event loop that first used it; a call from another loop gets
    a pool of its own. `aclose()` / `close()` release the connections. A backend pickles as its
    config, key and jitter generator, so worker processes can each open their own connections.
    """

    def __init__(self, config: BackendConfig, *, api_key: str | None = None, jitter_seed: int = 0) -> None:
        try:
            import aiohttp
            import openai
        except ImportError:
            raise ImportError(INSTALL_HINT) from None
        self.config = config
        self._openai = openai
        self._aiohttp = aiohttp
        self._api_key = api_key or _api_key_from_environment()
        self._jitter = np.random.default_rng(jitter_seed)
        self._url = config.base_url + _CHAT_PATH
        self._headers = {
            "Authorization": f"Bearer {self._api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        self._session: tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession] | None = None
        self._sync: openai.OpenAI | None = None
        self._failures_in_a_row = 0

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config, "api_key": self._api_key, "jitter": self._jitter}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"], api_key=state["api_key"])  # type: ignore[misc]
        self._jitter = state["jitter"]

    def __call__(self, messages: Messages) -> str:
        return self.complete_sync(messages).text

    async def complete(self, messages: Messages, *, seed: int | None = None) -> Completion:
        """One completion; `ServerFailing` instead of the `max_failures`-th failure in a row."""
        try:
            completion = await self._complete(messages, seed)
        except LLMCallError as error:
            self._failed(error)
            raise
        self._failures_in_a_row = 0
        return completion

    def complete_sync(self, messages: Messages, *, seed: int | None = None) -> Completion:
        """`complete` for a caller without an event loop; the same retries and error codes."""
        try:
            completion = self._complete_sync(messages, seed)
        except LLMCallError as error:
            self._failed(error)
            raise
        self._failures_in_a_row = 0
        return completion

    def _failed(self, error: LLMCallError) -> None:
        self._failures_in_a_row += 1
        limit = self.config.max_failures
        if limit is not None and self._failures_in_a_row >= limit:
            raise ServerFailing(
                f"{limit} model calls in a row failed at {self.config.base_url}; the last: {error}"
            ) from error

    async def _complete(self, messages: Messages, seed: int | None) -> Completion:
        body = json.dumps(self._request(messages, seed)).encode("utf-8")
        session = self._async_session()
        aiohttp = self._aiohttp
        started = time.perf_counter()
        for retry in range(self.config.max_retries + 1):
            try:
                async with session.post(self._url, data=body, headers=self._headers) as response:
                    status, reply = response.status, await response.read()
                    if 200 <= status < 300:
                        return self._completion(reply, started, retry)
                    failure = _status_failure(status, reply, response.headers)
            except asyncio.TimeoutError:  # aiohttp's own timeouts are TimeoutErrors too
                failure = self._timeout()
            except aiohttp.ClientError as error:
                failure = self._unreachable(error)
            await asyncio.sleep(self._wait_or_raise(failure, retry, started))
        raise AssertionError("unreachable: the last retry raises")  # pragma: no cover

    def _complete_sync(self, messages: Messages, seed: int | None) -> Completion:
        request = self._request(messages, seed)
        if self._sync is None:
            self._sync = self._openai.OpenAI(
                base_url=self.config.base_url,
                api_key=self._api_key,
                timeout=self.config.timeout_s,
                max_retries=0,  # retries are this module's, so that each is counted
            )
        started = time.perf_counter()
        for retry in range(self.config.max_retries + 1):
            try:
                body = self._sync.post(_CHAT_PATH, cast_to=bytes, body=request)
            except self._openai.APIError as error:
                time.sleep(self._wait_or_raise(self._openai_failure(error), retry, started))
                continue
            return self._completion(body, started, retry)
        raise AssertionError("unreachable: the last retry raises")  # pragma: no cover

    async def aclose(self) -> None:
        if self._session is not None:
            loop, session = self._session
            self._session = None
            if loop is asyncio.get_running_loop():
                await session.close()
        self.close()

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
            self._sync = None

    # ------------------------------------------------------------------ the parts

    def _async_session(self) -> aiohttp.ClientSession:
        """The running loop's connection pool, made on first use."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._session[0] is not loop:
            aiohttp = self._aiohttp
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0),  # as many connections as requests in flight
                timeout=aiohttp.ClientTimeout(total=self.config.timeout_s),
            )
            self._session = (loop, session)
        return self._session[1]

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

    def _timeout(self) -> _Failure:
        return _Failure("llm_timeout", f"no answer within {self.config.timeout_s:g} s", retriable=True)

    def _unreachable(self, cause: BaseException) -> _Failure:
        message = f"cannot reach {self.config.base_url}: {_clip(str(cause) or type(cause).__name__)}"
        return _Failure("llm_connection_error", message, retriable=True)

    def _openai_failure(self, error: openai.APIError) -> _Failure:
        """What the sync client's `error` means, in this module's terms."""
        openai = self._openai
        if isinstance(error, openai.APIStatusError):
            return _status_failure(error.status_code, error.response.content, error.response.headers)
        if isinstance(error, openai.APITimeoutError):  # before APIConnectionError, its base
            return self._timeout()
        if isinstance(error, openai.APIConnectionError):
            return self._unreachable(error.__cause__ or error)
        # APIResponseValidationError and whatever else the client finds wrong with a body
        return _Failure("llm_bad_response", _clip(str(error)), retriable=False)

    def _wait_or_raise(self, failure: _Failure, retry: int, started: float) -> float:
        """How long to wait before the next try after `failure`, or the `LLMCallError` it ends in."""
        if not failure.retriable or retry >= self.config.max_retries:
            message = failure.message
            if retry:
                message += f" (after {retry} {'retry' if retry == 1 else 'retries'})"
            raise LLMCallError(failure.code, message, latency_s=time.perf_counter() - started, retries=retry)
        if failure.retry_after is not None:
            return min(failure.retry_after, self.config.max_backoff_s)
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


class _Failure(NamedTuple):
    """One failed request, whichever client made it: what it ends in, or whether to retry."""

    code: LLMErrorCode
    message: str
    retriable: bool
    retry_after: float | None = None  # the server's wait, in seconds, when it named one


def _status_failure(status: int, body: bytes, headers: Mapping[str, str]) -> _Failure:
    """An error status: 408, 409, 429 and every 5xx are retried (after Retry-After when the
    server sends one); the rest are refusals. The message quotes the server's error text."""
    retriable = status in _RETRY_STATUSES or status >= 500
    message = f"HTTP {status}: {_clip(_error_text(body))}"
    return _Failure("llm_http_error", message, retriable, _retry_after(headers))


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
