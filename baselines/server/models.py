"""The wire types of the ReplicaLab server: what a client sends and what it gets back.

The action and observation subclass OpenEnv's `Action` / `Observation` (so `/schema`, `EnvClient`
and OpenEnv's tools read them); the rest are plain pydantic contracts. Every one refuses unknown
fields, so a typo in a request is an error naming the field, not a silently ignored key.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, ConfigDict, Field, model_validator

from replicalab.scenarios import DEFAULT_MAX_ROUNDS

SEATS = ("scientist",)
"""The seats a session can play: the Scientist, against the grounded Lab Manager."""


class ErrorCode(str, Enum):
    """Why the server refused a message. OpenEnv's `WSErrorCode` names come first; a refused
    action that reached the episode is not here: the env gives it its own code in `info.error`
    (`invalid_json`, `invalid_action`, `masked_action`, ...) and charges the turn, as locally."""

    INVALID_JSON = "INVALID_JSON"  # the message is not JSON (or not a JSON object)
    UNKNOWN_TYPE = "UNKNOWN_TYPE"  # a WebSocket message type other than reset/step/state/close
    VALIDATION_ERROR = "VALIDATION_ERROR"  # a field is missing, unknown or out of range
    CAPACITY_REACHED = "CAPACITY_REACHED"  # as many sessions are open as --max-sessions allows
    UNKNOWN_SESSION = "UNKNOWN_SESSION"  # no open session has this id (never had, closed or expired)
    MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE"  # the body is over the server's size limit
    WRONG_SEAT = "WRONG_SEAT"  # an action for a seat this session does not play
    NOT_RESET = "NOT_RESET"  # a step or state before the session's first reset
    EPISODE_OVER = "EPISODE_OVER"  # a step after the episode ended; reset for a new one
    IDLE_TIMEOUT = "IDLE_TIMEOUT"  # the session was idle longer than the server allows
    INTERNAL_ERROR = "INTERNAL_ERROR"  # a fault of the server's (logged there); the session carries on


class WireError(Exception):
    """A refused request: its code and a message naming what was wrong."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def payload(self) -> dict[str, str]:
        return {"code": self.code.value, "message": self.message}


class _Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EnvConfig(_Contract):
    """The Gymnasium Scientist env's arguments (`ReplicaLab/Scientist-v1`), as a session asks
    for them; the server's command line gives the defaults. Names are checked by the env, whose
    errors name the argument."""

    split: str = "train"
    templates: list[str] | None = None  # None: every built-in template
    difficulties: list[str] | None = None  # None: every difficulty
    reward_config: str = "default"  # a preset of `replicalab.rewards.PRESETS`
    max_rounds: int = DEFAULT_MAX_ROUNDS
    step_cap: int | None = None  # truncate after this many agent steps
    action_mode: Literal["structured", "text"] = "structured"

    def env_kwargs(self) -> dict[str, Any]:
        return self.model_dump()


class ResetOptions(_Contract):
    """What a reset may pin of the drawn scenario (the env's reset options, bar a whole pack)."""

    template: str | None = None
    difficulty: str | None = None
    scenario_seed: int | None = Field(default=None, ge=0)

    def env_options(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class ResetData(_Contract):
    """The body of a reset: OpenEnv's `seed` and `episode_id`, the env's options, and the env's
    arguments when the session should play under others than the server's defaults."""

    seed: int | None = Field(default=None, ge=0)
    episode_id: str | None = Field(default=None, max_length=255)  # names the episode's log
    options: ResetOptions | None = None
    config: EnvConfig | None = None


class ReplicaLabAction(Action):
    """One move of the session's seat, in exactly one form: `text` (model output, read as the
    text-mode env reads it), `move` (a `ScientistAction` as JSON) or `vector` (an element of the
    structured action space; structured mode only)."""

    seat: str = "scientist"
    text: str | None = None
    move: dict[str, Any] | None = None
    vector: list[int] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> ReplicaLabAction:
        given = [name for name in ("text", "move", "vector") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of text, move, vector; got {given or 'none'}")
        return self

    def payload(self) -> str | dict[str, Any] | list[int]:
        """The action as the Gymnasium env takes it."""
        form = self.text if self.text is not None else self.move
        if form is not None:
            return form
        assert self.vector is not None
        return self.vector


class ReplicaLabObservation(Observation):
    """What the seat sees after a reset or a step: the Gymnasium env's observation and info,
    as JSON. `reward` and `done` (OpenEnv's) are the step's reward and terminated-or-truncated."""

    seat: Literal["scientist"] = "scientist"
    features: list[float]  # the env's "observation": the seat's feature vector
    action_mask: list[int]  # flat mask of the legal values (per component in structured mode)
    prompt: str | None = None  # text mode: the observation as the model reads it
    info: dict[str, Any]  # round, reward_components, error (the env's code), verdict, judge
    terminated: bool = False
    truncated: bool = False


class ReplicaLabState(State):
    """The session's state: OpenEnv's `episode_id` and `step_count`, and a digest of the
    episode's log (SHA-256 of `EpisodeLog` JSON): equal digests mean byte-identical logs, which
    lets a client check determinism without the log, whose scenario is not the Scientist's to read."""

    session_id: str
    action_mode: Literal["structured", "text"]
    done: bool
    log_sha256: str


class ErrorResponse(_Contract):
    """A refused HTTP request (WebSocket errors are OpenEnv's `{"type": "error", "data": ...}`)."""

    error: dict[str, str]  # {"code": ErrorCode, "message": ...}
