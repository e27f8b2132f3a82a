"""How a paper's method says what its study did: many surface forms per choice, drawn from a
pool of wording that belongs to the paper's split, each sentence with its meaning recorded.

Train, validation and test papers are written from disjoint pools (`data/wording.json`, one
per split), the way held-out levels keep a learner from memorising a level: no sentence form of
a test paper (the sentence with its candidates cut out) appears in a train paper. A pool holds:

- `used`, `not_used` and `mentioned` frames for one element, and `technique_frames` and
  `control_frames` of the same three meanings for a technique variant and a control: the case's own sentence (`{clue}`
  for a use, `{own}`, its negation, for a denial), uses with a negation word in them ("never
  performed without X"), denials that share a use's vocabulary ("X was run in the pilot only"),
  hedges that look like uses ("X would have been added had time allowed") and mentions of other
  work that say nothing about this study;
- `structures` that speak of two or three candidates at once: a verdict carried by reference
  across two sentences ("two options were piloted, X and Y. Only the second was kept"), lists
  with scoped negation ("neither X nor Y", "all but Z");
- `descriptions`: a candidate said without its name, by its anchor (the longest word of its
  name no other candidate of the case holds) in the split's own phrasing, so a careful reader
  maps it to exactly one candidate of the public list while most of its words change.

The generator never parses a sentence back: every one it writes comes with the `Fact`s it
states, so what the text makes knowable is exact.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache, lru_cache
from importlib import resources
from typing import Literal, NamedTuple

from replicalab.text import STOP_WORDS, content_words, words

Meaning = Literal["used", "not_used", "mentioned"]
MEANINGS: tuple[Meaning, ...] = ("used", "not_used", "mentioned")
Kind = Literal["technique", "element", "control"]
KINDS: tuple[Kind, ...] = ("technique", "element", "control")
OWN = ("{clue}", "{own}")  # a frame that is the case's own sentence for the candidate


class Fact(NamedTuple):
    """What one sentence (or pair of sentences) of the method says of one candidate."""

    sentence: str
    candidate: str  # a candidate's name, as the pack's `Candidates` list it
    meaning: Meaning  # used: the study did it; not_used: it did not; mentioned: no information


class Said(NamedTuple):
    """One candidate the method speaks of, and the draw in [0, 1) that picks how."""

    name: str
    meaning: Meaning
    u: float
    own: str | None  # the case's own sentence for it: its clue for a use, its negation for a denial


class Structure(NamedTuple):
    """A sentence (or two) about several candidates: `{0}`, `{1}`, ... stand for them."""

    text: str
    meanings: tuple[Meaning, ...]


class Pool(NamedTuple):
    """One split's wording: frames for elements, frames of their own for techniques and for
    controls (so that what a paper's one technique or its case's fixed number of controls
    teaches of a frame says nothing of an element's), structures and descriptions."""

    frames: dict[Meaning, tuple[str, ...]]
    structures: tuple[Structure, ...]
    descriptions: dict[Kind, tuple[str, ...]]
    technique_frames: dict[Meaning, tuple[str, ...]]
    control_frames: dict[Meaning, tuple[str, ...]]

    def frames_of(self, kind: Kind) -> dict[Meaning, tuple[str, ...]]:
        """The frames that say a candidate of `kind`."""
        return {"technique": self.technique_frames, "control": self.control_frames}.get(kind, self.frames)

    def every_frame(self) -> Iterator[tuple[Meaning, str]]:
        """(meaning, frame) of every frame of the pool, of every kind."""
        for frames in (self.frames, self.technique_frames, self.control_frames):
            for meaning, texts in frames.items():
                for text in texts:
                    yield meaning, text


@cache
def pool(split: str) -> Pool:
    """The wording that papers of `split` are written in."""
    text = (resources.files("replicalab.scenarios") / "data" / "wording.json").read_text(encoding="utf-8")
    data = json.loads(text)
    if split not in data:
        raise ValueError(f"split: no wording pool for {split!r}; pools: {', '.join(sorted(data))}")
    raw = data[split]
    structures = tuple(Structure(s["text"], tuple(s["meanings"])) for s in raw["structures"])
    for s in structures:  # a reader pairs the n-th candidate said with the n-th meaning
        first = list(dict.fromkeys(re.findall(r"\{(\d)\}", s.text)))
        if first != [str(k) for k in range(len(s.meanings))]:
            raise ValueError(f"structures: {s.text!r} must say {{0}}, {{1}}, ... first in that order")
    return Pool(
        {meaning: tuple(raw[meaning]) for meaning in MEANINGS},
        structures,
        {kind: tuple(raw["descriptions"][kind]) for kind in KINDS},
        {meaning: tuple(raw["technique_frames"][meaning]) for meaning in MEANINGS},
        {meaning: tuple(raw["control_frames"][meaning]) for meaning in MEANINGS},
    )


class Voice(NamedTuple):
    """How one case's candidates are said in one split: each name's descriptions, and every way
    a sentence says it, worked out once for the case's packs."""

    split: str
    descriptions: dict[str, tuple[str, ...]]  # name -> its descriptions (empty: said by name only)
    kinds: dict[str, Kind]  # name -> its kind
    # name -> (text, capitalised) of its `the_name`, then of each of its descriptions
    surfaces: dict[str, tuple[tuple[str, str], ...]]


@lru_cache(maxsize=256)  # one per case and split
def voice(split: str, names: tuple[tuple[str, Kind], ...]) -> Voice:
    """The `Voice` of a case whose candidates are `names` (each with its kind), in `split`'s
    pool. A description holds the candidate's anchor and shares no root with any other
    candidate's name, so exactly one candidate of the list shares a root with it."""
    templates = pool(split).descriptions
    out: dict[str, tuple[str, ...]] = {}
    for name, kind in names:
        others = frozenset().union(*(roots(n) for n, _ in names if n != name))
        anchor = anchor_of(name, others)
        out[name] = tuple(
            template.format(anchor=anchor)
            for template in templates[kind]
            if anchor is not None and roots(template.format(anchor="")).isdisjoint(others | roots(name))
        )
    surfaces = {
        name: tuple((text, _capital(text)) for text in (the_name(name), *described))
        for name, described in out.items()
    }
    return Voice(split, out, dict(names), surfaces)


@lru_cache(maxsize=8192)
def roots(text: str) -> frozenset[str]:
    """What a reader would take for the same word in two names: every part of a content word
    (split at hyphens and apostrophes), cut to its first five letters, so that "volatility",
    "volatilities" and "inverse-volatility" share one."""
    parts = (part for word in content_words(text) for part in re.split(r"[-']", word))
    return frozenset(part[:5] for part in parts if len(part) > 1 and part not in STOP_WORDS)


def anchor_of(name: str, others: frozenset[str]) -> str | None:
    """The longest word of `name`, as the name writes it (a proper name keeps its capitals), that
    shares no root with `others` (the other candidates' `roots`) and is no possessive, an adverb ("-ly") only where
    no other word fits (ties: the first); None when every word shares one."""
    own = [
        w for w in words(name) if w in content_words(name) and "'" not in w and roots(w).isdisjoint(others)
    ]
    if not own:
        return None
    best = max(own, key=lambda w: (not w.endswith("ly"), len(w)))
    # its first whole-token occurrence, as written (one shared pattern: no regex built per name)
    return next((token for token in _TOKEN.findall(name) if token.lower() == best), best)


_TOKEN = re.compile(r"[\w'-]+")  # a word as `anchor_of` finds it: no letter, digit, ' or - beside it


def _surface(voice: Voice, said: Said, by_name: bool) -> tuple[str, str]:
    """The candidate as a sentence says it, and capitalised: its name with its article
    (`the_name`), or one of its descriptions."""
    surfaces = voice.surfaces[said.name]
    if by_name or len(surfaces) == 1:
        return surfaces[0]
    return surfaces[1 + int(said.u * 7 % 1 * (len(surfaces) - 1))]


@lru_cache(maxsize=4096)  # candidate names recur across packs; a pack says some several times
def the_name(name: str) -> str:
    """`name` as a noun phrase of a sentence: after "the", which fits a singular, a plural and a
    mass noun alike, unless it opens with its own determiner, a quantifier ("at least fifteen
    ...") or a possessive ("Booker's")."""
    first = name.split(maxsplit=1)[0].lower()
    return name if first in _DETERMINERS or first.endswith("'s") else f"the {name}"


_DETERMINERS = frozenset(["a", "an", "the", "at", "each", "every", "both", "no", "some"])


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


_FIELDS = ("clue", "own", "name", "Name", "para", "Para")
"""The fields a frame may name: the case's own sentence (`clue` for a use, `own` for a denial),
the name with its article (`name`), the candidate as the voice says it (`para`), the last two
capitalised as `Name` and `Para`."""


@cache
def _frames(split: str, kind: Kind, meaning: Meaning, own: bool) -> tuple[str, ...]:
    """The frames of `split`'s pool for a `kind` and `meaning` (the case's own sentence only
    where it has one), each field numbered by its place in `_FIELDS`: `say` fills a frame from
    a tuple, which costs less than naming the fields."""
    numbered = {field: f"{{{i}}}" for i, field in enumerate(_FIELDS)}
    frames = pool(split).frames_of(kind)[meaning]
    return tuple(f.format_map(numbered) for f in frames if own or not f.startswith(OWN))


def say(voice: Voice, said: Said) -> Fact:
    """A sentence that says `said.meaning` of the candidate, in the frame `said.u` picks among
    those of the voice's pool (the case's own sentence being one where it has one)."""
    frames = _frames(voice.split, voice.kinds[said.name], said.meaning, said.own is not None)
    (named, named_capital), (para, para_capital) = voice.surfaces[said.name][0], _surface(voice, said, False)
    own = said.own or ""
    text = frames[int(said.u * len(frames))].format(own, own, named, named_capital, para, para_capital)
    return Fact(text, said.name, said.meaning)


@lru_cache(maxsize=256)  # per split, every order of two or three meanings: 36
def structures_for(split: str, meanings: tuple[Meaning, ...]) -> tuple[Structure, ...]:
    """The structures of `split`'s pool that say `meanings` (in any order) of as many candidates."""
    wanted = sorted(meanings)
    return tuple(s for s in pool(split).structures if sorted(s.meanings) == wanted)


def say_together(voice: Voice, group: tuple[Said, ...], structure: Structure) -> tuple[Fact, ...]:
    """`structure` (one of the `structures_for` the group's meanings) saying of each candidate of
    `group` its meaning: one `Fact` per candidate, all with the structure's text."""
    left = list(group)
    slots: list[Said] = []
    for meaning in structure.meanings:
        meanings = [s.meaning for s in left]
        if meaning not in meanings:
            break
        slots.append(left.pop(meanings.index(meaning)))
    if left or len(slots) < len(structure.meanings):
        raise ValueError(f"group: {structure.text!r} does not say {[s.meaning for s in group]}")
    text = structure.text.format(*[_surface(voice, s, by_name=s.u * 3 % 1 < 0.5)[0] for s in slots])
    return tuple([Fact(text, s.name, s.meaning) for s in slots])
