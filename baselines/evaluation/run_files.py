"""The files `evaluate --out runs/x.jsonl` writes beside its log, for whoever reads the run later.

- `runs/x.oracle.json`: the oracle's and the public-information oracle's score per scenario id,
  when the run played them, so that `replicalab report` fills `norm.`, `regret` and `vs public`
  as the run's own table did. Kept out of the log, whose lines are the episodes and nothing else.
- `runs/x.summary.csv` and `runs/x.summary.json`: the results table with every column, one row
  per cell and the overall row last, as numbers a script reads (a rate as a share, an interval
  as its half-width, empty or null where the table shows `—`).

Each carries the run's `Provenance`: the JSON files as a `provenance` object, the CSV as one
column per field on every row, so rows of several runs concatenated still say where each came
from.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from replicalab.baselines.evaluation.metrics import Summary
from replicalab.digest import EpisodeDigest
from replicalab.models import Contract, Provenance

Value = str | int | float | None
SUMMARY_COLUMNS = (
    "cell", "n", "score", "score_ci95", "return", "return_ci95", "agree", "accepted_infeasible",
    "rounds", "invalid", "rigor", "feasibility", "fidelity", "regret", "norm", "vs_public",
)  # fmt: skip
"""The columns of `evaluate --wide`, in its order, a mean and its interval's half-width apart;
the CSV adds the provenance's fields after them (`PROVENANCE_FIELDS`)."""


class OracleScores(Contract):
    """The reference policies' judge score per scenario id of a run's grid, under the run's
    settings: the oracle's (`scores`) and the public-information oracle's (`public_scores`).
    A file written before the public oracle was played, or provenance recorded, lacks them."""

    provenance: Provenance | None = None  # the run's, with the oracle against the grounded Lab Manager
    scores: dict[str, float]
    public_scores: dict[str, float] | None = None


class RunSummary(Contract):
    """`runs/x.summary.json`: what produced the run, how many of its episodes a server's failure
    left out of the table (a partial run when any), and the table's rows."""

    provenance: Provenance | None
    left_out: int  # episodes with a server's failure, in no row
    rows: list[dict[str, Value]]


def beside(out: str | os.PathLike[str], suffix: str) -> Path:
    """A file beside the log `out`: `runs/x.jsonl` with `.usage.jsonl` → `runs/x.usage.jsonl`."""
    path = Path(out)
    return path.with_name(path.with_suffix("").name + suffix)


def oracle_path(out: str | os.PathLike[str]) -> Path:
    return beside(out, ".oracle.json")


def summary_paths(out: str | os.PathLike[str]) -> tuple[Path, Path]:
    return beside(out, ".summary.csv"), beside(out, ".summary.json")


def write_oracle(
    out: str | os.PathLike[str],
    reference: Sequence[EpisodeDigest] | None,
    public: Sequence[EpisodeDigest] | None = None,
    provenance: Provenance | None = None,
) -> None:
    """Keep the oracle's scores (and the public-information oracle's, when played) beside `out`,
    with `provenance`, the run's; without a reference, remove any an earlier run left, which may
    have been played under other settings."""
    path = oracle_path(out)
    if reference is None:
        path.unlink(missing_ok=True)
        return
    seats = {"policy": "oracle", "model": None, "lab_manager": "grounded", "lab_manager_model": None}
    scores = OracleScores(
        provenance=None if provenance is None else provenance.model_copy(update=seats),
        scores=_by_scenario(reference),
        public_scores=None if public is None else _by_scenario(public),
    )
    path.write_text(scores.model_dump_json(indent=1) + "\n", encoding="utf-8")


def _by_scenario(episodes: Sequence[EpisodeDigest]) -> dict[str, float]:
    return {episode.scenario_id: episode.score for episode in episodes}


def reference_scores(
    log: str | os.PathLike[str], played: Provenance | None
) -> tuple[dict[str, float] | None, dict[str, float] | None]:
    """The oracle's and the public-information oracle's scores kept beside the log `log` (None
    for what its run did not play), refused where they were played under other settings than
    the run, whose provenance is `played`."""
    kept = read_oracle(log)
    if kept is None:
        return None, None
    recorded = kept.provenance
    if recorded is not None and played is not None and recorded.without_seats() != played.without_seats():
        raise ValueError(f"{oracle_path(log)}: played under other settings than {log}; run evaluate again")
    return kept.scores, kept.public_scores


def read_oracle(log: str | os.PathLike[str]) -> OracleScores | None:
    """The reference scores kept beside the log `log`, or None when its run kept none."""
    path = oracle_path(log)
    if not path.is_file():
        return None
    try:
        return OracleScores.model_validate_json(path.read_bytes())
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
        row.vs_public,
    ]
    return dict(zip(SUMMARY_COLUMNS, map(_number, values), strict=True))


def _number(value: Value) -> Value:
    return None if isinstance(value, float) and math.isnan(value) else value


def write_summaries(
    out: str | os.PathLike[str],
    rows: Sequence[Summary],
    provenance: Provenance | None = None,
    left_out: int = 0,
) -> tuple[Path, Path]:
    """The table `rows` as CSV and JSON beside the log `out`, with the run's `provenance` and
    the count of episodes a server's failure `left_out`; the two paths."""
    records = [summary_record(row) for row in rows]
    csv_path, json_path = summary_paths(out)
    origin: dict[str, str] = {} if provenance is None else provenance.flat()
    with csv_path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=SUMMARY_COLUMNS + tuple(origin), lineterminator="\n")
        writer.writeheader()
        writer.writerows(_csv_row(record) | origin for record in records)
    summary = RunSummary(provenance=provenance, left_out=left_out, rows=records)
    json_path.write_text(summary.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return csv_path, json_path


def read_summary(out: str | os.PathLike[str]) -> RunSummary:
    """The summary JSON kept beside the log `out`."""
    return RunSummary.model_validate_json(summary_paths(out)[1].read_bytes())


def _csv_row(record: Mapping[str, Value]) -> dict[str, Value]:
    return {name: "" if value is None else value for name, value in record.items()}
