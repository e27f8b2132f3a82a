"""Invariants of the hand-written template data that the scenario generator relies on.

The generator assumes every needed item can be swapped, every name has one kind, the minimal
and base protocols are affordable, and hidden reference elements are not sitting in the
visible brief. Editing the JSON must not silently break any of that.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from replicalab.lab_costs import estimate_protocol_cost
from replicalab.models import Protocol
from replicalab.scenarios import published_protocol
from replicalab.scenarios.types import PaperCase, TemplateData
from replicalab.text import NEGATIONS, mentions, words

DATA_DIR = Path(__file__).resolve().parent.parent / "replicalab" / "scenarios" / "data"
DOMAINS = {
    "math_reasoning": "mathematics",
    "ml_benchmark": "machine_learning",
    "finance_trading": "finance_trading",
}
SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
MIN_CASE_COST = 1500.0
MAX_BASE_COST = 2500.0


def _load(template: str) -> TemplateData:
    return TemplateData.model_validate_json((DATA_DIR / f"{template}.json").read_text("utf-8"))


@pytest.fixture(scope="module", params=sorted(DOMAINS))
def data(request: pytest.FixtureRequest) -> TemplateData:
    return _load(str(request.param))


def _needed(case: PaperCase) -> list[tuple[str, str]]:
    return [(name, "equipment") for name in case.needed_equipment] + [
        (name, "reagent") for name in case.needed_reagents
    ]


def _kinds(data: TemplateData) -> dict[str, set[str]]:
    """Every spelling of every item name -> the kinds it is used as."""
    kinds: dict[str, set[str]] = defaultdict(set)
    for case in data.cases:
        for name, kind in _needed(case):
            kinds[name].add(kind)
    for item in data.catalogue:
        kinds[item.name].add(item.kind)
    return kinds


def _visible_texts(case: PaperCase) -> list[str]:
    paper = case.paper
    return [
        paper.title,
        paper.hypothesis,
        paper.method,
        paper.key_finding,
        case.experiment_goal,
        case.task_summary,
        *case.success_criteria,
        case.technique,
    ]


def _all_case_texts(case: PaperCase) -> list[str]:
    ref = case.hidden_reference
    return [
        *_visible_texts(case),
        *case.suggested_controls,
        case.required_review,
        ref.summary,
        *ref.required_elements,
        *ref.flexible_elements,
        ref.target_metric,
    ]


def test_template_identity(data: TemplateData) -> None:
    assert data.domain_id == DOMAINS[data.template]
    assert (DATA_DIR / f"{data.template}.json").is_file()
    assert len(data.cases) == 7
    assert 1 <= len(data.safety_restrictions) <= 3
    assert 6 <= len(data.catalogue) <= 10
    assert {item.kind for item in data.catalogue} == {"equipment", "reagent"}


def test_case_field_counts(data: TemplateData) -> None:
    for case in data.cases:
        ref = case.hidden_reference
        assert 2 <= len(case.success_criteria) <= 4, case.case_id
        assert 1 <= len(case.needed_equipment) <= 3, case.case_id
        assert 1 <= len(case.needed_reagents) <= 2, case.case_id
        assert 2 <= len(case.suggested_controls) <= 4, case.case_id
        assert 1 <= len(case.forbidden_practices) <= 2, case.case_id
        assert 3 <= len(ref.required_elements) <= 5, case.case_id
        assert 2 <= len(ref.flexible_elements) <= 3, case.case_id


def test_ids_and_titles_unique(data: TemplateData) -> None:
    ids = [case.case_id for case in data.cases]
    titles = [case.paper.title.lower() for case in data.cases]
    assert len(set(ids)) == len(ids)
    assert len(set(titles)) == len(titles)
    for case_id in ids:
        assert SNAKE_CASE.match(case_id), case_id


def test_case_ids_unique_across_templates() -> None:
    ids = [case.case_id for template in sorted(DOMAINS) for case in _load(template).cases]
    assert len(set(ids)) == len(ids)


def test_each_name_has_one_kind_and_one_spelling(data: TemplateData) -> None:
    kinds = _kinds(data)
    for name, used_as in kinds.items():
        assert len(used_as) == 1, f"{name!r} used as {sorted(used_as)}"
    spellings: dict[str, set[str]] = defaultdict(set)
    for name in kinds:
        spellings[name.lower()].add(name)
    for lowered, found in spellings.items():
        assert len(found) == 1, f"{lowered!r} spelled {sorted(found)}"
    catalogue = [item.name.lower() for item in data.catalogue]
    assert len(set(catalogue)) == len(catalogue)
    for case in data.cases:
        needed = [name.lower() for name, _ in _needed(case)]
        assert len(set(needed)) == len(needed), case.case_id


def test_catalogue_is_extra_to_needs(data: TemplateData) -> None:
    needed = {name.lower() for case in data.cases for name, _ in _needed(case)}
    for item in data.catalogue:
        assert item.name.lower() not in needed, item.name


def test_no_item_name_inside_another(data: TemplateData) -> None:
    # Whole-word matching of one name must not also fire on another item.
    names = sorted(_kinds(data))
    for name in names:
        for other in names:
            if name != other:
                assert not mentions(name, other), f"{name!r} inside {other!r}"


def test_substitutions_cover_every_need(data: TemplateData) -> None:
    kinds = _kinds(data)
    catalogue = {item.name: item.kind for item in data.catalogue}
    alternatives: dict[str, list[str]] = defaultdict(list)
    pairs: set[tuple[str, str]] = set()
    for sub in data.substitutions:
        assert sub.original in kinds, f"substitution for unknown {sub.original!r}"
        assert sub.alternative in catalogue, f"alternative {sub.alternative!r} not in catalogue"
        assert kinds[sub.original] == {catalogue[sub.alternative]}, sub
        assert sub.alternative.lower() != sub.original.lower(), sub
        assert (sub.original, sub.alternative) not in pairs, sub
        pairs.add((sub.original, sub.alternative))
        alternatives[sub.original].append(sub.alternative)
    for case in data.cases:
        own = {name.lower() for name, _ in _needed(case)}
        for name, _ in _needed(case):
            usable = [alt for alt in alternatives[name] if alt.lower() not in own]
            assert usable, f"{case.case_id}: no usable substitute for {name!r}"
    assert sum(len(alts) >= 2 for alts in alternatives.values()) >= 3


def test_substitutions_can_fire(data: TemplateData) -> None:
    needed = {name for case in data.cases for name, _ in _needed(case)}
    for sub in data.substitutions:
        assert sub.original in needed, f"{sub.original!r} is needed by no case"


def test_sizes_and_durations(data: TemplateData) -> None:
    for case in data.cases:
        assert 6 <= case.base_sample_size <= 60, case.case_id
        assert 2 <= case.min_sample_size <= case.base_sample_size // 2 + 1, case.case_id
        assert case.min_sample_size <= case.base_sample_size, case.case_id
        assert 4 <= case.base_duration_days <= 14, case.case_id
        assert 2 <= case.min_duration_days <= case.base_duration_days - 2, case.case_id


def test_minimal_and_base_protocols_affordable(data: TemplateData) -> None:
    for case in data.cases:
        minimal = Protocol(
            sample_size=case.min_sample_size,
            duration_days=case.min_duration_days,
            controls=[*case.suggested_controls[:2], case.required_review],
            required_equipment=case.needed_equipment,
            required_reagents=case.needed_reagents,
        )
        assert estimate_protocol_cost(minimal) <= MIN_CASE_COST, case.case_id
        assert estimate_protocol_cost(published_protocol(case)) <= MAX_BASE_COST, case.case_id


def test_review_and_forbidden_phrasing(data: TemplateData) -> None:
    for case in data.cases:
        assert 2 <= len(words(case.required_review)) <= 4, case.case_id
        texts = _all_case_texts(case)
        for practice in case.forbidden_practices:
            tokens = words(practice)
            assert 2 <= len(tokens) <= 4, practice
            assert not NEGATIONS.intersection(tokens), f"negated practice {practice!r}"
            # Checked against every case text, not only technique, method, controls and
            # review: an oracle plan built from the hidden reference must pass the policy too.
            for text in texts:
                assert not mentions(practice, text), f"{case.case_id}: {practice!r} in {text!r}"


def test_required_elements_are_hidden(data: TemplateData) -> None:
    for case in data.cases:
        visible = [*_visible_texts(case), *case.suggested_controls, case.required_review]
        for element in case.hidden_reference.required_elements:
            assert len(words(element)) >= 2, element
            for text in visible:
                assert not mentions(element, text), f"{case.case_id}: {element!r} in {text!r}"


def test_controls_distinct_from_review(data: TemplateData) -> None:
    for case in data.cases:
        lowered = [control.lower() for control in case.suggested_controls]
        assert len(set(lowered)) == len(lowered), case.case_id
        assert case.required_review.lower() not in lowered, case.case_id
