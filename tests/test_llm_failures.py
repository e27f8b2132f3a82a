"""A model that fails (raises, or answers with something other than text) costs the Scientist its
turn under the code `generate_error`, and the run goes on: bad input never crashes an episode,
whatever the policy behind it."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from benchmarks.openai_stub import PROPOSAL
from replicalab.baselines.cli import app
from replicalab.baselines.evaluation.runner import Grid, Settings, play_episode, run_grid
from replicalab.baselines.policies.seats import GroundedLabManager, LLMScientist
from replicalab.models import EpisodeLog
from replicalab.scenarios import ScenarioKey


class ModelServerDown(Exception):
    pass


def failing_model(messages: list[dict[str, str]]) -> str:
    raise ModelServerDown("connection refused by 10.0.0.7")


def silent_model(messages: list[dict[str, str]]) -> str:
    return None  # type: ignore[return-value]  # what a careless client returns


def counting_model(messages: list[dict[str, str]]) -> str:
    return 42  # type: ignore[return-value]


def fails_on_retry(messages: list[dict[str, str]]) -> str:
    """Prose first (a parse error, so a retry), then the retry call itself fails."""
    if len(messages) == 2:
        return "Let me think about the plan in words first."
    raise TimeoutError("no answer within 30 s")


def proposes_then_fails(messages: list[dict[str, str]]) -> str:
    """A proposal when nothing is on the table, a failure afterwards."""
    if "No protocol has been proposed yet" in messages[1]["content"]:
        return PROPOSAL
    raise RuntimeError("rate limited \udcff")  # a lone surrogate: the log must still serialise


def _scientist_steps(log: EpisodeLog) -> list[tuple[str | None, str | None]]:
    return [(s.error_code, s.error_message) for s in log.steps if s.agent == "scientist"]


CELL = ScenarioKey("math_reasoning", "train", "easy", 0)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (failing_model, "generate_fn raised ModelServerDown: connection refused by 10.0.0.7"),
        (silent_model, "generate_fn returned NoneType, not str"),
        (counting_model, "generate_fn returned int, not str"),
    ],
)
def test_a_failed_model_call_is_a_refused_move_with_its_own_code(model: object, message: str) -> None:
    scientist = LLMScientist(model)  # type: ignore[arg-type]
    log = play_episode(CELL, scientist, GroundedLabManager())
    steps = _scientist_steps(log)
    assert steps and all(step == ("generate_error", message) for step in steps)
    assert log.verdict == "round_limit" and log.invalid_action_count == len(steps)
    assert any(f"move refused (generate_error): {message}" in e.message for e in log.transcript)
    assert EpisodeLog.model_validate_json(log.model_dump_json()) == log
    # One call per turn: a failed call is not retried (a parse error is the model's to fix).
    assert scientist.stats() == {
        "llm_calls": len(steps),
        "llm_corrections": 0,
        "llm_parse_failures": 0,
        "llm_generate_errors": len(steps),
    }


def test_a_call_failing_on_a_retry_counts_the_calls_made() -> None:
    scientist = LLMScientist(fails_on_retry)
    log = play_episode(CELL, scientist, GroundedLabManager())
    turns = len(_scientist_steps(log))
    assert {code for code, _ in _scientist_steps(log)} == {"generate_error"}
    assert scientist.stats() == {
        "llm_calls": 2 * turns,
        "llm_corrections": turns,
        "llm_parse_failures": 0,
        "llm_generate_errors": turns,
    }


def test_the_episode_goes_on_after_a_failed_call() -> None:
    log = play_episode(CELL, LLMScientist(proposes_then_fails), GroundedLabManager())
    steps = _scientist_steps(log)
    assert steps[0] == (None, None)  # the proposal went through
    assert steps[1][0] == "generate_error" and steps[1][1] is not None
    assert "rate limited \\udcff" in steps[1][1]  # escaped, so the log serialises
    # Every later turn fails the same way; the Lab Manager still answers each round.
    assert log.verdict == "round_limit" and len(steps) == log.rounds_used == 6
    assert log.invalid_action_count == 5 and sum(s.agent == "lab_manager" for s in log.steps) == 6
    assert EpisodeLog.model_validate_json(log.model_dump_json()) == log


# Any text, lone surrogates included, as an exception's message.
_MESSAGES = st.text(st.characters(exclude_categories=()), max_size=2_000)
_NOT_TEXT = st.one_of(
    st.none(),
    st.integers(),
    st.floats(),
    st.binary(),
    st.lists(st.text()),
    st.dictionaries(st.text(), st.text()),
)
_EXCEPTIONS = st.sampled_from([ValueError, RuntimeError, OSError, KeyError, TimeoutError, ModelServerDown])


@settings(max_examples=40, deadline=None)
@given(answer=st.one_of(_NOT_TEXT, st.tuples(_EXCEPTIONS, _MESSAGES)))
@example(answer=(ValueError, "\udcff" * 400))  # escaped, it grows sixfold: still capped
def test_whatever_the_model_does_the_episode_ends_and_logs(answer: object) -> None:
    def model(messages: list[dict[str, str]]) -> str:
        if isinstance(answer, tuple):
            kind, message = answer
            raise kind(message)
        return answer  # type: ignore[return-value]

    log = play_episode(CELL, LLMScientist(model), GroundedLabManager(), Settings(max_rounds=2))
    assert log.verdict == "round_limit"
    for code, message in _scientist_steps(log):
        assert code == "generate_error" and message is not None and len(message) <= 500
    assert EpisodeLog.model_validate_json(log.model_dump_json()) == log


def test_an_interrupt_inside_the_model_is_not_swallowed() -> None:
    def interrupted(messages: list[dict[str, str]]) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        play_episode(CELL, LLMScientist(interrupted), GroundedLabManager())


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_run_with_a_failing_model_finishes_every_episode(jobs: int) -> None:
    grid = Grid.of(["math_reasoning", "ml_benchmark"], ["easy"], 2)
    result = run_grid(grid, functools.partial(LLMScientist, failing_model), jobs=jobs)
    assert len(result.logs) == 4
    assert all(log.verdict == "round_limit" for log in result.logs)
    assert result.stats["llm_generate_errors"] == sum(len(_scientist_steps(log)) for log in result.logs)


def test_the_cli_reports_a_failing_model_and_replays_its_refusals(tmp_path: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "200"})
    out = tmp_path / "llm.jsonl"
    args = ["evaluate", "-t", "math_reasoning", "-d", "easy", "--seeds", "2", "-s", "llm"]
    args += ["--generate-fn", "tests.test_llm_failures:silent_model", "--out", str(out), "-j", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "llm_generate_errors 12" in result.stdout  # 6 turns in each of the 2 episodes
    replayed = runner.invoke(app, ["replay", str(out), "0"])
    assert replayed.exit_code == 0, replayed.output
    assert "refused: generate_error" in replayed.stdout
    assert "generate_fn returned NoneType, not str" in replayed.stdout
