"""A decipherer: a rule outside the evaluation protocol that reads no label and no reward, but
fits on unlabeled papers of the split it is then played on, inferring what each sentence form
means from what the generator guarantees of every paper.

It cuts each sentence of a method into a form (the sentence with every candidate it names cut
out, by its name or by a word of its name that no other candidate holds and that the split's
sentences do not use of their own), then labels each slot of each form "used" or not so that the
fitted papers keep the guarantees as well as they can:

- one technique used per paper (two points: the surest);
- per paper case, the same number of controls used in every paper (the mode over the case's
  papers), and its number of elements give or take `ELEMENT_SPREAD`;
- a form with a negation word ("no", "never", "without", ...) says "not used" when nothing
  else decides (a prior one point below any guarantee).

Labels start at that prior and improve form by form (coordinate ascent: every labelling of one
form's slots tried at once) until no change raises the number of guarantees kept. `DeciphererScientist` then claims what the labels say of a paper's
sentences and negotiates as the public reader does. `benchmarks.shortcuts` plays it as a
reference row: what deciphering held-out wording from unlabeled test papers is worth, against
the public-information oracle's ceiling.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import product

from replicalab.baselines.policies.probes import Choices, PublicReaderScientist, wanted_samples
from replicalab.models import Candidates, Paper, ScientistObservation
from replicalab.scenarios.difficulty import LEVELS
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.text import NEGATIONS, content_words, words

SLOT = "{}"
ANCHOR = "{~}"  # a slot found by one word of the name: a description, before `canonical` unwraps it
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_TOKEN = re.compile(r"[\w'-]+")
FORM_WORD_SHARE = 0.5  # a word seen this often where no candidate's name holds it is the wording's own
ROUNDS = 20  # coordinate-ascent sweeps at most
ELEMENT_SPREAD = max(
    level.element_spread for level in LEVELS.values()
)  # elements a study keeps: its case's ±
MIN_WRAPPED = 3  # how often a description's wording must unwrap to a named form to count as one


@dataclass(frozen=True)
class Said:
    """One sentence (or a sentence and the candidate-free one after it) of a method: its form and
    the candidates its slots stand for, in order."""

    form: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Parsed:
    """A paper as the decipherer reads it: its case (the title) and its sentences' forms."""

    title: str
    kinds: dict[str, str]  # candidate -> "technique" / "element" / "control"
    said: tuple[Said, ...]


@dataclass(frozen=True)
class Lexicon:
    """What the decipherer learns of the wording before any label: each case's opening (the
    sentences every paper of a title starts with) and the words the wording uses of its own."""

    intros: dict[str, tuple[str, ...]]  # title -> its opening sentences
    form_words: frozenset[str]
    wrappers: tuple[tuple[str, str], ...] | None = None  # descriptions: (words before, word after)

    @classmethod
    def of(cls, papers: Sequence[tuple[Paper, Candidates]]) -> Lexicon:
        by_title: dict[str, list[tuple[str, ...]]] = defaultdict(list)
        for paper, _ in papers:
            by_title[paper.title].append(_sentences(paper.method))
        intros = {title: _common_prefix(methods) for title, methods in by_title.items()}
        seen: Counter[str] = Counter()
        foreign: Counter[str] = Counter()
        for paper, candidates in papers:
            owned = frozenset().union(*(content_words(n) for n in _names(candidates)))
            for sentence in _sentences(paper.method)[len(intros[paper.title]) :]:
                for token in set(words(sentence)):
                    seen[token] += 1
                    foreign[token] += token not in owned
        form_words = frozenset(t for t, n in seen.items() if foreign[t] > FORM_WORD_SHARE * n)
        raw = [s.form for paper, candidates in cls(intros, form_words).parse_all(papers) for s in paper.said]
        named = frozenset(_bare(f) for f in raw if ANCHOR not in f)
        found: Counter[tuple[str, str]] = Counter()
        for form in raw:
            if form.count(ANCHOR) == 1:
                found.update(w for w, v in _unwrapped(form) if _bare(v) in named)
        wrappers = tuple(w for w, n in found.most_common() if n >= MIN_WRAPPED and w != ("", ""))
        return cls(intros, form_words, wrappers)

    def parse_all(self, papers: Sequence[tuple[Paper, Candidates]]) -> list[tuple[Parsed, Candidates]]:
        return [(self.parse(paper, candidates), candidates) for paper, candidates in papers]

    def parse(self, paper: Paper, candidates: Candidates) -> Parsed:
        """The forms of `paper`'s sentences after its case's opening."""
        kinds = {n: "technique" for n in candidates.techniques}
        kinds.update({n: "element" for n in candidates.elements})
        kinds.update({n: "control" for n in candidates.controls})
        sentences = _sentences(paper.method)
        intro = self.intros.get(paper.title, ())
        if sentences[: len(intro)] == intro:
            sentences = sentences[len(intro) :]
        said: list[Said] = []
        for sentence in sentences:
            form, names = self._cut(sentence, tuple(kinds))
            if not names and said:  # a verdict carried over from the sentence before
                said[-1] = Said(f"{said[-1].form} {form}", said[-1].names)
            elif names:
                said.append(Said(form, names))
        if self.wrappers is not None:
            said = [Said(canonical(s.form, self.wrappers), s.names) for s in said]
        return Parsed(paper.title, kinds, tuple(said))

    def _cut(self, sentence: str, names: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
        """`sentence` with each candidate it names cut out (its whole name, else a word only its
        name holds that the wording does not use of its own), lower-cased, and those candidates
        in order."""
        spans: list[tuple[int, int, str]] = []
        for name in sorted(names, key=len, reverse=True):
            for found in re.finditer(rf"(?<![\w-]){re.escape(name)}(?![\w-])", sentence, re.IGNORECASE):
                if all(found.end() <= a or found.start() >= b for a, b, _ in spans):
                    spans.append((found.start(), found.end(), name))
        owners = _owners(names)
        for found in _TOKEN.finditer(sentence):
            token = found.group(0).lower()
            owner = owners.get(token)
            free = all(found.end() <= a or found.start() >= b for a, b, _ in spans)
            if owner is not None and free and token not in self.form_words:
                spans.append((found.start(), found.end(), "~" + owner))
        spans.sort()
        form, at = "", 0
        for start, end, name in spans:
            form += sentence[at:start] + (ANCHOR if name.startswith("~") else SLOT)
            at = end
        return (form + sentence[at:]).lower(), tuple(name.lstrip("~") for _, _, name in spans)


@lru_cache(maxsize=65536)
def canonical(form: str, wrappers: tuple[tuple[str, str], ...]) -> str:
    """`form` with each description unwrapped by the first of `wrappers` that fits it ("the
    ingredient concerning {~}" and "the {~} ingredient" both read as "{}"), a name's "the"
    dropped, so a frame reads alike whoever it speaks of and however."""
    for before, after in wrappers:
        if before:
            form = form.replace(f"{before} {ANCHOR}", ANCHOR)
        if after:
            form = re.sub(rf"{re.escape(ANCHOR)} {re.escape(after)}(?![\w'-])", ANCHOR, form)
    return _bare(form.replace(ANCHOR, SLOT))


def _bare(form: str) -> str:
    """`form` without the article before its slots."""
    return form.replace(f"the {SLOT}", SLOT)


def _unwrapped(form: str) -> Iterable[tuple[tuple[str, str], str]]:
    """Each way of dropping the words around the one `ANCHOR` of `form` (up to three before it,
    from or after a "the", and one after it): (the words dropped before and after, the form left)."""
    tokens = form.split(" ")
    at = next(i for i, t in enumerate(tokens) if t.startswith(ANCHOR))
    mark = tokens[at][len(ANCHOR) :]  # punctuation after the slot
    for k in range(4):
        if k and (at - k < 0 or "the" not in tokens[max(at - k - 1, 0) : at - k + 1]):
            continue
        for j in range(2):
            if j and (mark or at + 1 >= len(tokens)):
                continue
            word = re.match(r"[\w'-]*", tokens[at + 1]).group(0) if j else ""  # type: ignore[union-attr]
            end = tokens[at + 1][len(word) :] if j else mark
            left = " ".join(tokens[at - k : at])
            yield (left, word), " ".join((*tokens[: at - k], SLOT + end, *tokens[at + 1 + j :]))


@lru_cache(maxsize=256)
def _owners(names: tuple[str, ...]) -> dict[str, str]:
    """Each word that exactly one of `names` holds -> that name."""
    holders: dict[str, list[str]] = defaultdict(list)
    for name in names:
        for word in content_words(name):
            holders[word].append(name)
    return {word: held[0] for word, held in holders.items() if len(held) == 1}


def _names(candidates: Candidates) -> tuple[str, ...]:
    return (*candidates.techniques, *candidates.elements, *candidates.controls)


@lru_cache(maxsize=4096)
def _sentences(method: str) -> tuple[str, ...]:
    return tuple(_SENTENCE_END.split(method))


def _common_prefix(methods: list[tuple[str, ...]]) -> tuple[str, ...]:
    first = methods[0]
    k = 0
    while k < len(first) and all(len(m) > k and m[k] == first[k] for m in methods):
        k += 1
    return first[:k] if len(methods) > 1 else ()


Slot = tuple[str, int]  # (form, slot number)


@dataclass(frozen=True)
class Decipherer:
    """A label per form slot: True where the slot says the study used its candidate."""

    lexicon: Lexicon
    used: dict[Slot, bool]

    @classmethod
    def fit(cls, papers: Sequence[tuple[Paper, Candidates]]) -> Decipherer:
        """Labels that keep the guarantees on as many of `papers` (unlabeled) as coordinate ascent
        from the negation prior reaches."""
        lexicon = Lexicon.of(papers)
        parsed = [lexicon.parse(paper, candidates) for paper, candidates in papers]
        slots = sorted({(s.form, i) for p in parsed for s in p.said for i in range(len(s.names))})
        labels = {slot: not _negated(slot[0]) for slot in slots}
        where: dict[Slot, list[int]] = defaultdict(list)
        for k, p in enumerate(parsed):
            for s in p.said:
                for i in range(len(s.names)):
                    where[(s.form, i)].append(k)
        forms: dict[str, list[Slot]] = defaultdict(list)
        for slot in slots:
            forms[slot[0]].append(slot)
        moves = [[slot] for slot in slots] + [its for its in forms.values() if len(its) > 1]
        _ascend(parsed, labels, moves, where, counts=False)  # the technique alone first: no mode to go wrong
        _ascend(parsed, labels, moves, where, counts=True)
        return cls(lexicon, labels)

    def read(self, paper: Paper, candidates: Candidates) -> Choices:
        """The candidates the labels say `paper`'s method used; a form never fitted reads by the
        negation prior."""
        parsed = self.lexicon.parse(paper, candidates)
        used = _used(parsed, {**_unseen(parsed, self.used), **self.used})
        technique = next((t for t in candidates.techniques if t in used), None)
        return Choices(
            technique or (candidates.techniques[0] if candidates.techniques else None),
            tuple(e for e in candidates.elements if e in used),
            tuple(c for c in candidates.controls if c in used),
            wanted_samples(paper),
        )


def _ascend(
    parsed: list[Parsed],
    labels: dict[Slot, bool],
    moves: list[list[Slot]],
    where: dict[Slot, list[int]],
    counts: bool,
) -> None:
    """Coordinate ascent on `labels`: each move relabels its slots at once (every labelling
    tried), kept where it raises the guarantees kept (`_kept`, the case counts only if `counts`)
    plus the prior, until a sweep changes nothing."""
    for _ in range(ROUNDS):
        modes = _modes(parsed, labels) if counts else {}
        changed = False
        for its in moves:
            touched = sorted({k for slot in its for k in where[slot]})
            start = tuple(labels[slot] for slot in its)

            def score(
                choice: tuple[bool, ...],
                its: list[Slot] = its,
                touched: list[int] = touched,
                modes: dict[tuple[str, str], int] = modes,
            ) -> float:
                labels.update(zip(its, choice, strict=True))
                kept = sum(_kept(parsed[k], labels, modes, counts) for k in touched)
                return kept + sum(_prior(slot, label) for slot, label in zip(its, choice, strict=True))

            best = max(product((True, False), repeat=len(its)), key=lambda c: (score(c), c == start))
            labels.update(zip(its, best, strict=True))
            changed |= best != start
        if not changed:
            return


def _negated(form: str) -> bool:
    return not set(words(form)).isdisjoint(NEGATIONS)


def _prior(slot: Slot, label: bool) -> float:
    """Half a point for agreeing with the negation prior: less than any guarantee."""
    return 0.5 if label != _negated(slot[0]) else 0.0


def _unseen(parsed: Parsed, labels: dict[Slot, bool]) -> dict[Slot, bool]:
    return {
        (s.form, i): not _negated(s.form)
        for s in parsed.said
        for i in range(len(s.names))
        if (s.form, i) not in labels
    }


def _used(parsed: Parsed, labels: dict[Slot, bool]) -> set[str]:
    return {name for s in parsed.said for i, name in enumerate(s.names) if labels[(s.form, i)]}


def _counts(parsed: Parsed, labels: dict[Slot, bool]) -> Counter[str]:
    return Counter(parsed.kinds[name] for name in _used(parsed, labels))


def _modes(parsed: list[Parsed], labels: dict[Slot, bool]) -> dict[tuple[str, str], int]:
    """(title, kind) -> the number of its candidates used in most of the title's papers."""
    seen: dict[tuple[str, str], Counter[int]] = defaultdict(Counter)
    for p in parsed:
        counts = _counts(p, labels)
        for kind in ("element", "control"):
            seen[(p.title, kind)][counts[kind]] += 1
    return {key: counter.most_common(1)[0][0] for key, counter in seen.items()}


def _kept(parsed: Parsed, labels: dict[Slot, bool], modes: dict[tuple[str, str], int], counts: bool) -> int:
    """How many of the guarantees `parsed` keeps under `labels`: one technique (two points: it is
    the surest), and with `counts` its case's number of controls and of elements (`modes`)."""
    used = _counts(parsed, labels)
    kept = 2 * (used["technique"] == 1)
    if counts:
        kept += used["control"] == modes.get((parsed.title, "control"), -1)
        kept += abs(used["element"] - modes.get((parsed.title, "element"), -9)) <= ELEMENT_SPREAD
    return kept


def fit_decipherer(packs: Iterable[NormalizedScenarioPack]) -> Decipherer:
    """A `Decipherer` fitted on the public papers of `packs` (their briefs only: no label)."""
    return Decipherer.fit([(pack.paper, pack.candidates) for pack in packs])


class DeciphererScientist(PublicReaderScientist):
    """Claims what a fitted `Decipherer` reads in the paper; negotiates as the public reader."""

    name = "decipherer"

    def __init__(self, decipherer: Decipherer) -> None:
        super().__init__()
        self.decipherer = decipherer

    def choices(self, observation: ScientistObservation) -> Choices:
        return self.decipherer.read(observation.paper, observation.candidates)
