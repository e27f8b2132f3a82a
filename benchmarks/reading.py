"""What reading is worth: the reference readers on the test split, as shares of the
full-information oracle's score on the same scenario, per difficulty, with 95 % intervals, and
what claiming the elements the paper does not state gains over leaving them out (paired).

Every reader plays the same negotiation (`PublicReaderScientist`'s: ask, propose, revise) and
differs only in what it takes from the paper (`replicalab.baselines.policies.readers`); the
memorizer plays the blind policy on a paper it never saw.

`--single-cue` plays instead every fixed rule on one cue column of the observation
(`SingleCueScientist`): the best of them bounds what one feature gives without learning.

    python -m benchmarks.reading [--seeds 40] [--single-cue]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from functools import partial

from benchmarks.negotiation import interval, played_on_test, shares
from replicalab.baselines.policies.interface import Policy
from replicalab.baselines.policies.probes import BlindScientist, MemorizerScientist, PublicReaderScientist
from replicalab.baselines.policies.readers import (
    ExactNameScientist,
    GuessingOracleScientist,
    PriorScientist,
    PublicOracleScientist,
    SingleCueScientist,
)
from replicalab.digest import EpisodeDigest
from replicalab.envs.features import CUE_FIELDS
from replicalab.scenarios import DIFFICULTIES

READERS: dict[str, Callable[[], Policy]] = {
    "blind (every candidate, the reported n)": BlindScientist,
    "prior (position and length, fitted on train)": PriorScientist,
    "memorizer (train titles; blind elsewhere)": MemorizerScientist,
    "exact name (named, no negation word in the sentence)": ExactNameScientist,
    "public reader (the cue reader, `-s reader`)": PublicReaderScientist,
    "public-information oracle (every sentence's meaning)": PublicOracleScientist,
    "public oracle + every unstated element": GuessingOracleScientist,
}


GRADED = {"mentions": (0.25, 0.5, 0.75, 1.0), "partial": (0.5, 0.75, 1.0)}  # the others are 0 or 1


def single_cue_rules() -> dict[str, Callable[[], Policy]]:
    """Every fixed rule on one cue column: claim when it is at least, or under, each of its
    steps (a yes/no column: set, or unset)."""
    return {
        f"{field} {'<' if below else '≥'} {threshold:g}": partial(SingleCueScientist, field, threshold, below)
        for field in CUE_FIELDS
        for threshold in GRADED.get(field, (1.0,))
        for below in (False, True)
    }


def table(
    readers: dict[str, Callable[[], Policy]], seeds: int, ranked: bool = False
) -> dict[str, dict[str, list[EpisodeDigest]]]:
    """Play `readers` on the test split and print each one's share of the oracle's score, in
    the order given or, `ranked`, best first."""
    runs = played_on_test(readers, seeds)
    n = sum(len(runs[level]["oracle"]) for level in DIFFICULTIES)
    print(f"share of the oracle's score on the test split, mean ± 95 % interval ({n} episodes a row)\n")
    print("| reader | " + " | ".join(DIFFICULTIES) + " | all |")
    print("|---|" + "---:|" * (len(DIFFICULTIES) + 1))
    every_level = {
        name: [x for level in DIFFICULTIES for x in shares(runs[level][name], runs[level]["oracle"])]
        for name in readers
    }
    order = sorted(readers, key=lambda name: -statistics.fmean(every_level[name])) if ranked else readers
    for name in order:
        cells = [interval(shares(runs[level][name], runs[level]["oracle"])) for level in DIFFICULTIES]
        print(f"| {name} | " + " | ".join(cells) + f" | {interval(every_level[name])} |")
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40, help="seeds per template and difficulty")
    parser.add_argument("--single-cue", action="store_true", help="every fixed rule on one cue column")
    args = parser.parse_args()
    if args.single_cue:
        table(single_cue_rules(), args.seeds, ranked=True)
        return
    runs = table(READERS, args.seeds)
    oracle = statistics.fmean(d.score for r in runs.values() for d in r["oracle"])
    print(f"| oracle (judge score; reads the hidden study) | | | | {oracle:.2f} |")
    cells = []
    for level in DIFFICULTIES:
        o = runs[level]["oracle"]
        guess = shares(runs[level]["public oracle + every unstated element"], o)
        exact = shares(runs[level]["public-information oracle (every sentence's meaning)"], o)
        cells.append(interval([g - e for g, e in zip(guess, exact, strict=True)]))
    print("\nclaiming every unstated element − leaving them out (paired): " + " | ".join(cells))


if __name__ == "__main__":
    main()
