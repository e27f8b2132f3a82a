"""Every text a paper case can put in front of a reader, for the leak and safety checks."""

from __future__ import annotations

from replicalab.scenarios.types import PaperCase


def fixed_texts(case: PaperCase) -> list[str]:
    """The public texts every pack of the case shows, whatever its study's draw."""
    return [
        case.title,
        case.hypothesis,
        case.method_intro,
        case.finding,
        case.experiment_goal,
        case.task_summary,
        *case.success_criteria,
    ]


def case_choices(case: PaperCase) -> list:  # type: ignore[type-arg]
    return [*case.techniques, *case.elements, *case.controls]


def all_case_texts(case: PaperCase) -> list[str]:
    sentences = [c.clue for c in case_choices(case)] + [e.negated for e in case.elements]
    return [
        *fixed_texts(case),
        *sentences,
        *(c.name for c in case_choices(case)),
        case.required_review,
        *case.flexible_elements,
        case.target_metric,
    ]
