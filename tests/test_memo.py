"""`IdentityMemo` and the per-object caches built on it: a value is served only to the very
objects it was derived from, a dead pack is never kept alive, and a changed input is never
answered from the cache of the object it was copied from."""

from __future__ import annotations

import gc
import weakref

from replicalab.agents.scientist_policy import build_baseline_scientist_action
from replicalab.memo import IdentityMemo
from replicalab.models import Constraint, Protocol
from replicalab.scenarios import generate_scenario
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.validation import validate_protocol


class Box:
    """A weakly referenceable stand-in for a pack."""


def test_a_value_is_served_only_to_the_same_objects() -> None:
    memo: IdentityMemo[str] = IdentityMemo(weak=False)
    first, second = [1, 2], [3]
    assert memo.get((first, second)) is None
    assert memo.put((first, second), "derived") == "derived"
    assert memo.get((first, second)) == "derived"
    assert memo.get(([1, 2], second)) is None  # equal but another object
    assert memo.get((first, [3])) is None  # a later object differs
    memo.put((first, [3]), "again")  # replaces the entry of `first`
    assert memo.get((first, second)) is None


def test_a_weak_memo_never_keeps_its_object_alive() -> None:
    memo: IdentityMemo[int] = IdentityMemo(weak=True)
    box = Box()
    memo.put((box,), 7)
    assert memo.get((box,)) == 7
    ref = weakref.ref(box)
    del box
    gc.collect()
    assert ref() is None
    other = Box()
    assert memo.get((other,)) is None  # whatever id it got


def test_a_strong_memo_is_bounded() -> None:
    memo: IdentityMemo[int] = IdentityMemo(weak=False, size=2)
    lists = [[i] for i in range(3)]
    for i, held in enumerate(lists):
        memo.put((held,), i)
    assert memo.get((lists[2],)) == 2
    assert memo.get((lists[0],)) is None


def test_the_baseline_rereads_a_brief_whose_lists_changed() -> None:
    pack = generate_scenario(5, "ml_benchmark", "easy")
    obs = pack.scientist_observation
    first = build_baseline_scientist_action(obs)
    limit = Constraint(id="c99", kind="max_duration_days", description="Very short.", hard=True, quantity=2.0)
    tighter = obs.model_copy(update={"constraints": [*obs.constraints, limit]})
    assert build_baseline_scientist_action(tighter).duration_days == 2
    assert build_baseline_scientist_action(obs) == first  # the original brief is still served
    assert first.required_equipment and first.required_reagents
    no_items = build_baseline_scientist_action(obs.model_copy(update={"resources": []}))
    assert no_items.required_equipment == [] and no_items.required_reagents == []
    again = build_baseline_scientist_action(obs)
    assert again == first and again.controls is not first.controls  # fresh lists each time


def test_validation_reads_each_pack_object_afresh() -> None:
    pack = generate_scenario(2, "finance_trading", "medium")
    bare = Protocol(sample_size=5, technique="a backtest", duration_days=2, rationale="r")
    needs = [i for i in validate_protocol(bare, pack).errors if "the method needs" in i.message]
    assert needs
    data = pack.model_dump()
    for item in data["resources"]:
        item["essential"] = False
    relaxed = NormalizedScenarioPack.model_validate(data)
    assert relaxed.scenario_id == pack.scenario_id
    assert not [i for i in validate_protocol(bare, relaxed).issues if "the method needs" in i.message]
    assert [i for i in validate_protocol(bare, pack).errors if "the method needs" in i.message] == needs
