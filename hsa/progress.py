"""Progress bars for long work, shown on stderr only when it is a terminal (never in logs/CI)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task,
                           TextColumn, TimeElapsedColumn, TimeRemainingColumn)
from rich.text import Text

from hsa.errors import HsaError

T = TypeVar("T")

# A bar's total, or how to get it: counting a large file's lines is only worth it when a bar is
# drawn, so callers pass ``lambda: count_lines(path)`` and it runs on a terminal only.
Total = int | Callable[[], int | None] | None


def _total(total: Total) -> int | None:
    return total() if callable(total) else total


def count_lines(path: str | os.PathLike) -> int:
    """Newlines in a file, read in 1 MiB chunks (cheap next to parsing it)."""
    total = 0
    try:
        with Path(path).open("rb") as handle:
            while chunk := handle.read(1 << 20):
                total += chunk.count(b"\n")
    except OSError as exc:
        raise HsaError(f"cannot read: {exc.strerror}", file=str(path)) from None
    return total


class RateColumn(ProgressColumn):
    """Items per second, e.g. ``12,345 rows/s``."""

    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f} {self.unit}/s" if speed else f"- {self.unit}/s", style="cyan")


def _progress(unit: str, *extra: ProgressColumn) -> Progress:
    """The one bar layout: description, bar, count, rate, extra columns, elapsed, time left."""
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    RateColumn(unit), *extra, TimeElapsedColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=True)


def track(items: Iterable[T], description: str, *, total: Total = None,
          unit: str = "rows") -> Iterator[T]:
    """Yield ``items`` while drawing a bar with count, rate and time left on a terminal."""
    if not sys.stderr.isatty():
        yield from items
        return
    with _progress(unit) as progress:
        task = progress.add_task(description, total=_total(total))
        for item in items:
            yield item
            progress.advance(task)


@contextmanager
def progress_bar(description: str, *, total: Total, unit: str = "rows"):
    """A bar for work that reports (done, rows) through a callback; silent off a terminal.

    Yields ``advance(done, rows, total=None)``: ``done`` input items so far, ``rows`` output rows
    so far, and the total once the caller knows it (it may learn it only after it started)."""
    if not sys.stderr.isatty():
        yield lambda done, rows, total=None: None
        return
    with _progress(unit, TextColumn("{task.fields[rows]:,} rows")) as progress:
        task = progress.add_task(description, total=_total(total), rows=0)
        def advance(done: int, rows: int, total: int | None = None) -> None:
            if total is not None:
                progress.update(task, total=total)
            progress.update(task, completed=done, rows=rows)

        yield advance
