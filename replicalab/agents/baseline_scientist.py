"""The baseline Scientist: a deterministic decision tree over the observation, no model.

It proposes a protocol grounded in the brief — its family's generic plan (`baseline_plan` of the
template whose domain hints the paper names most), the essential items with substitutes for
unavailable ones, the required review, the constraint bounds — halves its scope when the Lab
Manager reports a blocker, and otherwise accepts; at the round limit it accepts. It reads only
the observation and the registered families' public plans, never a hidden reference. Hints are
matched on whole words: substring tests once read "constraints" as "train".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import NamedTuple

from replicalab.models import (
    MAX_LIST_ITEMS,
    Constraint,
    ConversationEntry,
    LabManagerActionType,
    Paper,
    Protocol,
    ResourceItem,
    ScientistAction,
    ScientistActionType,
    ScientistObservation,
    Substitution,
    clip_text,
)
from replicalab.scenarios import get_template, template_names
from replicalab.scenarios.types import TemplateData
from replicalab.text import mentions, occurs, sentences, spaced, words

_BLOCKER_HINTS = (
    "booked",
    "unavailable",
    "exceeds",
    "exceed",
    "exceeded",
    "tight",
    "budget",
    "cost",
    "costs",
    "expensive",
    "insufficient",
    "shortage",
    "infeasible",
    "fails",
    "failed",
    "violates",
    "violation",
    "forbidden",
    "conflict",
    "overrun",
    "reject",
    "rejected",
    "staff",
    "out of stock",
    "not available",
    "not feasible",
    "too long",
    "too many",
    "too few",
    "over budget",
)


class _Hints(NamedTuple):
    single: frozenset[str]  # one-word hints, tested by set intersection
    phrases: tuple[tuple[str, str], ...]  # (first word, phrase) of multi-word hints


@lru_cache(maxsize=64)  # a family's hint list, compiled once rather than at every opening
def _compile_hints(hints: tuple[str, ...]) -> _Hints:
    single = frozenset(h for h in hints if words(h) == (h,))
    return _Hints(single, tuple((words(h)[0], h) for h in hints if h not in single))


def _named_phrases(hints: _Hints, text: str, tokens: tuple[str, ...]) -> Iterator[str]:
    return (phrase for head, phrase in hints.phrases if head in tokens and mentions(phrase, text))


def _has_hint(hints: _Hints, text: str) -> bool:
    tokens = words(text)
    return not hints.single.isdisjoint(tokens) or any(_named_phrases(hints, text, tokens))


_BLOCKER = _compile_hints(_BLOCKER_HINTS)


_DEFAULT_SAMPLE_SIZE = 10
_DEFAULT_DURATION_DAYS = 7
_ACCEPT = ScientistAction(action_type=ScientistActionType.ACCEPT)
_NO_BLOCKER_TYPES = frozenset(
    {LabManagerActionType.ACCEPT.value, LabManagerActionType.REPORT_FEASIBILITY.value}
)


class _Brief(NamedTuple):
    """What the baseline takes from the public constraints (the tightest bound of each kind)."""

    min_sample: int | None
    max_sample: int | None
    max_duration: int | None
    min_controls: int
    reviews: tuple[str, ...]  # terms a control must name
    forbidden: tuple[str, ...]  # terms no part of the protocol may name


class _Opening(NamedTuple):
    """The fields of the baseline's first proposal (lists are copied into each action)."""

    technique: str
    sample_size: int
    duration_days: int
    controls: tuple[str, ...]
    equipment: tuple[str, ...]
    reagents: tuple[str, ...]
    rationale: str


def build_baseline_scientist_action(observation: ScientistObservation) -> ScientistAction:
    """The reference decision tree: propose first; then accept at the round limit, revise on a
    blocker in the latest Lab Manager reply, and accept otherwise."""
    protocol = observation.current_protocol
    if protocol is None:
        brief = _read_brief(observation.constraints)
        table = _substitute_table(observation.resources, observation.substitutions)
        opening = _opening(
            observation.paper, observation.experiment_goal, observation.resources, brief, table
        )
        return _protocol_action(
            ScientistActionType.PROPOSE_PROTOCOL,
            opening.technique,
            opening.sample_size,
            opening.duration_days,
            list(opening.controls),
            list(opening.equipment),
            list(opening.reagents),
            opening.rationale,
        )
    if observation.round_number >= observation.max_rounds:
        return _ACCEPT
    for entry in reversed(observation.conversation_history):
        if entry.role == "lab_manager":  # the latest reply decides
            if _feedback_indicates_blocker(entry):
                return _revise(observation, protocol)
            break
    return _ACCEPT


def _infer_domain(observation: ScientistObservation) -> str:
    """The domain of the registered family whose hints the paper names most."""
    return _paper_family(observation.paper, observation.experiment_goal).domain_id


def _paper_family(paper: Paper, goal: str) -> TemplateData:
    """The registered family whose domain hints the paper (and goal) names most; equal counts go
    to the higher `baseline_plan.priority`, and a paper naming no hint goes to the family of
    lowest priority (the most general domain). Counting, not taking the first domain with any
    hint, keeps a proof that runs "on GPUs" in mathematics."""
    families = tuple(
        (name, tuple(plan.hints), plan.priority)
        for name, plan in ((name, get_template(name).baseline_plan) for name in template_names())
    )
    return get_template(_family_name(paper, goal, families))


def _family_name(paper: Paper, goal: str, families: tuple[tuple[str, tuple[str, ...], int], ...]) -> str:
    """`_paper_family`'s answer by name, among `families` as (name, hints, priority)."""
    texts = (paper.title, paper.hypothesis, *sentences(paper.method), paper.key_finding, goal)
    tokens = frozenset().union(*map(words, texts))
    joined = "".join(map(spaced, texts))  # a phrase occurs in it when it occurs in one text
    counted = []
    for name, hints, priority in families:
        compiled = _compile_hints(hints)
        phrases = {phrase for head, phrase in compiled.phrases if head in tokens and occurs(phrase, joined)}
        counted.append((len(compiled.single & tokens) + len(phrases), priority, name))
    count, _, best = max(counted, key=lambda entry: entry[:2])
    if count == 0:
        return min(families, key=lambda family: family[2])[0]
    return best


def _feedback_indicates_blocker(entry: ConversationEntry) -> bool:
    if entry.action_type in _NO_BLOCKER_TYPES:
        return False
    return _has_hint(_BLOCKER, entry.message)


def _read_brief(constraints: list[Constraint]) -> _Brief:
    min_sample: int | None = None
    max_sample: int | None = None
    max_duration: int | None = None
    min_controls = 0
    reviews: list[str] = []
    forbidden: list[str] = []
    for c in constraints:  # each field is read once: a pydantic attribute costs ~5x a plain one
        kind = c.kind
        if kind == "required_review" or kind == "forbidden_practice":  # terms, never bounds
            term = c.term
            if term:
                (reviews if kind == "required_review" else forbidden).append(term)
            continue
        q = c.quantity
        if q is None:
            continue
        if kind == "min_sample_size":
            min_sample = max(min_sample or 0, math.ceil(q))
        elif kind == "max_sample_size":
            max_sample = _tighter(max_sample, math.floor(q))
        elif kind == "max_duration_days":
            max_duration = _tighter(max_duration, math.floor(q))
        elif kind == "min_controls":
            min_controls = max(min_controls, math.ceil(q))
    return _Brief(min_sample, max_sample, max_duration, min_controls, tuple(reviews), tuple(forbidden))


def _tighter(bound: int | None, value: int) -> int:
    return value if bound is None else min(bound, value)


def _fit_sample(value: int, brief: _Brief) -> int:
    """`value` raised to the minimum, cut to the maximum, and at least 1."""
    if brief.min_sample is not None:
        value = max(value, brief.min_sample)
    if brief.max_sample is not None:
        value = min(value, brief.max_sample)
    return max(value, 1)


@lru_cache(maxsize=4096)  # item names and terms come from the families' small vocabulary
def _allowed(items: tuple[str, ...], forbidden: tuple[str, ...]) -> tuple[str, ...]:
    """`items` without duplicates (case-insensitive) and without any that names a forbidden term."""
    seen: set[str] = set()
    kept = []
    for item in items:
        key = item.lower()
        if key not in seen and not (forbidden and _names_any(forbidden, item)):
            seen.add(key)
            kept.append(item)
    return tuple(kept)


def _names_any(terms: tuple[str, ...], text: str) -> bool:
    """Whether `text` mentions any of `terms` (as whole words)."""
    spaced_text = spaced(text)
    return any(occurs(term, spaced_text) for term in terms)


def _substitute_table(resources: list[ResourceItem], substitutions: list[Substitution]) -> dict[str, str]:
    """Lower-cased unavailable item -> the first allowed substitute that is available."""
    if not substitutions:
        return {}
    available = {r.key: r.available for r in resources}
    table: dict[str, str] = {}
    for sub in substitutions:
        original = sub.original_key
        if not available.get(original, True) and available.get(sub.alternative_key):
            table.setdefault(original, sub.alternative)
    return table


def _swap(items: Iterable[str], table: dict[str, str], swaps: list[str]) -> tuple[str, ...]:
    """`items` with unavailable ones replaced by their substitute; `swaps` records each swap.

    An unavailable item without a substitute is kept: the Lab Manager reports it.
    """
    result = []
    for item in items:
        alternative = table.get(item.lower()) if table else None
        if alternative is not None:
            swaps.append(f"{alternative} for {item}")
            item = alternative
        result.append(item)
    return tuple(result)


def _with_reviews(
    controls: tuple[str, ...], reviews: tuple[str, ...], forbidden: tuple[str, ...]
) -> tuple[str, ...]:
    """`controls`, then each required review none of them names, all passed through `_allowed`
    (at most `MAX_LIST_ITEMS` of them: a pack may require more reviews than a plan can hold)."""
    text = "".join(map(spaced, controls))  # one text for all: see `spaced`
    missing = [r for r in reviews if not occurs(r, text)]
    return _allowed((*controls, *missing), forbidden)[:MAX_LIST_ITEMS]


@lru_cache(maxsize=1024)  # the terms come from the paper's case, which recurs across episodes
def _opening_controls(
    defaults: tuple[str, ...], n_defaults: int, reviews: tuple[str, ...], forbidden: tuple[str, ...]
) -> tuple[str, ...]:
    """The first `n_defaults` allowed default controls, then the required reviews."""
    return _with_reviews(_allowed(defaults, forbidden)[:n_defaults], reviews, forbidden)


def _protocol_action(
    kind: ScientistActionType,
    technique: str,
    sample_size: int,
    duration_days: int,
    controls: list[str],
    equipment: list[str],
    reagents: list[str],
    rationale: str,
    elements: list[str] | None = None,
) -> ScientistAction:
    return ScientistAction(
        action_type=kind,
        sample_size=sample_size,
        controls=controls,
        technique=technique,
        elements=elements or [],
        duration_days=duration_days,
        required_equipment=equipment,
        required_reagents=reagents,
        rationale=rationale,
    )


def _opening(
    paper: Paper, goal: str, resources: list[ResourceItem], brief: _Brief, table: dict[str, str]
) -> _Opening:
    plan = _paper_family(paper, goal).baseline_plan
    essentials: dict[str, list[str]] = {"equipment": [], "reagent": []}
    for r in resources:
        if r.essential:
            essentials[r.kind].append(r.name)
    swaps: list[str] = []
    equipment = _swap(essentials["equipment"], table, swaps)
    reagents = _swap(essentials["reagent"], table, swaps)
    sample_size = _fit_sample(_DEFAULT_SAMPLE_SIZE, brief)
    duration = _DEFAULT_DURATION_DAYS if brief.max_duration is None else max(brief.max_duration, 1)
    rationale = (
        f'Replicates "{paper.title}" at {sample_size} samples over {duration} days '
        "with only the essential items."
    )
    if swaps:
        rationale += f" Substitutes {'; '.join(swaps)}."
    return _Opening(
        plan.technique,
        sample_size,
        duration,
        _opening_controls(
            tuple(plan.controls),
            max(2, brief.min_controls - len(brief.reviews)),
            brief.reviews,
            brief.forbidden,
        ),
        _allowed(equipment, brief.forbidden),
        _allowed(reagents, brief.forbidden),
        clip_text(rationale),  # quotes the title and names every swap
    )


def _revise(observation: ScientistObservation, protocol: Protocol) -> ScientistAction:
    brief = _read_brief(observation.constraints)
    table = _substitute_table(observation.resources, observation.substitutions)
    sample_size = _fit_sample(protocol.sample_size // 2, brief)
    duration = protocol.duration_days * 3 // 4
    if brief.max_duration is not None:
        duration = min(duration, brief.max_duration)
    duration = max(duration, 1)
    swaps: list[str] = []
    equipment = _swap(protocol.required_equipment, table, swaps)
    reagents = _swap(protocol.required_reagents, table, swaps)
    technique = (
        protocol.technique
        or _paper_family(observation.paper, observation.experiment_goal).baseline_plan.technique
    )
    rationale = (
        f"Revised for the Lab Manager's concerns: sample size {protocol.sample_size} → "
        f"{sample_size}, duration {protocol.duration_days} → {duration} days."
    )
    if swaps:
        rationale += f" Substitutes {'; '.join(swaps)}."
    return _protocol_action(
        ScientistActionType.REVISE_PROTOCOL,
        technique,
        sample_size,
        duration,
        list(_with_reviews(tuple(protocol.controls), brief.reviews, brief.forbidden)),
        list(_allowed(equipment, brief.forbidden)),
        list(_allowed(reagents, brief.forbidden)),
        clip_text(rationale),
        list(protocol.elements),
    )
