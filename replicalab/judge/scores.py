"""The judge's four scores of a protocol: rigor, feasibility, fidelity, parsimony.

Each is a pure function of (protocol, scenario[, check]) in [0, 1]. A plan states its claims in
fields, and the scores read the fields only, never prose: the rationale is free explanation that
nothing scores, so no wording of it, negations included, can move a score.

- A claim names a candidate when both have the same content words (`text.content_words`: case,
  punctuation, word order and stop-words aside). The technique is one claim; each control and
  each entry of `elements` is one claim. Lists are sets of claims: reordering changes nothing,
  and a repeat adds nothing to rigor or fidelity while parsimony charges it as padding.
- Feasibility is read off the Lab Manager's own `FeasibilityCheckResult` (no second opinion):
  the share of the seven dimensions that pass, each failure multiplying by `HARD_FAILURE` so an
  infeasible plan lands well below any feasible one, and each soft-constraint warning by
  `SOFT_WARNING`.
- Fidelity weighs (`FIDELITY_WEIGHTS`) the study's method elements the plan claims, its
  technique, the study's own controls among the plan's controls, and the method's essential
  items. Every candidate element the study did not use that the plan claims costs
  `DISTRACTOR_PENALTY` elements' credit, and likewise every candidate control the study did not
  run against the original-controls credit: a claim the paper does not back is a coin the study
  drew against the plan more often than for it, so guessing never beats leaving it out. The
  technique earns its credit only when it names the study's technique.
- The technique and the items count in proportion to the share of the study the plan addresses
  (its element and original-control credit, by their weights): the baseline's method and items
  are there for the asking, and a plan that names them but keeps none of the study's elements
  or controls tests nothing of it, so it earns nothing (and no bonus: the judge pays bonuses in
  proportion to the base).
- Rigor is the chance the replication detects the effect the paper reports, relative to the
  best feasible plan, times how sound its design is. The sample-size credit is the power of the
  plan's test (`replicalab.power`) over the power of the best plan the lab's budget pays for at
  its prices (`CaseFacts.reference_samples`; the needed sample size where the budget funds it),
  capped at 1. The design credit (`RIGOR_WEIGHTS`) weighs the distinct controls (counted up to
  what the lab asks for), the required reviews (a control that names each) and the duration
  (full from the adequate duration, `scenarios.rules.adequate_days`). A paper that reports no
  effect credits n / its reported n (twice the minimum when it reports none) instead of power.
- Parsimony charges padding: every requested item the method does not need (`UNNEEDED_ITEM`),
  and every padded claim (`PADDED_CLAIM`): a repeated control, a distinct control beyond the
  lab's minimum plus `SPARE_CONTROLS`, and an element entry that repeats one or names no
  candidate.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

from replicalab.judge.facts import CaseFacts
from replicalab.models import FEASIBILITY_DIMENSIONS, FeasibilityCheckResult, Protocol
from replicalab.power import power
from replicalab.text import content_words, distinct_contents

SPARE_CONTROLS = 2  # distinct controls beyond the lab's minimum before they count as padding
RIGOR_WEIGHTS = (0.45, 0.3, 0.25)  # the design credit's shares: controls, reviews, duration
FIDELITY_WEIGHTS = (0.45, 0.2, 0.15, 0.2)  # required elements, technique, original controls, items
DISTRACTOR_PENALTY = 1.5  # credit lost per candidate (element, control) the study did not use
HARD_FAILURE = 0.25  # feasibility factor per failed dimension
SOFT_WARNING = 0.95  # feasibility factor per soft-constraint warning
UNNEEDED_ITEM = 0.25  # parsimony: 1 / (1 + 0.25 per unneeded item)
PADDED_CLAIM = 0.2  # parsimony: 1 / (1 + 0.2 per padded claim)

Scored = tuple[float, tuple[str, ...]]  # a score and one note per deduction


class Plan(NamedTuple):
    """The parts of a protocol the scores read, taken off the model once per judging: reading a
    pydantic field costs several times a plain attribute, and each score reads most of them."""

    sample_size: int
    controls: tuple[str, ...]
    technique: str
    elements: tuple[str, ...]
    duration_days: int
    requested: frozenset[str]  # the distinct lower-cased item names
    duplicates: int  # how many item requests repeat one


def plan_of(protocol: Protocol) -> Plan:
    """The `Plan` of `protocol`."""
    requested, duplicates = _requested((*protocol.required_equipment, *protocol.required_reagents))
    return Plan(
        protocol.sample_size,
        tuple(protocol.controls),
        protocol.technique,
        tuple(protocol.elements),
        protocol.duration_days,
        requested,
        duplicates,
    )


def _requested(items: tuple[str, ...]) -> tuple[frozenset[str], int]:
    """(the distinct lower-cased item names, how many requests repeat one)."""
    distinct = frozenset(name.lower() for name in items)
    return distinct, len(items) - len(distinct)


# The claim-derived parts of each score are cached on the protocol's strings and the per-case data
# they are compared with (never a per-pack object, so they hit across episodes of one case): an
# episode scores the same plan several times (potential, check, final judge), and strings hash once.

Named = tuple[tuple[str, frozenset[str]], ...]  # names, each with its key (`content_words`)


class Reference(NamedTuple):
    """What fidelity compares a plan's claims with: the study's elements, the candidate elements
    it did not use, its controls and the candidate controls it did not run (each with its key),
    its technique's key, and the key of every candidate element."""

    elements: Named
    distractors: Named
    controls: Named
    stray_controls: Named
    technique: frozenset[str]
    candidate_elements: frozenset[frozenset[str]]


class Claims(NamedTuple):
    """What a plan's claims earn in a case, whichever score reads them."""

    has_technique: bool  # the technique has a content word
    control_credit: float  # rigor's share from the controls and the reviews
    control_notes: tuple[str, ...]
    distinct_controls: int
    elements: float  # fidelity's required-element credit
    technique_credit: float  # fidelity's technique credit
    original_controls: float  # fidelity's share of the study's own controls
    fidelity_notes: tuple[str, ...]
    padded_elements: int  # element entries that repeat one or name no candidate


@lru_cache(maxsize=4096)  # plans recur (a policy's come from a finite vocabulary), each judged twice
def _claims(
    min_controls: int,
    reviews: tuple[str, ...],
    reference: Reference,
    technique: str,
    controls: tuple[str, ...],
    elements: tuple[str, ...],
) -> Claims:
    """Every claim-derived part of the scores in one lookup."""
    control_keys = frozenset(map(content_words, controls))
    credit, control_notes = _control_credit(min_controls, reviews, controls, control_keys)
    element_keys = [content_words(e) for e in elements]
    claimed = frozenset(element_keys)
    element_credit, technique_credit, original_controls, fidelity_notes = _claimed_fidelity(
        reference, content_words(technique), control_keys, claimed
    )
    unknown = sum(key not in reference.candidate_elements for key in claimed)
    return Claims(
        bool(content_words(technique)),
        credit,
        control_notes,
        len(distinct_contents(controls)),
        element_credit,
        technique_credit,
        original_controls,
        fidelity_notes,
        len(element_keys) - len(claimed) + unknown,
    )


def claims_of(plan: Plan, facts: CaseFacts) -> Claims:
    """What `plan`'s claims earn in the case of `facts`."""
    reference = Reference(
        facts.elements,
        facts.distractors,
        facts.controls,
        facts.stray_controls,
        facts.technique_words,
        facts.candidate_elements,
    )
    return _claims(facts.min_controls, facts.reviews, reference, plan.technique, plan.controls, plan.elements)


def _control_credit(
    min_controls: int, reviews: tuple[str, ...], controls: tuple[str, ...], keys: frozenset[frozenset[str]]
) -> Scored:
    """Rigor's share from controls: distinct ones against the minimum, and the reviews (each
    named by a control of its own)."""
    distinct = len(distinct_contents(controls))
    credit = RIGOR_WEIGHTS[0] * min(1.0, distinct / min_controls)
    notes = []
    if distinct < min_controls:
        notes.append(f"rigor: {distinct} distinct controls of {min_controls} asked")
    missing = [r for r in reviews if content_words(r) not in keys]
    if reviews:
        credit += RIGOR_WEIGHTS[1] * (1.0 - len(missing) / len(reviews))
    else:
        credit += RIGOR_WEIGHTS[1]
    notes.extend(f"rigor: no control names the {r}" for r in missing)
    return credit, tuple(notes)


def rigor(plan: Plan, facts: CaseFacts, claims: Claims | None = None) -> Scored:
    """`claims`, when given, must be `claims_of(plan, facts)` (the breakdown shares it)."""
    if claims is None:
        claims = claims_of(plan, facts)
    if plan.sample_size < 1 or not claims.has_technique:
        return 0.0, ("rigor: degenerate plan (no samples or no technique)",)
    notes = claims.control_notes
    n = plan.sample_size
    sample = sample_credit(n, facts)
    duration = min(1.0, plan.duration_days / facts.adequate_days)
    if sample < 1.0:
        notes += (f"rigor: {n} samples, full credit from {facts.reference_samples:g}",)
    if duration < 1.0:
        days = plan.duration_days
        notes += (f"rigor: {days} days, full credit from {facts.adequate_days}",)
    return sample * (claims.control_credit + RIGOR_WEIGHTS[2] * duration), notes


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
    score = (n - len(failed)) / n * HARD_FAILURE ** len(failed) * SOFT_WARNING**soft
    notes: tuple[str, ...] = ()
    if failed:
        notes += (f"feasibility: fails {', '.join(failed)}",)
    if soft:
        notes += (f"feasibility: {soft} soft-constraint warning{'s' if soft > 1 else ''}",)
    return score, notes


def fidelity(plan: Plan, facts: CaseFacts, claims: Claims | None = None) -> Scored:
    """`claims`, when given, must be `claims_of(plan, facts)` (the breakdown shares it)."""
    if claims is None:
        claims = claims_of(plan, facts)
    notes = claims.fidelity_notes
    essentials = facts.essentials
    # an essential is met when some name for it is requested (`isdisjoint` is symmetric)
    met = len(essentials) - sum(map(plan.requested.isdisjoint, essentials))
    item_credit = met / len(essentials) if essentials else 1.0
    if item_credit < 1.0:
        notes += (f"fidelity: {met} of {len(essentials)} needed items (or substitutes)",)
    we, wt, wc, wi = FIDELITY_WEIGHTS
    study = we * claims.elements + wc * claims.original_controls
    # the method and the items count only as far as the plan addresses the study
    addressed = study / (we + wc)
    if addressed < 1.0:
        notes += (f"fidelity: technique and items count at {addressed:.0%}, the study's share addressed",)
    return study + addressed * (wt * claims.technique_credit + wi * item_credit), notes


def _claimed_fidelity(
    reference: Reference,
    technique: frozenset[str],
    controls: frozenset[frozenset[str]],
    elements: frozenset[frozenset[str]],
) -> tuple[float, float, float, tuple[str, ...]]:
    """(required-element credit, technique credit, original-control share, their notes), from the
    keys of the plan's technique, controls and element entries."""
    notes = [
        f"fidelity: does not claim element {name!r}"
        for name, key in reference.elements
        if key not in elements
    ]
    covered = len(reference.elements) - len(notes)
    stray = sum(key in elements for _, key in reference.distractors)
    if stray:
        notes.append(f"fidelity: claims {stray} element(s) the study did not use")
    element_credit = 1.0
    if reference.elements:
        element_credit = max(0.0, covered - DISTRACTOR_PENALTY * stray) / len(reference.elements)
    technique_credit = 1.0
    if reference.technique and technique != reference.technique:
        technique_credit = 0.0
        notes.append("fidelity: the technique is not the one the study ran")
    matched = sum(key in controls for _, key in reference.controls)
    extra = sum(key in controls for _, key in reference.stray_controls)
    original = 1.0
    if reference.controls:
        original = max(0.0, matched - DISTRACTOR_PENALTY * extra) / len(reference.controls)
    if matched < len(reference.controls):
        notes.append(f"fidelity: {matched} of the study's {len(reference.controls)} controls")
    if extra:
        notes.append(f"fidelity: {extra} candidate control(s) the study did not run")
    return element_credit, technique_credit, original, tuple(notes)


def parsimony(plan: Plan, facts: CaseFacts, claims: Claims | None = None) -> Scored:
    """`claims`, when given, must be `claims_of(plan, facts)` (the breakdown shares it)."""
    if claims is None:
        claims = claims_of(plan, facts)
    notes: tuple[str, ...] = ()
    unneeded = plan.duplicates + len(plan.requested - facts.needed)
    if unneeded:
        notes += (f"parsimony: {unneeded} requested items the method does not need",)
    distinct = claims.distinct_controls
    padded = len(plan.controls) - distinct + max(0, distinct - facts.min_controls - SPARE_CONTROLS)
    if padded:
        notes += (f"parsimony: {padded} padded controls",)
    if claims.padded_elements:
        notes += (f"parsimony: {claims.padded_elements} element entries repeat one or name no candidate",)
    padded += claims.padded_elements
    return 1.0 / (1 + UNNEEDED_ITEM * unneeded) / (1 + PADDED_CLAIM * padded), notes
