"""Values derived from frozen objects, remembered by the objects' identity.

A scenario pack and the lists in it never change once built, and an episode reads the same few
facts off them at every step; but they are unhashable (they hold lists), and hashing them by
content would cost more than deriving the facts again. So an `IdentityMemo` files each value
under the id() of the first object it was derived from and serves it only to a call that
brings the very same objects.

A memo of packs holds them by weak references: an entry goes when its pack dies, so a dead
pack is never kept alive, nor its id confused with a newer object's. A list cannot be weakly
referenced, so a memo of lists holds them (no id is reused while its entry lives) and the size
bound frees them: a full memo starts afresh.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from operator import is_
from typing import Generic, TypeVar

V = TypeVar("V")


class _Held:
    """A strong reference with the call interface of `weakref.ref`."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __call__(self) -> object:
        return self.obj


class IdentityMemo(Generic[V]):
    """A bounded table: (objects) -> the value derived from exactly those objects.

    Every call of one memo passes the same number of objects; the first keys the entry, and the
    value must not refer to it (or a weakly held object would never die).
    """

    def __init__(self, *, weak: bool, size: int = 256) -> None:
        self._weak = weak  # hold the first object weakly (it must take weak references)
        self._size = size
        # id(first) -> (a reference to first, the other objects, the value)
        self._entries: dict[int, tuple[Callable[[], object], tuple[object, ...], V]] = {}

    def get(self, sources: tuple[object, ...]) -> V | None:
        """The value filed for these very objects, or None."""
        entry = self._entries.get(id(sources[0]))
        if entry is None:
            return None
        first, others, value = entry
        if first() is sources[0] and all(map(is_, others, sources[1:])):
            return value
        return None

    def put(self, sources: tuple[object, ...], value: V) -> V:
        """File `value` for these objects (replacing any entry of the first) and return it."""
        entries = self._entries
        if len(entries) >= self._size:
            entries.clear()  # rare, and cheap to refill; clear() is atomic
        key = id(sources[0])
        first: Callable[[], object]
        if self._weak:
            first = weakref.ref(sources[0], lambda ref: self._forget(key, ref))
        else:
            first = _Held(sources[0])
        entries[key] = (first, sources[1:], value)
        return value

    def _forget(self, key: int, ref: Callable[[], object]) -> None:
        """Drop the entry of an object that died, unless a newer entry took its key."""
        entry = self._entries.get(key)
        if entry is not None and entry[0] is ref:
            del self._entries[key]
