"""When a run that turns inputs into outputs counts as a success: the one rule behind the exit
status of ``hsa generate``, ``hsa augment`` and the importers.

A run that keeps nothing failed, whatever it wrote; so did one whose rejects are more than a share
of what it made (rows + rejects): by default more rejects than rows. The outputs stay on disk
either way, for inspection.
"""

from __future__ import annotations

DEFAULT_MAX_REJECT_SHARE = 0.5


def failure(kept: int, rejected: int, *, what: str,
            max_reject_share: float = DEFAULT_MAX_REJECT_SHARE) -> str | None:
    """Why a run that kept ``kept`` outputs (``what``: rows, variants, episodes) and rejected
    ``rejected`` is no success, or None when it is one."""
    if kept == 0:
        return f"no {what} written; {rejected} reject(s)" if rejected else \
            f"no {what} written; the input holds nothing"
    share = rejected / (kept + rejected)
    if share > max_reject_share:
        return (f"{share:.1%} of the run was rejected ({rejected} rejects, {kept} {what}), more "
                f"than --max-reject-share {max_reject_share:g}")
    return None
