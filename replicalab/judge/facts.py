"""What the judge needs to know about a scenario, derived once per pack object.

Every score reads the same few facts of a pack (the bounds its constraints set, the items the
method needs, the content words of the hidden reference and of the case's technique), and
deriving them costs more than scoring a plan. A pack is frozen, so they are kept per pack
*object* (`IdentityMemo`): a table keyed by scenario_id would serve stale facts to a user pack
that reuses an id.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from replicalab.memo import IdentityMemo
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.text import content_words

_DEFAULT_MIN_CONTROLS = 2  # when a pack sets no min_controls constraint
_ADEQUATE_SHARE_OF_TIME = 0.3  # a plan using this share of the time limit is long enough
_REFERENCE_SCALE = 2.0  # the paper's sample size, as a multiple of the minimum (see rigor)


@dataclass(slots=True, eq=False)  # not frozen: that triples __init__'s cost; nothing assigns to it
class CaseFacts:
    """The judge's view of one pack (hashed by identity: it keys the scores' caches)."""

    min_samples: int  # the min_sample_size bound (1 without one)
    reference_samples: float  # where the sample-size credit saturates
    min_controls: int  # distinct controls the lab asks for
    reviews: tuple[str, ...]  # review terms some control must name
    adequate_days: int  # duration that earns full rigor credit
    essentials: tuple[frozenset[str], ...]  # per essential item: lower-cased names that satisfy it
    needed: frozenset[str]  # lower-cased names of every item the method can use
    elements: tuple[tuple[str, frozenset[str]], ...]  # required element, its content words
    technique_words: frozenset[str]  # content words of the case's technique


def _derive(pack: NormalizedScenarioPack) -> CaseFacts:
    min_samples = 1
    min_controls = _DEFAULT_MIN_CONTROLS
    time_limit = pack.lab.time_limit_days
    reviews: list[str] = []
    for c in pack.constraints:
        kind, q = c.kind, c.quantity
        if kind == "required_review" and c.term:
            reviews.append(c.term)
        elif q is None:
            continue
        elif kind == "min_sample_size":
            min_samples = max(min_samples, math.ceil(q))
        elif kind == "min_controls":
            min_controls = max(1, math.ceil(q))
        elif kind == "max_duration_days":
            time_limit = min(time_limit, math.floor(q))
    alternatives: dict[str, list[str]] = {}
    for sub in pack.allowed_substitutions:
        alternatives.setdefault(sub.original.lower(), []).append(sub.alternative.lower())
    essentials = tuple(
        frozenset([key, *alternatives.get(key, ())])
        for key in (item.name.lower() for item in pack.resources if item.essential)
    )
    reference = pack.hidden_reference_spec
    elements, technique_words = _reference_words(
        tuple(reference.required_elements), reference.technique or pack.paper.method
    )
    return CaseFacts(
        min_samples=min_samples,
        reference_samples=_REFERENCE_SCALE * min_samples,
        min_controls=min_controls,
        reviews=tuple(reviews),
        adequate_days=max(1, math.ceil(_ADEQUATE_SHARE_OF_TIME * max(time_limit, 1))),
        essentials=essentials,
        needed=frozenset().union(*essentials),
        elements=elements,
        technique_words=technique_words,
    )


@lru_cache(maxsize=1024)  # the packs of a case share its reference text: derived once per case
def _reference_words(
    elements: tuple[str, ...], technique: str
) -> tuple[tuple[tuple[str, frozenset[str]], ...], frozenset[str]]:
    """(each required element with its content words, the technique's content words)."""
    return tuple((e, content_words(e)) for e in elements), content_words(technique)


_facts_memo: IdentityMemo[CaseFacts] = IdentityMemo(weak=True)


def case_facts(pack: NormalizedScenarioPack) -> CaseFacts:
    """The facts of `pack`, derived on its first use."""
    facts = _facts_memo.get((pack,))
    if facts is None:
        facts = _facts_memo.put((pack,), _derive(pack))
    return facts
