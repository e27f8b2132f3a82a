"""The one address of a scenario: its template, split, difficulty and seed, and the id they make.

Every front names a scenario through a `ScenarioKey`: the evaluation grid's cells, the metrics'
match of an episode to the oracle's, the chat episode's dataset rows and the env's draws. Its
id, `{template}-{split}-{difficulty}-{seed}`, is the generated pack's `scenario_id`, and every
episode id is made here too (`episode_id`: `{scenario_id}/{scientist}/{lab_manager}`, and `/k` for
the k-th rollout of a group). The key's fields are checked here and
nowhere else; whether the template is registered and has cases in the split is the registry's to
say, when the pack is generated (`generate_pack`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replicalab.scenarios.registry import check_difficulty, check_split
from replicalab.scenarios.types import DIFFICULTIES, SPLITS, Difficulty, Split

__all__ = ["ScenarioKey", "check_seed"]


def check_seed(seed: object, name: str = "seed") -> int:
    """`seed` as an int when it is a non-negative integer (not a bool, not a float), else an
    error naming `name`."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{name}: expected a non-negative int, got {seed!r}")
    if seed < 0:
        raise ValueError(f"{name}: must be non-negative, got {seed}")
    return int(seed)


@dataclass(frozen=True, slots=True, order=True)
class ScenarioKey:
    """What generates one scenario pack: `generate_scenario(seed, template, difficulty, split)`."""

    template: str
    split: Split
    difficulty: Difficulty
    seed: int

    def __post_init__(self) -> None:
        if not isinstance(self.template, str):
            raise TypeError(f"template: expected a template name, got {self.template!r}")
        object.__setattr__(self, "seed", check_seed(self.seed))
        object.__setattr__(self, "difficulty", check_difficulty(self.difficulty))
        object.__setattr__(self, "split", check_split(self.split))

    @property
    def id(self) -> str:
        """The pack's `scenario_id`."""
        return f"{self.template}-{self.split}-{self.difficulty}-{self.seed}"

    def episode_id(self, scientist: str, lab_manager: str, rollout: int | None = None) -> str:
        """The id of an episode of this scenario between two seats (`rollout`: its number in a
        group of rollouts of one cell)."""
        cell = f"{self.id}/{scientist}/{lab_manager}"
        return cell if rollout is None else f"{cell}/{rollout}"

    @classmethod
    def parse(cls, scenario_id: str) -> ScenarioKey:
        """The key of a `scenario_id`, read from the right (a template name may hold '-')."""
        if not isinstance(scenario_id, str):
            raise TypeError(f"scenario_id: expected a str, got {type(scenario_id).__name__}")
        parts = scenario_id.rsplit("-", 3)
        if (
            len(parts) != 4
            or not parts[3].isdigit()
            or parts[2] not in DIFFICULTIES
            or parts[1] not in SPLITS
        ):
            raise ValueError(
                f"scenario_id: expected '{{template}}-{{split}}-{{difficulty}}-{{seed}}' with a split of "
                f"{', '.join(SPLITS)} and a difficulty of {', '.join(DIFFICULTIES)}, got {scenario_id!r}"
            )
        return cls(parts[0], parts[1], parts[2], int(parts[3]))
