"""The one interface every seat implements, Scientist or Lab Manager, whatever plays it.

A seat reads the `Episode` it plays in and returns its move: a `ScientistAction`, a
`LabManagerAction`, raw model text (the episode parses it and records a parser error as a
refused move), or an `ActionError` for a move it could not make (recorded as refused too). A
`Policy` returns its move at once; an `AsyncPolicy` awaits it (a served model's reply). `Seat`
names either; every runner backend takes a `SeatFactory` per seat. `reset(seed)` and `stats()`
are optional: the runner calls `reset` before each episode and sums the counters `stats` returns.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from replicalab.episode import Episode
from replicalab.play import Move

__all__ = [
    "LAB_MANAGER_PREFIX",
    "AsyncPolicy",
    "Move",
    "Policy",
    "Seat",
    "SeatFactory",
    "policy_stats",
    "reset_policy",
    "seat_stats",
]


@runtime_checkable
class Policy(Protocol):
    """One seat at the table. Optional methods: `reset(seed: int)`, `stats() -> dict`."""

    name: str  # tags the episode id in logs, e.g. "baseline"

    def act(self, episode: Episode) -> Move: ...


class AsyncPolicy(Protocol):
    """A seat whose moves take time (a model call): `act` is a coroutine."""

    name: str

    def act(self, episode: Episode) -> Awaitable[Move]: ...


Seat = Policy | AsyncPolicy
SeatFactory = Callable[[], Seat]


def reset_policy(policy: Policy, seed: int) -> None:
    """Call the policy's optional `reset(seed)`."""
    reset = getattr(policy, "reset", None)
    if callable(reset):
        reset(seed)


def policy_stats(policy: Seat) -> dict[str, float]:
    """The policy's optional `stats()`, or nothing."""
    stats = getattr(policy, "stats", None)
    return dict(stats()) if callable(stats) else {}


LAB_MANAGER_PREFIX = "lab_manager_"
"""Before each of the Lab Manager seat's counters, so a model in both seats counts twice apart."""


def seat_stats(scientist: Seat, lab_manager: Seat) -> dict[str, float]:
    """Both seats' counters of one episode: the Scientist's by their names, the Lab Manager's
    with `LAB_MANAGER_PREFIX`."""
    stats = policy_stats(scientist)
    for key, value in policy_stats(lab_manager).items():
        stats[LAB_MANAGER_PREFIX + key] = value
    return stats
