"""What produced a result: the record every result file carries (episode logs, a run's summary
and oracle files, a trained model's config), so a number read later says which game, policy,
papers and reward it came from, and two results that cannot be compared are seen not to be."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import Field

from replicalab.models.base import Contract
from replicalab.version import __version__

GAME_VERSION = 3
"""The version of the game's rules; it bumps with every change that moves a score."""
GAME_ID = f"replicalab_v{GAME_VERSION}"
"""The game a run plays, as the PettingZoo env is named: the runner plays the same rules."""
Reading = Literal["text", "facts"]
"""How the Scientist's observation carries the paper: its text (the reading benchmark), or the
public facts of each candidate (a training aid whose scores are not the reading benchmark's)."""
ANY_SEED = "any"
"""`Provenance.seeds` of a producer that draws its scenario seeds (a training env)."""
SEAT_FIELDS = ("policy", "model", "lab_manager", "lab_manager_model")
_SEEDS = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")
_VERSION_SUFFIX = re.compile(r"v(\d+)$")


class Provenance(Contract):
    """Which code, game, seats, scenarios and reward produced a result."""

    package_version: str = __version__  # the installed replicalab's version
    env_id: str = GAME_ID  # the game with its version: replicalab_v3, or ReplicaLab/Scientist-v3
    policy: str  # the Scientist's policy name (`evaluate -s`'s, or the learner's)
    model: str | None = None  # the Scientist's model, for a language-model policy
    lab_manager: str = "grounded"
    lab_manager_model: str | None = None  # the Lab Manager's model, for an llm Lab Manager
    split: str  # train | validation | test: which held-out papers
    templates: tuple[str, ...]
    difficulties: tuple[str, ...]
    reward_preset: str  # the reward config's name: a preset's, or the one its JSON file gives
    reading: Reading = "text"
    seeds: str = Field(pattern=rf"^({_SEEDS.pattern}|{ANY_SEED})$")
    """The scenario seeds as ascending ranges ("0-19", "0-4,7"), or "any" where they are drawn."""

    @property
    def game_version(self) -> int | None:
        """The game version in `env_id` (`replicalab_v3` → 2); None for an id without one."""
        found = _VERSION_SUFFIX.search(self.env_id)
        return int(found.group(1)) if found else None

    def label(self) -> str:
        """One line naming the result: what a report shows above its table."""
        policy = f"{self.policy} ({self.model})" if self.model else self.policy
        lab = f"{self.lab_manager} ({self.lab_manager_model})" if self.lab_manager_model else self.lab_manager
        return (
            f"{policy} vs {lab} · {self.env_id} · {self.split} split · {','.join(self.difficulties)} · "
            f"reward {self.reward_preset} · reading {self.reading} · seeds {self.seeds} · "
            f"replicalab {self.package_version}"
        )

    def without_seats(self) -> dict[str, object]:
        """Everything but who sat in the seats: what a reference policy's scores must share
        with a run to be compared with it."""
        return self.model_dump(exclude=set(SEAT_FIELDS))

    def flat(self) -> dict[str, str]:
        """The record as text columns, for a CSV row: lists comma-joined, None empty."""
        values = self.model_dump(mode="json")
        return {
            name: ",".join(value) if isinstance(value, list) else "" if value is None else str(value)
            for name, value in values.items()
        }


PROVENANCE_FIELDS = tuple(Provenance.model_fields)
"""The record's fields in order: the provenance columns of a summary CSV."""


def seed_ranges(seeds: Iterable[int]) -> str:
    """Seeds as `Provenance.seeds` writes them: sorted, runs of consecutive seeds as `a-b`."""
    ordered = sorted(set(seeds))
    if not ordered:
        raise ValueError("seeds: give at least one")
    parts: list[str] = []
    start = previous = ordered[0]
    for seed in [*ordered[1:], None]:
        if seed is not None and seed == previous + 1:
            previous = seed
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if seed is not None:
            start = previous = seed
    return ",".join(parts)
