"""When a run that turns inputs into outputs counts as a success: the one rule behind the exit
status of ``hsa generate``, ``hsa augment`` and the importers.

A run that keeps nothing failed, whatever it wrote; so did one whose rejects are more than a share
of what it made (rows + rejects): by default more rejects than rows; and one that rejected more
than that share of its input lines before any variant was made (a line rejected on load stands
for all the rows it would have made, so it is counted against the lines, not the rows). The
outputs stay on disk either way, for inspection.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

DEFAULT_MAX_REJECT_SHARE = 0.5

# Reasons are grouped on their first characters, so that rejects differing only in a long tail
# (a value, a path) count as one reason in a summary.
REASON_CHARS = 120


def failure(
    kept: int,
    rejected: int,
    *,
    what: str,
    max_reject_share: float = DEFAULT_MAX_REJECT_SHARE,
    lines: tuple[int, int] | None = None,
) -> str | None:
    """Why a run that kept ``kept`` outputs (``what``: rows, variants, episodes) and rejected
    ``rejected`` is no success, or None when it is one. ``lines``: (input lines rejected on
    load, input lines), for a run whose outputs are not its lines."""
    if kept == 0:
        return (
            f"no {what} written; {rejected} reject(s)"
            if rejected
            else f"no {what} written; the input holds nothing"
        )
    share = rejected / (kept + rejected)
    if share > max_reject_share:
        return (
            f"{share:.1%} of the run was rejected ({rejected} rejects, {kept} {what}), more "
            f"than --max-reject-share {max_reject_share:g}"
        )
    if lines is not None and lines[1] and lines[0] / lines[1] > max_reject_share:
        return (
            f"{lines[0] / lines[1]:.1%} of the input lines were rejected on load ({lines[0]} "
            f"of {lines[1]}), more than --max-reject-share {max_reject_share:g}"
        )
    return None


def top_reasons(rejects: Iterable[tuple[str, str]], *, limit: int) -> list[tuple[str, str, int]]:
    """The ``limit`` most frequent (stage, reason, count) of ``rejects`` ((stage, reason) pairs),
    grouped on their first :data:`REASON_CHARS` characters; equal counts keep the order they
    first appeared in. A group of one reason says it whole (the cause, a broken harness's, is
    often at its end); one of several says their common start and " …"."""
    counts: Counter = Counter()
    whole: dict[tuple[str, str], str | None] = {}
    for stage, reason in rejects:
        key = (stage, reason[:REASON_CHARS])
        counts[key] += 1
        if key not in whole:
            whole[key] = reason
        elif whole[key] != reason:
            whole[key] = None  # reasons that differ in their tails
    return [
        (stage, whole[(stage, start)] or f"{start} …", count)
        for (stage, start), count in counts.most_common(limit)
    ]


@dataclass
class Tally:
    """A run's outcome, counted as it streams: how many outputs it kept, and the stage and reason
    of every reject. What its exit status (:func:`failure`) and its summary are made from."""

    kept: int = 0
    rejects: list[tuple[str, str]] = field(default_factory=list)
    # For a run whose outputs are not its input lines (variants of episodes): the lines read and
    # those rejected on load, which :func:`failure` counts against the lines.
    lines: int = 0
    lines_rejected: int = 0

    def keep(self) -> None:
        self.kept += 1

    def reject(self, stage: str, reason: str) -> None:
        self.rejects.append((stage, reason))

    def by_stage(self) -> dict[str, int]:
        """Rejects counted per stage, in stage order."""
        return dict(sorted(Counter(stage for stage, _ in self.rejects).items()))

    def top_reasons(self, *, limit: int) -> list[tuple[str, str, int]]:
        return top_reasons(self.rejects, limit=limit)

    def failure(
        self, *, what: str, max_reject_share: float = DEFAULT_MAX_REJECT_SHARE
    ) -> str | None:
        """Why this run is no success, or None (see :func:`failure`)."""
        return failure(
            self.kept,
            len(self.rejects),
            what=what,
            max_reject_share=max_reject_share,
            lines=(self.lines_rejected, self.lines) if self.lines else None,
        )
