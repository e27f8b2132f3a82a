"""Command-line edges: an existing log is not overwritten by accident, `replay FILE -1` is the
last episode, a missing reward file is called missing, `compare-rewards` takes the LLM, a bad
output directory is refused before any episode runs, and counts read in the singular."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import replicalab.baselines.evaluation.workers
from replicalab.baselines.cli import app
from replicalab.install import install_hint

TINY = ["-t", "ml_benchmark", "-d", "easy,hard", "--seeds", "2", "--no-oracle"]
ONE = ["-t", "math_reasoning", "-d", "easy", "--seeds", "1"]


def _ok(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def _error(runner: CliRunner, code: int, *args: str) -> str:
    result: Result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # a clean exit, no crash
    assert "Traceback" not in result.output and result.output.count("\n") <= 6
    return result.output


@pytest.fixture()
def no_episode_may_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("an episode ran before the command line was checked")

    monkeypatch.setattr(replicalab.baselines.evaluation.workers, "start_episode", refuse)


def test_evaluate_on_ray_without_ray_says_how_to_install_it(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, no_episode_may_run: None
) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find_spec(name, *a)
    )
    message = _error(runner, 1, "evaluate", *TINY, "--backend", "ray")
    assert f"--backend ray needs Ray: {install_hint('rllib')}" in message


CACHED_EXTRA_USERS = ("replicalab.baselines.evaluation.html_report", "replicalab.baselines.server")


@pytest.mark.parametrize(
    ("missing", "args", "hint"),
    [
        ("uvicorn", ["serve"], install_hint("server")),
        ("sb3_contrib", ["train", "--out", "OUT", "--steps", "8"], install_hint("train")),
        ("plotly", ["report", "LOG"], install_hint("report")),
        ("ray", ["evaluate", *TINY, "--backend", "ray"], install_hint("rllib")),
    ],
)
def test_a_missing_extra_ends_every_command_alike(
    runner: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    missing: str,
    args: list[str],
    hint: str,
) -> None:
    """A missing extra is not a bad option: exit 1 and one line giving the install command."""
    monkeypatch.setitem(sys.modules, missing, None)  # `import` of it raises ImportError
    for module in [name for name in sys.modules if name.startswith(CACHED_EXTRA_USERS)]:
        monkeypatch.delitem(sys.modules, module)  # imported again, as a fresh process would
    log = tmp_path / "run.jsonl"
    log.write_text("")
    args = [str(tmp_path) if a == "OUT" else str(log) if a == "LOG" else a for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert hint in " ".join(result.output.split())
    assert "Usage:" not in result.output and result.output.strip().startswith("Error: ")


# --------------------------------------------------------------------------- evaluate --out


def test_evaluate_refuses_to_overwrite_a_log(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _ok(runner, "evaluate", *TINY, "--out", str(path))
    before = path.read_bytes()
    message = _error(runner, 1, "evaluate", *TINY, "-s", "random", "--out", str(path))
    assert f"{path} already holds episodes" in message and "--resume" in message and "--force" in message
    assert path.read_bytes() == before
    _ok(runner, "evaluate", *TINY, "--out", str(path), "--resume")  # finishing it is still allowed
    assert path.read_bytes() == before


def test_evaluate_force_overwrites_and_an_empty_file_is_free(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text('{"episode_id": "something else"}\n')
    out = _ok(runner, "evaluate", *TINY, "-s", "random", "--out", str(path), "--force")
    assert "(4 episodes, 0 resumed)" in out
    assert [json.loads(line)["episode_id"].split("/")[1] for line in path.read_text().splitlines()] == [
        "random"
    ] * 4
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    _ok(runner, "evaluate", *TINY, "--out", str(empty))
    assert len(empty.read_text().splitlines()) == 4


def test_force_and_resume_exclude_each_other(runner: CliRunner, tmp_path: Path) -> None:
    out = _error(runner, 2, "evaluate", *TINY, "--out", str(tmp_path / "x"), "--resume", "--force")
    assert "give one" in out


# --------------------------------------------------------------------------- replay


def test_replay_takes_negative_indexes_as_written(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _ok(runner, "evaluate", *TINY, "--out", str(path))
    ids = [json.loads(line)["episode_id"] for line in path.read_text().splitlines()]
    assert _ok(runner, "replay", str(path), "-1") == _ok(runner, "replay", str(path), ids[-1])
    assert _ok(runner, "replay", str(path), "-4") == _ok(runner, "replay", str(path), ids[0])
    assert "index -5 is out of range (4 episodes)" in _error(runner, 1, "replay", str(path), "-5")


def test_a_one_episode_file_says_episode(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    lines = [
        line.rstrip()
        for line in _ok(runner, "evaluate", *ONE, "--no-oracle", "--out", str(path)).splitlines()
    ]
    assert "1 template × 1 difficulty × 1 seed = 1 episode" in lines
    assert f"logs: {path} (1 episode, 0 resumed)" in lines
    assert lines[-1].startswith("1 episode played in")
    assert "(1 episode)" in _error(runner, 1, "replay", str(path), "3")
    assert (
        _ok(runner, "evaluate", *ONE).splitlines()[-1].startswith("3 episodes played in")
    )  # and the oracle's and the public-information oracle's


# --------------------------------------------------------------------------- reward config


@pytest.mark.parametrize("value", ["missing.json", "configs/mine", "sub/dir/x.json"])
def test_a_missing_reward_file_is_named_as_missing(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.chdir(tmp_path)
    message = _error(runner, 2, "evaluate", *TINY, "-r", value)
    assert f"reward config: {value}: no such file" in message
    assert "unknown preset" not in message


def test_a_directory_is_not_a_reward_file(runner: CliRunner, tmp_path: Path) -> None:
    assert "is not a file" in _error(runner, 2, "evaluate", *TINY, "-r", str(tmp_path))


# --------------------------------------------------------------------------- compare-rewards


def test_compare_rewards_plays_the_llm(runner: CliRunner, tmp_path: Path) -> None:
    out = _ok(
        runner,
        "compare-rewards",
        *ONE,
        "-p",
        "sparse",
        "-s",
        "baseline,llm",
        "--generate-fn",
        "tests.test_runner:flaky_model",
        "--out-dir",
        str(tmp_path),
    )
    assert "(1 episode per row)" in " ".join(out.split())
    rows = (tmp_path / "reward_components.csv").read_text().splitlines()
    assert [row.split(",")[:3] for row in rows[1:]] == [["sparse", "baseline", "1"], ["sparse", "llm", "1"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-s", "llm"], "--scientists llm needs --generate-fn MODULE:ATTR"),
        (
            ["--generate-fn", "tests.test_runner:flaky_model"],
            "--generate-fn applies to --scientists llm only",
        ),
        (["-s", "llm", "--generate-fn", "nowhere:f"], "--generate-fn: cannot load 'nowhere:f'"),
    ],
)
def test_compare_rewards_llm_mistakes(runner: CliRunner, args: list[str], message: str) -> None:
    assert message in _error(runner, 2, "compare-rewards", *ONE, *args)


def test_a_bad_out_dir_fails_before_any_episode(
    runner: CliRunner, tmp_path: Path, no_episode_may_run: None
) -> None:
    a_file = tmp_path / "taken"
    a_file.write_text("not a directory")
    message = _error(runner, 1, "compare-rewards", *ONE, "--out-dir", str(a_file))
    assert f"--out-dir: {a_file} is not a directory" in message
    message = _error(runner, 1, "compare-rewards", *ONE, "--out-dir", str(a_file / "sub"))
    assert f"--out-dir: cannot write to {a_file / 'sub'}" in message
    assert a_file.read_text() == "not a directory"


def test_an_unwritable_log_fails_before_any_episode(
    runner: CliRunner, tmp_path: Path, no_episode_may_run: None
) -> None:
    a_file = tmp_path / "taken"
    a_file.write_text("")
    message = _error(runner, 1, "evaluate", *ONE, "--out", str(a_file / "run.jsonl"))
    assert f"{a_file} is not a directory" in message
    assert "Is a directory" in _error(runner, 1, "evaluate", *ONE, "--out", str(tmp_path))
