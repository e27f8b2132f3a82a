"""How well two readers label the reading data set (`replicalab.reading_dataset`), split by split:
the share of rows (one candidate of one paper each) whose label (used, not used, mentioned only,
unstated) a reader gets right, with a 95 % interval over rows.

- the project's reader (`replicalab.reading.read_labels`, the `reader` Scientist's reading): it
  knows the train split's sentence forms and reads any other sentence by its cues;
- a bag of words fitted on the train split's rows (`--fit-seeds`, seeds from 0): a multinomial
  logistic regression (`replicalab.baselines.policies.logistic`) on the words of the sentences
  that mention the candidate, its own words left out, and one feature for "no sentence mentions
  it", the first model a language-model user would fit to these rows;
- the most frequent label of the train rows, always.

Scored rows are seeds `SCORED_FROM` on of every split (`--seeds` a template and difficulty), so
the train figure is on train papers the bag of words never saw, in the train split's wording.

    python -m benchmarks.reading_dataset [--seeds 20] [--fit-seeds 20]
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from replicalab.baselines.policies.logistic import Logistic, fit_logistic
from replicalab.models import Candidates
from replicalab.reading import read_labels, sentence_mentions, sentences_of
from replicalab.reading_dataset import ReadingRow, reading_rows
from replicalab.text import content_words, words

SPLITS = ("train", "validation", "test")
SCORED_FROM = 10_000
_NOWHERE = "@unmentioned"


def _bag(row: ReadingRow) -> list[str]:
    """The words of the method's sentences that mention the row's candidate, its own words left
    out; `_NOWHERE` when none does."""
    own = content_words(row.candidate)
    bag = [
        w
        for sentence in sentences_of(row.paper.method)
        if sentence_mentions(sentence, (row.candidate,))
        for w in words(sentence)
        if w not in own
    ]
    return bag or [_NOWHERE]


class BagOfWords:
    """The bag-of-words labeller, fitted on rows."""

    def __init__(self, rows: Sequence[ReadingRow], min_count: int = 2) -> None:
        counts = Counter(w for row in rows for w in set(_bag(row)))
        kept = sorted(w for w, n in counts.items() if n >= min_count)
        self.vocabulary = {w: i for i, w in enumerate(kept)}
        self.model: Logistic = fit_logistic(self._encode(rows), [row.label for row in rows])

    def _encode(self, rows: Sequence[ReadingRow]) -> np.ndarray:
        out = np.zeros((len(rows), len(self.vocabulary)), dtype=np.float64)
        for i, row in enumerate(rows):
            for w in _bag(row):
                if w in self.vocabulary:
                    out[i, self.vocabulary[w]] = 1.0
        return out

    def labels(self, rows: Sequence[ReadingRow]) -> list[str]:
        return self.model.predict(self._encode(rows))


def reader_labels(rows: Sequence[ReadingRow]) -> list[str]:
    """The project's reader's label of each row (each paper read once, for all its candidates)."""
    papers: dict[str, list[ReadingRow]] = {}
    for row in rows:
        papers.setdefault(row.scenario_id, []).append(row)
    read: dict[str, dict[str, str]] = {}
    for scenario_id, same in papers.items():
        listed = {
            kind: [r.candidate for r in same if r.kind == kind]
            for kind in ("technique", "element", "control")
        }
        candidates = Candidates(
            techniques=listed["technique"], elements=listed["element"], controls=listed["control"]
        )
        read[scenario_id] = read_labels(same[0].paper, candidates)
    return [read[row.scenario_id][row.candidate] for row in rows]


def accuracy(labels: Sequence[str], rows: Sequence[ReadingRow]) -> tuple[float, float]:
    """The share of `rows` labelled right, and its 95 % interval's half-width (normal)."""
    right = [label == row.label for label, row in zip(labels, rows, strict=True)]
    share = sum(right) / len(right)
    return share, 1.96 * math.sqrt(share * (1 - share) / len(right))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="scored seeds a template and difficulty")
    parser.add_argument("--fit-seeds", type=int, default=20, help="train seeds the bag of words is fitted on")
    args = parser.parse_args()
    fitted_on = list(reading_rows("train", args.fit_seeds))
    bag = BagOfWords(fitted_on)
    majority = Counter(row.label for row in fitted_on).most_common(1)[0][0]
    scored = {split: list(reading_rows(split, args.seeds, first_seed=SCORED_FROM)) for split in SPLITS}
    readers: list[tuple[str, Callable[[Sequence[ReadingRow]], list[str]]]] = [
        ("project's reader (`read_labels`)", reader_labels),
        (f"bag of words, fitted on {len(fitted_on):,} train rows", bag.labels),
        (f"most frequent train label ({majority})", lambda rows: [majority] * len(rows)),
    ]
    print(
        f"label accuracy (used / not_used / mentioned / unstated), mean ± 95 % interval; "
        f"seeds {SCORED_FROM}-{SCORED_FROM + args.seeds - 1} × 3 families × 3 difficulties, "
        + ", ".join(f"{len(rows):,} {split} rows" for split, rows in scored.items())
    )
    print("| reader | " + " | ".join(SPLITS) + " |")
    print("|---|" + "---:|" * len(SPLITS))
    for name, label in readers:
        cells = [accuracy(label(rows), rows) for rows in scored.values()]
        print(f"| {name} | " + " | ".join(f"{share:.3f} ± {half:.3f}" for share, half in cells) + " |")


if __name__ == "__main__":
    main()
