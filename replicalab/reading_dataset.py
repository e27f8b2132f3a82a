"""The reading data set: for a language-model user, one row per candidate of each generated
paper, with the paper's public text, the candidate, and what the paper publicly says of it.

A row's label is the candidate's public label (`replicalab.scenarios.public_labels`: used, not
used, mentioned only, unstated), which the generator records as it writes each sentence: the
same labels the public-information oracle reads and the envs' facts view lays out. Each split's
papers are written from its own wording pool, so a reader fitted on the train split's rows meets
held-out wording on the validation and test splits' rows (fit on train, select on validation,
report test). `replicalab export-reading` writes these rows as JSON lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from replicalab.checks import check_positive_int
from replicalab.models import Paper
from replicalab.scenarios import DIFFICULTIES, ScenarioKey, generate_pack, template_names
from replicalab.scenarios.key import check_seed
from replicalab.scenarios.public_labels import PublicLabel, public_labels
from replicalab.scenarios.registry import check_difficulty, check_has_cases, check_split
from replicalab.scenarios.types import NormalizedScenarioPack

CandidateKind = Literal["technique", "element", "control"]


class ReadingRow(BaseModel):
    """One candidate of one paper: what a reader is given (`paper`, `kind`, `candidate`) and the
    answer (`label`); the rest says where it comes from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario_id: str
    split: str
    template: str
    difficulty: str
    seed: int
    paper: Paper  # the public text: title, hypothesis, method, key finding, reported n and effect
    kind: CandidateKind
    candidate: str
    label: PublicLabel


def pack_rows(pack: NormalizedScenarioPack) -> list[ReadingRow]:
    """Every candidate of `pack` as a row, techniques then elements then controls, in the order
    the brief lists them."""
    labels = public_labels(pack)
    c = pack.candidates
    kinds: tuple[tuple[CandidateKind, list[str]], ...] = (
        ("technique", c.techniques),
        ("element", c.elements),
        ("control", c.controls),
    )
    return [
        ReadingRow(
            scenario_id=pack.scenario_id,
            split=pack.split,
            template=pack.template,
            difficulty=pack.difficulty,
            seed=pack.seed,
            paper=pack.paper,
            kind=kind,
            candidate=name,
            label=labels[name],
        )
        for kind, names in kinds
        for name in names
    ]


def reading_rows(
    split: str,
    seeds: int,
    *,
    first_seed: int = 0,
    templates: Sequence[str] | None = None,
    difficulties: Sequence[str] | None = None,
) -> Iterator[ReadingRow]:
    """The rows of `split`'s papers for seeds `first_seed` to `first_seed + seeds - 1` of each
    template (default: every registered one) and difficulty (default: all), in that order. A
    bad argument raises an error naming it."""
    check_split(split)
    check_positive_int("seeds", seeds)
    check_seed(first_seed, "first_seed")
    names = tuple(template_names() if templates is None else templates)
    levels = tuple(DIFFICULTIES if difficulties is None else difficulties)
    for name in names:
        check_has_cases(name, split)
    for level in levels:
        check_difficulty(level)
    for name in names:
        for level in levels:
            for seed in range(first_seed, first_seed + seeds):
                yield from pack_rows(generate_pack(ScenarioKey(name, split, level, seed)))  # type: ignore[arg-type]  # checked above
