"""What an LLM Scientist reads: its standing brief (system prompt) and each turn's message.

An LLM Scientist sees only what a human scientist would: the paper, the public lab brief and the
conversation. The builders therefore read the public parts of a scenario and never its hidden
reference or the lab's private numbers. A turn's message fits a character budget: the oldest
conversation entries go first, and the output contract and the latest reply always survive.
"""

from __future__ import annotations

from replicalab.agents.prompt_parts import (
    MAX_PROMPT_CHARS,
    MIN_PROMPT_CHARS,
    TurnMessage,
    bullets,
    check_prompt_chars,
    describe_constraint,
    describe_entry,
    describe_resource,
    latest_entry,
    protocol_section,
)
from replicalab.agents.scoring_rules import scoring_rules
from replicalab.models import Candidates, Paper, ScientistAction, ScientistActionType, ScientistObservation
from replicalab.scenarios.types import NormalizedScenarioPack

__all__ = [
    "MAX_PROMPT_CHARS",
    "MIN_PROMPT_CHARS",
    "SCHEMA_REMINDER",
    "build_scientist_system_prompt",
    "format_scientist_observation",
]

_CLOSING_INSTRUCTION = "Respond with exactly one JSON object (a ScientistAction) and nothing else."

_ACTION_FIELDS = tuple(ScientistAction.model_fields)
_ACTION_TYPES = tuple(kind.value for kind in ScientistActionType)
SCHEMA_REMINDER = (
    f"ScientistAction keys: {', '.join(_ACTION_FIELDS)}\n"
    f"Allowed action_type values: {', '.join(_ACTION_TYPES)}"
)
"""The keys and action types of a ScientistAction, repeated in every turn and correction."""


# What the system prompt says about the output, the same in every scenario: written once.
_OUTPUT_CONTRACT = "\n\n".join(
    [
        "Output contract: respond with exactly one JSON object and nothing else. Use exactly "
        f"these keys and no others: {', '.join(_ACTION_FIELDS)}. A key that does not apply to "
        'your move keeps its zero value (0, "" or []); list items are non-empty strings.',
        f"Allowed action_type values: {', '.join(_ACTION_TYPES)}",
        "Field requirements by action_type:\n"
        "- propose_protocol / revise_protocol: sample_size >= 1 (samples per arm), "
        "duration_days >= 1, a non-empty technique and a non-empty rationale; controls, "
        "elements (the study's method elements the plan keeps, named from the candidate list), "
        "required_equipment and required_reagents describe the plan; questions must be empty.\n"
        "- request_info: at least one entry in questions; sample_size, controls, technique, "
        "elements, duration_days, required_equipment and required_reagents stay empty; "
        "rationale is optional.\n"
        "- accept: no questions and no protocol fields; rationale is optional. Accept only once "
        "a protocol is on the table; it ends the negotiation.",
    ]
)


def build_scientist_system_prompt(scenario: NormalizedScenarioPack) -> str:
    """The Scientist's standing brief, built from the public parts of `scenario` only."""
    sections = [
        "You are the Scientist agent in ReplicaLab.",
        "Your job is to negotiate with the Lab Manager the strongest experiment plan that is "
        "still feasible in this lab: keep the paper's claim testable, respect the constraints, "
        "and ask only for resources the lab lists.",
        f"Domain: {scenario.domain_id}",
        f"Task: {scenario.task_summary}",
        bullets("Success criteria:", scenario.success_criteria),
        bullets(
            "Constraints (hard ones must hold; breaking a soft one costs a small deduction):",
            [describe_constraint(c) for c in scenario.constraints],
        ),
        bullets("Available resources:", [describe_resource(r) for r in scenario.resources]),
        bullets(
            "Allowed substitutions:",
            [
                f"{s.original} → {s.alternative} ({s.condition}; {s.tradeoff})"
                for s in scenario.allowed_substitutions
            ],
        ),
        _OUTPUT_CONTRACT,
        scoring_rules(scenario),
    ]
    return "\n\n".join(sections)


CANDIDATE_SEPARATOR = " | "


def candidates_section(candidates: Candidates) -> str:
    """The public candidate lists, as the structured observation's slots list them: the text
    prompt carries the same choices, so a text reader and a structured one see the same game."""
    separator = CANDIDATE_SEPARATOR
    return (
        "Candidates (what the study could have done; the method says which it did):\n"
        f"- techniques: {separator.join(candidates.techniques) or 'none'}\n"
        f"- elements: {separator.join(candidates.elements) or 'none'}\n"
        f"- controls: {separator.join(candidates.controls) or 'none'}"
    )


def _sample_size(paper: Paper) -> str:
    n, unit = paper.reported_sample_size, paper.sample_unit
    if n is None:
        return "none"
    return f"{n} {unit.plural if n != 1 else unit.singular}" if unit is not None else str(n)


def _protocols(obs: ScientistObservation) -> str:
    """The protocol on the table, and the Lab Manager's counter-proposal when there is one: the
    plan `accept` adopts, each with the lab's price of it."""
    current = protocol_section(obs.current_protocol)
    if obs.current_protocol is not None and obs.quoted_cost is not None:
        current += f"\n- lab's estimated cost: {obs.quoted_cost:g} credits"
    if obs.suggested_protocol is None:
        return current
    suggested = protocol_section(
        obs.suggested_protocol,
        "Suggested protocol (the Lab Manager's counter-proposal: accept adopts this one, not yours)",
    )
    if obs.suggested_cost is not None:
        suggested += f"\n- lab's estimated cost: {obs.suggested_cost:g} credits"
    return f"{current}\n{suggested}"


def format_scientist_observation(obs: ScientistObservation, max_chars: int = MAX_PROMPT_CHARS) -> str:
    """One turn's user message: round, paper, conversation, protocol, schema, instruction.

    At most `max_chars` long, shortened as `prompt_parts` says: the oldest conversation entries
    go first, then the paper, the protocol and the latest Lab Manager reply are cut in their
    middle; the output contract (schema reminder and closing instruction) is never cut.
    """
    check_prompt_chars(max_chars)
    paper = obs.paper
    brief = (
        f"Paper:\nTitle: {paper.title}\nHypothesis: {paper.hypothesis}\nMethod: {paper.method}\n"
        f"Key finding: {paper.key_finding}\nReported sample size: {_sample_size(paper)}\n"
        f"Reported effect size: {paper.reported_effect_size or 'none'}\n"
        f"Goal: {obs.experiment_goal}\n{candidates_section(obs.candidates)}"
    )
    message = TurnMessage(
        head=f"Round {obs.round_number} of {obs.max_rounds}",
        brief=brief,
        entries=[describe_entry(e) for e in obs.conversation_history],
        latest=latest_entry(obs.conversation_history, "lab_manager"),
        current=_protocols(obs),
        contract=(SCHEMA_REMINDER, _CLOSING_INSTRUCTION),
    )
    return message.fitted(max_chars)
