"""The Scientist's seat as an OpenEnv `Environment`: one Gymnasium Scientist env per session.

It translates and nothing more: a wire action becomes what `ScientistEnv.step` takes, the env's
observation and info become a `ReplicaLabObservation`. Every rule (the Lab Manager's reply, the
penalty and the error code of a bad move, the end of the episode) is the env's and `Episode`'s.
"""

from __future__ import annotations

import hashlib
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from replicalab.baselines.server.models import (
    SEATS,
    EnvConfig,
    ErrorCode,
    ReplicaLabAction,
    ReplicaLabObservation,
    ReplicaLabState,
    ResetData,
    WireError,
)
from replicalab.envs.scientist_v1 import ScientistEnv
from replicalab.episode import EpisodeOverError


class ScientistServerEnv(Environment):
    """One session's Scientist env; `config` is the server's default `EnvConfig`."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # nothing mutable is shared between instances

    def __init__(self, session_id: str, config: EnvConfig) -> None:
        super().__init__()
        self.session_id = session_id
        self.config = config
        self.env = ScientistEnv(**config.env_kwargs())
        self.episode_id: str | None = None
        self.step_count = 0
        self.started = False

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> ReplicaLabObservation:
        """A new episode; `kwargs` may hold the env's `options` and another `config`."""
        data = ResetData.model_validate({"seed": seed, "episode_id": episode_id, **kwargs})
        if data.config is not None and data.config != self.config:
            try:
                env = ScientistEnv(**data.config.env_kwargs())
            except (TypeError, ValueError) as exc:
                raise WireError(ErrorCode.VALIDATION_ERROR, f"config.{exc}") from None
            self.env, self.config = env, data.config
        options = None if data.options is None else data.options.env_options()
        try:
            observation, info = self.env.reset(seed=data.seed, options=options)
        except (TypeError, ValueError) as exc:
            raise WireError(ErrorCode.VALIDATION_ERROR, str(exc)) from None
        self.episode_id, self.step_count, self.started = data.episode_id, 0, True
        return self._observation(observation, 0.0, False, False, info)

    def step(
        self, action: ReplicaLabAction, timeout_s: float | None = None, **kwargs: Any
    ) -> ReplicaLabObservation:
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
        return self._observation(observation, reward, terminated, truncated, info)

    @property
    def state(self) -> ReplicaLabState:
        if not self.started:
            raise WireError(ErrorCode.NOT_RESET, "state: reset the session first")
        episode = self.env.episode
        log = episode.to_log(self.episode_id).model_dump_json()
        return ReplicaLabState(
            episode_id=self.episode_id,
            step_count=self.step_count,
            session_id=self.session_id,
            action_mode=self.config.action_mode,
            done=episode.done,
            log_sha256=hashlib.sha256(log.encode("utf-8")).hexdigest(),
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="replicalab",
            description="The Scientist's seat of ReplicaLab against the grounded Lab Manager",
            version="1",  # the env id's version: ReplicaLab/Scientist-v1
            documentation_url="docs/serving.md",
        )

    @staticmethod
    def _observation(
        observation: dict[str, Any], reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
    ) -> ReplicaLabObservation:
        return ReplicaLabObservation(
            features=observation["observation"].tolist(),
            action_mask=observation["action_mask"].tolist(),
            prompt=observation.get("prompt"),
            info=info,
            terminated=terminated,
            truncated=truncated,
            done=terminated or truncated,
            reward=reward,
        )
