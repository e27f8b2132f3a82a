"""While episodes are in flight the collector is tuned for them: the objects alive before them
are out of its walks and its youngest generation waits longer, both put back after, unless the
caller opts out; a caller's own freeze is left as it is."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from replicalab.baselines.evaluation.heap import YOUNG_THRESHOLD, rollout_collector
from replicalab.baselines.evaluation.rollouts import run_rollouts
from replicalab.baselines.evaluation.runner import Grid
from replicalab.baselines.policies.seats import RandomScientist
from replicalab.digest import EpisodeDigest

GRID = Grid.of(["ml_benchmark"], ["easy", "hard"], 2)  # 6 cells


@pytest.fixture(autouse=True)
def _collector_as_python_has_it() -> Iterator[tuple[int, int, int]]:
    assert gc.get_freeze_count() == 0, "a test before this one left objects frozen"
    thresholds = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield thresholds
    gc.unfreeze()  # a failed test leaves nothing frozen for the next
    gc.set_threshold(*thresholds)


def _seen(**options: bool) -> list[tuple[int, int]]:
    """The frozen objects and the young threshold each time an episode of a rollout run ended."""
    seen: list[tuple[int, int]] = []

    def look(_: EpisodeDigest) -> None:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))

    run_rollouts(GRID, RandomScientist, concurrency=3, on_episode=look, **options)
    assert len(seen) == len(GRID.cells())
    return seen


def test_episodes_in_flight_play_on_a_frozen_heap_with_rarer_young_collections() -> None:
    seen = _seen()
    assert min(frozen for frozen, _ in seen) > 0
    assert {young for _, young in seen} == {YOUNG_THRESHOLD}
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == (700, 10, 10)  # put back


def test_a_run_can_leave_the_collector_alone() -> None:
    assert _seen(tune_collector=False) == [(0, 700)] * len(GRID.cells())


def test_a_process_that_froze_its_heap_keeps_its_freeze() -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()
    assert max(count for count, _ in _seen()) <= frozen  # nothing of the run's own was frozen
    assert gc.get_freeze_count() > 0  # nor was the caller's freeze undone


def test_a_higher_threshold_of_the_process_is_kept() -> None:
    gc.set_threshold(50_000, 10, 10)
    with rollout_collector():
        assert gc.get_threshold() == (50_000, 10, 10)
    assert gc.get_threshold() == (50_000, 10, 10)


def test_the_collector_is_put_back_when_the_block_fails() -> None:
    with pytest.raises(KeyError), rollout_collector():
        assert gc.get_freeze_count() > 0 and gc.get_threshold()[0] == YOUNG_THRESHOLD
        raise KeyError("a failure inside the block")
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == (700, 10, 10)
