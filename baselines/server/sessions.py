"""The server's session table: bounded in count, unguessable ids, closed after an idle timeout.

Every session, WebSocket or HTTP, takes one slot of `max_sessions` and owns one
`ScientistServerEnv`; no call reaches an env except through its session's id, which is 256
random bits (`secrets.token_urlsafe`), so no client can name another's session. The table runs
on the server's event loop only, so it needs no lock.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from replicalab.baselines.server.environment import ScientistServerEnv
from replicalab.baselines.server.models import EnvConfig, ErrorCode, WireError

SESSION_ID_BYTES = 32


@dataclass
class Session:
    """One open session: its env and when a request last touched it (monotonic seconds)."""

    id: str
    env: ScientistServerEnv
    last_active: float
    connection_bound: bool = False  # a WebSocket's: it times out on its connection, not the reaper


class SessionTable:
    def __init__(
        self,
        config: EnvConfig,
        max_sessions: int,
        idle_timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions: must be at least 1, got {max_sessions}")
        if not idle_timeout_s > 0:
            raise ValueError(f"idle_timeout_s: must be positive, got {idle_timeout_s}")
        self.config = config
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.clock = clock
        self._sessions: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self) -> Session:
        """A new session with its own env, or CAPACITY_REACHED when every slot is taken."""
        if len(self._sessions) >= self.max_sessions:
            raise WireError(
                ErrorCode.CAPACITY_REACHED,
                f"{len(self._sessions)} of {self.max_sessions} sessions are open; close one or retry later",
            )
        session_id = secrets.token_urlsafe(SESSION_ID_BYTES)
        session = Session(session_id, ScientistServerEnv(session_id, self.config), self.clock())
        self._sessions[session_id] = session
        return session

    def get(self, session_id: object) -> Session:
        """The open session `session_id` names, marked active now; UNKNOWN_SESSION if none does."""
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise WireError(ErrorCode.UNKNOWN_SESSION, "session_id: no open session has this id")
        session.last_active = self.clock()
        return session

    def close(self, session_id: str) -> bool:
        """Free the session's slot; False if it was not open."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        session.env.close()
        return True

    def reap(self) -> list[str]:
        """Close every HTTP session idle for longer than the timeout; their ids."""
        deadline = self.clock() - self.idle_timeout_s
        stale = [s.id for s in self._sessions.values() if not s.connection_bound and s.last_active < deadline]
        for session_id in stale:
            self.close(session_id)
        return stale
