"""The one home of the power formula: how likely a replication of n samples is to detect the
effect its paper reports.

A replication is planned the way replication planning does it: a two-sample test at level
`ALPHA` of the reported standardized effect (Cohen's d), by the normal approximation
`power(d, n) = Φ(d·√(n/2) − z_α)`. The sample size that reaches `TARGET_POWER` is what a study
needs (`needed_samples`); the judge's rigor credits a plan's power against the best a feasible
plan can reach, the generator draws the effect a paper reports, and the reference Scientists
size their plans from it. Everything here is public: a Scientist can compute it from the paper.
"""

from __future__ import annotations

import math
from statistics import NormalDist

ALPHA = 0.001
"""The test's two-sided level."""
TARGET_POWER = 0.8
"""The power a study needs: the conventional 80 %."""
_NORMAL = NormalDist()
Z_ALPHA = _NORMAL.inv_cdf(1.0 - ALPHA / 2.0)
Z_POWER = _NORMAL.inv_cdf(TARGET_POWER)


def power(effect: float, n: int) -> float:
    """The chance that a two-sample test at level `ALPHA` with `n` samples detects a true
    standardized effect `effect` (normal approximation; 0 for no samples)."""
    if n < 1 or effect <= 0:
        return 0.0
    return _NORMAL.cdf(effect * math.sqrt(n / 2.0) - Z_ALPHA)


def needed_samples(effect: float) -> int:
    """The fewest samples that reach `TARGET_POWER` for `effect` (at least 1)."""
    if effect <= 0:
        raise ValueError(f"effect: must be positive, got {effect}")
    return max(1, math.ceil(2.0 * ((Z_ALPHA + Z_POWER) / effect) ** 2 - 1e-9))


def effect_for(n: float) -> float:
    """The effect that `n` samples detect with `TARGET_POWER` (the inverse of `needed_samples`,
    before rounding)."""
    if n < 1:
        raise ValueError(f"n: must be at least 1, got {n}")
    return (Z_ALPHA + Z_POWER) * math.sqrt(2.0 / n)
