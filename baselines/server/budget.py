"""How much of the server one client address may use: a budget of event-loop time per address,
charged with what each of its messages cost.

Every session shares one event loop, and whatever a message makes the server do (draw a
scenario, build an env for a new config or session, parse a text move, step) holds the loop for
that long: a neighbour's message that arrives meanwhile waits. So each client address has one
budget, `rate` seconds of loop time a second, and every
piece of work done for it is timed as it runs and charged after it. While an address is over
its budget its next piece of work waits its turn (`asyncio.sleep`, which holds nothing of the
loop); its turns are taken one at a time, first come first served, and it may run ahead of
its budget by `BURST_S` only, so however many turns it has queued, they never run back to back
for longer than that: a neighbour's message waits behind one of them at most. Holding more
sessions, or sending heavier messages, buys an address no more of the loop than one client gets.

Each session has one message in hand at a time, so what waits is bounded by the sessions an
address holds; work that holds no session yet (a WebSocket handshake waiting for its session,
an HTTP request) queues only `queue_limit` deep per address and is refused beyond it with
`TOO_MANY_REQUESTS`. A wait ends early, refused with `SHUTTING_DOWN`, once `stopping` is set
(the server is stopping, or the connection that waits is gone) or when the server's drain
cancels it: the request ends quietly, never as a fault in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

from replicalab.baselines.server.models import ErrorCode, WireError

BURST_S = 0.005
"""The loop time a fresh or idle address may use at once: room for a handshake, a session's
opening and a reset, whatever its rate; beyond it the address's turns are spaced by its rate."""


class ClientBudget:
    """One address's budget: `rate` seconds of loop time per second, timed with `clock`."""

    def __init__(self, rate: float, clock: Callable[[], float] = time.perf_counter) -> None:
        self.rate = rate
        self.burst = BURST_S
        self.clock = clock
        self.balance = self.burst  # seconds of loop time the address may still use now
        self._stamp = clock()
        self._turn = asyncio.Lock()
        self.waiting = 0  # turns asked for and not yet begun

    def _refill(self) -> None:
        now = self.clock()
        self.balance = min(self.burst, self.balance + (now - self._stamp) * self.rate)
        self._stamp = now

    @property
    def idle(self) -> bool:
        """Whether nothing waits and the budget is whole again (nothing to remember of it)."""
        self._refill()
        return not self.waiting and not self._turn.locked() and self.balance >= self.burst

    def delay(self) -> float:
        """Seconds until the budget is no longer overdrawn (0 when it is not)."""
        self._refill()
        return max(0.0, -self.balance / self.rate)

    def charge(self, seconds: float) -> None:
        self._refill()
        self.balance -= seconds

    def full(self, queue_limit: int) -> bool:
        """Whether a turn asked for now would wait behind `queue_limit` turns waiting already."""
        return self.waiting >= queue_limit and (self._turn.locked() or self.delay() > 0)

    @contextlib.asynccontextmanager
    async def turn(
        self, stopping: asyncio.Event | None = None, queue_limit: int | None = None
    ) -> AsyncIterator[None]:
        """Wait for the address's turn, run the block, and charge the time it took. The block
        must not await: its time is the loop's. `queue_limit`: refuse (TOO_MANY_REQUESTS)
        rather than wait behind that many turns of this address already waiting."""
        if queue_limit is not None and self.full(queue_limit):
            raise WireError(
                ErrorCode.TOO_MANY_REQUESTS,
                f"this client address has {self.waiting} requests waiting for its share of the "
                "server already; send the next when one is answered",
            )
        self.waiting += 1
        waiting = True
        try:
            async with self._turn:
                while (delay := self.delay()) > 0:
                    await _sleep(delay, stopping)
                self.waiting, waiting = self.waiting - 1, False
                started = self.clock()
                try:
                    yield
                finally:
                    self.charge(self.clock() - started)
        finally:
            if waiting:
                self.waiting -= 1


async def _sleep(seconds: float, stopping: asyncio.Event | None) -> None:
    """Sleep `seconds`, or refuse with SHUTTING_DOWN as soon as `stopping` is set."""
    stopped = WireError(ErrorCode.SHUTTING_DOWN, "server: stopping, or the connection is gone")
    try:
        if stopping is None:
            await asyncio.sleep(seconds)
            return
        if stopping.is_set():
            raise stopped
        with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
            await asyncio.wait_for(stopping.wait(), seconds)
    except asyncio.CancelledError:  # the server's drain ran out of time for this request
        raise stopped from None
    if stopping.is_set():
        raise stopped
