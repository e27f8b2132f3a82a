"""`replicalab export-reading`: the reading data set as JSON lines, one candidate of one paper a
line, with its public label (`replicalab.reading_dataset`)."""

from __future__ import annotations

from collections import Counter
from itertools import chain
from pathlib import Path
from typing import Annotated

import typer

from replicalab.baselines.cli.errors import USAGE, user_errors
from replicalab.baselines.cli.options import (
    DifficultiesOpt,
    FirstSeedOpt,
    SeedsOpt,
    SplitOpt,
    TemplateFilesOpt,
    TemplatesOpt,
    register_template_files,
    split_names,
)
from replicalab.reading_dataset import reading_rows


def export_reading(
    out: Annotated[Path, typer.Option("--out", "-o", dir_okay=False, help="The JSON-lines file to write.")],
    split: SplitOpt = "train",
    seeds: SeedsOpt = 10,
    first_seed: FirstSeedOpt = 0,
    templates: TemplatesOpt = None,
    difficulties: DifficultiesOpt = None,
    template_files: TemplateFilesOpt = None,
) -> None:
    """Write the reading data set: per candidate of each paper, the paper's public text, the
    candidate (kind and name) and what the paper says of it (used, not_used, mentioned, unstated).

    Each split's papers use their own wording: fit a reader on train, select on validation,
    report test. Prints how many rows of each label were written."""
    with user_errors(USAGE):
        register_template_files(template_files)
        rows = reading_rows(
            split,
            seeds,
            first_seed=first_seed,
            templates=split_names(templates),
            difficulties=split_names(difficulties),
        )
        first = next(rows, None)  # a bad argument is refused before the file is opened
    counts: Counter[str] = Counter()
    with user_errors():
        out.parent.mkdir(parents=True, exist_ok=True)
    with user_errors(), out.open("w", encoding="utf-8") as file:
        for row in chain([first] if first is not None else [], rows):
            file.write(row.model_dump_json() + "\n")
            counts[row.label] += 1
    labels = ", ".join(f"{label} {count}" for label, count in sorted(counts.items()))
    typer.echo(f"{sum(counts.values())} rows ({labels}) -> {out}")
