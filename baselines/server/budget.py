"""How often a session may reset: a token bucket per session (and one per client address for the
resets that keep no session).

A reset draws a scenario: milliseconds of the one event loop every session shares, where a
step takes a fraction of one. A neighbour's message that arrives during a reset waits for it,
so a client resetting in a loop would sit in front of every other client's messages. With a
budget of `rate` resets a second (in bursts of up to `rate`, at least one), a reset beyond it
waits its turn (`asyncio.sleep`, which holds nothing of the loop), so one session's resets take
at most `rate` scenario draws a second of the loop. A session sends its WebSocket messages one
at a time, so it is paced and never refused; a client that queues more than a whole burst of
resets at once (concurrent HTTP requests) gets `TOO_MANY_RESETS` for the excess.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from replicalab.baselines.server.models import ErrorCode, WireError

_SLACK = 1e-9  # float drift of the refill, so a deficit of exactly one burst is still queued


class ResetBudget:
    def __init__(self, rate: float, clock: Callable[[], float]) -> None:
        self.rate = rate
        self.burst = max(1.0, rate)
        self.clock = clock
        self._tokens = self.burst
        self._stamp = clock()

    def _refill(self) -> None:
        now = self.clock()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    @property
    def full(self) -> bool:
        """Whether the bucket is back to a whole burst (nothing to remember of its resets)."""
        self._refill()
        return self._tokens >= self.burst

    def reserve(self) -> float:
        """Take a reset's token: the seconds the reset must wait before it runs, or
        TOO_MANY_RESETS (taking nothing) when a whole burst of resets is queued already."""
        self._refill()
        if self._tokens - 1 < -self.burst - _SLACK:
            raise WireError(
                ErrorCode.TOO_MANY_RESETS,
                f"reset: at most {self.rate:g} a second per session, and a burst of them is "
                "waiting already; send the next when one is answered",
            )
        self._tokens -= 1
        return max(0.0, -self._tokens / self.rate)

    async def wait(self) -> None:
        """Hold a reset until the budget has room for it (or refuse it, as `reserve`)."""
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)
