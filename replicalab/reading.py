"""What a careful reader takes from a paper: which of the public candidates its method says the
study used.

A pack's method paragraph says what its study did in varied surface forms: a candidate's own
words or a paraphrase that keeps some of them, denials with or without a negation word ("rather
than", "considered and dropped", "left for future work"), indirect references ("kept the
latter") and mentions of other work that say nothing about this study. `cues` lists what a
reader notices about each candidate, sentence by sentence, and no verdict; `read_paper` is the
project's reader built on them (the public reader probe's), and `addresses` is the rationale a
plan built from such choices states, in text mode and structured mode alike.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from replicalab.models import Candidates, Paper
from replicalab.text import NEGATIONS, content_words, occurs, sentences, spaced, words

CONTRAST = frozenset(["rather", "instead", "unlike", "dropped", "considered", "future", "abandoned"])
HEDGE = frozenset(["related", "earlier", "prior", "debated", "reviewers", "limitation", "literature"])
PARTIAL = 0.5  # share of a candidate's content words that makes a sentence a mention of it


class Cue(NamedTuple):
    """What one sentence shows about one candidate it mentions (exactly or in part)."""

    sentence: int  # the sentence's number in the method
    exact: bool  # the candidate's words occur in order
    share: float  # the share of its content words in the sentence
    negation: bool  # a negation word ("no", "not", "without", ...) in the sentence
    contrast: bool  # a contrast word ("rather", "instead", "dropped", ...)
    hedge: bool  # a word of other work ("related", "earlier", "prior", ...)
    # the sentence, or the clause after it ("A and B were compared; the study kept the latter"),
    # refers back to "the former" / "the latter"
    former: bool
    latter: bool
    # where one of those refers back: the candidate is named before the sentence's first "and"
    # (it is the former of the pair "A and B"); elsewhere its position tells nothing
    first: bool


class Reading(NamedTuple):
    """The candidates a paper's method says the study used, and the elements it says it did not."""

    techniques: tuple[str, ...]
    elements: tuple[str, ...]
    controls: tuple[str, ...]
    denied_elements: tuple[str, ...]


def cues(paper: Paper, name: str) -> tuple[Cue, ...]:
    """Every sentence of `paper`'s method that mentions the candidate `name`, with its cues."""
    return _cues(paper.method, name)


class _Sentence(NamedTuple):
    """What the reader takes from one sentence, whatever method it stands in."""

    spaced: str  # `replicalab.text.spaced` of it
    tokens: tuple[str, ...]
    bag: frozenset[str]
    negation: bool
    contrast: bool
    hedge: bool
    pair_at: int  # the position of its first "and" (its length without one)


@lru_cache(maxsize=8192)  # sentences recur across packs: a case's methods are written from a few
def _sentence(text: str) -> _Sentence:
    tokens = words(text)
    bag = frozenset(tokens)
    return _Sentence(
        spaced(text),
        tokens,
        bag,
        not bag.isdisjoint(NEGATIONS),
        not bag.isdisjoint(CONTRAST),
        not bag.isdisjoint(HEDGE),
        tokens.index("and") if "and" in bag else len(tokens),
    )


class _Method(NamedTuple):
    sentences: tuple[_Sentence, ...]
    bags: tuple[frozenset[str], ...]  # each sentence's words
    former: tuple[bool, ...]  # each sentence: it or the next one says "former"
    latter: tuple[bool, ...]  # ... or "latter"
    words: frozenset[str]  # every word of the method


@lru_cache(maxsize=16)  # a pack's method is read for each of its candidates in turn
def _parsed(method: str) -> _Method:
    read = tuple(_sentence(text) for text in sentences(method))
    bags = tuple(sentence.bag for sentence in read)
    following = [*bags[1:], frozenset()]
    return _Method(
        read,
        bags,
        tuple("former" in bag or "former" in after for bag, after in zip(bags, following, strict=True)),
        tuple("latter" in bag or "latter" in after for bag, after in zip(bags, following, strict=True)),
        frozenset().union(*bags),
    )


def _cues(method: str, name: str) -> tuple[Cue, ...]:
    wanted = content_words(name)
    parsed = _parsed(method)
    if parsed.words.isdisjoint(wanted):  # a third of the candidates: named nowhere
        return ()
    found = []
    for number, bag in enumerate(parsed.bags):
        if bag.isdisjoint(wanted):  # most sentences: no set built
            continue
        present = wanted & bag
        if len(present) < PARTIAL * len(wanted):
            continue
        sentence = parsed.sentences[number]
        former, latter = parsed.former[number], parsed.latter[number]
        start = min(map(sentence.tokens.index, present))
        found.append(
            Cue(
                number,
                occurs(name, sentence.spaced),
                len(present) / len(wanted),
                sentence.negation,
                sentence.contrast,
                sentence.hedge,
                former,
                latter,
                (former or latter) and start < sentence.pair_at,
            )
        )
    return tuple(found)


def verdict(cue: Cue) -> bool | None:
    """The project's reading of one cue: True (used), False (not used), None (no information)."""
    if cue.former or cue.latter:
        return cue.first == cue.former
    if cue.negation or cue.contrast:
        return False
    if cue.hedge:
        return None
    return True


def read_paper(paper: Paper, candidates: Candidates) -> Reading:
    """Which of `candidates` the method of `paper` says the study used (in the candidates'
    order): a candidate is used when some sentence mentioning it reads as a use, and denied when
    some reads as a denial and none as a use."""

    def said(names: list[str], wanted: bool) -> tuple[str, ...]:
        return tuple(n for n in names if _says(paper.method, n, wanted))

    return Reading(
        said(candidates.techniques, True),
        said(candidates.elements, True),
        said(candidates.controls, True),
        tuple(e for e in said(candidates.elements, False) if not _says(paper.method, e, True)),
    )


def _says(method: str, name: str, wanted: bool) -> bool:
    return any(verdict(cue) is wanted for cue in _cues(method, name))


def addresses(elements: tuple[str, ...] | list[str]) -> str:
    """The rationale of a plan that addresses `elements`."""
    if not elements:
        return "Addresses the paper's claim with its published method."
    return "Addresses: " + "; ".join(elements) + "."
