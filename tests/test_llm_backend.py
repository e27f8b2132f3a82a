"""The chat backend against a real HTTP server on the loopback address: every fault the server
can throw ends in a retry or in an `LLMCallError` with its own code, never in another exception."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("openai", reason="the chat backend needs the [llm] extra: pip install 'replicalab[llm]'")

from benchmarks.openai_stub import Reply, StubServer, completion, fault, malformed
from replicalab.baselines.llm import backend as llm_backend
from replicalab.baselines.llm.backend import LLM_ERROR_CODES, BackendConfig, ChatBackend, LLMCallError

MESSAGES = [{"role": "system", "content": "  be brief  "}, {"role": "user", "content": "hello\n"}]


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The backend's waits between retries, recorded instead of slept."""
    recorded: list[float] = []

    async def sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(llm_backend.asyncio, "sleep", sleep)
    return recorded


def backend(stub: StubServer, **config: Any) -> ChatBackend:
    return ChatBackend(
        BackendConfig(**{"base_url": stub.base_url, "model": "stub-model", "backoff_s": 0.01, **config})
    )


def complete(chat: ChatBackend, seed: int | None = None) -> llm_backend.Completion:
    async def run() -> llm_backend.Completion:
        try:
            return await chat.complete(MESSAGES, seed=seed)
        finally:
            await chat.aclose()

    return asyncio.run(run())


def failure(chat: ChatBackend) -> LLMCallError:
    with pytest.raises(LLMCallError) as caught:
        complete(chat)
    return caught.value


def sequence(*replies: Reply) -> Any:
    """A script answering with `replies` in order, then with the last one."""
    queue = list(replies)

    def script(request: dict[str, Any]) -> Reply:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return script


def test_a_completion_comes_back_exactly_with_its_usage(stub: StubServer) -> None:
    stub.script = lambda request: completion('  {"action_type": "accept"}\n', usage=(120, 9))
    result = complete(
        backend(stub, temperature=0.7, top_p=0.9, max_tokens=64, extra_body={"top_k": 20}), seed=5
    )
    assert result.text == '  {"action_type": "accept"}\n'  # never stripped
    assert (result.prompt_tokens, result.completion_tokens, result.retries) == (120, 9, 0)
    (request,) = stub.requests
    assert request["messages"] == MESSAGES  # sent exactly
    assert request["model"] == "stub-model"
    assert (request["temperature"], request["top_p"], request["max_tokens"]) == (0.7, 0.9, 64)
    assert (request["seed"], request["top_k"]) == (5, 20)


def test_unset_sampling_arguments_are_left_to_the_server(stub: StubServer) -> None:
    complete(backend(stub, send_seed=False), seed=5)
    (request,) = stub.requests
    assert set(request) == {"model", "messages"}


def test_a_server_without_usage_reports_none(stub: StubServer) -> None:
    stub.script = lambda request: completion("ok", usage=None)
    result = complete(backend(stub))
    assert (result.prompt_tokens, result.completion_tokens) == (None, None)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 408])
def test_a_passing_fault_is_retried_and_counted(stub: StubServer, waits: list[float], status: int) -> None:
    stub.script = sequence(fault(status), fault(status), completion("fine"))
    result = complete(backend(stub))
    assert result.text == "fine" and result.retries == 2
    assert len(stub.requests) == 3 and len(waits) == 2


def test_retry_after_is_honoured_and_capped(stub: StubServer, waits: list[float]) -> None:
    stub.script = sequence(fault(429, retry_after_s=1.5), fault(429, retry_after_s=999), completion("ok"))
    complete(backend(stub, max_backoff_s=20.0))
    assert waits == [1.5, 20.0]


def test_backoff_doubles_with_jitter_and_is_capped(stub: StubServer, waits: list[float]) -> None:
    stub.script = lambda request: fault(503)
    error = failure(backend(stub, max_retries=4, backoff_s=1.0, max_backoff_s=5.0))
    assert error.retries == 4
    assert 0.5 <= waits[0] < 1.0 and 1.0 <= waits[1] < 2.0 and 2.0 <= waits[2] < 4.0
    assert 2.5 <= waits[3] <= 5.0  # 8 × jitter, capped at 5


def test_a_fault_that_persists_ends_in_llm_http_error(stub: StubServer, waits: list[float]) -> None:
    stub.script = lambda request: fault(500)
    error = failure(backend(stub, max_retries=2))
    assert error.code == "llm_http_error" and error.retries == 2
    assert error.message.startswith("HTTP 500") and error.message.endswith("(after 2 retries)")
    assert len(stub.requests) == 3


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_a_refusal_is_not_retried(stub: StubServer, waits: list[float], status: int) -> None:
    stub.script = lambda request: fault(status)
    error = failure(backend(stub))
    assert error.code == "llm_http_error" and error.message.startswith(f"HTTP {status}")
    assert error.retries == 0 and len(stub.requests) == 1 and waits == []


def test_a_slow_server_ends_in_llm_timeout_after_the_retries(stub: StubServer) -> None:
    stub.script = lambda request: completion("late", delay_s=0.5)
    error = failure(backend(stub, timeout_s=0.05, max_retries=1, backoff_s=0.0))
    assert error.code == "llm_timeout" and error.retries == 1


def test_no_server_ends_in_llm_connection_error() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    chat = ChatBackend(
        BackendConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1, backoff_s=0)
    )
    error = failure(chat)
    assert error.code == "llm_connection_error" and error.retries == 1
    assert f"127.0.0.1:{port}" in error.message


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (malformed(), "llm_bad_response"),
        (Reply(body=b"<html>502 Bad Gateway</html>"), "llm_bad_response"),
        (Reply(body=b'{"object": "error"}'), "llm_bad_response"),
        (Reply(body=b'{"choices": [{"message": {"content": 7}}]}'), "llm_bad_response"),
        (completion("x", choices=False), "llm_empty"),
        (completion(None), "llm_empty"),
    ],
)
def test_a_bad_body_has_its_own_code_and_is_not_retried(stub: StubServer, reply: Reply, code: str) -> None:
    stub.script = lambda request: reply
    error = failure(backend(stub))
    assert error.code == code and error.retries == 0 and len(stub.requests) == 1


_BODIES = st.one_of(
    st.binary(max_size=300),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(
                st.sampled_from(["choices", "message", "content", "usage", "x"]), children, max_size=3
            )
        ),
        max_leaves=12,
    ).map(lambda value: json.dumps(value).encode()),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_BODIES, status=st.sampled_from([200, 200, 200, 400, 418, 429, 500, 503]))
def test_whatever_the_server_sends_the_call_answers_or_fails_with_a_code(
    stub: StubServer, body: bytes, status: int
) -> None:
    stub.script = lambda request: Reply(status=status, body=body, headers={"Retry-After": "0"})
    try:
        result = complete(backend(stub, max_retries=1))
    except LLMCallError as error:
        assert error.code in LLM_ERROR_CODES
        json.dumps(error.message)  # always loggable
    else:
        assert status == 200 and isinstance(result.text, str)


def test_the_sync_route_is_a_generate_fn_with_the_same_codes(stub: StubServer) -> None:
    chat = backend(stub)
    stub.script = sequence(fault(503, retry_after_s=0), completion("text"))
    assert chat(MESSAGES) == "text"
    assert chat.complete_sync(MESSAGES).retries == 0
    stub.script = lambda request: completion("x", choices=False)
    with pytest.raises(LLMCallError) as caught:
        chat(MESSAGES)
    assert caught.value.code == "llm_empty"
    chat.close()


@pytest.mark.parametrize(
    ("environment", "key"),
    [
        ({}, "EMPTY"),
        ({"OPENAI_API_KEY": "sk-openai"}, "sk-openai"),
        ({"OPENAI_API_KEY": "sk-openai", "REPLICALAB_API_KEY": "sk-lab"}, "sk-lab"),
    ],
)
def test_the_api_key_comes_from_the_environment(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], key: str
) -> None:
    for name in llm_backend.API_KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    complete(backend(stub))
    assert stub.headers[0]["authorization"] == f"Bearer {key}"


def test_one_backend_serves_successive_event_loops(stub: StubServer) -> None:
    chat = backend(stub)
    assert complete(chat).text == complete(chat).text == '{"action_type": "accept"}'


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("base_url", "localhost:8000"),
        ("model", ""),
        ("temperature", 3.0),
        ("max_retries", -1),
        ("timeout_s", 0),
    ],
)
def test_a_bad_config_names_its_field(field: str, value: object) -> None:
    arguments: dict[str, Any] = {"base_url": "http://localhost:8000/v1", "model": "m", field: value}
    with pytest.raises(ValueError, match=field):
        BackendConfig(**arguments)


def test_without_openai_the_backend_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "openai", None)
    with pytest.raises(ImportError, match=r"pip install 'replicalab\[llm\]'"):
        ChatBackend(BackendConfig(base_url="http://localhost:8000/v1", model="m"))
