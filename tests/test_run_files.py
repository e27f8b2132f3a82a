"""`evaluate --out runs/x.jsonl` writes beside its log the reference policies' scores (for the
report's `norm.`, `regret` and `vs public`) and the `--wide` table as CSV and JSON, the numbers it
printed, each file with the run's provenance."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from typer.testing import CliRunner

from replicalab.baselines.cli import app
from replicalab.baselines.evaluation import report
from replicalab.baselines.evaluation.run_files import SUMMARY_COLUMNS, read_oracle, read_summary
from replicalab.models.provenance import PROVENANCE_FIELDS

GRID = ["-t", "ml_benchmark", "-d", "easy,hard", "--seeds", "2"]


def _printed_rows(stdout: str) -> list[list[str]]:
    """The body rows of the printed table, cell by cell."""
    rows = [[cell.strip() for cell in line.split("│")] for line in stdout.splitlines() if "│" in line]
    return [row for row in rows if row and row[0] and row[0] != "cell"]


def test_evaluate_writes_the_wide_table_and_the_oracle_beside_its_log(
    runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "runs" / "reader.jsonl"
    result = runner.invoke(app, ["evaluate", *GRID, "--wide", "--out", str(out)])
    assert result.exit_code == 0, result.output
    csv_path, json_path = (
        tmp_path / "runs" / "reader.summary.csv",
        tmp_path / "runs" / "reader.summary.json",
    )
    assert f"summary: {csv_path}, {json_path}" in " ".join(result.stdout.split())  # however it wraps
    with csv_path.open(encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle))
    summary = json.loads(json_path.read_text(encoding="utf-8"))
    written = summary["rows"]
    assert (
        list(table[0]) == [*SUMMARY_COLUMNS, *PROVENANCE_FIELDS]
        and [list(row) for row in written] == [list(SUMMARY_COLUMNS)] * 3
    )
    assert summary["left_out"] == 0 and summary["provenance"]["policy"] == "reader"
    assert {line["policy"] for line in table} == {"reader"} and table[0]["seeds"] == "0-1"
    printed = _printed_rows(result.stdout)
    assert (
        [row[0] for row in printed]
        == [row["cell"] for row in written]
        == ["ml_benchmark/easy", "ml_benchmark/hard", "overall"]
    )
    for shown, row, line in zip(printed, written, table, strict=True):
        assert shown[1:4] == [
            str(row["n"]),
            f"{row['score']:.2f} ± {row['score_ci95']:.2f}",
            f"{row['return']:.2f} ± {row['return_ci95']:.2f}",
        ]
        assert shown[4] == report.percent(row["agree"]) and shown[-3:] == [
            report.number(row["regret"]),
            report.number(row["norm"]),
            report.number(row["vs_public"]),
        ]
        assert row["norm"] is not None and float(line["norm"]) == row["norm"]
        assert row["vs_public"] is not None and float(line["vs_public"]) == row["vs_public"]
    oracle = read_oracle(out)
    cells = sorted(f"ml_benchmark-test-{level}-{seed}" for level in ("easy", "hard") for seed in (0, 1))
    assert oracle is not None and sorted(oracle.scores) == cells
    assert oracle.public_scores is not None and sorted(oracle.public_scores) == cells
    assert oracle.provenance is not None and oracle.provenance.policy == "oracle"
    assert oracle.provenance.model_copy(update={"policy": "reader"}) == read_summary(out).provenance
    again = runner.invoke(app, ["evaluate", *GRID, "--no-oracle", "--force", "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert read_oracle(out) is None  # an earlier run's oracle is not this run's
    assert read_summary(out).rows[-1]["norm"] is None and read_summary(out).rows[-1]["vs_public"] is None
