"""Reference readers: Scientists that differ only in what they take from the paper.

Each plays the public reader's negotiation (`probes.PublicReaderScientist`: ask what the lab
charges, propose the plan that fits, revise with what the reply teaches) and proposes the
reported sample size; only `choices` differs:

- `ExactNameScientist`: a candidate whose exact name occurs in a sentence with no negation word
  (the ten-line regex reader).
- `PriorScientist`: reads nothing; claims the candidates that the study drew at least half the
  time at the same position and name length on the train split.
- `SingleCueScientist`: claims each candidate by a fixed rule on one of the observation's text
  columns (`replicalab.envs.text_columns.CUE_FIELDS`): how far one feature goes without learning.
- `PublicOracleScientist`: reads the meaning of every sentence (`paper_facts`, which the
  generator records as it writes): exactly what the text makes knowable, the public ceiling.

`probes.BlindScientist` (every candidate) and `oracle.OracleScientist` (the hidden study) bound
them from below and above.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

from replicalab.baselines.policies.probes import (
    Answer,
    Choices,
    Opening,
    PublicReaderScientist,
    train_packs,
    wanted_samples,
)
from replicalab.envs.text_columns import CUE_FIELDS, text_columns
from replicalab.episode import Episode
from replicalab.models import Paper, ScientistAction, ScientistObservation
from replicalab.scenarios.generator import paper_facts
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.text import NEGATIONS, mentions, sentences, words


class ClaimingScientist(PublicReaderScientist):
    """A reader that decides each candidate alone (`claims`): it claims the candidate elements
    and controls it passes, and the first technique it passes (else the first listed)."""

    name = "claiming"

    def claims(self, paper: Paper, name: str) -> bool:
        raise NotImplementedError

    def choices(self, observation: ScientistObservation) -> Choices:
        c = observation.candidates

        def claimed(names: list[str]) -> tuple[str, ...]:
            return tuple(n for n in names if self.claims(observation.paper, n))

        return Choices(
            (*claimed(c.techniques), *c.techniques, None)[0],
            claimed(c.elements),
            claimed(c.controls),
            wanted_samples(observation.paper),
        )


class ExactNameScientist(ClaimingScientist):
    """Claims each candidate named verbatim in a sentence without a negation word."""

    name = "exact-name"

    def claims(self, paper: Paper, name: str) -> bool:
        return any(mentions(name, s) for s in _plain(paper.method))


@lru_cache(maxsize=256)  # one method is read for each of its candidates
def _plain(method: str) -> tuple[str, ...]:
    """The sentences of `method` without a negation word."""
    return tuple(s for s in sentences(method) if not set(words(s)) & NEGATIONS)


class CueRule(NamedTuple):
    """A fixed rule on one text column: claim when it is at least `threshold` (or, `below`, under)."""

    field: str
    threshold: float
    below: bool


_COUNTS = (0.25, 0.5, 0.75, 1.0)  # the steps of a column of counts over 4
_STEPS = {"exact": (1.0,), "partial": (0.5, 0.75, 1.0)}  # the others are counts
SINGLE_CUE_RULES = tuple(
    CueRule(field, threshold, below)
    for field in CUE_FIELDS
    for threshold in _STEPS.get(field, _COUNTS)
    for below in (False, True)
)
"""Every fixed rule on one text column: each step of a graded column, either way."""


class SingleCueScientist(ClaimingScientist):
    """Claims each candidate whose text column `field` (as the observation carries it) is at
    least `threshold`, or with `below` under it, and the first technique so claimed."""

    name = "single-cue"

    def __init__(self, field: str, threshold: float, below: bool = False) -> None:
        super().__init__()
        if field not in CUE_FIELDS:
            raise ValueError(f"field: {field!r} is not a text column; columns: {', '.join(CUE_FIELDS)}")
        self.column, self.threshold, self.below = CUE_FIELDS.index(field), threshold, below

    def claims(self, paper: Paper, name: str) -> bool:
        """Whether the rule claims the candidate `name` of `paper`."""
        value = float(text_columns(paper, [name])[0, self.column])
        return value < self.threshold if self.below else value >= self.threshold


_Key = tuple[str, int, int]  # (kind, position in its list, words in its name)


def _keys(kind: str, names: list[str]) -> list[tuple[str, _Key]]:
    return [(name, (kind, i, len(words(name)))) for i, name in enumerate(names)]


class PriorScientist(PublicReaderScientist):
    """Claims the candidates whose (position, name length) the train split's studies drew at
    least half the time, and the technique drawn most often at its key. Fitted on the train packs
    of `seeds` (and `templates`: every registered one unless given)."""

    name = "prior"

    def __init__(self, seeds: Iterable[int] = range(40), templates: Iterable[str] | None = None) -> None:
        super().__init__()
        drawn: Counter[_Key] = Counter()
        seen: Counter[_Key] = Counter()
        for pack in train_packs(seeds, templates):
            spec, c = pack.hidden_reference_spec, pack.candidates
            used = {spec.technique, *spec.required_elements, *spec.original_controls}
            for kind, names in (("t", c.techniques), ("e", c.elements), ("c", c.controls)):
                for name, key in _keys(kind, names):
                    seen[key] += 1
                    drawn[key] += name in used
        self.rate = {key: drawn[key] / seen[key] for key in seen}

    def choices(self, observation: ScientistObservation) -> Choices:
        c = observation.candidates

        def likely(kind: str, names: list[str]) -> tuple[str, ...]:
            return tuple(n for n, key in _keys(kind, names) if self.rate.get(key, 0.0) >= 0.5)

        ranked = sorted(_keys("t", c.techniques), key=lambda pair: -self.rate.get(pair[1], 0.0))
        return Choices(
            ranked[0][0] if ranked else None,
            likely("e", c.elements),
            likely("c", c.controls),
            wanted_samples(observation.paper),
        )


class PublicOracleScientist(PublicReaderScientist):
    """Claims exactly the candidates some sentence of the method says the study used."""

    name = "public-oracle"

    def __init__(self, opening: Opening = "ask", answer: Answer = "revise") -> None:
        super().__init__(opening, answer)
        self._pack: NormalizedScenarioPack | None = None

    def act(self, episode: Episode) -> ScientistAction:
        self._pack = episode.scenario  # the facts are drawn again from its seed
        return super().act(episode)

    def choices(self, observation: ScientistObservation) -> Choices:
        assert self._pack is not None, "act sets the pack before planning"
        return _public_choices(self._pack)


def _public_choices(pack: NormalizedScenarioPack) -> Choices:
    """The candidates the method of `pack` says its study used, and the reported sample size; a
    paper that leaves its technique unsaid gets the first technique it does not deny."""
    facts = paper_facts(pack)
    used = {f.candidate for f in facts if f.meaning == "used"}
    denied = {f.candidate for f in facts if f.meaning == "not_used"}
    c = pack.candidates
    return Choices(
        next(
            (t for t in c.techniques if t in used), next((t for t in c.techniques if t not in denied), None)
        ),
        tuple(e for e in c.elements if e in used),
        tuple(k for k in c.controls if k in used),
        wanted_samples(pack.paper),
    )


class GuessingOracleScientist(PublicOracleScientist):
    """The public oracle, also claiming every element the method neither uses nor denies: what
    guessing the unstated elements gains over leaving them out."""

    name = "public-oracle-guessing"

    def choices(self, observation: ScientistObservation) -> Choices:
        assert self._pack is not None, "act sets the pack before planning"
        told = {f.candidate for f in paper_facts(self._pack) if f.meaning != "mentioned"}
        stated = _public_choices(self._pack)
        unstated = [e for e in self._pack.candidates.elements if e not in told]
        elements = tuple(e for e in self._pack.candidates.elements if e in {*stated.elements, *unstated})
        return stated._replace(elements=elements)
