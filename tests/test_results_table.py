"""The results table: `agree` counts feasible agreements only, a column of its own counts plans
accepted although they fail a hard check, and the default table reads whole at 80 columns."""

from __future__ import annotations

import dataclasses
import io

import pytest
from rich.console import Console
from typer.testing import CliRunner

from replicalab.baselines.cli import app
from replicalab.baselines.evaluation import report
from replicalab.baselines.evaluation.metrics import Summary, summarize
from replicalab.baselines.evaluation.runner import Grid, run_grid
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.readers import PublicOracleScientist
from replicalab.baselines.policies.seats import RandomScientist
from replicalab.digest import EpisodeDigest
from replicalab.models import Verdict

HEADERS = ("cell", "n", "score", "± 95% CI", "agree", "accepted", "infeasible", "norm.", "vs", "public")
WIDE_HEADERS = (*HEADERS, "return", "rounds", "invalid", "rigor", "feas.", "fidelity", "regret")


def _digest(seed: int, verdict: Verdict | None) -> EpisodeDigest:
    return EpisodeDigest(
        episode_id=f"ml_benchmark-train-easy-{seed}/x/y",
        scenario_id=f"ml_benchmark-train-easy-{seed}",
        template="ml_benchmark",
        difficulty="easy",
        seed=seed,
        verdict=verdict,
        score=4.0 if verdict == "agreement" else 0.0,
        scientist_return=0.0,
        rounds_used=2,
        invalid_action_count=0,
        steps=4,
        agreed=None,
    )


def test_agree_counts_feasible_agreements_and_a_column_counts_infeasible_accepts() -> None:
    verdicts: list[Verdict | None] = [
        "agreement",
        "accept_infeasible",
        "accept_infeasible",
        "accept_without_consent",
        "round_limit",
        "truncated",
        "agreement",
        "accept_infeasible",
    ]
    overall = summarize([_digest(seed, v) for seed, v in enumerate(verdicts)])[-1]
    assert overall.agreement_rate == 2 / 8
    assert overall.accepted_infeasible_rate == 3 / 8
    text = _render(report.results_table([overall], "t"), 80)
    assert _values(text, "overall") == ["overall", "8", "1.00 ± 1.55", "25%", "38%", "—", "—"]


@pytest.fixture(scope="module")
def rows() -> list[Summary]:
    """A realistic table: every built-in cell (the longest label included), with an oracle."""
    grid = Grid.of(seeds=3)
    mine = run_grid(grid, RandomScientist).digests
    return summarize(
        mine, run_grid(grid, OracleScientist).digests, run_grid(grid, PublicOracleScientist).digests
    )


def _render(table: object, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(table)
    return console.export_text()


def _values(text: str, label: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"{label} "))
    return [cell.strip() for cell in line.strip("│┃ ").split("│")]


def _expected(row: Summary, wide: bool) -> list[str]:
    narrow = [
        row.label,
        str(row.episodes),
        report.estimate(row.score),
        report.percent(row.agreement_rate),
        report.percent(row.accepted_infeasible_rate),
    ]
    if not wide:
        return [*narrow, report.number(row.normalised), report.number(row.vs_public)]
    return [
        *narrow[:3],
        report.estimate(row.returns),
        *narrow[3:],
        report.number(row.mean_rounds, 1),
        report.percent(row.invalid_rate),
        report.number(row.rigor),
        report.number(row.feasibility),
        report.number(row.fidelity),
        report.number(row.regret),
        report.number(row.normalised),
        report.number(row.vs_public),
    ]


def test_the_default_table_reads_whole_at_80_columns(rows: list[Summary]) -> None:
    text = _render(report.results_table(rows, "random vs grounded · reward default\n3 × 3 × 3"), 80)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    header = "\n".join(text.splitlines()[:6])
    for name in HEADERS:
        assert name in header
    for row in rows:
        assert _values(text, row.label) == _expected(row, wide=False)


def test_a_long_family_name_folds_instead_of_being_cut(rows: list[Summary]) -> None:
    long = dataclasses.replace(rows[0], label="a_family_with_a_very_long_name_indeed/medium")
    text = _render(report.results_table([long, rows[-1]], "t"), 80)
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    assert _values(text, rows[-1].label) == _expected(rows[-1], wide=False)


def test_the_wide_table_has_every_column(rows: list[Summary]) -> None:
    text = _render(report.results_table(rows, "t", wide=True), 160)
    assert "…" not in text
    for name in WIDE_HEADERS:
        assert name in text
    for row in rows:
        assert _values(text, row.label) == _expected(row, wide=True)


def test_evaluate_prints_a_table_that_fits_80_columns() -> None:
    runner = CliRunner(env={"COLUMNS": "80"})
    args = ["evaluate", "-t", "finance_trading", "-d", "medium", "--seeds", "3", "-s", "random"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= 80
    for name in HEADERS:
        assert name in out
    assert _values(out, "finance_trading/medium")[:2] == ["finance_trading/medium", "3"]
    assert "norm. against the oracle on the same seeds" in out
