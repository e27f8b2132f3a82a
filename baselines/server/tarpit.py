"""The cool-down of an address that floods: its new connections are held unread, then closed.

Refusing a flooding connection at once is cheap for the server but cheaper still for its client:
a client that reconnects the moment it is refused or dropped turns each refusal into another
connection to accept and drop, thousands a second, work of the event loop's that no budget is
charged with (and, on a small machine, the client's own reconnecting takes CPU from the server
too). So once an address floods (it opens more connections than its sessions and queue could
use, is `max_overdraft_s` over its budget, asks past a full queue, or pings faster than a
keep-alive or leaves its pongs unread), it cools down for `flood_cooldown_s`: every new connection of the address's is held
(its reading paused: nothing it sends is parsed), answered nothing, and closed when the
cool-down ends. A client that waits for an answer waits that long instead of spinning; one that
keeps connecting piles up connections that cost the server a descriptor each, and that the
connection cap drops first when it needs room (they hold no session; and a flooding address's
connection never makes room for itself). The address's connections opened
before are served as before; once the cool-down ends the address is served as any other, and
nothing of it is remembered.

The held connections are closed `RELEASE_BATCH` at a time, one batch per turn of the event loop,
so a thousand of them (and the reconnections that follow) never hold a neighbour's message up
all at once. The tarpit runs on the server's event loop only.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from replicalab.baselines.server import events

RELEASE_BATCH = 32
"""Held connections closed per turn of the event loop when a cool-down ends: closing one, and
accepting the reconnection that usually follows, takes some tens of microseconds, so a batch
delays a neighbour's message by a millisecond or two at most."""


class Held(Protocol):
    """A connection the tarpit holds: it reads nothing until `drop` closes it."""

    def drop(self) -> None: ...


class Tarpit:
    """The addresses cooling down, each for `cooldown_s` seconds from the flood that began it."""

    def __init__(self, cooldown_s: float) -> None:
        self.cooldown_s = cooldown_s
        self._cooling: dict[str, dict[Held, None]] = {}  # the connections held, oldest first

    def cooling(self, address: str) -> bool:
        """Whether `address` is cooling down: its new connections are held."""
        return address in self._cooling

    def holding(self, address: str) -> int:
        """How many of `address`'s connections are held now."""
        return len(self._cooling.get(address, ()))

    def cool_down(self, address: str, reason: str) -> None:
        """Begin `address`'s cool-down, because of `reason`, unless it is cooling down already."""
        if address not in self._cooling:
            asyncio.get_running_loop().call_later(self.cooldown_s, self._end, address)
            self._cooling[address] = {}
            events.event("cooldown_started", reason=reason, client=address, seconds=self.cooldown_s)

    def hold(self, address: str, connection: Held) -> None:
        """Keep `connection` (its reading paused) until `address`'s cool-down ends."""
        self._cooling[address][connection] = None

    def forget(self, address: str, connection: Held) -> None:
        """`connection` closed before its cool-down ended (the connection cap, or shutdown)."""
        self._cooling.get(address, {}).pop(connection, None)

    def _end(self, address: str) -> None:
        held = list(self._cooling.pop(address))
        events.event("cooldown_ended", logging.DEBUG, client=address, held=len(held))
        _release(held)


def _release(held: list[Held]) -> None:
    """Close `held`: a batch now, the rest on the loop's next turns."""
    for connection in held[:RELEASE_BATCH]:
        connection.drop()
    if len(held) > RELEASE_BATCH:
        asyncio.get_running_loop().call_soon(_release, held[RELEASE_BATCH:])
