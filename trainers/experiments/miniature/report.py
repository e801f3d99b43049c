"""The miniature's results: the accuracy table of every seed against the target, the learning
curves of held-out accuracy, and where each report lies.

The target (per seed): the HSA model at least 20 points above the fixed one on held-out
variants, and within 5 points of it on the original harness.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from hsa.eval.report import markdown_table, pct, points
from hsa.files.jsonl import atomic_path

RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"
CURVE_PLOT = "curve.png"
HELD_OUT_MARGIN = 0.20  # HSA above fixed on held-out variants, at least
ORIGINAL_TOLERANCE = 0.05  # HSA within this of fixed on the original harness
# One colour family per condition, a shade and a marker per seed, so seeds can be told apart.
COLORMAPS = {"fixed": "Greys", "hsa": "Blues"}
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
LABELS = {"fixed": "fixed harness", "hsa": "HSA"}


def _decay(settings: dict) -> str:
    """How the learning rate ends: constant, or falling over the last share of the steps."""
    share = settings["decay_share"]
    return f", falling to a tenth over the last {share:.0%} of the steps" if share else ""


def verdict(accuracy: dict) -> dict:
    """The two gaps and whether they meet the target."""
    held_out = accuracy["hsa"]["held_out"] - accuracy["fixed"]["held_out"]
    original = accuracy["hsa"]["original"] - accuracy["fixed"]["original"]
    return {
        "held_out_gain": held_out,
        "original_gap": original,
        "met": held_out >= HELD_OUT_MARGIN - 1e-9 and abs(original) <= ORIGINAL_TOLERANCE + 1e-9,
    }


def results_table(seeds: list[dict]) -> tuple[list[str], list[list[str]]]:
    header = [
        "seed",
        "fixed: original",
        "fixed: held-out",
        "HSA: original",
        "HSA: held-out",
        "HSA − fixed, held-out",
        "HSA − fixed, original",
        "target met",
    ]
    rows = []
    for s in seeds:
        a, v = s["accuracy"], s["verdict"]
        rows.append(
            [
                str(s["seed"]),
                pct(a["fixed"]["original"]),
                pct(a["fixed"]["held_out"]),
                pct(a["hsa"]["original"]),
                pct(a["hsa"]["held_out"]),
                points(v["held_out_gain"]),
                points(v["original_gap"]),
                "yes" if v["met"] else "no",
            ]
        )
    return header, rows


def curve_plot(seeds: list[dict], path: Path) -> None:
    """Held-out accuracy (solid) and original accuracy (dotted) at each checkpoint, per seed."""
    from matplotlib import colormaps

    from hsa.eval.plots import new_figure, save_figure

    figure = new_figure(7.5, 4.5)
    axes = figure.add_subplot()
    for i, s in enumerate(seeds):
        shade = 0.85 - 0.4 * i / max(1, len(seeds) - 1)  # the first seed darkest
        marker = MARKERS[i % len(MARKERS)]
        for condition, points_ in s["curve"].items():
            if not points_:
                continue
            color = colormaps[COLORMAPS[condition]](shade)
            steps = [p["step"] for p in points_]
            axes.plot(
                steps,
                [100 * p["held_out"] for p in points_],
                color=color,
                marker=marker,
                markersize=3,
                alpha=0.9,
                label=f"{LABELS[condition]}, held-out (seed {s['seed']})",
            )
            axes.plot(
                steps,
                [100 * p["original"] for p in points_],
                color=color,
                linestyle=":",
                alpha=0.6,
                label=f"{LABELS[condition]}, original (seed {s['seed']})",
            )
    axes.set_xlabel("training step")
    axes.set_ylabel("accuracy (% of judged turns)")
    axes.set_ylim(-3, 103)
    axes.set_title("Miniature: accuracy on held-out harness variants over training")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    save_figure(figure, path)


def render_markdown(results: dict) -> str:
    seeds = results["seeds"]
    settings = results["settings"]
    header, rows = results_table(seeds)
    shape = settings["shape"]
    lines = [
        "# hsa experiment miniature",
        "",
        f"A {shape['num_hidden_layers']}-layer, d={shape['hidden_size']} Qwen2 model trained "
        f"from scratch for {settings['steps']} steps (batch {settings['batch_size']}, learning "
        f"rate {settings['learning_rate']:g} constant after "
        f"{min(settings['warmup_steps'], settings['steps'])} warm-up steps"
        f"{_decay(settings)}) on each training version (a harness of {settings['tools']} "
        f"tools), evaluated "
        f"in-process on {settings['eval_episodes']} episodes no training row holds "
        f"({settings['turns']} judged turns each) "
        f"under the original harness and under {settings['heldout_variants']} held-out "
        f"variants each.",
        "",
        markdown_table(header, rows),
        "",
        f"Target: HSA at least {100 * HELD_OUT_MARGIN:.0f} points above fixed on held-out "
        f"variants and within {100 * ORIGINAL_TOLERANCE:.0f} points of it on the original "
        f"harness.",
        "",
        "| seed | condition | rows | steps | steps/s | train s | final loss |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in seeds:
        for condition, t in s["training"].items():
            lines.append(
                f"| {s['seed']} | {condition} | {s['rows'][condition]} | {t['steps']} | "
                f"{t['steps_per_second']:.2f} | {t['train_seconds']:.0f} | "
                f"{t['final_loss'] if t['final_loss'] is None else format(t['final_loss'], '.4f')} |"
            )
    load = ", ".join(f"{x:.2f}" for x in results["load_average"])
    lines += [
        "",
        f"Wall time of this invocation (a resumed run counts only what it did; each "
        f"training's own time is in the table above): {results['wall_seconds']:.0f} s for "
        f"{len(seeds)} seed(s) on "
        f"{settings['threads']} thread(s), {settings['device']} (load average at the "
        f"end: {load}; {results['cpus']} CPUs).",
        "",
    ]
    for s in seeds:
        phases = ", ".join(f"{k} {v:.0f} s" for k, v in s["seconds"].items())
        lines.append(f"- seed {s['seed']}: {phases}; comparison: `{s['paths']['compare']}`")
    lines += ["", f"![held-out accuracy over training]({CURVE_PLOT})", ""]
    return "\n".join(lines)


def write_results(out: Path, results: dict) -> dict:
    for s in results["seeds"]:
        s["verdict"] = verdict(s["accuracy"])
    results["target_met"] = {str(s["seed"]): s["verdict"]["met"] for s in results["seeds"]}
    with atomic_path(out / RESULTS_JSON) as tmp:
        tmp.write_bytes(
            orjson.dumps(results, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
        )
    curve_plot(results["seeds"], out / CURVE_PLOT)
    with atomic_path(out / RESULTS_MD) as tmp:
        tmp.write_text(render_markdown(results), encoding="utf-8")
    return results
