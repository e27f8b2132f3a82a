"""The garbage collector while episodes await a model: the heap they start on is frozen.

Every full collection walks every tracked object of the process (modules, classes, the scenario
caches, the run's jobs) while each episode in flight waits for it; at 64 in flight on a 2-core
VM such a pause took about 70 ms, holding up every call in flight. `frozen_heap` moves the
objects alive when a chunk's episodes start into the collector's permanent generation
(`gc.freeze`), so the collections while they play walk only what the chunk made, and hands them
back to the collector (`gc.unfreeze`) when the chunk ends, however it ends. Memory is freed as
before: reference counting is untouched, and a cycle among the frozen objects is found by the
first full collection after the chunk.

A process that froze objects itself (a server freezing its heap before forking) keeps its own
setting: the chunk then neither freezes nor unfreezes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["frozen_heap"]


@contextmanager
def frozen_heap(enabled: bool = True) -> Iterator[None]:
    """While the block runs, the objects alive at its start are out of the collector's walks;
    with `enabled` False, or where something is frozen already, the collector is left alone."""
    if not enabled or gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
