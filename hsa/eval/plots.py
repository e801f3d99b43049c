"""The report's plots, drawn with matplotlib's Agg canvas (no display, no global backend switch)
and saved without a timestamp or version in the PNG, so the same report draws the same bytes.

* ``accuracy_by_family.png``: per set, accuracy on the originals (same episodes) and on the
  variants, with 95% bootstrap intervals;
* ``failures_by_rule.png``: which BFCL rule failed, per set;
* ``latency.png``: histogram of end-to-end request latency (and time to first token when
  streamed), with P50/P95/P99 marked.
"""

from __future__ import annotations

from pathlib import Path

from hsa.errors import HsaError
from hsa.eval.items import ORIGINAL
from hsa.files.jsonl import atomic_path

ACCURACY_PLOT = "accuracy_by_family.png"
RULES_PLOT = "failures_by_rule.png"
LATENCY_PLOT = "latency.png"
DPI = 100
ORIGINAL_COLOR, VARIANT_COLOR = "#8c8c8c", "#1f77b4"


def new_figure(width: float, height: float):
    """A figure on matplotlib's Agg canvas (no display, no global backend switch); also for
    plots drawn elsewhere (the miniature experiment's curve), so every PNG is made alike."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise HsaError("plots need matplotlib: pip install 'hsa[eval]'") from None
    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save_figure(figure, path: Path) -> None:
    """Write ``figure`` to ``path`` as PNG, atomically, with no metadata that changes by run."""
    with atomic_path(path) as tmp:
        # No Software/Creation metadata: the bytes depend on the data only.
        figure.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})


def _errors(value: float, ci: list | None) -> list[float]:
    return [0.0, 0.0] if not ci else [max(0.0, value - ci[0]), max(0.0, ci[1] - value)]


def accuracy_plot(report: dict, path: Path) -> None:
    sets = [(n, s) for n, s in report["sets"].items() if s["accuracy"] is not None]
    figure = new_figure(max(6.0, 1.3 * len(sets) + 2), 4.5)
    axes = figure.add_subplot()
    width = 0.38
    for i, (_, s) in enumerate(sets):
        for offset, value, ci, color in (
            (-width / 2, s["original_accuracy"], s["original_ci95"], ORIGINAL_COLOR),
            (width / 2, s["accuracy"], s["accuracy_ci95"], VARIANT_COLOR),
        ):
            low, high = _errors(value, ci)
            axes.bar(
                i + offset,
                100 * value,
                width,
                color=color,
                yerr=[[100 * low], [100 * high]],
                capsize=3,
                ecolor="#333333",
            )
            axes.annotate(
                f"{100 * value:.0f}",
                (i + offset, 100 * value + 100 * high),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                fontsize=8,
            )
    axes.set_xticks(
        range(len(sets)), [name if s["family"] is None else f"{name}\n(alone)" for name, s in sets]
    )
    axes.set_ylim(0, 110)
    axes.set_ylabel("accuracy (% of judged turns)")
    axes.set_title("Accuracy per transform family: originals vs held-out variants (95% CI)")
    from matplotlib.patches import Patch

    axes.legend(
        handles=[
            Patch(color=ORIGINAL_COLOR, label="original harness (same episodes)"),
            Patch(color=VARIANT_COLOR, label="held-out variants"),
        ],
        loc="upper right",
        fontsize=8,
    )
    axes.grid(axis="y", alpha=0.3)
    save_figure(figure, path)


def rules_plot(report: dict, path: Path) -> None:
    sets = [(ORIGINAL, report["original"])] + [
        (n if s["family"] is None else f"{n} (alone)", s) for n, s in report["sets"].items()
    ]
    rules = sorted({r for _, s in sets for r in s["failures_by_rule"]})
    figure = new_figure(8.0, 0.5 * len(sets) + 2.5)
    axes = figure.add_subplot()
    left = [0.0] * len(sets)
    colors = [f"C{i % 10}" for i in range(len(rules))]
    for rule, color in zip(rules, colors, strict=True):
        shares = [
            100 * s["failures_by_rule"].get(rule, 0) / s["turns"] if s["turns"] else 0.0
            for _, s in sets
        ]
        axes.barh(range(len(sets)), shares, left=left, color=color, label=rule)
        left = [a + b for a, b in zip(left, shares, strict=True)]
    axes.set_yticks(range(len(sets)), [name for name, _ in sets])
    axes.invert_yaxis()
    axes.set_xlim(0, 100)
    axes.set_xlabel("% of judged turns that failed, by the first BFCL rule that failed")
    axes.set_title("Failures by rule")
    if rules:  # below the axes: inside, it would hide the bars
        figure.legend(loc="outside lower center", ncol=min(4, len(rules)), fontsize=7)
    axes.grid(axis="x", alpha=0.3)
    save_figure(figure, path)


def latency_plot(report: dict, path: Path) -> bool:
    latency = report["latency"]
    series = [
        (label, latency.get(key) or [], latency[name])
        for label, key, name in (
            ("end to end", "e2e_samples_s", "e2e_s"),
            ("time to first token", "ttft_samples_s", "ttft_s"),
        )
    ]
    series = [s for s in series if s[1]]
    if not series:
        return False
    figure = new_figure(7.0, 4.0)
    axes = figure.add_subplot()
    for i, (label, samples, summary) in enumerate(series):
        axes.hist(
            [1000 * v for v in samples],
            bins=40,
            alpha=0.6,
            color=f"C{i}",
            label=f"{label} (n={len(samples)})",
        )
        for q, style in (("p50", "-"), ("p95", "--"), ("p99", ":")):
            axes.axvline(
                1000 * summary[q],
                color=f"C{i}",
                linestyle=style,
                linewidth=1,
                label=f"{label} {q.upper()} {1000 * summary[q]:.0f} ms",
            )
    axes.set_xlabel("milliseconds per request")
    axes.set_ylabel("requests")
    axes.set_title("Request latency")
    axes.legend(fontsize=7)
    save_figure(figure, path)
    return True


def write_plots(report: dict, out: Path) -> list[str]:
    """Draw every plot the report has data for; return their file names."""
    written = []
    if any(s["accuracy"] is not None for s in report["sets"].values()):
        accuracy_plot(report, out / ACCURACY_PLOT)
        written.append(ACCURACY_PLOT)
    rules_plot(report, out / RULES_PLOT)
    written.append(RULES_PLOT)
    if latency_plot(report, out / LATENCY_PLOT):
        written.append(LATENCY_PLOT)
    return written
