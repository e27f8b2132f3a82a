"""Every docs page does what it shows: each Python snippet and each `replicalab` command of
docs/*.md and the README runs here (on a small grid where the page's numbers would take minutes), or in the test
named beside it, which runs it against what it needs (a trainer, Ray, a loopback model server).
The README links every page."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replicalab.agents.scoring_rules import scoring_rules
from replicalab.baselines.cli import app
from replicalab.envs import features
from replicalab.scenarios import generate_scenario
from tests.docs_pages import DOCS, blocks, module_tables, page
from tests.processes import REPO_ROOT

PAGES = sorted(path.name for path in DOCS.glob("*.md"))
SHOWN = [*PAGES, "README.md"]  # the pages whose snippets and commands run here

# Snippets and commands another test runs; the key is the page and a piece of the snippet.
RUN_ELSEWHERE = {
    ("training.md", "model = MaskablePPO"): "test_readme_training.py",
    ("training.md", "replicalab train"): "test_readme_training.py",
    ("training.md", "replicalab evaluate --scientist runs/ppo/model.zip"): "test_readme_training.py",
    ("training.md", "replicalab compare-rewards --train"): "test_readme_training.py",
    ("rllib.md", "ppo_config"): "test_rllib.py",
    ("adding-a-family.md", "import json"): "test_readme.py",
    ("adding-a-family.md", "register_template_file"): "test_readme.py",
    ("adding-a-family.md", "replicalab "): "test_readme.py",
    ("llm-agents.md", "replicalab evaluate -s llm --base-url"): "test_llm_cli.py",
    ("command-line.md", "--backend ray"): "test_ray_backend.py",
    ("command-line.md", "-s ppo_scientist.zip"): "test_evaluate_trained.py",
    ("command-line.md", "-l llm --base-url URL"): "test_lab_manager_llm.py",
    ("command-line.md", "replicalab train"): "test_readme_training.py",
    ("command-line.md", "compare-rewards --train"): "test_compare_rewards_training.py",
    ("serving.md", "replicalab serve"): "test_server_run.py",
    ("command-line.md", "replicalab serve"): "test_server_run.py",
    ("command-line.md", "replicalab play"): "test_play_command.py",
    ("report.md", "replicalab report"): "test_html_report.py",
    ("command-line.md", "replicalab report"): "test_html_report.py",
    ("serving.md", "websockets.sync.client"): "test_server_docs.py",
    ("serving.md", "ReplicaLabClient"): "test_server_docs.py",
}
# Snippets with placeholders (a model, a server URL): their imports run, and they compile.
IMPORTS_ONLY = {("llm-training.md", "verifiers"): "verifiers", ("llm-training.md", "GRPOTrainer"): "trl"}
# Lines that install or serve, which a test cannot run offline.
NOT_COMMANDS = ("pip install", "python3 -m venv", "vllm serve", "make ", "docker ")
# The grid every shortened `evaluate` or `compare-rewards` command plays.
SMALL_GRID = ["--templates", "ml_benchmark", "--difficulties", "easy", "--seeds", "1"]
GENERATE_FN = 'def generate(messages):\n    return \'{"action_type": "accept"}\'\n'


def _elsewhere(name: str, text: str) -> str | None:
    return next(
        (test for (where, piece), test in RUN_ELSEWHERE.items() if where == name and piece in text), None
    )


def _snippets() -> list[object]:
    """(page, index) of every Python snippet; importing a trainer's extra takes tens of seconds."""
    params = []
    for name in SHOWN:
        for i, snippet in enumerate(blocks(page(name), "python")):
            heavy = any(where == name and piece in snippet for where, piece in IMPORTS_ONLY)
            params.append(pytest.param(name, i, marks=[pytest.mark.slow] if heavy else []))
    return params


def _commands(name: str) -> list[str]:
    lines = [line for block in blocks(page(name), "bash") for line in block.splitlines() if line.strip()]
    return [line for line in lines if not line.startswith(NOT_COMMANDS)]


def test_every_line_of_a_bash_block_is_a_command_or_an_install() -> None:
    for name in SHOWN:
        for line in _commands(name):
            assert line.startswith("replicalab "), (name, line)


def test_the_readme_links_every_page() -> None:
    readme = page("README.md")
    assert PAGES and all(f"](docs/{name})" in readme for name in PAGES)


def test_every_test_named_here_exists() -> None:
    for test in [*RUN_ELSEWHERE.values()]:
        assert (REPO_ROOT / "tests" / test).is_file(), test


@pytest.mark.parametrize(("name", "index"), _snippets())
def test_every_python_snippet_runs(name: str, index: int, tmp_path: Path) -> None:
    snippet = blocks(page(name), "python")[index]
    if _elsewhere(name, snippet):
        return  # run, shortened, by the test RUN_ELSEWHERE names
    compile(snippet, name, "exec")
    extra = next(
        (module for (where, piece), module in IMPORTS_ONLY.items() if where == name and piece in snippet),
        None,
    )
    if extra is not None:
        pytest.importorskip(extra, reason=f"the {extra} extra is not installed")
        snippet = "\n".join(line for line in snippet.splitlines() if line.startswith(("import ", "from ")))
    done = subprocess.run(
        [sys.executable, "-c", snippet], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr


def _shortened(words: list[str]) -> list[str]:
    """`evaluate` and `compare-rewards` on one small cell set, whatever grid the page names."""
    if words[1] not in ("evaluate", "compare-rewards"):
        return words
    kept = []
    for i, word in enumerate(words):
        if word in ("--seeds", "-t", "--templates", "-d", "--difficulties") or words[i - 1] == "--seeds":
            continue
        kept.append(word)
    return kept + SMALL_GRID


@pytest.mark.parametrize("name", [name for name in SHOWN if _commands(name)])
def test_every_command_runs_in_order(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "mymodule.py").write_text(
        GENERATE_FN
    )  # the GenerateFn `--generate-fn mymodule:generate` names
    for line in _commands(name):
        if _elsewhere(name, line):
            continue
        words = _shortened(shlex.split(line, comments=True))
        result = CliRunner(env={"COLUMNS": "200"}).invoke(app, words[1:])
        assert result.exit_code == 0, (line, result.output)
        assert result.stdout.strip(), line


def test_the_features_page_holds_the_layout_the_module_documents() -> None:
    rows = [line for line in (features.__doc__ or "").splitlines() if line.startswith("| `")]
    shown = [line for line in page("observation-features.md").splitlines() if line.startswith("| `")]
    assert rows and shown == rows


def test_the_layout_page_names_every_module_as_its_docstring_says() -> None:
    text = page("layout.md")
    assert text[text.index("## Modules") :].rstrip("\n") == module_tables()


def _table_shape(text: str) -> list[list[str]]:
    """Each table row of `text` as its header cells, or its row label alone: what a rerun on a
    small grid must reproduce while its figures differ."""
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    return [row.split(" | ")[:1] if any(c.isdigit() for c in row) else row.split(" | ") for row in rows]


@pytest.mark.parametrize(
    ("name", "benchmark"), [("negotiation.md", "benchmarks.negotiation"), ("splits.md", "benchmarks.probes")]
)
def test_a_page_shows_the_tables_its_benchmark_prints(name: str, benchmark: str) -> None:
    """The page's figures come from a 40-seed run; a 1-seed run prints the same tables."""
    done = subprocess.run(
        [sys.executable, "-m", benchmark, "--seeds", "1"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert _table_shape(page(name)) == _table_shape(done.stdout)


def test_every_figure_of_the_speed_page_is_in_the_results() -> None:
    """The speed page quotes `benchmarks/RESULTS.md`, where each figure has its command and date."""
    results = (REPO_ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    figures = re.findall(r"\d+(?:[.,]\d+)+(?:-\d+(?:[.,]\d+)+)?|\d+ ?%|\d+ µs", page("speed.md"))
    assert len(figures) >= 10
    assert [figure for figure in figures if figure not in results] == []


def test_the_scoring_page_shows_the_rules_the_prompt_states() -> None:
    shown = blocks(page("scoring.md"), "text")[0].rstrip("\n")
    assert shown == scoring_rules(generate_scenario(0, "ml_benchmark", "medium", split="validation"))
