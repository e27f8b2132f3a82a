"""What a paper publicly says of each candidate, one label per candidate: the facts its method's
sentences record (`generator.paper_facts`), folded per name.

A candidate is `used` when some sentence says the study did it, `not_used` when one says it did
not, `mentioned` when sentences name it and say nothing of this study, and `unstated` when no
sentence names it. The generator never says both `used` and `not_used` of one candidate; a
candidate said to be used (or not) and also mentioned elsewhere takes the verdict. These are the
labels the public-information oracle reads (it claims the `used` ones), the reading data set
carries, and the facts view of the envs lays out, so all three read the same thing.
"""

from __future__ import annotations

from typing import Literal

from replicalab.scenarios.generator import paper_facts
from replicalab.scenarios.types import NormalizedScenarioPack

PublicLabel = Literal["used", "not_used", "mentioned", "unstated"]
PUBLIC_LABELS: tuple[PublicLabel, ...] = ("used", "not_used", "mentioned", "unstated")
_RANK = {label: rank for rank, label in enumerate(PUBLIC_LABELS)}  # a verdict outranks a mention


def public_labels(pack: NormalizedScenarioPack) -> dict[str, PublicLabel]:
    """Each candidate of `pack` (techniques, elements, controls) with what its method says of
    it. Raises a ValueError when the pack is not the one its seed generates (`paper_facts`)."""
    c = pack.candidates
    labels: dict[str, PublicLabel] = dict.fromkeys((*c.techniques, *c.elements, *c.controls), "unstated")
    for fact in paper_facts(pack):
        if fact.candidate in labels and _RANK[fact.meaning] < _RANK[labels[fact.candidate]]:
            labels[fact.candidate] = fact.meaning
    return labels
