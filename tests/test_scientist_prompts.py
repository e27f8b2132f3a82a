"""Scientist prompts: the system prompt and the observation show only what the Scientist may see."""

from __future__ import annotations

from typing import Any

import pytest

from replicalab.agents import build_scientist_system_prompt, format_scientist_observation
from replicalab.models import ConversationEntry, ScientistAction
from replicalab.scenarios import DIFFICULTIES, generate_scenario
from tests.plans import TEMPLATES, with_secret_reference
from tests.scientist_briefs import a_protocol, lab_entry, make_observation


def hidden_strings(pack: Any) -> list[str]:
    spec = pack.hidden_reference_spec
    return [spec.summary, spec.target_metric, *spec.required_elements]


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _strings(item)]
    return []


def public_text(pack: Any) -> str:
    """Every string the Scientist is allowed to see, lower-cased."""
    public = pack.model_dump(
        include={
            "domain_id",
            "task_summary",
            "success_criteria",
            "constraints",
            "resources",
            "allowed_substitutions",
            "scientist_observation",
        }
    )
    return "\n".join(_strings(public)).lower()


def test_system_prompt_sections_come_in_the_seed_order() -> None:
    pack = generate_scenario(3, "ml_benchmark", "medium")
    prompt = build_scientist_system_prompt(pack)
    markers = [
        "You are the Scientist agent in ReplicaLab",
        "negotiate with the Lab Manager the strongest experiment plan",
        f"Domain: {pack.domain_id}",
        f"Task: {pack.task_summary}",
        "Success criteria:",
        "Constraints (hard ones must hold",
        "Available resources:",
        "Allowed substitutions:",
        "Output contract: respond with exactly one JSON object",
        "Allowed action_type values: propose_protocol, revise_protocol, request_info, accept",
        "Field requirements by action_type:",
    ]
    positions = [prompt.index(marker) for marker in markers]
    assert positions == sorted(positions)
    for criterion in pack.success_criteria:
        assert f"- {criterion}" in prompt


def test_system_prompt_renders_constraints_resources_and_substitutions() -> None:
    pack = generate_scenario(5, "finance_trading", "hard")
    prompt = build_scientist_system_prompt(pack)
    for c in pack.constraints:
        line = next(line for line in prompt.splitlines() if line.startswith("- [") and c.description in line)
        assert line.startswith(f"- [{'hard' if c.hard else 'soft'}] {c.kind}:")
        if c.quantity is not None:
            assert c.unit is None or c.unit in line
            assert ("<=" in line) or (">=" in line)
        elif c.term:
            assert f'"{c.term}"' in line
    for r in pack.resources:
        line = next(line for line in prompt.splitlines() if line.startswith(f"- {r.name} ["))
        assert r.status.replace("_", " ") in line
        assert line.endswith("(essential)") == r.essential
    for s in pack.allowed_substitutions:
        assert f"{s.original} → {s.alternative} ({s.condition}; {s.tradeoff})" in prompt


def test_system_prompt_states_the_field_rules_of_each_move() -> None:
    prompt = build_scientist_system_prompt(generate_scenario(0, "math_reasoning", "easy"))
    rules = prompt[prompt.index("Field requirements by action_type:") :]
    assert "propose_protocol / revise_protocol: sample_size >= 1" in rules
    assert "request_info: at least one entry in questions" in rules
    assert "accept: no questions and no protocol fields; rationale is optional" in rules
    contract = prompt[prompt.index("Output contract") :]
    assert all(name in contract for name in ScientistAction.model_fields)


def test_constraint_numbers_render_without_float_noise() -> None:
    obs = make_observation()
    pack = generate_scenario(1, "ml_benchmark", "easy").model_copy(update={"constraints": obs.constraints})
    prompt = build_scientist_system_prompt(pack)
    assert "(<= 10 days)" in prompt
    assert "(>= 12 samples)" in prompt
    assert "(<= 2500.5 credits)" in prompt
    assert '[hard] required_review: Review the code (term: "independent code review")' in prompt


def test_prompts_never_show_the_hidden_reference_or_the_lab() -> None:
    pack = generate_scenario(7, "ml_benchmark", "hard")
    secret_spec = with_secret_reference(pack)
    secret_lab = pack.lab.model_copy(
        update={
            "budget_total": 24680.0,
            "budget_remaining": 13579.0,
            "safety_restrictions": ["SECRET-RESTRICTION"],
        }
    )
    secret = pack.model_copy(update={"hidden_reference_spec": secret_spec, "lab": secret_lab})
    text = build_scientist_system_prompt(secret) + format_scientist_observation(secret.scientist_observation)
    for leak in ("SECRET", "987654", "13579", "24680"):
        assert leak not in text


@pytest.mark.parametrize("template", TEMPLATES)
def test_no_hidden_string_appears_for_many_scenarios(template: str) -> None:
    for seed in range(60):
        for difficulty in DIFFICULTIES:
            pack = generate_scenario(seed, template, difficulty)
            text = (
                build_scientist_system_prompt(pack)
                + "\n"
                + format_scientist_observation(pack.scientist_observation)
            ).lower()
            public = public_text(pack)
            for hidden in hidden_strings(pack):
                if hidden.lower() not in public:  # some elements are public by design
                    assert hidden.lower() not in text, (pack.scenario_id, hidden)


def test_observation_sections_in_order_for_a_fresh_negotiation() -> None:
    obs = make_observation(round_number=0)
    text = format_scientist_observation(obs)
    markers = [
        "Round 0 of 6",
        "Title: Sparse Attention Matches Dense Baselines",
        "Hypothesis:",
        "Method:",
        "Key finding:",
        "Goal: Reproduce the accuracy claim.",
        "No conversation history yet",
        "No protocol has been proposed yet",
        "ScientistAction keys: action_type, sample_size",
        "Allowed action_type values: propose_protocol, revise_protocol, request_info, accept",
        "Respond with exactly one JSON object",
    ]
    positions = [text.index(marker) for marker in markers]
    assert positions == sorted(positions)
    assert text.startswith("Round 0 of 6")
    assert text.rstrip().endswith("and nothing else.")


def test_observation_renders_history_and_protocol() -> None:
    obs = make_observation(
        round_number=2,
        current_protocol=a_protocol(),
        conversation_history=[
            ConversationEntry(
                role="scientist", message="Proposing.", round_number=1, action_type="propose_protocol"
            ),
            lab_entry("reject", "The GPU cluster is booked."),
        ],
    )
    text = format_scientist_observation(obs)
    assert text.startswith("Round 2 of 6")
    assert "round 1, scientist (propose_protocol): Proposing." in text
    assert "round 1, lab_manager (reject): The GPU cluster is booked." in text
    assert "- sample_size: 30" in text
    assert "- required_equipment: GPU cluster" in text
    assert "No protocol has been proposed yet" not in text
    assert "No conversation history yet" not in text
    assert text.index("Conversation history:") < text.index("Current protocol:")
