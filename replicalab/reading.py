"""What a careful reader takes from a paper: which of the public candidates its method says the
study used.

A pack's method paragraph says what its study did in surface forms drawn from its split's
wording pool (`replicalab.scenarios.wording`): a candidate's own words or a description by one
word only its name holds, denials with or without a negation word, uses with one, verdicts
carried by reference across two sentences or over a list, and mentions of other work that say
nothing about this study. `cues` lists what a reader notices about each candidate, sentence by
sentence, and no verdict. `read_paper` is the project's reader (the public reader probe's): it
knows the forms of the train split's pool, as a user who studied the train papers would, reads
a sentence in one of them by its form, and any other by its cues (`verdict`); what it loses on
held-out wording is the generalization gap `benchmarks.shortcuts` reports. `addresses` is the
rationale a plan built from such choices gives, in text mode and structured mode alike (free
explanation: the plan claims its elements in its `elements` field, which is what is scored).
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import NamedTuple

from replicalab.models import Candidates, Paper
from replicalab.scenarios.wording import OWN, pool
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


def _present(wanted: frozenset[str], bag: frozenset[str]) -> frozenset[str] | None:
    """The content words `wanted` of a candidate that a sentence of words `bag` holds, when they
    make the sentence a mention of it (at least `PARTIAL` of them); None when they do not."""
    if bag.isdisjoint(wanted):  # most sentences: no set built
        return None
    present = wanted & bag
    return present if len(present) >= PARTIAL * len(wanted) else None


class Mention(NamedTuple):
    """A candidate one sentence mentions (`cues` without the verdict ingredients)."""

    slot: int  # its place among the names asked about
    exact: bool  # its words occur in order
    share: float  # the share of its content words in the sentence


def sentence_mentions(sentence: str, names: tuple[str, ...]) -> tuple[Mention, ...]:
    """The candidates of `names` that `sentence` mentions, in their order: each sentence of a
    method that `cues` lists for a name is one that mentions it here, alike."""
    bag = frozenset(words(sentence))
    found = []
    for index, wanted in enumerate(_contents(names)):
        present = _present(wanted, bag)
        if present is not None:
            found.append(Mention(index, occurs(names[index], spaced(sentence)), len(present) / len(wanted)))
    return tuple(found)


@lru_cache(maxsize=64)  # a pack's candidates are asked about for each sentence of its method
def _contents(names: tuple[str, ...]) -> tuple[frozenset[str], ...]:
    return tuple(content_words(name) for name in names)


def _cues(method: str, name: str) -> tuple[Cue, ...]:
    wanted = content_words(name)
    parsed = _parsed(method)
    if parsed.words.isdisjoint(wanted):  # a third of the candidates: named nowhere
        return ()
    found = []
    for number, bag in enumerate(parsed.bags):
        present = _present(wanted, bag)
        if present is None:
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
    some reads as a denial and none as a use. A sentence (or pair) in a form of the train
    split's wording is read by its form (`known_forms`); any other by its cues (`verdict`)."""
    said = _verdicts(paper.method, (*candidates.techniques, *candidates.elements, *candidates.controls))
    used = {name for name, meaning in said if meaning == "used"}
    denied = {name for name, meaning in said if meaning == "not_used"} - used
    return Reading(
        tuple(n for n in candidates.techniques if n in used),
        tuple(n for n in candidates.elements if n in used),
        tuple(n for n in candidates.controls if n in used),
        tuple(e for e in candidates.elements if e in denied),
    )


def read_labels(paper: Paper, candidates: Candidates) -> dict[str, str]:
    """Each of `candidates` with what the reader takes the method to say of it, in the labels of
    the reading data set (`replicalab.scenarios.public_labels`): `used`, `not_used`, `mentioned`
    (named, with no verdict) or `unstated` (never named); a verdict outranks a mention, a use a
    denial, as in `read_paper`."""
    names = (*candidates.techniques, *candidates.elements, *candidates.controls)
    said: dict[str, set[str]] = {}
    for name, meaning in _verdicts(paper.method, names):
        said.setdefault(name, set()).add(meaning)
    return {
        name: next((m for m in ("used", "not_used", "mentioned") if m in said.get(name, ())), "unstated")
        for name in names
    }


class Form(NamedTuple):
    """A sentence form the reader knows: its pattern (one group per candidate it speaks of),
    how many sentences it spans, and what it says of each candidate, in group order."""

    text: str  # as the wording writes it, `{0}`, `{name}`, ... where the candidates stand
    pattern: re.Pattern[str]
    spans: int
    meanings: tuple[str, ...]


_SLOT = re.compile(r"\{(\w+)\}")


def _form(text: str, meanings: tuple[str, ...], slot: str = ".+?") -> Form:
    """`text` (a frame or structure of the wording) as a `Form`: each slot a group of `slot`, a
    slot said again ("all but {2}") the same text."""
    parts = _SLOT.split(text)  # literal, slot, literal, slot, ...
    order: list[int] = []  # the slots in the order they first occur
    pattern = ""
    for i, part in enumerate(parts):
        k = int(part) if part.isdigit() else 0
        if i % 2 == 0:
            pattern += re.escape(part)
        elif k in order:
            pattern += f"(?P=s{k})"
        else:
            pattern += f"(?P<s{k}>{slot})"
            order.append(k)
    meaning_of = tuple(meanings[k] for k in order)
    return Form(text, re.compile(pattern, re.IGNORECASE), len(sentences_of(text)), meaning_of)


def known_forms() -> tuple[Form, ...]:
    """Every form of the train split's wording: what a reader who studied the train papers knows."""
    return forms_of("train")


@cache
def forms_of(split: str) -> tuple[Form, ...]:
    """Every form of `split`'s wording pool, those spanning most sentences first. A case's own
    sentences (`{clue}`, `{own}`) are no form: they are read by their cues."""
    wording = pool(split)
    forms = [
        _form(frame, (meaning,)) for meaning, frame in wording.every_frame() if not frame.startswith(OWN)
    ]
    forms.extend(_form(s.text, s.meanings) for s in wording.structures)
    return tuple(sorted(forms, key=lambda form: -form.spans))


_SENTENCE_START = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def sentences_of(method: str) -> tuple[str, ...]:
    """The sentences of a method, split where a sentence ends and a capital opens the next."""
    return tuple(_SENTENCE_START.split(method))


@lru_cache(maxsize=256)  # one method is read once per plan the reader makes
def _verdicts(method: str, names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(candidate, meaning) for every verdict the method gives: by form where one fits, by cues
    in the sentences no form fits."""
    parts = sentences_of(method)
    said: list[tuple[str, str]] = []
    read: set[int] = set()
    for form in known_forms():
        for at in range(len(parts) - form.spans + 1):
            span = range(at, at + form.spans)
            match = (
                None
                if read.intersection(span)
                else form.pattern.fullmatch(" ".join(parts[at : at + form.spans]))
            )
            if match is None:
                continue
            read.update(span)
            grounded = [_grounded(text, names) for text in match.groups()]
            if None in grounded:  # a name with "and" or "with" in it: try the names first
                again = _by_names(form, names).pattern.fullmatch(match.group(0))
                grounded = grounded if again is None else [_grounded(text, names) for text in again.groups()]
            said.extend(
                (name, meaning) for name, meaning in zip(grounded, form.meanings, strict=True) if name
            )
    rest = " ".join(part for i, part in enumerate(parts) if i not in read)
    for name in names:
        said.extend((name, _MEANING[verdict(cue)]) for cue in _cues(rest, name))
    return tuple(said)


_MEANING = {True: "used", False: "not_used", None: "mentioned"}


@lru_cache(maxsize=1024)
def _by_names(form: Form, names: tuple[str, ...]) -> Form:
    """`form` with each slot trying the candidates' names (longest first) before any text."""
    listed = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    return _form(form.text, form.meanings, f"(?:{listed}|.+?)")  # slots first occur in order


def _grounded(text: str, names: tuple[str, ...]) -> str | None:
    """The candidate `text` says: the one it names, else the one alone sharing most of its words."""
    exact = [name for name in names if name.lower() == text.lower()]
    if exact:
        return exact[0]
    shared = [len(content_words(name) & content_words(text)) for name in names]
    best = max(shared, default=0)
    return names[shared.index(best)] if best and shared.count(best) == 1 else None


def addresses(elements: tuple[str, ...] | list[str]) -> str:
    """The rationale of a plan that addresses `elements`."""
    if not elements:
        return "Addresses the paper's claim with its published method."
    return "Addresses: " + "; ".join(elements) + "."
