"""When a run counts as a success, and how its rejects are summed up (hsa.dataset.outcome)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hsa.dataset.outcome import REASON_CHARS, Tally, failure, top_reasons


def test_a_run_that_keeps_nothing_fails_whatever_it_rejected():
    assert failure(0, 0, what="rows") == "no rows written; the input holds nothing"
    assert failure(0, 3, what="variants") == "no variants written; 3 reject(s)"
    assert failure(0, 0, what="rows", max_reject_share=1.0) is not None


def test_rejects_fail_a_run_only_above_the_share():
    assert failure(2, 2, what="rows") is None  # exactly half: not more than 0.5
    assert failure(2, 3, what="rows") == (
        "60.0% of the run was rejected (3 rejects, 2 rows), more than --max-reject-share 0.5"
    )
    assert failure(1, 99, what="episodes", max_reject_share=1.0) is None


def test_lines_rejected_on_load_count_against_the_lines():
    """16 of 21 input lines rejected on load, 20 rows from the other 5: the rows outnumber the
    rejects, but three quarters of the input is gone."""
    assert failure(20, 16, what="rows") is None
    assert failure(20, 16, what="rows", lines=(16, 21)) == (
        "76.2% of the input lines were rejected on load (16 of 21), more than "
        "--max-reject-share 0.5"
    )
    assert failure(20, 16, what="rows", lines=(16, 21), max_reject_share=0.8) is None
    assert failure(20, 2, what="rows", lines=(2, 6)) is None


@given(st.integers(0, 50), st.integers(0, 50), st.floats(0, 1))
def test_the_verdict_is_the_share_rule(kept, rejected, share):
    verdict = failure(kept, rejected, what="rows", max_reject_share=share)
    assert (verdict is None) == (kept > 0 and rejected / (kept + rejected) <= share)


def test_top_reasons_group_long_tails_and_keep_first_seen_order_on_ties():
    long = "x" * REASON_CHARS
    rejects = [
        ("verify:a", "short"),
        ("load", long + "1"),
        ("load", long + "2"),
        ("verify:a", "short"),
        ("load", "other"),
        ("verify:b", "short"),
    ]
    assert top_reasons(rejects, limit=10) == [
        ("verify:a", "short", 2),
        ("load", long + " …", 2),
        ("load", "other", 1),
        ("verify:b", "short", 1),
    ]
    assert top_reasons(rejects, limit=1) == [("verify:a", "short", 2)]
    assert top_reasons([], limit=10) == []
    # One long reason, however often: said whole (a broken harness rejects every line for it)
    whole = "skills/refunds/SKILL.md:1: SKILL.md must start with YAML front matter " * 3
    assert top_reasons([("load", whole)] * 3, limit=10) == [("load", whole, 3)]
    # Long reasons that differ in their tails: one group, the common start and an ellipsis
    assert top_reasons([("load", long + "1"), ("load", long + "2")], limit=1) == [
        ("load", long + " …", 2)
    ]


def test_a_tally_counts_what_a_stream_kept_and_rejected():
    tally = Tally()
    for _ in range(3):
        tally.keep()
    for stage in ("verify:z", "load", "verify:z"):
        tally.reject(stage, f"{stage} failed")
    assert tally.kept == 3 and len(tally.rejects) == 3
    assert list(tally.by_stage().items()) == [("load", 1), ("verify:z", 2)]  # stage order
    assert tally.top_reasons(limit=1) == [("verify:z", "verify:z failed", 2)]
    assert tally.failure(what="variants") == failure(3, 3, what="variants")
    assert tally.failure(what="variants", max_reject_share=0.4) is not None
    assert Tally().failure(what="variants") == "no variants written; the input holds nothing"


def test_a_versions_reject_summary_groups_and_says_reasons_as_every_summary(tmp_path):
    """The card's and `hsa generate`'s summary of a version's rejects (read from its
    rejects.parquet) say them as a run's tally does: a broken harness's one long reason whole,
    reasons that differ in their tails as their common start."""
    import polars as pl

    from hsa.dataset.card import top_rejects

    long = "x" * REASON_CHARS
    whole = "harness/skills/refunds/SKILL.md:1: SKILL.md must start with YAML front matter " * 3
    rejects = [("load", long + "A"), ("load", long + "B")] + [("load", whole)] * 3
    pl.DataFrame(
        {"stage": [s for s, _ in rejects], "reason": [r for _, r in rejects]}
    ).write_parquet(tmp_path / "rejects.parquet")
    assert top_rejects(tmp_path, limit=10) == top_reasons(rejects, limit=10)
    assert top_rejects(tmp_path, limit=10)[0] == ("load", whole, 3)


def test_a_reject_summary_counts_what_it_leaves_out(capsys):
    """A summary lists the most frequent reasons; the rejects of the others are counted on a
    line of their own, so the lines always add up to the total it announces."""
    from hsa.cli.console import print_reject_summary

    print_reject_summary([("load", "not valid JSON", 3), ("verify:a", "stale", 2)], 7)
    printed = capsys.readouterr().err
    assert "rejects by reason (7 in all):" in printed
    assert "2  of other reasons (see the rejects file)" in printed
    print_reject_summary([("load", "not valid JSON", 3)], 3)
    assert "other reasons" not in capsys.readouterr().err
