"""The evaluation report's arithmetic on scripted predictions: accuracies, drops, consistency,
pass^k, intervals, McNemar; and the report, plots and comparison built from them (no model)."""

from __future__ import annotations

import copy
import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hsa.augment.recipe import load_recipe
from hsa.errors import HsaError
from hsa.eval.compare import (
    compare_reports,
    comparison_markdown,
    comparison_table,
    harness_variant_tables,
)
from hsa.eval.items import ORIGINAL, family_recipe, recipe_families
from hsa.eval.journal import Journal
from hsa.eval.plots import write_plots
from hsa.eval.report import main_table, render_markdown
from hsa.eval.stats import (
    Result,
    by_harness_variant,
    consistency,
    mcnemar_exact,
    paired_bootstrap,
    pass_hat_k,
    solved,
    summarize_original,
    summarize_set,
    turn_counts,
)


def results(set_name: str, table: dict[str, list[list[bool]]]) -> list[Result]:
    """``table``: episode -> one list of turn outcomes per variant (one list for the original)."""
    out = []
    for episode, variants in table.items():
        for v, turns in enumerate(variants):
            for t, correct in enumerate(turns):
                variant = None if set_name == ORIGINAL else v
                out.append(
                    Result(
                        key=f"{set_name}/{episode}#{variant}@{t}",
                        set=set_name,
                        source_id=episode,
                        variant=variant,
                        at=t,
                        correct=correct,
                        rule=None if correct else "value_mismatch",
                    )
                )
    return out


# Four episodes of one turn; two variants each. Original: 3/4 right. Variants: e1 both, e2 one,
# e3 none, e4 one -> 4/8.
ORIGINAL_TABLE = {"e1": [[True]], "e2": [[True]], "e3": [[True]], "e4": [[False]]}
VARIANT_TABLE = {
    "e1": [[True], [True]],
    "e2": [[True], [False]],
    "e3": [[False], [False]],
    "e4": [[False], [True]],
}


def test_hand_computed_accuracy_drop_consistency_and_pass_k():
    original, variants = results(ORIGINAL, ORIGINAL_TABLE), results("all", VARIANT_TABLE)
    s = summarize_set(original, variants)
    assert s["accuracy"] == 0.5 and s["original_accuracy"] == 0.75
    assert s["drop"] == pytest.approx(0.25)
    assert s["consistency"] == 0.25  # only e1 solved under both variants
    assert s["robust"] == 0.25  # e1 is also solved on the original
    assert s["pass_k"] == {"1": 0.5, "2": 0.25}  # mean(1, .5, 0, .5); mean(1, 0, 0, 0)
    assert s["failures_by_rule"] == {"value_mismatch": 4}
    low, high = s["drop_ci95"]
    assert low < 0.25 < high and low >= -1 and high <= 1
    assert summarize_original(original)["accuracy"] == 0.75


def test_multi_turn_episodes_pool_turns_and_solve_only_when_every_turn_is_right():
    original = results(ORIGINAL, {"a": [[True, True, True]], "b": [[True]]})
    variants = results("all", {"a": [[True, False, True]], "b": [[True]]})
    s = summarize_set(original, variants)
    assert s["accuracy"] == 0.75 and s["original_accuracy"] == 1.0  # 3/4 turns; 4/4 turns
    assert s["consistency"] == 0.5  # a has a wrong turn: not solved
    assert turn_counts(variants) == {"a": (2, 3), "b": (1, 1)}


def test_the_drop_is_paired_on_the_episodes_that_have_variants():
    original = results(ORIGINAL, {"a": [[True]], "b": [[False]], "c": [[False]]})
    variants = results("all", {"a": [[False]]})  # b and c got no variant
    s = summarize_set(original, variants)
    assert s["original_accuracy"] == 1.0 and s["drop"] == 1.0 and s["episodes"] == 1


def test_identical_episodes_give_a_point_interval():
    original = results(ORIGINAL, {f"e{i}": [[True]] for i in range(10)})
    variants = results("all", {f"e{i}": [[True], [False]] for i in range(10)})
    s = summarize_set(original, variants)
    assert s["drop"] == 0.5 and s["drop_ci95"] == [0.5, 0.5]


def test_bootstrap_is_seeded_and_ignores_input_order():
    rng = random.Random(3)
    a = {f"e{i}": (rng.randint(0, 3), 3) for i in range(40)}
    b = {f"e{i}": (rng.randint(0, 3), 3) for i in range(40)}
    first = paired_bootstrap(a, b, seed=7)
    shuffled = dict(sorted(a.items(), key=lambda kv: rng.random()))
    assert paired_bootstrap(shuffled, b, seed=7) == first
    assert paired_bootstrap(a, b, seed=8)["diff_ci"] != first["diff_ci"]
    assert first["diff"] == pytest.approx(first["a"] - first["b"])


def test_mcnemar_exact_by_hand():
    assert mcnemar_exact(1, 5) == pytest.approx(2 * (1 + 6) / 64)  # 0.21875
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)


outcomes = st.dictionaries(
    st.text("abcdef", min_size=1, max_size=3),
    st.lists(st.booleans(), min_size=1, max_size=5),
    min_size=1,
    max_size=12,
)


@given(outcomes)
def test_pass_k_falls_with_k_and_equals_consistency_when_every_episode_has_k(table):
    variant_solved = {e: dict(enumerate(flags)) for e, flags in table.items()}
    values = [pass_hat_k(variant_solved, k) for k in range(1, 6)]
    present = [v for v in values if v is not None]
    assert all(0 <= v <= 1 for v in present)
    n = {len(f) for f in table.values()}
    if len(n) == 1:  # every episode has the same number of variants: pass^k never rises
        assert present == sorted(present, reverse=True)
        assert values[n.pop() - 1] == pytest.approx(consistency(variant_solved))
    assert values[0] == pytest.approx(sum(sum(f) / len(f) for f in table.values()) / len(table))


@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=30),
    st.integers(0, 2**32),
)
def test_paired_bootstrap_interval_bounds_and_point(pairs, seed):
    a = {f"e{i}": (min(x, 4), 4) for i, (x, _) in enumerate(pairs)}
    b = {f"e{i}": (min(y, 4), 4) for i, (_, y) in enumerate(pairs)}
    out = paired_bootstrap(a, b, resamples=200, seed=seed)
    assert out["a"] == sum(c for c, _ in a.values()) / (4 * len(a))
    for low, high in (out["a_ci"], out["b_ci"]):
        assert 0 <= low <= high <= 1
    assert -1 <= out["diff_ci"][0] <= out["diff_ci"][1] <= 1


def test_solved_reads_each_variant_separately():
    rs = results("all", {"e": [[True, True], [True, False]]})
    assert solved(rs) == {"e": {0: True, 1: False}}


# ---- the report, plots and comparison from scripted results ---------------------------------


def scripted_report(variant_table: dict, name: str = "model") -> dict:
    original = results(ORIGINAL, ORIGINAL_TABLE)
    variants = results("all", variant_table)
    every = original + variants
    return {
        "run": {
            "backend": {
                "model": name,
                "backend": "scripted",
                "sampling": {"temperature": 0.0, "max_tokens": 8},
            },
            "inputs": {},
            "episodes": 4,
            "items": len(every),
            "items_sha256": "same",
            "hooks_checked": False,
            "bootstrap": {"resamples": 2000, "seed": 1, "level": 0.95},
        },
        "original": summarize_original(original),
        "sets": {"all": {"family": None, **summarize_set(original, variants)}},
        "latency": {
            "e2e_s": {"n": 2, "mean": 0.2, "p50": 0.2, "p95": 0.29, "p99": 0.3},
            "ttft_s": {"n": 0},
            "tpot_s": {"n": 0},
            "e2e_samples_s": [0.1, 0.3],
            "ttft_samples_s": [],
            "completion_tokens": 10,
            "wall_s": 1.0,
            "output_tokens_per_s": 10.0,
        },
        "no_answer": [],
        "results": [r.to_dict() for r in every],
    }


def test_main_table_and_markdown_show_the_numbers():
    report = scripted_report(VARIANT_TABLE)
    header, rows = main_table(report)
    assert header[:8] == [
        "set",
        "episodes",
        "turns",
        "accuracy",
        "original (same episodes)",
        "drop",
        "95% CI of drop",
        "consistency",
    ]
    assert rows[1][:6] == ["all", "4", "8", "50.0%", "75.0%", "+25.0 pp"]
    assert rows[1][7:10] == ["25.0%", "50.0%", "25.0%"]  # consistency, pass^1, pass^2
    text = render_markdown(report, ["accuracy_by_family.png"])
    assert "| all | 4 | 8 | 50.0% | 75.0% | +25.0 pp |" in text
    assert "![accuracy_by_family.png](accuracy_by_family.png)" in text
    assert "value_mismatch" in text and "P95" in text


def test_plots_are_png_and_byte_identical_for_the_same_report(tmp_path):
    report = scripted_report(VARIANT_TABLE)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, again = write_plots(report, tmp_path / "a"), write_plots(report, tmp_path / "b")
    assert first == again == ["accuracy_by_family.png", "failures_by_rule.png", "latency.png"]
    for name in first:
        data = (tmp_path / "a" / name).read_bytes()
        assert data.startswith(b"\x89PNG") and data == (tmp_path / "b" / name).read_bytes()


def test_compare_pairs_turns_and_refuses_other_items():
    better = {e: [[True], [True]] for e in VARIANT_TABLE}
    base, other = scripted_report(VARIANT_TABLE, "base"), scripted_report(better, "tuned")
    comparison = compare_reports([base, other], ["base", "tuned"])
    row = next(r for r in comparison["rows"] if r["set"] == "all")
    versus = row["versus_first"][0]
    assert row["accuracy"] == [0.5, 1.0]
    assert (versus["only_first"], versus["only_this"]) == (0, 4)
    assert versus["mcnemar_p"] == pytest.approx(2 / 16) and versus["diff"] == 0.5
    header, rows = comparison_table(comparison)
    assert "McNemar p (b/c)" in header and rows[1][-1] == "0.125 (0/4)"
    other["run"]["items_sha256"] = "different"
    with pytest.raises(HsaError, match="different items"):
        compare_reports([base, other], ["base", "tuned"])


@pytest.mark.parametrize(
    ("option", "value"), [("--resamples", "0"), ("--resamples", "-1"), ("--bootstrap-seed", "-1")]
)
def test_compare_refuses_a_bootstrap_it_cannot_draw(tmp_path, capsys, option, value):
    """No resample gives no interval, and numpy draws from no negative seed: both were a crash
    ("unexpected IndexError", "a bug in hsa") after the reports were read."""
    from hsa.cli import main

    paths = []
    for name in ("base", "tuned"):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(scripted_report(VARIANT_TABLE, name)))
        paths.append(str(path))
    assert main(["eval", "compare", *paths, option, value]) == 2
    assert f"Invalid value for '{option}'" in capsys.readouterr().err
    assert main(["eval", "compare", *paths, "--resamples", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bootstrap"]["resamples"] == 1


def test_the_report_says_how_many_episode_lines_did_not_load():
    report = scripted_report(VARIANT_TABLE)
    assert "did not load" not in render_markdown(report, [])
    report["run"]["inputs"] = {
        "source_lines": 9,
        "source_rejects": 2,
        "source_first_reject": "e.jsonl:4 id=x messages: expected a list",
    }
    assert (
        "2 of 9 episode lines did not load (first: `e.jsonl:4 id=x messages: expected a list`); "
        "they are not evaluated." in render_markdown(report, [])
    )
    report["run"]["inputs"] = {"source_rejects": 2}  # a report made before the lines were counted
    assert "\n2 episode lines did not load; they are not evaluated.\n" in render_markdown(
        report, []
    )


def test_sources_name_the_first_line_they_leave_out(tmp_path):
    from hsa.eval.items import load_sources

    q1 = json.dumps(
        {
            "id": "q1",
            "harness": {"name": "h", "tools": []},
            "messages": [{"role": "user", "content": "hi"}],
            "gold": {"no_call": True},
        }
    )
    path = tmp_path / "e.jsonl"
    path.write_text("\n".join(["{not json", "", q1, q1]) + "\n")
    sources = load_sources(path, harness=None, trust_hooks=False)
    assert (list(sources.episodes), sources.lines, sources.rejected) == (["q1"], 3, 2)
    assert sources.first_reject.startswith(f"{path}:1: not valid JSON")
    path.write_text("\n".join([q1, "", "", q1]) + "\n")  # blank lines count in line numbers
    assert load_sources(path, harness=None, trust_hooks=False).inputs() == {
        "source_lines": 2,
        "source_rejects": 1,
        "source_first_reject": f"{path}:4 id=q1 id: duplicate episode id; line 1 has it (ids "
        "must be unique, they key each variant's randomness)",
    }


# ---- variant sets and the journal -----------------------------------------------------------


def test_family_recipes_keep_only_their_family_with_the_held_out_options():
    recipe = load_recipe("hat-heldout")
    families = recipe_families(recipe)
    assert families == ["hooks", "prompt_structure", "skill_content", "skill_ids", "tool_schema"]
    from hsa.augment.registry import families as known

    for family in families:
        alone = family_recipe(recipe, family)
        assert {known()[t.transform.name] for t in alone.pipeline.transforms()} - {"core"} == {
            family
        }
        assert alone.seed == recipe.seed and alone.name == f"hat-heldout.{family}"
        assert all(
            t.transform.split == "heldout"
            for t in alone.pipeline.transforms()
            if hasattr(t.transform, "split")
        )
    with pytest.raises(HsaError, match="no node of family"):
        family_recipe(family_recipe(recipe, "hooks"), "tool_schema")


def test_journal_cuts_a_torn_line_and_keeps_whole_answers(tmp_path):
    path = tmp_path / "predictions.jsonl"
    journal = Journal(path)
    journal.add({"key": "k1", "fingerprint": "f1", "message": {"role": "assistant"}})
    journal.end_session(1.5, 1)
    journal.close()
    with open(path, "ab") as handle:
        handle.write(b'{"key": "k2", "finger')  # killed mid-write
    again = Journal(path)
    assert list(again.answers) == ["f1"] and again.wall_s == 1.5
    again.add({"key": "k2", "fingerprint": "f2", "message": None})
    again.close()
    assert set(Journal(path).answers) == {"f1", "f2"}


# ---- per harness variant --------------------------------------------------------------------


def pooled(table: dict[str, list[tuple[str, list[bool]]]]) -> list[Result]:
    """``table``: episode -> (harness variant, turn outcomes) per variant of the episode."""
    out = []
    for episode, variants in table.items():
        for v, (harness_variant, turns) in enumerate(variants):
            for t, correct in enumerate(turns):
                out.append(
                    Result(
                        key=f"all/{episode}#{v}@{t}",
                        set="all",
                        source_id=episode,
                        variant=v,
                        at=t,
                        correct=correct,
                        harness_variant=harness_variant,
                    )
                )
    return out


# Originals: e1 and e2 right, e3 and e4 wrong. Harness variant "h:0" (e1, e2) is right half the
# time, "h:1" (e3, e4) never, "h:2" only took e1.
POOLED_ORIGINAL = {"e1": [[True]], "e2": [[True]], "e3": [[False]], "e4": [[False]]}
POOLED_TABLE = {
    "e1": [("h:0", [True]), ("h:2", [False])],
    "e2": [("h:0", [False])],
    "e3": [("h:1", [False])],
    "e4": [("h:1", [False])],
}


def test_each_shared_harness_variant_is_ranked_by_its_drop_on_its_own_episodes():
    original = results(ORIGINAL, POOLED_ORIGINAL)
    summary = by_harness_variant(original, pooled(POOLED_TABLE))
    assert summary["harness_variants"] == 3
    assert summary["episodes_per_variant"] == 2  # median of 2, 2, 1
    # h:1 has the lower accuracy (0% against 50%), but its episodes were never solved: it takes
    # nothing from the model. h:0 drops 50 points on episodes the originals solved. h:2 (one
    # episode) is counted, not ranked.
    assert list(summary["variants"]) == ["h:0", "h:1"]
    h0, h1 = summary["variants"]["h:0"], summary["variants"]["h:1"]
    assert (h0["episodes"], h0["turns"], h0["correct"]) == (2, 2, 1)
    assert (h0["accuracy"], h0["original_accuracy"], h0["drop"]) == (0.5, 1.0, 0.5)
    assert (h1["accuracy"], h1["original_accuracy"], h1["drop"]) == (0.0, 0.0, 0.0)
    assert h0["drop_ci95"][0] <= 0.5 <= h0["drop_ci95"][1]
    assert summary["median_drop"] == 0.25 and summary["worst_drop"] == 0.5
    assert summarize_set(original, pooled(POOLED_TABLE))["by_harness_variant"] == summary


def test_without_a_pool_nothing_is_ranked_and_the_report_has_no_such_section():
    summary = by_harness_variant(results(ORIGINAL, ORIGINAL_TABLE), results("all", VARIANT_TABLE))
    assert summary == {
        "harness_variants": 0,
        "episodes_per_variant": None,
        "shared_by": 2,
        "median_drop": None,
        "worst_drop": None,
        "variants": {},
    }
    assert "## Harness variants" not in render_markdown(scripted_report(VARIANT_TABLE), [])


def test_the_report_shows_the_worst_harness_variants_first():
    report = scripted_report(VARIANT_TABLE)
    original = results(ORIGINAL, POOLED_ORIGINAL)
    report["sets"]["all"] = {"family": None, **summarize_set(original, pooled(POOLED_TABLE))}
    step = {"version": "1", "params": {}}
    report["sets"]["all"]["by_harness_variant"]["variants"]["h:0"]["lineages"] = [
        [
            {**step, "transform": "one_of", "path": "0", "fired": True},
            {**step, "transform": "identity", "path": "0.0", "fired": True},
            {**step, "transform": "tool_shape", "path": "1", "fired": True},
            {**step, "transform": "prompt_layout", "path": "2", "fired": False},
            {**step, "transform": "skill_id_case", "path": "3", "fired": True},
        ]
    ]
    text = render_markdown(report, [])
    section = text.split("## Harness variants", 1)[1]
    assert "| all | 3 | 2 | 2 | +25.0 pp | +50.0 pp |" in section
    assert section.index("`h:0`") < section.index("`h:1`")
    # Its transforms: what fired, without compositions or identity.
    assert (
        "| all | `h:0` | 2 | 2 | 50.0% | 100.0% | +50.0 pp | [+0.0, +100.0] | "
        "tool_shape, skill_id_case |" in section
    )
    assert "| all | `h:1` | 2 | 2 | 0.0% | 0.0% | +0.0 pp | [+0.0, +0.0] | – |" in section
    assert "`h:2`" not in section


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["e1", "e2", "e3", "e4", "e5"]),
            st.sampled_from(["a:0", "a:1", "b:0", None]),
            st.booleans(),
        ),
        max_size=40,
    ),
    st.randoms(use_true_random=False),
)
def test_per_harness_variant_counts_every_turn_once_whatever_the_order(rows, rnd):
    original = results(ORIGINAL, {e: [[e in ("e1", "e3")]] for e in ["e1", "e2", "e3", "e4", "e5"]})
    variants = [
        Result(f"all/{e}#{i}@0", "all", e, i, 0, ok, harness_variant=h)
        for i, (e, h, ok) in enumerate(rows)
    ]
    summary = by_harness_variant(original, variants, resamples=50)
    shuffled = list(variants)
    rnd.shuffle(shuffled)
    assert by_harness_variant(original, shuffled, resamples=50) == summary
    assert summary["harness_variants"] == len({h for _, h, _ in rows if h is not None})
    for name, entry in summary["variants"].items():
        mine = [r for r in variants if r.harness_variant == name]
        assert entry["turns"] == len(mine) and entry["correct"] == sum(r.correct for r in mine)
        assert entry["episodes"] == len({r.source_id for r in mine}) >= 2
    drops = [e["drop"] for e in summary["variants"].values()]
    assert drops == sorted(drops, reverse=True)


# ---- comparison per harness variant ----------------------------------------------------------


def pooled_report(table: dict, name: str) -> dict:
    """A scripted report whose "all" set is ``table`` under a pool (see :func:`pooled`)."""
    report = scripted_report(VARIANT_TABLE, name)
    original, variants = results(ORIGINAL, POOLED_ORIGINAL), pooled(table)
    report["sets"]["all"] = {"family": None, **summarize_set(original, variants)}
    report["results"] = [r.to_dict() for r in original + variants]
    return report


# The tuned model gets e2 right under h:0 and both episodes under h:1.
TUNED_TABLE = {
    "e1": [("h:0", [True]), ("h:2", [False])],
    "e2": [("h:0", [True])],
    "e3": [("h:1", [True])],
    "e4": [("h:1", [True])],
}


def test_compare_pairs_each_shared_harness_variant_in_the_baselines_order():
    base, tuned = pooled_report(POOLED_TABLE, "base"), pooled_report(TUNED_TABLE, "tuned")
    base["sets"]["all"]["by_harness_variant"]["variants"]["h:0"]["lineages"] = [
        [{"transform": "tool_shape", "version": "1", "path": "0", "fired": True, "params": {}}]
    ]
    comparison = compare_reports([base, tuned], ["base", "tuned"])
    h = comparison["harness_variants"]["all"]
    # The baseline's order (h:0 drops 50 points, h:1 none); h:2 took one episode: not listed.
    assert list(h["variants"]) == ["h:0", "h:1"]
    h0, h1 = h["variants"]["h:0"], h["variants"]["h:1"]
    assert (h0["episodes"], h0["turns"], h0["accuracy"], h0["drop"]) == (2, 2, [0.5, 1.0], [0.5, 0])
    assert (h1["accuracy"], h1["drop"]) == ([0.0, 1.0], [0.0, -1.0])
    v0, v1 = h0["versus_first"][0], h1["versus_first"][0]
    assert (v0["diff"], v0["only_first"], v0["only_this"]) == (0.5, 0, 1)
    assert v0["diff_ci95"][0] <= 0 < v0["diff_ci95"][1]  # e1 alone in a draw: no difference
    assert (v1["diff"], v1["diff_ci95"], v1["only_this"]) == (1.0, [1.0, 1.0], 2)
    assert v1["mcnemar_p"] == pytest.approx(0.5)
    assert h["median_drop"] == [0.25, -0.5] and h["worst_drop"] == [0.5, 0.0]
    # Accuracy under h:1 is higher, and only there does the interval clear 0.
    assert (h["higher"], h["lower"]) == ([1], [0])
    assert h0["lineages"] and h1["lineages"] is None
    text = comparison_markdown(comparison)
    section = text.split("## Harness variants", 1)[1]
    assert "| all | 2 | +25.0 pp | -50.0 pp | +50.0 pp | +0.0 pp | 1 / 0 |" in section
    # episodes, turns, each report's drop and accuracy, then tuned against base.
    assert "| all | `h:0` | 2 | 2 | +50.0 pp | +0.0 pp | 50.0% | 100.0% | +50.0 pp |" in section
    assert section.index("`h:0`") < section.index("`h:1`") and "`h:2`" not in section
    assert section.split("`h:0`")[1].split("\n")[0].endswith("| tool_shape |")
    # A third report: its own columns and counts, against the same baseline.
    again = compare_reports([base, tuned, pooled_report(POOLED_TABLE, "again")], ["b", "t", "a"])
    h = again["harness_variants"]["all"]
    assert (h["higher"], h["lower"], h["median_drop"]) == ([1, 0], [0, 0], [0.25, -0.5, 0.25])
    assert [v["versus_first"][1]["diff"] for v in h["variants"].values()] == [0, 0]
    (_, header, summary), (_, worst_header, _) = harness_variant_tables(again)
    assert header[-2:] == ["t: higher / lower accuracy", "a: higher / lower accuracy"]
    assert summary == [
        [
            "all",
            "2",
            "+25.0 pp",
            "-50.0 pp",
            "+25.0 pp",
            "+50.0 pp",
            "+0.0 pp",
            "+50.0 pp",
            "1 / 0",
            "0 / 0",
        ]
    ]
    assert worst_header.count("95% CI (paired bootstrap)") == 2


def test_compare_per_harness_variant_takes_names_a_report_lacks_and_refuses_conflicts():
    base, tuned = pooled_report(POOLED_TABLE, "base"), pooled_report(TUNED_TABLE, "tuned")
    base["sets"]["all"]["by_harness_variant"]["variants"]["h:1"]["lineages"] = [["listed"]]

    def older(report: dict) -> dict:
        """``report`` as an hsa made it before results named their harness variant."""
        report = copy.deepcopy(report)
        del report["sets"]["all"]["by_harness_variant"]
        for r in report["results"]:
            del r["harness_variant"]
        return report

    expected = compare_reports([base, tuned], ["base", "tuned"])["harness_variants"]
    assert expected["all"]["variants"]["h:1"]["lineages"] == [["listed"]]
    assert compare_reports([base, older(tuned)], ["base", "tuned"])["harness_variants"] == expected
    # An older baseline: the same variants in the same order, named and listed by the other.
    backward = compare_reports([tuned, base], ["tuned", "base"])["harness_variants"]
    assert compare_reports([older(tuned), base], ["t", "b"])["harness_variants"] == backward
    assert backward["all"]["variants"]["h:1"]["lineages"] == [["listed"]]
    for r in tuned["results"]:
        if r["harness_variant"] == "h:1":
            r["harness_variant"] = "h:9"
    with pytest.raises(HsaError, match="harness variant h:1 in one report and h:9"):
        compare_reports([base, tuned], ["base", "tuned"])


def test_compare_without_a_pool_has_no_harness_variants():
    better = {e: [[True], [True]] for e in VARIANT_TABLE}
    base, other = scripted_report(VARIANT_TABLE, "base"), scripted_report(better, "tuned")
    comparison = compare_reports([base, other], ["base", "tuned"])
    assert comparison["harness_variants"] == {}
    assert "## Harness variants" not in comparison_markdown(comparison)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["e1", "e2", "e3", "e4"]),
            st.sampled_from(["a:0", "a:1", "b:0"]),
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_swapping_the_baseline_negates_every_harness_variants_difference(rows):
    def report(name: str, side: int) -> dict:
        table: dict = {}
        for e, h, *correct in rows:
            table.setdefault(e, []).append((h, [correct[side]]))
        return pooled_report(table, name)

    a, b = report("a", 0), report("b", 1)
    forward = compare_reports([a, b], ["a", "b"], resamples=200)["harness_variants"]
    backward = compare_reports([b, a], ["b", "a"], resamples=200)["harness_variants"]
    assert forward.keys() == backward.keys()
    for name, h in forward.items():
        back = backward[name]
        assert h["variants"].keys() == back["variants"].keys()
        assert h["median_drop"] == back["median_drop"][::-1]
        assert h["worst_drop"] == back["worst_drop"][::-1]
        bounds = [b for v in h["variants"].values() for b in v["versus_first"][0]["diff_ci95"]]
        if all(b == 0 or abs(b) > 1e-9 for b in bounds):  # no bound on 0 but for rounding
            assert (h["higher"], h["lower"]) == (back["lower"], back["higher"])
        for variant, entry in h["variants"].items():
            mine, theirs = entry["versus_first"][0], back["variants"][variant]["versus_first"][0]
            assert entry["accuracy"] == back["variants"][variant]["accuracy"][::-1]
            assert entry["drop"] == back["variants"][variant]["drop"][::-1]
            assert mine["diff"] == pytest.approx(-theirs["diff"])
            assert mine["diff_ci95"] == pytest.approx([-x for x in theirs["diff_ci95"][::-1]])
            assert (mine["only_first"], mine["only_this"]) == (
                theirs["only_this"],
                theirs["only_first"],
            )
