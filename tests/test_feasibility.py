"""`check_feasibility` reads its seven dimensions off one validation pass plus the lab's own
numbers; a plan validation finds clean must still answer to the lab's budget and staff, and the
shared parts of a passing check and its answer must not leak between checks."""

from __future__ import annotations

from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import compose_lab_manager_response, respond
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import FEASIBILITY_DIMENSIONS, LabManagerAction, LabManagerActionType
from replicalab.scenarios import BUILTIN_TEMPLATES, generate_scenario
from replicalab.scenarios.types import NormalizedScenarioPack


def _accepted_proposals() -> list[tuple[NormalizedScenarioPack, LabManagerAction]]:
    found = []
    for template in BUILTIN_TEMPLATES:
        for seed in range(30):
            pack = generate_scenario(seed, template, "easy")
            protocol = build_baseline_scientist_action(pack.scientist_observation).to_protocol()
            action, check, _ = respond(protocol, pack)
            if check.feasible:
                found.append((pack, action))
    return found


def test_the_lab_numbers_bind_when_no_constraint_states_them() -> None:
    for pack, _ in _accepted_proposals()[:20]:
        protocol = build_baseline_scientist_action(pack.scientist_observation).to_protocol()
        passing = check_feasibility(protocol, pack)
        cost, staff = passing.estimated_cost, passing.required_staff
        silent = pack.model_copy(
            update={
                "constraints": [c for c in pack.constraints if c.kind not in ("max_budget", "max_staff")],
                "lab": pack.lab.model_copy(
                    update={"budget_remaining": cost - 10.0, "staff_count": staff - 1}
                ),
            }
        )
        check = check_feasibility(protocol, silent)
        assert check.validation_result.issues == [], pack.scenario_id
        assert check.failed_dimensions == ["budget", "staff"], pack.scenario_id
        assert check.budget.reasons == [
            f"estimated cost {cost:g} exceeds the remaining budget of {cost - 10.0:g} credits"
        ]
        assert check.staff.reasons == [f"needs {staff} staff but the lab has {staff - 1}"]


def test_a_passing_check_is_a_fresh_value_with_every_dimension_clean() -> None:
    cases = _accepted_proposals()
    assert len(cases) > 20
    checks = []
    for pack, action in cases:
        protocol = build_baseline_scientist_action(pack.scientist_observation).to_protocol()
        check = check_feasibility(protocol, pack)
        checks.append(check)
        assert all(
            getattr(check, dim).ok and not getattr(check, dim).reasons for dim in FEASIBILITY_DIMENSIONS
        )
        assert check.substitution_options == {}
        again = compose_lab_manager_response(check)
        assert again == action
        assert again.action_type is LabManagerActionType.ACCEPT and again.suggested_protocol is None
        assert again.explanation == (
            f"Feasible: all seven checks pass (estimated cost {check.estimated_cost:g} credits, "
            f"{check.required_staff} staff)."
        )
    assert len({id(check) for check in checks}) == len(checks)  # callers memoise on a check's identity
