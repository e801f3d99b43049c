"""``replace`` for the frozen dataclasses of the harness and episode model, without
:func:`dataclasses.replace`'s per-call introspection and ``__init__``: every variant copies
harness, tool and message objects many times over, and that copying was a tenth of generation.

Same result as :func:`dataclasses.replace` (only the fields are copied, so cached properties of
the old object never leak into the new one); classes with a ``__post_init__`` or fields outside
``__init__`` take :func:`dataclasses.replace` itself.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

T = TypeVar("T")

_FIELDS: dict[type, tuple[tuple[str, ...], bool] | None] = {}
_set = object.__setattr__  # what a frozen dataclass's own __init__ uses


def _plain_fields(cls: type) -> tuple[tuple[str, ...], bool] | None:
    """The field names and whether the class has slots, when a copy may skip ``__init__``."""
    fields = dataclasses.fields(cls)
    if hasattr(cls, "__post_init__") or any(not f.init for f in fields):
        return None
    return tuple(f.name for f in fields), "__slots__" in cls.__dict__


def replace(obj: T, /, **changes) -> T:
    cls = type(obj)
    try:
        plain = _FIELDS[cls]
    except KeyError:
        plain = _FIELDS[cls] = _plain_fields(cls)
    if plain is None:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]  # obj is a dataclass
    names, slotted = plain
    for name in changes:
        if name not in names:
            raise TypeError(
                f"{cls.__name__}.__init__() got an unexpected keyword argument {name!r}"
            )
    new = object.__new__(cls)
    if slotted:
        for name in names:
            _set(new, name, changes[name] if name in changes else getattr(obj, name))
        return new
    own = obj.__dict__
    state = new.__dict__
    for name in names:
        state[name] = own[name]
    state.update(changes)
    return new
