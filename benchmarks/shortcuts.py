"""Shortcuts measured: every cheap class of Scientist, fitted on the train split only
(`benchmarks.shortcut_fits`), played on the test split, each score a share of the
full-information oracle's on the same scenario (paired), mean ± 95 % interval per difficulty and
overall. docs/shortcuts.md explains each class and how to read the table.

Every row plays the same test scenarios (seeds from `FIRST_SEED`, every family and difficulty);
a row with another round limit or split has its own oracle on the same cells. The decipherer
row stands outside the evaluation protocol (docs/splits.md): it fits on the very test papers it
plays, unlabeled, and shows what the wording's guarantees leak to a rule that does. The readers play
the public reader's negotiation (ask, propose, revise); the negotiation rows read every
sentence's meaning, so they differ from the public-information oracle only in how they
negotiate. `--out` writes the figures as JSON or CSV; the same arguments give the same bytes.

    python -m benchmarks.shortcuts [--seeds 40] [--fit-seeds 40] [--out shortcuts.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import NamedTuple

from rich.console import Console
from rich.table import Table

from benchmarks.shortcut_fits import Fitted, fit
from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.policies.decipherer import Decipherer, DeciphererScientist, fit_decipherer
from replicalab.baselines.policies.interface import Policy
from replicalab.baselines.policies.learned_readers import FittedReaderScientist
from replicalab.baselines.policies.openings import OpeningRuleScientist, TrivialPlanScientist
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.probes import BlindScientist, PublicReaderScientist
from replicalab.baselines.policies.readers import (
    ExactNameScientist,
    GuessingOracleScientist,
    PublicOracleScientist,
    SingleCueScientist,
)
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario
from replicalab.scenarios.generator import DEFAULT_MAX_ROUNDS

FIRST_SEED = 10_000  # the measured seeds; the fits read the train seeds from 0
TRIVIAL_ROUNDS = (6, 12, 30)
LEVELS = (*DIFFICULTIES, "all")


class Row(NamedTuple):
    """One class as the table shows it; `key` names it in the figures."""

    key: str
    label: str
    group: str
    make: Callable[[], Policy]
    split: str = "test"
    max_rounds: int = DEFAULT_MAX_ROUNDS


ORACLE, PUBLIC_ORACLE, GUESSING = "oracle", "public-oracle", "guessing"
PROPOSE_ONCE, REVISER = "propose-once", "reviser"
READER_TEST, READER_TRAIN = "reader-test", "reader-train"
DECIPHERER = "decipherer"


def rows(fitted: Fitted, decipherer: Decipherer) -> list[Row]:
    """Every class, in the table's order: readers, probes of the observation, negotiators,
    guessers, then the references (the decipherer among them: it fits on the unlabeled test
    papers, outside the evaluation protocol)."""
    return [*_reading_rows(fitted), *_negotiating_rows(fitted), *_reference_rows(decipherer)]


def _reading_rows(fitted: Fitted) -> list[Row]:
    rule = fitted.single_cue
    reader = FittedReaderScientist
    return [
        Row("frames", "sentence frames + learned synonyms", "read", partial(reader, fitted.frames, "frames")),
        Row("words", "bag of words, negation-aware", "read", partial(reader, fitted.words, "words")),
        Row(
            "positional-words",
            "bag of words + position against “and”",
            "read",
            partial(reader, fitted.positional_words, "pos"),
        ),
        Row("exact-name", "exact name, no negation word", "read", ExactNameScientist),
        Row("memorizer", "memorizer (train titles; blind elsewhere)", "read", lambda: fitted.memorizer),
        Row("prior", "prior (position and name length)", "read", lambda: fitted.prior),
        Row("probe", "logistic probe on the text columns", "observe", partial(reader, fitted.probe, "probe")),
        Row(
            "pair-probe",
            "logistic probe, + pairwise products",
            "observe",
            partial(reader, fitted.pair_probe, "pairs"),
        ),
        Row(
            "single-cue",
            f"best single column: {rule.field} {'<' if rule.below else '≥'} {rule.threshold:g}",
            "observe",
            partial(SingleCueScientist, *rule),
        ),
    ]


def _negotiating_rows(fitted: Fitted) -> list[Row]:
    return [
        Row(
            PROPOSE_ONCE,
            _opening("propose once, then accept", fitted.accept_factors),
            "negotiate",
            partial(_opens, fitted, "accept"),
        ),
        Row(
            REVISER,
            _opening("no-question reviser (from the quote / counter-proposal)", fitted.revise_factors),
            "negotiate",
            partial(_opens, fitted, "revise"),
        ),
        Row(GUESSING, "guessing: public oracle + every unstated element", "guess", GuessingOracleScientist),
        Row("blind", "blind (every candidate, the needed n)", "guess", BlindScientist),
        *(
            Row(
                f"trivial-{n}",
                f"trivial feasible plan, {n} rounds",
                "guess",
                TrivialPlanScientist,
                max_rounds=n,
            )
            for n in TRIVIAL_ROUNDS
        ),
    ]


def _reference_rows(decipherer: Decipherer) -> list[Row]:
    return [
        Row(
            PUBLIC_ORACLE,
            "public-information oracle (every sentence's meaning; asks, revises)",
            "reference",
            PublicOracleScientist,
        ),
        Row(
            DECIPHERER,
            "decipherer (fitted on the unlabeled test papers; outside the protocol)",
            "reference",
            partial(DeciphererScientist, decipherer),
        ),
        Row(READER_TEST, "project's reader (`-s reader`), test split", "reference", PublicReaderScientist),
        Row(
            READER_TRAIN,
            "project's reader (`-s reader`), train split",
            "reference",
            PublicReaderScientist,
            split="train",
        ),
        Row(ORACLE, "oracle (reads the hidden study)", "reference", OracleScientist),
    ]


def _opening(label: str, factors: dict[str, float]) -> str:
    return f"{label}, priced at × {' / '.join(f'{factors[level]:g}' for level in DIFFICULTIES)}"


def _opens(fitted: Fitted, answer: str) -> OpeningRuleScientist:
    if answer == "accept":
        return OpeningRuleScientist(fitted.accept_factors, "accept")
    return OpeningRuleScientist(fitted.revise_factors, "revise")


DIFFERENCES = (  # (key, label, first row, second row): first − second, paired
    ("guessing-gain", "guessing − leaving the unstated out", GUESSING, PUBLIC_ORACLE),
    ("asking-gain", "asking first − propose once, then accept", PUBLIC_ORACLE, PROPOSE_ONCE),
    ("revising-gain", "revising (no question) − accepting the counter-proposal", REVISER, PROPOSE_ONCE),
)
GAP = ("reader-gap", "project's reader, train − test (generalization gap)")
Cells = dict[str, tuple[float, float]]  # level -> (mean, half-width of the 95 % interval)


@dataclass(frozen=True)
class Measured:
    """One row's episodes, in grid order: its share of the oracle's score, difficulty, rounds."""

    key: str
    label: str
    group: str
    split: str
    max_rounds: int
    shares: tuple[float, ...]
    levels: tuple[str, ...]
    rounds: tuple[int, ...]

    def at(self, level: str) -> list[float]:
        return [s for s, d in zip(self.shares, self.levels, strict=True) if level in ("all", d)]


def measure(fitted: Fitted, seeds: int, templates: Sequence[str] = BUILTIN_TEMPLATES) -> list[Measured]:
    """Play every row on the cells of `seeds` test seeds × `templates` × every difficulty; the
    decipherer first fits on those cells' papers (their briefs, no label)."""
    grid = Grid.of(templates=list(templates), seeds=seeds, first_seed=FIRST_SEED)
    cells = [(t, level, FIRST_SEED + k) for t in templates for level in DIFFICULTIES for k in range(seeds)]
    decipherer = fit_decipherer(generate_scenario(seed, t, level, "test") for t, level, seed in cells)
    oracles: dict[tuple[str, int], list[float]] = {}
    measured = []
    for row in rows(fitted, decipherer):
        settings = Settings(split=row.split, max_rounds=row.max_rounds)
        key = (row.split, row.max_rounds)
        if key not in oracles:
            oracles[key] = [d.score for d in run_grid(grid, OracleScientist, settings=settings).digests]
        digests = run_grid(grid, row.make, settings=settings).digests
        shares = [d.score / o if o > 0 else 0.0 for d, o in zip(digests, oracles[key], strict=True)]
        measured.append(
            Measured(
                row.key,
                row.label,
                row.group,
                row.split,
                row.max_rounds,
                tuple(shares),
                tuple(d.difficulty for d in digests),
                tuple(d.rounds_used for d in digests),
            )
        )
    return measured


def interval(values: list[float]) -> tuple[float, float]:
    """The mean and the half-width of its normal 95 % interval."""
    mean = statistics.fmean(values)
    half = 1.96 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return mean, half


def differences(measured: list[Measured]) -> list[tuple[str, str, Cells]]:
    """(key, label, cells) of each of `DIFFERENCES`, then of the project reader's generalization
    gap (train − test: different scenarios, so its interval is the unpaired one)."""
    by = {m.key: m for m in measured}
    out: list[tuple[str, str, Cells]] = []
    for key, label, first, second in DIFFERENCES:
        a, b = by[first], by[second]
        paired = {level: [x - y for x, y in zip(a.at(level), b.at(level), strict=True)] for level in LEVELS}
        out.append((key, label, {level: interval(values) for level, values in paired.items()}))
    gap: Cells = {}
    for level in LEVELS:
        (train, h1), (test, h2) = interval(by[READER_TRAIN].at(level)), interval(by[READER_TEST].at(level))
        gap[level] = (train - test, math.hypot(h1, h2))
    out.append((*GAP, gap))
    return out


def _cell(mean: float, half: float) -> str:
    return f"{mean:.3f} ± {half:.3f}"


def show(measured: list[Measured], console: Console) -> None:
    """The table of shares, then the differences."""
    n = len(measured[0].shares)
    table = Table(title=f"share of the oracle's score on the same scenario ({n} episodes a row), mean ± 95 %")
    for column in ("class", "group", *LEVELS, "decisions", "hard: ≥ 3"):
        table.add_column(column, justify="left" if column in ("class", "group") else "right")
    for m in measured:
        hard = [r for r, level in zip(m.rounds, m.levels, strict=True) if level == "hard"]
        table.add_row(
            m.label,
            m.group,
            *(_cell(*interval(m.at(level))) for level in LEVELS),
            f"{statistics.fmean(m.rounds):.2f}",
            f"{statistics.fmean(r >= 3 for r in hard):.0%}" if hard else "",
        )
    console.print(table)
    paired = Table(title="differences in share of the oracle's score, mean ± 95 %")
    for column in ("difference", *LEVELS):
        paired.add_column(column, justify="left" if column == "difference" else "right")
    for _, label, cells in differences(measured):
        paired.add_row(label, *(_cell(*cells[level]) for level in LEVELS))
    console.print(paired)


def records(measured: list[Measured]) -> list[dict[str, object]]:
    """One record per row and level (`all` included), then per difference and level."""
    out: list[dict[str, object]] = []
    for m in measured:
        for level in LEVELS:
            shares = m.at(level)
            where = (m.group, m.split, m.max_rounds)
            out.append(_record("share", m.key, m.label, where, level, interval(shares), len(shares)))
    for key, label, cells in differences(measured):
        for level in LEVELS:
            n = len(measured[0].at(level))
            out.append(
                _record("difference", key, label, ("", "test", DEFAULT_MAX_ROUNDS), level, cells[level], n)
            )
    return out


def _record(
    kind: str,
    key: str,
    label: str,
    where: tuple[str, str, int],
    level: str,
    cell: tuple[float, float],
    n: int,
) -> dict[str, object]:
    group, split, rounds = where
    return {
        "kind": kind,
        "key": key,
        "label": label,
        "group": group,
        "split": split,
        "max_rounds": rounds,
        "level": level,
        "mean": round(cell[0], 6),
        "half_width": round(cell[1], 6),
        "episodes": n,
    }


def write(path: Path, measured: list[Measured], fitted: Fitted) -> None:
    """The figures as JSON (with the fitted opening factors and column rule) or CSV, by suffix."""
    figures = records(measured)
    if path.suffix == ".json":
        document = {
            "fitted": {
                "accept_factors": fitted.accept_factors,
                "revise_factors": fitted.revise_factors,
                "single_cue": fitted.single_cue._asdict(),
            },
            "figures": figures,
        }
        path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(figures[0]))
        writer.writeheader()
        writer.writerows(figures)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40, help="test seeds per family and difficulty")
    parser.add_argument("--fit-seeds", type=int, default=40, help="train seeds per family and difficulty")
    parser.add_argument("--out", type=Path, help="write the figures to FILE.json or FILE.csv")
    args = parser.parse_args(argv)
    if args.seeds < 2 or args.fit_seeds < 1:
        parser.error("--seeds: at least 2 (an interval needs two episodes); --fit-seeds: at least 1")
    if args.out is not None and args.out.suffix not in (".json", ".csv"):
        parser.error(f"--out: expected FILE.json or FILE.csv, got {args.out}")
    console = Console(width=200)
    start = time.perf_counter()
    fitted = fit(range(args.fit_seeds), BUILTIN_TEMPLATES)
    fitted_in = time.perf_counter() - start
    measured = measure(fitted, args.seeds)
    show(measured, console)
    console.print(
        f"fitted in {fitted_in:.0f} s, played in {time.perf_counter() - start - fitted_in:.0f} s", style="dim"
    )
    if args.out is not None:
        write(args.out, measured, fitted)


if __name__ == "__main__":
    main(sys.argv[1:])
