"""The README and the family page do what they say: docs/adding-a-family.md run as written, step
by step, in a fresh directory and fresh processes; its table of keys names every `TemplateData`
field; the README's quick start shows what `make evaluate` prints, in at most 150 lines."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import replicalab.scenarios.registry as registry
from replicalab.baselines.cli import app
from replicalab.scenarios import DIFFICULTIES, PaperCase, TemplateData, generate_scenario, register_template
from tests.docs_pages import blocks, page, section
from tests.processes import REPO_ROOT

# The CLI as the `replicalab` console script runs it, from any directory.
_CLI = [sys.executable, "-c", "from replicalab.baselines.cli import app; app(prog_name='replicalab')"]


FAMILY = page("adding-a-family.md")


def _run(args: list[str], cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args[-1]!r} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_family_section_runs_as_written(tmp_path: Path) -> None:
    python = blocks(FAMILY, "python")
    commands = [line for block in blocks(FAMILY, "bash") for line in block.splitlines() if line.strip()]
    assert len(python) == 2 and len(commands) == 2
    for block in python:  # write my_family.json, then register it and generate from it
        _run([sys.executable, "-c", block], tmp_path)
    assert json.loads((tmp_path / "my_family.json").read_text())["template"] == "my_family"
    outputs = []
    for line in commands:
        words = shlex.split(line, comments=True)
        assert words[0] == "replicalab"
        outputs.append(_run([*_CLI, *words[1:]], tmp_path))
    assert "my_family-train-hard-0" in outputs[0]
    assert "--template-file my_family.json -t my_family --seeds 2" in commands[1]
    for level in DIFFICULTIES:
        assert f"my_family/{level}" in outputs[1]
    assert "= 6 episodes" in outputs[1]


def test_the_family_example_is_a_valid_family_once_it_has_three_cases(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))  # keep it from other tests
    (example,) = blocks(FAMILY, "json")
    data = json.loads(example)
    (case,) = data["cases"]
    PaperCase.model_validate(case)
    data["cases"] = [{**case, "case_id": f"{case['case_id']}_{i}"} for i in range(3)]
    register_template(TemplateData.model_validate(data))
    for level in DIFFICULTIES:
        assert generate_scenario(1, "my_family", level).case_id.startswith(case["case_id"])


def test_the_table_of_keys_names_every_field() -> None:
    keys = re.findall(r"^\| `(\w+)` \|", FAMILY, re.MULTILINE)
    assert keys == list(TemplateData.model_fields)
    for field in PaperCase.model_fields:
        assert f'"{field}"' in FAMILY


@pytest.mark.parametrize("rule", ["at least 3", "at least 4", "never an item a case needs"])
def test_the_section_states_the_rules_the_registry_enforces(rule: str) -> None:
    assert rule in FAMILY


def test_the_quick_start_shows_what_make_evaluate_prints() -> None:
    (shown,) = blocks(section(page("README.md"), "Quick start"), "text")
    (recipe,) = re.findall(
        r"^evaluate:.*\n\t\$\(BIN\)/replicalab (.+)$", (REPO_ROOT / "Makefile").read_text(), re.M
    )
    result = CliRunner(env={"COLUMNS": "160"}).invoke(app, recipe.split())  # as piped by make
    assert result.exit_code == 0, result.output
    printed = [line.rstrip() for line in result.stdout.splitlines()]
    expected = shown.splitlines()
    assert printed[:-1] == expected[:-1]  # the last line is the time taken
    assert re.fullmatch(r"540 episodes played in \d+\.\d s", printed[-1])


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    readme = page("README.md")
    assert len(readme.splitlines()) <= 150
    (commands,) = blocks(section(readme, "Quick start"), "bash")
    assert [line.split()[:2] for line in commands.splitlines()] == [["make", "evaluate"], ["make", "test"]]
