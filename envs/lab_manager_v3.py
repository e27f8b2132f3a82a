"""# ReplicaLab Lab Manager v3 (Gymnasium)

| | |
|---|---|
| Id | `gymnasium.make("ReplicaLab/LabManager-v3")` after `import replicalab.envs` (or `gymnasium.make("replicalab.envs:ReplicaLab/LabManager-v3")`) |
| Action space | `Discrete(4)` (structured, default) or `Text` (`action_mode="text"`) |
| Observation space | `Dict(observation=Box(0, 1, (F,)), action_mask=Box(0, 1, (4,), int8))`, plus `prompt=Text` in text mode |

## Description
The Lab Manager's side of the negotiation, single-agent: a fixed Scientist policy opens each
episode inside `reset` and answers each Lab Manager move inside the same `step`. The Scientist
is the user's choice (`scientist`); by default the project's reader, which asks what the lab
charges, proposes what the paper's method affirms and revises with what each answer teaches,
so what the Lab Manager says changes what it is offered next. The episode rules are
`replicalab.episode.Episode`'s; this module only translates.

## Action Space
Structured: the stance, `Discrete(4)` (report_feasibility, suggest_alternative, reject,
accept), as `replicalab.envs.codec` decodes it: the flags, explanation and suggested protocol
are the grounded check's, so a structured Lab Manager chooses what to say and never misstates the
facts. Text: the raw model output (JSON), read by the same parser an LLM Lab Manager's output
goes through; a `LabManagerAction` or a dict is accepted in both modes, and may misreport (the
episode charges it).

## Observation
The Lab Manager's features (the lab's private facts and the grounded check of the protocol on
the table) and the mask of the stances the facts allow; in text mode also the turn's message
an LLM Lab Manager is sent (`prompt`), and `info["system_prompt"]` after reset.

## Rewards
The Lab Manager's named reward components from the `RewardConfig`, summed over its move and the
Scientist's reply; what the Scientist's opening in `reset` paid it is added to the first step's
reward, so an episode's rewards sum to the log's `total_rewards["lab_manager"]`.
`info["reward_components"]` has them by name.

## Termination / Truncation
Terminates on the Scientist's `accept` or at the round limit; truncates at `step_cap` agent
steps when given. `info["verdict"]` and `info["judge"]` arrive with the last step.

## Arguments
`scientist`: the Scientist's seat, an object with `act(episode)` (and optionally `reset(seed)`,
called with a seed drawn from the env's generator at each reset) or a function of the episode,
or a `"module:attr"` string naming a class or function of no arguments that builds one
(picklable, for `AsyncVectorEnv`); default `DEFAULT_SCIENTIST`, the reader, built on first use so
that this module imports no policy. Its move may not need awaiting. The rest are the AEC env's
(`replicalab.envs.replicalab_v3`): `templates`, `difficulties`, `reward_config`, `max_rounds`,
`step_cap` (at least 2: the Scientist's opening is a step), `action_mode`, `render_mode`, `split`,
`num_train_scenarios`.

## Reset options
The AEC env's: `scenario` (a pack to play, alone), `template`, `difficulty`, `scenario_seed`.
`env.unwrapped.episode.to_log()` is the episode's `EpisodeLog`.

## Action masking
`env.unwrapped.action_masks()` (structured mode) is the bool mask of the four stances, the
convention of sb3-contrib's `MaskablePPO`.

## Vectorized environment
Works in `SyncVectorEnv`, `AsyncVectorEnv` and Stable-Baselines3's `DummyVecEnv`; the Scientist
given by name is built in each worker.

## Version History
* v3: initial release, with the game of `ReplicaLab/Scientist-v3`.
"""

from __future__ import annotations

import importlib
import string
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from replicalab.agents import (
    MAX_PROMPT_CHARS,
    build_lab_manager_system_prompt,
    format_lab_manager_observation,
)
from replicalab.envs.render import RENDER_MODES, Frame, check_render_mode, render
from replicalab.envs.session import ACTION_MODES, Session
from replicalab.envs.spaces import PROMPT_CHARSET, fit_text
from replicalab.episode import Episode, StepOutcome
from replicalab.models import LabManagerAction
from replicalab.moves import LAB_MANAGER, ActionError
from replicalab.parsing import MAX_OUTPUT_CHARS
from replicalab.play import Given, Move, Seat, play

DEFAULT_SCIENTIST = "replicalab.baselines.policies.probes:PublicReaderScientist"
"""The reader Scientist (`replicalab evaluate -s reader`), named rather than imported: the envs
never import the baselines."""


def scientist_seat(scientist: Seat | str) -> Seat:
    """The seat `scientist` names: itself, or what the `"module:attr"` factory it names builds."""
    if not isinstance(scientist, str):
        if not (hasattr(scientist, "act") or callable(scientist)):
            raise TypeError(f"scientist: expected a seat or 'module:attr', got {type(scientist).__name__}")
        return scientist
    module, _, attr = scientist.partition(":")
    if not module or not attr:
        raise ValueError(f"scientist: expected 'module:attr', got {scientist!r}")
    try:
        factory: Callable[[], Seat] = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"scientist: cannot import {scientist!r}: {exc}") from None
    return factory()


class LabManagerEnv(gym.Env[dict[str, Any], Any]):
    metadata: dict[str, Any] = {"render_modes": list(RENDER_MODES), "render_fps": 1}  # noqa: RUF012 - Gymnasium's convention

    def __init__(
        self,
        scientist: Seat | str = DEFAULT_SCIENTIST,
        render_mode: str | None = None,
        action_mode: str = "structured",
        **kwargs: Any,
    ) -> None:
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode: must be one of {ACTION_MODES}, got {action_mode!r}")
        self.render_mode = check_render_mode(render_mode)
        self.action_mode = action_mode
        self.scientist = scientist_seat(scientist)
        self.session = Session(**kwargs)  # its Scientist side is the fixed policy's, never translated
        if self.session.step_cap == 1:
            raise ValueError(
                "step_cap: the Scientist's opening is a step, so the Lab Manager needs at least 2"
            )
        structured = self.session.observation_spaces[LAB_MANAGER]
        assert isinstance(structured, spaces.Dict)
        self.observation_space = structured
        self.action_space = self.session.action_spaces[LAB_MANAGER]
        if action_mode == "text":
            self.observation_space = spaces.Dict(
                {
                    "observation": structured["observation"],
                    "prompt": spaces.Text(max_length=MAX_PROMPT_CHARS, min_length=0, charset=PROMPT_CHARSET),
                    "action_mask": structured["action_mask"],
                }
            )
            self.action_space = spaces.Text(
                max_length=MAX_OUTPUT_CHARS, min_length=0, charset=string.printable
            )
        self.system_prompt = ""
        self._opening_reward = 0.0
        self._opening_components: dict[str, float] = {}

    @property
    def episode(self) -> Episode:
        """The `Episode` being played; `episode.to_log()` is its `EpisodeLog`."""
        return self.session.started("episode")

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        episode = self.session.start(seed, options)
        reset = getattr(self.scientist, "reset", None)
        if callable(reset):
            reset(int(self.np_random.integers(2**31 - 1)))
        # The Scientist opens; the Lab Manager's seat is never asked before its first step.
        opening = play(episode, self.scientist, _not_yet, until=LAB_MANAGER)
        self._opening_reward, self._opening_components = _paid(opening)
        info = self.session.info(LAB_MANAGER)
        if self.action_mode == "text":
            self.system_prompt = build_lab_manager_system_prompt(episode.scenario)
            info["system_prompt"] = self.system_prompt
        return self._observe(), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        episode = self.session.episode
        if episode is None:
            raise RuntimeError("step: reset() must be called before step()")
        move = Given(self._translate(action))
        outcomes = play(episode, self.scientist, move, until=LAB_MANAGER)
        reward, components = _paid(outcomes, self._opening_reward, self._opening_components)
        self._opening_reward, self._opening_components = 0.0, {}
        info = self.session.info(LAB_MANAGER, components, outcomes[0].error)
        if self.render_mode == "human":
            self.render()
        return self._observe(), reward, episode.terminated, episode.truncated, info

    def _translate(self, action: Any) -> Move:
        """What the action means: as the Session reads it, but in text mode only text, a dict
        or an action (a stance's number is the structured space's)."""
        if self.action_mode == "text" and not isinstance(action, (str, dict, LabManagerAction, ActionError)):
            return ActionError(
                code="wrong_action_type", message=f"text mode expects a string, got {type(action).__name__}"
            )
        return self.session.translate(LAB_MANAGER, action)

    def _observe(self) -> dict[str, Any]:
        observation = self.session.observe(LAB_MANAGER)
        if self.action_mode == "text":
            prompt = format_lab_manager_observation(self.episode.lab_manager_observation())
            observation = {**observation, "prompt": fit_text(prompt)}
        return observation

    def action_masks(self) -> np.ndarray:
        """The stances the facts allow now, as a bool array (sb3-contrib's `MaskablePPO` calls
        this); the same mask the observation carries as `action_mask`."""
        if self.action_mode != "structured":
            raise TypeError("action_masks: only the structured action space has a mask to act on")
        mask: np.ndarray = self.session.observe(LAB_MANAGER)["action_mask"].astype(bool)
        return mask

    # Gymnasium 1.2 types the return as an unbound TypeVar, which no concrete type overrides.
    def render(self) -> str | Frame | None:  # type: ignore[override, unused-ignore]
        return render(self.render_mode, self.session.episode)


def _not_yet(episode: Episode) -> ActionError:
    raise AssertionError("the Lab Manager's seat is the env's action, never asked at reset")


def _paid(
    outcomes: list[StepOutcome], reward: float = 0.0, components: dict[str, float] | None = None
) -> tuple[float, dict[str, float]]:
    """What `outcomes` paid the Lab Manager, on top of `reward` and `components`."""
    components = dict(components or {})
    for outcome in outcomes:
        reward += outcome.rewards[LAB_MANAGER]
        for key, value in outcome.components.get(LAB_MANAGER, {}).items():
            components[key] = components.get(key, 0.0) + value
    return reward, components
