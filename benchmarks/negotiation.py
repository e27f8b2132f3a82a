"""Whether the negotiation is worth having: the reference Scientists of each negotiation style on
the test split, as shares of the full-information oracle's score, per difficulty, with 95 %
intervals, and the paired differences the game is built to show.

Every Scientist plays the same scenarios against the grounded Lab Manager; a score's share is
its judge score over the oracle's on the same scenario. The styles (`replicalab.baselines.probes`)
read the paper alike (the public reader) and differ only in how they negotiate; `blind` reads
nothing, and `oracle-asks` knows the study but must ask for the lab's prices like everyone else.
`decisions` is the share of episodes in which the Scientist took three or more decisions.

    python -m benchmarks.negotiation [--seeds 40]
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable

from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.policies.interface import Policy
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.probes import BlindScientist, PublicReaderScientist
from replicalab.digest import EpisodeDigest
from replicalab.scenarios import DIFFICULTIES

FIRST_SEED = 10_000
STYLES: dict[str, Callable[[], Policy]] = {
    "propose once, then accept": lambda: PublicReaderScientist("propose", "accept"),
    "ask, then propose": lambda: PublicReaderScientist("ask", "adopt"),
    "propose, accept the counter-proposal": lambda: PublicReaderScientist("propose", "adopt"),
    "propose, revise after the counter-proposal": lambda: PublicReaderScientist("propose", "revise"),
    "public reader (asks, revises)": PublicReaderScientist,
    "blind (reads nothing)": BlindScientist,
    "oracle-asks": lambda: OracleScientist(ask=True),
}
PAIRS = (
    ("ask, then propose", "propose, accept the counter-proposal", "asking first − proposing blind"),
    (
        "propose, revise after the counter-proposal",
        "propose, accept the counter-proposal",
        "revising − accepting the counter-proposal",
    ),
)


def interval(values: list[float]) -> str:
    mean = statistics.fmean(values)
    half = 1.96 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return f"{mean:.3f} ± {half:.3f}"


def shares(episodes: list[EpisodeDigest], oracle: list[EpisodeDigest]) -> list[float]:
    return [d.score / o.score if o.score > 0 else 0.0 for d, o in zip(episodes, oracle, strict=True)]


def played_on_test(
    scientists: dict[str, Callable[[], Policy]], seeds: int
) -> dict[str, dict[str, list[EpisodeDigest]]]:
    """Difficulty -> Scientist name -> its episodes of the test split, the oracle's included
    (as "oracle"), every Scientist on the same scenarios in grid order."""
    settings = Settings(split="test")
    runs: dict[str, dict[str, list[EpisodeDigest]]] = {}
    for level in DIFFICULTIES:
        grid = Grid.of(difficulties=[level], seeds=range(FIRST_SEED, FIRST_SEED + seeds))
        every = {**scientists, "oracle": OracleScientist}
        runs[level] = {name: run_grid(grid, make, settings=settings).digests for name, make in every.items()}
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40, help="seeds per template and difficulty")
    args = parser.parse_args()
    runs = played_on_test(STYLES, args.seeds)
    n = len(runs["easy"]["oracle"])
    print(f"share of the oracle's score on the test split, mean ± 95 % interval ({n} episodes a column)\n")
    print(
        "| Scientist | "
        + " | ".join(DIFFICULTIES)
        + " | all | rounds (easy/medium/hard) | ≥ 3 decisions, hard |"
    )
    print("|---|" + "---:|" * (len(DIFFICULTIES) + 3))
    for name in [*STYLES, "oracle"]:
        cells = [interval(shares(runs[level][name], runs[level]["oracle"])) for level in DIFFICULTIES]
        every_level = [x for level in DIFFICULTIES for x in shares(runs[level][name], runs[level]["oracle"])]
        rounds = " / ".join(
            f"{statistics.fmean(d.rounds_used for d in runs[level][name]):.2f}" for level in DIFFICULTIES
        )
        decisions = statistics.fmean(d.rounds_used >= 3 for d in runs["hard"][name])
        print(
            f"| {name} | " + " | ".join(cells) + f" | {interval(every_level)} | {rounds} | {decisions:.0%} |"
        )
    print("\npaired differences (share of the oracle's score), mean ± 95 % interval\n")
    print("| difference | " + " | ".join(DIFFICULTIES) + " |")
    print("|---|" + "---:|" * len(DIFFICULTIES))
    for first, second, label in PAIRS:
        cells = []
        for level in DIFFICULTIES:
            oracle = runs[level]["oracle"]
            a, b = shares(runs[level][first], oracle), shares(runs[level][second], oracle)
            cells.append(interval([x - y for x, y in zip(a, b, strict=True)]))
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(
        f"\noracle mean judge score: {statistics.fmean(d.score for r in runs.values() for d in r['oracle']):.2f}"
    )


if __name__ == "__main__":
    main()
