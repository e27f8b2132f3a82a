"""What both agents' prompts are made of: the plan, the rules and the conversation as text, and a
turn's message fitted to a character budget.

A turn's message is a head (the round), a brief, the conversation, the protocol on the table and
the output contract. Over budget, the oldest conversation entries go first (a bullet says how
many); if that is not enough, the brief, then the protocol, then the other agent's latest reply
are cut in their middle. The head and the output contract are never cut, and the other agent's
latest reply is the last entry to go, so a model always knows what it answers and how.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from replicalab.models import Constraint, ConversationEntry, Protocol, ResourceItem

MAX_PROMPT_CHARS = 60_000
"""Longest user message the formatters write unless told otherwise (the text env's prompt space
holds no more)."""
MIN_PROMPT_CHARS = 2_000
"""Shortest budget a user message can be fitted into: the output contract, the round line and
a little of every other section."""
_MIN_SECTION_CHARS = 200  # what a section cut to fit the budget keeps at least
_CUT_NOTE = " [... {} characters cut to fit the prompt ...] "


def check_prompt_chars(max_chars: object) -> int:
    """`max_chars` as a budget, or a ValueError naming it."""
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < MIN_PROMPT_CHARS:
        raise ValueError(f"max_chars: must be an int of at least {MIN_PROMPT_CHARS}, got {max_chars!r}")
    return max_chars


class TurnMessage(NamedTuple):
    """One turn's user message, in parts."""

    head: str  # the round line
    brief: str  # what the agent reads before the conversation
    entries: list[str]  # the conversation, oldest first
    latest: int | None  # which entry is the other agent's latest reply, if any
    current: str  # the protocol on the table
    contract: tuple[str, ...]  # the output contract, last

    def fitted(self, max_chars: int) -> str:
        """The message in at most `max_chars` characters, shortened as the module says."""
        text = self._text(self.brief, self.entries, 0, self.current)
        if len(text) <= max_chars:
            return text
        # What is over with every entry and the omission note at its longest; each dropped entry
        # then saves its own bullet line.
        over = len(self._text(self.brief, self.entries, len(self.entries), self.current)) - max_chars
        kept = []
        for i, entry in enumerate(self.entries):
            if over > 0 and i != self.latest:
                over -= len(entry) + len("\n- ")
            else:
                kept.append(entry)
        omitted = len(self.entries) - len(kept)
        parts = [self.brief, self.current, *kept]  # when still over, only the latest reply is kept
        for i, part in enumerate(parts):
            if over <= 0:
                break
            cut = _cut_middle(part, max(len(part) - over, _MIN_SECTION_CHARS))
            over -= len(part) - len(cut)
            parts[i] = cut
        return self._text(parts[0], parts[2:], omitted, parts[1])

    def _text(self, brief: str, entries: list[str], omitted: int, current: str) -> str:
        if omitted:
            entries = [f"({omitted} older entries omitted to fit the prompt)", *entries]
        history = bullets("Conversation history:", entries) if entries else "No conversation history yet."
        return "\n\n".join([self.head, brief, history, current, *self.contract])


def latest_entry(history: list[ConversationEntry], role: str) -> int | None:
    """The index of `role`'s latest entry in `history`, if any."""
    for i in range(len(history) - 1, -1, -1):
        if history[i].role == role:
            return i
    return None


def _cut_middle(text: str, size: int) -> str:
    """`text` in at most `size` characters (given room for the note): its start and its end
    around a note of how much was cut."""
    if len(text) <= size:
        return text
    keep = size - len(_CUT_NOTE.format(len(text)))  # the count has at most as many digits
    return text[: keep - keep // 2] + _CUT_NOTE.format(len(text) - keep) + text[len(text) - keep // 2 :]


def bullets(title: str, lines: Iterable[str]) -> str:
    """`title`, then each line as a bullet (one bullet saying none when there are none)."""
    listed = list(lines)
    if not listed:
        return f"{title}\n- none"
    return f"{title}\n- " + "\n- ".join(listed)


def number(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"


def describe_constraint(c: Constraint) -> str:
    text = f"[{'hard' if c.hard else 'soft'}] {c.kind}: {c.description}"
    if c.quantity is not None:
        comparator = c.comparator or ("<=" if c.kind.startswith("max") else ">=")
        return f"{text} ({comparator} {number(c.quantity)}{f' {c.unit}' if c.unit else ''})"
    if c.term:
        return f'{text} (term: "{c.term}")'
    return text


def describe_resource(item: ResourceItem) -> str:
    essential = " (essential)" if item.essential else ""
    return f"{item.name} [{item.kind}]: {item.status.replace('_', ' ')}{essential}"


def describe_entry(entry: ConversationEntry) -> str:
    kind = f" ({entry.action_type})" if entry.action_type else ""
    return f"round {entry.round_number}, {entry.role}{kind}: {entry.message}"


def protocol_section(protocol: Protocol | None, title: str = "Current protocol") -> str:
    """The protocol as a prompt section, one field a line (the transcript's one-line form is
    `replicalab.episode.describe_protocol`)."""
    if protocol is None:
        return "No protocol has been proposed yet."
    return (
        f"{title}:\n"
        f"- technique: {protocol.technique or 'none'}\n"
        f"- elements: {'; '.join(protocol.elements) or 'none'}\n"
        f"- sample_size: {protocol.sample_size}\n"
        f"- duration_days: {protocol.duration_days}\n"
        f"- controls: {'; '.join(protocol.controls) or 'none'}\n"
        f"- required_equipment: {'; '.join(protocol.required_equipment) or 'none'}\n"
        f"- required_reagents: {'; '.join(protocol.required_reagents) or 'none'}\n"
        f"- rationale: {protocol.rationale or 'none'}"
    )
