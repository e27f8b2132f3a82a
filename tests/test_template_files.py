"""A scenario family from a JSON file: `--template-file` registers it for every command that
takes templates, and worker processes see it however they are started (fork or spawn)."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import replicalab.scenarios.registry as registry
from replicalab.baselines.cli import app
from replicalab.baselines.evaluation.runner import Grid, run_grid
from replicalab.baselines.policies.seats import BaselineScientist
from replicalab.scenarios import TemplateData, generate_scenario, register_template, template_names


@pytest.fixture(autouse=True)
def own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A family registered here stays out of the other tests (they list every template)."""
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))


def _family(name: str = "my_family") -> dict[str, object]:
    text = (resources.files("replicalab.scenarios") / "data" / "ml_benchmark.json").read_text("utf-8")
    data: dict[str, object] = json.loads(text)
    data["template"] = name
    return data


@pytest.fixture()
def family_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_family.json"
    path.write_text(json.dumps(_family()), encoding="utf-8")
    return path


def _invoke(runner: CliRunner, *args: str) -> Result:
    return runner.invoke(app, list(args))


def test_every_command_that_takes_templates_takes_a_template_file(
    runner: CliRunner, family_file: Path, tmp_path: Path
) -> None:
    listed = _invoke(runner, "scenarios", "--json", "--template-file", str(family_file))
    assert listed.exit_code == 0, listed.output
    assert "my_family" in [f["template"] for f in json.loads(listed.stdout)]
    shown = _invoke(
        runner, "scenarios", "--template-file", str(family_file), "--show", "my_family", "hard", "2", "--json"
    )
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["scenario_id"] == "my_family-train-hard-2"
    for jobs in ("1", "2"):
        args = ["--template-file", str(family_file), "-t", "my_family", "--seeds", "2", "-j", jobs]
        evaluated = _invoke(runner, "evaluate", *args)
        assert evaluated.exit_code == 0, evaluated.output
        assert "my_family/hard" in evaluated.stdout and "= 6 episodes" in evaluated.stdout
    compared = _invoke(
        runner,
        "compare-rewards",
        "--template-file",
        str(family_file),
        "-t",
        "my_family",
        "-d",
        "easy",
        "--seeds",
        "1",
        "-p",
        "sparse",
        "--out-dir",
        str(tmp_path / "cmp"),
    )
    assert compared.exit_code == 0, compared.output
    assert (tmp_path / "cmp" / "reward_components.csv").read_text().count("\nsparse,") == 3


def test_the_option_repeats(runner: CliRunner, tmp_path: Path) -> None:
    paths = []
    for name in ("fam_a", "fam_b"):
        paths += ["--template-file", str(tmp_path / f"{name}.json")]
        (tmp_path / f"{name}.json").write_text(json.dumps(_family(name)), encoding="utf-8")
    result = _invoke(runner, "evaluate", *paths, "-t", "fam_a,fam_b", "-d", "easy", "--seeds", "1")
    assert result.exit_code == 0, result.output
    assert "fam_a/easy" in result.stdout and "fam_b/easy" in result.stdout


def _write(tmp_path: Path, name: str, data: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _few_cases(tmp_path: Path) -> str:
    data = _family()
    data["cases"] = data["cases"][:2]  # type: ignore[index]
    return _write(tmp_path, "few.json", data)


def _unreplaceable(tmp_path: Path) -> str:
    data = _family()
    first = data["cases"][0]  # type: ignore[index]
    first["needed_reagents"] = [*first["needed_reagents"], "unobtainium"]
    return _write(tmp_path, "lonely.json", data)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda tmp: _write(tmp, "ml.json", _family("ml_benchmark")),
            "names the built-in family 'ml_benchmark'",
        ),
        (_few_cases, "cases: List should have at least 3 items"),
        (_unreplaceable, "needs 'unobtainium', which no substitution replaces"),
        (lambda tmp: _write(tmp, "junk.json", [1, 2]), "junk.json"),
        (lambda tmp: str(tmp / "absent.json"), "does not exist"),
    ],
)
def test_a_bad_template_file_exits_2_with_one_line(
    runner: CliRunner, tmp_path: Path, make: object, message: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    result = _invoke(runner, "evaluate", "--template-file", path, "--seeds", "1")
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert result.output.count("\n") <= 6


def test_two_files_may_not_define_one_family(runner: CliRunner, family_file: Path, tmp_path: Path) -> None:
    twin = _write(tmp_path, "twin.json", _family())
    result = _invoke(runner, "scenarios", "--template-file", str(family_file), "--template-file", twin)
    assert result.exit_code == 2
    assert f"{family_file} and {twin} both define 'my_family'" in result.output


@pytest.fixture()
def spawned_workers() -> Iterator[None]:
    """Worker processes started fresh, as on macOS and Windows: nothing is inherited."""
    previous = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("spawn", force=True)
    try:
        yield
    finally:
        multiprocessing.set_start_method(previous, force=True)


def test_spawned_workers_play_a_registered_family(spawned_workers: None) -> None:
    register_template(TemplateData.model_validate(_family()))
    assert "my_family" in template_names()
    grid = Grid.of(["my_family"], ["easy", "hard"], 2)
    parallel = run_grid(grid, BaselineScientist, jobs=2)
    serial = run_grid(grid, BaselineScientist, jobs=1)
    assert [log.model_dump_json() for log in parallel.logs] == [log.model_dump_json() for log in serial.logs]
    assert {log.template for log in parallel.logs} == {"my_family"}


def test_spawned_workers_play_a_replaced_family(spawned_workers: None) -> None:
    """A family replaced in the parent is the replacement in every worker too."""
    data = _family("ml_benchmark")
    data["cases"] = list(reversed(data["cases"]))  # type: ignore[call-overload]
    register_template(TemplateData.model_validate(data), replace=True)
    grid = Grid.of(["ml_benchmark"], ["easy"], 3)
    parallel = run_grid(grid, BaselineScientist, jobs=2)
    serial = run_grid(grid, BaselineScientist, jobs=1)
    assert [log.model_dump_json() for log in parallel.logs] == [log.model_dump_json() for log in serial.logs]


def test_a_family_of_train_cases_only_is_told_how_to_run(runner: CliRunner, tmp_path: Path) -> None:
    data = _family()
    for case in data["cases"]:  # type: ignore[attr-defined]
        case["split"] = "train"
    path = _write(tmp_path, "my_family", data)
    result = _invoke(runner, "evaluate", "--template-file", path, "-t", "my_family", "--seeds", "1")
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "template 'my_family' has no test cases (it has 16 train)" in message
    assert "--split train" in message and '"split": "test"' in message
    play = ["-t", "my_family", "-d", "easy", "--seeds", "1", "--split", "train", "--no-oracle"]
    ran = _invoke(runner, "evaluate", "--template-file", path, *play)
    assert ran.exit_code == 0, ran.output
    with pytest.raises(ValueError, match=r"has no validation cases \(it has 16 train\): play split='train'"):
        generate_scenario(0, "my_family", "easy", "validation")


def _broken_family(tmp_path: Path, change: str) -> str:
    data = _family()
    case = data["cases"][3]  # type: ignore[index]
    if change == "clue":
        case["techniques"][1]["clue"] = "The study used something else entirely."
    elif change == "denied":
        name = case["techniques"][1]["name"]
        case["techniques"][1]["clue"] = f"The study did not use {name}."
    elif change == "denied after":
        name = case["techniques"][1]["name"]
        case["techniques"][1]["clue"] = f"{name.capitalize()} was never part of the study."
    elif change == "negated":
        case["elements"][0]["negated"] = "The study skipped it."
    elif change == "infinite":
        case["target_range"] = [float("inf"), float("inf")]  # json.dumps writes Infinity
    else:
        case["target_range"] = [0.9, 0.1]
    return _write(tmp_path, "my_family", data)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("clue", "cases.3.techniques.1: Value error, clue: must name"),
        ("denied", "cases.3.techniques.1: Value error, clue: must affirm"),
        ("denied after", "cases.3.techniques.1: Value error, clue: must affirm"),
        ("negated", "cases.3.elements.0: Value error, negated: must name"),
        ("infinite", "target_range of {case}: must be finite numbers, got [inf, inf]"),
        ("reversed", "target_range of {case}: must be [low, high], got [0.9, 0.1]"),
    ],
)
def test_registration_checks_each_rule_and_names_the_culprit(
    runner: CliRunner, tmp_path: Path, change: str, said: str
) -> None:
    path = _broken_family(tmp_path, change)
    case_id = _family()["cases"][3]["case_id"]  # type: ignore[index]
    result = _invoke(runner, "scenarios", "--template-file", path)
    assert result.exit_code == 2, result.output
    assert said.format(case=repr(case_id)) in " ".join(result.output.split())
