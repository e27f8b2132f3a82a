"""`validate_protocol`: every pack is solvable, every constraint bites, nothing raises.

The Lab Manager's seven checks and the judge read one validation pass, so three things must
hold for RL to be meaningful: a Scientist with only the public brief can always reach a
protocol without errors; each constraint in the brief is actually enforced (breaking exactly
that rule yields an issue naming it); and no input, however odd, makes validation raise.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replicalab.judge.facts import case_facts
from replicalab.judge.scores import claims_of, plan_of
from replicalab.models import MAX_LIST_ITEMS, Constraint, CostRates, Protocol, ValidationResult
from replicalab.prices import estimate_protocol_cost, estimate_staff_load
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.validation import validate_protocol

COMBOS = [(t, d) for t in BUILTIN_TEMPLATES for d in DIFFICULTIES]
CATEGORIES = {"protocol", "budget", "equipment", "reagents", "schedule", "staff", "policy", "reference"}
DIMENSION = {
    "max_duration_days": "schedule",
    "max_budget": "budget",
    "max_staff": "staff",
    "min_sample_size": "protocol",
    "max_sample_size": "protocol",
    "min_controls": "protocol",
    "required_review": "protocol",
    "forbidden_practice": "policy",
}
MAX_STAFF_LOAD = 5  # the staff formula never asks for more people than this

# --------------------------------------------------------------------------- a public-information plan


def constraint(pack: NormalizedScenarioPack, kind: str) -> Constraint | None:
    return next((c for c in pack.constraints if c.kind == kind), None)


def generic_controls(n: int) -> list[str]:
    return [f"sanity control {i + 1}" for i in range(n)]


def public_protocol(pack: NormalizedScenarioPack, duration: int = 1) -> Protocol:
    """A plan built only from what the Scientist sees: the brief's constraints and resources.

    Essential items, or the available allowed substitute of an unavailable one; the minimum
    sample size; as many controls as required, the required review among them.
    """

    def usable(kind: str) -> list[str]:
        return [
            item.name if item.available else pack.substitutes[item.name.lower()][0]
            for item in pack.resources
            if item.kind == kind and item.essential
        ]

    min_samples = constraint(pack, "min_sample_size")
    min_controls = constraint(pack, "min_controls")
    review = constraint(pack, "required_review")
    n_controls = int(min_controls.quantity or 2) if min_controls else 2
    review_controls = [review.term] if review and review.term else []
    return Protocol(
        sample_size=int(min_samples.quantity or 1) if min_samples else 1,
        controls=[*generic_controls(n_controls - len(review_controls)), *review_controls],
        technique=pack.paper.method,
        duration_days=duration,
        required_equipment=usable("equipment"),
        required_reagents=usable("reagent"),
        rationale="The smallest plan that tests the claim within the lab's limits.",
    )


def fits_public_limits(pack: NormalizedScenarioPack, protocol: Protocol) -> bool:
    budget = constraint(pack, "max_budget")
    staff = constraint(pack, "max_staff")
    # priced as the Lab Manager quotes them when asked (medium and hard labs charge their own rates)
    cost = estimate_protocol_cost(protocol, rates=pack.lab.rates)
    return (budget is None or cost <= (budget.quantity or 0.0)) and (
        staff is None or estimate_staff_load(protocol) <= (staff.quantity or 0.0)
    )


def longest_public_protocol(pack: NormalizedScenarioPack) -> Protocol:
    """The public plan with the longest duration, up to the time limit, that budget and staff allow."""
    limit = constraint(pack, "max_duration_days")
    longest = int(limit.quantity or 1) if limit else pack.lab.time_limit_days
    for duration in range(longest, 0, -1):
        protocol = public_protocol(pack, duration)
        if fits_public_limits(pack, protocol):
            return protocol
    raise AssertionError(f"{pack.scenario_id}: no duration fits the public budget and staff")


def constraint_issue_ids(result: ValidationResult) -> set[str]:
    return {issue.constraint_id for issue in result.issues if issue.constraint_id}


def format_errors(result: ValidationResult) -> list[str]:
    return [f"{i.category}: {i.message}" for i in result.errors]


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_every_pack_admits_a_public_protocol(template: str, difficulty: str) -> None:
    for seed in range(300):
        pack = generate_scenario(seed, template, difficulty)
        for protocol in (public_protocol(pack, 1), longest_public_protocol(pack)):
            result = validate_protocol(protocol, pack)
            assert result.ok, (pack.scenario_id, protocol.duration_days, format_errors(result))
            assert not constraint_issue_ids(result), pack.scenario_id


# --------------------------------------------------------------------------- every constraint bites


def _with_controls(p: Protocol, controls: list[str]) -> Protocol:
    return p.model_copy(update={"controls": controls})


def _over_budget(p: Protocol, c: Constraint, rates: CostRates) -> Protocol:
    # Repeating a control costs money but adds neither a distinct control nor (past two) staff;
    # past the list cap, more samples pay the rest (at the lab's own rates).
    extra = int(((c.quantity or 0.0) - estimate_protocol_cost(p, rates=rates)) // rates.per_control) + 1
    p = _with_controls(p, [*p.controls, *[p.controls[-1]] * min(extra, MAX_LIST_ITEMS - len(p.controls))])
    short = (c.quantity or 0.0) - estimate_protocol_cost(p, rates=rates)
    if short >= 0:
        p = p.model_copy(update={"sample_size": p.sample_size + int(short // rates.per_sample) + 1})
    return p


def _over_staff(p: Protocol, c: Constraint, pack: NormalizedScenarioPack) -> Protocol:
    extra_equipment = [r.name for r in pack.resources if r.kind == "equipment"]
    steps: list[Callable[[Protocol], Protocol]] = [
        lambda q: _with_controls(q, [*q.controls, *q.controls[-1:] * 2]),
        lambda q: q.model_copy(update={"sample_size": max(q.sample_size, 21)}),
        lambda q: q.model_copy(
            update={
                "required_equipment": [*q.required_equipment, *extra_equipment, "spare rack", "spare bench"]
            }
        ),
        lambda q: q.model_copy(update={"duration_days": max(q.duration_days, 6)}),
    ]
    for step in steps:
        if estimate_staff_load(p) > (c.quantity or 0.0):
            break
        p = step(p)
    return p


def violate(p: Protocol, c: Constraint, pack: NormalizedScenarioPack) -> Protocol:
    """`p` changed so that it breaks constraint `c`."""
    q = int(c.quantity or 0)
    review = [ctl for ctl in p.controls if c.term and ctl == c.term]
    others = [ctl for ctl in p.controls if ctl not in review]
    if c.kind == "max_duration_days":
        return p.model_copy(update={"duration_days": q + 1})
    if c.kind == "max_budget":
        return _over_budget(p, c, pack.lab.rates)
    if c.kind == "max_staff":
        return _over_staff(p, c, pack)
    if c.kind == "min_sample_size":
        return p.model_copy(update={"sample_size": q - 1})
    if c.kind == "max_sample_size":
        return p.model_copy(update={"sample_size": q + 1})
    if c.kind == "min_controls":
        review_term = constraint(pack, "required_review")
        keep = [ctl for ctl in p.controls if review_term and ctl == review_term.term]
        return _with_controls(p, [*generic_controls(q - 1 - len(keep)), *keep])
    if c.kind == "required_review":
        return _with_controls(p, [*others, "sanity control extra"])
    if c.kind == "forbidden_practice":
        return p.model_copy(update={"elements": [*p.elements, str(c.term)]})
    raise AssertionError(f"unexpected constraint kind {c.kind}")


# Kinds whose violation cannot spill over into another constraint, whatever the lab's numbers.
EXACT_KINDS = {"min_sample_size", "min_controls", "required_review", "forbidden_practice"}


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_every_constraint_is_enforced(template: str, difficulty: str) -> None:
    for seed in range(100):
        pack = generate_scenario(seed, template, difficulty)
        base = public_protocol(pack, 1)
        assert validate_protocol(base, pack).ok
        for c in pack.constraints:
            assert c.kind in DIMENSION, c.kind
            if c.kind == "max_staff":
                # A cap the staff formula can never exceed would be decorative.
                assert (c.quantity or 0.0) < MAX_STAFF_LOAD, pack.scenario_id
            bad = violate(base, c, pack)
            result = validate_protocol(bad, pack)
            named = [issue for issue in result.issues if issue.constraint_id == c.id]
            assert len(named) == 1, (pack.scenario_id, c.id, c.kind)
            issue = named[0]
            assert issue.severity == ("error" if c.hard else "warning"), (pack.scenario_id, c.id)
            assert issue.category == DIMENSION[c.kind]
            assert c.id in issue.message
            if c.kind in EXACT_KINDS or (c.kind == "max_budget" and difficulty != "easy"):
                assert constraint_issue_ids(result) == {c.id}, (pack.scenario_id, c.id)
            if not c.hard and constraint_issue_ids(result) == {c.id}:
                assert result.ok  # a soft rule warns, it does not fail a check


@pytest.mark.parametrize("template", BUILTIN_TEMPLATES)
def test_a_forbidden_practice_is_used_by_a_claim_that_names_it_never_by_prose(template: str) -> None:
    for seed in range(20):
        pack = generate_scenario(seed, template, "hard")
        base = public_protocol(pack, 1)
        for c in pack.constraints:
            if c.kind != "forbidden_practice" or not c.term:
                continue
            harmless = [
                base.model_copy(update={"rationale": f"We rely on {c.term}."}),
                base.model_copy(update={"rationale": f"Strictly without {c.term}, as required."}),
                base.model_copy(update={"technique": f"{base.technique}; avoid {c.term}"}),
                base.model_copy(update={"controls": [*base.controls, f"no {c.term}"]}),
                base.model_copy(update={"elements": [f"{c.term.replace(' ', '')}"]}),
            ]
            for protocol in harmless:
                result = validate_protocol(protocol, pack)
                assert c.id not in constraint_issue_ids(result), (c.term, protocol)
            used = [
                base.model_copy(update={"technique": c.term.upper()}),
                base.model_copy(update={"controls": [*base.controls, f"the {c.term}"]}),
                base.model_copy(update={"elements": [" ".join(reversed(c.term.split()))]}),
            ]
            for protocol in used:
                result = validate_protocol(protocol, pack)
                assert c.id in constraint_issue_ids(result), (c.term, protocol)
                assert not result.ok


# --------------------------------------------------------------------------- items and schedule


def _pack_where(
    predicate: Callable[[NormalizedScenarioPack], bool], difficulty: str
) -> NormalizedScenarioPack:
    for template in BUILTIN_TEMPLATES:
        for seed in range(200):
            pack = generate_scenario(seed, template, difficulty)
            if predicate(pack):
                return pack
    raise AssertionError("no pack fits")


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_requesting_no_items_is_an_error(template: str, difficulty: str) -> None:
    for seed in range(20):
        pack = generate_scenario(seed, template, difficulty)
        base = public_protocol(pack, 1)
        for field, category in (("required_equipment", "equipment"), ("required_reagents", "reagents")):
            result = validate_protocol(base.model_copy(update={field: []}), pack)
            assert not result.ok
            assert any(i.category == category for i in result.errors), pack.scenario_id


def test_unavailable_item_with_substitute_warns_and_substitute_clears_it() -> None:
    pack = generate_scenario(4, "ml_benchmark", "medium")
    missing = [r for r in pack.resources if r.essential and not r.available]
    assert missing
    item = missing[0]
    field = "required_equipment" if item.kind == "equipment" else "required_reagents"
    category = "equipment" if item.kind == "equipment" else "reagents"
    base = public_protocol(pack, 1)
    alternative = pack.substitutes[item.name.lower()][0]
    assert alternative in getattr(base, field)
    swapped_back = [item.name if n == alternative else n for n in getattr(base, field)]
    result = validate_protocol(base.model_copy(update={field: swapped_back}), pack)
    own = [i for i in result.issues if i.category == category]
    assert own and all(i.severity == "warning" for i in own)
    assert any(alternative in i.message for i in own)
    assert not [i for i in validate_protocol(base, pack).issues if i.category == category]


def test_unavailable_item_without_substitute_is_an_error() -> None:
    def has_stranded(pack: NormalizedScenarioPack) -> bool:
        return any(not r.available and r.name.lower() not in pack.substitutes for r in pack.resources)

    pack = _pack_where(has_stranded, "hard")
    item = next(r for r in pack.resources if not r.available and r.name.lower() not in pack.substitutes)
    field = "required_equipment" if item.kind == "equipment" else "required_reagents"
    base = public_protocol(pack, 1)
    result = validate_protocol(base.model_copy(update={field: [*getattr(base, field), item.name]}), pack)
    assert not result.ok
    assert any(item.name in i.message for i in result.errors)


def test_unknown_and_duplicate_items_warn_and_names_ignore_case() -> None:
    pack = generate_scenario(8, "math_reasoning", "easy")
    base = public_protocol(pack, 1)
    result = validate_protocol(
        base.model_copy(update={"required_equipment": [*base.required_equipment, "time machine"]}),
        pack,
    )
    assert result.ok
    assert any("time machine" in i.message and i.severity == "warning" for i in result.issues)
    shouted = [name.upper() for name in base.required_reagents]
    assert validate_protocol(base.model_copy(update={"required_reagents": shouted}), pack).ok
    doubled = [*base.required_reagents, base.required_reagents[0]]
    result = validate_protocol(base.model_copy(update={"required_reagents": doubled}), pack)
    assert any(i.category == "reagents" and "duplicate" in i.message for i in result.warnings)


# --------------------------------------------------------------------------- controls, as the judge counts them


def _duplicate_control_warnings(result: ValidationResult) -> list[str]:
    return [i.message for i in result.warnings if i.category == "protocol" and "duplicate" in i.message]


def test_duplicate_controls_warn_like_duplicate_items() -> None:
    pack = generate_scenario(8, "math_reasoning", "easy")
    base = public_protocol(pack, 1)
    assert not _duplicate_control_warnings(validate_protocol(base, pack))
    first = base.controls[0]
    for repeat in (first, first.upper(), f"the {first}", " ".join(reversed(first.split()))):
        result = validate_protocol(base.model_copy(update={"controls": [*base.controls, repeat]}), pack)
        assert result.ok  # a warning, like a duplicate item: the judge's padding charge is the cost
        assert _duplicate_control_warnings(result) == ["duplicate controls listed"], repeat
    meaningless = validate_protocol(base.model_copy(update={"controls": [*base.controls, "of the"]}), pack)
    assert _duplicate_control_warnings(meaningless) == ["duplicate controls listed"]


def test_min_controls_counts_controls_as_the_judge_does() -> None:
    pack = generate_scenario(0, "ml_benchmark", "medium")
    c = constraint(pack, "min_controls")
    assert c is not None and c.hard and c.quantity == 3
    base = public_protocol(pack, 1)
    assert validate_protocol(base, pack).ok
    padded = [*base.controls[1:], base.controls[1].upper()]  # three strings, two distinct controls
    result = validate_protocol(base.model_copy(update={"controls": padded}), pack)
    assert c.id in constraint_issue_ids(result)
    assert any(i.message.endswith("2 distinct controls, at least 3 required") for i in result.errors)


control_variants = st.sampled_from(
    ["placebo arm", "Placebo Arm", "the placebo arm", "arm placebo", "shuffled labels", "of the"]
)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(COMBOS),
    st.integers(min_value=0, max_value=50),
    st.lists(control_variants, min_size=1, max_size=6),
)
def test_validation_and_judge_count_the_same_distinct_controls(
    combo: tuple[str, str], seed: int, extra: list[str]
) -> None:
    template, difficulty = combo
    pack = generate_scenario(seed, template, difficulty)
    base = public_protocol(pack, 1)
    protocol = base.model_copy(update={"controls": [*base.controls, *extra]})
    result = validate_protocol(protocol, pack)
    distinct = claims_of(plan_of(protocol), case_facts(pack)).distinct_controls
    assert bool(_duplicate_control_warnings(result)) == (distinct < len(protocol.controls))
    c = constraint(pack, "min_controls")
    assert c is not None and c.quantity is not None
    assert (c.id in constraint_issue_ids(result)) == (distinct < c.quantity)


def test_impossible_values_are_errors() -> None:
    pack = generate_scenario(2, "finance_trading", "medium")
    base = public_protocol(pack, 1)
    for update, text in (
        ({"sample_size": 0}, "sample_size"),
        ({"duration_days": 0}, "duration_days"),
        ({"technique": ""}, "technique"),
    ):
        result = validate_protocol(base.model_copy(update=update), pack)
        assert any(i.category == "protocol" and text in i.message for i in result.errors)
    result = validate_protocol(base.model_copy(update={"controls": []}), pack)
    assert any(i.category == "protocol" and "controls" in i.message for i in result.warnings)
    assert not result.ok  # the required review went with the controls


def test_duration_over_the_time_limit_is_a_schedule_error() -> None:
    pack = generate_scenario(6, "math_reasoning", "hard")
    base = public_protocol(pack, 1)
    result = validate_protocol(base.model_copy(update={"duration_days": pack.lab.time_limit_days + 1}), pack)
    assert [i.category for i in result.errors].count("schedule") == 1


def test_reference_elements_warn_until_addressed() -> None:
    pack = generate_scenario(1, "ml_benchmark", "easy")
    base = public_protocol(pack, 1).model_copy(update={"technique": "a replication"})  # not the method text
    elements = pack.hidden_reference_spec.required_elements
    missing = [i for i in validate_protocol(base, pack).issues if i.category == "reference"]
    assert missing and all(i.severity == "warning" for i in missing)
    assert validate_protocol(base.model_copy(update={"rationale": "; ".join(elements)}), pack).issues == (
        validate_protocol(base, pack).issues
    )
    faithful = base.model_copy(update={"elements": list(elements)})
    result = validate_protocol(faithful, pack)
    assert result.ok and not [i for i in result.issues if i.category == "reference"]


# --------------------------------------------------------------------------- never raises (hypothesis)

odd_text = st.text(min_size=1, max_size=30).filter(lambda s: s.strip() != "")


@st.composite
def pack_and_protocol(draw: st.DrawFn) -> tuple[NormalizedScenarioPack, Protocol]:
    pack = generate_scenario(
        draw(st.integers(min_value=0, max_value=5000)),
        draw(st.sampled_from(BUILTIN_TEMPLATES)),
        draw(st.sampled_from(DIFFICULTIES)),
    )
    names = [r.name for r in pack.resources] + [s.alternative for s in pack.allowed_substitutions]
    terms = [c.term for c in pack.constraints if c.term]
    word = st.sampled_from(names + terms) | odd_text
    phrase = st.lists(word, max_size=4).map(" ".join)
    protocol = Protocol(
        sample_size=draw(st.integers(min_value=0, max_value=200)),
        controls=draw(st.lists(st.sampled_from(terms) | odd_text, max_size=5)),
        technique=draw(phrase),
        duration_days=draw(st.integers(min_value=0, max_value=60)),
        required_equipment=draw(st.lists(st.sampled_from(names) | odd_text, max_size=6)),
        required_reagents=draw(st.lists(st.sampled_from(names) | odd_text, max_size=6)),
        rationale=draw(phrase),
    )
    return pack, protocol


@settings(max_examples=200, deadline=None)
@given(pack_and_protocol())
def test_validation_never_raises_and_tags_every_issue(
    case: tuple[NormalizedScenarioPack, Protocol],
) -> None:
    pack, protocol = case
    result = validate_protocol(protocol, pack)
    assert result == validate_protocol(protocol, pack)
    ids = {c.id: c for c in pack.constraints}
    for issue in result.issues:
        assert issue.category in CATEGORIES
        assert issue.severity in ("error", "warning")
        assert issue.message
        if issue.constraint_id is not None:
            c = ids[issue.constraint_id]
            assert issue.severity == ("error" if c.hard else "warning")
            assert issue.category == DIMENSION[c.kind]
    # The numeric limits agree with the cost and staff formulas, independently recomputed.
    errors = {i.category for i in result.errors}
    if protocol.duration_days > pack.lab.time_limit_days:
        assert "schedule" in errors
    if estimate_protocol_cost(protocol, rates=pack.lab.rates) > pack.lab.budget_remaining:
        assert "budget" in errors
    if estimate_staff_load(protocol) > pack.lab.staff_count:
        assert "staff" in errors
    if not protocol.required_equipment:
        assert "equipment" in errors


def test_wrong_argument_types_are_named() -> None:
    pack = generate_scenario(0, "math_reasoning", "easy")
    with pytest.raises(TypeError, match="protocol"):
        validate_protocol({"sample_size": 3}, pack)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="scenario"):
        validate_protocol(public_protocol(pack), pack.model_dump())  # type: ignore[arg-type]
