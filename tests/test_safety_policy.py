"""The lab's safety restrictions bind: a plan that breaks one fails the policy check.

Each template lists the practices its safety restrictions forbid (`restricted_practices`); every
pack states each one as a hard, public forbidden-practice constraint (ids s1, s2, ...), and
validation reads it from the plan's claims like the paper's own forbidden practices: a plan uses
a practice when its technique, a control or an element names it. So a finance plan that claims
live trading in an offline-only lab is refused by the Lab Manager in every paper, while no
rationale, whatever it says of live trading, is ever read.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from pydantic import ValidationError

from replicalab.agents import build_scientist_system_prompt
from replicalab.agents.lab_manager_policy import respond
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import LabManagerActionType, Protocol
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario, get_template
from replicalab.scenarios.types import NormalizedScenarioPack, TemplateData
from replicalab.text import NEGATIONS, mentions, words
from replicalab.validation import validate_protocol
from tests.case_texts import all_case_texts
from tests.plans import good_plan

SEEDS_PER_CASE = 3
LIVE_TRADING = (
    ("technique", "live trading"),
    ("controls", "Live Trading"),
    ("elements", "the live trading"),
)
NO_LIVE_TRADING = (
    ("rationale", "Offline backtest only: no live trading."),
    ("rationale", "Run the signal as live trading with real capital from day one."),
    ("controls", "check that no live trading happens"),
)


def _finance_packs() -> dict[str, list[NormalizedScenarioPack]]:
    """Case id -> `SEEDS_PER_CASE` packs of that paper at each difficulty."""
    packs: dict[str, list[NormalizedScenarioPack]] = defaultdict(list)
    for difficulty in DIFFICULTIES:
        found: dict[str, int] = defaultdict(int)
        for seed in range(300):
            pack = generate_scenario(seed, "finance_trading", difficulty)
            if found[pack.case_id] < SEEDS_PER_CASE:
                found[pack.case_id] += 1
                packs[pack.case_id].append(pack)
    return packs


def _with_text(plan: Protocol, field: str, text: str) -> Protocol:
    if field == "controls":  # in place of the first control, so the plan's cost stays the same
        return plan.model_copy(update={"controls": [text, *plan.controls[1:]]})
    if field == "elements":
        return plan.model_copy(update={"elements": [*plan.elements, text]})
    if field == "technique":
        return plan.model_copy(update={"technique": text})
    return plan.model_copy(update={"rationale": f"{plan.rationale}. {text}"})


def _safety_rules(pack: NormalizedScenarioPack) -> list[tuple[str, str]]:
    return [(c.id, c.term or "") for c in pack.constraints if c.id.startswith("s")]


def test_live_trading_fails_the_policy_check_in_every_finance_paper() -> None:
    packs = _finance_packs()
    train = [case.case_id for case in get_template("finance_trading").cases if case.split == "train"]
    assert sorted(packs) == sorted(train)
    for case_id, of_case in packs.items():
        assert len(of_case) == SEEDS_PER_CASE * len(DIFFICULTIES), case_id
        for pack in of_case:
            plan = good_plan(pack)
            assert respond(plan, pack)[0].action_type is LabManagerActionType.ACCEPT, pack.scenario_id
            rules = [c.id for c in pack.constraints if c.term == "live trading"]
            assert len(rules) == 1, pack.scenario_id  # stated once, whether or not the paper names it
            rule = rules[0]
            for field, text in LIVE_TRADING:
                live = _with_text(plan, field, text)
                result = validate_protocol(live, pack)
                assert [i.constraint_id for i in result.errors] == [rule], (pack.scenario_id, field)
                action, check, _ = respond(live, pack)
                assert not check.policy.ok and check.failed_dimensions == ["policy"]
                assert any("live trading" in reason for reason in check.policy.reasons)
                assert action.action_type is not LabManagerActionType.ACCEPT, (pack.scenario_id, field)
            for field, text in NO_LIVE_TRADING:
                offline = _with_text(plan, field, text)
                assert validate_protocol(offline, pack).ok, (pack.scenario_id, field)
                action, check, _ = respond(offline, pack)
                assert check.feasible
                assert action.action_type is LabManagerActionType.ACCEPT, (pack.scenario_id, field)


@pytest.mark.parametrize("template", BUILTIN_TEMPLATES)
def test_every_restricted_practice_is_a_public_hard_rule_of_every_pack(template: str) -> None:
    practices = get_template(template).restricted_practices
    expected = [(f"s{i}", practice) for i, practice in enumerate(practices, start=1)]
    for difficulty in DIFFICULTIES:
        for seed in range(12):
            pack = generate_scenario(seed, template, difficulty)
            assert _safety_rules(pack) == expected, pack.scenario_id
            rules = [c for c in pack.constraints if c.id.startswith("s")]
            assert pack.constraints[-len(rules) :] == rules  # after the case's own rules
            assert pack.scientist_observation.constraints == pack.constraints
            brief = build_scientist_system_prompt(pack)
            for c in rules:
                assert c.kind == "forbidden_practice" and c.hard
                assert c.description == f"Lab safety rule: no {c.term}."
                assert c.description in brief
            assert pack.terms["forbidden_practice"][-len(rules) :] == tuple(practices)


@pytest.mark.parametrize("template", BUILTIN_TEMPLATES)
def test_each_safety_rule_is_checked_on_the_claims_never_the_rationale(template: str) -> None:
    for difficulty in DIFFICULTIES:
        for seed in range(6):
            pack = generate_scenario(seed, template, difficulty)
            plan = good_plan(pack)
            assert validate_protocol(plan, pack).ok, pack.scenario_id
            assert _safety_rules(pack), pack.scenario_id
            for rule, practice in _safety_rules(pack):
                breaking = _with_text(plan, "elements", practice)
                result = validate_protocol(breaking, pack)
                assert [i.constraint_id for i in result.errors] == [rule], (pack.scenario_id, practice)
                assert [i.category for i in result.errors] == ["policy"]
                assert not check_feasibility(breaking, pack).policy.ok
                for text in (f"We rely on {practice} throughout", f"No {practice} at any point"):
                    assert validate_protocol(_with_text(plan, "rationale", text), pack).ok, text


@pytest.mark.parametrize("template", BUILTIN_TEMPLATES)
def test_restricted_practices_are_phrases_no_faithful_plan_uses(template: str) -> None:
    """A practice must read as a thing done (no negation in it), must not sit in any text a
    faithful plan copies (so the oracle's and the public plans pass), and must not repeat a
    case's own forbidden practice (the plan would break one rule twice)."""
    data = get_template(template)
    practices = [" ".join(words(p)) for p in data.restricted_practices]
    assert len(set(practices)) == len(practices)
    for practice in data.restricted_practices:
        assert 2 <= len(words(practice)) <= 6, practice
        assert not NEGATIONS.intersection(words(practice)), practice
    for case in data.cases:
        for practice in data.restricted_practices:
            for text in all_case_texts(case):
                assert not mentions(practice, text), f"{case.case_id}: {practice!r} in {text!r}"
            for own in case.forbidden_practices:
                assert not mentions(practice, own) and not mentions(own, practice), (case.case_id, own)


def test_a_template_must_list_its_restricted_practices() -> None:
    data = get_template("finance_trading").model_dump()
    for missing in (
        {k: v for k, v in data.items() if k != "restricted_practices"},
        {**data, "restricted_practices": []},
    ):
        with pytest.raises(ValidationError, match="restricted_practices"):
            TemplateData.model_validate(missing)
