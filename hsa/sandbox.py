"""The sandbox a harness's own layouts render in: Jinja2's immutable sandbox, with a budget.

Jinja2's sandbox stops a template from reaching Python internals, but not from working forever: two
nested ``range(100000)`` loops run ten billion times and ``'x' * 3000000000`` builds a 3 GB
string, and a layout renders in every job that reads the harness. This sandbox gives each
rendering :data:`RANGE_BUDGET` numbers of ``range`` in all (every loop over a range draws from it)
and refuses a ``*``, ``**`` or ``+`` whose result would pass :data:`SIZE_LIMIT` items or digits;
either raises Jinja2's ``SecurityError``, which the renderer reports as the harness's error. A
layout only lays out texts, so a real one stays far below both.

This guards against accidents and the plain bombs, not against a template written to exhaust the
machine: only loops over ``range`` draw from the budget (two nested loops over a 20,000-character
string still run 400 million times), and doubling a string with ``~`` in a loop is no operation
the sandbox can intercept. Generate from harnesses of unknown origin under the operating
system's limits, as with any input that runs code-like templates.
"""

from __future__ import annotations

import math
import operator
from contextvars import ContextVar
from typing import Any

from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError, safe_range

RANGE_BUDGET = 1_000_000  # numbers all of one rendering's range() calls may hand out
SIZE_LIMIT = 1_000_000  # items of a string or list (or digits of a power) one operation may make

_left: ContextVar[int] = ContextVar("hsa_layout_range_budget", default=RANGE_BUDGET)


def new_budget() -> None:
    """Start a rendering with the whole budget (the renderer calls it before each render)."""
    _left.set(RANGE_BUDGET)


def _range(*args: int) -> range:
    numbers = safe_range(*args)  # Jinja2's own check: no single range above its MAX_RANGE
    left = _left.get() - len(numbers)
    if left < 0:
        raise SecurityError(
            f"the layout asks range() for more than {RANGE_BUDGET:,} numbers in one rendering"
        )
    _left.set(left)
    return numbers


def _size(value: Any) -> int | None:
    return len(value) if isinstance(value, str | bytes | list | tuple) else None


def _checked(op: str, left: Any, right: Any) -> Any:
    if op == "*":
        for seq, times in ((left, right), (right, left)):
            size = _size(seq)
            if size is not None and isinstance(times, int) and size * times > SIZE_LIMIT:
                raise SecurityError(
                    f"the layout repeats a value into more than {SIZE_LIMIT:,} items"
                )
        return left * right
    if op == "**":
        # digits of left ** right: right * log10(|left|)
        if (
            isinstance(left, int)
            and isinstance(right, int)
            and abs(left) > 1
            and right * math.log10(abs(left)) > SIZE_LIMIT
        ):
            raise SecurityError(f"the layout raises a number to more than {SIZE_LIMIT:,} digits")
        return left**right
    result = operator.add(left, right)
    size = _size(result)
    if size is not None and size > SIZE_LIMIT:
        raise SecurityError(f"the layout joins values into more than {SIZE_LIMIT:,} items")
    return result


class LayoutSandbox(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox with the budget of this module."""

    intercepted_binops = frozenset({"*", "**", "+"})

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.globals["range"] = _range

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        # Jinja2 calls it for the intercepted operators alone
        return _checked(operator, left, right)
