"""The reading data set: one row per candidate of each paper, labelled with what the paper's
sentences record of it, in each split's own wording; `replicalab export-reading` writes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replicalab.baselines.cli import app
from replicalab.reading_dataset import ReadingRow, reading_rows
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario
from replicalab.scenarios.generator import paper_facts


def _recorded(split: str, template: str, difficulty: str, seed: int) -> dict[str, set[str]]:
    """What the generator recorded of each candidate as it wrote the paper, meaning by meaning."""
    said: dict[str, set[str]] = {}
    for fact in paper_facts(generate_scenario(seed, template, difficulty, split)):
        said.setdefault(fact.candidate, set()).add(fact.meaning)
    return said


@pytest.mark.parametrize("split", ["train", "validation", "test"])
def test_every_candidate_is_a_row_whose_label_is_what_its_sentences_record(split: str) -> None:
    rows = list(reading_rows(split, 3, first_seed=5))
    assert len({r.scenario_id for r in rows}) == 3 * len(BUILTIN_TEMPLATES) * len(DIFFICULTIES)
    for row in rows:
        meanings = _recorded(split, row.template, row.difficulty, row.seed).get(row.candidate, set())
        expected = (
            "used"
            if "used" in meanings
            else "not_used"
            if "not_used" in meanings
            else "mentioned"
            if meanings
            else "unstated"
        )
        assert row.label == expected, row
        assert row.split == split and row.candidate and row.paper.method
        pack = generate_scenario(row.seed, row.template, row.difficulty, split)
        assert row.paper == pack.paper
        listed = {"technique": pack.candidates.techniques, "element": pack.candidates.elements}
        assert row.candidate in listed.get(row.kind, pack.candidates.controls)
    assert {r.label for r in rows} == {"used", "not_used", "mentioned", "unstated"}


def test_each_split_s_rows_come_from_its_own_papers() -> None:
    titles = {
        split: {r.paper.title for r in reading_rows(split, 4, templates=["ml_benchmark"])}
        for split in ("train", "validation", "test")
    }
    assert not titles["train"] & titles["test"] and not titles["train"] & titles["validation"]


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"split": "dev", "seeds": 1}, "split"),
        ({"split": "train", "seeds": 0}, "seeds"),
        ({"split": "train", "seeds": 1, "first_seed": -1}, "first_seed"),
        ({"split": "train", "seeds": 1, "templates": ["nope"]}, "template"),
        ({"split": "train", "seeds": 1, "difficulties": ["extreme"]}, "difficulty"),
    ],
)
def test_a_bad_argument_is_refused_naming_it(kwargs: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        next(reading_rows(**kwargs))  # type: ignore[arg-type]


def test_export_reading_writes_the_rows_as_json_lines(tmp_path: Path) -> None:
    out = tmp_path / "reading.jsonl"
    args = ["export-reading", "--split", "validation", "--seeds", "2", "-t", "finance_trading", "--out"]
    result = CliRunner().invoke(app, [*args, str(out)])
    assert result.exit_code == 0, result.output
    written = [ReadingRow.model_validate(json.loads(line)) for line in out.read_text().splitlines()]
    expected = list(reading_rows("validation", 2, templates=["finance_trading"]))
    assert written == expected
    assert f"{len(expected)} rows" in result.output


def test_export_reading_refuses_a_bad_split_without_writing(tmp_path: Path) -> None:
    out = tmp_path / "reading.jsonl"
    result = CliRunner().invoke(app, ["export-reading", "--split", "dev", "--out", str(out)])
    assert result.exit_code == 2 and "split" in result.output and not out.exists()
