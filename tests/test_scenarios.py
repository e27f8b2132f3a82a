"""Scenario generation: deterministic in any process, varied over seeds, harder by level.

RL runs reseed thousands of episodes across worker processes, so a pack must be a pure function
of (seed, template, difficulty) and seeds must actually change the task; difficulty is only
meaningful if the slack it promises is mechanically there. The registry and pack files are how
users add families and pin scenarios, so they are tested as public API.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np
import pytest

from replicalab.models import Protocol
from replicalab.prices import estimate_protocol_cost, estimate_staff_load
from replicalab.scenarios import (
    BUILTIN_TEMPLATES,
    DIFFICULTIES,
    NormalizedScenarioPack,
    PaperCase,
    TemplateData,
    available_scenario_families,
    generate_scenario,
    get_template,
    load_pack,
    minimal_protocol,
    published_protocol,
    register_template,
    register_template_file,
    save_pack,
    template_names,
)
from replicalab.scenarios import registry as registry_module
from replicalab.scenarios.difficulty import LEVELS
from replicalab.scenarios.paper import candidates_of
from replicalab.scenarios.plan import PlanParts, minimal_parts, published_parts
from replicalab.scenarios.types import CatalogueItem, quantity_table, term_table
from replicalab.validation import validate_protocol
from tests.processes import stdout_of

COMBOS = [(t, d) for t in BUILTIN_TEMPLATES for d in DIFFICULTIES]


def published_plan(pack: NormalizedScenarioPack) -> Protocol:
    return published_protocol(case_of(pack), pack.hidden_reference_spec)


def case_of(pack: NormalizedScenarioPack) -> PaperCase:
    return next(c for c in get_template(pack.template).cases if c.case_id == pack.case_id)


def swaps_of(pack: NormalizedScenarioPack) -> dict[str, str]:
    """Unavailable essential item -> the first allowed substitute the lab has available."""
    return {
        item.name: pack.substitutes[item.name.lower()][0]
        for item in pack.resources
        if item.essential and not item.available
    }


@pytest.fixture()
def isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let a test register templates without leaking them into other tests."""
    template_names()  # load the built-ins first
    monkeypatch.setattr(registry_module, "_registry", dict(registry_module._registry))


# --------------------------------------------------------------------------- determinism

_PRINT_PACKS = """
import sys
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario
for template in BUILTIN_TEMPLATES:
    for difficulty in DIFFICULTIES:
        for seed in (0, 1, 7, 2**31 + 5):
            sys.stdout.write(generate_scenario(seed, template, difficulty).model_dump_json() + "\\n")
"""


def _packs_in_subprocess(hash_seed: str) -> list[str]:
    return stdout_of(_PRINT_PACKS, hash_seed).splitlines()


def test_same_inputs_give_byte_identical_packs_across_processes() -> None:
    first = _packs_in_subprocess("0")
    second = _packs_in_subprocess("12345")
    assert len(first) == len(COMBOS) * 4
    assert first == second
    here = [
        generate_scenario(seed, t, d).model_dump_json() for t, d in COMBOS for seed in (0, 1, 7, 2**31 + 5)
    ]
    assert here == first


def test_repeated_calls_are_identical_and_numpy_seeds_accepted() -> None:
    a = generate_scenario(42, "math_reasoning", "medium")
    b = generate_scenario(np.int64(42), "math_reasoning", "medium")
    assert a.model_dump_json() == b.model_dump_json()
    assert b.seed == 42 and type(b.seed) is int


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_seeds_give_distinct_packs(template: str, difficulty: str) -> None:
    seen = set()
    for seed in range(1000):
        pack = generate_scenario(seed, template, difficulty)
        body = pack.model_dump(mode="json", exclude={"scenario_id", "seed"})
        seen.add(json.dumps(body, sort_keys=True))
    assert len(seen) >= 950, f"only {len(seen)} distinct packs of 1000"


# --------------------------------------------------------------------------- shape of a pack


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_pack_shape_and_observations_agree(template: str, difficulty: str) -> None:
    data = get_template(template)
    for seed in range(60):
        pack = generate_scenario(seed, template, difficulty)
        assert pack.scenario_id == f"{template}-train-{difficulty}-{seed}"
        assert (pack.template, pack.difficulty, pack.seed) == (template, difficulty, seed)
        assert pack.domain_id == data.domain_id
        case = case_of(pack)
        spec = pack.hidden_reference_spec
        assert case.split == "train" and pack.paper.title == case.title
        assert pack.candidates == candidates_of(case) == pack.scientist_observation.candidates
        assert spec.technique in pack.candidates.techniques
        spread = LEVELS[difficulty].element_spread  # type: ignore[index]
        assert abs(len(spec.required_elements) - case.required_count) <= spread
        assert 1 <= len(spec.required_elements) < len(case.elements)
        assert set(spec.required_elements) <= set(pack.candidates.elements)
        assert len(spec.original_controls) == case.control_count
        assert pack.paper.reported_sample_size == spec.sample_size
        assert case.sample_size_range[0] <= spec.sample_size <= case.sample_size_range[1]
        assert str(spec.sample_size) in pack.paper.key_finding
        ids = [c.id for c in pack.constraints]
        assert len(set(ids)) == len(ids)
        kinds = [c.kind for c in pack.constraints]
        assert {
            "max_duration_days",
            "max_budget",
            "min_sample_size",
            "min_controls",
            "required_review",
            "forbidden_practice",
        } <= set(kinds)
        # A staff cap is stated exactly when some plan could exceed it (the formula's max is 5).
        assert ("max_staff" in kinds) == (pack.lab.staff_count < 5)
        assert "max_sample_size" not in kinds  # the budget caps the sample size, not a rule
        names = [r.name.lower() for r in pack.resources]
        assert len(set(names)) == len(names)
        # Every needed item is listed and marked essential; substitutions point at listed items.
        essential = {r.name for r in pack.resources if r.essential}
        assert essential == {*case.needed_equipment, *case.needed_reagents}
        for sub in pack.allowed_substitutions:
            assert sub.original.lower() in pack.resource_by_name
            assert sub.alternative.lower() in pack.resource_by_name
        sci = pack.scientist_observation
        assert sci.paper == pack.paper and sci.experiment_goal == pack.experiment_goal
        assert sci.constraints == pack.constraints and sci.resources == pack.resources
        assert sci.substitutions == pack.allowed_substitutions
        assert sci.current_protocol is None and sci.conversation_history == []
        lm = pack.lab_manager_observation
        assert (lm.budget_total, lm.budget_remaining) == (pack.lab.budget_total, pack.lab.budget_remaining)
        assert lm.budget_remaining <= lm.budget_total
        assert (lm.staff_count, lm.time_limit_days) == (pack.lab.staff_count, pack.lab.time_limit_days)
        assert lm.safety_restrictions == list(data.safety_restrictions)
        for kind, available, booked in (
            ("equipment", lm.equipment_available, lm.equipment_booked),
            ("reagent", lm.reagents_in_stock, lm.reagents_out_of_stock),
        ):
            assert available == [r.name for r in pack.resources if r.kind == kind and r.available]
            assert booked == [r.name for r in pack.resources if r.kind == kind and not r.available]


def test_hidden_reference_stays_out_of_the_scientist_view() -> None:
    for t, d in COMBOS:
        pack = generate_scenario(3, t, d)
        visible = pack.scientist_observation.model_dump_json()
        spec = pack.hidden_reference_spec
        assert spec.summary not in visible
        assert "required_elements" not in visible and "original_controls" not in visible


# --------------------------------------------------------------------------- difficulty


@pytest.mark.parametrize("template", BUILTIN_TEMPLATES)
def test_slack_shrinks_with_difficulty(template: str) -> None:
    means: dict[str, tuple[float, float, float]] = {}
    for level in DIFFICULTIES:
        packs = [generate_scenario(seed, template, level) for seed in range(500)]
        means[level] = (
            # the budget in plans: how many of the paper's own plans, at the lab's prices, it buys
            mean(
                p.lab.budget_remaining / estimate_protocol_cost(published_plan(p), rates=p.lab.rates)
                for p in packs
            ),
            mean(p.lab.time_limit_days for p in packs),
            mean(p.lab.staff_count for p in packs),
        )
    for i, quantity in enumerate(("budget in published plans", "time_limit_days", "staff_count")):
        easy, medium, hard = (means[level][i] for level in DIFFICULTIES)
        assert easy > medium > hard, f"{quantity}: {easy} / {medium} / {hard}"


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_difficulty_tightens_the_lab(template: str, difficulty: str) -> None:
    for seed in range(200):
        pack = generate_scenario(seed, template, difficulty)
        case = case_of(pack)
        limit = pack.lab.time_limit_days
        missing = [r for r in pack.resources if r.essential and not r.available]
        if difficulty == "easy":
            assert not missing
            assert limit > case.base_duration_days  # the paper's own schedule fits with slack
            continue
        # Medium and hard: the paper's schedule no longer fits, and a needed item is missing
        # but can be replaced by an allowed substitute the lab has.
        assert limit < case.base_duration_days
        assert limit >= case.min_duration_days
        assert missing
        for item in missing:
            rescues = [
                sub
                for sub in pack.allowed_substitutions
                if sub.original == item.name and pack.resource_by_name[sub.alternative.lower()].available
            ]
            assert rescues, f"{pack.scenario_id}: nothing replaces {item.name}"


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_minimal_protocol_with_substitutes_passes_validation(template: str, difficulty: str) -> None:
    for seed in range(100):
        pack = generate_scenario(seed, template, difficulty)
        protocol = minimal_protocol(case_of(pack), difficulty, swaps_of(pack), pack.hidden_reference_spec)
        result = validate_protocol(protocol, pack)
        assert result.ok, (pack.scenario_id, result.errors)


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_plan_parts_price_as_the_protocols_they_stand_for(template: str, difficulty: str) -> None:
    """The generator prices the published and minimal plans from their parts: the same fields,
    the same price (with and without samples) and the same staff as the validated protocols."""
    for seed in range(40):
        pack = generate_scenario(seed, template, difficulty)
        case, reference, rates = case_of(pack), pack.hidden_reference_spec, pack.lab.rates
        pairs = (
            (published_protocol(case, reference), published_parts(case, reference)),
            (
                minimal_protocol(case, difficulty, swaps_of(pack), reference),
                minimal_parts(case, difficulty, swaps_of(pack), reference),
            ),
        )
        for protocol, parts in pairs:
            assert parts == PlanParts(*(getattr(protocol, name) for name in PlanParts._fields))
            for samples in (None, 0):
                assert estimate_protocol_cost(parts, samples, rates) == estimate_protocol_cost(
                    protocol, samples, rates
                )
            assert estimate_staff_load(parts) == estimate_staff_load(protocol)


# --------------------------------------------------------------------------- bad input


def test_unknown_template_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="template") as caught:
        generate_scenario(0, "chemistry", "easy")
    for name in BUILTIN_TEMPLATES:
        assert name in str(caught.value)


def test_unknown_difficulty_lists_the_valid_ones() -> None:
    for bad in ("extreme", "Easy", ""):
        with pytest.raises(ValueError, match="difficulty") as caught:
            generate_scenario(0, "math_reasoning", bad)
        for level in DIFFICULTIES:
            assert level in str(caught.value)


@pytest.mark.parametrize("seed", [-1, True, False, "3", 2.0, None])
def test_bad_seed_names_seed(seed: object) -> None:
    with pytest.raises((TypeError, ValueError), match="seed"):
        generate_scenario(seed, "math_reasoning", "easy")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- registry and files


def test_available_families_lists_the_builtins() -> None:
    families = {family.template: family for family in available_scenario_families()}
    assert set(BUILTIN_TEMPLATES) <= set(families)
    for name in BUILTIN_TEMPLATES:
        family = families[name]
        data = get_template(name)
        assert family.domain_id == data.domain_id
        assert family.difficulties == list(DIFFICULTIES)
        assert family.case_ids == [case.case_id for case in data.cases]
        assert len(family.case_ids) >= 6


def _variant(name: str) -> TemplateData:
    base = get_template("ml_benchmark")
    cases = [
        case.model_copy(update={"case_id": f"{name}_{case.case_id}", "min_sample_size": 3})
        for case in base.cases
    ]
    return base.model_copy(update={"template": name, "domain_id": "custom_ml", "cases": cases})


@pytest.mark.usefixtures("isolated_registry")
def test_register_template_feeds_the_generator() -> None:
    register_template(_variant("custom_ml"))
    assert "custom_ml" in template_names()
    families = {family.template: family for family in available_scenario_families()}
    assert families["custom_ml"].domain_id == "custom_ml"
    pack = generate_scenario(5, "custom_ml", "hard")
    assert pack.scenario_id == "custom_ml-train-hard-5"
    assert pack.domain_id == "custom_ml" and pack.case_id.startswith("custom_ml_")
    assert any(c.kind == "min_sample_size" and c.quantity == 3.0 for c in pack.constraints)
    protocol = minimal_protocol(case_of(pack), "hard", swaps_of(pack), pack.hidden_reference_spec)
    assert validate_protocol(protocol, pack).ok
    assert pack.model_dump_json() == generate_scenario(5, "custom_ml", "hard").model_dump_json()


@pytest.mark.usefixtures("isolated_registry")
def test_duplicate_registration_refused_unless_replacing() -> None:
    register_template(_variant("custom_ml"))
    with pytest.raises(ValueError, match="custom_ml"):
        register_template(_variant("custom_ml"))
    with pytest.raises(ValueError, match="math_reasoning"):
        register_template(get_template("math_reasoning"))
    replacement = _variant("custom_ml").model_copy(update={"domain_id": "replaced"})
    register_template(replacement, replace=True)
    assert generate_scenario(0, "custom_ml", "easy").domain_id == "replaced"


@pytest.mark.usefixtures("isolated_registry")
def test_templates_the_generator_cannot_serve_are_refused() -> None:
    base = _variant("broken")
    case = base.cases[0]
    need = case.needed_equipment[0]
    subs = list(base.substitutions)
    first = next(i for i, sub in enumerate(subs) if sub.original == need)
    reagent = next(item.name for item in base.catalogue if item.kind == "reagent")
    broken: dict[str, dict[str, Any]] = {
        "no substitution": {"substitutions": [s for s in subs if s.original != need]},
        "not in the catalogue": {
            "substitutions": [subs[first].model_copy(update={"alternative": "ghost rig"}), *subs]
        },
        "cannot be replaced": {
            "substitutions": [subs[first].model_copy(update={"alternative": reagent}), *subs]
        },
        "extras only": {"catalogue": [*base.catalogue, CatalogueItem(name=need, kind="equipment")]},
    }
    for message, update in broken.items():
        with pytest.raises(ValueError, match=message):
            register_template(base.model_copy(update=update))
    assert "broken" not in template_names()


@pytest.mark.usefixtures("isolated_registry")
def test_register_template_file(tmp_path: Path) -> None:
    path = tmp_path / "custom.json"
    path.write_text(_variant("from_file").model_dump_json(), encoding="utf-8")
    data = register_template_file(path)
    assert data.template == "from_file"
    assert generate_scenario(1, "from_file", "medium").template == "from_file"
    with pytest.raises(TypeError, match="data"):
        register_template({"template": "dict"})  # type: ignore[arg-type]


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_save_and_load_pack_round_trip(tmp_path: Path, template: str, difficulty: str) -> None:
    pack = generate_scenario(99, template, difficulty)
    path = save_pack(pack, tmp_path / "pack.json")
    loaded = load_pack(path)
    assert loaded == pack
    assert loaded.model_dump_json() == pack.model_dump_json()
    assert loaded.substitutes == pack.substitutes


@pytest.mark.parametrize(("template", "difficulty"), COMBOS)
def test_derived_tables_follow_the_fields(template: str, difficulty: str) -> None:
    for seed in range(20):
        pack = generate_scenario(seed, template, difficulty)
        assert pack.quantities == quantity_table(pack.constraints)
        assert pack.terms == term_table(pack.constraints)
        assert list(pack.resource_by_name) == [item.name.lower() for item in pack.resources]
        copy = pack.model_copy(update={"constraints": pack.constraints[:2]})
        assert copy.quantities == quantity_table(pack.constraints[:2])  # an update derives afresh


@pytest.mark.parametrize(
    ("template", "unit"),
    [("math_reasoning", "instances"), ("ml_benchmark", "runs"), ("finance_trading", "backtest windows")],
)
def test_the_paper_states_its_sample_size_in_the_familys_unit(template: str, unit: str) -> None:
    pack = generate_scenario(4, template, "hard", "validation")
    assert pack.paper.sample_unit is not None and pack.paper.sample_unit.plural == unit
    assert f"The sample size is {pack.paper.reported_sample_size} {unit}; one " in pack.paper.key_finding
    assert pack.scientist_observation.paper == pack.paper  # public: the brief shows it
