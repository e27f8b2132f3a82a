"""The `replicalab` CLI on tiny grids: every subcommand exits 0 and prints what it promises;
mistakes exit non-zero with one clear line and no traceback."""

from __future__ import annotations

import csv
import importlib.metadata
import json
from pathlib import Path

import matplotlib.image
import pytest
from typer.testing import CliRunner

import replicalab
from replicalab.baselines.cli import app
from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.policies.seats import RandomScientist

TINY = ["-t", "ml_benchmark", "-d", "easy,hard", "--seeds", "2"]


def _ok(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def _error(runner: CliRunner, code: int, *args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)  # a clean exit, not a crash
    assert result.output.count("\n") <= 6  # one line (click's usage errors: a short box)
    return result.output


def _row(output: str, label: str) -> list[str]:
    line = next(line for line in output.splitlines() if line.lstrip("│┃ ").startswith(f"{label} "))
    return [cell.strip() for cell in line.strip("│┃ ").split("│")]


def test_evaluate_prints_a_table_per_cell_with_regret(runner: CliRunner) -> None:
    out = _ok(runner, "evaluate", *TINY, "--scientist", "reader", "--wide")
    assert "reader vs grounded · reward default" in out
    assert "1 template × 2 difficulties × 2 seeds = 4 episodes" in out
    for label in ("ml_benchmark/easy", "ml_benchmark/hard"):
        cells = _row(out, label)
        assert cells[0] == label and cells[1] == "2"
    overall = _row(out, "overall")
    assert overall[1] == "4" and overall[4] == "100%"  # the reader agrees on these seeds
    regret, normalised, vs_public = map(float, overall[-3:])
    assert regret > 0 and 0 < normalised < 1 and 0 < vs_public < 1.5
    assert "oracle mean score" in out and "public-information oracle" in out


def test_evaluate_by_default_plays_the_reader_and_scores(runner: CliRunner) -> None:
    out = _ok(runner, "evaluate", *TINY)
    assert "reader vs grounded" in out
    score, *_ = _row(out, "overall")[2].split(" ± ")
    assert float(score) > 0  # the paper-blind baseline scores 0 in every cell


def test_evaluate_oracle_has_no_regret(runner: CliRunner) -> None:
    overall = _row(_ok(runner, "evaluate", *TINY, "--scientist", "oracle", "--wide"), "overall")
    assert overall[-3:-1] == ["0.00", "1.00"] and float(overall[-1]) >= 1  # it reads every paper
    no_oracle = _row(_ok(runner, "evaluate", *TINY, "--no-oracle", "--wide"), "overall")
    assert no_oracle[-3:] == ["—", "—", "—"]


def test_evaluate_writes_and_resumes_a_log(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "runs" / "random.jsonl"
    out = _ok(runner, "evaluate", *TINY, "-s", "random", "--out", str(path), "-j", "2")
    assert f"logs: {path} (4 episodes, 0 resumed)" in out
    clean = path.read_bytes()
    assert len(clean.splitlines()) == 4
    path.write_bytes(clean[: len(clean) // 2])
    out = _ok(runner, "evaluate", *TINY, "-s", "random", "--out", str(path), "--resume")
    assert "resumed)" in out and path.read_bytes() == clean
    assert clean == _bytes_of_a_library_run(tmp_path)


def _bytes_of_a_library_run(tmp_path: Path) -> bytes:
    path = tmp_path / "library.jsonl"
    run_grid(
        Grid.of(["ml_benchmark"], ["easy", "hard"], 2),
        RandomScientist,
        out=path,
        settings=Settings(split="test"),
    )
    return path.read_bytes()


def test_evaluate_llm_reports_its_retries(runner: CliRunner) -> None:
    out = _ok(
        runner,
        "evaluate",
        "-t",
        "math_reasoning",
        "-d",
        "easy",
        "--seeds",
        "2",
        "--scientist",
        "llm",
        "--generate-fn",
        "tests.test_runner:flaky_model",
        "--wide",
    )
    assert "llm vs grounded" in out
    assert (
        "policy counters: llm_calls 14, llm_corrections 8, llm_generate_errors 0, llm_parse_failures 2" in out
    )
    invalid = _row(out, "overall")[7]
    assert invalid != "0%"


def test_evaluate_with_a_reward_config_file(runner: CliRunner, tmp_path: Path) -> None:
    config = tmp_path / "mine.json"
    config.write_text(json.dumps({"name": "mine", "step_cost": 0.5}))
    out = _ok(runner, "evaluate", *TINY, "--reward-config", str(config), "--no-oracle", "--wide")
    returns = _row(out, "overall")[3]
    score = _row(out, "overall")[2]
    assert "reward mine" in out and returns != score  # the step cost shows in the return


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["evaluate", "-t", "nope"], "unknown template 'nope'"),
        (["evaluate", "-d", "brutal"], "difficulty: unknown difficulty 'brutal'"),
        (["evaluate", "-s", "genius"], "unknown policy 'genius'"),
        (["evaluate", "-r", "dense"], "unknown preset 'dense'"),
        (["evaluate", "--resume"], "--resume needs --out"),
        (["evaluate", "-s", "llm"], "--scientist llm needs --generate-fn"),
        (["evaluate", "-s", "llm", "--generate-fn", "no_such_module:f"], "cannot load"),
        (["evaluate", "--seeds", "0"], "Invalid value for '--seeds'"),
        (["evaluate", "--backend", "dask"], "--backend: expected one of processes, ray, got 'dask'"),
        (["scenarios", "--show", "nope", "easy", "1"], "unknown template 'nope'"),
        (["compare-rewards", "-p", "dense"], "unknown preset 'dense'"),
    ],
)
def test_bad_options_exit_2_with_a_clear_message(runner: CliRunner, args: list[str], message: str) -> None:
    assert message in _error(runner, 2, *args)


def test_resume_of_another_runs_file_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _ok(runner, "evaluate", *TINY, "--no-oracle", "--out", str(path))
    output = _error(runner, 1, "evaluate", *TINY, "-s", "random", "--out", str(path), "--resume")
    assert "not the next one of this grid" in output


def test_replay_prints_the_negotiation_and_the_judge(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _ok(runner, "evaluate", *TINY, "--no-oracle", "--out", str(path))
    logs = [json.loads(line) for line in path.read_text().splitlines()]
    out = _ok(runner, "replay", str(path), "2")
    assert logs[2]["episode_id"] in out
    assert "negotiation" in out and "Scientist" in out and "Lab Manager" in out
    assert "propose_protocol" in out and "verdict agreement" in out
    assert "judge total" in out and "rigor" in out and "final protocol" in out
    assert _ok(runner, "replay", str(path), logs[3]["episode_id"]) == _ok(
        runner, "replay", str(path), "--", "-1"
    )
    assert "no episode with id 'x/y'" in _error(runner, 1, "replay", str(path), "x/y")
    assert "out of range (4 episodes)" in _error(runner, 1, "replay", str(path), "9")
    assert "No such file" in _error(runner, 1, "replay", str(tmp_path / "missing.jsonl"))
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"episode_id": 3}\n')
    assert "broken.jsonl:1: not an EpisodeLog line" in _error(runner, 1, "replay", str(broken))


def test_scenarios_lists_families_and_shows_a_pack(runner: CliRunner) -> None:
    out = _ok(runner, "scenarios")
    for template in ("math_reasoning", "ml_benchmark", "finance_trading"):
        assert template in out
    families = json.loads(_ok(runner, "scenarios", "--json"))
    assert {f["template"] for f in families} >= {"math_reasoning", "ml_benchmark"}
    brief = _ok(runner, "scenarios", "--show", "ml_benchmark", "hard", "3")
    pack = json.loads(_ok(runner, "scenarios", "--show", "ml_benchmark", "hard", "3", "--json"))
    assert pack["scenario_id"] == "ml_benchmark-train-hard-3"
    assert pack["paper"]["title"] in brief and "constraints" in brief and "resources" in brief
    assert "hidden_reference_spec" in pack
    assert pack["hidden_reference_spec"]["summary"] not in brief  # the brief is public only


def test_compare_rewards_writes_a_table_and_a_png(runner: CliRunner, tmp_path: Path) -> None:
    out_dir = tmp_path / "cmp"
    out = _ok(
        runner,
        "compare-rewards",
        "-t",
        "ml_benchmark",
        "-d",
        "hard",
        "--seeds",
        "3",
        "--out-dir",
        str(out_dir),
    )
    png = out_dir / "reward_components.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(png)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 300
    with (out_dir / "reward_components.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["preset"], r["scientist"]) for r in rows] == [
        (p, s) for p in ("sparse", "default", "potential") for s in ("baseline", "random", "oracle")
    ]
    assert "judge" in rows[0] and "shaping" in rows[0]
    for preset in ("sparse", "default", "potential"):
        assert _row(out, preset)[0] == preset
    assert str(png) in out.replace("\n", "")


def test_the_version_option_prints_the_installed_version(runner: CliRunner) -> None:
    installed = importlib.metadata.version("replicalab")
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"replicalab {installed}" and replicalab.__version__ == installed
