"""Learning curves on the test and train splits, from the checkpoints `replicalab train` saves.

`train` measures its curve on the validation split while it trains, in judge points; a user
comparing views or presets wants the held-out split and the train split in the unit `evaluate`
reports, the share of the oracle's score on the same scenarios (`norm.`), and whether the
policy asks the lab before it proposes. This replays every checkpoint of each run folder on
each split (`--seeds` per template and difficulty, the runner as `evaluate` plays a saved model,
on the view the run trained on), writes one row per (run, split, checkpoint) to a CSV and draws
the curves, one panel per split:

    python -m benchmarks.training_curves RUN [RUN ...] --out curves.csv --seeds 4

A run folder is labelled by its `config.json` (view and seed); the oracle's scores are computed
once per split and shared by every checkpoint. Rows already in `--out` are kept, not replayed, so
a call during training measures the checkpoints saved since the last one.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from matplotlib.ticker import FuncFormatter

from replicalab.baselines.evaluation.metrics import summarize_group
from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.structured import SavedMaskablePPO, StructuredScientist, trained_reading
from replicalab.baselines.training.figures import new_figure
from replicalab.digest import EpisodeDigest
from replicalab.models import EpisodeLog

SPLITS = ("test", "train")


class CurveRow(NamedTuple):
    """One checkpoint of one run measured on one split."""

    run: str  # "<view> seed <n>"
    split: str
    steps: int
    norm: float  # the policy's score over the oracle's, all difficulties
    norm_hard: float  # the same on hard scenarios
    asks_first_hard: float  # share of hard episodes whose first Scientist move is request_info


def checkpoints(run: Path) -> list[tuple[int, Path]]:
    """A run's saved checkpoints, by the steps trained when each was saved."""
    found = []
    for path in (run / "checkpoints").glob("model_*_steps.zip"):
        match = re.fullmatch(r"model_(\d+)_steps\.zip", path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def run_label(run: Path) -> str:
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    return f"{config.get('reading', 'text')} seed {config['seed']}"


def asks_first(log: EpisodeLog) -> bool:
    first = next((step for step in log.steps if step.agent == "scientist"), None)
    return first is not None and first.action_type == "request_info"


def share(digests: Sequence[EpisodeDigest], oracle: dict[str, float]) -> float:
    """`evaluate`'s `norm.` of `digests`: Σ score over Σ the oracle's on the same scenarios."""
    return summarize_group("", digests, reference=oracle).normalised or math.nan


def measure(model: Path, grid: Grid, split: str, oracle: dict[str, float]) -> tuple[float, float, float]:
    """(norm., norm. on hard, share of hard episodes that ask first) of a saved model."""
    reading = trained_reading(str(model))
    act = SavedMaskablePPO(model)
    result = run_grid(grid, lambda: StructuredScientist(act, reading=reading), settings=Settings(split=split))
    hard = [d for d in result.digests if d.difficulty == "hard"]
    hard_logs = [log for log in result.logs if log.difficulty == "hard"]
    asked = sum(map(asks_first, hard_logs)) / len(hard_logs) if hard_logs else math.nan
    return share(result.digests, oracle), share(hard, oracle), asked


def curves(
    runs: Sequence[Path], seeds: int, splits: Sequence[str] = SPLITS, done: Sequence[CurveRow] = ()
) -> list[CurveRow]:
    """Every checkpoint of `runs` on every split; rows already `done` are kept, not replayed."""
    grid = Grid.of(seeds=seeds)
    rows = list(done)
    measured = {(row.run, row.split, row.steps) for row in done}
    for split in splits:
        oracle: dict[str, float] | None = None
        for run in runs:
            label = run_label(run)
            for steps, model in checkpoints(run):
                if (label, split, steps) in measured:
                    continue
                if oracle is None:
                    played = run_grid(grid, OracleScientist, settings=Settings(split=split)).digests
                    oracle = {d.scenario_id: d.score for d in played}
                rows.append(CurveRow(label, split, steps, *measure(model, grid, split, oracle)))
                print(rows[-1], flush=True)
    return sorted(rows, key=lambda row: (row.split, row.run, row.steps))


def read_rows(path: Path) -> list[CurveRow]:
    """The rows a previous call wrote to `path` (none if it is not there)."""
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as handle:
        return [
            CurveRow(r["run"], r["split"], int(r["steps"]), *(float(r[f]) for f in CurveRow._fields[3:]))
            for r in csv.DictReader(handle)
        ]


def plot(rows: Sequence[CurveRow], path: Path) -> None:
    """`norm.` against steps, a panel per split (columns) over all difficulties and over hard
    (rows); a line per run, dashed for the text view."""
    splits = list(dict.fromkeys(row.split for row in rows))
    runs = list(dict.fromkeys(row.run for row in rows))
    fig = new_figure()
    fig.set_size_inches(5 * len(splits), 7)
    axes = fig.subplots(2, len(splits), sharex=True, sharey=True, squeeze=False)
    for column, split in enumerate(splits):
        for row, (field, scope) in enumerate((("norm", "all difficulties"), ("norm_hard", "hard"))):
            ax = axes[row][column]
            for i, run in enumerate(runs):
                mine = [r for r in rows if r.run == run and r.split == split]
                style = "--" if run.startswith("text") else "-"
                ax.plot(
                    [r.steps for r in mine],
                    [getattr(r, field) for r in mine],
                    style,
                    color=f"C{i % 10}",
                    label=run,
                )
            ax.set_title(f"{split} split, {scope}", fontsize="medium")
            ax.grid(alpha=0.3)
        axes[1][column].set_xlabel("environment steps")
        axes[1][column].xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:.0f}k"))
    for row in axes:
        row[0].set_ylabel("share of the oracle's score (norm.)")
    axes[0][0].legend(loc="best", fontsize="small")
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="the CSV; the figure goes beside it (.png)")
    parser.add_argument("--seeds", type=int, default=4, help="scenario seeds per template and difficulty")
    parser.add_argument("--splits", default=",".join(SPLITS))
    args = parser.parse_args()
    rows = curves(args.runs, args.seeds, args.splits.split(","), read_rows(args.out))
    with args.out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(CurveRow._fields)
        writer.writerows(rows)
    plot(rows, args.out.with_suffix(".png"))


if __name__ == "__main__":
    main()
