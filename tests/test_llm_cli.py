"""`replicalab evaluate -s llm --base-url URL --model NAME` end to end against a loopback server:
the table, the usage line and files, groups, export, resume, faults, and the options' checks."""

from __future__ import annotations

import itertools
import json
import re
import shlex
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("openai", reason="the chat backend needs the [llm] extra: pip install 'replicalab[llm]'")

from benchmarks.openai_stub import Reply, StubServer, fault, scripted_scientist
from replicalab.baselines.cli import app
from replicalab.baselines.cli.errors import PARTIAL
from replicalab.baselines.evaluation.run_files import read_summary
from replicalab.models import EpisodeLog
from tests.docs_pages import page

CELLS = ["-t", "math_reasoning", "-d", "easy", "--seeds", "2"]


def evaluate(stub: StubServer, *args: str) -> Any:
    command = ["evaluate", *CELLS, "-s", "llm", "--base-url", stub.base_url, "--model", "stub", *args]
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, command)


def test_a_served_model_plays_a_grid_from_the_command_line(stub: StubServer, tmp_path: Path) -> None:
    out, turns = tmp_path / "llm.jsonl", tmp_path / "turns.jsonl"
    result = evaluate(
        stub, "--concurrency", "4", "--group-size", "3", "--temperature", "0.9", "--out", str(out),
        "--export-turns", str(turns), "--extra-body", '{"top_k": 5}',
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "1 template × 1 difficulty × 2 seeds × 3 rollouts = 6 episodes" in result.stdout
    assert "model usage: 12 calls, 0 retried requests, 132 prompt + 84 completion tokens" in result.stdout
    assert f"logs: {out} (6 episodes, 0 resumed)" in result.stdout
    assert f"usage: {tmp_path / 'llm.usage.jsonl'}" in result.stdout
    logs = [EpisodeLog.model_validate_json(line) for line in out.read_bytes().splitlines()]
    assert [log.episode_id for log in logs][:3] == [
        f"math_reasoning-test-easy-0/llm/grounded/{k}" for k in range(3)
    ]
    assert all(log.group_id == "math_reasoning-test-easy-0/llm/grounded" for log in logs[:3])
    assert len(turns.read_text().splitlines()) == 12
    assert {(log.provenance.policy, log.provenance.model) for log in logs if log.provenance} == {
        ("llm", "stub")
    }
    assert {(r["temperature"], r["top_k"]) for r in stub.requests} == {(0.9, 5)}
    replayed = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["replay", str(out), "math_reasoning-test-easy-1/llm/grounded/2"]
    )
    assert replayed.exit_code == 0, replayed.output


def test_jobs_with_concurrency_write_the_bytes_of_one_process(stub: StubServer, tmp_path: Path) -> None:
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    for out, args in ((one, ["--concurrency", "6"]), (two, ["--jobs", "2", "--concurrency", "3"])):
        result = evaluate(stub, "--group-size", "3", "--no-oracle", "--out", str(out), *args)
        assert result.exit_code == 0, result.output
        assert "model usage: 12 calls, 0 retried requests" in result.stdout
    assert two.read_bytes() == one.read_bytes()


def rate_limited_then_down(request: dict[str, Any]) -> Reply:
    """Every first call of a turn is rate limited once; round 2 is never answered."""
    if "Round 2 of" in request["messages"][1]["content"]:
        return fault(500, retry_after_s=0)
    rate_limited_then_down.calls += 1  # type: ignore[attr-defined]
    if rate_limited_then_down.calls % 2:  # type: ignore[attr-defined]
        return fault(429, retry_after_s=0)
    return scripted_scientist(request)


def test_faults_are_counted_and_the_run_finishes(stub: StubServer, tmp_path: Path) -> None:
    rate_limited_then_down.calls = 0  # type: ignore[attr-defined]
    stub.script = rate_limited_then_down
    out = tmp_path / "llm.jsonl"
    result = evaluate(stub, "--http-retries", "1", "--max-rounds", "3", "--out", str(out), "--allow-partial")
    assert result.exit_code == 0, result.output
    assert "failed: llm_http_error 2" in result.stdout  # round 2 of each episode
    assert "llm_generate_errors 2" in result.stdout
    usage = [json.loads(line) for line in (tmp_path / "llm.usage.jsonl").read_text().splitlines()]
    assert [u["failed_calls"] for u in usage] == [{"llm_http_error": 1}] * 2
    assert all(u["retries"] == 3 for u in usage)  # two 429s and the 500's one retry
    replayed = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["replay", str(out), "0"])
    assert "refused: llm_http_error" in replayed.stdout


def test_resume_finishes_a_run(stub: StubServer, tmp_path: Path) -> None:
    out = tmp_path / "llm.jsonl"
    assert evaluate(stub, "--group-size", "2", "--out", str(out)).exit_code == 0
    clean = out.read_bytes()
    out.write_bytes(clean[: len(clean) * 2 // 3])
    result = evaluate(stub, "--group-size", "2", "--out", str(out), "--resume")
    assert result.exit_code == 0, result.output
    assert "(4 episodes, 2 resumed)" in result.stdout and out.read_bytes() == clean


def down_after(answered: int) -> Any:
    """The scripted Scientist for the first `answered` calls, then a server answering 503."""
    calls = itertools.count()
    return lambda request: scripted_scientist(request) if next(calls) < answered else fault(503)


def test_a_server_outage_is_left_out_of_the_table_and_resume_plays_it_again(
    stub: StubServer, tmp_path: Path
) -> None:
    clean, out = tmp_path / "clean.jsonl", tmp_path / "llm.jsonl"
    args = ("--no-oracle", "--max-rounds", "3", "--http-retries", "0")
    assert evaluate(stub, *args, "--out", str(clean)).exit_code == 0
    stub.script = down_after(3)  # the check, the first episode's two calls; then down
    result = evaluate(stub, *args, "--out", str(out))
    assert result.exit_code == PARTIAL, result.output  # documented in docs/command-line.md
    assert f"exit code {PARTIAL}" in page("command-line.md")
    assert "partial run: 1 of 2 episodes lost to server errors" in result.stderr
    spoiled = EpisodeLog.model_validate_json(out.read_bytes().splitlines()[1])
    assert {s.error_code for s in spoiled.steps if s.agent == "scientist"} == {"llm_http_error"}
    assert re.search(r"overall\s*│\s*1\s*│", result.stdout), result.stdout  # one episode scored
    assert result.stdout.startswith("PARTIAL: 1 of 2 episodes lost to server errors")  # the header
    assert "1 of 2 episodes hit server errors" in result.stdout and "--resume" in result.stdout
    assert read_summary(out).left_out == 1
    stub.script = down_after(3)
    allowed = evaluate(stub, *args, "--out", str(out), "--force", "--allow-partial")
    assert allowed.exit_code == 0, allowed.output
    table = result.stdout[: result.stdout.index("policy counters")]  # then timings, which vary
    assert allowed.stdout.startswith(table)
    stub.script = scripted_scientist  # the server is back
    resumed = evaluate(stub, *args, "--out", str(out), "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert "(2 episodes, 1 resumed)" in resumed.stdout and "server errors" not in resumed.stdout
    assert out.read_bytes() == clean.read_bytes()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-s", "baseline", "--base-url", "http://x/v1", "--model", "m"],
            "apply to --scientist llm or --lab-manager llm",
        ),
        (["-s", "llm", "--base-url", "http://x/v1"], "--base-url and --model go together"),
        (
            ["-s", "llm", "--base-url", "x:8000", "--model", "m"],
            "--base-url: Value error, must start with http://",
        ),
        (["-s", "llm", "--base-url", "http://x/v1", "--model", "m", "--generate-fn", "a:b"], "give one"),
        (["-s", "llm", "--base-url", "http://x/v1", "--model", "m", "--extra-body", "[1]"], "a JSON object"),
        (
            ["-s", "llm", "--base-url", "http://x/v1", "--model", "m", "--extra-body", "{"],
            "--extra-body: not JSON",
        ),
        (
            ["-s", "llm", "--base-url", "http://x/v1", "--model", "m", "--timeout", "0"],
            "--timeout: Input should be greater than 0",
        ),
        (
            ["-s", "llm", "--base-url", "http://x/v1", "--model", "m", "--top-p", "0"],
            "--top-p: Input should be greater than 0",
        ),
        (["--concurrency", "8"], "--concurrency applies to a served model only"),
        (["--group-size", "4"], "--group-size applies to a served model only"),
        (["--export-turns", "t.jsonl"], "--export-turns applies to a served model only"),
        (["--temperature", "0.5"], "--temperature applies to a served model only"),
    ],
)
def test_options_that_cannot_work_are_refused_before_any_episode(args: list[str], message: str) -> None:
    result = CliRunner(env={"COLUMNS": "300"}).invoke(app, ["evaluate", *CELLS, *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_without_openai_the_cli_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    result = CliRunner(env={"COLUMNS": "300"}).invoke(
        app, ["evaluate", *CELLS, "-s", "llm", "--base-url", "http://localhost:8000/v1", "--model", "m"]
    )
    assert result.exit_code == 1
    assert "pip install 'replicalab[llm]'" in result.output


def test_the_docs_command_runs_against_a_served_model(
    stub: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (line,) = [line for line in page("llm-agents.md").splitlines() if line.startswith("replicalab evaluate")]
    words = shlex.split(line.replace("http://localhost:8000/v1", stub.base_url))
    monkeypatch.chdir(tmp_path)
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, [*words[1:], *CELLS])  # a small grid
    assert result.exit_code == 0, result.output
    assert "2 seeds × 8 rollouts = 16 episodes" in result.stdout
    assert len((tmp_path / "runs" / "qwen.turns.jsonl").read_text().splitlines()) == 32
    assert len((tmp_path / "runs" / "qwen.usage.jsonl").read_text().splitlines()) == 16


def test_an_export_file_is_not_overwritten_without_force(stub: StubServer, tmp_path: Path) -> None:
    turns = tmp_path / "turns.jsonl"
    turns.write_text('{"episode_id": "x"}\n')
    refused = evaluate(stub, "--export-turns", str(turns))
    assert refused.exit_code == 1 and "--force overwrites it" in refused.output
    assert evaluate(stub, "--export-turns", str(turns), "--force").exit_code == 0
    assert len(turns.read_text().splitlines()) == 4


def test_a_server_that_does_not_answer_stops_the_run_before_any_episode(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url, out = f"http://127.0.0.1:{port}/v1", tmp_path / "llm.jsonl"
    command = ["evaluate", *CELLS, "-s", "llm", "--base-url", url, "--model", "m", "--out", str(out)]
    result = CliRunner().invoke(app, [*command, "--http-retries", "0"])
    assert result.exit_code == 1
    assert f"the server at {url} (model m) failed: llm_connection_error" in result.output
    assert "episodes played" not in result.output and not out.exists()


def fails_after(successes: int) -> Any:
    """The scripted Scientist for `successes` requests, then a 500 to every request."""
    answered = itertools.count()

    def script(request: dict[str, Any]) -> Reply:
        return scripted_scientist(request) if next(answered) < successes else fault(500)

    return script


def test_a_run_stops_after_max_failures_in_a_row_and_resume_finishes_it(
    stub: StubServer, tmp_path: Path
) -> None:
    clean, out = tmp_path / "clean.jsonl", tmp_path / "llm.jsonl"
    assert evaluate(stub, "--seeds", "4", "--no-oracle", "--out", str(clean)).exit_code == 0
    stub.script = fails_after(1 + 2 * 2 + 1)  # the check, two episodes, a call of the third
    args = ["--seeds", "4", "--no-oracle", "--out", str(out)]
    result = evaluate(stub, *args, "--http-retries", "0", "--max-failures", "3")
    assert result.exit_code == 1
    assert "stopped: 3 model calls in a row failed at" in result.output
    assert f"{out} holds whole episodes only: rerun with --resume" in result.output
    assert len(out.read_bytes().splitlines()) == 2
    stub.script = scripted_scientist
    resumed = evaluate(stub, *args, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert "(4 episodes, 2 resumed)" in resumed.stdout and out.read_bytes() == clean.read_bytes()


def test_a_server_that_never_answers_fails_the_check_after_one_retry(tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        command = ["evaluate", *CELLS, "-s", "llm", "--base-url", url, "--model", "m"]
        result = CliRunner().invoke(app, [*command, "--timeout", "0.2", "--http-retries", "5"])
    assert result.exit_code == 1, result.output
    message = " ".join(result.output.split())
    assert "no answer within 0.2 s (after 1 retry)" in message  # not 5: the check keeps to one
