"""What a careful reader takes from a paper: which of the public candidates its method says the
study used, and which it says the study did not.

A pack's method paragraph is written from the study it reports: a clue sentence affirms each
choice the study made (the technique, its controls, most of its elements) and a "did not"
sentence denies some of the others. Reading is negation-aware (`replicalab.text.affirmed`), so a
denied element is not taken for a used one. The structured observation and the public-reader
probe read papers through this one function, and `addresses` is the rationale a plan built
from such choices states, in text mode and structured mode alike.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from replicalab.models import Candidates, Paper
from replicalab.text import affirmed, mentions, sentences


class Reading(NamedTuple):
    """The candidates a paper's method affirms, and the elements it names only to deny."""

    techniques: tuple[str, ...]
    elements: tuple[str, ...]
    controls: tuple[str, ...]
    denied_elements: tuple[str, ...]


def read_paper(paper: Paper, candidates: Candidates) -> Reading:
    """Which of `candidates` the method of `paper` affirms (in the candidates' order), read
    sentence by sentence: a method's sentences recur across the packs of a case, so what each
    says of each candidate is worked out once."""
    parts = sentences(paper.method)

    def said(names: list[str]) -> tuple[str, ...]:
        return tuple(name for name in names if any(_says(part, name) == _AFFIRMED for part in parts))

    elements = said(candidates.elements)
    denied = tuple(
        e for e in candidates.elements if e not in elements and any(_says(part, e) for part in parts)
    )
    return Reading(said(candidates.techniques), elements, said(candidates.controls), denied)


_AFFIRMED = 2  # `_says`: the sentence names the candidate and does not deny it


@lru_cache(maxsize=16384)  # (sentence, candidate) pairs recur across every pack of a case
def _says(sentence: str, name: str) -> int:
    """0: `sentence` does not name `name`; 1: it names it only to deny it; 2: it affirms it."""
    if not mentions(name, sentence):
        return 0
    return _AFFIRMED if affirmed(name, sentence) else 1


def addresses(elements: tuple[str, ...] | list[str]) -> str:
    """The rationale of a plan that addresses `elements`."""
    if not elements:
        return "Addresses the paper's claim with its published method."
    return "Addresses: " + "; ".join(elements) + "."
