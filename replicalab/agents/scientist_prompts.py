"""What an LLM Scientist reads: its standing brief (system prompt) and each turn's message.

An LLM Scientist sees only what a human scientist would: the paper, the public lab brief and the
conversation. The builders therefore read the public parts of a scenario and never its hidden
reference or the lab's private numbers. A turn's message fits a character budget: the oldest
conversation entries go first, and the output contract and the latest reply always survive.
"""

from __future__ import annotations

from collections.abc import Iterable

from replicalab.models import (
    Constraint,
    ConversationEntry,
    Protocol,
    ResourceItem,
    ScientistAction,
    ScientistActionType,
    ScientistObservation,
)
from replicalab.scenarios.types import NormalizedScenarioPack

MAX_PROMPT_CHARS = 60_000
"""Longest user message `format_scientist_observation` writes unless told otherwise (the text
env's prompt space holds no more)."""
MIN_PROMPT_CHARS = 2_000
"""Shortest budget a user message can be fitted into: the output contract, the round line and
a little of every other section."""
_MIN_SECTION_CHARS = 200  # what a section cut to fit the budget keeps at least
_CUT_NOTE = " [... {} characters cut to fit the prompt ...] "
_CLOSING_INSTRUCTION = "Respond with exactly one JSON object (a ScientistAction) and nothing else."

_ACTION_FIELDS = tuple(ScientistAction.model_fields)
_ACTION_TYPES = tuple(kind.value for kind in ScientistActionType)
SCHEMA_REMINDER = (
    f"ScientistAction keys: {', '.join(_ACTION_FIELDS)}\n"
    f"Allowed action_type values: {', '.join(_ACTION_TYPES)}"
)
"""The keys and action types of a ScientistAction, repeated in every turn and correction."""


def build_scientist_system_prompt(scenario: NormalizedScenarioPack) -> str:
    """The Scientist's standing brief, built from the public parts of `scenario` only."""
    sections = [
        "You are the Scientist agent in ReplicaLab.",
        "Your job is to negotiate with the Lab Manager the strongest experiment plan that is "
        "still feasible in this lab: keep the paper's claim testable, respect the constraints, "
        "and ask only for resources the lab lists.",
        f"Domain: {scenario.domain_id}",
        f"Task: {scenario.task_summary}",
        _bullets("Success criteria:", scenario.success_criteria),
        _bullets(
            "Constraints (hard ones must hold; breaking a soft one costs a small deduction):",
            [_describe_constraint(c) for c in scenario.constraints],
        ),
        _bullets("Available resources:", [_describe_resource(r) for r in scenario.resources]),
        _bullets(
            "Allowed substitutions:",
            [
                f"{s.original} → {s.alternative} ({s.condition}; {s.tradeoff})"
                for s in scenario.allowed_substitutions
            ],
        ),
        "Output contract: respond with exactly one JSON object and nothing else. Use exactly "
        f"these keys and no others: {', '.join(_ACTION_FIELDS)}. A key that does not apply to "
        'your move keeps its zero value (0, "" or []); list items are non-empty strings.',
        f"Allowed action_type values: {', '.join(_ACTION_TYPES)}",
        "Field requirements by action_type:\n"
        "- propose_protocol / revise_protocol: sample_size >= 1, a non-empty technique and a "
        "non-empty rationale; controls, duration_days, required_equipment and "
        "required_reagents describe the plan; questions must be empty.\n"
        "- request_info: at least one entry in questions; sample_size, controls, technique, "
        "duration_days, required_equipment and required_reagents stay empty; rationale is "
        "optional.\n"
        "- accept: no questions and no protocol fields; rationale is optional. Accept only once "
        "a protocol is on the table; it ends the negotiation.",
    ]
    return "\n\n".join(sections)


def format_scientist_observation(obs: ScientistObservation, max_chars: int = MAX_PROMPT_CHARS) -> str:
    """One turn's user message: round, paper, conversation, protocol, schema, instruction.

    At most `max_chars` long. A longer message loses its oldest conversation entries first (a
    bullet says how many); if that is not enough, the paper, then the current protocol, then the
    latest Lab Manager reply are cut in their middle. The output contract (schema reminder and
    closing instruction) is never cut, and the latest reply is the last entry to go.
    """
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < MIN_PROMPT_CHARS:
        raise ValueError(f"max_chars: must be an int of at least {MIN_PROMPT_CHARS}, got {max_chars!r}")
    paper = obs.paper
    head = f"Round {obs.round_number} of {obs.max_rounds}"
    brief = (
        f"Paper:\nTitle: {paper.title}\nHypothesis: {paper.hypothesis}\nMethod: {paper.method}\n"
        f"Key finding: {paper.key_finding}\nGoal: {obs.experiment_goal}"
    )
    entries = [_describe_entry(e) for e in obs.conversation_history]
    current = "No protocol has been proposed yet."
    if obs.current_protocol is not None:
        current = _describe_protocol(obs.current_protocol)
    text = _observation_text(head, brief, entries, 0, current)
    if len(text) <= max_chars:
        return text
    latest = max((i for i, e in enumerate(obs.conversation_history) if e.role == "lab_manager"), default=None)
    return _shortened(head, brief, entries, latest, current, max_chars)


def _observation_text(head: str, brief: str, entries: list[str], omitted: int, current: str) -> str:
    """The user message from its parts; `omitted` older entries are left out, and said to be."""
    if omitted:
        entries = [f"({omitted} older entries omitted to fit the prompt)", *entries]
    history = _bullets("Conversation history:", entries) if entries else "No conversation history yet."
    return "\n\n".join([head, brief, history, current, SCHEMA_REMINDER, _CLOSING_INSTRUCTION])


def _shortened(
    head: str, brief: str, entries: list[str], latest: int | None, current: str, budget: int
) -> str:
    """`format_scientist_observation` over `budget`, shortened as it says (`latest` indexes the
    latest Lab Manager reply among `entries`, if any)."""
    # What is over with every entry and the omission note at its longest; each dropped entry
    # then saves its own bullet line.
    over = len(_observation_text(head, brief, entries, len(entries), current)) - budget
    kept = []
    for i, entry in enumerate(entries):
        if over > 0 and i != latest:
            over -= len(entry) + len("\n- ")
        else:
            kept.append(entry)
    omitted = len(entries) - len(kept)
    parts = [brief, current, *kept]  # when still over, only the latest reply is left in `kept`
    for i, part in enumerate(parts):
        if over <= 0:
            break
        cut = _cut_middle(part, max(len(part) - over, _MIN_SECTION_CHARS))
        over -= len(part) - len(cut)
        parts[i] = cut
    return _observation_text(head, parts[0], parts[2:], omitted, parts[1])


def _cut_middle(text: str, size: int) -> str:
    """`text` in at most `size` characters (given room for the note): its start and its end
    around a note of how much was cut."""
    if len(text) <= size:
        return text
    keep = size - len(_CUT_NOTE.format(len(text)))  # the count has at most as many digits
    return text[: keep - keep // 2] + _CUT_NOTE.format(len(text) - keep) + text[len(text) - keep // 2 :]


def _bullets(title: str, lines: Iterable[str]) -> str:
    body = "\n".join(f"- {line}" for line in lines)
    return f"{title}\n{body or '- none'}"


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"


def _describe_constraint(c: Constraint) -> str:
    text = f"[{'hard' if c.hard else 'soft'}] {c.kind}: {c.description}"
    if c.quantity is not None:
        comparator = c.comparator or ("<=" if c.kind.startswith("max") else ">=")
        return f"{text} ({comparator} {_number(c.quantity)}{f' {c.unit}' if c.unit else ''})"
    if c.term:
        return f'{text} (term: "{c.term}")'
    return text


def _describe_resource(item: ResourceItem) -> str:
    essential = " (essential)" if item.essential else ""
    return f"{item.name} [{item.kind}]: {item.status.replace('_', ' ')}{essential}"


def _describe_entry(entry: ConversationEntry) -> str:
    kind = f" ({entry.action_type})" if entry.action_type else ""
    return f"round {entry.round_number}, {entry.role}{kind}: {entry.message}"


def _describe_protocol(protocol: Protocol) -> str:
    def listed(items: list[str]) -> str:
        return "; ".join(items) or "none"

    return (
        "Current protocol:\n"
        f"- technique: {protocol.technique or 'none'}\n"
        f"- sample_size: {protocol.sample_size}\n"
        f"- duration_days: {protocol.duration_days}\n"
        f"- controls: {listed(protocol.controls)}\n"
        f"- required_equipment: {listed(protocol.required_equipment)}\n"
        f"- required_reagents: {listed(protocol.required_reagents)}\n"
        f"- rationale: {protocol.rationale or 'none'}"
    )
