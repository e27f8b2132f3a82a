"""A person in a seat: they read what a model reads and type the move a model would send.

Each turn the seat shows the seat's system prompt (once per scenario) and this turn's message,
exactly as an LLM seat (`roles`, as `replicalab evaluate -s llm` sends them) builds them, and
reads a move from the person. What they type goes through the model's own turn (`RetryTurn`:
the seat's parser, and on a parse error the correction a model is sent), with one difference:
a model's turn is lost after its retries (2 by default), a person may retry as often as they
like, so a typo costs nothing but a retry. A move that parses but breaks the rules (an `accept`
with nothing on the table) is the episode's to refuse, and costs the turn as it does a model.

Typing JSON is the contract, but a few shortcuts expand to the same JSON (`SHORTCUTS`), and a
few commands show things again or end the game (`COMMANDS`). The seat reads and writes through
a `Terminal`, so the command line gives it a console and a test may give it a script.
"""

from __future__ import annotations

import json
import sys
from typing import Protocol

from replicalab.agents import MAX_PROMPT_CHARS
from replicalab.agents.lab_manager_prompts import LAB_MANAGER_SCHEMA_REMINDER
from replicalab.agents.scientist_prompts import SCHEMA_REMINDER
from replicalab.baselines.policies.interface import Move
from replicalab.baselines.policies.roles import LabManagerRole, ScientistRole, move_of
from replicalab.envs.codec import decode_lab_manager
from replicalab.envs.spaces import QUESTIONS
from replicalab.episode import Episode
from replicalab.models import Protocol as Plan
from replicalab.moves import LAB_MANAGER, LAB_MANAGER_ACTION_TYPES, SCIENTIST, ActionError
from replicalab.scenarios import NormalizedScenarioPack

__all__ = ["COMMANDS", "SHORTCUTS", "HumanSeat", "Quit", "Terminal", "human_lab_manager", "human_scientist"]

_RETRIES = sys.maxsize  # a person's turn is never lost to a parse error
_QUIT = frozenset({"quit", "exit"})


class Terminal(Protocol):
    """Where a person reads and types."""

    def show(self, title: str, text: str) -> None:
        """Show `text` under `title`, verbatim (no markup)."""

    def read(self, prompt: str) -> str:
        """One line the person typed; `EOFError` when input ends."""


class Quit(Exception):
    """The person ended the game before the episode's end."""


SHORTCUTS = {
    SCIENTIST: (
        ("accept", '{"action_type": "accept"}: agree to the plan on the table (or the suggested one)'),
        ("ask QUESTION", '{"action_type": "request_info", "questions": ["QUESTION"]}'),
        ("ask N", f"ask the N-th of the {len(QUESTIONS)} standard questions (`ask` lists them)"),
        (
            "draft",
            "print a revise_protocol JSON of the plan on the table (a propose skeleton without one) to edit",
        ),
    ),
    LAB_MANAGER: tuple(
        (stance.value.split("_")[0], f"{stance.value} with the grounded check's flags and explanation")
        for stance in LAB_MANAGER_ACTION_TYPES
    ),
}
"""What each seat may type instead of JSON, and the JSON it stands for."""

COMMANDS = (
    ("help", "the keys, the action types, these shortcuts"),
    ("system", "the system prompt again"),
    ("again", "this turn's message again"),
    ("quit", "end the game (nothing is logged)"),
    ("(empty line)", "inside an unfinished JSON object: send it as it is"),
)


class HumanSeat:
    """A person in one seat (`role`'s), reading and typing through `terminal`."""

    def __init__(self, role: ScientistRole | LabManagerRole, terminal: Terminal, name: str = "human") -> None:
        self.role = role
        self.terminal = terminal
        self.name = name
        self._scenario: NormalizedScenarioPack | None = None
        self._system_prompt = ""

    def act(self, episode: Episode) -> Move:
        if episode.scenario is not self._scenario:
            self._scenario = episode.scenario
            self._system_prompt = self.role.system_prompt(episode.scenario)
            self.terminal.show("system prompt", self._system_prompt)
        message = self.role.user_message(episode, MAX_PROMPT_CHARS)
        self.terminal.show(f"your turn: round {episode.round_number} of {episode.max_rounds}", message)
        turn = self.role.start(self._system_prompt, message)
        while True:
            text = self._read_move(episode, message)
            turn.answer(text)
            request = turn.request
            if request is None:
                return move_of(turn)
            self.terminal.show(
                "correction, as a model is sent it (your turn goes on; help lists shortcuts)",
                request[-1]["content"],
            )

    def _read_move(self, episode: Episode, message: str) -> str:
        """The next thing typed that is meant for the parser: JSON (over several lines while its
        braces are open) or a shortcut's JSON; commands are answered here."""
        while True:
            line = self.terminal.read(f"{self.role.agent}> ").strip()
            word, _, rest = line.partition(" ")
            word = word.lower()
            if not line:
                continue
            if word in _QUIT:
                raise Quit
            if word == "help":
                self.terminal.show("help", self._help())
            elif word == "system":
                self.terminal.show("system prompt", self._system_prompt)
            elif word == "again":
                self.terminal.show("this turn's message", message)
            elif line.startswith("{"):
                return self._whole_object(line)
            else:
                shortcut = self._shortcut(episode, word, rest.strip())
                if shortcut is None:
                    return line  # the parser's to judge, as a model's prose would be
                if shortcut:
                    return shortcut

    def _whole_object(self, first: str) -> str:
        """`first` and the lines after it until its braces close, or an empty line sends what
        was typed as it is."""
        lines = [first]
        while _open_braces("\n".join(lines)) > 0:
            line = self.terminal.read("... ")
            if not line.strip():
                break
            lines.append(line)
        return "\n".join(lines)

    def _help(self) -> str:
        reminder = SCHEMA_REMINDER if self.role.agent == SCIENTIST else LAB_MANAGER_SCHEMA_REMINDER
        rows = [*SHORTCUTS[self.role.agent], *COMMANDS]
        width = max(len(name) for name, _ in rows)
        listed = "\n".join(f"  {name.ljust(width)}  {what}" for name, what in rows)
        return f"Type one JSON object (it may span lines), or a shortcut:\n{listed}\n\n{reminder}"

    def _shortcut(self, episode: Episode, word: str, rest: str) -> str | None:
        """The JSON a shortcut stands for; "" for a shortcut that only showed something (or why
        it cannot be taken now); None for what is no shortcut."""
        if self.role.agent == SCIENTIST:
            return self._scientist_shortcut(episode, word, rest)
        stances = {stance.value.split("_")[0]: i for i, stance in enumerate(LAB_MANAGER_ACTION_TYPES)}
        if word not in stances or rest:
            return None
        action = decode_lab_manager(stances[word], episode)
        if isinstance(action, ActionError):
            self.terminal.show("not now", f"{action.message}; type JSON to say it anyway")
            return ""
        return action.model_dump_json()

    def _scientist_shortcut(self, episode: Episode, word: str, rest: str) -> str | None:
        if word == "accept" and not rest:
            return json.dumps({"action_type": "accept"})
        if word == "draft" and not rest:
            self.terminal.show("draft (copy, edit, paste)", _draft(episode.protocol))
            return ""
        if word != "ask":
            return None
        if rest.isdigit() and 1 <= int(rest) <= len(QUESTIONS):
            rest = QUESTIONS[int(rest) - 1]
        if not rest or rest.isdigit():
            listed = "\n".join(f"  {i}. {q}" for i, q in enumerate(QUESTIONS, start=1))
            self.terminal.show("ask what?", f"ask QUESTION, or ask N for one of these:\n{listed}")
            return ""
        return json.dumps({"action_type": "request_info", "questions": [rest]})


def _draft(protocol: Plan | None) -> str:
    """A one-line action to edit: the plan on the table as a revision, or an empty proposal."""
    if protocol is None:
        return json.dumps({"action_type": "propose_protocol", **Plan().model_dump(mode="json")})
    return json.dumps({"action_type": "revise_protocol", **protocol.model_dump(mode="json")})


def _open_braces(text: str) -> int:
    """How many `{` of `text` are still open, braces inside JSON strings not counted."""
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
    return depth


def human_scientist(terminal: Terminal) -> HumanSeat:
    """A person as the Scientist, shown what an LLM Scientist is shown."""
    return HumanSeat(ScientistRole(_RETRIES), terminal)


def human_lab_manager(terminal: Terminal) -> HumanSeat:
    """A person as the Lab Manager, shown what an LLM Lab Manager is shown (the grounded check
    among it)."""
    return HumanSeat(LabManagerRole(_RETRIES), terminal)
