"""Where the commands print: results on stdout, problems on stderr; and how a run that is no
success ends (its rejects counted by reason, then exit status 1)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from hsa.dataset.outcome import Tally

# soft_wrap: long messages (paths, reject reasons) stay on one line, so they can be grepped.
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def print_reject_summary(top: list[tuple[str, str, int]], total: int) -> None:
    """The most frequent reject reasons, (stage, reason, count) each, out of ``total``."""
    if not total:
        return
    err.print(f"rejects by reason ({total} in all):", markup=False, highlight=False)
    for stage, reason, count in top:
        err.print(f"  {count:>7,}  {stage}: {reason}", markup=False, highlight=False)
    rest = total - sum(count for _, _, count in top)
    if rest > 0:  # the lines add up to the total, whatever the list leaves out
        err.print(f"  {rest:>7,}  of other reasons (see the rejects file)", highlight=False)


def fail_unless_healthy(
    tally: Tally, max_share: float, *, what: str, see: Path | None = None
) -> None:
    """Exit 1, after the rejects counted by stage and reason, when the run is no success (see
    hsa.dataset.outcome); ``see``: the rejects file, named on the last line."""
    why = tally.failure(what=what, max_reject_share=max_share)
    if why is None:
        return
    print_reject_summary(tally.top_reasons(limit=10), len(tally.rejects))
    err.print(f"FAILED: {why}" + (f"; see {see}" if see else ""), markup=False, highlight=False)
    raise typer.Exit(1)
