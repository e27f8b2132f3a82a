"""What an LLM Lab Manager reads: its standing brief (system prompt) and each turn's message.

The Lab Manager answers for the lab, so it reads the lab's private facts (budget, what is booked
or out of stock, staff, schedule, safety rules) but never the hidden reference the judge scores
against. Every turn it is also shown the grounded check of the plan on the table, the same check
the reference Lab Manager answers from, and the rules of what it may claim: a flag that
disagrees with the check is a misreport the reward penalises, and the action's own rules (accept
only a feasible plan, reject only an infeasible one, suggest with a whole protocol) are refused
by the parser like any malformed output, and corrected by `call_lab_manager_with_retry`.
"""

from __future__ import annotations

from replicalab.agents.prompt_parts import (
    MAX_PROMPT_CHARS,
    TurnMessage,
    bullets,
    check_prompt_chars,
    describe_constraint,
    describe_entry,
    latest_entry,
    number,
    protocol_section,
)
from replicalab.agents.retry import GenerateFn, RetryMetadata, RetryTurn, run_turn
from replicalab.models import (
    FEASIBILITY_DIMENSIONS,
    AlternativeSuggestion,
    Contract,
    FeasibilityCheckResult,
    LabManagerAction,
    LabManagerActionType,
    LabManagerObservation,
)
from replicalab.parsing import parse_model_output
from replicalab.scenarios.types import NormalizedScenarioPack

__all__ = [
    "LAB_MANAGER_SCHEMA_REMINDER",
    "LabManagerCallResult",
    "build_lab_manager_system_prompt",
    "call_lab_manager_with_retry",
    "format_lab_manager_observation",
    "lab_manager_turn",
    "parse_lab_manager_output",
]

_ACTION_FIELDS = tuple(LabManagerAction.model_fields)
_ACTION_TYPES = tuple(kind.value for kind in LabManagerActionType)
LAB_MANAGER_SCHEMA_REMINDER = (
    f"LabManagerAction keys: {', '.join(_ACTION_FIELDS)}\n"
    f"Allowed action_type values: {', '.join(_ACTION_TYPES)}"
)
"""The keys and action types of a LabManagerAction, repeated in every turn and correction."""
_CLOSING_INSTRUCTION = "Respond with exactly one JSON object (a LabManagerAction) and nothing else."

_CLAIMS = (
    "What you may and may not claim:\n"
    "- Set each flag (protocol_ok, budget_ok, equipment_ok, reagents_ok, schedule_ok, staff_ok, "
    "policy_ok) exactly as the grounded check of this turn reports it. A flag that disagrees "
    "with the check is a misreport, and misreports are penalised.\n"
    "- feasible is true exactly when all seven flags are true.\n"
    "- Never call an item available that the lab lists as booked or out of stock, never offer an "
    "item or a substitute the lab does not list, and never promise budget, staff or days the "
    "lab does not have.\n"
    "- You do not know how the plan will be scored; do not guess at it."
)
_MOVES = (
    "Moves (action_type):\n"
    "- accept: the check says feasible; the Scientist may then accept the plan.\n"
    "- reject: the check says infeasible and nothing the lab can offer fixes it.\n"
    "- suggest_alternative: the check says infeasible and you offer a whole revised protocol in "
    "suggested_protocol (the check's suggested revision, when there is one, passes the lab's "
    "checks as far as it says).\n"
    "- report_feasibility: report the flags and explain, without a verdict (for instance when "
    "nothing is on the table yet, or only the plan itself must change).\n"
    "suggested_protocol is null for every move but suggest_alternative. explanation is a short "
    "text for the Scientist: say what fails and why, in the lab's terms."
)


def build_lab_manager_system_prompt(scenario: NormalizedScenarioPack) -> str:
    """The Lab Manager's standing brief: the lab's facts, its rules, and what it may claim."""
    lab = scenario.lab_manager_observation
    facts = [
        f"budget: {number(lab.budget_remaining)} of {number(lab.budget_total)} credits remain",
        f"staff: {lab.staff_count}",
        f"time limit: {lab.time_limit_days} days",
        f"equipment available: {_listed(lab.equipment_available)}",
        f"equipment booked: {_listed(lab.equipment_booked)}",
        f"reagents in stock: {_listed(lab.reagents_in_stock)}",
        f"reagents out of stock: {_listed(lab.reagents_out_of_stock)}",
    ]
    sections = [
        "You are the Lab Manager agent in ReplicaLab.",
        "A Scientist negotiates an experiment plan with you. You answer for the lab: what its "
        "budget, equipment, reagents, schedule, staff and safety policy allow. The Scientist "
        "sees only what you tell it.",
        f"Domain: {scenario.domain_id}",
        f"Task: {scenario.task_summary}",
        bullets("The lab:", facts),
        bullets("Safety restrictions:", lab.safety_restrictions),
        bullets(
            "The rules every plan must keep (hard ones must hold):",
            [describe_constraint(c) for c in scenario.constraints],
        ),
        bullets(
            "Substitutions the lab allows:",
            [
                f"{s.original} → {s.alternative} ({s.condition}; {s.tradeoff})"
                for s in scenario.allowed_substitutions
            ],
        ),
        _CLAIMS,
        _MOVES,
        "Output contract: respond with exactly one JSON object and nothing else. Use exactly "
        f"these keys and no others: {', '.join(_ACTION_FIELDS)}.",
        f"Allowed action_type values: {', '.join(_ACTION_TYPES)}",
    ]
    return "\n\n".join(sections)


def format_lab_manager_observation(obs: LabManagerObservation, max_chars: int = MAX_PROMPT_CHARS) -> str:
    """One turn's user message: round, the grounded check, conversation, protocol, schema.

    At most `max_chars` long, shortened as `prompt_parts` says (the latest Scientist message is
    the last entry to go; the output contract is never cut).
    """
    check_prompt_chars(max_chars)
    message = TurnMessage(
        head=f"Round {obs.round_number} of {obs.max_rounds}",
        brief=_describe_check(obs.feasibility, obs.suggestion),
        entries=[describe_entry(e) for e in obs.conversation_history],
        latest=latest_entry(obs.conversation_history, "scientist"),
        current=protocol_section(obs.current_protocol),
        contract=(LAB_MANAGER_SCHEMA_REMINDER, _CLOSING_INSTRUCTION),
    )
    return message.fitted(max_chars)


def parse_lab_manager_output(raw_text: str) -> LabManagerAction:
    """Extract and validate the one LabManagerAction in `raw_text` (the parser both agents' text goes
    through); refused output raises `LabManagerOutputParseError`."""
    return parse_model_output(raw_text, LabManagerAction)


class LabManagerCallResult(Contract):
    """The validated action and how many attempts it took."""

    action: LabManagerAction
    metadata: RetryMetadata


def lab_manager_turn(
    system_prompt: str, observation: LabManagerObservation | str, max_retries: int = 2
) -> RetryTurn[LabManagerAction]:
    """The Lab Manager's model turn, for a caller that advances it itself; `observation` may
    already be formatted."""
    user = observation if isinstance(observation, str) else format_lab_manager_observation(observation)
    return RetryTurn(
        system_prompt,
        user,
        parse_lab_manager_output,
        action_name="LabManagerAction",
        schema_reminder=LAB_MANAGER_SCHEMA_REMINDER,
        max_retries=max_retries,
    )


def call_lab_manager_with_retry(
    generate_fn: GenerateFn,
    system_prompt: str,
    observation: LabManagerObservation | str,
    max_retries: int = 2,
) -> LabManagerCallResult:
    """Ask the model for an answer, feeding parse errors back; at most 1 + max_retries calls.

    `observation` may already be formatted. After the last failed attempt the last
    `LabManagerOutputParseError` is raised.
    """
    action, metadata = run_turn(lab_manager_turn(system_prompt, observation, max_retries), generate_fn)
    return LabManagerCallResult(action=action, metadata=metadata)


def _describe_check(check: FeasibilityCheckResult | None, suggestion: AlternativeSuggestion | None) -> str:
    if check is None:
        return "Grounded check: nothing is on the table yet (report_feasibility with every flag false)."
    verdict = "feasible" if check.feasible else "NOT feasible"
    lines = [
        f"Grounded check of the protocol on the table: {verdict} "
        f"(estimated cost {number(check.estimated_cost)} credits, {check.required_staff} staff).",
    ]
    for dim in FEASIBILITY_DIMENSIONS:
        result = getattr(check, dim)
        lines.append(f"- {dim}_ok: {'true' if result.ok else 'false: ' + '; '.join(result.reasons)}")
    for item, options in check.substitution_options.items():
        lines.append(f"- the lab can offer for {item}: {', '.join(options)}")
    if suggestion is not None:
        remaining = ", ".join(suggestion.remaining_failures) or "none"
        lines.append(protocol_section(suggestion.revised_protocol, "Suggested revision"))
        lines.append(f"Still failing after the suggested revision: {remaining}.")
    return "\n".join(lines)


def _listed(items: list[str]) -> str:
    return "; ".join(items) or "none"
