"""The hashed text columns: what a paper's method says around each candidate, for a learner to
read, and never a verdict on what the study did.

A candidate's row (`CUE_FIELDS`) holds how many sentences mention it, whether one names it
exactly, the best share of its content words in one sentence, and `HASH_BUCKETS` counts of the
words and word pairs around it. In a mentioning sentence the candidate's own content words become
one place-holder; each other word counts as itself and on which side of the candidate it stands,
each pair of adjacent words (the place-holder included) counts once; each word of the next
sentence counts once more, marked as the next sentence's. Each such feature goes to the bucket
`zlib.crc32` of it picks (the same in every process), so words share buckets and no column is a
word list. `replicalab.envs.features` lays these rows out in the Scientist's vector when the env
reads text (`reading="text"`, the default).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain, pairwise
from typing import NamedTuple

import numpy as np

from replicalab.models import Paper
from replicalab.reading import Mention, sentence_mentions
from replicalab.text import content_words, sentences, words

HASH_BUCKETS = 64  # hashed text columns per candidate slot
NAMING_FIELDS = ("mentions", "exact", "partial")
CUE_FIELDS = (*NAMING_FIELDS, *(f"hash[{b}]" for b in range(HASH_BUCKETS)))
"""What the method says around a candidate (`text_columns`), no verdict."""
_MAX_MENTIONS = 4  # sentences mentioning one candidate, the `mentions` scale
_MAX_COUNT = 4.0  # occurrences of one hashed bucket that fill its column
_HERE = "@"  # where the candidate stands in a sentence (no word holds "@")


def text_columns(paper: Paper, names: Sequence[str]) -> np.ndarray:
    """`CUE_FIELDS` of each candidate of `names` in `paper`'s method, one row each: how many
    sentences mention it, whether one names it exactly, the best share of its words, and the
    hashed words and word pairs around it (the module says which); all 0 where no sentence
    mentions it (or the name is empty). The paper is read once for all of them, sentence by
    sentence (`reading.cues` finds the same mentions)."""
    out = np.zeros((len(names), len(CUE_FIELDS)), dtype=np.float32)
    listed = tuple(names)
    said = sentences(paper.method)
    found: dict[int, list[Mention]] = {}  # row -> its mentions, in sentence order
    hashed: dict[int, list[int]] = {}  # row -> the buckets of its features
    for number, sentence in enumerate(said):
        read = _read_sentence(sentence, listed)
        following = _said(said[number + 1]) if read and number + 1 < len(said) else None
        for mention, around in read:
            row = mention.slot
            found.setdefault(row, []).append(mention)
            buckets = hashed.setdefault(row, [])
            buckets += around
            if following is not None:
                buckets += _after(following, content_words(listed[row]))
    if not found:
        return out
    mentioned = sorted(found)
    out[mentioned, : len(NAMING_FIELDS)] = [
        (
            min(1.0, len(found[row]) / _MAX_MENTIONS),
            any(m.exact for m in found[row]),
            max(m.share for m in found[row]),
        )
        for row in mentioned
    ]
    owners = np.repeat(np.arange(len(mentioned)), [len(hashed[row]) for row in mentioned])
    flat = np.fromiter(
        chain.from_iterable(hashed[row] for row in mentioned), dtype=np.intp, count=len(owners)
    )
    counts = np.bincount(owners * HASH_BUCKETS + flat, minlength=len(mentioned) * HASH_BUCKETS)
    out[mentioned, len(NAMING_FIELDS) :] = np.minimum(counts.reshape(-1, HASH_BUCKETS) / _MAX_COUNT, 1.0)
    return out


@lru_cache(maxsize=8192)  # sentences recur across packs: a case's methods are written from a few
def _read_sentence(sentence: str, names: tuple[str, ...]) -> tuple[tuple[Mention, tuple[int, ...]], ...]:
    """Each candidate of `names` that `sentence` mentions, with the buckets of the sentence
    around it (`_around`)."""
    found = sentence_mentions(sentence, names)
    if not found:  # about half the sentences: no word list made
        return ()
    said = _said(sentence)
    return tuple((mention, _around(said, content_words(names[mention.slot]))) for mention in found)


class _Word(NamedTuple):
    """One word's part in the text features: the bucket of each feature it makes alone, and
    what a word pair "a b" needs (its bucket is `zlib.crc32` of "a b", continued from "a")."""

    before: int  # the bucket of "<word"
    after: int  # ">word"
    following: int  # "+word"
    crc: int  # zlib.crc32 of "word"
    tail: bytes  # " word"


def _bucket(feature: bytes) -> int:
    """The bucket of a text feature: the same in every process, whatever PYTHONHASHSEED."""
    return zlib.crc32(feature) % HASH_BUCKETS


@lru_cache(maxsize=8192)  # a method's vocabulary is small and recurs across packs
def _word(word: str) -> _Word:
    text = word.encode()
    return _Word(
        _bucket(b"<" + text), _bucket(b">" + text), _bucket(b"+" + text), zlib.crc32(text), b" " + text
    )


_HERE_WORD = _word(_HERE)


class _Said(NamedTuple):
    """A sentence as the text features read it."""

    tokens: tuple[str, ...]  # its words
    bag: frozenset[str]
    looked: tuple[_Word, ...]  # each word's `_Word`
    following: tuple[int, ...]  # its buckets after a mention of a candidate it holds no word of


@lru_cache(maxsize=8192)  # the sentence after a mention is read for each candidate mentioned
def _said(sentence: str) -> _Said:
    tokens = words(sentence)
    looked = tuple(_word(w) for w in tokens)
    return _Said(tokens, frozenset(tokens), looked, tuple(w.following for w in looked))


def _placed(said: _Said, own: frozenset[str]) -> tuple[list[_Word], int]:
    """The sentence's words with each run of the candidate's own words made one `_HERE`, and
    where the first of those stands (the length when none does)."""
    placed: list[_Word] = []
    first = -1
    for text, word in zip(said.tokens, said.looked, strict=True):
        if text not in own:
            placed.append(word)
        elif not placed or placed[-1] is not _HERE_WORD:
            first = len(placed) if first < 0 else first
            placed.append(_HERE_WORD)
    return placed, len(placed) if first < 0 else first


def _around(said: _Said, own: frozenset[str]) -> tuple[int, ...]:
    """The buckets of a sentence that mentions a candidate of content words `own`: each other
    word with its side of the candidate ("<" before its first mention, ">" after), and each pair
    of adjacent words, the candidate one `_HERE`."""
    placed, first = _placed(said, own)
    buckets = [w.before for w in placed[:first]]
    buckets += [w.after for w in placed[first:] if w is not _HERE_WORD]
    buckets += [zlib.crc32(b.tail, a.crc) % HASH_BUCKETS for a, b in pairwise(placed)]
    return tuple(buckets)


def _after(said: _Said, own: frozenset[str]) -> tuple[int, ...]:
    """The buckets of the sentence after a mention: each word, marked as the next sentence's
    ("+"), the candidate one `_HERE`."""
    if said.bag.isdisjoint(own):
        return said.following
    return tuple(w.following for w in _placed(said, own)[0])
