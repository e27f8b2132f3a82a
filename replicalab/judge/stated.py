"""The study as its paper states it: the judge's facts of a pack with the hidden study replaced by
what the method's sentences say (`Study.facts`) and the sample size the paper reports.

A potential that scores a plan against these facts is a function of public information only:
the paper's text and its stated meanings, the lab's brief and the public candidate lists. Every
candidate the method says the study used is required, every one it says the study did not use
is charged as the judge charges a candidate the study did not use, and a candidate the paper
leaves unstated (or only mentions) is neither, so two studies that the same paper reports get
the same facts, and adding an unstated candidate to a plan moves them the same whether or not
the hidden study used it. A pack its seed does not generate (an edited or hand-made one) has no
recorded meanings: nothing is stated, and only the public parts of the scores vary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from replicalab.judge.facts import CaseFacts, case_facts, reference_samples
from replicalab.scenarios.generator import paper_facts
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.scenarios.wording import Fact
from replicalab.text import content_words


def stated_facts(pack: NormalizedScenarioPack) -> CaseFacts:
    """`case_facts(pack)` with the study that `pack`'s paper states in place of the hidden one."""
    try:
        facts: tuple[Fact, ...] = paper_facts(pack)
    except ValueError:
        facts = ()
    used = {f.candidate for f in facts if f.meaning == "used"}
    denied = {f.candidate for f in facts if f.meaning == "not_used"} - used
    c = pack.candidates
    technique = next((t for t in c.techniques if t in used), "")
    judged = case_facts(pack)
    return dataclasses.replace(
        judged,
        reference_samples=reference_samples(pack.paper.reported_sample_size, judged.min_samples),
        elements=_words_of(e for e in c.elements if e in used),
        distractors=_words_of(e for e in c.elements if e in denied),
        controls=_words_of(k for k in c.controls if k in used),
        stray_controls=_words_of(k for k in c.controls if k in denied),
        technique_words=content_words(technique),
        stray_techniques=tuple(content_words(t) for t in c.techniques if t in denied),
    )


def _words_of(names: Iterable[str]) -> tuple[tuple[str, frozenset[str]], ...]:
    return tuple((name, content_words(name)) for name in names)
