"""What is particular to one seat when a model plays it: its system prompt, its user message for
the current turn, and its turn (prompt → parse → correct and retry, `replicalab.agents`' loop).

The same roles serve a model behind a blocking `GenerateFn` (`seats.LLMScientist`,
`seats.LLMLabManager`, through `call`) and a served chat model (`chat.ChatPolicy`, which
advances the role's `RetryTurn` itself, awaiting each reply), so a seat's prompts and retry loop
are written once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

from replicalab.agents import (
    GenerateFn,
    RetryMetadata,
    build_scientist_system_prompt,
    format_scientist_observation,
)
from replicalab.agents.lab_manager_prompts import (
    build_lab_manager_system_prompt,
    format_lab_manager_observation,
    lab_manager_turn,
)
from replicalab.agents.retry import RetryTurn, run_turn
from replicalab.agents.scientist_retry import scientist_turn
from replicalab.baselines.policies.interface import Move
from replicalab.episode import Episode
from replicalab.models import LabManagerAction, ScientistAction
from replicalab.moves import LAB_MANAGER, SCIENTIST
from replicalab.parsing import OutputParseError
from replicalab.scenarios import NormalizedScenarioPack

__all__ = ["ChatRole", "LabManagerRole", "RetryingRole", "ScientistRole", "move_of"]


class ChatRole(Protocol):
    """What one seat tells a chat model, and how it reads the answers."""

    agent: str  # the seat: "scientist" or "lab_manager"

    def system_prompt(self, scenario: NormalizedScenarioPack) -> str: ...

    def user_message(self, episode: Episode, max_chars: int) -> str:
        """This turn's observation, in at most `max_chars` characters."""
        ...

    def start(
        self, system_prompt: str, user_message: str
    ) -> RetryTurn[ScientistAction] | RetryTurn[LabManagerAction]:
        """This turn's prompt → parse → retry loop, for the caller to advance with the model's
        replies (`move_of` reads its move)."""
        ...


def move_of(turn: RetryTurn[ScientistAction] | RetryTurn[LabManagerAction]) -> Move:
    """The move of a finished turn: its action, or the model's last text when it never parsed
    (the episode records why)."""
    try:
        return turn.parsed()
    except OutputParseError as error:
        return error.raw_text


class RetryingRole(ABC):
    """What both seats' roles share: the retry budget, a blocking call that advances the seat's
    turn with a `GenerateFn`, and the system prompt of the latest scenario. A runner gives every
    episode a fresh policy but one role, and the rollouts of a GRPO group play one scenario
    object, so the group builds its prompt once."""

    def __init__(self, max_retries: int = 2) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries: must be >= 0, got {max_retries}")
        self.max_retries = max_retries
        self._latest: tuple[NormalizedScenarioPack, str] | None = None  # a scenario, its prompt

    def system_prompt(self, scenario: NormalizedScenarioPack) -> str:
        latest = self._latest
        if latest is None or latest[0] is not scenario:  # a pack is a frozen value: same object, same prompt
            latest = self._latest = (scenario, self.build_system_prompt(scenario))
        return latest[1]

    def call(
        self, generate: GenerateFn, system_prompt: str, user_message: str
    ) -> tuple[ScientistAction | LabManagerAction, RetryMetadata]:
        """The seat's parsed move and how the call went; raises the seat's `OutputParseError`
        when every retry failed to parse."""
        return run_turn(self.start(system_prompt, user_message), generate)

    @abstractmethod
    def build_system_prompt(self, scenario: NormalizedScenarioPack) -> str:
        """The seat's system prompt in `scenario`."""

    @abstractmethod
    def user_message(self, episode: Episode, max_chars: int) -> str:
        """This turn's observation, in at most `max_chars` characters."""

    @abstractmethod
    def start(
        self, system_prompt: str, user_message: str
    ) -> RetryTurn[ScientistAction] | RetryTurn[LabManagerAction]:
        """This turn's prompt → parse → retry loop, for the caller to advance."""


class ScientistRole(RetryingRole):
    """The Scientist's prompts and its retry loop (`scientist_turn`)."""

    agent = SCIENTIST

    def build_system_prompt(self, scenario: NormalizedScenarioPack) -> str:
        return build_scientist_system_prompt(scenario)

    def user_message(self, episode: Episode, max_chars: int) -> str:
        return format_scientist_observation(episode.scientist_observation(), max_chars)

    def start(self, system_prompt: str, user_message: str) -> RetryTurn[ScientistAction]:
        return scientist_turn(system_prompt, user_message, self.max_retries)


class LabManagerRole(RetryingRole):
    """The Lab Manager's prompts (shown the grounded check each turn) and its retry loop
    (`lab_manager_turn`)."""

    agent = LAB_MANAGER

    def build_system_prompt(self, scenario: NormalizedScenarioPack) -> str:
        return build_lab_manager_system_prompt(scenario)

    def user_message(self, episode: Episode, max_chars: int) -> str:
        return format_lab_manager_observation(episode.lab_manager_observation(), max_chars)

    def start(self, system_prompt: str, user_message: str) -> RetryTurn[LabManagerAction]:
        return lab_manager_turn(system_prompt, user_message, self.max_retries)
