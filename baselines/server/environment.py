"""The Scientist's seat for one session: one Gymnasium Scientist env, the shape of an OpenEnv
`Environment` (`reset`, `step`, `state`, `get_metadata`).

It translates and nothing more: a wire action becomes what `ScientistEnv.step` takes, the env's
observation and info become a `ReplicaLabObservation` on the wire. Every rule (the Lab Manager's reply, the
penalty and the error code of a bad move, the end of the episode) is the env's and `Episode`'s.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import ValidationError

from replicalab.baselines.server.models import (
    SEATS,
    EnvConfig,
    EnvironmentMetadata,
    ErrorCode,
    ReplicaLabAction,
    ReplicaLabState,
    ResetData,
    WireError,
)
from replicalab.baselines.server.settings import Limits
from replicalab.envs.scientist_v3 import ScientistEnv
from replicalab.episode import EpisodeOverError
from replicalab.parsing import describe_validation_error

METADATA = EnvironmentMetadata(
    name="replicalab",
    description="The Scientist's seat of ReplicaLab against the grounded Lab Manager",
    version="1",  # the env id's version: ReplicaLab/Scientist-v3
    documentation_url="docs/serving.md",
)


def validation_error(exc: ValidationError) -> WireError:
    return WireError(ErrorCode.VALIDATION_ERROR, describe_validation_error(exc, 3))


class ScientistServerEnv:
    """One session's Scientist env; `config` is the server's default `EnvConfig`, `limits` what
    a reset may ask for instead."""

    def __init__(self, config: EnvConfig, limits: Limits, session_id: str | None = None) -> None:
        self.config = config
        self.limits = limits
        self.session_id = session_id
        self.env = ScientistEnv(**config.env_kwargs())
        self.episode_id: str | None = None
        self.step_count = 0
        self.started = False
        self.ever_stepped = False
        self._digest: str | None = None  # of the log as it stands; a step or reset clears it

    def reset(self, data: object) -> dict[str, Any]:
        """A new episode from a reset body (`ResetData`'s fields): its first observation."""
        try:
            reset = ResetData.model_validate(data)
        except ValidationError as exc:
            raise validation_error(exc) from None
        if reset.config is not None and reset.config != self.config:
            self.limits.check(reset.config)
            try:
                env = ScientistEnv(**reset.config.env_kwargs())
            except (TypeError, ValueError) as exc:
                raise WireError(ErrorCode.VALIDATION_ERROR, f"config.{exc}") from None
            self.env, self.config = env, reset.config
        options = None if reset.options is None else reset.options.env_options()
        try:
            observation, info = self.env.reset(seed=reset.seed, options=options)
        except (TypeError, ValueError) as exc:
            raise WireError(ErrorCode.VALIDATION_ERROR, str(exc)) from None
        self.episode_id, self.step_count, self.started, self._digest = reset.episode_id, 0, True, None
        return self._observation(observation, 0.0, False, False, info)

    def step(self, data: object) -> dict[str, Any]:
        """One move from an action body (`ReplicaLabAction`'s fields): the observation after it."""
        try:
            action = ReplicaLabAction.model_validate(data)
        except ValidationError as exc:
            raise validation_error(exc) from None
        if action.seat not in SEATS:
            raise WireError(
                ErrorCode.WRONG_SEAT, f"seat: this session plays {', '.join(SEATS)}, got {action.seat!r}"
            )
        if not self.started:
            raise WireError(ErrorCode.NOT_RESET, "step: reset the session first")
        if action.vector is not None and self.config.action_mode == "text":
            raise WireError(ErrorCode.VALIDATION_ERROR, "vector: text mode takes text or move")
        try:
            observation, reward, terminated, truncated, info = self.env.step(action.payload())
        except EpisodeOverError as exc:
            raise WireError(ErrorCode.EPISODE_OVER, str(exc)) from None
        self.step_count += 1
        self.ever_stepped, self._digest = True, None
        return self._observation(observation, reward, terminated, truncated, info)

    @property
    def state(self) -> ReplicaLabState:
        """The state; its log digest is computed once per step, so asking again costs nothing."""
        if not self.started:
            raise WireError(ErrorCode.NOT_RESET, "state: reset the session first")
        episode = self.env.episode
        if self._digest is None:
            log = episode.to_log(self.episode_id).model_dump_json()
            self._digest = hashlib.sha256(log.encode("utf-8")).hexdigest()
        return ReplicaLabState(
            episode_id=self.episode_id,
            step_count=self.step_count,
            session_id=self.session_id,
            action_mode=self.config.action_mode,
            done=episode.done,
            log_sha256=self._digest,
        )

    @staticmethod
    def get_metadata() -> EnvironmentMetadata:
        return METADATA

    @staticmethod
    def _observation(
        observation: dict[str, Any], reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
    ) -> dict[str, Any]:
        """A `ReplicaLabObservation` as OpenEnv sends it (`{observation, reward, done}`, its
        `serialize_observation`), built straight from the env's values: they are plain floats,
        ints, a string and JSON dicts already, so validating and dumping them through the model
        again changed nothing and cost more than the reply's JSON. The fields keep the model's
        order; a test holds every reply to the model."""
        return {
            "observation": {
                "seat": "scientist",
                "features": observation["observation"].tolist(),
                "action_mask": observation["action_mask"].tolist(),
                "prompt": observation.get("prompt"),
                "info": info,
                "terminated": bool(terminated),
                "truncated": bool(truncated),
            },
            "reward": float(reward),
            "done": bool(terminated or truncated),
        }
