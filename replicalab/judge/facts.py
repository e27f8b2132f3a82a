"""What the judge needs to know about a scenario: bounds, reviews, needed items, reference words.

The per-pack facts (constraint bounds and terms, essential items and their substitutes) are the
pack's own cached properties, shared with validation and the Lab Manager; the ones derived from
numbers and text (the minimums, the adequate duration, the content words of the hidden reference
and of the technique) are cached on those values, which recur across the packs of a case.
`case_facts` keeps the facts of the latest pack it read: a pack is a frozen value, judged at
every accept (and, under shaping, at every proposal) of its episode, and the rollouts of a GRPO
group share one pack object.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter

from replicalab.power import needed_samples
from replicalab.scenarios.rules import adequate_days, binding_time_limit
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.text import content_words

DEFAULT_MIN_CONTROLS = 2  # when a pack sets no min_controls constraint
REFERENCE_SCALE = 2.0  # where sample credit saturates without a reported n, times the minimum


@dataclass(slots=True, eq=False)  # not frozen: that triples __init__'s cost; nothing assigns to it
class CaseFacts:
    """The judge's view of one pack."""

    min_samples: int  # the min_sample_size bound (1 without one)
    effect_size: float | None  # the effect the paper reports (None: credit grows as n / reference n)
    reference_samples: float  # where the sample-size credit saturates (`_most_powerful`)
    min_controls: int  # distinct controls the lab asks for
    reviews: tuple[str, ...]  # review terms some control must name
    adequate_days: int  # duration that earns full rigor credit
    essentials: tuple[frozenset[str], ...]  # per essential item: lower-cased names that satisfy it
    needed: frozenset[str]  # lower-cased names of every item the method can use
    elements: tuple[tuple[str, frozenset[str]], ...]  # required element, its content words
    distractors: tuple[tuple[str, frozenset[str]], ...]  # the other candidate elements, likewise
    controls: tuple[tuple[str, frozenset[str]], ...]  # the study's original controls, likewise
    stray_controls: tuple[tuple[str, frozenset[str]], ...]  # the candidate controls it did not run
    technique_words: frozenset[str]  # content words of the study's technique (none: any will do)
    candidate_elements: frozenset[frozenset[str]]  # content words of every public candidate element


_allowed = attrgetter("allowed")
_latest: tuple[NormalizedScenarioPack, CaseFacts] | None = None  # a pack and its facts


def case_facts(pack: NormalizedScenarioPack) -> CaseFacts:
    """The judge's reading of `pack` (shared: no reader changes it)."""
    global _latest
    latest = _latest
    if latest is None or latest[0] is not pack:
        latest = _latest = (pack, read_case_facts(pack))
    return latest[1]


def read_case_facts(pack: NormalizedScenarioPack) -> CaseFacts:
    """The judge's reading of `pack`, from the facts the pack derives once for every module."""
    min_samples, min_controls, adequate_days = bound_numbers(pack)
    reference = pack.hidden_reference_spec
    effect = pack.paper.reported_effect_size
    best_samples = reference_samples(reference.sample_size, min_samples, None)
    if effect is not None:
        best_samples = _most_powerful(pack, effect, min_samples, min_controls, adequate_days)
    required = tuple(reference.required_elements)
    elements, technique_words = _reference_words(required, reference.technique)
    others = tuple(e for e in pack.candidates.elements if e not in required)
    essentials = tuple(map(_allowed, pack.essentials))
    return CaseFacts(
        min_samples=min_samples,
        effect_size=effect,
        reference_samples=best_samples,
        min_controls=min_controls,
        reviews=pack.terms.get("required_review", ()),
        adequate_days=adequate_days,
        essentials=essentials,
        needed=frozenset().union(*essentials),
        elements=elements,
        distractors=_words_of(others),
        controls=_words_of(tuple(reference.original_controls)),
        stray_controls=_words_of(
            tuple(c for c in pack.candidates.controls if c not in reference.original_controls)
        ),
        technique_words=technique_words,
        candidate_elements=frozenset(map(content_words, pack.candidates.elements)),
    )


def reference_samples(reported: int | None, min_samples: int, effect: float | None) -> float:
    """Where the sample-size credit saturates by what the paper says: the n its reported
    `effect` needs (never below the minimum); without an effect, the `reported` n, or, when none
    is known (0), `REFERENCE_SCALE` times the minimum."""
    if effect is not None:
        return float(max(min_samples, needed_samples(effect)))
    return float(reported or REFERENCE_SCALE * min_samples)


def _most_powerful(
    pack: NormalizedScenarioPack, effect: float, min_samples: int, min_controls: int, days: int
) -> float:
    """The sample size of the best feasible plan: the needed items (an unavailable one replaced
    by the lab's first substitute), the lab's minimum of controls and the duration that earns
    full credit, with as many samples as the budget then pays for at the lab's prices, up to
    what the effect needs (`needed_samples`) and never below the minimum. Rigor credits a plan's
    power against this plan's, so it is what the prices and the budget allow, not what the paper
    ran."""
    needed = max(min_samples, needed_samples(effect))
    rates = pack.lab.rates
    if rates.per_sample <= 0:
        return float(needed)
    budget = min([pack.lab.budget_remaining, *pack.quantities.get("max_budget", ())])
    fixed = days * rates.per_day + min_controls * rates.per_control
    for essential in pack.essentials:
        item = essential.item
        name = item.name if item.available else (*pack.substitutes.get(item.key, ()), item.name)[0]
        chosen = pack.resource_by_name.get(name.lower(), item)
        fixed += rates.price_of(chosen.name, chosen.kind)
    affordable = math.floor((budget - fixed) / rates.per_sample + 1e-9)
    return float(max(min_samples, min(needed, affordable)))


def bound_numbers(pack: NormalizedScenarioPack) -> tuple[int, int, int]:
    """(min_samples, min_controls, adequate_days) of `pack`: the facts its public bounds and time
    limit decide alone, for a reader that needs no more of `case_facts` (the Scientist's prompt)."""
    bounds = pack.quantities
    return _numbers(
        bounds.get("min_sample_size", ()),
        bounds.get("min_controls", ()),
        bounds.get("max_duration_days", ()),
        pack.lab.time_limit_days,
    )


@lru_cache(maxsize=1024)  # bounds recur across the packs of a case (72 distinct in 360 readings)
def _numbers(
    sample_bounds: tuple[float, ...],
    control_bounds: tuple[float, ...],
    duration_bounds: tuple[float, ...],
    time_limit_days: int,
) -> tuple[int, int, int]:
    """(min_samples, min_controls, adequate_days) from the pack's bounds and time limit."""
    min_samples = max([1, *map(math.ceil, sample_bounds)])
    # the last min_controls bound wins
    min_controls = max(1, math.ceil(control_bounds[-1])) if control_bounds else DEFAULT_MIN_CONTROLS
    return min_samples, min_controls, adequate_days(binding_time_limit(time_limit_days, duration_bounds))


def _reference_words(
    elements: tuple[str, ...], technique: str
) -> tuple[tuple[tuple[str, frozenset[str]], ...], frozenset[str]]:
    """(each required element with its content words, the technique's content words)."""
    return _words_of(elements), content_words(technique)


def _words_of(names: tuple[str, ...]) -> tuple[tuple[str, frozenset[str]], ...]:
    """Each name with its content words (`content_words` caches them per string)."""
    return tuple((name, content_words(name)) for name in names)
