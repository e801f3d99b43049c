"""Reports side by side, with paired tests: is a difference between two models real?

Every report must have judged the same items (same keys, same prompts, tools and gold: the
``items_sha256`` of their runs); otherwise the comparison is refused. The first report is the
baseline. Per set (originals, all families, each family alone), each other report gets:

* the difference in accuracy (other minus baseline) with a 95% paired bootstrap interval over
  episodes (one draw of episodes applies to both reports);
* McNemar's exact test on the paired turns: b turns only the baseline got right, c only the other,
  p from Binomial(b + c, 1/2). It treats turns as independent; the bootstrap does not.
"""

from __future__ import annotations

from pathlib import Path

from hsa.errors import HsaError
from hsa.eval.items import ORIGINAL
from hsa.eval.report import interval, markdown_table, pct, points
from hsa.eval.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    Result,
    discordant,
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
    the paired difference, its interval and McNemar's p."""
    if len(reports) < 2:
        raise HsaError("compare needs at least two reports")
    check_same_items(reports, labels)
    results = [[Result.from_dict(r) for r in report["results"]] for report in reports]
    sets = [ORIGINAL] + list(reports[0]["sets"])
    rows = []
    for name in sets:
        per_report = [[r for r in rs if r.set == name] for rs in results]
        base = per_report[0]
        base_correct = {r.key: r.correct for r in base}
        row = {
            "set": name,
            "turns": len(base),
            "family": None if name == ORIGINAL else reports[0]["sets"][name]["family"],
            "accuracy": [sum(r.correct for r in rs) / len(rs) if rs else None for rs in per_report],
            "drop": [
                None if name == ORIGINAL else report["sets"][name]["drop"] for report in reports
            ],
            "versus_first": [],
        }
        for rs in per_report[1:]:
            b, c = discordant(base_correct, {r.key: r.correct for r in rs})
            paired = paired_bootstrap(
                turn_counts(rs), turn_counts(base), resamples=resamples, seed=seed
            )
            row["versus_first"].append(
                {
                    "diff": paired["diff"],
                    "diff_ci95": paired["diff_ci"],
                    "only_first": b,
                    "only_this": c,
                    "mcnemar_p": mcnemar_exact(b, c),
                }
            )
        rows.append(row)
    return {
        "reports": labels,
        "items": len(results[0]),
        "items_sha256": reports[0]["run"]["items_sha256"],
        "bootstrap": {"resamples": resamples, "seed": seed, "unit": "episode"},
        "rows": rows,
    }


def comparison_table(comparison: dict) -> tuple[list[str], list[list[str]]]:
    labels = comparison["reports"]
    first = labels[0]
    header = ["set", "turns"] + [f"accuracy {label}" for label in labels]
    for label in labels[1:]:
        header += [f"{label} − {first}", "95% CI (paired bootstrap)", "McNemar p (b/c)"]
    rows = []
    for row in comparison["rows"]:
        name = row["set"] if row["family"] is None else f"{row['set']} (alone)"
        cells = [name, str(row["turns"])] + [pct(a) for a in row["accuracy"]]
        for versus in row["versus_first"]:
            cells += [
                points(versus["diff"]),
                interval(versus["diff_ci95"]),
                f"{versus['mcnemar_p']:.3g} ({versus['only_first']}/{versus['only_this']})",
            ]
        rows.append(cells)
    return header, rows


def comparison_markdown(comparison: dict) -> str:
    header, rows = comparison_table(comparison)
    return (
        markdown_table(header, rows) + "\n\nb/c: turns only the first report got right / "
        "only the other did. The interval is a percentile bootstrap over episodes "
        f"({comparison['bootstrap']['resamples']} resamples, seed "
        f"{comparison['bootstrap']['seed']}).\n"
    )
