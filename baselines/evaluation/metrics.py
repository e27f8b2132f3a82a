"""Aggregate episodes into the numbers a results table reports.

Definitions (per template × difficulty, and overall):

- score: the judge's total of the agreed protocol, 0 when the episode ends without agreement
  (an accept over the Lab Manager's objection is judged, but nobody is paid for it).
- return: `EpisodeLog.total_rewards["scientist"]`, the sum of the Scientist's step rewards under
  the run's `RewardConfig` (judge reward, penalties, shaping).
- mean ± a 95 % confidence interval: Student's t interval, mean ± t(0.975, n-1)·s/√n, with the
  sample standard deviation s; no interval for a single episode.
- agreement rate: share of episodes with verdict `agreement`, an accepted plan that passes every
  hard check; accepted-infeasible rate: share with verdict `accept_infeasible`, a plan accepted
  with the Lab Manager's consent although it fails a hard check. Rounds: mean `rounds_used`.
- invalid-action rate: refused moves / agent steps, both agents, pooled over episodes.
- rigor / feasibility / fidelity: means over the agreed protocols (NaN when none agreed).
- regret: mean over cells of (oracle score - policy score) on the same (template, difficulty,
  seed); normalised score: Σ policy score / Σ oracle score (the ratio of means, which stays
  defined when one oracle episode scores 0).
- vs public: Σ policy score / Σ the public-information oracle's score on the same scenarios. That
  oracle reads every sentence of the paper right and negotiates as the project's reader does, so
  a policy that reads as well scores about 1 and the rest of the gap is its reading; a score
  above 1 is negotiation (or planning) better than the reader's.

An episode with a move refused for a server's failure (`replicalab.outages`) is in no row: an
outage is not the model's score. `server_failed` counts those left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from replicalab.digest import EpisodeDigest, digest
from replicalab.models import EpisodeLog

_Z975 = 1.959963984540054  # the normal 0.975 quantile, the limit of t(0.975, df)
_EXACT_DF = 200  # beyond this the Cornish-Fisher expansion is exact to ~1e-7


@lru_cache(maxsize=512)
def t_critical(df: int) -> float:
    """t(0.975, df): the half-width multiplier of a two-sided 95 % interval."""
    if df < 1:
        raise ValueError(f"df: must be at least 1, got {df}")
    if df > _EXACT_DF:
        z = _Z975
        return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
    low, high = 0.0, 20.0 if df > 1 else 100.0
    for _ in range(80):
        mid = (low + high) / 2
        low, high = (mid, high) if _central_mass(mid, df) < 0.95 else (low, mid)
    return (low + high) / 2


def _central_mass(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer `df`, by the finite trigonometric series."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2 == 1:
        term, series = math.cos(theta), 0.0
        for k in range(1, (df - 1) // 2 + 1):  # cos θ · (1 + 2/3 c² + 2·4/(3·5) c⁴ + ...)
            series += term
            term *= c2 * (2 * k) / (2 * k + 1)
        return 2 / math.pi * (theta + math.sin(theta) * series)
    term, series = 1.0, 0.0
    for k in range(1, df // 2 + 1):  # 1 + 1/2 c² + 1·3/(2·4) c⁴ + ...
        series += term
        term *= c2 * (2 * k - 1) / (2 * k)
    return math.sin(theta) * series


@dataclass(frozen=True)
class Estimate:
    mean: float
    half_width: float  # of the 95 % interval; NaN for fewer than two values

    @classmethod
    def of(cls, values: Sequence[float]) -> Estimate:
        n = len(values)
        if n == 0:
            return cls(math.nan, math.nan)
        mean = math.fsum(values) / n
        if n < 2:
            return cls(mean, math.nan)
        var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
        return cls(mean, t_critical(n - 1) * math.sqrt(var / n))


@dataclass(frozen=True)
class Summary:
    label: str  # "template/difficulty" or "overall"
    episodes: int
    score: Estimate
    returns: Estimate
    agreement_rate: float
    accepted_infeasible_rate: float
    mean_rounds: float
    invalid_rate: float
    rigor: float
    feasibility: float
    fidelity: float
    regret: float | None  # None without oracle logs
    normalised: float | None
    vs_public: float | None = None  # None without the public-information oracle's scores


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return math.fsum(items) / len(items) if items else math.nan


def _share(episodes: Sequence[EpisodeDigest], reference: Mapping[str, float]) -> float:
    """Σ score / Σ the reference's score on the same scenarios; NaN where the reference's is 0."""
    total = math.fsum(reference[episode.scenario_id] for episode in episodes)
    return math.fsum(episode.score for episode in episodes) / total if total > 0 else math.nan


def summarize_group(
    label: str,
    episodes: Sequence[EpisodeDigest],
    reference: Mapping[str, float] | None = None,
    public: Mapping[str, float] | None = None,
) -> Summary:
    """One row of the table; `reference` maps a scenario id to the oracle's score, `public` to
    the public-information oracle's."""
    agreed = [episode.agreed for episode in episodes if episode.agreed is not None]
    steps = sum(episode.steps for episode in episodes)
    regret = normalised = None
    if reference is not None:
        regret = _mean(reference[episode.scenario_id] - episode.score for episode in episodes)
        normalised = _share(episodes, reference)
    return Summary(
        label=label,
        episodes=len(episodes),
        score=Estimate.of([episode.score for episode in episodes]),
        returns=Estimate.of([episode.scientist_return for episode in episodes]),
        agreement_rate=_mean(float(episode.verdict == "agreement") for episode in episodes),
        accepted_infeasible_rate=_mean(float(episode.verdict == "accept_infeasible") for episode in episodes),
        mean_rounds=_mean(episode.rounds_used for episode in episodes),
        invalid_rate=(
            sum(episode.invalid_action_count for episode in episodes) / steps if steps else math.nan
        ),
        rigor=_mean(judged.rigor for judged in agreed),
        feasibility=_mean(judged.feasibility for judged in agreed),
        fidelity=_mean(judged.fidelity for judged in agreed),
        regret=regret,
        normalised=normalised,
        vs_public=None if public is None else _share(episodes, public),
    )


def _digests(episodes: Sequence[EpisodeDigest | EpisodeLog]) -> list[EpisodeDigest]:
    return [e if isinstance(e, EpisodeDigest) else digest(e) for e in episodes]


Reference = Sequence[EpisodeDigest | EpisodeLog] | Mapping[str, float]
"""A reference policy's episodes, or its score per scenario id."""


def summarize(
    episodes: Sequence[EpisodeDigest | EpisodeLog],
    oracle: Reference | None = None,
    public: Reference | None = None,
) -> list[Summary]:
    """Rows per template/difficulty (in order of first appearance), then "overall", of the
    episodes without a server's failure.

    Digests or logs alike (a log is digested first). `oracle` and `public`, when given, are the
    oracle's and the public-information oracle's episodes or scores per scenario id, and must
    cover every cell of `episodes` (regret and the shares need the same seeds).
    """
    mine = [episode for episode in _digests(episodes) if not episode.server_errors]
    reference = None if oracle is None else _scores("oracle", oracle, mine)
    public_scores = None if public is None else _scores("public", public, mine)
    groups: dict[str, list[EpisodeDigest]] = {}
    for episode in mine:
        groups.setdefault(f"{episode.template}/{episode.difficulty}", []).append(episode)
    rows = [summarize_group(label, members, reference, public_scores) for label, members in groups.items()]
    rows.append(summarize_group("overall", mine, reference, public_scores))
    return rows


def _scores(name: str, reference: Reference, mine: Sequence[EpisodeDigest]) -> dict[str, float]:
    """The reference's score per scenario id, refused (naming the argument) if it misses one."""
    scores = (
        dict(reference)
        if isinstance(reference, Mapping)
        else {episode.scenario_id: episode.score for episode in _digests(reference)}
    )
    missing = [episode.scenario_id for episode in mine if episode.scenario_id not in scores]
    if missing:
        raise ValueError(f"{name}: no {name} episode for {missing[0]} (and {len(missing) - 1} more)")
    return scores


def server_failed(episodes: Sequence[EpisodeDigest | EpisodeLog]) -> int:
    """How many of `episodes` had a move refused for a server's failure: the table leaves them out."""
    return sum(1 for episode in _digests(episodes) if episode.server_errors)


def mean_components(logs: Sequence[EpisodeLog], agent: str = "scientist") -> dict[str, float]:
    """Mean per episode of each named reward component the agent received (0 where an episode
    paid none), sorted by name; they sum to the agent's mean return."""
    totals: dict[str, float] = {}
    for log in logs:
        for step in log.steps:
            for name, value in step.reward_components.get(agent, {}).items():
                totals[name] = totals.get(name, 0.0) + value
    return {name: totals[name] / len(logs) for name in sorted(totals)} if logs else {}
