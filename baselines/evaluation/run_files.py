"""The files `evaluate --out runs/x.jsonl` writes beside its log, for whoever reads the run later.

- `runs/x.oracle.json`: the oracle's score per scenario id, when the run played the oracle, so
  that `replicalab report` fills `norm.` and `regret` as the run's own table did. Kept out of
  the log, whose lines are the episodes and nothing else.
- `runs/x.summary.csv` and `runs/x.summary.json`: the results table with every column, one row
  per cell and the overall row last, as numbers a script reads (a rate as a share, an interval
  as its half-width, empty or null where the table shows `—`).
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import TypeAdapter

from replicalab.baselines.evaluation.metrics import Summary
from replicalab.digest import EpisodeDigest
from replicalab.models import Contract

Value = str | int | float | None
SUMMARY_COLUMNS = (
    "cell", "n", "score", "score_ci95", "return", "return_ci95", "agree", "accepted_infeasible",
    "rounds", "invalid", "rigor", "feasibility", "fidelity", "regret", "norm",
)  # fmt: skip
"""The columns of `evaluate --wide`, in its order, a mean and its interval's half-width apart."""


class OracleScores(Contract):
    """The oracle's judge score per scenario id of a run's grid, under the run's settings."""

    scores: dict[str, float]


def beside(out: str | os.PathLike[str], suffix: str) -> Path:
    """A file beside the log `out`: `runs/x.jsonl` with `.usage.jsonl` → `runs/x.usage.jsonl`."""
    path = Path(out)
    return path.with_name(path.with_suffix("").name + suffix)


def oracle_path(out: str | os.PathLike[str]) -> Path:
    return beside(out, ".oracle.json")


def summary_paths(out: str | os.PathLike[str]) -> tuple[Path, Path]:
    return beside(out, ".summary.csv"), beside(out, ".summary.json")


def write_oracle(out: str | os.PathLike[str], reference: Sequence[EpisodeDigest] | None) -> None:
    """Keep the oracle's scores beside `out`; without a reference, remove any an earlier run
    left, which may have been played under other settings."""
    path = oracle_path(out)
    if reference is None:
        path.unlink(missing_ok=True)
        return
    scores = OracleScores(scores={episode.scenario_id: episode.score for episode in reference})
    path.write_text(scores.model_dump_json(indent=1) + "\n", encoding="utf-8")


def read_oracle(log: str | os.PathLike[str]) -> dict[str, float] | None:
    """The oracle's scores kept beside the log `log`, or None when its run kept none."""
    path = oracle_path(log)
    if not path.is_file():
        return None
    try:
        return OracleScores.model_validate_json(path.read_bytes()).scores
    except ValueError as error:
        raise ValueError(f"{path}: not an oracle scores file ({error.__class__.__name__})") from None


def summary_record(row: Summary) -> dict[str, Value]:
    """One row of the table as numbers, under `SUMMARY_COLUMNS`; None where the table shows `—`."""
    values: list[Value] = [
        row.label,
        row.episodes,
        row.score.mean,
        row.score.half_width,
        row.returns.mean,
        row.returns.half_width,
        row.agreement_rate,
        row.accepted_infeasible_rate,
        row.mean_rounds,
        row.invalid_rate,
        row.rigor,
        row.feasibility,
        row.fidelity,
        row.regret,
        row.normalised,
    ]
    return dict(zip(SUMMARY_COLUMNS, map(_number, values), strict=True))


def _number(value: Value) -> Value:
    return None if isinstance(value, float) and math.isnan(value) else value


def write_summaries(out: str | os.PathLike[str], rows: Sequence[Summary]) -> tuple[Path, Path]:
    """The table `rows` as CSV and JSON beside the log `out`; the two paths."""
    records = [summary_record(row) for row in rows]
    csv_path, json_path = summary_paths(out)
    with csv_path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(_csv_row(record) for record in records)
    json_path.write_bytes(_RECORDS.dump_json(records, indent=1) + b"\n")
    return csv_path, json_path


def _csv_row(record: Mapping[str, Value]) -> dict[str, Value]:
    return {name: "" if value is None else value for name, value in record.items()}


_RECORDS = TypeAdapter(list[dict[str, Value]])
