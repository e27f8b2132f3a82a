"""Turn (seed, template, difficulty, split) into one `NormalizedScenarioPack`.

The paper comes from the template's hand-written cases of the split, its study drawn from the
case's variants and written out as text (`paper`); the seed varies the lab around it:
budget, time limit, staff, which catalogue items are stocked, booked or out of stock, and which
substitutions exist (`lab_draws`). What each difficulty tightens is one table
(`difficulty.LEVELS`).

Every pack admits a protocol that passes all seven checks: the case's minimal plan with the
substitutes swapped in (`minimal_protocol`), which the bounds are computed from.

All randomness is one block of uniforms (the lab's `Draws`, the study's, the prices', the
paper's wording) from a `default_rng` seeded with one integer that packs seed, template, split
and difficulty side by side, so a pack is identical in any process.
"""

from __future__ import annotations

import numpy as np

from replicalab.models import Substitution
from replicalab.prices import RATE_DRAWS
from replicalab.scenarios.key import ScenarioKey
from replicalab.scenarios.lab_draws import LAB_DRAWS, Draws, draw_lab
from replicalab.scenarios.paper import STUDY_DRAWS, WORDING_DRAWS, Study, draw_study
from replicalab.scenarios.plan import CasePlan, Listed, TemplatePlan, template_plan
from replicalab.scenarios.registry import check_has_cases
from replicalab.scenarios.rules import lab_constraints
from replicalab.scenarios.types import (
    DIFFICULTIES,
    SPLITS,
    Difficulty,
    LabFacts,
    NormalizedScenarioPack,
    Split,
)
from replicalab.scenarios.wording import Fact

DEFAULT_MAX_ROUNDS = 6


def _uniforms(seed: int, template_key: int, split: Split, level: Difficulty) -> list[float]:
    """A pack's uniforms: the lab's block, its study's, its prices', then its paper's wording. One
    integer entropy (seed, template, split and difficulty side by side) gives every combination
    its own stream."""
    entropy = (seed << 36) | (template_key << 4) | (SPLITS.index(split) << 2) | DIFFICULTIES.index(level)
    draws = LAB_DRAWS + STUDY_DRAWS + RATE_DRAWS + WORDING_DRAWS
    values: list[float] = np.random.default_rng(entropy).random(draws).tolist()
    return values


def generate_scenario(
    seed: int, template: str = "math_reasoning", difficulty: str = "easy", split: str = "train"
) -> NormalizedScenarioPack:
    """Generate the pack for (seed, template, difficulty, split); the same inputs give the same
    pack. The paper case is drawn among the template's cases of `split`."""
    return generate_pack(ScenarioKey(template, split, difficulty, seed))  # type: ignore[arg-type]  # the key checks them


def generate_pack(key: ScenarioKey) -> NormalizedScenarioPack:
    """The pack `key` names (`generate_scenario` with the key's fields)."""
    template, part, level, seed = key.template, key.split, key.difficulty, key.seed
    plan = template_plan(template)
    cases = plan.cases[part]
    if not cases:
        check_has_cases(template, part)
    u = _uniforms(seed, plan.key, part, level)
    draws = Draws.of(u[:LAB_DRAWS])
    case = cases[int(draws.case * len(cases))]
    study = _study(plan, case, level, u)
    price_draws = u[LAB_DRAWS + STUDY_DRAWS : -WORDING_DRAWS]
    listing, substitutions, lab = draw_lab(plan, case, study, level, draws, price_draws)
    return _assemble(
        key.id,
        (template, part, level, seed),
        plan,
        case,
        study,
        listing,
        substitutions,
        lab,
    )


def _study(plan: TemplatePlan, case: CasePlan, level: Difficulty, u: list[float]) -> Study:
    """The study a pack's uniforms `u` draw for `case`, a case of `plan`'s family."""
    study_u, wording_u = u[LAB_DRAWS : LAB_DRAWS + STUDY_DRAWS], u[-WORDING_DRAWS:]
    return draw_study(case.case, case.voice, level, plan.data.sample_unit, study_u, wording_u)


def paper_facts(pack: NormalizedScenarioPack) -> tuple[Fact, ...]:
    """What each sentence of `pack`'s method states (`Study.facts`), drawn again from the pack's
    seed: public meanings of public sentences, the ceiling of what reading can recover. Raises a
    ValueError when the pack is not the one its (seed, template, difficulty, split) generate."""
    plan = template_plan(pack.template)
    u = _uniforms(pack.seed, plan.key, pack.split, pack.difficulty)
    case = next((c for c in plan.cases[pack.split] if c.case.case_id == pack.case_id), None)
    study = None if case is None else _study(plan, case, pack.difficulty, u)
    if study is None or study.paper != pack.paper:
        raise ValueError(f"pack: {pack.scenario_id} is not the pack its seed generates")
    return study.facts


def _assemble(
    scenario_id: str,
    cell: tuple[str, Split, Difficulty, int],
    plan: TemplatePlan,
    case: CasePlan,
    study: Study,
    listing: dict[str, Listed],
    substitutions: list[Substitution],
    lab: LabFacts,
) -> NormalizedScenarioPack:
    """The pack, with both agents' opening observations."""
    template, split, level, seed = cell
    constraints = (
        lab_constraints(lab.budget_remaining, lab.time_limit_days, lab.staff_count) + case.rules[level]
    )
    resources = [listed.item for listed in listing.values()]
    paper, goal = study.paper, case.case.experiment_goal
    # One validation for the pack and its two opening observations, given as their fields: a
    # model built apart and then nested costs the pack its own call more.
    return NormalizedScenarioPack.model_validate(
        {
            "scenario_id": scenario_id,
            "template": template,
            "split": split,
            "difficulty": level,
            "seed": seed,
            "domain_id": plan.data.domain_id,
            "case_id": case.case.case_id,
            "paper": paper,
            "candidates": case.candidates,
            "experiment_goal": goal,
            "task_summary": case.case.task_summary,
            "success_criteria": list(study.success_criteria),
            "constraints": constraints,
            "resources": resources,
            "allowed_substitutions": substitutions,
            "hidden_reference_spec": study.reference,
            "lab": lab,
            "scientist_observation": {
                "paper": paper,
                "experiment_goal": goal,
                "constraints": constraints,
                "resources": resources,
                "substitutions": substitutions,
                "candidates": case.candidates,
                "conversation_history": [],
                "current_protocol": None,
                "round_number": 1,
                "max_rounds": DEFAULT_MAX_ROUNDS,
            },
            "lab_manager_observation": _lab_manager_opening(listing, lab),
        }
    )


def _lab_manager_opening(listing: dict[str, Listed], lab: LabFacts) -> dict[str, object]:
    """The fields of the Lab Manager's first observation (`LabManagerObservation`): the lab's
    facts, its items on their four shelves."""
    shelves: tuple[list[str], ...] = ([], [], [], [])
    for name, listed in listing.items():
        shelves[listed.shelf].append(name)
    return {
        "budget_total": lab.budget_total,
        "budget_remaining": lab.budget_remaining,
        "equipment_available": shelves[0],
        "equipment_booked": shelves[1],
        "reagents_in_stock": shelves[2],
        "reagents_out_of_stock": shelves[3],
        "staff_count": lab.staff_count,
        "time_limit_days": lab.time_limit_days,
        "safety_restrictions": lab.safety_restrictions,
        "conversation_history": [],
        "current_protocol": None,
        "round_number": 1,
        "max_rounds": DEFAULT_MAX_ROUNDS,
        "feasibility": None,
        "suggestion": None,
    }
