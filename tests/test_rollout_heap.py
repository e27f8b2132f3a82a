"""Episodes in flight play on a frozen heap: the objects alive before them are out of the
garbage collector's walks while they play and given back after, unless the caller opts out or
froze objects itself."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from replicalab.baselines.evaluation.heap import frozen_heap
from replicalab.baselines.evaluation.rollouts import run_rollouts
from replicalab.baselines.evaluation.runner import Grid
from replicalab.baselines.policies.seats import RandomScientist
from replicalab.digest import EpisodeDigest

GRID = Grid.of(["ml_benchmark"], ["easy", "hard"], 2)  # 6 cells


@pytest.fixture(autouse=True)
def _nothing_frozen() -> Iterator[None]:
    assert gc.get_freeze_count() == 0, "a test before this one left objects frozen"
    yield
    gc.unfreeze()  # a failed test leaves nothing frozen for the next


def _freeze_counts(**options: bool) -> list[int]:
    """The frozen objects each time an episode of a rollout run finished."""
    counts: list[int] = []

    def seen(_: EpisodeDigest) -> None:
        counts.append(gc.get_freeze_count())

    run_rollouts(GRID, RandomScientist, concurrency=3, on_episode=seen, **options)
    assert len(counts) == len(GRID.cells())
    return counts


def test_episodes_in_flight_play_on_a_frozen_heap_and_give_it_back() -> None:
    assert min(_freeze_counts()) > 0
    assert gc.get_freeze_count() == 0


def test_a_run_can_leave_the_collector_alone() -> None:
    assert _freeze_counts(freeze_heap=False) == [0] * len(GRID.cells())


def test_a_process_that_froze_its_heap_keeps_its_freeze() -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()
    assert max(_freeze_counts()) <= frozen  # nothing of the run's own was frozen
    assert gc.get_freeze_count() > 0  # nor was the caller's freeze undone


def test_the_heap_is_given_back_when_the_block_fails() -> None:
    with pytest.raises(KeyError), frozen_heap():
        assert gc.get_freeze_count() > 0
        raise KeyError("a failure inside the block")
    assert gc.get_freeze_count() == 0
