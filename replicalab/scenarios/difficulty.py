"""What a difficulty means: one row per level, read by the generator, the rules and the paper.

Difficulty tightens the lab mechanically:

- easy: the plan with the samples the paper's effect needs fits with slack; every essential
  item is available; the lab charges the classic terms; two controls are asked for, and too few
  only warns.
- medium: the budget pays for the study's plan with only part of the samples its effect needs
  (`Share`), at prices drawn around the classic terms (`price_range`); one essential item is
  unavailable but has an available allowed substitute; a shorter time limit.
- hard: a smaller share of the needed samples, at prices drawn from the classic terms to three
  times them; a time limit near the case's shortest; no spare staff; one or two essential items
  need a substitution; the paper leaves more of the method unsaid: now and then even the
  technique or a kept control (`p_technique_said`, `p_control_said`).

On every level a study keeps its case's number of elements give or take one (`element_spread`),
so that no guarantee of the generator ties a held-out sentence form to its meaning.

So on medium and hard the plan the effect needs never fits, the best feasible plan sits on the
budget's boundary, and where that boundary lies depends on the lab's prices, which the
Scientist learns by asking or from the quote of a plan it proposed. Rigor credits the power of
a plan's test against that best plan's (`replicalab.judge.scores`), and power falls fast below
it, so a plan sized at a guess of the prices, or cut by the Lab Manager's halving, loses much of
its rigor:

| level | budget | prices × classic | missing essentials | min controls |
|---|---|---|---|---|
| easy | 1.25-1.6 × the needed plan | 1 | 0 | 2 (warns) |
| medium | fixed costs + 35-75 % of the needed samples | 0.6-1.6 | 1 | 3 |
| hard | fixed costs + 20-50 % of the needed samples | 1.0-3.0 | 1 or 2 | 3 |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from replicalab.scenarios.types import Difficulty


@dataclass(frozen=True)
class Drawn:
    """A whole number drawn around a base: `base + offset + int(span · u)` for a uniform u in
    [0, 1). A negative span draws below the base: `offset=1, span=-2` adds one on half the draws."""

    offset: int
    span: int

    def of(self, base: int, u: float) -> int:
        return base + self.offset + int(self.span * u)


@dataclass(frozen=True)
class Slack:
    """A budget of `least + spread · u` times what the plan the study needs (the samples its
    reported effect needs) or the paper's own plan, whichever is dearer, costs at the lab's
    prices."""

    least: float
    spread: float


@dataclass(frozen=True)
class Share:
    """A budget below the plan the study needs: what that plan costs at the lab's prices without
    its samples (its controls, its items with the lab's substitutes, the duration that earns full
    credit), plus a share in [low, high) of what the samples its reported effect needs cost."""

    low: float
    high: float


@dataclass(frozen=True)
class Level:
    """Everything one difficulty sets, as numbers the generator draws with."""

    price_range: tuple[float, float]
    """What the lab charges, as multiples of the classic terms: the classic terms themselves on
    easy, below or above them on medium, up to three times them on hard (a busy facility that
    bills its time), each rate and item drawn on its own, so a plan priced without asking misses
    the budget's boundary on both harder levels, often by a factor of two."""
    budget: Slack | Share
    """How the budget is set: with slack over the plan the study needs, or below it so that it
    binds.

    A binding budget funds well under the needed samples on purpose: the best feasible plan then
    has modest power, where power is steepest in the sample size, and the plan's fixed costs are
    a large part of the budget, so an error in the guessed prices moves the boundary by many
    samples. A plan sized at the wrong prices ends, after the Lab Manager's halving, with
    between half and all of the samples that fit (or, priced too high, with the share of them
    its estimate allowed), and keeps much less than that share of the best plan's power."""
    spent: tuple[float, float]  # (least, spread): the share of the budget already spent
    missing_essentials: tuple[int, int]  # (least, most) unavailable essential items; most on a fair coin
    extra_unavailable: float  # the odds that each extra item the lab lists is unavailable
    time_from: Literal["published", "shortest"]  # the case's duration the time limit is drawn from
    time_limit: Drawn  # drawn from that duration; never below the case's shortest
    time_below_published: bool  # the limit stays under the published duration where it can
    staff_from: Literal["paper", "minimal"]  # whose plan's staff the lab's staff is drawn from
    staff: Drawn
    min_controls: int  # controls a plan needs (the review among them)
    controls_binding: bool  # too few controls fails the check (else it only warns)
    p_said: float  # the chance that the paper's method states each required element
    element_spread: int  # a study keeps its case's `required_count` of elements give or take this many
    p_technique_said: float  # the chance that the method states the technique the study used
    p_control_said: float  # the chance that it states each control the study kept


LEVELS: dict[Difficulty, Level] = {
    "easy": Level(
        price_range=(1.0, 1.0),
        budget=Slack(least=1.25, spread=0.35),
        spent=(0.0, 0.0),
        missing_essentials=(0, 0),
        extra_unavailable=0.2,
        time_from="published",
        time_limit=Drawn(offset=1, span=4),
        time_below_published=False,
        staff_from="paper",
        staff=Drawn(offset=2, span=2),
        min_controls=2,
        controls_binding=False,
        p_said=1.0,
        element_spread=1,
        p_technique_said=1.0,
        p_control_said=1.0,
    ),
    "medium": Level(
        price_range=(0.6, 1.6),
        budget=Share(low=0.35, high=0.75),
        spent=(0.0, 0.1),
        missing_essentials=(1, 1),
        extra_unavailable=0.35,
        time_from="published",
        time_limit=Drawn(offset=-1, span=-2),
        time_below_published=False,
        staff_from="paper",
        staff=Drawn(offset=1, span=-2),
        min_controls=3,
        controls_binding=True,
        p_said=0.95,
        element_spread=1,
        p_technique_said=1.0,
        p_control_said=1.0,
    ),
    "hard": Level(
        price_range=(1.0, 3.0),
        budget=Share(low=0.2, high=0.5),
        spent=(0.1, 0.15),
        missing_essentials=(1, 2),
        extra_unavailable=0.5,
        time_from="shortest",
        time_limit=Drawn(offset=0, span=2),
        time_below_published=True,
        staff_from="minimal",
        staff=Drawn(offset=0, span=0),
        min_controls=3,
        controls_binding=True,
        p_said=0.95,
        element_spread=1,
        p_technique_said=0.95,
        p_control_said=0.95,
    ),
}
"""One row per difficulty, in `DIFFICULTIES` order."""
