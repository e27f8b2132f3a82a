"""docs/training.md takes a newcomer from install to a trained, evaluated model: its
install puts torch's CPU build before the extra, its Python trains and saves, and its commands
run in order as written, with the training shortened to a smoke run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replicalab.baselines.cli import app
from replicalab.install import install_hint
from tests.docs_pages import blocks, page

SECTION = page("training.md")
# The commands as written train for minutes; the test trains a few rollouts with the same commands.
SHORT = {"--steps": "64", "--eval-every": "32", "--eval-seeds": "1", "--n-envs": "2", "--n-steps": "16"}
# The evaluation plays 2 seeds per cell instead of 20.
SHORT_EVALUATION = {"--seeds": "2"}


def _shortened(words: list[str]) -> list[str]:
    short = SHORT_EVALUATION if words[1] == "evaluate" else SHORT
    kept = [w for i, w in enumerate(words) if w not in short and (i == 0 or words[i - 1] not in short)]
    return kept + [part for option, value in short.items() for part in (option, value)]


def test_the_install_takes_torch_from_the_cpu_index_with_the_extra() -> None:
    install = blocks(SECTION, "bash")[0].splitlines()
    (extra,) = [line for line in install if "pip install -e '.[train]'" in line]
    assert extra.endswith(install_hint("train").split("'", 2)[2].strip())  # the one recipe
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in extra


@pytest.mark.slow
def test_the_python_trains_and_saves_a_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    (block,) = [b for b in blocks(SECTION, "python") if "ppo_scientist.zip" in b]  # the Scientist's
    assert "total_timesteps=400_000" in block and '"n_steps": 256' in block and '"reading": "facts"' in block
    monkeypatch.chdir(tmp_path)
    # One rollout of 8 envs × 8 steps instead of 8 × 256.
    short = block.replace("400_000", "64").replace(
        '"n_steps": 256, "batch_size": 256', '"n_steps": 8, "batch_size": 64'
    )
    exec(compile(short, "README", "exec"), {})
    assert (tmp_path / "ppo_scientist.zip").is_file()


@pytest.mark.slow
def test_the_commands_run_in_order_from_training_to_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    monkeypatch.chdir(tmp_path)
    commands = [shlex.split(line) for line in blocks(SECTION, "bash")[1].splitlines() if line.strip()]
    assert [words[:2] for words in commands] == [
        ["replicalab", "train"],
        ["replicalab", "evaluate"],
        ["replicalab", "compare-rewards"],
    ]
    outputs = []
    for words in commands:
        result = CliRunner(env={"COLUMNS": "200"}).invoke(app, _shortened(words)[1:])
        assert result.exit_code == 0, (words, result.output)
        outputs.append(result.stdout)
    files = re.findall(r"^\| `([\w.]+)` \|", SECTION, re.MULTILINE)
    assert sorted(files) == sorted(path.name for path in (tmp_path / "runs" / "ppo").iterdir())
    assert "model vs grounded · reward default · test split" in outputs[1]
    comparison = tmp_path / "runs" / "reward-training"
    for name in ("learning_curves.png", "learning_curves.csv", "final_scores.csv"):
        assert name in SECTION and (comparison / name).is_file()
    for preset in ("sparse", "potential"):
        assert len(list((comparison / "runs" / preset).iterdir())) == 3  # seeds
