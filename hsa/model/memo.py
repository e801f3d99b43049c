"""A bounded memo for values that are pure functions of their key, such as what is derived from
a harness by its content hash (:attr:`hsa.model.harness.Harness.fingerprint`): many rows share a
harness (a recipe's pool of harness variants, the episodes under one harness), so what is made
from it once can be reused. One per process; least recently used entries go first."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class BoundedMemo(Generic[V]):
    """At most ``size`` values by key (0: remember nothing). Only pure values belong here: a
    memo must never change what is made, only how often."""

    def __init__(self, size: int):
        self.size = size
        self._values: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value for ``key``, made by ``make()`` when it is not remembered."""
        if key in self._values:
            self._values.move_to_end(key)
            return self._values[key]
        value = make()
        if self.size > 0:
            self._values[key] = value
            if len(self._values) > self.size:
                self._values.popitem(last=False)
        return value

    def peek(self, key: Hashable) -> V | None:
        """The value for ``key`` when it is remembered, else None (nothing is made); for memos
        whose values are never None."""
        if key in self._values:
            self._values.move_to_end(key)
            return self._values[key]
        return None

    def clear(self) -> None:
        self._values.clear()

    def __len__(self) -> int:
        return len(self._values)
