"""# ReplicaLab v0 (PettingZoo AEC)

| | |
|---|---|
| Import | `from envs import replicalab_v0` |
| Actions | structured (default) or text |
| Parallel API | yes (`replicalab_v0.parallel_env()`) |
| Agents | `agents = ['scientist', 'lab_manager']` |
| Action shape | scientist: `MultiDiscrete` of 61 components (flat mask of 182), or text (JSON); lab_manager: `Discrete(4)` |
| Observation shape | `{"observation": Box(-1, 1, (F,), float32), "action_mask": Box(0, 1, (M,), int8)}`, plus `"prompt": Text` in text mode |

## Description
A Scientist negotiates an experiment protocol with a Lab Manager who answers from the lab's
budget, equipment, reagents, schedule, staff and safety policy; a deterministic judge scores the
protocol they agree on. Each reset draws a scenario (template × difficulty × seed) from the
env's seed. The rules live in `replicalab.episode.Episode`; this module only translates.

## Actions
`action_mode="structured"`: the Scientist's action is one `MultiDiscrete` vector (type, sample
level, duration, technique slot, question, control slots, item slots; see `envs.codec`); the
Lab Manager's is its stance, `Discrete(4)` (report_feasibility, suggest_alternative, reject,
accept), with the grounded flags and suggestion filled in. `action_mode="text"`: the
Scientist's action is the raw model output, parsed by `parse_scientist_output`; its observation
carries the prompt (`format_scientist_observation`) under `prompt`; the system prompt is in `infos` after reset and
in `env.system_prompt`. In both modes a `ScientistAction` / `LabManagerAction` or a plain dict
is accepted for either agent, and a `LabManagerAction` may misreport (it is penalised).

## Observations
A dict with `observation` and `action_mask`. The mask is all zero for an agent whose turn it is
not and after the end; a masked-out action is refused (`masked_action`), costs the turn and
the `invalid_action` penalty, and never crashes the episode.

## Rewards
Named components from `replicalab.rewards.RewardConfig` (`sparse`, `default`, `potential`); each
step's components are in `infos[agent]["reward_components"]`. The judge's reward on agreement
goes to both agents (cooperative). Rewards reach an agent through `last()` as usual, so the
rewards an agent sees sum to its total in the `EpisodeLog`.

## Termination and truncation
Terminates when the Scientist accepts (agreement, or not: see `infos[agent]["verdict"]`) or
after `max_rounds` rounds; truncates at `step_cap` agent steps, when given.

## Arguments
`templates`, `difficulties` (drawn per reset), `reward_config` (preset name or `RewardConfig`),
`max_rounds` (6), `step_cap` (None), `action_mode` ("structured" | "text"), `render_mode`
("ansi" | "human").

## Version History
* v0: initial release.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv, ParallelEnv

from envs import codec
from envs.render import RENDER_MODES, check_render_mode, render
from envs.spaces import (
    fit_text,
    lab_manager_action_space,
    lab_manager_observation_space,
    scientist_action_space,
    scientist_observation_space,
)
from replicalab.agents.scientist_policy import (
    build_scientist_system_prompt,
    format_scientist_observation,
)
from replicalab.episode import AGENTS, LAB_MANAGER, SCIENTIST, ActionError, Episode, coerce_action
from replicalab.models import LabManagerAction, ScientistAction
from replicalab.rewards import RewardConfig, get_preset
from replicalab.scenarios import (
    BUILTIN_TEMPLATES,
    DEFAULT_MAX_ROUNDS,
    DIFFICULTIES,
    NormalizedScenarioPack,
    generate_scenario,
    template_names,
)

ACTION_MODES = ("structured", "text")


class Session:
    """The shared front: draw a scenario, own the Episode, translate actions and observations.

    Both the AEC env and the parallel env (and the Gymnasium env) hold one; none of them knows a
    rule of the game.
    """

    def __init__(
        self,
        *,
        templates: tuple[str, ...] | list[str] | None = None,
        difficulties: tuple[str, ...] | list[str] | None = None,
        reward_config: str | RewardConfig = "default",
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        step_cap: int | None = None,
        action_mode: str = "structured",
    ) -> None:
        self.templates = tuple(templates) if templates is not None else BUILTIN_TEMPLATES
        self.difficulties = tuple(difficulties) if difficulties is not None else DIFFICULTIES
        if not self.templates:
            raise ValueError("templates: give at least one template")
        known = template_names()
        for name in self.templates:
            if name not in known:
                raise ValueError(f"templates: unknown template {name!r}; valid: {', '.join(known)}")
        for level in self.difficulties:
            if level not in DIFFICULTIES:
                raise ValueError(f"difficulties: unknown {level!r}; valid: {', '.join(DIFFICULTIES)}")
        if not self.difficulties:
            raise ValueError("difficulties: give at least one difficulty")
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode: must be one of {ACTION_MODES}, got {action_mode!r}")
        self.reward_config = get_preset(reward_config) if isinstance(reward_config, str) else reward_config
        if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
            raise ValueError(f"max_rounds: must be a positive int, got {max_rounds!r}")
        self.max_rounds = max_rounds
        self.step_cap = step_cap
        self.action_mode = action_mode
        self.action_spaces: dict[str, spaces.Space[Any]] = {
            SCIENTIST: scientist_action_space(action_mode),
            LAB_MANAGER: lab_manager_action_space(),
        }
        self.observation_spaces: dict[str, spaces.Space[Any]] = {
            SCIENTIST: scientist_observation_space(action_mode, codec.SCIENTIST_FEATURES),
            LAB_MANAGER: lab_manager_observation_space(codec.LAB_MANAGER_FEATURES),
        }
        self.episode: Episode | None = None
        self.np_random: np.random.Generator | None = None
        self.system_prompt = ""

    def start(self, seed: int | None, options: dict[str, Any] | None) -> Episode:
        """Begin a new episode; `options` may pin `scenario` (a pack) or `template`/`difficulty`/`scenario_seed`."""
        if seed is not None or self.np_random is None:
            self.np_random, _ = seeding.np_random(seed)
        rng = self.np_random
        template = self.templates[int(rng.integers(len(self.templates)))]
        difficulty = self.difficulties[int(rng.integers(len(self.difficulties)))]
        scenario_seed = int(rng.integers(2**31 - 1))
        options = options or {}
        pack = options.get("scenario")
        if pack is None:
            pack = generate_scenario(
                int(options.get("scenario_seed", scenario_seed)),
                options.get("template", template),
                options.get("difficulty", difficulty),
            )
        elif not isinstance(pack, NormalizedScenarioPack):
            raise TypeError("options['scenario']: expected a NormalizedScenarioPack")
        self.episode = Episode(
            pack,
            max_rounds=self.max_rounds,
            reward_config=self.reward_config,
            step_cap=self.step_cap,
        )
        self.scientist_codec = codec.ScientistCodec(pack)
        self.system_prompt = build_scientist_system_prompt(pack) if self.action_mode == "text" else ""
        return self.episode

    def translate(self, agent: str, action: Any) -> ScientistAction | LabManagerAction | ActionError:
        """What the agent's action means, whatever form it came in."""
        episode = self.episode
        assert episode is not None
        if isinstance(action, (ScientistAction, LabManagerAction, ActionError, dict, str)):
            return coerce_action(agent, action)
        if agent == SCIENTIST:
            if self.action_mode == "text":
                return ActionError(
                    code="wrong_action_type",
                    message=f"text mode expects a string, got {type(action).__name__}",
                )
            return self.scientist_codec.decode(action, episode.scientist_mask())
        return codec.decode_lab_manager(action, episode)

    def observe(self, agent: str) -> dict[str, Any]:
        episode = self.episode
        assert episode is not None
        if agent == SCIENTIST:
            features = codec.scientist_features(self.scientist_codec, episode)
            if self.action_mode == "text":
                prompt = format_scientist_observation(episode.scientist_observation())
                return {
                    "observation": features,
                    "prompt": fit_text(prompt),
                    "action_mask": np.array(episode.scientist_mask(), dtype=np.int8),
                }
            return {
                "observation": features,
                "action_mask": self.scientist_codec.mask(episode.scientist_mask()),
            }
        return {
            "observation": codec.lab_manager_features(episode, self.scientist_codec),
            "action_mask": codec.lab_manager_mask(episode),
        }

    def info(
        self,
        agent: str,
        outcome_components: dict[str, float] | None = None,
        error: ActionError | None = None,
    ) -> dict[str, Any]:
        """What an agent may read about the last step: never the hidden reference or private lab facts."""
        episode = self.episode
        assert episode is not None
        info: dict[str, Any] = {
            "round": min(episode.round_number, episode.max_rounds),
            "reward_components": dict(outcome_components or {}),
            "error": {"code": error.code, "message": error.message} if error else None,
        }
        if episode.done:
            info["verdict"] = episode.verdict
            if episode.breakdown is not None:
                b = episode.breakdown
                info["judge"] = {
                    "rigor": b.rigor,
                    "feasibility": b.feasibility,
                    "fidelity": b.fidelity,
                    "parsimony": b.parsimony,
                    "total": b.total,
                }
        return info


def env(**kwargs: Any) -> raw_env:
    """The env users should create. The standard checks (step before reset, out-of-range or
    malformed actions, stepping a finished agent) are built into `raw_env` itself rather than
    layered as PettingZoo wrappers, which cost ~30 µs a step in attribute forwarding."""
    return raw_env(**kwargs)


class _Front:
    """What the AEC and the parallel env share: one Session, its spaces, and rendering."""

    def _attach(self, render_mode: str | None, kwargs: dict[str, Any]) -> None:
        self.render_mode = check_render_mode(render_mode)
        self.session = Session(**kwargs)
        self.possible_agents = list(AGENTS)
        self.observation_spaces = self.session.observation_spaces
        self.action_spaces = self.session.action_spaces

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def render(self) -> str | None:
        return render(self.render_mode, self.session.episode)

    def close(self) -> None:
        pass


class raw_env(_Front, AECEnv[str, dict[str, Any], Any]):
    metadata: ClassVar[dict[str, Any]] = {
        "name": "replicalab_v0",
        "render_modes": list(RENDER_MODES),
        "is_parallelizable": True,
    }

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        super().__init__()
        self._attach(render_mode, kwargs)
        self._started = False

    @property
    def episode(self) -> Episode:
        if self.session.episode is None:
            raise RuntimeError("reset() must be called before using the env")
        return self.session.episode

    @property
    def system_prompt(self) -> str:
        return self.session.system_prompt

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        episode = self.session.start(seed, options)
        self._started = True
        self.agents = list(AGENTS)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {agent: self.session.info(agent) for agent in self.agents}
        if self.session.action_mode == "text":
            self.infos[SCIENTIST]["system_prompt"] = self.session.system_prompt
        self.agent_selection = episode.agent_selection

    def observe(self, agent: str) -> dict[str, Any]:
        return self.session.observe(agent)

    def step(self, action: Any) -> None:
        if not self._started:
            raise RuntimeError("step: reset() must be called before step()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        episode = self.episode
        self._cumulative_rewards[agent] = 0.0
        outcome = episode.step(self.session.translate(agent, action))
        self.rewards = outcome.rewards
        for name in self.agents:
            self.infos[name] = self.session.info(
                name, outcome.components.get(name), outcome.error if name == agent else None
            )
        if episode.done:
            self.terminations = dict.fromkeys(self.agents, episode.terminated)
            self.truncations = dict.fromkeys(self.agents, episode.truncated)
            self.agent_selection = LAB_MANAGER if agent == SCIENTIST else SCIENTIST
        else:
            self.agent_selection = episode.agent_selection
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()


class parallel_raw_env(_Front, ParallelEnv[str, dict[str, Any], Any]):
    """One parallel step is one round: the Scientist's move, then (if the episode goes on) the
    Lab Manager's. Both act on the observations of the round's start; the Lab Manager's action
    is interpreted against the protocol the Scientist has just put on the table."""

    metadata: ClassVar[dict[str, Any]] = raw_env.metadata

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        self._attach(render_mode, kwargs)
        self.agents: list[str] = []

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        self.session.start(seed, options)
        self.agents = list(AGENTS)
        infos = {agent: self.session.info(agent) for agent in self.agents}
        return {agent: self._observe_round(agent) for agent in self.agents}, infos

    def _observe_round(self, agent: str) -> dict[str, Any]:
        """Both agents get their mask for the coming round, not only the one whose turn it is."""
        obs = self.session.observe(agent)
        episode = self.session.episode
        if agent == LAB_MANAGER and episode is not None and not episode.done:
            obs["action_mask"] = codec.lab_manager_mask(episode, any_turn=True)
        return obs

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, Any]]:
        episode = self.session.episode
        if episode is None or not self.agents:
            raise RuntimeError("step: reset() must be called before step(), and not after the end")
        rewards = dict.fromkeys(self.agents, 0.0)
        components: dict[str, dict[str, float]] = {agent: {} for agent in self.agents}
        errors: dict[str, ActionError | None] = dict.fromkeys(self.agents)
        for agent in AGENTS:
            if episode.done:
                break
            outcome = episode.step(self.session.translate(agent, actions.get(agent)))
            errors[agent] = outcome.error
            for name in AGENTS:
                rewards[name] += outcome.rewards[name]
                for key, value in outcome.components.get(name, {}).items():
                    components[name][key] = components[name].get(key, 0.0) + value
        done = episode.done
        observations = {agent: self._observe_round(agent) for agent in self.agents}
        terminations = dict.fromkeys(self.agents, episode.terminated)
        truncations = dict.fromkeys(self.agents, episode.truncated)
        infos = {agent: self.session.info(agent, components[agent], errors[agent]) for agent in self.agents}
        if done:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos


def parallel_env(**kwargs: Any) -> parallel_raw_env:
    return parallel_raw_env(**kwargs)
