"""The facts view (`reading="facts"`): every Scientist front passes the standard checkers with it,
its candidate columns are the paper's public labels and nothing else, and a bad value is refused."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, parallel_api_test, seed_test

import replicalab.envs
from replicalab.baselines.policies.readers import PublicOracleScientist
from replicalab.envs import replicalab_v3
from replicalab.envs.facts_columns import FACT_FIELDS, SAID, facts_columns
from replicalab.envs.features import feature_names
from replicalab.envs.scientist_v3 import ScientistEnv
from replicalab.envs.spaces import MAX_CONTROLS, MAX_ELEMENTS, MAX_TECHNIQUES
from replicalab.envs.text_columns import CUE_FIELDS
from replicalab.scenarios import BUILTIN_TEMPLATES, NormalizedScenarioPack, generate_scenario
from replicalab.scenarios.public_labels import public_labels

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:pettingzoo\\.test")
MODES = ("structured", "text")
SLOTS = ("technique", "control", "element")
COUNTS = {"technique": MAX_TECHNIQUES, "control": MAX_CONTROLS, "element": MAX_ELEMENTS}


@pytest.mark.parametrize("mode", MODES)
def test_pettingzoo_checks_pass_on_the_facts_view(mode: str) -> None:
    api_test(replicalab_v3.env(action_mode=mode, reading="facts"), num_cycles=60)
    seed_test(lambda: replicalab_v3.env(action_mode=mode, reading="facts"), num_cycles=60)
    parallel_api_test(replicalab_v3.parallel_env(action_mode=mode, reading="facts"), num_cycles=60)


@pytest.mark.parametrize("mode", MODES)
def test_gymnasium_check_env_passes_on_the_facts_view(mode: str) -> None:
    env = gym.make(replicalab.envs.SCIENTIST_ENV_ID, action_mode=mode, reading="facts")
    check_env(env.unwrapped)


@pytest.mark.parametrize("mode", MODES)
def test_the_facts_view_keeps_the_action_space_and_drops_every_text_column(mode: str) -> None:
    text, facts = ScientistEnv(action_mode=mode), ScientistEnv(action_mode=mode, reading="facts")
    assert text.action_space == facts.action_space
    names = feature_names("scientist", reading="facts")
    assert facts.observation_space["observation"].shape == (len(names),)
    assert not any(n.endswith(f".{field}") for n in names for field in CUE_FIELDS)
    assert "element[0].paper=used" in names and "technique[0].paper=mentioned" in names
    assert feature_names("lab_manager", reading="facts") == feature_names("lab_manager")


def _slot_columns(observation: np.ndarray, names: list[str], piece: str, count: int) -> np.ndarray:
    start = names.index(f"{piece}[0].{FACT_FIELDS[0]}")
    width = names.index(f"{piece}[1].{FACT_FIELDS[0]}") - start
    return np.stack(
        [observation[start + i * width : start + i * width + len(FACT_FIELDS)] for i in range(count)]
    )


def test_each_slot_carries_its_candidate_s_public_label_the_label_the_oracle_reads() -> None:
    names = feature_names("scientist", reading="facts")
    env = ScientistEnv(reading="facts", split="test")
    for seed in range(12):
        obs, _ = env.reset(seed=seed)
        pack = env.episode.scenario
        labels = public_labels(pack)
        codec = env.session.scientist_codec
        for piece, listed in zip(SLOTS, (codec.techniques, codec.controls, codec.elements), strict=True):
            columns = _slot_columns(obs["observation"], names, piece, len(listed))
            for name, row in zip(listed, columns, strict=True):
                label = labels.get(name, "unstated")
                expected = [label == said for said in SAID]
                assert row.tolist() == expected, (pack.scenario_id, name, label)
        oracle = PublicOracleScientist()
        oracle.act(env.episode)  # the oracle claims exactly the `used` label's candidates
        claimed = {*oracle.choices(pack.scientist_observation).elements}
        assert claimed == {e for e in pack.candidates.elements if labels[e] == "used"}


def _other_study(pack: NormalizedScenarioPack) -> NormalizedScenarioPack:
    """`pack` with a different hidden study its paper says the same of: an element the method
    leaves unstated swaps between required and not."""
    labels = public_labels(pack)
    spec = pack.hidden_reference_spec
    unstated = [e for e in pack.candidates.elements if labels[e] == "unstated"]
    required = [e for e in spec.required_elements if e not in unstated[:1]]
    required += [e for e in unstated[:1] if e not in spec.required_elements]
    other = spec.model_copy(update={"required_elements": required})
    return pack.model_copy(update={"hidden_reference_spec": other})


def test_the_facts_columns_are_a_function_of_the_public_paper_only() -> None:
    names = feature_names("scientist", reading="facts")
    compared = 0
    for template in BUILTIN_TEMPLATES:
        for seed in range(6):
            pack = generate_scenario(seed, template, "hard", "validation")
            other = _other_study(pack)
            if other.hidden_reference_spec == pack.hidden_reference_spec:
                continue  # every element stated: no hidden difference the paper keeps quiet on
            seen = []
            for given in (pack, other):
                env = ScientistEnv(reading="facts")
                obs, _ = env.reset(seed=seed, options={"scenario": given})
                seen.append(
                    np.concatenate([_slot_columns(obs["observation"], names, p, COUNTS[p]) for p in SLOTS])
                )
            assert np.array_equal(seen[0], seen[1])
            compared += 1
    assert compared >= 12


def test_a_pack_its_seed_does_not_generate_is_refused_naming_the_option() -> None:
    pack = generate_scenario(0, "ml_benchmark", "easy", "train")
    paper = pack.paper.model_copy(update={"method": pack.paper.method + " An extra sentence."})
    forged = pack.model_copy(update={"paper": paper})
    with pytest.raises(ValueError, match=r"options\['scenario'\]"):
        ScientistEnv(reading="facts").reset(seed=0, options={"scenario": forged})
    ScientistEnv().reset(seed=0, options={"scenario": forged})  # the text view reads any paper


@pytest.mark.parametrize("bad", ["fact", "", None, 1])
def test_a_bad_reading_raises_an_error_naming_the_argument(bad: object) -> None:
    for make in (ScientistEnv, replicalab_v3.env, replicalab_v3.parallel_env):
        with pytest.raises(ValueError, match=r"^reading: "):
            make(reading=bad)


def test_facts_columns_of_names_the_paper_never_states_are_zero() -> None:
    pack = generate_scenario(2, "math_reasoning", "medium", "train")
    columns = facts_columns(pack, ["not a candidate", "", *pack.candidates.elements])
    assert not columns[:2].any()
    assert set(columns.sum(axis=1).tolist()) <= {0.0, 1.0}
