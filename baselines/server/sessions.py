"""The server's session table: bounded in count (in all and per client address), unguessable
ids, closed after an idle timeout (a shorter one for a session that never stepped), one budget of
loop time per client address (`budget`) that all of the address's work draws on, and the count
of each address's connections, whose floods cool it down (`tarpit`).

Every session takes one slot of `max_sessions` and owns one `ScientistServerEnv`. An HTTP
session is reached through its id, 256 random bits (`secrets.token_urlsafe`), so no client can
name another's; a WebSocket session is its connection's alone: no id of it is ever sent, and
`get` refuses it. The table runs on the server's event loop only, so it needs no lock.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from replicalab.baselines.server import events
from replicalab.baselines.server.budget import ClientBudget
from replicalab.baselines.server.environment import ScientistServerEnv
from replicalab.baselines.server.models import ErrorCode, WireError
from replicalab.baselines.server.settings import ServerSettings
from replicalab.baselines.server.tarpit import Tarpit

SESSION_ID_BYTES = 32
Transport = Literal["ws", "http"]


@dataclass
class Session:
    """One open session: its env, its transport, its client's address, and when a request last
    touched it (monotonic seconds)."""

    id: str
    env: ScientistServerEnv
    transport: Transport
    client: str
    last_active: float

    @property
    def tag(self) -> str:
        return events.tag(self.id)


class SessionTable:
    def __init__(
        self,
        settings: ServerSettings,
        clock: Callable[[], float] = time.monotonic,
        budget_clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.budget_clock = budget_clock
        self.stopping: asyncio.Event | None = None  # set once the server starts to stop (lifespan)
        self._sessions: dict[str, Session] = {}
        self._per_client: Counter[str] = Counter()
        self._budgets: dict[str, ClientBudget] = {}
        self._connections: Counter[str] = Counter()  # open TCP connections per address
        self.tarpit = Tarpit(settings.flood_cooldown_s)  # the addresses cooling down after a flood

    def __len__(self) -> int:
        return len(self._sessions)

    def sessions(self) -> list[Session]:
        return list(self._sessions.values())

    def open(self, transport: Transport, client: str) -> Session:
        """A new session with its own env, or CAPACITY_REACHED / TOO_MANY_SESSIONS."""
        limit, per_client = self.settings.max_sessions, self.settings.max_sessions_per_client
        if len(self._sessions) >= limit:
            events.event("session_refused", reason="capacity", client=client, transport=transport)
            raise WireError(
                ErrorCode.CAPACITY_REACHED,
                f"{len(self._sessions)} of {limit} sessions are open; close one or retry later",
            )
        if self._per_client[client] >= per_client:
            events.event("session_refused", reason="per_client", client=client, transport=transport)
            raise WireError(
                ErrorCode.TOO_MANY_SESSIONS,
                f"this client holds {per_client} sessions, the most one client may; close one first",
            )
        session_id = secrets.token_urlsafe(SESSION_ID_BYTES)
        env = ScientistServerEnv(
            self.settings.config, self.settings.limits, session_id if transport == "http" else None
        )
        session = Session(session_id, env, transport, client, self.clock())
        self._sessions[session_id] = session
        self._per_client[client] += 1
        events.event("session_opened", session=session.tag, transport=transport, client=client)
        return session

    def get(self, session_id: object) -> Session:
        """The open HTTP session `session_id` names, marked active now; UNKNOWN_SESSION if none
        does (a WebSocket session's id included: it is its connection's alone)."""
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None or session.transport != "http":
            raise WireError(ErrorCode.UNKNOWN_SESSION, "X-Session-Id: no open HTTP session has this id")
        self.touch(session)
        return session

    def budget(self, client: str) -> ClientBudget:
        """The budget of loop time all of `client`'s work draws on: its sessions' messages, the
        sessions it opens and its requests that keep none."""
        budget = self._budgets.get(client)
        if budget is None:
            rate = self.settings.client_ms_per_s / 1000
            budget = self._budgets[client] = ClientBudget(rate, self.budget_clock)
        return budget

    def turned_away(self, client: str) -> bool:
        """Whether `client`'s queue for its budget is full: whatever it asks next is refused, and
        asking more than its queue holds is a flood (its cool-down begins), since a client that
        asks again the moment it is refused makes each refusal work no budget is charged with."""
        budget = self._budgets.get(client)
        if budget is None or not budget.full(self.settings.max_queued_per_client):
            return False
        self.tarpit.cool_down(client, "queue_full")
        return True

    def connection_opened(self, client: str) -> bool:
        """Count a new connection of `client`'s; False (counting nothing) if the address is cooling
        down after a flood, or floods now: it is more than `settings.max_overdraft_s` of waiting
        from its budget, or it holds as many connections as its sessions and its queue could use
        (its cool-down begins). The connection is then held unread by the `tarpit`."""
        if self.tarpit.cooling(client):
            return False
        settings = self.settings
        useful = settings.max_sessions_per_client + settings.max_queued_per_client
        if self.overdrawn(client):
            self.tarpit.cool_down(client, "overdrawn")
            return False
        if self._connections[client] >= useful:
            self.tarpit.cool_down(client, "too_many_connections")
            return False
        self._connections[client] += 1
        return True

    def overdrawn(self, client: str) -> bool:
        """Whether `client` is more than `settings.max_overdraft_s` of waiting from its budget: what
        its connections without a session send is dropped unread, and it cools down."""
        budget = self._budgets.get(client)
        return budget is not None and budget.delay() > self.settings.max_overdraft_s

    def connection_closed(self, client: str) -> None:
        self._connections[client] -= 1
        if self._connections[client] <= 0:
            del self._connections[client]

    def touch(self, session: Session) -> None:
        session.last_active = self.clock()

    def timeout(self, session: Session) -> float:
        """How long `session` may stay idle: shorter until its first step."""
        if session.env.ever_stepped:
            return self.settings.idle_timeout_s
        return min(self.settings.unstepped_timeout_s, self.settings.idle_timeout_s)

    def close(self, session: Session, reason: str) -> bool:
        """Free the session's slot; False if it was not open."""
        if self._sessions.pop(session.id, None) is None:
            return False
        self._per_client[session.client] -= 1
        if not self._per_client[session.client]:
            del self._per_client[session.client]
        events.event(
            "session_closed",
            session=session.tag,
            transport=session.transport,
            reason=reason,
            steps=session.env.step_count,
        )
        return True

    def reap(self) -> list[Session]:
        """Close every HTTP session idle past its timeout (a WebSocket's times out on its
        connection), and forget the address budgets that refilled; the sessions closed."""
        self._budgets = {c: b for c, b in self._budgets.items() if not b.idle}
        now = self.clock()
        stale = [
            s
            for s in self._sessions.values()
            if s.transport == "http" and now - s.last_active > self.timeout(s)
        ]
        for session in stale:
            self.close(session, "idle_timeout")
        return stale
