"""``hsa score``: a predictions file judged against the episodes' gold (:mod:`hsa.model.scorer`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from hsa.cli.console import err, out
from hsa.cli.options import DefaultHarness, HarnessRoots, TrustHooks
from hsa.errors import HsaError

if TYPE_CHECKING:  # imported when a command runs, not when the CLI starts
    from hsa.model.episode import Episode
    from hsa.model.scorer import Prediction


def score(
    episodes: Annotated[Path, typer.Option(help="Episodes JSONL with gold.")],
    predictions: Annotated[
        Path,
        typer.Option(
            help='Predictions JSONL: {"id": ..., "message": <assistant message>, "at"?: <gold turn index>} per line.'
        ),
    ],
    harness: DefaultHarness = None,
    trust_hooks: TrustHooks = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print one JSON object: accuracy, correct, total, categories, items."
        ),
    ] = False,
    harness_roots: HarnessRoots = [],
) -> None:
    """Score model messages against gold with BFCL's AST rules; ids without a prediction are wrong.

    hsa score --episodes parallel.jsonl --predictions preds.jsonl --json
    """
    from hsa.files.jsonl import dumps
    from hsa.model.episode import read_all_episodes
    from hsa.model.harness import load_harness
    from hsa.model.scorer import read_predictions, score_predictions

    default = load_harness(harness, trust_hooks=trust_hooks) if harness else None
    loaded = read_all_episodes(
        episodes, harness=default, trust_hooks=trust_hooks, harness_roots=tuple(harness_roots)
    )
    if not loaded:
        raise HsaError("the file holds no episode: nothing to score", file=str(episodes))
    predicted, bad_lines = read_predictions(predictions)
    report = score_predictions(loaded, predicted)
    report.bad_lines = bad_lines + report.bad_lines
    if len(report.missing) == len(loaded):
        # Every episode counted wrong for want of a prediction: a 0% that scored nothing,
        # which a wrong file (another run's ids, a JSON array) must not pass for.
        raise HsaError(_nothing_scored(predicted, bad_lines, loaded), file=str(predictions))
    if as_json:
        print(dumps(report.to_dict()))
        return
    table = Table(title=f"{episodes.name} vs {predictions.name}")
    for column in ("category", "correct", "total", "accuracy"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for category, row in report.by_category().items():
        table.add_row(category, str(row["correct"]), str(row["total"]), f"{row['accuracy']:.1%}")
    out.print(table)
    out.print(f"accuracy {report.accuracy:.2%} ({report.correct}/{report.total})")
    if report.by_rule():
        out.print("failures by rule: " + ", ".join(f"{k} {v}" for k, v in report.by_rule().items()))
    if report.missing:
        out.print(
            f"{len(report.missing)} id(s) without a prediction (counted wrong): "
            + ", ".join(report.missing[:20])
            + (" ..." if len(report.missing) > 20 else "")
        )
    for note in report.bad_lines[:5]:
        err.print(f"prediction line not judged: {note}", markup=False, highlight=False)
    if len(report.bad_lines) > 5:
        err.print(
            f"... {len(report.bad_lines) - 5} more (all in --json's bad_prediction_lines)",
            markup=False,
            highlight=False,
        )
    if report.unknown_ids:
        err.print(
            f"{len(report.unknown_ids)} prediction id(s) match no episode: "
            + ", ".join(report.unknown_ids[:10]),
            markup=False,
            highlight=False,
        )


def _nothing_scored(
    predicted: list[Prediction], bad_lines: list[str], episodes: list[Episode]
) -> str:
    """Why a predictions file judged no episode, naming the first line at fault."""
    if predicted:
        known = {episode.id for episode in episodes}
        first = next(p for p in predicted if p.id not in known)
        return (
            f"no prediction line matched an episode id (first unmatched id: {first.id!r} on "
            f"line {first.line}; ids are compared exactly, as text): nothing scored"
        )
    if bad_lines:
        return (
            f"no line is a prediction ({len(bad_lines)} unusable; the first: {bad_lines[0]}): "
            "nothing scored"
        )
    return "the file holds no prediction line: nothing scored"
