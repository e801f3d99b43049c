"""Issue-level promises of the five families, measured per harness: each family alone, with its
train and its held-out options, over every BFCL dev file, the shipped example and the test
harnesses of other domains (tests/harnesses: airline, coding, finance), none of which the
transforms were tuned to. On each:

* at least 99% of variants pass verification (the rest are rejects with a reason), not counting
  conversations refused because they ask for what a drawn distractor tool does (at most 5%);
* at least 90% of the rows where the family's objects are visible show the model other messages
  or tools (skills and hooks only exist in the harnesses; BFCL harnesses have tools only);
* no rename gives an identifier the meaning of another of its kind;
* on the harnesses, every variant writes the names of each kind it renamed in one convention.

The numbers come from tests/family_report.py (``python -m tests.family_report`` prints them).
"""

from __future__ import annotations

from functools import cache

import pytest

from hsa.importers.bfcl import import_bfcl
from tests.conftest import BFCL_DIR, BFCL_FILES
from tests.family_report import FAMILIES, HARNESSES, SPLITS, harness_episodes, measure

pytestmark = pytest.mark.usefixtures("bfcl_data")


@cache
def datasets() -> dict[str, tuple[list, int]]:
    """name -> (episodes, variants per episode); the small harnesses get more variants."""
    out = {
        name.removeprefix("BFCL_v4_").removesuffix(".json"): (
            import_bfcl(BFCL_DIR / name).episodes,
            1,
        )
        for name in BFCL_FILES
    }
    out |= {
        name: (harness_episodes(path), 1 if name.startswith("example") else 2)
        for name, path in HARNESSES.items()
    }
    return out


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_preserves_the_task_and_changes_its_part(family, split):
    failures, applicable = [], 0
    for name, (episodes, variants) in datasets().items():
        m = measure(episodes, family, split, variants)
        applicable += m.applicable
        if m.kept_share < 0.99:
            failures.append(f"{name}: kept {m.kept_share:.1%}; {m.rejects[:3]}")
        if m.refused_share > 0.05:
            failures.append(f"{name}: {m.refused_share:.1%} of conversations ask for a distractor")
        if m.applicable and m.changed_share < 0.90:
            failures.append(
                f"{name}: changed {m.changed}/{m.applicable}; unchanged e.g. {m.unchanged[:5]}"
            )
        if m.meaning_rejects or m.meaning_kept:
            failures.append(
                f"{name}: {m.meaning_rejects} variants rejected and "
                f"{m.meaning_kept} renames kept that take another's meaning"
            )
        if name in HARNESSES and m.convention_breaks:
            failures.append(f"{name}: {m.convention_breaks} rows mix naming conventions")
    assert applicable > 0, f"family {family} is visible nowhere"
    assert not failures, failures
