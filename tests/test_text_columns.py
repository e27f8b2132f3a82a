"""The Scientist's text columns are read from the method alone, the same in every process: the
words and word pairs around a candidate, hashed into buckets a learner must learn to read."""

from __future__ import annotations

import subprocess
import sys
import zlib

import numpy as np

from replicalab.envs import replicalab_v3
from replicalab.envs.codec import ScientistCodec
from replicalab.envs.features import feature_names
from replicalab.envs.text_columns import CUE_FIELDS, HASH_BUCKETS, NAMING_FIELDS, text_columns
from replicalab.models import Paper
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES

NAME = "dropout inside residual blocks"


def _paper(method: str) -> Paper:
    return Paper(title="t", hypothesis="h", method=method, key_finding="k", reported_sample_size=10)


def _hashed(method: str, name: str = NAME) -> np.ndarray:
    return text_columns(_paper(method), [name])[0, len(NAMING_FIELDS) :]


def test_every_text_column_is_named_and_none_is_a_word_list() -> None:
    assert ("mentions", "exact", "partial", *(f"hash[{b}]" for b in range(HASH_BUCKETS))) == CUE_FIELDS
    names = feature_names("scientist")
    assert "element[0].hash[0]" in names and f"technique[0].hash[{HASH_BUCKETS - 1}]" in names
    assert not {"negation", "contrast", "hedge", "former", "latter", "first"} & {
        n.rsplit(".", 1)[-1] for n in names
    }


def test_a_candidate_no_sentence_mentions_has_all_zero_columns() -> None:
    assert not text_columns(_paper("The model is trained. Weights are averaged."), [NAME, ""]).any()


def test_the_words_around_a_candidate_and_the_next_sentence_count_the_rest_does_not() -> None:
    base = _hashed(f"An unrelated sentence. Training uses {NAME}. The runs last a week.")
    assert base.any() and np.all((base >= 0) & (base <= 1))
    assert np.array_equal(
        base, _hashed(f"Another sentence entirely. Training uses {NAME}. The runs last a week.")
    )
    assert not np.array_equal(
        base, _hashed(f"An unrelated sentence. Training uses {NAME}. The runs were cut.")
    )
    assert not np.array_equal(
        base, _hashed(f"An unrelated sentence. Training skips {NAME}. The runs last a week.")
    )
    assert not np.array_equal(
        base, _hashed(f"An unrelated sentence. {NAME} uses training. The runs last a week.")
    )


def test_the_columns_are_the_same_under_any_hash_seed() -> None:
    code = (
        "from replicalab.scenarios import generate_scenario;"
        "from replicalab.envs.text_columns import text_columns;"
        "p = generate_scenario(3, 'ml_benchmark', 'hard', 'test');"
        "print(text_columns(p.paper, p.candidates.elements).tobytes().hex())"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("0", "1", "12345")
    }
    assert len(seen) == 1


def test_the_observation_carries_each_slot_s_text_columns() -> None:
    env = replicalab_v3.env()
    names = feature_names("scientist")
    for template in BUILTIN_TEMPLATES:
        for level in DIFFICULTIES:
            env.reset(seed=0, options={"template": template, "difficulty": level})
            observation = env.observe("scientist")["observation"]
            slots = ScientistCodec(env.unwrapped.episode.scenario)
            for piece, listed in (
                ("technique", slots.techniques),
                ("element", slots.elements),
                ("control", slots.controls),
            ):
                read = text_columns(env.unwrapped.episode.scenario.paper, listed)
                for i in range(len(listed)):
                    start = names.index(f"{piece}[{i}].{CUE_FIELDS[0]}")
                    assert np.array_equal(observation[start : start + len(CUE_FIELDS)], read[i])


def test_each_feature_goes_to_the_bucket_crc32_of_its_text_picks() -> None:
    method = f"The runs use {NAME} in training. Only two were kept."
    features = ["<the", "<runs", "<use", ">in", ">training"]  # the candidate is one place-holder
    features += ["the runs", "runs use", "use @", "@ in", "in training"]
    features += ["+only", "+two", "+were", "+kept"]
    expected = np.zeros(HASH_BUCKETS)
    for feature in features:
        expected[zlib.crc32(feature.encode()) % HASH_BUCKETS] += 1
    assert np.array_equal(_hashed(method), np.minimum(expected / 4, 1).astype(np.float32))
