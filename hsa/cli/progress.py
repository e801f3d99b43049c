"""Progress of long work on stderr: a live bar on a terminal (redrawn ten times a second), and
in logs and CI, where a bar would be noise, one plain line every ``HSA_PROGRESS_SECONDS``
seconds (default 10; 0 prints every update), e.g.
``generate: 1,024/4,096 episodes (25.0%), 5,120 rows, 341 episodes/s, 0:00:03 elapsed``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from hsa.errors import HsaError

T = TypeVar("T")

# A bar's total, or how to get it: counting a large file's lines is only worth it when a bar is
# drawn, so callers pass ``lambda: count_lines(path)`` and it runs on a terminal only.
Total = int | Callable[[], int | None] | None


PROGRESS_SECONDS_ENV = "HSA_PROGRESS_SECONDS"
DEFAULT_LOG_SECONDS = 10.0


def _total(total: Total) -> int | None:
    return total() if callable(total) else total


def log_seconds() -> float:
    """Seconds between progress lines in logs (``HSA_PROGRESS_SECONDS``)."""
    try:
        value = float(os.environ.get(PROGRESS_SECONDS_ENV, DEFAULT_LOG_SECONDS))
    except ValueError:
        return DEFAULT_LOG_SECONDS
    return value if value >= 0 else DEFAULT_LOG_SECONDS


class LogLines:
    """Progress as a plain line on stderr at most every :func:`log_seconds` seconds: for logs,
    where a redrawn bar would be noise. The total is fetched when the first line is written."""

    def __init__(self, description: str, total: Total, unit: str):
        self.description, self.unit, self._total = description, unit, total
        self.interval = log_seconds()
        self.started = self.last = time.monotonic()

    def update(self, done: int, rows: int | None = None, total: int | None = None) -> None:
        if total is not None:
            self._total = total
        now = time.monotonic()
        if now - self.last < self.interval:
            return
        self.last = now
        self._total = _total(self._total)
        elapsed = now - self.started
        count = f"{done:,}/{self._total:,}" if self._total else f"{done:,}"
        share = f" ({done / self._total:.1%})" if self._total else ""
        extra = f", {rows:,} rows" if rows is not None else ""
        rate = f", {done / elapsed:,.0f} {self.unit}/s" if elapsed > 0 else ""
        clock = time.strftime("%H:%M:%S", time.gmtime(elapsed))
        sys.stderr.write(
            f"{self.description}: {count} {self.unit}{share}{extra}{rate}, {clock} elapsed\n"
        )
        sys.stderr.flush()


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
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(unit),
        *extra,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )


def track(
    items: Iterable[T], description: str, *, total: Total = None, unit: str = "rows"
) -> Iterator[T]:
    """Yield ``items`` while drawing a bar with count, rate and time left on a terminal (in logs:
    a line now and then)."""
    if not sys.stderr.isatty():
        lines = LogLines(description, total, unit)
        for done, item in enumerate(items, start=1):
            yield item
            lines.update(done)
        return
    with _progress(unit) as progress:
        task = progress.add_task(description, total=_total(total))
        for item in items:
            yield item
            progress.advance(task)


@contextmanager
def progress_bar(description: str, *, total: Total, unit: str = "rows", show_rows: bool = True):
    """A bar for work that reports (done, rows) through a callback (in logs: a line now and
    then).

    Yields ``advance(done, rows, total=None)``: ``done`` input items so far, ``rows`` output rows
    so far (shown unless ``show_rows`` is false: when the items are the rows), and the total once
    the caller knows it (it may learn it only after it started)."""
    if not sys.stderr.isatty():
        lines = LogLines(description, total, unit)
        yield (
            lines.update
            if show_rows
            else lambda done, rows=None, total=None: lines.update(done, None, total)
        )
        return
    extra = (TextColumn("{task.fields[rows]:,} rows"),) if show_rows else ()
    with _progress(unit, *extra) as progress:
        task = progress.add_task(description, total=_total(total), rows=0)

        def advance(done: int, rows: int, total: int | None = None) -> None:
            if total is not None:
                progress.update(task, total=total)
            progress.update(task, completed=done, rows=rows)

        yield advance
