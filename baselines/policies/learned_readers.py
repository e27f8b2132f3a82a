"""Readers fitted on the train split: the cheap rules a user who holds the train papers and their
recorded facts (`paper_facts`: what each sentence says of each candidate) would fit first, to be
measured on held-out papers. Each decides a candidate alone (`claims`); `FittedReaderScientist`
plays one with the public reader's negotiation.

- `FrameTable`: a sentence-frame reader. It learns a synonym table by aligning each train
  candidate's name with the words its sentence says it in, then the meaning of every sentence
  frame (the sentence with the candidate, or the one word of its name that a description keeps,
  cut out) that train sentences use; a sentence in a frame it never saw goes to its fallback, a
  `WordModel`.
- `WordModel`: a negation-aware bag of words (a word after a negation word in its clause counts
  as another word, and a negation word just before the candidate is a feature of its own), a
  logistic regression of a sentence's meaning for a candidate it mentions: a sentence that holds
  half its name's content words, or one of its `marks` (a word no other candidate's name holds);
  `positional` adds each word again joined with where the candidate stands against the
  sentence's first "and" (what reading "the former" / "the latter" takes).
- `CueProbe`: a logistic regression of "some sentence says the study used it" on a candidate's
  own columns of the structured observation (`CUE_FIELDS`: how the method names it and its
  hashed words and word pairs), `pairs` adding their pairwise products; `best_single_cue` picks
  the fixed one-column rule most often right on train.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

import numpy as np

from replicalab.baselines.policies.logistic import Logistic, fit_logistic
from replicalab.baselines.policies.probes import Choices
from replicalab.baselines.policies.readers import SINGLE_CUE_RULES, ClaimingScientist, CueRule
from replicalab.envs.text_columns import CUE_FIELDS, text_columns
from replicalab.models import Paper, ScientistObservation
from replicalab.reading import PARTIAL
from replicalab.scenarios import NormalizedScenarioPack
from replicalab.scenarios.generator import paper_facts
from replicalab.scenarios.wording import MEANINGS, Fact
from replicalab.text import NEGATIONS, content_words, words

Tokens = tuple[str, ...]
SLOT = "{X}"  # where a frame holds its candidate
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_CLAUSE_END = re.compile(r"[,;:]")
_NEGATION_REACH = 3  # words before a candidate that a negation word still governs


@lru_cache(maxsize=256)  # one method is read for each of its candidates
def method_sentences(method: str) -> tuple[str, ...]:
    """The sentences of a method, split where a sentence ends and a capital opens the next."""
    return tuple(_SENTENCE_END.split(method))


def train_facts(packs: Iterable[NormalizedScenarioPack]) -> list[Fact]:
    """Every recorded fact of `packs`, refused unless every pack is of the train split."""
    facts: list[Fact] = []
    for pack in packs:
        if pack.split != "train":
            raise ValueError(f"packs: {pack.scenario_id} is not of the train split")
        facts.extend(paper_facts(pack))
    return facts


class Claims(Protocol):
    """A fitted rule that decides whether the study used one candidate of a paper (`names`: every
    candidate the brief lists, `name` among them, where the rule grounds against the others)."""

    def claims(self, paper: Paper, name: str, names: tuple[str, ...] = ()) -> bool: ...


class FittedReaderScientist(ClaimingScientist):
    """Claims what the fitted `rule` claims; negotiates as the public reader does."""

    def __init__(self, rule: Claims, name: str) -> None:
        super().__init__()
        self.rule, self.name = rule, name
        self._names: tuple[str, ...] = ()

    def choices(self, observation: ScientistObservation) -> Choices:
        c = observation.candidates
        self._names = (*c.techniques, *c.elements, *c.controls)
        return super().choices(observation)

    def claims(self, paper: Paper, name: str) -> bool:
        return self.rule.claims(paper, name, self._names)


def marks(name: str, names: tuple[str, ...]) -> frozenset[str]:
    """The words of `name` that no other of `names` holds: a sentence holding one speaks of it,
    whatever else it calls it ("the step involving warm-up")."""
    others = frozenset().union(*(content_words(n) for n in names if n != name))
    return content_words(name) - others if names else frozenset()


class _SentenceReader:
    """A reader of sentence meanings: it claims a candidate some sentence reads as used."""

    _seen: dict[tuple[str, str, tuple[str, ...]], bool]

    def meaning(self, sentence: str, name: str, own: frozenset[str] = frozenset()) -> str | None:
        raise NotImplementedError

    def claims(self, paper: Paper, name: str, names: tuple[str, ...] = ()) -> bool:
        key = (paper.method, name, names)
        if key not in self._seen:
            own = marks(name, names)
            said = (self.meaning(s, name, own) for s in method_sentences(paper.method))
            self._seen[key] = any(m == "used" for m in said)
        return self._seen[key]


@dataclass(frozen=True, eq=True)
class WordModel(_SentenceReader):
    """A sentence's meaning for a candidate it mentions, from the sentence's words (see the
    module); None for a sentence that shares under `PARTIAL` of the candidate's content words
    and none of its `marks`."""

    vocabulary: dict[str, int]
    model: Logistic
    positional: bool
    _seen: dict[tuple[str, str, tuple[str, ...]], bool] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def fit(cls, facts: list[Fact], positional: bool = False, min_count: int = 2) -> WordModel:
        """Fitted on `facts`: the words seen at least `min_count` times, each fact one row."""
        counts = Counter(w for f in facts for w in set(_bag(f.sentence, f.candidate, positional)))
        vocabulary = {w: i for i, w in enumerate(sorted(w for w, n in counts.items() if n >= min_count))}
        rows = np.array([_encode(vocabulary, _bag(f.sentence, f.candidate, positional)) for f in facts])
        return cls(vocabulary, fit_logistic(rows, [f.meaning for f in facts]), positional)

    def meaning(self, sentence: str, name: str, own: frozenset[str] = frozenset()) -> str | None:
        wanted, said = content_words(name), set(words(sentence))
        if not wanted or (len(wanted & said) < PARTIAL * len(wanted) and own.isdisjoint(said)):
            return None
        row = _encode(self.vocabulary, _bag(sentence, name, self.positional))
        return self.model.predict(row[None, :])[0]


def _bag(sentence: str, name: str, positional: bool) -> list[str]:
    """The sentence's words but the candidate's own, a word after a negation word in its clause
    marked "not_"; with `positional`, where the candidate stands against the first "and"."""
    own = content_words(name)
    bag: list[str] = []
    if _negated(words(sentence), own):
        bag.append("@negated")
    for clause in _CLAUSE_END.split(sentence):
        negated = False
        for w in words(clause):
            if w in own:
                continue
            bag.append(f"not_{w}" if negated and w not in NEGATIONS else w)
            negated = negated or w in NEGATIONS
    if not positional:
        return bag
    tokens = words(sentence)
    at = next((i for i, w in enumerate(tokens) if w in own), len(tokens))
    pair = tokens.index("and") if "and" in tokens else -1
    where = "no-and" if pair < 0 else "before-and" if at < pair else "after-and"
    return [*bag, *(f"{where}:{w}" for w in bag)]


def _negated(tokens: Tokens, own: frozenset[str]) -> bool:
    """Whether a negation word stands within `_NEGATION_REACH` words before the candidate's
    first word in the sentence."""
    at = next((i for i, w in enumerate(tokens) if w in own), None)
    return at is not None and any(w in NEGATIONS for w in tokens[max(0, at - _NEGATION_REACH) : at])


def _encode(vocabulary: dict[str, int], bag: list[str]) -> np.ndarray:
    row = np.zeros(len(vocabulary))
    for w in bag:
        if w in vocabulary:
            row[vocabulary[w]] = 1.0
    return row


@dataclass(frozen=True, eq=True)
class FrameTable(_SentenceReader):
    """The sentence-frame reader (see the module)."""

    synonyms: dict[str, str]  # a name's word -> the word train sentences say instead
    frames: dict[Tokens, str]  # a frame (`SLOT` where the candidate stood) -> its meaning on train
    fallback: WordModel
    _seen: dict[tuple[str, str, tuple[str, ...]], bool] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def fit(cls, facts: list[Fact], fallback: WordModel) -> FrameTable:
        synonyms = _learn_synonyms(facts)
        said: dict[Tokens, Counter[str]] = {}
        for f in facts:
            frame = _frame_of(words(f.sentence), _surfaces(words(f.candidate), synonyms))
            if frame is not None:
                said.setdefault(frame, Counter())[f.meaning] += 1
        frames = {frame: _majority(counts) for frame, counts in sorted(said.items())}
        return cls(synonyms, frames, fallback)

    def meaning(self, sentence: str, name: str, own: frozenset[str] = frozenset()) -> str | None:
        frame = _frame_of(words(sentence), _surfaces(words(name), self.synonyms))
        if frame is not None and frame in self.frames:
            return self.frames[frame]
        return self.fallback.meaning(sentence, name, own)


def _majority(counts: Counter[str]) -> str:
    return max(MEANINGS, key=lambda meaning: counts[meaning])


def _surfaces(name: Tokens, synonyms: dict[str, str]) -> tuple[Tokens, ...]:
    """How a sentence may say `name`: itself, with its words swapped by `synonyms`, without its
    last word, or by one of its content words alone (longest first: "the step involving X")."""
    swapped = tuple(synonyms.get(w, w) for w in name)
    alone = sorted(content_words(" ".join(name)), key=lambda w: (-len(w), w))
    return (name, swapped, name[:-1] if len(name) > 1 else name, *((w,) for w in alone))


def _find(phrase: Tokens, tokens: Tokens) -> int | None:
    n = len(phrase)
    return next((i for i in range(len(tokens) - n + 1) if tokens[i : i + n] == phrase), None) if n else None


def _frame_of(tokens: Tokens, surfaces: tuple[Tokens, ...]) -> Tokens | None:
    """`tokens` with the first surface found cut out for `SLOT`; None when none is."""
    for surface in surfaces:
        at = _find(surface, tokens)
        if at is not None:
            return (*tokens[:at], SLOT, *tokens[at + len(surface) :])
    return None


def _learn_synonyms(facts: list[Fact]) -> dict[str, str]:
    """Word swaps read off the train facts whose sentence does not hold the name itself: by the
    window of the sentence that keeps most of the name's words in place, or, where none keeps
    half, by a frame another fact showed (prefix + name + suffix)."""
    pairs: Counter[tuple[str, str]] = Counter()
    frames: set[Tokens] = set()
    unplaced: list[tuple[Tokens, Tokens]] = []
    for f in facts:
        name, tokens = words(f.candidate), words(f.sentence)
        at = _find(name, tokens)
        short = _find(name[:-1], tokens) if at is None and len(name) > 1 else None
        if short is not None:
            frames.add((*tokens[:short], SLOT, *tokens[short + len(name) - 1 :]))
            continue
        at = _aligned(name, tokens) if at is None else at
        if at is None:
            unplaced.append((name, tokens))
            continue
        frames.add((*tokens[:at], SLOT, *tokens[at + len(name) :]))
        pairs.update(zip(name, tokens[at : at + len(name)], strict=True))
    known = sorted(frames)
    for name, tokens in unplaced:
        at = _by_frame(name, tokens, known)
        if at is not None:
            pairs.update(zip(name, tokens[at : at + len(name)], strict=True))
    best: dict[str, tuple[int, str]] = {}
    for (word, said), n in sorted(pairs.items()):
        if word != said and n > best.get(word, (0, ""))[0]:
            best[word] = (n, said)
    return {word: said for word, (_, said) in sorted(best.items())}


def _aligned(name: Tokens, tokens: Tokens) -> int | None:
    """The start of the window of `tokens` that keeps the most of `name`'s words in place, when
    it keeps at least half of them."""
    n = len(name)
    kept = [
        sum(a == b for a, b in zip(name, tokens[i : i + n], strict=True)) for i in range(len(tokens) - n + 1)
    ]
    if not kept or 2 * max(kept) < n or max(kept) == 0:
        return None
    return kept.index(max(kept))


def _by_frame(name: Tokens, tokens: Tokens, frames: Iterable[Tokens]) -> int | None:
    """Where `name`'s stand-in starts, when `tokens` are one of `frames` (the first that fits)
    around as many words."""
    for frame in frames:
        cut = frame.index(SLOT)
        before, after = frame[:cut], frame[cut + 1 :]
        if (
            len(tokens) == len(before) + len(name) + len(after)
            and tokens[: len(before)] == before
            and tokens[len(tokens) - len(after) :] == after
        ):
            return len(before)
    return None


def cue_rows(packs: Iterable[NormalizedScenarioPack]) -> tuple[np.ndarray, list[bool]]:
    """Every candidate of the train `packs` as its text columns, and whether some sentence of
    its method says the study used it."""
    rows: list[np.ndarray] = [np.zeros((0, len(CUE_FIELDS)), dtype=np.float32)]
    labels: list[bool] = []
    for pack in packs:
        used = {f.candidate for f in train_facts([pack]) if f.meaning == "used"}
        c = pack.candidates
        names = (*c.techniques, *c.elements, *c.controls)
        rows.append(text_columns(pack.paper, names))
        labels += (name in used for name in names)
    return np.vstack(rows), labels


@dataclass(frozen=True, eq=True)
class CueProbe:
    """A logistic regression on a candidate's text columns (see the module)."""

    model: Logistic
    pairs: bool

    @classmethod
    def fit(cls, rows: np.ndarray, labels: list[bool], pairs: bool = False) -> CueProbe:
        named = ["used" if label else "other" for label in labels]
        return cls(fit_logistic(_widened(rows, pairs), named), pairs)

    def claims(self, paper: Paper, name: str, names: tuple[str, ...] = ()) -> bool:
        row = _widened(text_columns(paper, [name]), self.pairs)
        return self.model.predict(row)[0] == "used"


_PAIRS = np.triu_indices(len(CUE_FIELDS), k=1)  # every pair of distinct columns


def _widened(rows: np.ndarray, pairs: bool) -> np.ndarray:
    if not pairs:
        return rows
    first, second = _PAIRS
    return np.hstack([rows, rows[:, first] * rows[:, second]])


def best_single_cue(rows: np.ndarray, labels: list[bool]) -> CueRule:
    """The one-column rule of `SINGLE_CUE_RULES` right on the most train candidates (ties: the
    first listed)."""
    truth = np.array(labels)

    def right(rule: CueRule) -> int:
        column = rows[:, CUE_FIELDS.index(rule.field)]
        claimed = column < rule.threshold if rule.below else column >= rule.threshold
        return int(np.sum(claimed == truth))

    return max(SINGLE_CUE_RULES, key=right)
