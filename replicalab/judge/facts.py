"""What the judge needs to know about a scenario, derived once per pack object.

Every score reads the same few facts of a pack (the bounds its constraints set, the items the
method needs, the content words of the hidden reference and of the case's technique), and
deriving them costs more than scoring a plan. A pack is frozen, so they are cached per pack *object*: a table keyed by
scenario_id would serve stale facts to a user pack that reuses an id, and a pack is
unhashable (it holds lists), so the cache is keyed by identity and guarded by a weak reference
that drops the entry when the pack dies.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.text import content_words

_DEFAULT_MIN_CONTROLS = 2  # when a pack sets no min_controls constraint
_ADEQUATE_SHARE_OF_TIME = 0.3  # a plan using this share of the time limit is long enough
_REFERENCE_SCALE = 2.0  # the paper's sample size, as a multiple of the minimum (see rigor)


@dataclass(frozen=True, slots=True, eq=False)
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
        if c.kind == "required_review" and c.term:
            reviews.append(c.term)
        elif c.quantity is None:
            continue
        elif c.kind == "min_sample_size":
            min_samples = max(min_samples, math.ceil(c.quantity))
        elif c.kind == "min_controls":
            min_controls = max(1, math.ceil(c.quantity))
        elif c.kind == "max_duration_days":
            time_limit = min(time_limit, math.floor(c.quantity))
    alternatives: dict[str, set[str]] = {}
    for sub in pack.allowed_substitutions:
        alternatives.setdefault(sub.original.lower(), set()).add(sub.alternative.lower())
    essentials = tuple(
        frozenset({item.name.lower(), *alternatives.get(item.name.lower(), ())})
        for item in pack.resources
        if item.essential
    )
    needed = frozenset().union(*essentials) if essentials else frozenset()
    reference = pack.hidden_reference_spec
    return CaseFacts(
        min_samples=min_samples,
        reference_samples=_REFERENCE_SCALE * min_samples,
        min_controls=min_controls,
        reviews=tuple(reviews),
        adequate_days=max(1, math.ceil(_ADEQUATE_SHARE_OF_TIME * max(time_limit, 1))),
        essentials=essentials,
        needed=needed,
        elements=tuple((e, content_words(e)) for e in reference.required_elements),
        technique_words=content_words(reference.technique or pack.paper.method),
    )


_cache: dict[int, tuple[weakref.ref[NormalizedScenarioPack], CaseFacts]] = {}


def case_facts(pack: NormalizedScenarioPack) -> CaseFacts:
    """The facts of `pack`, derived on first use and kept while the pack lives."""
    key = id(pack)
    entry = _cache.get(key)
    if entry is not None and entry[0]() is pack:
        return entry[1]
    facts = _derive(pack)

    def _forget(ref: weakref.ref[NormalizedScenarioPack]) -> None:
        current = _cache.get(key)
        if current is not None and current[0] is ref:
            del _cache[key]

    _cache[key] = (weakref.ref(pack, _forget), facts)
    return facts
