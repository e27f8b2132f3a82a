"""The wire types of the ReplicaLab server: what a client sends and what it gets back.

They carry OpenEnv's fields (an action's `metadata`; an observation's `done`, `reward` and
`metadata`; a state's `episode_id` and `step_count`) and its message shapes, so OpenEnv's
`EnvClient`, its `GenericEnvClient` and its tools read them; they do not subclass OpenEnv's
classes, because importing OpenEnv loads its web interface (Gradio) and would make the server
take seconds longer to start. Every one refuses unknown fields, so a typo in a request is an
error naming the field, not a silently ignored key.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

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
    NOT_ALLOWED = "NOT_ALLOWED"  # a config beyond the operator's limits (rounds, step cap, split, preset)
    TOO_MANY_SESSIONS = "TOO_MANY_SESSIONS"  # this client holds --max-sessions-per-client already
    TOO_MANY_REQUESTS = "TOO_MANY_REQUESTS"  # this address's queue for its budget is full already
    UNAUTHORIZED = "UNAUTHORIZED"  # the server wants its token and the request lacks it
    FORBIDDEN_ORIGIN = "FORBIDDEN_ORIGIN"  # an Origin or Host header this server does not serve
    UNKNOWN_SESSION = "UNKNOWN_SESSION"  # no open HTTP session has this id (never had, closed or expired)
    NO_SESSION = "NO_SESSION"  # an HTTP step or state without X-Session-Id
    MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE"  # the body is over the server's size limit
    REQUEST_TIMEOUT = "REQUEST_TIMEOUT"  # the body did not arrive in --body-timeout seconds
    WRONG_SEAT = "WRONG_SEAT"  # an action for a seat this session does not play
    NOT_RESET = "NOT_RESET"  # a step or state before the session's first reset
    EPISODE_OVER = "EPISODE_OVER"  # a step after the episode ended; reset for a new one
    IDLE_TIMEOUT = "IDLE_TIMEOUT"  # the session was idle longer than the server allows
    INTERNAL_ERROR = "INTERNAL_ERROR"  # a fault of the server's (logged there); the session carries on
    SHUTTING_DOWN = "SHUTTING_DOWN"  # the server stopped before it could answer the request


HTTP_STATUS = {
    ErrorCode.VALIDATION_ERROR: 422,  # OpenEnv's server answers an invalid action with 422
    ErrorCode.NOT_ALLOWED: 403,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.UNKNOWN_SESSION: 404,
    ErrorCode.MESSAGE_TOO_LARGE: 413,
    ErrorCode.REQUEST_TIMEOUT: 408,
    ErrorCode.TOO_MANY_SESSIONS: 429,
    ErrorCode.TOO_MANY_REQUESTS: 429,
    ErrorCode.FORBIDDEN_ORIGIN: 403,
    ErrorCode.CAPACITY_REACHED: 503,
    ErrorCode.EPISODE_OVER: 409,
    ErrorCode.NOT_RESET: 409,
    ErrorCode.IDLE_TIMEOUT: 404,
    ErrorCode.INTERNAL_ERROR: 500,
    ErrorCode.SHUTTING_DOWN: 503,
}
"""The HTTP status of each refusal; 400 for the others."""


class WireError(Exception):
    """A refused request: its code and a message naming what was wrong."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def status(self) -> int:
        return HTTP_STATUS.get(self.code, 400)

    def payload(self) -> dict[str, str]:
        return {"code": self.code.value, "message": self.message}


class _Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EnvConfig(_Contract):
    """The Gymnasium Scientist env's arguments (`ReplicaLab/Scientist-v3`), as a session asks
    for them; the server's command line gives the defaults and the limits. Names are checked by
    the env, whose errors name the argument."""

    split: str = "train"
    templates: list[str] | None = None  # None: every built-in template
    difficulties: list[str] | None = None  # None: every difficulty
    reward_config: str = "default"  # a preset of `replicalab.rewards.PRESETS`
    max_rounds: int = DEFAULT_MAX_ROUNDS
    step_cap: int | None = None  # truncate after this many agent steps
    action_mode: Literal["structured", "text"] = "structured"
    reading: Literal["text", "facts"] = (
        "text"  # the observation's candidate columns: hashed text or public facts
    )

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


class ReplicaLabAction(BaseModel):
    """One move of the session's seat, in exactly one form: `text` (model output, read as the
    text-mode env reads it), `move` (a `ScientistAction` as JSON) or `vector` (an element of the
    structured action space; structured mode only). `metadata` is OpenEnv's, unread."""

    model_config = ConfigDict(extra="forbid")

    metadata: dict[str, Any] = Field(default_factory=dict)
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


class ReplicaLabObservation(BaseModel):
    """What the seat sees after a reset or a step: the Gymnasium env's observation and info,
    as JSON. `reward` and `done` (OpenEnv's) are the step's reward and terminated-or-truncated;
    on the wire they sit beside the observation (`{"observation", "reward", "done"}`)."""

    model_config = ConfigDict(extra="forbid")

    done: bool = False
    reward: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    seat: Literal["scientist"] = "scientist"
    features: list[float]  # the env's "observation": the seat's feature vector
    action_mask: list[int]  # flat mask of the legal values (per component in structured mode)
    prompt: str | None = None  # text mode: the observation as the model reads it
    info: dict[str, Any]  # round, reward_components, error (the env's code), verdict, judge
    terminated: bool = False
    truncated: bool = False


class ReplicaLabState(BaseModel):
    """The session's state: OpenEnv's `episode_id` and `step_count`, and a digest of the
    episode's log (SHA-256 of `EpisodeLog` JSON): equal digests mean byte-identical logs, which
    lets a client check determinism without the log, whose scenario is not the Scientist's to
    read. `session_id` is an HTTP session's (None over WebSocket, whose session is the connection)."""

    model_config = ConfigDict(extra="forbid")

    episode_id: str | None = None
    step_count: int = Field(default=0, ge=0)
    session_id: str | None = None
    action_mode: Literal["structured", "text"]
    done: bool
    log_sha256: str


class EnvironmentMetadata(_Contract):
    """`GET /metadata`: OpenEnv's fields."""

    name: str
    description: str
    readme_content: str | None = None
    version: str | None = None
    author: str | None = None
    documentation_url: str | None = None
