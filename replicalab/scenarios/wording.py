"""How a paper's method says what its study did: several surface forms per choice, each with
its meaning recorded as data.

A choice the study made is said in one of the `used` forms (the case's own clue, a paraphrase
through the synonym table, an indirect reference such as "the main study kept the latter"); a
candidate it did not make is said in one of the `not_used` forms (its `negated` sentence, when it
has one, or a denial of varied scope: "rather than X", "X was considered and dropped", "unlike
earlier work, no X", "left for future work"); and any candidate may also be `mentioned` in a
sentence that says nothing about this study (related work, limitations). The frames and the
synonyms are data (`data/wording.json`). The generator never parses a sentence back: every one
it writes comes with the `Fact`s it states, so what the text makes knowable is exact.
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from importlib import resources
from typing import Literal, NamedTuple

from replicalab.text import words

Meaning = Literal["used", "not_used", "mentioned"]
MEANINGS: tuple[Meaning, ...] = ("used", "not_used", "mentioned")


class Fact(NamedTuple):
    """What one sentence of the method says of one candidate."""

    sentence: str
    candidate: str  # a candidate's name, as the pack's `Candidates` list it
    meaning: Meaning  # used: the study did it; not_used: it did not; mentioned: no information


@cache
def _wording() -> dict[str, object]:
    text = (resources.files("replicalab.scenarios") / "data" / "wording.json").read_text(encoding="utf-8")
    data: dict[str, object] = json.loads(text)
    return data


@cache
def _frames(meaning: Meaning) -> tuple[str, ...]:
    frames = _wording()[meaning]
    assert isinstance(frames, list)
    return tuple(frames)


@lru_cache(maxsize=4096)  # names recur across every pack of a case
def paraphrase(name: str) -> str:
    """`name` with its words swapped for the synonym table's; a name with none of them loses its
    last word instead (a partial mention)."""
    synonyms = _wording()["synonyms"]
    assert isinstance(synonyms, dict)
    tokens = name.split()
    swapped = [synonyms.get(token.lower(), token) for token in tokens]
    if swapped != tokens:
        return " ".join(swapped)
    return " ".join(tokens[:-1]) if len(words(name)) > 1 else name


def say(name: str, meaning: Meaning, u: float, own: str | None = None) -> Fact:
    """A sentence that says `meaning` of the candidate `name`, in the form `u` in [0, 1) picks;
    `own` is the case's own sentence for it (its clue or its negation), used by the `{clue}` form
    and, for a denial, as one more form."""
    count = len(_frames(meaning)) + (meaning == "not_used" and own is not None)
    return _say(name, meaning, int(u * count), own)


@lru_cache(maxsize=65536)  # a case's sentences recur across its packs
def _say(name: str, meaning: Meaning, form: int, own: str | None) -> Fact:
    frames = _frames(meaning)
    if meaning == "not_used" and own is not None:
        frames = ("{clue}", *frames)
    frame = frames[form]
    if frame == "{clue}" and own is None:
        frame = frames[-1]
    sentence = frame.format(
        clue=own or "", name=name, Name=name[:1].upper() + name[1:], para=paraphrase(name)
    )
    return Fact(sentence, name, meaning)
