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
module imports without them, and `ChatBackend` says how to install them. What an answer means
(a completion or an error code) is read in `replicalab.baselines.llm.replies`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import Field, JsonValue, field_validator
from pydantic_core import to_json

from replicalab.baselines.llm.replies import (
    LLM_ERROR_CODES,
    Completion,
    Failure,
    LLMCallError,
    LLMErrorCode,
    clip,
    completion_of,
    status_failure,
)
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

API_KEY_VARIABLES = ("REPLICALAB_API_KEY", "OPENAI_API_KEY")  # read in this order
INSTALL_HINT = "the llm backend needs the openai and aiohttp packages: pip install 'replicalab[llm]'"
_PLACEHOLDER_KEY = "EMPTY"  # what vLLM's docs send to a server started without --api-key
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
        # pydantic's encoder writes a request of several kB of prompt (compact, UTF-8) in a
        # fifth of the time json.dumps takes, and every call in flight waits for the encoding.
        body = to_json(self._request(messages, seed))
        session = self._async_session()
        aiohttp = self._aiohttp
        started = time.perf_counter()
        for retry in range(self.config.max_retries + 1):
            try:
                async with session.post(self._url, data=body, headers=self._headers) as response:
                    status, reply = response.status, await response.read()
                    if 200 <= status < 300:
                        return completion_of(reply, started, retry)
                    failure = status_failure(status, reply, response.headers)
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
            return completion_of(body, started, retry)
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

    def _timeout(self) -> Failure:
        return Failure("llm_timeout", f"no answer within {self.config.timeout_s:g} s", retriable=True)

    def _unreachable(self, cause: BaseException) -> Failure:
        message = f"cannot reach {self.config.base_url}: {clip(str(cause) or type(cause).__name__)}"
        return Failure("llm_connection_error", message, retriable=True)

    def _openai_failure(self, error: openai.APIError) -> Failure:
        """What the sync client's `error` means, in this module's terms."""
        openai = self._openai
        if isinstance(error, openai.APIStatusError):
            return status_failure(error.status_code, error.response.content, error.response.headers)
        if isinstance(error, openai.APITimeoutError):  # before APIConnectionError, its base
            return self._timeout()
        if isinstance(error, openai.APIConnectionError):
            return self._unreachable(error.__cause__ or error)
        # APIResponseValidationError and whatever else the client finds wrong with a body
        return Failure("llm_bad_response", clip(str(error)), retriable=False)

    def _wait_or_raise(self, failure: Failure, retry: int, started: float) -> float:
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


def _api_key_from_environment() -> str:
    for name in API_KEY_VARIABLES:
        value = os.environ.get(name)
        if value:
            return value
    return _PLACEHOLDER_KEY
