"""The shared front of every env: draw a scenario, own the `Episode`, translate both ways.

The AEC env, the parallel env and the Gymnasium env each hold one `Session`; none of them knows
a rule of the game (those are `replicalab.episode.Episode`'s), and none of them translates an
action or an observation on its own.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding

from replicalab.agents import build_scientist_system_prompt, format_scientist_observation
from replicalab.checks import check_positive_int
from replicalab.envs import codec
from replicalab.envs.features import Layouts, Observer, check_reading
from replicalab.envs.spaces import (
    fit_text,
    lab_manager_action_space,
    lab_manager_observation_space,
    scientist_action_space,
    scientist_observation_space,
)
from replicalab.episode import Episode, check_max_rounds
from replicalab.models import LabManagerAction, ScientistAction
from replicalab.moves import LAB_MANAGER, SCIENTIST, ActionError, coerce_action
from replicalab.rewards import RewardConfig, reward_config_of
from replicalab.scenarios import (
    BUILTIN_TEMPLATES,
    DEFAULT_MAX_ROUNDS,
    DIFFICULTIES,
    NormalizedScenarioPack,
    ScenarioKey,
    generate_pack,
    template_names,
)
from replicalab.scenarios.key import check_seed
from replicalab.scenarios.registry import check_difficulty, check_has_cases, check_split

ACTION_MODES = ("structured", "text")
KEPT_SCENARIOS = 1024  # the most scenarios of capped train splits one process keeps made


class _Scenario(NamedTuple):
    """A pack with what translates its episodes; nothing in it changes while they are played."""

    pack: NormalizedScenarioPack
    scientist_codec: codec.ScientistCodec
    observer: Observer
    system_prompt: str


_KEPT: dict[tuple[ScenarioKey, tuple[str, ...], str, bool], _Scenario] = {}
"""The scenarios of capped train splits this process has made, with what translates them, by key,
layout (the registered templates, the reading) and whether a system prompt was written: every
session of the process reads and fills the same store, so many envs hold one copy of each (the
first KEPT_SCENARIOS made, about 40 KiB each). A kept scenario is the one its key generates,
so an env plays the same episodes whether it finds one kept or makes it."""

_DRAW_OPTIONS = ("template", "difficulty", "scenario_seed")
OPTIONS = ("scenario", *_DRAW_OPTIONS)
"""The keys `reset(options=...)` reads: a pack to play (alone), or the template, difficulty and
seed of the drawn one (the env docstrings say more). What is not pinned is drawn as usual, and
the draws happen whatever is pinned, so the env's generator moves alike. Other keys are ignored
with a warning."""


def _names(argument: str, value: object, default: tuple[str, ...]) -> tuple[str, ...]:
    """`value` as names: None means `default`, a bare string is one name, else a list or tuple
    (not a set: the draws read the names in order)."""
    if value is None:
        return default
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{argument}: expected a name or a list of names, got {type(value).__name__}")
    return tuple(value)


def _checked_options(options: object) -> Mapping[str, Any]:
    """`options` of a reset, refused with an error naming the key when a known key holds what
    it cannot pin; an unknown key is ignored with a warning."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"options: expected a dict or None, got {type(options).__name__}")
    for key in options:
        if key not in OPTIONS:  # ignored, not refused: PettingZoo's api_test resets with one
            warnings.warn(
                f"options: unknown key {key!r} ignored; valid: {', '.join(OPTIONS)}",
                UserWarning,
                stacklevel=4,  # the caller of the env's reset()
            )
    if "scenario" in options:
        if any(key in options for key in _DRAW_OPTIONS):
            raise ValueError("options: 'scenario' pins the whole pack and takes no other option")
        if not isinstance(options["scenario"], NormalizedScenarioPack):
            raise TypeError("options['scenario']: expected a NormalizedScenarioPack")
    if "template" in options and options["template"] not in template_names():
        raise ValueError(
            f"options['template']: unknown template {options['template']!r}; valid: {', '.join(template_names())}"
        )
    if "difficulty" in options:
        check_difficulty(options["difficulty"], "options['difficulty']")
    if "scenario_seed" in options:
        check_seed(options["scenario_seed"], "options['scenario_seed']")
    return options


class Session:
    """The shared front: draw a scenario, own the Episode, translate actions and observations.

    Both the AEC env and the parallel env (and the Gymnasium env) hold one; none of them knows a
    rule of the game.
    """

    def __init__(
        self,
        *,
        templates: str | tuple[str, ...] | list[str] | None = None,
        difficulties: str | tuple[str, ...] | list[str] | None = None,
        reward_config: str | RewardConfig = "default",
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        step_cap: int | None = None,
        action_mode: str = "structured",
        split: str = "train",
        num_train_scenarios: int | None = None,
        reading: str = "text",
    ) -> None:
        self.split = check_split(split)
        if num_train_scenarios is not None:
            check_positive_int("num_train_scenarios", num_train_scenarios)
            if self.split != "train":
                raise ValueError(f"num_train_scenarios: caps the train split only, got split={split!r}")
        self.num_train_scenarios = num_train_scenarios
        self.templates = _names("templates", templates, BUILTIN_TEMPLATES)
        self.difficulties = _names("difficulties", difficulties, DIFFICULTIES)
        if not self.templates:
            raise ValueError("templates: give at least one template")
        for name in self.templates:
            check_has_cases(name, self.split)  # refuses an unknown template, naming the valid ones
        for level in self.difficulties:
            check_difficulty(level)
        if not self.difficulties:
            raise ValueError("difficulties: give at least one difficulty")
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode: must be one of {ACTION_MODES}, got {action_mode!r}")
        self.reward_config = reward_config_of(reward_config)
        self.max_rounds = check_max_rounds(max_rounds)
        if step_cap is not None:
            check_positive_int("step_cap", step_cap)
        self.step_cap = step_cap
        self.action_mode = action_mode
        self.reading = check_reading(reading)
        # The registry as it stands now fixes the template one-hot and the structured vocabularies.
        self.layouts = Layouts.of(template_names(), self.reading)
        self.action_spaces: dict[str, spaces.Space[Any]] = {
            SCIENTIST: scientist_action_space(action_mode),
            LAB_MANAGER: lab_manager_action_space(),
        }
        self.observation_spaces: dict[str, spaces.Space[Any]] = {
            SCIENTIST: scientist_observation_space(action_mode, self.layouts.scientist.size),
            LAB_MANAGER: lab_manager_observation_space(self.layouts.lab_manager.size),
        }
        self.episode: Episode | None = None
        self.np_random: np.random.Generator | None = None
        self.system_prompt = ""

    def start(self, seed: int | None, options: Mapping[str, Any] | None) -> Episode:
        """Begin a new episode; `options` may pin parts of the scenario (see `OPTIONS`)."""
        options = _checked_options(options)
        if seed is not None or self.np_random is None:
            self.np_random, _ = seeding.np_random(seed)
        rng = self.np_random
        template = self.templates[int(rng.integers(len(self.templates)))]
        difficulty = self.difficulties[int(rng.integers(len(self.difficulties)))]
        scenario_seed = int(rng.integers(self.num_train_scenarios or 2**31 - 1))
        pinned = options.get("scenario")
        if pinned is None:
            key = ScenarioKey(
                options.get("template", template),
                self.split,
                options.get("difficulty", difficulty),
                options.get("scenario_seed", scenario_seed),
            )
            scenario = self._scenario(key)
        else:
            scenario = self._pinned(pinned)
        pack, self.scientist_codec, self.observer, self.system_prompt = scenario
        self.episode = Episode(
            pack,
            max_rounds=self.max_rounds,
            reward_config=self.reward_config,
            step_cap=self.step_cap,
        )
        return self.episode

    def _scenario(self, key: ScenarioKey) -> _Scenario:
        """The scenario of this key: the kept one, or a new one, kept if it belongs to the capped
        set and there is room."""
        cap = self.num_train_scenarios
        if cap is None or key.seed >= cap or key.template not in self.templates:
            return self._translators(generate_pack(key))
        if key.difficulty not in self.difficulties:
            return self._translators(generate_pack(key))
        kept_as = (key, self.layouts.templates, self.reading, self.action_mode == "text")
        kept = _KEPT.get(kept_as)
        if kept is None:
            kept = self._translators(generate_pack(key))
            if len(_KEPT) < KEPT_SCENARIOS:
                _KEPT[kept_as] = kept
        return kept

    def _pinned(self, pack: NormalizedScenarioPack) -> _Scenario:
        """A pack given at reset, translated; the facts view reads facts only its seed records."""
        try:
            return self._translators(pack)
        except ValueError as exc:
            if self.reading != "facts":
                raise
            raise ValueError(f"options['scenario']: reading='facts' needs a generated pack ({exc})") from None

    def _translators(self, pack: NormalizedScenarioPack) -> _Scenario:
        """`pack` with what translates its episodes: the codec, the observer, the system prompt."""
        scientist_codec = codec.ScientistCodec(pack)
        prompt = build_scientist_system_prompt(pack) if self.action_mode == "text" else ""
        return _Scenario(pack, scientist_codec, Observer(self.layouts, scientist_codec), prompt)

    def translate(self, agent: str, action: Any) -> ScientistAction | LabManagerAction | ActionError:
        """What the agent's action means, whatever form it came in: a model, a dict or model
        text as `coerce_action` reads them, anything else as an element of the agent's
        structured action space."""
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

    def started(self, what: str) -> Episode:
        """The episode being played; `what` (the caller's name) was called too early if none is."""
        if self.episode is None:
            raise RuntimeError(f"{what}: reset() must be called first")
        return self.episode

    def observe(self, agent: str) -> dict[str, Any]:
        episode = self.episode
        if episode is None:
            raise RuntimeError("observe: reset() must be called before observe() or last()")
        if agent == SCIENTIST:
            features = self.observer.scientist(episode)
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
        if agent != LAB_MANAGER:
            raise ValueError(f"agent: unknown agent {agent!r}; agents: {SCIENTIST}, {LAB_MANAGER}")
        return {
            "observation": self.observer.lab_manager(episode),
            "action_mask": codec.lab_manager_mask(episode),
        }

    def info(
        self,
        agent: str,
        outcome_components: dict[str, float] | None = None,
        error: ActionError | None = None,
    ) -> dict[str, Any]:
        """What `agent` may read about the last step (see `infos`)."""
        return self.infos({agent: outcome_components}, {agent: error})[agent]

    def infos(
        self,
        components: Mapping[str, dict[str, float] | None],
        errors: Mapping[str, ActionError | None],
    ) -> dict[str, dict[str, Any]]:
        """What each agent of `components` may read about the last step: never the hidden
        reference or private lab facts.

        An agent's components become its info's own (every caller passes dicts it built or was
        given by `Episode.step`, which copies), so they are not copied again.
        """
        episode = self.episode
        assert episode is not None
        rounds, limit = episode.round_number, episode.max_rounds
        round_number = rounds if rounds < limit else limit
        done = episode.done
        out: dict[str, dict[str, Any]] = {}
        for agent, terms in components.items():
            error = errors.get(agent)
            info: dict[str, Any] = {
                "round": round_number,
                "reward_components": {} if terms is None else terms,
                "error": None if error is None else {"code": error.code, "message": error.message},
            }
            if done:
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
            out[agent] = info
        return out
