"""# ReplicaLab v3 (PettingZoo AEC)

| | |
|---|---|
| Import | `from replicalab.envs import replicalab_v3` |
| Actions | structured (default) or text |
| Parallel API | yes (`replicalab_v3.parallel_env()`): one step is one agent's turn; the other agent's mask is all zero and its action is ignored |
| Agents | `agents = ['scientist', 'lab_manager']` |
| Action shape | scientist: `MultiDiscrete` of 41 components (flat mask of 218), or text (JSON); lab_manager: `Discrete(4)` |
| Observation shape | `{"observation": Box(0, 1, (F,), float32), "action_mask": Box(0, 1, (M,), int8)}`, plus `"prompt": Text` in text mode |

## Description
A Scientist negotiates an experiment protocol with a Lab Manager who answers from the lab's
budget, equipment, reagents, schedule, staff and safety policy; a deterministic judge scores the
protocol they agree on. Each reset draws a scenario (template × difficulty × seed) from the
env's seed. The rules live in `replicalab.episode.Episode`; this module only translates.

## Actions
`action_mode="structured"`: the Scientist's action is one `MultiDiscrete` vector (type, sample
level, duration, technique slot, question, control slots, item slots; see `replicalab.envs.codec`); the
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
after `max_rounds` rounds; truncates at `step_cap` agent steps, when given. As PettingZoo
documents for dead agents, each agent then takes `step(None)` and leaves `agents`; once both
have left, `agent_iter` stops, `step()` only logs PettingZoo's warning, and `last()` raises
a `RuntimeError` (as it does before `reset()`, like `step()` and `observe()`).

## Arguments
`templates`, `difficulties`: the names drawn from at each reset (default: all); one name or a
list or tuple of them (`templates="ml_benchmark"` is that one template). `reward_config`
(preset name or `RewardConfig`), `max_rounds` (6; at least 2, a proposal then an accept), `step_cap` (None or a positive int),
`action_mode` ("structured" | "text"), `render_mode` ("ansi" | "human" | "rgb_array"), `split`
("train", "validation" or "test": whose papers the scenarios come from) and
`num_train_scenarios` (None, or a positive int n: the train split's scenario seeds are drawn
from 0 to n - 1, so scenarios recur; the env then generates each once and keeps it, with what
translates it, for its later episodes; every env of the process shares one store of up to
1,024 such scenarios) and `reading` ("text", the default, or "facts": how the Scientist's
structured observation reads the paper, its method's words around each candidate hashed, or
what the paper publicly says of each candidate, used / not used / mentioned only / unstated, a
training aid whose scores are never the reading benchmark's; the action space and the prompt
are the same; see docs/observation-features.md). A bad value raises a `ValueError` or
`TypeError` naming the argument.

## Reset options
`reset(seed=None, options=None)`: `options` is None or a dict with any of
* `"scenario"`: a `NormalizedScenarioPack` to play (alone: it takes no other key);
* `"template"`: the template of the drawn pack, any registered one;
* `"difficulty"`: its difficulty, "easy", "medium" or "hard";
* `"scenario_seed"`: its seed, a non-negative int (not a bool or a float).

What is not pinned is drawn from the env's generator as usual. A bad value raises a
`ValueError` or `TypeError` naming the key; an unknown key is ignored with a warning (PettingZoo's
`api_test` resets with one). `env.episode.to_log()` (or `env.unwrapped.episode`, through
wrappers) is the episode's `EpisodeLog`, on this env, the parallel env and the Gymnasium env.

## Version History
* v0: initial release.
* v0, parallel turns: a parallel step is one agent's turn (it was a whole round, whose Lab
  Manager was judged against a mask it had not observed), so every action an observed mask
  allows is accepted.
* v1: the negotiation binds. Medium and hard budgets fund only part of the study's samples at
  the lab's private prices, a proposal's quote is observed, the Lab Manager's counter-proposal
  is science-blind, three rounds are free of the efficiency charge, rigor's sample credit is
  linear. Scores are not comparable with v0's (CHANGELOG.md says why).
* v2: skill that survives shortcuts fitted on train. Train, validation and test papers are
  written from disjoint wording pools (verdicts across sentences, scoped negation, descriptions);
  the structured view carries each candidate's text hashed instead of word-list cues; rigor's
  sample credit is the power to detect the reported effect against the best plan the budget
  pays for; the bonuses scale with the plan's score and the efficiency bonus no longer grows
  with the round limit; the `potential` preset reads no study. Scores and observations are not
  comparable with v1's (CHANGELOG.md says why).
* v3: every point earnable from what the seat is told. A plan states its claims in fields (an
  `elements` list beside `technique` and `controls`); the judge and the lab's checks read claims
  by name, never the rationale (free text, at most 150 words); `duration_days` >= 1 is a rule of
  a proposal; the Scientist's prompt states every scoring rule; a counter-proposal shows as the
  plan `accept` adopts, at its own cost; a sample is named per family; papers' element counts
  vary and hard papers may leave the technique or a kept control unsaid; `reading="facts"` puts
  the paper's public facts in place of its hashed text. Scores are not comparable with v2's
  (CHANGELOG.md says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.env_logger import EnvLogger

from replicalab.envs.render import RENDER_MODES, Frame, check_render_mode, render
from replicalab.envs.session import Session
from replicalab.episode import Episode
from replicalab.moves import AGENTS, LAB_MANAGER, SCIENTIST


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

    @property
    def episode(self) -> Episode:
        """The `Episode` being played; `episode.to_log()` is its `EpisodeLog`."""
        return self.session.started("episode")

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def render(self) -> str | Frame | None:
        return render(self.render_mode, self.session.episode)

    def close(self) -> None:
        pass


class raw_env(_Front, AECEnv[str, dict[str, Any], Any]):
    metadata: ClassVar[dict[str, Any]] = {
        "name": "replicalab_v3",
        "render_modes": list(RENDER_MODES),
        "is_parallelizable": True,
    }

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        super().__init__()
        self._attach(render_mode, kwargs)
        self._started = False
        self.agents: list[str] = []

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
        self.infos = self.session.infos(dict.fromkeys(self.agents), {})
        if self.session.action_mode == "text":
            self.infos[SCIENTIST]["system_prompt"] = self.session.system_prompt
        self.agent_selection = episode.agent_selection

    def observe(self, agent: str) -> dict[str, Any]:
        return self.session.observe(agent)

    def last(self, observe: bool = True) -> tuple[dict[str, Any] | None, float, bool, bool, dict[str, Any]]:
        """PettingZoo's `last`, with a clear error when no agent is live: before `reset()`, and
        once every agent has left a finished episode (where `agent_iter` stops)."""
        if not self.agents:
            if not self._started:
                raise RuntimeError("last: reset() must be called before last()")
            raise RuntimeError("last: every agent has left the finished episode; call reset() for a new one")
        agent = self.agent_selection
        return (
            self.session.observe(agent) if observe else None,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    def step(self, action: Any) -> None:
        if not self.agents:
            if not self._started:
                raise RuntimeError("step: reset() must be called before step()")
            EnvLogger.warn_step_after_terminated_truncated()  # what PettingZoo's order wrapper does
            return
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        episode = self.session.episode  # set: reset() has been called
        assert episode is not None
        self._cumulative_rewards[agent] = 0.0
        outcome = episode.step(self.session.translate(agent, action))
        self.rewards = outcome.rewards
        self.infos = self.session.infos(outcome.components, {agent: outcome.error})  # both: none has left
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
    """One parallel step is one agent's turn, as in the AEC env: the agent to move acts, and the
    other one, whose observed mask is all zero, may send anything (None included), which is
    ignored. So every agent's action is judged against the mask it observed, and every action
    that mask allows is accepted. Both agents stay live until the episode ends."""

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
        return {agent: self.session.observe(agent) for agent in self.agents}, infos

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, Any]]:
        episode = self.session.episode
        if episode is None or not self.agents:
            raise RuntimeError("step: reset() must be called before step(), and not after the end")
        _check_actions(actions)
        agent = episode.agent_selection
        outcome = episode.step(self.session.translate(agent, actions.get(agent)))
        observations = {name: self.session.observe(name) for name in self.agents}
        terminations = dict.fromkeys(self.agents, episode.terminated)
        truncations = dict.fromkeys(self.agents, episode.truncated)
        infos = self.session.infos(outcome.components, {agent: outcome.error})
        if episode.done:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return observations, outcome.rewards, terminations, truncations, infos


def _check_actions(actions: object) -> None:
    """Refuse what cannot be a parallel step's actions: anything but a dict keyed by agents."""
    if not isinstance(actions, Mapping):
        raise TypeError(f"actions: expected a dict of agent -> action, got {type(actions).__name__}")
    for agent in actions:
        if agent not in AGENTS:
            raise ValueError(f"actions: unknown agent {agent!r}; agents: {', '.join(AGENTS)}")


def parallel_env(**kwargs: Any) -> parallel_raw_env:
    return parallel_raw_env(**kwargs)
