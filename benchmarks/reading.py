"""What reading is worth: the reference readers on the test split, as shares of the
full-information oracle's score on the same scenario, per difficulty, with 95 % intervals, and
what claiming the elements the paper does not state gains over leaving them out (paired).

Every reader plays the same negotiation (`PublicReaderScientist`'s: ask, propose, revise) and
differs only in what it takes from the paper (`replicalab.baselines.policies.readers`); the
memorizer plays the blind policy on a paper it never saw.

    python -m benchmarks.reading [--seeds 40]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

from benchmarks.negotiation import interval, played_on_test, shares
from replicalab.baselines.policies.interface import Policy
from replicalab.baselines.policies.probes import BlindScientist, MemorizerScientist, PublicReaderScientist
from replicalab.baselines.policies.readers import (
    ExactNameScientist,
    GuessingOracleScientist,
    PriorScientist,
    PublicOracleScientist,
)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40, help="seeds per template and difficulty")
    args = parser.parse_args()
    runs = played_on_test(READERS, args.seeds)
    n = sum(len(runs[level]["oracle"]) for level in DIFFICULTIES)
    print(f"share of the oracle's score on the test split, mean ± 95 % interval ({n} episodes a row)\n")
    print("| reader | " + " | ".join(DIFFICULTIES) + " | all |")
    print("|---|" + "---:|" * (len(DIFFICULTIES) + 1))
    for name in READERS:
        cells = [interval(shares(runs[level][name], runs[level]["oracle"])) for level in DIFFICULTIES]
        every_level = [x for level in DIFFICULTIES for x in shares(runs[level][name], runs[level]["oracle"])]
        print(f"| {name} | " + " | ".join(cells) + f" | {interval(every_level)} |")
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
