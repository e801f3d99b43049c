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


class LongTexts(Generic[V]):
    """What pure functions of a text made of long texts, by (the function's key, text), bounded
    by the characters of the texts held.

    A pool's harness variants show the same long texts in many rows (a skill body as the result
    of loading it, a policy pasted into the prompt), and the rename and its verification read
    each one once per step and variant; remembered, a repeat costs a hash of the text. A short
    text costs less to read than to remember, so it is never held."""

    # Shorter texts are read each time: a search of a message of a few dozen characters costs
    # about as much as hashing it, and most texts are that short.
    SHORTEST = 256

    def __init__(self, characters: int):
        self.characters = characters
        self._held = 0
        self._values: OrderedDict[tuple[Hashable, str], V] = OrderedDict()

    def get(self, key: Hashable, text: str, make: Callable[[], V]) -> V:
        """``make()``, remembered for ``text`` under ``key`` when the text is long."""
        if len(text) < self.SHORTEST or len(text) > self.characters // 16:
            return make()
        entry = (key, text)
        if entry in self._values:
            self._values.move_to_end(entry)
            return self._values[entry]
        value = make()
        self._values[entry] = value
        self._held += len(text)
        while self._held > self.characters:
            (_, old), _ = self._values.popitem(last=False)
            self._held -= len(old)
        return value

    def clear(self) -> None:
        self._values.clear()
        self._held = 0


# The one memo of long texts each process keeps, shared by its users (each keys its entries by
# its own function object), so that together they hold at most this many characters.
LONG_TEXTS: LongTexts = LongTexts(4_000_000)
