"""One text column of the observation, read by a fixed rule, is a cue and not an answer: the rule
claims what the column says and nothing else; and the reader's cue that orders a
"former"/"latter" pair says nothing outside such sentences (where sentence position alone gave
away the generator's wording)."""

from __future__ import annotations

import pytest

from replicalab.baselines.policies.probes import wanted_samples
from replicalab.baselines.policies.readers import SingleCueScientist
from replicalab.envs.text_columns import CUE_FIELDS, text_columns
from replicalab.episode import Episode
from replicalab.models import Paper
from replicalab.reading import cues
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario

PACKS = [
    generate_scenario(seed, template, level, "train")  # the split whose wording orders pairs
    for template in BUILTIN_TEMPLATES
    for level in DIFFICULTIES
    for seed in range(4)
]


def test_first_is_set_only_where_a_sentence_orders_a_pair() -> None:
    found = [cue for pack in PACKS for name in pack.candidates.elements for cue in cues(pack.paper, name)]
    assert any(cue.first for cue in found)
    assert all(cue.former or cue.latter for cue in found if cue.first)


@pytest.mark.parametrize(("field", "threshold", "below"), [("exact", 1.0, False), ("partial", 0.75, True)])
def test_a_rule_claims_the_candidates_its_column_passes(field: str, threshold: float, below: bool) -> None:
    rule = SingleCueScientist(field, threshold, below)
    column = CUE_FIELDS.index(field)
    for pack in PACKS:
        c = pack.candidates

        def passing(names: list[str], paper: Paper = pack.paper) -> tuple[str, ...]:
            values = list(text_columns(paper, names)[:, column])
            return tuple(
                n for n, v in zip(names, values, strict=True) if (v < threshold if below else v >= threshold)
            )

        choices = rule.choices(Episode(pack).scientist_observation())
        assert choices.elements == passing(c.elements)
        assert choices.controls == passing(c.controls)
        assert choices.technique == (*passing(c.techniques), c.techniques[0])[0]
        assert choices.sample_size == wanted_samples(pack.paper)


def test_an_unknown_column_is_named() -> None:
    with pytest.raises(ValueError, match="field: 'verdict' is not a text column"):
        SingleCueScientist("verdict", 1.0)
