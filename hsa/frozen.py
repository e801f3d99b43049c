"""``replace`` for the frozen dataclasses of the harness and episode model, without
:func:`dataclasses.replace`'s per-call introspection and ``__init__``: every variant copies
harness, tool and message objects many times over, and that copying was a tenth of generation.

Same result as :func:`dataclasses.replace` (only the fields are copied, so cached properties of
the old object never leak into the new one); classes with a ``__post_init__``, ``__slots__`` or
fields outside ``__init__`` take :func:`dataclasses.replace` itself.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

T = TypeVar("T")

_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _plain_fields(cls: type) -> tuple[str, ...] | None:
    """The field names when a copy may skip ``__init__``, else None."""
    fields = dataclasses.fields(cls)
    if (hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__
            or any(not f.init or f._field_type is not dataclasses._FIELD for f in fields)):
        return None
    return tuple(f.name for f in fields)


def replace(obj: T, /, **changes) -> T:
    cls = type(obj)
    try:
        names = _FIELDS[cls]
    except KeyError:
        names = _FIELDS[cls] = _plain_fields(cls)
    if names is None:
        return dataclasses.replace(obj, **changes)
    for name in changes:
        if name not in names:
            raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument "
                            f"{name!r}")
    own = obj.__dict__
    new = object.__new__(cls)
    state = new.__dict__
    for name in names:
        state[name] = own[name]
    state.update(changes)
    return new
