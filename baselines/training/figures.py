"""Learning-curve figures, drawn with matplotlib on a bare `Figure` (Agg canvas): no pyplot state,
no display needed. A band never leaves the range the judge's score can take."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from replicalab.judge.bonuses import ALL_CHECKS_BONUS, EFFICIENCY_BONUS, saved_rounds
from replicalab.judge.breakdown import BASE_SCALE

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# A point of a learning curve: (steps, judge score, Scientist return), as `CurvePoint` holds it.
Point = tuple[int, float, float]


def score_range() -> tuple[float, float]:
    """The judge's score runs from 0 (no agreement, or a degenerate plan) to a perfect plan's
    base plus both bonuses, agreed in as few rounds as the efficiency bonus allows (whatever the
    round limit: the rounds it pays for are a fixed window)."""
    return 0.0, BASE_SCALE + ALL_CHECKS_BONUS + EFFICIENCY_BONUS * saved_rounds(0)


def return_range(returns: Sequence[float]) -> tuple[float, float]:
    """The return axis's range: the score's whole range, widened to every return drawn. Returns
    under most reward configs are of the score's size, and an axis fitted to a few points would
    blow their noise up into swings."""
    low, high = score_range()
    return min(low, *returns), max(high, *returns)


def clipped_band(
    means: Sequence[float], half_widths: Sequence[float], bounds: tuple[float, float]
) -> tuple[list[float], list[float]]:
    """(lows, highs) of `mean ± half_width`, each clipped to `bounds`: a t interval over a few
    seeds can reach past what the score can be, and the figure should not show that."""
    low, high = bounds
    lows = [min(max(m - h, low), high) for m, h in zip(means, half_widths, strict=True)]
    highs = [min(max(m + h, low), high) for m, h in zip(means, half_widths, strict=True)]
    return lows, highs


def new_figure() -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.5, 4.5), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def plot_training_curve(curve: Sequence[Point], path: Path, title: str) -> None:
    """One run's curve: the validation judge score (left axis, on its whole range) and the mean
    return under the run's reward config (right axis, on at least that range), against the steps
    trained."""
    figure = new_figure()
    score_axis = figure.subplots()
    steps = [step for step, _, _ in curve]
    score_axis.plot(steps, [score for _, score, _ in curve], marker="o", markersize=3, color="C0")
    score_axis.set_ylim(*score_range())
    score_axis.set_xlabel("environment steps")
    score_axis.set_ylabel("judge score, validation split (mean)", color="C0")
    return_axis = score_axis.twinx()
    returns = [ret for _, _, ret in curve]
    return_axis.plot(steps, returns, linestyle="--", color="C1")
    return_axis.set_ylim(*return_range(returns))
    return_axis.set_ylabel("Scientist return (mean)", color="C1")
    score_axis.set_title(title, fontsize="medium")
    score_axis.grid(alpha=0.3)
    figure.savefig(path, dpi=110)
