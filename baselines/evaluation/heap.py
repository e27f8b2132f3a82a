"""The garbage collector while episodes await a model: the heap they start on is frozen, and the
youngest generation is collected less often.

Every full collection walks every tracked object of the process (modules, classes, the scenario
caches, the run's jobs) while each episode in flight waits for it; at 64 in flight on a 2-core
VM such a pause took about 70 ms, holding up every call in flight. `rollout_collector` moves the
objects alive when a chunk's episodes start into the collector's permanent generation
(`gc.freeze`), so the collections while they play walk only what the chunk made, and hands them
back to the collector (`gc.unfreeze`) when the chunk ends, however it ends. Episodes in flight
also keep their young objects across awaits, so at Python's default threshold (a collection
every 700 allocations) most young collections free nothing: while the chunk plays, the youngest
generation waits `YOUNG_THRESHOLD` allocations, and the process's thresholds are put back after.
Memory is freed as before: reference counting is untouched, and a cycle among the frozen objects
is found by the first full collection after the chunk.

A process that froze objects itself (a server freezing its heap before forking) keeps its own
freeze: the chunk then neither freezes nor unfreezes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "rollout_collector"]

YOUNG_THRESHOLD = 10_000
"""Allocations between two collections of the youngest generation while episodes are in flight."""


@contextmanager
def rollout_collector(enabled: bool = True) -> Iterator[None]:
    """While the block runs, the objects alive at its start are out of the collector's walks and
    young collections are spaced out; with `enabled` False the collector is left alone."""
    if not enabled:
        yield
        return
    thresholds = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if freeze:
            gc.unfreeze()
