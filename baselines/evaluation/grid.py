"""The grid a run plays and how one cell is played: the pieces every backend shares.

The grid is templates × difficulties × seeds, in that order; a cell is the `ScenarioKey` of
those three in the run's split, and each policy's seed is derived from its template, difficulty
and seed through `numpy.random.SeedSequence` (never `hash()`, which is salted per process).
Episode ids are `ScenarioKey.episode_id`'s: unique within a run, stable across runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from replicalab.baselines.policies.chat import EpisodeUsage
from replicalab.baselines.policies.interface import Policy, Seat, reset_policy
from replicalab.digest import EpisodeDigest
from replicalab.episode import Episode, check_max_rounds
from replicalab.models import EpisodeLog, Provenance, seed_ranges
from replicalab.play import play
from replicalab.rewards import RewardConfig, get_preset
from replicalab.scenarios import (
    DEFAULT_MAX_ROUNDS,
    DIFFICULTIES,
    NormalizedScenarioPack,
    ScenarioKey,
    generate_pack,
    get_template,
    template_names,
)
from replicalab.scenarios.key import check_seed
from replicalab.scenarios.registry import check_difficulty, check_split, template_key

PolicyFactory = Callable[[], Policy]
"""Builds a fresh policy; a class works. Must pickle for jobs > 1 where processes do not fork,
and for the Ray backend."""


@dataclass(frozen=True)
class Grid:
    templates: tuple[str, ...]
    difficulties: tuple[str, ...]
    seeds: tuple[int, ...]

    def __post_init__(self) -> None:
        for name in self.templates:
            get_template(name)  # refuses an unknown one, naming the valid ones
        for level in self.difficulties:
            check_difficulty(level)
        for seed in self.seeds:
            check_seed(seed)
        if not (self.templates and self.difficulties and self.seeds):
            raise ValueError("grid: needs at least one template, difficulty and seed")

    @classmethod
    def of(
        cls,
        templates: Sequence[str] | None = None,
        difficulties: Sequence[str] | None = None,
        seeds: int | Sequence[int] = 20,
        first_seed: int = 0,
    ) -> Grid:
        """All registered templates and all difficulties unless named; `seeds` a count or a list."""
        chosen = range(first_seed, first_seed + seeds) if isinstance(seeds, int) else seeds
        return cls(tuple(templates or template_names()), tuple(difficulties or DIFFICULTIES), tuple(chosen))

    def cells(self, split: str = "train") -> list[ScenarioKey]:
        """The scenarios of the grid in `split`, in grid order."""
        return [
            ScenarioKey(t, split, d, s)  # type: ignore[arg-type]  # the key checks them
            for t in self.templates
            for d in self.difficulties
            for s in self.seeds
        ]


@dataclass(frozen=True)
class Settings:
    """What every episode of a run shares besides its policies."""

    reward_config: RewardConfig = field(default_factory=lambda: get_preset("default"))
    max_rounds: int = DEFAULT_MAX_ROUNDS
    step_cap: int | None = None
    split: str = "train"  # which held-out set the grid's scenarios come from

    def __post_init__(self) -> None:
        check_max_rounds(self.max_rounds)  # refused before any episode is played
        check_split(self.split)


def run_provenance(grid: Grid, settings: Settings, scientist: Seat, lab_manager: Seat) -> Provenance:
    """What a run of `grid` under `settings` by these seats records as having produced it."""
    return Provenance(
        policy=scientist.name,
        model=model_of(scientist),
        lab_manager=lab_manager.name,
        lab_manager_model=model_of(lab_manager),
        split=settings.split,
        templates=grid.templates,
        difficulties=grid.difficulties,
        reward_preset=settings.reward_config.name,
        seeds=seed_ranges(grid.seeds),
    )


def model_of(seat: object) -> str | None:
    """The model behind a language-model seat: a served model's name, or the `MODULE:ATTR` of
    the `GenerateFn` it calls; None for a seat that calls no model."""
    model = getattr(getattr(getattr(seat, "backend", None), "config", None), "model", None)
    if isinstance(model, str):
        return model
    generate_fn = getattr(seat, "generate_fn", None)
    if generate_fn is None:
        return None
    name = getattr(generate_fn, "__qualname__", type(generate_fn).__qualname__)
    return f"{getattr(generate_fn, '__module__', None) or '?'}:{name}"


@lru_cache(maxsize=1024)  # each rollout of a GRPO group asks for its cell's seed
def policy_seed(key: ScenarioKey) -> int:
    """The seed a policy gets for `key`: a SeedSequence of (seed, template, difficulty)."""
    entropy = [key.seed, template_key(key.template), DIFFICULTIES.index(key.difficulty)]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0])


def rollout_seed(key: ScenarioKey, rollout: int | None) -> int:
    """The policy seed of a rollout of `key`: `policy_seed` outside groups, else a SeedSequence
    of (that seed, the rollout index)."""
    seed = policy_seed(key)
    if rollout is None:
        return seed
    return int(np.random.SeedSequence([seed, rollout]).generate_state(1)[0])


def start_episode(
    key: ScenarioKey, settings: Settings, scenario: NormalizedScenarioPack | None = None
) -> Episode:
    """A fresh episode of `key`'s scenario under `settings`; `scenario` is that scenario when
    the caller has it already (`generate_pack(key)`)."""
    if scenario is None:
        scenario = generate_pack(key)
    return Episode(
        scenario,
        max_rounds=settings.max_rounds,
        reward_config=settings.reward_config,
        step_cap=settings.step_cap,
    )


def play_episode(
    key: ScenarioKey, scientist: Policy, lab_manager: Policy, settings: Settings | None = None
) -> EpisodeLog:
    """Play one episode of `key`'s scenario to the end and return its log."""
    episode = start_episode(key, settings or Settings())
    seed = policy_seed(key)
    reset_policy(scientist, seed)
    reset_policy(lab_manager, seed)
    play(episode, scientist, lab_manager)
    return episode.to_log(key.episode_id(scientist.name, lab_manager.name))


@dataclass
class RunResult:
    """A run's episodes in grid order: digests for the table, logs for whoever needs the rest."""

    digests: list[EpisodeDigest]  # one per grid cell, in grid order
    stats: dict[str, float]  # policy counters summed over the episodes played in this call
    resumed: int = 0  # episodes taken from the existing file
    usage: list[EpisodeUsage] | None = None
    """The model usage of the episodes played in this call; None where no seat awaits a model."""
    provenance: Provenance | None = None  # what played the run, as every log of it records
    _episodes: list[EpisodeLog | str] = field(default_factory=list, repr=False, compare=False)
    """Per grid cell, its log, or its JSON line where the run wrote one or a worker sent it."""

    @cached_property
    def logs(self) -> list[EpisodeLog]:
        """One per grid cell, in grid order. Built on first use: a parallel run's table needs
        only the digests, so its lines are parsed only for a caller that wants whole logs."""
        return [e if isinstance(e, EpisodeLog) else EpisodeLog.model_validate_json(e) for e in self._episodes]
