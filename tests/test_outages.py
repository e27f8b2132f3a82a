"""Which refused moves are a server's failure: an outage is left out of a results table and played
again by a resume, while a model's own failures are scored."""

from __future__ import annotations

import pytest

from replicalab.baselines.evaluation.metrics import server_failed, summarize
from replicalab.baselines.evaluation.runner import Grid, run_grid
from replicalab.baselines.policies.seats import BaselineScientist
from replicalab.digest import digest
from replicalab.models import EpisodeLog
from replicalab.outages import is_server_error, server_errors


@pytest.mark.parametrize(
    ("code", "message", "server"),
    [
        ("llm_connection_error", "cannot reach http://127.0.0.1:1/v1: refused", True),
        ("llm_timeout", "no answer within 120 s (after 3 retries)", True),
        ("llm_http_error", "HTTP 503: overloaded (after 3 retries)", True),
        ("llm_http_error", "HTTP 500: stub fault 500", True),
        ("llm_http_error", "HTTP 429: slow down", True),
        ("llm_http_error", "HTTP 400: context length exceeded", False),
        ("llm_http_error", "HTTP 401: bad key", False),
        ("llm_bad_response", "not a chat completion", False),
        ("llm_empty", "the completion has no choices", False),
        ("generate_error", "generate_fn raised LLMCallError: llm_timeout: no answer within 30 s", True),
        ("generate_error", "generate_fn raised LLMCallError: llm_http_error: HTTP 502: bad gateway", True),
        ("generate_error", "generate_fn raised LLMCallError: llm_http_error: HTTP 404: no model", False),
        ("generate_error", "generate_fn raised TimeoutError: no answer within 30 s", False),
        ("malformed_json", "HTTP 503", False),
    ],
)
def test_only_the_transport_failing_is_a_server_error(code: str, message: str, server: bool) -> None:
    assert is_server_error(code, message) is server


def _spoiled(log: EpisodeLog, message: str) -> EpisodeLog:
    """`log` with its first Scientist step refused with an `llm_http_error` of `message`."""
    steps = list(log.steps)
    first = next(i for i, step in enumerate(steps) if step.agent == "scientist")
    steps[first] = steps[first].model_copy(update={"error_code": "llm_http_error", "error_message": message})
    return log.model_copy(update={"steps": steps})


def test_the_table_leaves_out_episodes_a_server_failure_spoiled() -> None:
    logs = run_grid(Grid.of(["math_reasoning"], ["easy"], 3), BaselineScientist).logs
    down = [logs[0], _spoiled(logs[1], "HTTP 502: bad gateway"), _spoiled(logs[2], "HTTP 400: too long")]
    assert [server_errors(log) for log in down] == [0, 1, 0]
    assert digest(down[1]).server_errors == 1
    rows = summarize(down)
    assert rows[-1].episodes == 2 and server_failed(down) == 1
    assert rows[-1].score == summarize([logs[0], logs[2]])[-1].score
