"""Write a report folder: ``report.json`` (everything, for machines and ``hsa eval compare``),
``report.md`` (what a person reads first) and the plots.

The main table has one row per set: the originals, all families together, then each family
alone, with accuracy on the variants, the originals' accuracy on the same episodes, the drop and
its 95% interval, consistency and pass^k, skill selection and hook compliance. Further sections:
failures by rule, the families inside the all-families variants, the harness variants with the
largest drops (hsa.eval.stats.by_harness_variant), latency and the plots.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from hsa.eval.items import ORIGINAL, changing_transforms
from hsa.files.jsonl import atomic_path

REPORT_FILE = "report.json"
MARKDOWN_FILE = "report.md"


def pct(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{100 * value:.{digits}f}%"


def points(value: float | None) -> str:
    """A difference of accuracies, in percentage points."""
    return "–" if value is None else f"{100 * value:+.1f} pp"


def interval(ci: list | None) -> str:
    return "–" if not ci else f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"


def _rate(entry: dict) -> str:
    return "–" if entry["rate"] is None else f"{pct(entry['rate'])} (n={entry['n']})"


# The paired columns of a set, or of a harness variant: its accuracy against the originals on
# the same episodes (hsa.eval.stats.paired_bootstrap).
PAIRED_HEADER = ["accuracy", "original (same episodes)", "drop", "95% CI of drop"]


def _paired_cells(entry: dict) -> list[str]:
    return [
        pct(entry["accuracy"]),
        pct(entry["original_accuracy"]),
        points(entry["drop"]),
        interval(entry["drop_ci95"]),
    ]


def main_table(report: dict) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the report's main table (strings, ready to print)."""
    k_max = max((len(s["pass_k"]) for s in report["sets"].values()), default=0)
    header = (
        ["set", "episodes", "turns", *PAIRED_HEADER, "consistency"]
        + [f"pass^{k}" for k in range(1, k_max + 1)]
        + ["skill selection", "hook compliance"]
    )
    original = report["original"]
    rows = [
        [
            ORIGINAL,
            str(original["episodes"]),
            str(original["turns"]),
            pct(original["accuracy"]),
            "",
            "",
            "",
            "",
        ]
        + [""] * k_max
        + [_rate(original["skill_selection"]), _rate(original["hook_compliance"])]
    ]
    for name, s in report["sets"].items():
        label = name if s["family"] is None else f"{name} (alone)"
        rows.append(
            [label, str(s["episodes"]), str(s["turns"]), *_paired_cells(s), pct(s["consistency"])]
            + [pct(s["pass_k"].get(str(k))) for k in range(1, k_max + 1)]
            + [_rate(s["skill_selection"]), _rate(s["hook_compliance"])]
        )
    return header, rows


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _rules_table(report: dict) -> str:
    sets = {ORIGINAL: report["original"], **report["sets"]}
    rules = sorted({r for s in sets.values() for r in s["failures_by_rule"]})
    if not rules:
        return "No failures."
    rows = [
        [rule] + [str(s["failures_by_rule"].get(rule, 0)) for s in sets.values()] for rule in rules
    ]
    return markdown_table(["failed rule"] + list(sets), rows)


def _changed_table(report: dict) -> str:
    rows = []
    for name, s in report["sets"].items():
        if s["family"] is not None:
            continue
        for family, entry in s["by_family_changed"].items():
            rows.append([name, family, str(entry["turns"]), pct(entry["accuracy"])])
    if not rows:
        return ""
    return (
        "Accuracy on the variants a family changed, among others (a variant of several "
        "families counts in each):\n\n"
        + markdown_table(["set", "family changed", "turns", "accuracy"], rows)
        + "\n"
    )


WORST_SHOWN = 5  # harness variants listed per set in report.md (report.json has every one)


def worst_shown(ranked: dict) -> list[tuple[str, dict]]:
    """The first :data:`WORST_SHOWN` of a set's ranked harness variants (worst first)."""
    return list(ranked["variants"].items())[:WORST_SHOWN]


def variant_transforms(lineages: list[list[dict]] | None) -> str:
    """The transforms a harness variant's listed lineage fired ("; " between lineages, for a
    name two source harnesses share); "–" for a version without a listing."""
    if not lineages:
        return "–"
    return "; ".join(", ".join(changing_transforms(steps)) or "none" for steps in lineages)


def _harness_variants_table(report: dict) -> str:
    """Per set: its harness variants, and the worst few of those many episodes took."""
    sets = {name: s["by_harness_variant"] for name, s in report["sets"].items()}
    sets = {name: h for name, h in sets.items() if h["variants"]}
    if not sets:
        return ""
    shared_by = next(iter(sets.values()))["shared_by"]
    summary = [
        [
            name,
            str(h["harness_variants"]),
            f"{h['episodes_per_variant']:g}",
            str(len(h["variants"])),
            points(h["median_drop"]),
            points(h["worst_drop"]),
        ]
        for name, h in sets.items()
    ]
    worst = [
        [
            name,
            f"`{variant}`",
            str(entry["episodes"]),
            str(entry["turns"]),
            *_paired_cells(entry),
            variant_transforms(entry.get("lineages")),
        ]
        for name, h in sets.items()
        for variant, entry in worst_shown(h)
    ]
    return (
        "How the model does under each harness variant of the recipe's pool (the rows' "
        "`hsa_harness_variant`; each one's lineage is in report.json and in its dataset "
        "version's `harness_variants.parquet`), against the originals on the same episodes. Variants "
        f"taken by fewer than {shared_by} episodes are counted, not ranked.\n\n"
        + markdown_table(
            [
                "set",
                "harness variants",
                "episodes per variant (median)",
                f"taken by {shared_by}+ episodes",
                "median drop",
                "worst drop",
            ],
            summary,
        )
        + f"\n\nThe largest drops per set, up to {WORST_SHOWN} (all of them in report.json):\n\n"
        + markdown_table(
            [
                "set",
                "harness variant",
                "episodes",
                "turns",
                *PAIRED_HEADER,
                "its transforms",
            ],
            worst,
        )
        + "\n"
    )


def _ms(value) -> str:
    return "–" if value is None else f"{1000 * value:.0f} ms"


def _latency_table(latency: dict) -> str:
    rows = []
    for name, label in (
        ("e2e_s", "end to end"),
        ("ttft_s", "time to first token"),
        ("tpot_s", "time per output token"),
    ):
        d = latency[name]
        if d["n"]:
            rows.append(
                [label, str(d["n"]), _ms(d["mean"]), _ms(d["p50"]), _ms(d["p95"]), _ms(d["p99"])]
            )
    table = (
        markdown_table(["latency", "requests", "mean", "P50", "P95", "P99"], rows)
        if rows
        else "No request was timed in this run."
    )
    rate = latency.get("output_tokens_per_s")
    tail = (
        f"\n\nOutput throughput: {rate:,.1f} tokens/s ({latency['completion_tokens']:,} "
        f"output tokens over {latency['wall_s']:.1f} s of asking)."
        if rate
        else ""
    )
    return table + tail


def rejects_note(inputs: dict, *, code: str = "") -> str | None:
    """How many lines of the episodes file are not evaluated and the first of them, said on the
    terminal and in report.md (``code`` quotes it there): the report covers only the episodes
    that loaded, and must not pass for one on the whole file. None when every line loaded."""
    rejected = inputs.get("source_rejects")
    if not rejected:
        return None
    lines, first = inputs.get("source_lines"), inputs.get("source_first_reject")
    counted = f"{rejected} of {lines}" if lines else str(rejected)  # older reports lack lines
    where = f" (first: {code}{first}{code})" if first else ""
    return f"{counted} episode lines did not load{where}; they are not evaluated."


def render_markdown(report: dict, plots: list[str]) -> str:
    run = report["run"]
    backend = run["backend"]
    inputs = run["inputs"]
    header, rows = main_table(report)
    boot = run["bootstrap"]
    lines = [
        "# Harness-robustness evaluation",
        "",
        f"Model `{backend['model']}` ({backend['backend']}, temperature "
        f"{backend['sampling']['temperature']}, max tokens {backend['sampling']['max_tokens']}); "
        f"{run['episodes']} episodes, {run['items']} judged turns"
        + (f" from `{inputs['episodes']}`" if inputs.get("episodes") else "")
        + (
            f", recipe `{inputs['recipe']}` with {inputs['variants']} variants per episode"
            if inputs.get("recipe")
            else ""
        )
        + ".",
        "",
        *([note, ""] if (note := rejects_note(inputs, code="`")) else []),
        markdown_table(header, rows),
        "",
        f"Accuracy: correct judged turns (BFCL AST rules, `hsa.model.scorer.judge`). Drop: originals "
        f"minus variants on the same episodes (positive: the variants are harder), with a {int(100 * boot['level'])}% percentile "
        f"bootstrap interval over episodes ({boot['resamples']} resamples, seed {boot['seed']}). "
        f"Consistency: episodes solved (every turn correct) under every variant. pass^k: chance "
        f"that k variants of an episode, drawn without replacement, are all solved. `(alone)`: "
        f"the recipe restricted to that family's transforms; variants none of them changed are "
        f"left out (`unchanged_rows` in report.json).",
        "",
    ]
    if not run["hooks_checked"]:
        lines += ["Hook compliance was not measured: hooks are code, run with `--trust-hooks`.", ""]
    lines += ["## Failures by rule", "", _rules_table(report), ""]
    changed = _changed_table(report)
    if changed:
        lines += ["## Families inside the all-families variants", "", changed]
    harness_variants = _harness_variants_table(report)
    if harness_variants:
        lines += ["## Harness variants", "", harness_variants]
    lines += ["## Latency", "", _latency_table(report["latency"]), ""]
    if report["no_answer"]:
        lines += [
            f"{len(report['no_answer'])} request(s) got no message to judge (refused by "
            f"the endpoint, or a tool call that could not be parsed) and count as wrong "
            f"(`no_answer`; listed in report.json).",
            "",
        ]
    if plots:
        lines += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    return "\n".join(lines)


def write_report(report: dict, out: Path) -> list[str]:
    """Write report.json, the plots and report.md into ``out``; return the plot file names."""
    from hsa.eval.plots import write_plots

    with atomic_path(out / REPORT_FILE) as tmp:
        tmp.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    plots = write_plots(report, out)
    with atomic_path(out / MARKDOWN_FILE) as tmp:
        tmp.write_text(render_markdown(report, plots), encoding="utf-8")
    return plots


def read_report(path: str | Path) -> dict:
    """A report.json, from its file or its folder."""
    from hsa.errors import HsaError

    path = Path(path)
    file = path / REPORT_FILE if path.is_dir() else path
    try:
        report = orjson.loads(file.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise HsaError(f"not an evaluation report ({exc})", file=str(file)) from None
    if not isinstance(report, dict) or "results" not in report or "run" not in report:
        raise HsaError("not an evaluation report (no run or results)", file=str(file))
    return report
