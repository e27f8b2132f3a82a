"""One scenario, one address: a `ScenarioKey` names the pack it generates, reads back from its
id, and refuses a bad field by name wherever it is built."""

from __future__ import annotations

import pytest

from replicalab.scenarios import ScenarioKey, generate_pack, generate_scenario


def test_a_key_s_id_is_its_pack_s_scenario_id_and_parses_back() -> None:
    key = ScenarioKey("ml-benchmark-like", "test", "hard", 12)
    assert key.id == "ml-benchmark-like-test-hard-12"
    assert ScenarioKey.parse(key.id) == key
    pack = generate_pack(ScenarioKey("ml_benchmark", "test", "hard", 12))
    assert pack == generate_scenario(12, "ml_benchmark", "hard", "test")
    assert ScenarioKey.parse(pack.scenario_id) == ScenarioKey("ml_benchmark", "test", "hard", 12)


@pytest.mark.parametrize(
    ("fields", "error", "match"),
    [
        (("ml_benchmark", "train", "easy", -1), ValueError, "seed: must be non-negative"),
        (("ml_benchmark", "train", "easy", True), TypeError, "seed: expected a non-negative int"),
        (("ml_benchmark", "train", "easy", 1.0), TypeError, "seed: expected a non-negative int"),
        (("ml_benchmark", "train", "brutal", 1), ValueError, "difficulty: unknown difficulty 'brutal'"),
        (("ml_benchmark", "dev", "easy", 1), ValueError, "split: unknown split 'dev'"),
        ((None, "train", "easy", 1), TypeError, "template: expected a template name"),
    ],
)
def test_a_bad_field_is_refused_by_name(
    fields: tuple[object, ...], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        ScenarioKey(*fields)  # type: ignore[arg-type]


def test_keys_order_and_hash_as_values() -> None:
    keys = {ScenarioKey("a", "train", "easy", 2), ScenarioKey("a", "train", "easy", 2)}
    assert len(keys) == 1
    assert ScenarioKey("a", "train", "easy", 1) < ScenarioKey("a", "train", "easy", 2)
