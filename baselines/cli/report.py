"""`replicalab report`: one self-contained HTML page of one or more runs' logs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from replicalab.baselines.cli.errors import Problem, user_errors
from replicalab.baselines.cli.output import counted
from replicalab.baselines.cli.replay import read_logs
from replicalab.baselines.evaluation.run_files import reference_scores
from replicalab.install import install_hint


def _names(paths: list[Path]) -> list[str]:
    """Each run's name on the page: its file's stem, or its whole path where two stems clash."""
    stems = [path.stem for path in paths]
    return [stem if stems.count(stem) == 1 else str(path) for stem, path in zip(stems, paths, strict=True)]


def report(
    paths: Annotated[
        list[Path], typer.Argument(help="JSONL logs written by `evaluate --out`; one run each.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("report.html"),
) -> None:
    """Write one HTML page (no server, no network) of runs: tables, plots, every episode."""
    with user_errors():
        try:
            from replicalab.baselines.evaluation.html_report import Run, build_page, comparability_warnings
        except ImportError:
            raise Problem(f"report draws its plots with plotly: {install_hint('report')}") from None
        if len(set(paths)) < len(paths):
            raise Problem("a log is given twice; give each run once")
        runs = []
        for name, path in zip(_names(paths), paths, strict=True):
            run = Run(name, read_logs(path))
            oracle, public = reference_scores(path, run.provenance)
            runs.append(Run(name, run.logs, oracle, public))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(build_page(runs), encoding="utf-8")
    for warning in comparability_warnings(runs):
        typer.echo(f"warning: {warning}", err=True)
    episodes = sum(len(run.logs) for run in runs)
    typer.echo(f"wrote {out}: {counted(len(runs), 'run')}, {counted(episodes, 'episode')}")
