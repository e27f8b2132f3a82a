"""The one game loop: ask the seat whose turn it is for a move, step the episode, repeat.

Every front that plays more than one move drives the episode through here: the evaluation
runner and the rollouts play whole episodes; the Gymnasium env and the chat episode play the
Scientist's move and then the Lab Manager's reply (`until=SCIENTIST`). A seat is anything with a
move for an episode: an object whose `act(episode)` returns it, or such a function. A move is an
action, model text for the episode's parser, or an `ActionError` the episode records as refused.

`play` and `play_async` share one driver (`_drive`), a generator that hands out a move still to
be awaited and takes back its value, so the loop is written once: `play` refuses a seat whose
move must be awaited, `play_async` awaits it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Protocol

from replicalab.episode import Episode, StepOutcome
from replicalab.models import LabManagerAction, ScientistAction
from replicalab.moves import SCIENTIST, ActionError, coerce_action

__all__ = ["Given", "Move", "Seat", "play", "play_async"]

Move = ScientistAction | LabManagerAction | ActionError | str
"""What a seat returns; a string is model text for the episode's parser, an `ActionError` a
move the seat could not make (the episode records it as refused)."""


class _Acts(Protocol):
    def act(self, episode: Episode) -> Any: ...


Seat = _Acts | Callable[[Episode], Any]
"""Anything with a move for an episode: `seat.act(episode)`, or `seat(episode)`; the move may
be awaitable (a served model's), for `play_async`."""


@dataclass(frozen=True, slots=True)
class Given:
    """A seat whose move is already known: the one a front was stepped with."""

    move: Move

    def act(self, episode: Episode) -> Move:
        return self.move


def play(
    episode: Episode, scientist: Seat, lab_manager: Seat, *, until: str | None = None
) -> list[StepOutcome]:
    """Play `episode` until it is done; with `until`, play one move (an episode already over
    refuses it) and then on until it is done or `until`'s turn. What each step paid, in order.
    A seat whose move must be awaited needs `play_async`."""
    driver = _drive(episode, scientist, lab_manager, until)
    try:
        pending = next(driver)
    except StopIteration as finished:
        outcomes: list[StepOutcome] = finished.value
        return outcomes
    driver.close()  # nothing was stepped for the awaited move
    _close(pending)
    raise TypeError(f"{episode.agent_selection}: a seat whose move must be awaited needs play_async")


async def play_async(
    episode: Episode, scientist: Seat, lab_manager: Seat, *, until: str | None = None
) -> list[StepOutcome]:
    """`play`, awaiting the moves that take time."""
    driver = _drive(episode, scientist, lab_manager, until)
    try:
        pending = next(driver)
        while True:
            pending = driver.send(await pending)
    except StopIteration as finished:
        outcomes: list[StepOutcome] = finished.value
        return outcomes


def _drive(
    episode: Episode, scientist: Seat, lab_manager: Seat, until: str | None
) -> Generator[Awaitable[Any], Any, list[StepOutcome]]:
    """The loop: yields a move still to be awaited and is sent its value."""
    outcomes: list[StepOutcome] = []
    while _goes_on(episode, outcomes, until):
        agent = episode.agent_selection
        seat = scientist if agent == SCIENTIST else lab_manager
        move = seat.act(episode) if hasattr(seat, "act") else seat(episode)
        if inspect.isawaitable(move):
            move = yield move
        outcomes.append(episode.step(coerce_action(agent, move)))
    return outcomes


def _goes_on(episode: Episode, outcomes: list[StepOutcome], until: str | None) -> bool:
    if until is None:
        return not episode.done
    return not outcomes or not (episode.done or episode.agent_selection == until)


def _close(pending: Awaitable[Any]) -> None:
    """Close a coroutine that will never be awaited, so Python does not warn about it."""
    close = getattr(pending, "close", None)
    if callable(close):
        close()
