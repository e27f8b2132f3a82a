"""How often a client may draw a scenario or build an env: a token bucket per session for its
resets, and one per client address for the sessions it opens and its resets that keep none.

A reset draws a scenario and opening a session builds an env: milliseconds of the one event
loop every session shares, where a step takes a fraction of one. A neighbour's message that
arrives meanwhile waits, so a client resetting (or reconnecting) in a loop would sit in front
of every other client's messages. With a budget of `rate` a second (in bursts of up to `rate`,
at least one), one beyond it waits its turn (`asyncio.sleep`, which holds nothing of the loop),
so a session's resets, and an address's new sessions, take at most `rate` of those a second. A
session sends its WebSocket messages one at a time, so its resets are paced, never refused;
resets queued beyond a whole burst at once (concurrent HTTP requests) get `TOO_MANY_RESETS`.
New sessions are paced whatever their number: `--max-connections` bounds how many wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from replicalab.baselines.server.models import ErrorCode, WireError

_SLACK = 1e-9  # float drift of the refill, so a deficit of exactly one burst is still queued


class ResetBudget:
    def __init__(self, rate: float, clock: Callable[[], float], what: str = "reset (per session)") -> None:
        self.rate = rate
        self.what = what  # what the budget paces, for a refusal's message
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

    def reserve(self, refuse_beyond_burst: bool = True) -> float:
        """Take a token: the seconds to wait before going on, or TOO_MANY_RESETS (taking
        nothing) when a whole burst is queued already and `refuse_beyond_burst`."""
        self._refill()
        if refuse_beyond_burst and self._tokens - 1 < -self.burst - _SLACK:
            raise WireError(
                ErrorCode.TOO_MANY_RESETS,
                f"{self.what}: at most {self.rate:g} a second, and a burst of them is waiting "
                "already; send the next when one is answered",
            )
        self._tokens -= 1
        return max(0.0, -self._tokens / self.rate)

    async def wait(self, refuse_beyond_burst: bool = True) -> None:
        """Hold on until the budget has room (or refuse, as `reserve`)."""
        delay = self.reserve(refuse_beyond_burst)
        if delay > 0:
            await asyncio.sleep(delay)
