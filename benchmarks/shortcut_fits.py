"""Every cheap class of Scientist that `benchmarks.shortcuts` measures, fitted on the train split
only: the packs of the train seeds (`train_packs`) and the episodes played on them are all a fit
reads, so a test paper can change without changing a fitted rule.

The readers learn from the train papers and the facts their sentences record
(`replicalab.baselines.policies.learned_readers`); the memorizer and the prior from the train
studies; the opening rule (a price factor per difficulty: the plan aims at the samples the
reported effect needs and fits the public budget at the classic terms times the factor) is the
factor of `FACTORS` whose
episodes score best on average on the train split, for each way of answering the Lab Manager.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.policies.learned_readers import (
    CueProbe,
    FrameTable,
    WordModel,
    best_single_cue,
    cue_rows,
    train_facts,
)
from replicalab.baselines.policies.openings import OpeningRuleScientist
from replicalab.baselines.policies.probes import Answer, MemorizerScientist, train_packs
from replicalab.baselines.policies.readers import CueRule, PriorScientist
from replicalab.scenarios import DIFFICULTIES

FACTORS = tuple(round(0.6 + 0.1 * k, 1) for k in range(23))  # 0.6 to 2.8 × the classic terms


@dataclass(frozen=True)
class Fitted:
    """What fitting on the train split produced: every rule the benchmark then plays on test."""

    frames: FrameTable
    words: WordModel
    positional_words: WordModel
    probe: CueProbe
    pair_probe: CueProbe
    single_cue: CueRule
    accept_factors: dict[str, float]  # the opening of propose-once-then-accept, per difficulty
    revise_factors: dict[str, float]  # the no-question reviser's
    memorizer: MemorizerScientist = field(compare=False)  # its `table` is what it fitted
    prior: PriorScientist = field(compare=False)  # its `rate`


def fit(seeds: Sequence[int], templates: Sequence[str], factors: Sequence[float] = FACTORS) -> Fitted:
    """Every class fitted on the train packs of `seeds` × `templates` × every difficulty, the
    opening rules choosing among `factors`."""
    packs = list(train_packs(seeds, templates))
    facts = train_facts(packs)
    positional = WordModel.fit(facts, positional=True)
    rows, labels = cue_rows(packs)
    return Fitted(
        frames=FrameTable.fit(facts, fallback=positional),
        words=WordModel.fit(facts),
        positional_words=positional,
        probe=CueProbe.fit(rows, labels),
        pair_probe=CueProbe.fit(rows, labels, pairs=True),
        single_cue=best_single_cue(rows, labels),
        accept_factors=best_factors("accept", seeds, templates, factors),
        revise_factors=best_factors("revise", seeds, templates, factors),
        memorizer=MemorizerScientist(seeds, templates),
        prior=PriorScientist(seeds, templates),
    )


def best_factors(
    answer: Answer, seeds: Sequence[int], templates: Sequence[str], factors: Sequence[float] = FACTORS
) -> dict[str, float]:
    """Per difficulty, the opening factor of `factors` under which `OpeningRuleScientist` with
    `answer` scores the most on the train split's episodes of `seeds` (ties: the smaller)."""
    best: dict[str, float] = {}
    for level in DIFFICULTIES:
        grid = Grid.of(templates=list(templates), difficulties=[level], seeds=list(seeds))
        scores = [_mean_score(grid, factor, answer) for factor in factors]
        best[level] = factors[scores.index(max(scores))]
    return best


def _mean_score(grid: Grid, factor: float, answer: Answer) -> float:
    """The mean judge score of the opening rule at `factor` on the train split's `grid`."""
    factors = dict.fromkeys(DIFFICULTIES, factor)
    played = run_grid(grid, lambda: OpeningRuleScientist(factors, answer), settings=Settings(split="train"))
    return statistics.fmean(d.score for d in played.digests)
