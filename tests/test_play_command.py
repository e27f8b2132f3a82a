"""`replicalab play` driven through a pseudo-terminal, as a person types: an episode to its end in
either seat, then its log replayed and reported like any run's."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replicalab.baselines.cli import app
from replicalab.models import EpisodeLog

pty = pytest.importorskip("pty", reason="pseudo-terminals are POSIX's")

PLAN = json.dumps(
    {
        "action_type": "propose_protocol",
        "sample_size": 11,
        "duration_days": 5,
        "technique": "post-hoc recalibration of independently trained networks",
        "controls": ["statistical methods review", "uncalibrated reference"],
        "required_equipment": ["single-GPU workstation"],
        "required_reagents": ["CIFAR-100 dataset"],
        "rationale": "Temperature scaling on held-out data, as the paper did.",
    }
)
WAIT_S = 120  # for one prompt: a guard against a hung child on a loaded machine, not a timing


class Terminal:
    """The command running on a pseudo-terminal: wait for a prompt, type a line."""

    def __init__(self, *args: str) -> None:
        self.fd, child = pty.openpty()
        env = {**os.environ, "TERM": "dumb", "COLUMNS": "120", "NO_COLOR": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "replicalab.baselines.cli", "play", *args],
            stdin=child,
            stdout=child,
            stderr=child,
            env=env,
            close_fds=True,
        )
        os.close(child)
        self.seen = ""

    def until(self, *marks: str) -> str:
        """Read until one of `marks` appears after what was read before; which one."""
        start = len(self.seen)
        while True:
            found = [mark for mark in marks if mark in self.seen[start:]]
            if found:
                return found[0]
            ready, _, _ = select.select([self.fd], [], [], WAIT_S)
            assert ready, f"no output for {WAIT_S} s; last:\n{self.seen[-2000:]}"
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk:
                raise AssertionError(f"the command ended; last:\n{self.seen[-2000:]}")
            self.seen += chunk.decode("utf-8", "replace")

    def type(self, line: str) -> None:
        os.write(self.fd, (line + "\n").encode("utf-8"))

    def finish(self) -> int:
        while True:  # drain, so the child never blocks on a full terminal
            ready, _, _ = select.select([self.fd], [], [], WAIT_S)
            try:
                chunk = os.read(self.fd, 65536) if ready else b""
            except OSError:
                chunk = b""
            if not chunk:
                break
            self.seen += chunk.decode("utf-8", "replace")
        os.close(self.fd)
        return self.process.wait(timeout=WAIT_S)


def _play(log: Path, *args: str) -> Terminal:
    return Terminal("-t", "ml_benchmark", "-d", "easy", "--seed", "0", "--out", str(log), *args)


def test_a_person_plays_the_scientist_to_the_end_and_the_log_replays(
    tmp_path: Path, runner: CliRunner
) -> None:
    log_path = tmp_path / "play.jsonl"
    term = _play(log_path)
    term.until("scientist> ")
    assert "system prompt" in term.seen and "Output contract" in term.seen
    term.type("help")
    term.until("scientist> ")
    assert "ask QUESTION" in term.seen
    term.type("ask 1")
    term.until("scientist> ")
    term.type('{"action_type": "propose_protocol"')  # a typo: the model's correction, the turn goes on
    term.until("... ")
    term.type("}")
    term.until("scientist> ")
    assert "failed ScientistAction validation" in term.seen
    term.type(PLAN)
    term.until("scientist> ")
    term.type("accept")
    assert term.finish() == 0, term.seen[-3000:]
    assert "judge" in term.seen and "logged to" in term.seen

    (line,) = log_path.read_text(encoding="utf-8").splitlines()
    log = EpisodeLog.model_validate_json(line)
    assert log.episode_id == "ml_benchmark-train-easy-0/human/grounded"
    assert [s.action_type for s in log.steps if s.agent == "scientist"] == [
        "request_info",
        "propose_protocol",
        "accept",
    ]
    assert log.invalid_action_count == 0  # the typo cost a retry, not a turn
    replayed = runner.invoke(app, ["replay", str(log_path), "-1"])
    assert replayed.exit_code == 0, replayed.output
    assert log.episode_id in replayed.output and "judge" in replayed.output


def test_a_person_plays_the_lab_manager_with_the_stance_shortcuts(tmp_path: Path, runner: CliRunner) -> None:
    log_path = tmp_path / "play.jsonl"
    term = _play(log_path, "--lab-manager")
    turns = 0
    while term.until("lab_manager> ", "logged to") == "lab_manager> ":
        turns += 1
        term.type("report")  # always allowed: the grounded check, stated as it is
    assert term.finish() == 0, term.seen[-3000:]
    assert "facing the reader Scientist" in term.seen and "You are the Lab Manager agent" in term.seen
    log = EpisodeLog.model_validate_json(log_path.read_text(encoding="utf-8"))
    assert log.episode_id == "ml_benchmark-train-easy-0/reader/human"
    assert turns == sum(1 for s in log.steps if s.agent == "lab_manager") > 0
    assert {s.action_type for s in log.steps if s.agent == "lab_manager"} == {"report_feasibility"}


def test_a_played_log_is_a_run_the_report_reads(tmp_path: Path, runner: CliRunner) -> None:
    pytest.importorskip("plotly", reason="report draws with plotly (the [report] extra)")
    log_path, page = tmp_path / "play.jsonl", tmp_path / "report.html"
    played = runner.invoke(app, ["play", "--lab-manager", "--out", str(log_path)], input="report\n" * 12)
    assert played.exit_code == 0, played.output
    reported = runner.invoke(app, ["report", str(log_path), "--out", str(page)])
    assert reported.exit_code == 0, reported.output
    (line,) = log_path.read_text(encoding="utf-8").splitlines()
    assert EpisodeLog.model_validate_json(line).episode_id in page.read_text(encoding="utf-8")


def test_quit_logs_nothing(tmp_path: Path, runner: CliRunner) -> None:
    log_path = tmp_path / "play.jsonl"
    result = runner.invoke(app, ["play", "--out", str(log_path)], input="help\nquit\n")
    assert result.exit_code == 0, result.output
    assert "nothing logged" in result.output and log_path.read_bytes() == b""
    ended = runner.invoke(app, ["play", "--out", str(log_path)], input="ask 1\n")  # input ends mid-game
    assert ended.exit_code == 130 and log_path.read_bytes() == b""


def test_a_scenario_that_cannot_be_played_is_refused_by_option(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["play", "-d", "impossible", "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 2 and "difficulty" in result.output
    result = runner.invoke(app, ["play", "--partner", "reader", "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 2 and "--partner" in result.output
