"""# ReplicaLab Scientist v3 (Gymnasium)

| | |
|---|---|
| Id | `gymnasium.make("ReplicaLab/Scientist-v3")` after `import replicalab.envs` (or `gymnasium.make("replicalab.envs:ReplicaLab/Scientist-v3")`) |
| Action space | `FlatMaskMultiDiscrete` (structured, default) or `Text` (`action_mode="text"`) |
| Observation space | `Dict(observation=Box(0, 1, (F,)), action_mask=Box(0, 1, (M,), int8))`, plus `prompt=Text` in text mode |

## Description
The Scientist's side of the negotiation, single-agent: after each Scientist move the grounded
Lab Manager (check → suggest → compose, `replicalab.agents`) answers inside the same `step`.
The episode rules are `replicalab.episode.Episode`'s; this module only translates.

## Action Space
The same codec as the AEC env (`replicalab.envs.codec`): one `MultiDiscrete` vector in structured mode,
the raw model output (JSON) in text mode; a `ScientistAction` or a dict is accepted in both.

## Observation
The Scientist's features (structured) or prompt (text) and the flat action mask; in text mode
`info["system_prompt"]` after reset holds the system prompt.

## Rewards
The Scientist's named reward components from the `RewardConfig`, summed over its move and the
Lab Manager's reply; `info["reward_components"]` has them by name.

## Termination / Truncation
Terminates on the Scientist's `accept` or at the round limit; truncates at `step_cap` agent
steps when given. `info["verdict"]` and `info["judge"]` arrive with the last step.

## Arguments
The AEC env's (`replicalab.envs.replicalab_v3`): `templates`, `difficulties` (one name or a list of them),
`reward_config`, `max_rounds`, `step_cap`, `action_mode`, `render_mode`, `split`,
`num_train_scenarios` (where it caps the seeds, each scenario is generated once per process),
`reading` ("text" or "facts": the observation's candidate slots carry the method's hashed text
or what the paper publicly says of each candidate, a training aid).

## Reset options
The AEC env's: `scenario` (a pack to play, alone), `template`, `difficulty`, `scenario_seed` (a
non-negative int). A bad value raises an error naming the key; an unknown key is ignored with a
warning. `env.unwrapped.episode.to_log()` is the episode's `EpisodeLog`.

## Action masking
`env.unwrapped.action_masks()` (structured mode) is the flat bool mask of the legal component
values, the convention of sb3-contrib's `MaskablePPO`, which finds it through Gymnasium's
wrappers with no glue.

## Vectorized environment
Works in `SyncVectorEnv`, `AsyncVectorEnv` and `gymnasium.make_vec`, and in Stable-Baselines3's
`make_vec_env` (which asks for `render_mode="rgb_array"`) with `DummyVecEnv` or `SubprocVecEnv`.

## Version History
Each version is the game's: `replicalab.envs.replicalab_v3`'s Version History lists what changed
in v0-v3 and why; this front has changed only with the game.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.envs.render import RENDER_MODES, Frame, check_render_mode, render
from replicalab.envs.session import Session
from replicalab.episode import Episode
from replicalab.moves import SCIENTIST
from replicalab.play import Given, play


class ScientistEnv(gym.Env[dict[str, Any], Any]):
    metadata: dict[str, Any] = {"render_modes": list(RENDER_MODES), "render_fps": 1}  # noqa: RUF012 - Gymnasium's convention

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        self.render_mode = check_render_mode(render_mode)
        self.session = Session(**kwargs)
        self.action_space = self.session.action_spaces[SCIENTIST]
        self.observation_space = self.session.observation_spaces[SCIENTIST]

    @property
    def episode(self) -> Episode:
        """The `Episode` being played; `episode.to_log()` is its `EpisodeLog`."""
        return self.session.started("episode")

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        self.session.start(seed, options)
        info = self.session.info(SCIENTIST)
        if self.session.action_mode == "text":
            info["system_prompt"] = self.session.system_prompt
        return self.session.observe(SCIENTIST), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        episode = self.session.episode
        if episode is None:
            raise RuntimeError("step: reset() must be called before step()")
        move = Given(self.session.translate(SCIENTIST, action))
        outcome, *replies = play(episode, move, grounded_lab_response, until=SCIENTIST)
        reward = outcome.rewards[SCIENTIST]
        components = dict(outcome.components.get(SCIENTIST, {}))
        for reply in replies:
            reward += reply.rewards[SCIENTIST]
            for key, value in reply.components.get(SCIENTIST, {}).items():
                components[key] = components.get(key, 0.0) + value
        info = self.session.info(SCIENTIST, components, outcome.error)
        if self.render_mode == "human":
            self.render()
        return self.session.observe(SCIENTIST), reward, episode.terminated, episode.truncated, info

    def action_masks(self) -> np.ndarray:
        """The legal values of every component of the structured action now, as one flat bool
        array (the per-component masks concatenated: sb3-contrib's `MaskablePPO` calls this);
        the same mask the observation carries as `action_mask`."""
        episode = self.episode
        if self.session.action_mode != "structured":
            raise TypeError("action_masks: only the structured action space has component masks")
        mask: np.ndarray = self.session.scientist_codec.mask(episode.scientist_mask()).astype(bool)
        return mask

    # Gymnasium 1.2 types the return as an unbound TypeVar, which no concrete type overrides.
    def render(self) -> str | Frame | None:  # type: ignore[override, unused-ignore]
        return render(self.render_mode, self.session.episode)
