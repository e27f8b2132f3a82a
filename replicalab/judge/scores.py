"""The judge's four scores of a protocol: rigor, feasibility, fidelity, parsimony.

Each is a pure function of (protocol, scenario[, check]) in [0, 1]. They are built so that the
cheap ways to look good do not pay:

- Lists are read as sets of normalised entries (content words, case and stop-words ignored):
  reordering a list changes nothing and a duplicate adds nothing to rigor or fidelity while
  parsimony charges it as padding.
- Feasibility is read off the Lab Manager's own `FeasibilityCheckResult` (no second opinion):
  the share of the seven dimensions that pass, each failure multiplying by 1/4 so an infeasible
  plan lands well below any feasible one, and each soft-constraint warning costing 5 %.
- Fidelity reads bounded windows: the content words of the technique's first `TECHNIQUE_WORDS`
  words, of the controls, and of the rationale's first `RATIONALE_WORDS` words. Each required
  element of the hidden reference counts once, by the share of its content words found, and
  earns nothing below `ADDRESSED` (stray words that a pasted brief happens to share with it do
  not add up). So a pasted brief only displaces the plan's own words from the window, while
  parsimony prices every word over the budget and every padded control. The technique earns
  the share of the case's technique words in its window, so pasting the method paragraph there
  does not pay either. Flexible elements are not read at all: changing them costs nothing.
- Fidelity's technique and item credit count in proportion to the share of the study the plan
  addresses (its element and original-control credit, by their weights): the baseline's method
  and items are there for the asking, and a plan that names them but addresses none of the
  study's elements or controls tests nothing of it, so it earns nothing (and no bonus: the
  judge pays bonuses in proportion to the base).
- Fidelity also charges, against the elements' credit, every candidate element the study did
  not use that the plan addresses (`DISTRACTOR_PENALTY`, one element's full credit), and likewise
  every candidate control the study did not run against the original-controls credit, and every
  other candidate technique the technique's window names against the technique credit. A claim
  the paper does not back is a coin the study drew against the plan more often than for it, so
  claiming it loses on average: guessing never beats leaving it out, and naming several
  techniques never beats naming one.
- Rigor is the chance the replication detects the effect the paper reports, relative to the
  best feasible plan, times how sound its design is. The sample-size credit is the power of the
  plan's test (`replicalab.power`) over the power of the best plan the lab's budget pays for at
  its prices (`CaseFacts.reference_samples`; the needed sample size where the budget funds it),
  capped at 1: power falls fast below that plan, so a plan cut to half its samples keeps about
  half its credit, and more samples than the best plan buy nothing. The design credit weighs
  controls (counted up to what the lab asks for), the required reviews and the duration. A
  paper that reports no effect credits n / its reported n (twice the minimum when it reports
  none) instead of power.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

from replicalab.judge.facts import CaseFacts
from replicalab.models import FEASIBILITY_DIMENSIONS, FeasibilityCheckResult, Protocol
from replicalab.power import power
from replicalab.text import content_words, distinct_contents, occurs, spaced, words

RATIONALE_WORDS = 60  # words of the rationale's opening that fidelity reads
ADDRESSED = 0.5  # share of an element's content words below which it earns nothing
TECHNIQUE_WORDS = 16  # words of the technique's opening that fidelity reads
WORD_BUDGET = {"rationale": 60, "technique": 16, "control": 8}  # words before parsimony falls
SPARE_CONTROLS = 2  # distinct controls beyond the lab's minimum before they count as padding

RIGOR_WEIGHTS = (0.45, 0.3, 0.25)  # the design credit's shares: controls, review, duration
_FIDELITY_WEIGHTS = (0.45, 0.2, 0.15, 0.2)  # required elements, technique, original controls, items
DISTRACTOR_PENALTY = 1.5  # credit lost per candidate (element, control, technique) the study did not use
_HARD_FAILURE = 0.25  # feasibility factor per failed dimension
_SOFT_WARNING = 0.95  # feasibility factor per soft-constraint warning
_UNNEEDED_ITEM = 0.25  # parsimony: 1 / (1 + 0.25 per unneeded item)
_PADDED_CONTROL = 0.2  # parsimony: 1 / (1 + 0.2 per padded control)

Scored = tuple[float, tuple[str, ...]]  # a score and one note per deduction


class Plan(NamedTuple):
    """The parts of a protocol the scores read, taken off the model once per judging: reading a
    pydantic field costs several times a plain attribute, and each score reads most of them."""

    sample_size: int
    controls: tuple[str, ...]
    technique: str
    duration_days: int
    requested: frozenset[str]  # the distinct lower-cased item names
    duplicates: int  # how many item requests repeat one
    rationale: str


def plan_of(protocol: Protocol) -> Plan:
    """The `Plan` of `protocol`."""
    requested, duplicates = _requested((*protocol.required_equipment, *protocol.required_reagents))
    return Plan(
        protocol.sample_size,
        tuple(protocol.controls),
        protocol.technique,
        protocol.duration_days,
        requested,
        duplicates,
        protocol.rationale,
    )


def _window(text: str, n: int) -> tuple[str, ...]:
    """The first `n` words of `text`, stop-words included: they never match a content word."""
    return words(text)[:n]


def _requested(items: tuple[str, ...]) -> tuple[frozenset[str], int]:
    """(the distinct lower-cased item names, how many requests repeat one)."""
    distinct = frozenset(name.lower() for name in items)
    return distinct, len(items) - len(distinct)


# The text-derived parts of each score are cached on the protocol's strings and the per-case data
# they are compared with (never a per-pack object, so they hit across episodes of one case): an
# episode scores the same plan several times (potential, check, final judge), and strings hash once.


class Reference(NamedTuple):
    """What fidelity compares a plan's words with: the study's elements, the candidate elements it
    did not use, its controls and the candidate controls it did not run (each with its content
    words), its technique's content words and those of the other candidate techniques."""

    elements: tuple[tuple[str, frozenset[str]], ...]
    distractors: tuple[tuple[str, frozenset[str]], ...]
    controls: tuple[tuple[str, frozenset[str]], ...]
    stray_controls: tuple[tuple[str, frozenset[str]], ...]
    technique: frozenset[str]
    stray_techniques: tuple[frozenset[str], ...]


class Wording(NamedTuple):
    """What a plan's words earn in a case, whichever score reads them."""

    has_technique: bool  # the technique has a content word
    control_credit: float  # rigor's share from the controls and the reviews
    control_notes: tuple[str, ...]
    distinct_controls: int
    elements: float  # fidelity's required-element credit
    technique_credit: float  # fidelity's technique credit
    original_controls: float  # fidelity's share of the study's own controls
    fidelity_notes: tuple[str, ...]
    excess_words: int  # words over parsimony's budgets


@lru_cache(maxsize=4096)  # plans recur (a policy's come from a finite vocabulary), each judged twice
def _wording(
    min_controls: int,
    reviews: tuple[str, ...],
    reference: Reference,
    technique: str,
    controls: tuple[str, ...],
    rationale: str,
) -> Wording:
    """Every text-derived part of the scores in one lookup."""
    credit, control_notes = _control_credit(min_controls, reviews, controls)
    elements, technique_credit, original_controls, fidelity_notes = _text_fidelity(
        reference, technique, controls, rationale
    )
    return Wording(
        bool(content_words(technique)),
        credit,
        control_notes,
        len(distinct_contents(controls)),
        elements,
        technique_credit,
        original_controls,
        fidelity_notes,
        _words_over_budget(technique, controls, rationale),
    )


def wording_of(plan: Plan, facts: CaseFacts) -> Wording:
    """What `plan`'s words earn in the case of `facts`."""
    reference = Reference(
        facts.elements,
        facts.distractors,
        facts.controls,
        facts.stray_controls,
        facts.technique_words,
        facts.stray_techniques,
    )
    return _wording(
        facts.min_controls, facts.reviews, reference, plan.technique, plan.controls, plan.rationale
    )


def _control_credit(min_controls: int, reviews: tuple[str, ...], controls: tuple[str, ...]) -> Scored:
    """Rigor's share from controls: distinct ones against the minimum, and the reviews."""
    distinct = len(distinct_contents(controls))
    credit = RIGOR_WEIGHTS[0] * min(1.0, distinct / min_controls)
    notes = []
    if distinct < min_controls:
        notes.append(f"rigor: {distinct} distinct controls of {min_controls} asked")
    text = "".join(map(spaced, controls))  # one text for all: see `spaced`
    missing = [r for r in reviews if not occurs(r, text)]
    if reviews:
        credit += RIGOR_WEIGHTS[1] * (1.0 - len(missing) / len(reviews))
    else:
        credit += RIGOR_WEIGHTS[1]
    notes.extend(f"rigor: no control includes the {r}" for r in missing)
    return credit, tuple(notes)


def rigor(plan: Plan, facts: CaseFacts, wording: Wording | None = None) -> Scored:
    """`wording`, when given, must be `wording_of(plan, facts)` (the breakdown shares it)."""
    if wording is None:
        wording = wording_of(plan, facts)
    if plan.sample_size < 1 or not wording.has_technique:
        return 0.0, ("rigor: degenerate plan (no samples or no technique)",)
    notes = wording.control_notes
    n = plan.sample_size
    sample = sample_credit(n, facts)
    duration = min(1.0, plan.duration_days / facts.adequate_days)
    if sample < 1.0:
        notes += (f"rigor: {n} samples, full credit from {facts.reference_samples:g}",)
    if duration < 1.0:
        days = plan.duration_days
        notes += (f"rigor: {days} days, full credit from {facts.adequate_days}",)
    return sample * (wording.control_credit + RIGOR_WEIGHTS[2] * duration), notes


def sample_credit(n: int, facts: CaseFacts) -> float:
    """Rigor's sample-size factor: the power at `n` over the power of the best feasible plan
    (n / the reference n where the paper reports no effect), at most 1."""
    reference = facts.reference_samples
    if n >= reference:
        return 1.0
    if facts.effect_size is None:
        return n / reference
    best = power(facts.effect_size, math.ceil(reference))
    return min(1.0, power(facts.effect_size, n) / best) if best > 0 else 1.0


def soft_warnings(check: FeasibilityCheckResult) -> int:
    """Soft constraints the plan violates (warnings that name a constraint)."""
    return sum(
        1
        for issue in check.validation_result.issues
        if issue.severity == "warning" and issue.constraint_id is not None
    )


def feasibility(check: FeasibilityCheckResult) -> Scored:
    failed = [] if check.feasible else check.failed_dimensions  # `feasible` is cached on the check
    soft = soft_warnings(check) if check.validation_result.issues else 0
    n = len(FEASIBILITY_DIMENSIONS)
    score = (n - len(failed)) / n * _HARD_FAILURE ** len(failed) * _SOFT_WARNING**soft
    notes: tuple[str, ...] = ()
    if failed:
        notes += (f"feasibility: fails {', '.join(failed)}",)
    if soft:
        notes += (f"feasibility: {soft} soft-constraint warning{'s' if soft > 1 else ''}",)
    return score, notes


def fidelity(plan: Plan, facts: CaseFacts, wording: Wording | None = None) -> Scored:
    """`wording`, when given, must be `wording_of(plan, facts)` (the breakdown shares it)."""
    if wording is None:
        wording = wording_of(plan, facts)
    notes = wording.fidelity_notes
    essentials = facts.essentials
    # an essential is met when some name for it is requested (`isdisjoint` is symmetric)
    met = len(essentials) - sum(map(plan.requested.isdisjoint, essentials))
    item_credit = met / len(essentials) if essentials else 1.0
    if item_credit < 1.0:
        notes += (f"fidelity: {met} of {len(essentials)} needed items (or substitutes)",)
    we, wt, wc, wi = _FIDELITY_WEIGHTS
    study = we * wording.elements + wc * wording.original_controls
    # the method and the items count only as far as the plan addresses the study
    addressed = study / (we + wc)
    if addressed < 1.0:
        notes += (f"fidelity: technique and items count at {addressed:.0%}, the study's share addressed",)
    return study + addressed * (wt * wording.technique_credit + wi * item_credit), notes


def _text_fidelity(
    reference: Reference, technique: str, controls: tuple[str, ...], rationale: str
) -> tuple[float, float, float, tuple[str, ...]]:
    """(required-element credit, technique credit, original-control share, their notes)."""
    opening = frozenset(_window(technique, TECHNIQUE_WORDS))
    window = opening.union(_window(rationale, RATIONALE_WORDS), *distinct_contents(controls))
    notes = []
    covered = 0.0
    for element, wanted in reference.elements:
        share = _share(wanted, window)
        if share >= ADDRESSED:
            covered += share
            if share < 1.0:
                notes.append(f"fidelity: {share:.0%} of required element {element!r}")
        else:
            notes.append(f"fidelity: does not address {element!r}")
    stray = [element for element, wanted in reference.distractors if _share(wanted, window) >= ADDRESSED]
    if stray:
        notes.append(f"fidelity: addresses {len(stray)} element(s) the study did not use")
    elements = 1.0
    if reference.elements:
        elements = max(0.0, covered - DISTRACTOR_PENALTY * len(stray)) / len(reference.elements)
    used = reference.technique & opening
    technique_credit = (
        len(used) / min(len(reference.technique), TECHNIQUE_WORDS) if reference.technique else 1.0
    )
    if technique_credit < 1.0:
        notes.append(f"fidelity: technique names {len(used)} of the method's key words")
    other_techniques = sum(_share(wanted, opening) >= ADDRESSED for wanted in reference.stray_techniques)
    if other_techniques:
        notes.append(f"fidelity: technique also names {other_techniques} variant(s) the study did not run")
        technique_credit = max(0.0, technique_credit - DISTRACTOR_PENALTY * other_techniques)
    planned = [content_words(control) for control in controls]

    def runs(wanted: frozenset[str]) -> bool:
        return any(_share(wanted, words) >= ADDRESSED for words in planned)

    matched = sum(runs(wanted) for _, wanted in reference.controls)
    extra = sum(runs(wanted) for _, wanted in reference.stray_controls)
    original = 1.0
    if reference.controls:
        original = max(0.0, matched - DISTRACTOR_PENALTY * extra) / len(reference.controls)
    if matched < len(reference.controls):
        notes.append(f"fidelity: {matched} of the study's {len(reference.controls)} controls")
    if extra:
        notes.append(f"fidelity: {extra} candidate control(s) the study did not run")
    return elements, technique_credit, original, tuple(notes)


def _share(wanted: frozenset[str], found: frozenset[str]) -> float:
    """The share of `wanted` in `found` (1 when nothing is wanted)."""
    return len(wanted & found) / len(wanted) if wanted else 1.0


def parsimony(plan: Plan, facts: CaseFacts, wording: Wording | None = None) -> Scored:
    """`wording`, when given, must be `wording_of(plan, facts)` (the breakdown shares it)."""
    if wording is None:
        wording = wording_of(plan, facts)
    excess = wording.excess_words
    notes: tuple[str, ...] = ()
    if excess:
        notes += (f"parsimony: {excess} words over budget",)
    unneeded = plan.duplicates + len(plan.requested - facts.needed)
    if unneeded:
        notes += (f"parsimony: {unneeded} requested items the method does not need",)
    distinct = wording.distinct_controls
    padded = len(plan.controls) - distinct + max(0, distinct - facts.min_controls - SPARE_CONTROLS)
    if padded:
        notes += (f"parsimony: {padded} padded controls",)
    budget = WORD_BUDGET["rationale"]
    score = budget / (budget + excess) / (1 + _UNNEEDED_ITEM * unneeded)
    return score / (1 + _PADDED_CONTROL * padded), notes


def _words_over_budget(technique: str, controls: tuple[str, ...], rationale: str) -> int:
    excess = max(0, len(words(rationale)) - WORD_BUDGET["rationale"])
    excess += max(0, len(words(technique)) - WORD_BUDGET["technique"])
    return excess + sum(max(0, len(words(c)) - WORD_BUDGET["control"]) for c in controls)
