"""The study a pack's paper reports: drawn per pack from its case's variants, written out as text.

A case lists what its study could have done: technique variants, candidate method elements,
candidate controls, a range of sample sizes and of headline numbers. Each pack draws one of
each, and the public paper is written from the draw: the method paragraph is the case's fixed
opening followed by clue sentences (the technique's, each original control's, each required
element's with a difficulty-dependent chance, and a "did not" sentence for some of the other
elements) in a drawn order; the key finding states the drawn sample size and number. So a
careful reader recovers most of what the judge's fidelity rewards, while remembering a title
recovers nothing that changes from pack to pack. Nothing public is read off the hidden spec:
both come from the draw.
"""

from __future__ import annotations

from dataclasses import dataclass

from replicalab.models import Candidates, Paper
from replicalab.scenarios.types import Choice, Difficulty, Element, HiddenReferenceSpec, PaperCase

P_SAID: dict[Difficulty, float] = {"easy": 0.9, "medium": 0.8, "hard": 0.65}
"""The chance that the method paragraph states each required element."""
P_DENIED = 0.4
"""The chance that it says, of each other candidate element, that the study did not do it."""
STUDY_DRAWS = 64
"""Uniforms one study draws (the most any case can use, so cases never shift each other's)."""
_SLOTS = (1, 8, 6, 1, 1, 8, 8, 16)  # technique, element ranks, control ranks, n, target, said, denied, order


@dataclass(frozen=True)
class Study:
    """What one pack's paper reports, and the hidden spec the judge reads (both from one draw)."""

    technique: Choice
    elements: tuple[Element, ...]  # the required elements, in the case's order
    controls: tuple[Choice, ...]  # the original controls, in the case's order
    sample_size: int
    target: str  # the headline number as the paper prints it
    paper: Paper
    hypothesis: str
    success_criteria: tuple[str, ...]
    reference: HiddenReferenceSpec


def candidates_of(case: PaperCase) -> Candidates:
    """The public candidate lists of `case`, in its order."""
    return Candidates(
        techniques=[c.name for c in case.techniques],
        elements=[e.name for e in case.elements],
        controls=[c.name for c in case.controls],
    )


def draw_study(case: PaperCase, level: Difficulty, u: list[float]) -> Study:
    """The study of a pack, from `STUDY_DRAWS` uniforms in [0, 1)."""
    technique_u, element_ranks, control_ranks, n_u, target_u, said, denied, order = _split(u)
    technique = case.techniques[int(technique_u * len(case.techniques))]
    drawn = _chosen(len(case.elements), element_ranks, case.required_count)
    elements = tuple(e for i, e in enumerate(case.elements) if i in drawn)
    others = [e for i, e in enumerate(case.elements) if i not in drawn]
    kept = _chosen(len(case.controls), control_ranks, case.control_count)
    controls = tuple(c for i, c in enumerate(case.controls) if i in kept)
    low, high = case.sample_size_range
    n = low + int(n_u * (high - low + 1))
    t_low, t_high = case.target_range
    target = f"{t_low + (t_high - t_low) * target_u:.{case.target_decimals}f}"
    sentences = [technique.clue, *(c.clue for c in controls)]
    sentences += [e.clue for e, coin in zip(elements, said, strict=False) if coin < P_SAID[level]]
    sentences += [e.negated for e, coin in zip(others, denied, strict=False) if coin < P_DENIED]
    ranked = sorted(range(len(sentences)), key=lambda i: order[i % len(order)])
    method = " ".join([case.method_intro, *(sentences[i] for i in ranked)])

    def filled(text: str) -> str:
        return text.replace("{n}", str(n)).replace("{target}", target)

    hypothesis = filled(case.hypothesis)
    paper = Paper(
        title=case.title,
        hypothesis=hypothesis,
        method=method,
        key_finding=filled(case.finding),
        reported_sample_size=n,
    )
    reference = HiddenReferenceSpec(
        summary=f"{case.title}: {technique.name}, with {'; '.join(e.name for e in elements)}",
        required_elements=[e.name for e in elements],
        flexible_elements=list(case.flexible_elements),
        target_metric=case.target_metric,
        target_value=float(target),
        technique=technique.name,
        original_controls=[c.name for c in controls],
        sample_size=n,
    )
    return Study(
        technique=technique,
        elements=elements,
        controls=controls,
        sample_size=n,
        target=target,
        paper=paper,
        hypothesis=hypothesis,
        success_criteria=tuple(filled(text) for text in case.success_criteria),
        reference=reference,
    )


def _split(
    u: list[float],
) -> tuple[float, list[float], list[float], float, float, list[float], list[float], list[float]]:
    parts: list[list[float]] = []
    start = 0
    for width in _SLOTS:
        parts.append(u[start : start + width])
        start += width
    return (
        parts[0][0],
        parts[1],
        parts[2],
        parts[3][0],
        parts[4][0],
        parts[5],
        parts[6],
        parts[7],
    )


def _chosen(n: int, ranks: list[float], k: int) -> frozenset[int]:
    """The indices of the `k` of `n` choices of lowest rank."""
    return frozenset(sorted(range(n), key=lambda i: ranks[i % len(ranks)])[:k])
