"""The judge's facts of a pack with the study taken out: what a potential may score a plan by.

Φ must be a function of what the Scientist can know without reading the paper for it, so these
facts keep the pack's public bounds, reviews and needed items (its brief and resource list) and
the sample size the paper's reported effect needs, and hold no study at all: no required element,
technique or control, and no candidate to charge (the public candidate list stays, so an element
entry that names no candidate is padding here as in the judge). Fidelity's study-dependent credit is then full for every
plan, and what moves Φ is what the brief and the lab's check decide (rigor, feasibility,
parsimony, the needed items). Not even the paper's stated verdicts go in: scored, they would
let a Scientist read the paper off its step rewards by adding each candidate in turn, the
reading the game measures; left out, adding any candidate moves Φ alike, used or not.
"""

from __future__ import annotations

import dataclasses

from replicalab.judge.facts import CaseFacts, case_facts, reference_samples
from replicalab.scenarios.types import NormalizedScenarioPack


def public_facts(pack: NormalizedScenarioPack) -> CaseFacts:
    """`case_facts(pack)` with no study in it, its sample-size credit saturating where the paper's
    reported effect (or, without one, its reported sample size) puts it."""
    facts = case_facts(pack)
    return dataclasses.replace(
        facts,
        reference_samples=reference_samples(
            pack.paper.reported_sample_size, facts.min_samples, pack.paper.reported_effect_size
        ),
        elements=(),
        distractors=(),
        controls=(),
        stray_controls=(),
        technique_words=frozenset(),
    )
