"""A language model as the Lab Manager: its prompts (the lab and the grounded check, never the
hidden reference), its corrections, the runner's seat and the command line, against a loopback
server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from benchmarks.openai_stub import StubServer, completion, scripted_lab_manager, scripted_table, serve
from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_prompts import (
    LAB_MANAGER_SCHEMA_REMINDER,
    build_lab_manager_system_prompt,
    call_lab_manager_with_retry,
    format_lab_manager_observation,
)
from replicalab.agents.prompt_parts import MIN_PROMPT_CHARS
from replicalab.baselines.cli import app
from replicalab.baselines.evaluation.runner import Grid, run_grid
from replicalab.baselines.policies.seats import BaselineScientist, LLMLabManager
from replicalab.episode import Episode
from replicalab.models import FLAG_FIELDS, EpisodeLog, LabManagerActionType
from replicalab.moves import LAB_MANAGER, SCIENTIST, coerce_action
from replicalab.parsing import LabManagerOutputParseError, ScientistOutputParseError
from replicalab.scenarios import DIFFICULTIES, generate_scenario
from tests.plans import with_secret_reference

CELLS = ["-t", "ml_benchmark", "-d", "hard", "--seeds", "2"]


def _after_a_proposal(seed: int = 3, template: str = "ml_benchmark", level: str = "hard") -> Episode:
    episode = Episode(generate_scenario(seed, template, level))
    episode.step(build_baseline_scientist_action(episode.scientist_observation()))
    return episode


def check_reader(messages: list[dict[str, str]]) -> str:
    """A model that reports the grounded check its user message shows (the stub's Lab Manager)."""
    reply = scripted_lab_manager({"messages": messages})
    return str(json.loads(reply.body)["choices"][0]["message"]["content"])


def test_the_system_prompt_holds_the_lab_and_never_the_hidden_reference() -> None:
    pack = generate_scenario(7, "ml_benchmark", "hard")
    secret_spec = with_secret_reference(pack)
    secret = pack.model_copy(update={"hidden_reference_spec": secret_spec})
    episode = Episode(secret)
    episode.step(build_baseline_scientist_action(episode.scientist_observation()))
    text = build_lab_manager_system_prompt(secret) + format_lab_manager_observation(
        episode.lab_manager_observation()
    )
    for leak in ("SECRET", "987654"):
        assert leak not in text
    lab = pack.lab_manager_observation
    prompt = build_lab_manager_system_prompt(pack)
    for name in [*lab.equipment_booked, *lab.reagents_out_of_stock, *lab.safety_restrictions]:
        assert name in prompt
    assert f"{lab.staff_count}" in prompt and "misreport" in prompt
    assert all(field in prompt for field in FLAG_FIELDS)


@pytest.mark.parametrize("level", DIFFICULTIES)
def test_each_turn_shows_the_grounded_check_flag_by_flag(level: str) -> None:
    for seed in range(10):
        episode = _after_a_proposal(seed, "finance_trading", level)
        check = episode.check
        assert check is not None
        text = format_lab_manager_observation(episode.lab_manager_observation())
        for dim, ok in zip(FLAG_FIELDS, check.flags, strict=True):
            assert (f"- {dim}: true" in text) == ok
        assert ("NOT feasible" in text) != check.feasible
        assert text.endswith("Respond with exactly one JSON object (a LabManagerAction) and nothing else.")


def test_nothing_on_the_table_is_said() -> None:
    episode = Episode(generate_scenario(1, "math_reasoning", "easy"))
    text = format_lab_manager_observation(episode.lab_manager_observation())
    assert "nothing is on the table yet" in text and "No protocol has been proposed yet." in text


def test_a_small_budget_keeps_the_contract_and_the_scientists_latest_message() -> None:
    episode = _after_a_proposal()
    for _ in range(4):  # more history: an answer and a question per round
        episode.step(coerce_action(LAB_MANAGER, check_reader(_messages(episode))))
        question = {"action_type": "request_info", "questions": ["What budget is available? " * 20]}
        episode.step(coerce_action(SCIENTIST, question))
    assert episode.invalid_action_count == 0
    text = format_lab_manager_observation(episode.lab_manager_observation(), MIN_PROMPT_CHARS)
    assert len(text) <= MIN_PROMPT_CHARS
    assert LAB_MANAGER_SCHEMA_REMINDER in text and "older entries omitted" in text
    assert "scientist (request_info)" in text


def _messages(episode: Episode) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": build_lab_manager_system_prompt(episode.scenario)},
        {"role": "user", "content": format_lab_manager_observation(episode.lab_manager_observation())},
    ]


def test_an_answer_that_breaks_the_action_rules_is_corrected() -> None:
    episode = Episode(generate_scenario(0, "ml_benchmark", "hard"))
    plan = {
        "action_type": "propose_protocol",
        "sample_size": 5,
        "technique": "direct replication",
        "duration_days": 3,
        "required_equipment": ["a particle accelerator"],
        "rationale": "a plan the lab cannot run",
    }
    episode.step(coerce_action(SCIENTIST, plan))
    check = episode.check
    assert check is not None and not check.equipment_ok
    flags = dict(zip(FLAG_FIELDS, check.flags, strict=True))
    wrong = {"action_type": "accept", "feasible": True, **flags, "explanation": "ok"}  # not their AND
    replies = iter([json.dumps(wrong), check_reader(_messages(episode))])
    sent: list[list[dict[str, str]]] = []

    def model(messages: list[dict[str, str]]) -> str:
        sent.append(messages)
        return next(replies)

    system, user = (m["content"] for m in _messages(episode))
    result = call_lab_manager_with_retry(model, system, user)
    assert result.metadata.retry_count == 1 and result.metadata.last_error_code == "invalid_action"
    assert "failed LabManagerAction validation" in sent[1][-1]["content"]
    assert result.action.flags == check.flags
    with pytest.raises(LabManagerOutputParseError) as info:
        call_lab_manager_with_retry(lambda _: "no json here", system, user, max_retries=1)
    assert info.value.code == "no_json" and not isinstance(info.value, ScientistOutputParseError)


def test_a_model_that_reads_the_check_never_misreports() -> None:
    grid = Grid.of(templates=["ml_benchmark", "finance_trading"], seeds=range(4))
    result = run_grid(grid, BaselineScientist, lambda: LLMLabManager(check_reader))
    for log in result.logs:
        lab_steps = [step for step in log.steps if step.agent == LAB_MANAGER]
        assert lab_steps and all(step.error_code is None for step in lab_steps)
        assert all("misreport" not in step.reward_components[LAB_MANAGER] for step in lab_steps)


def test_a_model_that_denies_everything_is_charged_for_misreports() -> None:
    lie = {"action_type": "report_feasibility", "feasible": False, **dict.fromkeys(FLAG_FIELDS, False)}
    text = json.dumps({**lie, "explanation": "no"})
    result = run_grid(
        Grid.of(templates=["ml_benchmark"], seeds=range(2)),
        BaselineScientist,
        lambda: LLMLabManager(lambda _: text),
    )
    charged = [
        s.reward_components[LAB_MANAGER].get("misreport", 0.0)
        for log in result.logs
        for s in log.steps
        if s.agent == LAB_MANAGER
    ]
    assert charged and all(value < 0 for value in charged)


@settings(max_examples=25, deadline=None)
@given(st.text(max_size=300))
def test_any_model_output_ends_in_a_recorded_error_never_a_crash(text: str) -> None:
    episode = _after_a_proposal(seed=5)
    move = LLMLabManager(lambda _: text, max_retries=0).act(episode)
    outcome = episode.step(coerce_action(LAB_MANAGER, move))
    if isinstance(move, str):  # unparsable: a refused move with the parser's code
        assert outcome.error is not None and outcome.error.code in {
            "no_json",
            "invalid_json",
            "invalid_action",
        }
        assert episode.transcript[-1].role == "system"
    assert not episode.done or episode.verdict is not None


@pytest.fixture
def table() -> Iterator[StubServer]:
    with serve(scripted_table) as server:
        yield server


def _evaluate(server: StubServer, *args: str) -> Any:
    base = ["evaluate", *CELLS, "--base-url", server.base_url, "--model", "stub", "--no-oracle"]
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, [*base, *args])


def test_a_served_lab_manager_plays_the_baseline_from_the_command_line(
    table: StubServer, tmp_path: Any
) -> None:
    pytest.importorskip("openai", reason="the chat backend needs the [llm] extra")
    out = tmp_path / "lm.jsonl"
    result = _evaluate(
        table, "-s", "baseline", "--lab-manager", "llm", "--lab-manager-model", "lm", "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    assert "baseline vs llm" in result.stdout and "model usage:" in result.stdout
    assert {request["model"] for request in table.requests} == {"lm"}
    logs = [EpisodeLog.model_validate_json(line) for line in out.read_bytes().splitlines()]
    assert [log.episode_id for log in logs] == [f"ml_benchmark-test-hard-{s}/baseline/llm" for s in range(2)]
    answers = [step.action_type for log in logs for step in log.steps if step.agent == LAB_MANAGER]
    assert answers and set(answers) <= {a.value for a in LabManagerActionType}


def test_a_served_model_plays_both_seats(table: StubServer) -> None:
    pytest.importorskip("openai", reason="the chat backend needs the [llm] extra")
    result = _evaluate(table, "-s", "llm", "-l", "llm", "--concurrency", "2")
    assert result.exit_code == 0, result.output
    assert "llm vs llm" in result.stdout
    episodes = table.requests[1:]  # after the one request that checks the server
    seats = {request["messages"][0]["content"].split(" agent")[0] for request in episodes}
    assert seats == {"You are the Scientist", "You are the Lab Manager"}
    lines = result.stdout.splitlines()
    for seat in ("scientist", "lab_manager"):  # one usage line per seat, each counting its calls
        assert any(line.startswith(f"model usage ({seat}): ") for line in lines), result.stdout
    counters = next(line for line in lines if line.startswith("policy counters: "))
    names = {part.rsplit(" ", 1)[0] for part in counters.removeprefix("policy counters: ").split(", ")}
    assert {"llm_calls", "lab_manager_llm_calls", "llm_corrections", "lab_manager_llm_corrections"} <= names
    assert "llm_retries" not in names  # "retried requests" are the server's; corrections are the model's


def test_the_generate_fn_route_seats_a_lab_manager_too() -> None:
    command = [
        "evaluate",
        *CELLS,
        "--no-oracle",
        "-l",
        "llm",
        "--generate-fn",
        "tests.test_lab_manager_llm:check_reader",
    ]
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, command)
    assert result.exit_code == 0, result.output
    assert "reader vs llm" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-l", "llm"], "--lab-manager llm needs --generate-fn MODULE:ATTR or --base-url URL --model NAME"),
        (["-l", "human"], "lab_manager: unknown policy 'human'; valid: grounded, llm"),
        (["--lab-manager-model", "m"], "--lab-manager-model applies to --lab-manager llm with --base-url"),
        (["--generate-fn", "a:b"], "--generate-fn applies to --scientist llm or --lab-manager llm only"),
    ],
)
def test_seat_options_that_cannot_work_are_refused(args: list[str], message: str) -> None:
    result = CliRunner(env={"COLUMNS": "300"}).invoke(app, ["evaluate", *CELLS, *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_completion_helper_is_the_stubs() -> None:
    assert json.loads(completion("x").body)["choices"][0]["message"]["content"] == "x"
