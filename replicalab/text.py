"""Whole-word text matching shared by validation, the policies and the judge.

Raw substring tests made an earlier version gameable ("constraints" matched "train", a
rationale that pasted the brief matched everything). Everything here works on word tokens,
drops stop-words, and knows when a mention is negated ("no live trading").
"""

from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")

STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "per",
        "via",
        "using",
        "use",
        "used",
        "than",
        "then",
        "over",
        "under",
        "each",
        "all",
        "any",
        "our",
        "we",
        "us",
        "you",
        "your",
    ]
)

NEGATIONS = frozenset(
    [
        "no",
        "not",
        "never",
        "without",
        "avoid",
        "avoids",
        "avoiding",
        "exclude",
        "excludes",
        "excluding",
        "excluded",
        "forbid",
        "forbids",
        "forbidden",
        "prohibit",
        "prohibits",
        "prohibited",
        "none",
        "zero",
        "nor",
        "cannot",
    ]
)
_NEGATION_WINDOW = 3  # how many words before a phrase a negation still governs it


@lru_cache(maxsize=8192)
def words(text: str) -> tuple[str, ...]:
    """Lower-cased word tokens, in order (hyphenated words kept whole)."""
    return tuple(_WORD.findall(text.lower()))


@lru_cache(maxsize=8192)
def content_words(text: str) -> frozenset[str]:
    """The set of words of `text` that carry meaning (stop-words removed)."""
    return frozenset(w for w in words(text) if w not in STOP_WORDS)


@lru_cache(maxsize=4096)
def distinct_contents(texts: tuple[str, ...]) -> tuple[frozenset[str], ...]:
    """The distinct meaningful entries of a list, each as its set of content words, in a fixed
    order. Entries that differ only in case, stop-words or word order are one entry, and an entry
    without a content word is none: this is what "distinct" means for controls, wherever they
    are counted (validation's minimum and duplicates, the judge's rigor and padding)."""
    keys = {content_words(text) for text in texts}
    keys.discard(frozenset())
    return tuple(sorted(keys, key=sorted))


@lru_cache(maxsize=8192)
def spaced(text: str) -> str:
    """The words of `text` joined by single spaces and framed by spaces: a whole-word phrase
    occurs in `text` exactly when its own spaced form is a substring of this one.

    Spaced texts concatenated meet at a double space, which no phrase's spaced form holds, so
    a phrase occurs in one of several texts exactly when it occurs in `"".join(map(spaced, texts))`.
    """
    return " " + " ".join(words(text)) + " "


def _find(phrase: tuple[str, ...], tokens: tuple[str, ...]) -> list[int]:
    """Where `phrase` starts in `tokens` (each occurrence of its first word located by `index`)."""
    if not phrase:
        return []
    first, n = phrase[0], len(phrase)
    found: list[int] = []
    start = 0
    while first in tokens[start:]:
        i = tokens.index(first, start)
        if tokens[i : i + n] == phrase:
            found.append(i)
        start = i + 1
    return found


# The mark is captured, not looked behind: a look-behind is tried at every character, and a
# method's split costs twice as much.
_SENTENCE_END = re.compile(r"([.!?;])\s+")


def _split_sentences(text: str) -> tuple[str, ...]:
    parts = _SENTENCE_END.split(text)  # sentence, its mark, sentence, its mark, ..., the last
    return (*map(str.__add__, parts[:-1:2], parts[1::2]), parts[-1])


@lru_cache(maxsize=64)  # a pack's method is split by each reader of it (cues, the text columns)
def sentences(text: str) -> tuple[str, ...]:
    """The sentences of `text` (split after ".", "!", "?" or ";")."""
    return _split_sentences(text)


@lru_cache(maxsize=1024)  # a paper's method is read for every candidate it might name
def _sentence_tokens(text: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The `words` of `text`, and the number of the sentence each one is in."""
    tokens: list[str] = []
    sentence_of: list[int] = []
    for number, sentence in enumerate(_split_sentences(text)):
        found = words(sentence)
        tokens.extend(found)
        sentence_of.extend([number] * len(found))
    return tuple(tokens), tuple(sentence_of)


def mentions(phrase: str, text: str) -> bool:
    """True when `phrase` occurs in `text` as a whole-word sequence."""
    return occurs(phrase, spaced(text))


def occurs(phrase: str, spaced_text: str) -> bool:
    """`mentions` against a text already `spaced` (or several, concatenated)."""
    needle = spaced(phrase)
    return needle != "  " and needle in spaced_text


_COPULAS = frozenset(["is", "are", "was", "were", "be", "been"])


def stated_without_denial(phrase: str, text: str) -> bool:
    """True when `phrase` occurs in `text` at least once that no negation denies: none in the
    words just before it ("we did not use X"), and none right after it, alone or behind a form
    of "to be" ("X was never used"). "X with no common factor" still states X."""
    tokens, sentence_of = _sentence_tokens(text)
    for start in _find(words(phrase), tokens):
        end = start + len(words(phrase))
        after = [end] if end < len(tokens) else []
        if after and tokens[end] in _COPULAS and end + 1 < len(tokens):
            after.append(end + 1)
        near = [*range(max(0, start - _NEGATION_WINDOW), start), *after]
        if not any(sentence_of[i] == sentence_of[start] and tokens[i] in NEGATIONS for i in near):
            return True
    return False


def affirmed(phrase: str, text: str) -> bool:
    """True when `phrase` occurs in `text` at least once without a negation just before it in
    the same sentence (a "no" that ends one sentence does not deny what opens the next)."""
    if not mentions(phrase, text):
        return False
    tokens, sentence_of = _sentence_tokens(text)
    for start in _find(words(phrase), tokens):
        window = range(max(0, start - _NEGATION_WINDOW), start)
        if not any(sentence_of[i] == sentence_of[start] and tokens[i] in NEGATIONS for i in window):
            return True
    return False
