"""Invariants of the hand-written template data that the scenario generator relies on.

The generator assumes every needed item can be swapped, every name has one kind, the minimal
and published plans are affordable, every candidate choice is named in the paper only by its own
clue (affirmed) or "did not" sentence (negated), and the splits follow their rule. Editing the
JSON must not silently break any of that.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from pathlib import Path

import pytest

from replicalab.models import Protocol
from replicalab.prices import estimate_protocol_cost
from replicalab.scenarios import published_protocol
from replicalab.scenarios.types import HiddenReferenceSpec, PaperCase, TemplateData
from replicalab.text import NEGATIONS, affirmed, mentions, words
from tests.case_texts import all_case_texts, case_choices, fixed_texts

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


def _published(case: PaperCase) -> Protocol:
    """The costliest plan a pack of the case can publish: the largest n, every candidate control."""
    reference = HiddenReferenceSpec(
        summary="s",
        required_elements=[e.name for e in case.elements[: case.required_count]],
        flexible_elements=case.flexible_elements,
        target_metric=case.target_metric,
        target_value=0.0,
        technique=case.techniques[0].name,
        original_controls=[c.name for c in case.controls],
        sample_size=case.sample_size_range[1],
    )
    return published_protocol(case, reference)


def test_template_identity(data: TemplateData) -> None:
    assert data.domain_id == DOMAINS[data.template]
    assert (DATA_DIR / f"{data.template}.json").is_file()
    assert len(data.cases) >= 16
    assert 1 <= len(data.safety_restrictions) <= 3
    assert 6 <= len(data.catalogue) <= 16
    assert {item.kind for item in data.catalogue} == {"equipment", "reagent"}


def test_case_field_counts(data: TemplateData) -> None:
    for case in data.cases:
        assert 2 <= len(case.success_criteria) <= 4, case.case_id
        assert 1 <= len(case.needed_equipment) <= 3, case.case_id
        assert 1 <= len(case.needed_reagents) <= 2, case.case_id
        assert 1 <= len(case.forbidden_practices) <= 2, case.case_id
        assert 2 <= len(case.flexible_elements) <= 3, case.case_id
        assert len(case.techniques) >= 3, case.case_id  # the drawn variant and two distractors
        assert len(case.elements) >= case.required_count + 2, case.case_id
        assert len(case.controls) >= case.control_count + 2, case.case_id


def test_ids_and_titles_unique(data: TemplateData) -> None:
    ids = [case.case_id for case in data.cases]
    titles = [case.title.lower() for case in data.cases]
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
        low, high = case.sample_size_range
        assert 2 <= case.min_sample_size < low <= high <= 100, case.case_id
        assert high >= 2 * case.min_sample_size, case.case_id
        assert 3 <= case.base_duration_days <= 16, case.case_id
        assert 2 <= case.min_duration_days <= case.base_duration_days - 1, case.case_id


def test_minimal_and_base_protocols_affordable(data: TemplateData) -> None:
    for case in data.cases:
        minimal = Protocol(
            sample_size=case.min_sample_size,
            duration_days=case.min_duration_days,
            controls=[*(c.name for c in case.controls[:2]), case.required_review],
            required_equipment=case.needed_equipment,
            required_reagents=case.needed_reagents,
        )
        assert estimate_protocol_cost(minimal) <= MIN_CASE_COST, case.case_id
        assert estimate_protocol_cost(_published(case)) <= MAX_BASE_COST, case.case_id


def test_review_and_forbidden_phrasing(data: TemplateData) -> None:
    for case in data.cases:
        assert 2 <= len(words(case.required_review)) <= 4, case.case_id
        texts = all_case_texts(case)
        for practice in case.forbidden_practices:
            tokens = words(practice)
            assert 2 <= len(tokens) <= 5, practice
            assert not NEGATIONS.intersection(tokens), f"negated practice {practice!r}"
            # Checked against every case text, not only technique, method, controls and
            # review: an oracle plan built from the hidden reference must pass the policy too.
            for text in texts:  # validation reads negation-aware: "with no admitted lemmas" is fine
                assert not affirmed(practice, text), f"{case.case_id}: {practice!r} in {text!r}"


def test_each_choice_is_named_only_by_its_own_sentences(data: TemplateData) -> None:
    for case in data.cases:
        choices = case_choices(case)
        for choice in choices:
            assert 2 <= len(words(choice.name)) <= 9, choice.name
            assert affirmed(choice.name, choice.clue), f"{case.case_id}: clue does not affirm {choice.name!r}"
            for text in fixed_texts(case):
                assert not mentions(choice.name, text), f"{case.case_id}: {choice.name!r} in {text!r}"
            for other in choices:
                if other is not choice:
                    assert not mentions(choice.name, other.clue), (
                        f"{case.case_id}: {choice.name!r} in {other.clue!r}"
                    )
        for element in case.elements:
            assert mentions(element.name, element.negated), element.negated
            assert not affirmed(element.name, element.negated), (
                f"{case.case_id}: {element.negated!r} affirms it"
            )


def test_controls_distinct_from_review(data: TemplateData) -> None:
    for case in data.cases:
        lowered = [control.name.lower() for control in case.controls]
        assert len(set(lowered)) == len(lowered), case.case_id
        assert case.required_review.lower() not in lowered, case.case_id


def test_splits_follow_their_rule(data: TemplateData) -> None:
    """Chosen once by the SHA-256 of the case id, never by hand: the 8 smallest are test, the
    next 2 validation, the rest train."""
    order = sorted(
        (case.case_id for case in data.cases), key=lambda i: hashlib.sha256(i.encode()).hexdigest()
    )
    expected = {i: "test" if k < 8 else "validation" if k < 10 else "train" for k, i in enumerate(order)}
    assert {case.case_id: case.split for case in data.cases} == expected
    assert sum(case.split == "test" for case in data.cases) >= 8
