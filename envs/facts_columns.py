"""The facts columns: what the paper publicly says of each candidate, as the facts view
(`reading="facts"`) lays it out in place of the hashed text columns.

A training aid that takes reading out of the game: each candidate slot carries its public label
(`replicalab.scenarios.public_labels`: used, not used, mentioned only; unstated is all zero),
exactly what the public-information oracle reads, so a learner can be trained on the negotiation
and the plan alone. A score on this view is never the reading benchmark's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from replicalab.scenarios.public_labels import PublicLabel, public_labels
from replicalab.scenarios.types import NormalizedScenarioPack

SAID: tuple[PublicLabel, ...] = ("used", "not_used", "mentioned")  # the labels with a column
FACT_FIELDS = tuple(f"paper={label}" for label in SAID)
"""What the paper says of a candidate (`facts_columns`), one-hot; unstated leaves all three 0."""


def facts_columns(pack: NormalizedScenarioPack, names: Sequence[str]) -> np.ndarray:
    """`FACT_FIELDS` of each candidate of `names` in `pack`'s paper, one row each: the one-hot
    of its public label, all 0 when the method does not name it (a generic slot, an empty
    name). Raises a ValueError when the pack is not the one its seed generates."""
    labels = public_labels(pack)
    out = np.zeros((len(names), len(FACT_FIELDS)), dtype=np.float32)
    for row, name in enumerate(names):
        label = labels.get(name, "unstated")
        if label != "unstated":
            out[row, SAID.index(label)] = 1.0
    return out
