"""Reports side by side, with paired tests: is a difference between two models real?

Every report must have judged the same items (same keys, same prompts, tools and gold: the
``items_sha256`` of their runs); otherwise the comparison is refused. The first report is the
baseline. Per set (originals, all families, each family alone), each other report gets:

* the difference in accuracy (other minus baseline) with a 95% paired bootstrap interval over
  episodes (one draw of episodes applies to both reports);
* McNemar's exact test on the paired turns: b turns only the baseline got right, c only the other,
  p from Binomial(b + c, 1/2). It treats turns as independent; the bootstrap does not.

Per harness variant (versions made with a recipe's pool, ``harness_variants: N``): for every
harness variant that :data:`~hsa.eval.stats.SHARED_BY` or more episodes took, each report's
accuracy and drop under it (as in the report) and the same paired tests on its turns; per set, the
median and the worst drop of each report (each its own worst variant), and under how many
variants each other report's accuracy is higher or lower (the interval of the difference clear of
0: with many variants, about one in forty clears 0 each way by chance alone). Variants are listed
in the baseline's order, its worst drop first, so on the first rows the other reports tend to
look better partly by chance (regression to the mean); the medians, worst drops and counts take
every variant alike.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hsa.errors import HsaError
from hsa.eval.items import ORIGINAL
from hsa.eval.report import (
    WORST_SHOWN,
    interval,
    markdown_table,
    pct,
    points,
    variant_transforms,
    worst_shown,
)
from hsa.eval.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    SHARED_BY,
    Result,
    by_harness_variant,
    discordant,
    harness_variant_groups,
    mcnemar_exact,
    paired_bootstrap,
    turn_counts,
)


def report_labels(paths: list[str]) -> list[str]:
    """The shortest path tails that tell the reports apart (``base``, ``runs/a/report``)."""
    parts = [Path(p).resolve().parts for p in paths]
    for depth in range(1, max(map(len, parts)) + 1):
        labels = ["/".join(p[-depth:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return [str(p) for p in paths]


def check_same_items(reports: list[dict], labels: list[str]) -> None:
    base = reports[0]["run"]["items_sha256"]
    for report, label in zip(reports[1:], labels[1:], strict=True):
        if report["run"]["items_sha256"] != base:
            mine = {r["key"] for r in report["results"]}
            theirs = {r["key"] for r in reports[0]["results"]}
            detail = (
                f"{len(mine - theirs)} item(s) only in {label}, {len(theirs - mine)} only "
                f"in {labels[0]}"
                if mine != theirs
                else "the same item keys, but other prompts, tools or gold"
            )
            raise HsaError(
                f"reports {labels[0]} and {label} were made on different items "
                f"({detail}); a paired comparison needs the same items: evaluate both "
                f"models with the same episodes, recipe, variants, seed and --limit"
            )


def compare_reports(
    reports: list[dict],
    labels: list[str],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict:
    """The comparison as JSON-ready data: per set, each report's accuracy and, against the first,
    the paired difference, its interval and McNemar's p; per set with a pool, the same per
    harness variant (``harness_variants``, only sets with a variant SHARED_BY episodes took)."""
    if len(reports) < 2:
        raise HsaError("compare needs at least two reports")
    check_same_items(reports, labels)
    results = [[Result.from_dict(r) for r in report["results"]] for report in reports]
    originals = [[r for r in rs if r.set == ORIGINAL] for rs in results]
    rows, harness_variants = [], {}
    for name in [ORIGINAL, *reports[0]["sets"]]:
        per_report = [[r for r in rs if r.set == name] for rs in results]
        base = per_report[0]
        rows.append(
            {
                "set": name,
                "turns": len(base),
                "family": None if name == ORIGINAL else reports[0]["sets"][name]["family"],
                "accuracy": [
                    sum(r.correct for r in rs) / len(rs) if rs else None for rs in per_report
                ],
                "drop": [
                    None if name == ORIGINAL else report["sets"][name]["drop"] for report in reports
                ],
                "versus_first": [
                    _versus_first(base, rs, resamples=resamples, seed=seed) for rs in per_report[1:]
                ],
            }
        )
        if name == ORIGINAL:
            continue
        compared = _by_harness_variant(
            originals,
            per_report,
            _listed_lineages(reports, name),
            resamples=resamples,
            seed=seed,
        )
        if compared["variants"]:
            harness_variants[name] = compared
    return {
        "reports": labels,
        "items": len(results[0]),
        "items_sha256": reports[0]["run"]["items_sha256"],
        "bootstrap": {"resamples": resamples, "seed": seed, "unit": "episode"},
        "rows": rows,
        "harness_variants": harness_variants,
    }


def _listed_lineages(reports: list[dict], name: str) -> dict[str, list]:
    """Set ``name``'s harness variants' lineages, each as the first report that lists it has
    it (a report made before reports carried lineages has none)."""
    listed: dict[str, list] = {}
    for report in reports:
        ranked = report["sets"][name].get("by_harness_variant", {}).get("variants", {})
        for variant, entry in ranked.items():
            if entry.get("lineages"):
                listed.setdefault(variant, entry["lineages"])
    return listed


def _versus_first(base: list[Result], other: list[Result], *, resamples: int, seed: int) -> dict:
    """``other`` against the baseline on the same items: the difference in accuracy with its
    paired bootstrap interval, the discordant turns and McNemar's p."""
    b, c = discordant({r.key: r.correct for r in base}, {r.key: r.correct for r in other})
    paired = paired_bootstrap(turn_counts(other), turn_counts(base), resamples=resamples, seed=seed)
    return {
        "diff": paired["diff"],
        "diff_ci95": paired["diff_ci"],
        "only_first": b,
        "only_this": c,
        "mcnemar_p": mcnemar_exact(b, c),
    }


def _by_harness_variant(
    originals: list[list[Result]],
    per_report: list[list[Result]],
    listed: dict,
    *,
    resamples: int,
    seed: int,
) -> dict:
    """One set's harness variants compared (see the module docstring); ``listed``: each
    variant's lineages, as the reports list them."""
    per_report = _one_naming(per_report)
    summaries = [
        by_harness_variant(original, rs, resamples=resamples, seed=seed)
        for original, rs in zip(originals, per_report, strict=True)
    ]
    groups = [harness_variant_groups(rs) for rs in per_report]
    variants = {}
    for name, first in summaries[0]["variants"].items():  # the baseline's order, worst first
        variants[name] = {
            "episodes": first["episodes"],
            "turns": first["turns"],
            "accuracy": [s["variants"][name]["accuracy"] for s in summaries],
            "drop": [s["variants"][name]["drop"] for s in summaries],
            "versus_first": [
                _versus_first(groups[0][name], g[name], resamples=resamples, seed=seed)
                for g in groups[1:]
            ],
            "lineages": listed.get(name),
        }
    return {
        "shared_by": SHARED_BY,
        "median_drop": [s["median_drop"] for s in summaries],
        "worst_drop": [s["worst_drop"] for s in summaries],  # each report's own worst variant
        # Accuracy under the variant, not its drop: the drops are in the rows.
        "higher": [_clear_of_zero(variants, i, above=True) for i in range(len(groups) - 1)],
        "lower": [_clear_of_zero(variants, i, above=False) for i in range(len(groups) - 1)],
        "variants": variants,
    }


def _clear_of_zero(variants: dict, other: int, *, above: bool) -> int:
    """How many variants the ``other``-th report's accuracy is higher (or lower) under than the
    baseline's, by the interval of the difference lying above (below) 0."""
    cis = [v["versus_first"][other]["diff_ci95"] for v in variants.values()]
    return sum(ci is not None and (ci[0] > 0 if above else ci[1] < 0) for ci in cis)


def _one_naming(per_report: list[list[Result]]) -> list[list[Result]]:
    """Every report's results under the harness variants the reports name for each item (a
    report made before results carried one names none, and takes the others' names); two
    reports naming different variants for one item are refused."""
    names: dict[str, str] = {}
    for rs in per_report:
        for r in rs:
            if r.harness_variant is None:
                continue
            if names.setdefault(r.key, r.harness_variant) != r.harness_variant:
                raise HsaError(
                    f"item {r.key} is under harness variant {names[r.key]} in one report and "
                    f"{r.harness_variant} in another: were they made from the same dataset "
                    f"versions?"
                )
    return [
        [
            r
            if r.harness_variant is not None or r.key not in names
            else replace(r, harness_variant=names[r.key])
            for r in rs
        ]
        for rs in per_report
    ]


def _versus_cells(versus: dict) -> list[str]:
    return [
        points(versus["diff"]),
        interval(versus["diff_ci95"]),
        f"{versus['mcnemar_p']:.3g} ({versus['only_first']}/{versus['only_this']})",
    ]


def _versus_header(labels: list[str]) -> list[str]:
    first = labels[0]
    return [
        column
        for label in labels[1:]
        for column in (f"{label} − {first}", "95% CI (paired bootstrap)", "McNemar p (b/c)")
    ]


def comparison_table(comparison: dict) -> tuple[list[str], list[list[str]]]:
    labels = comparison["reports"]
    header = ["set", "turns"] + [f"accuracy {label}" for label in labels] + _versus_header(labels)
    rows = []
    for row in comparison["rows"]:
        name = row["set"] if row["family"] is None else f"{row['set']} (alone)"
        cells = [name, str(row["turns"])] + [pct(a) for a in row["accuracy"]]
        for versus in row["versus_first"]:
            cells += _versus_cells(versus)
        rows.append(cells)
    return header, rows


def harness_variant_tables(comparison: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of the per-harness-variant tables: per set, each report's median and
    worst drop and under how many variants each other report's accuracy is higher or lower;
    then the baseline's largest drops per set, up to :data:`~hsa.eval.report.WORST_SHOWN`. None
    without a pool."""
    sets = comparison.get("harness_variants", {})
    if not sets:
        return []
    labels, first = comparison["reports"], comparison["reports"][0]
    shared_by = next(iter(sets.values()))["shared_by"]
    summary_header = (
        ["set", f"taken by {shared_by}+ episodes"]
        + [f"median drop {label}" for label in labels]
        + [f"worst drop {label}" for label in labels]
        + [f"{label}: higher / lower accuracy" for label in labels[1:]]
    )
    summary = [
        [name, str(len(h["variants"]))]
        + [points(d) for d in h["median_drop"]]
        + [points(d) for d in h["worst_drop"]]
        + [f"{up} / {down}" for up, down in zip(h["higher"], h["lower"], strict=True)]
        for name, h in sets.items()
    ]
    worst_header = (
        ["set", "harness variant", "episodes", "turns"]
        + [f"drop {label}" for label in labels]
        + [f"accuracy {label}" for label in labels]
        + _versus_header(labels)
        + ["its transforms"]
    )
    worst = [
        [name, f"`{variant}`", str(entry["episodes"]), str(entry["turns"])]
        + [points(d) for d in entry["drop"]]
        + [pct(a) for a in entry["accuracy"]]
        + [cell for versus in entry["versus_first"] for cell in _versus_cells(versus)]
        + [variant_transforms(entry["lineages"])]
        for name, h in sets.items()
        for variant, entry in worst_shown(h)
    ]
    return [
        (
            f"Harness variants taken by {shared_by}+ episodes: each report's median drop and "
            f"worst drop (its own worst variant), and under how many variants each other "
            f"report's accuracy is higher / lower than {first}'s (95% interval of the "
            f"difference above / below 0; with many variants, about one in forty clears 0 "
            f"each way by chance alone)",
            summary_header,
            summary,
        ),
        (
            f"{first}'s largest drops per set, up to {WORST_SHOWN}; picked by {first}, so the "
            f"others tend to look better on them, partly by chance (regression to the mean)",
            worst_header,
            worst,
        ),
    ]


def comparison_markdown(comparison: dict) -> str:
    header, rows = comparison_table(comparison)
    text = (
        markdown_table(header, rows) + "\n\nb/c: turns only the first report got right / "
        "only the other did. The interval is a percentile bootstrap over episodes "
        f"({comparison['bootstrap']['resamples']} resamples, seed "
        f"{comparison['bootstrap']['seed']}).\n"
    )
    tables = harness_variant_tables(comparison)
    if tables:
        text += "\n## Harness variants\n"
        for title, header, rows in tables:
            text += f"\n{title}.\n\n{markdown_table(header, rows)}\n"
    return text
