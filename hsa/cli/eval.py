"""``hsa eval`` and ``hsa eval compare``: thin commands over :mod:`hsa.eval`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from hsa.cli.console import err, out
from hsa.errors import HsaError

# Both commands' bootstrap (hsa.eval.stats.paired_bootstrap): an interval needs one resample at
# least, and numpy's generator takes no negative seed.
Resamples = Annotated[int, typer.Option(min=1, help="Bootstrap resamples.")]
BootstrapSeed = Annotated[int, typer.Option(min=0, help="Bootstrap seed.")]

# No help= here: the callback's docstring (with its example) is the group's help.
eval_app = typer.Typer(invoke_without_command=True, rich_markup_mode="markdown")


def _families(value: str) -> list[str] | None:
    if value == "all":
        return None
    if value == "none":
        return []
    return [f.strip() for f in value.split(",") if f.strip()]


def _print_table(header: list[str], rows: list[list[str]], title: str | None = None) -> None:
    """A rich table on a terminal; Markdown elsewhere (logs, pipes), where a table cut to 80
    columns would wrap every cell."""
    if not out.is_terminal:
        from hsa.eval.report import markdown_table

        if title:
            print(title)
        print(markdown_table(header, rows))
        return
    table = Table(title=title)
    for i, column in enumerate(header):
        table.add_column(column, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    out.print(table)


@eval_app.callback(invoke_without_command=True)
def evaluate(
    ctx: typer.Context,
    episodes: Annotated[
        Path | None,
        typer.Option(
            help="Episodes JSONL: variants are generated from it with --recipe (with --dataset: "
            "the version's source episodes, when its manifest's note does not find them)."
        ),
    ] = None,
    dataset: Annotated[
        list[Path] | None,
        typer.Option(
            help="A dataset version folder to evaluate as it is (repeatable; instead of --episodes)."
        ),
    ] = None,
    recipe: Annotated[
        str, typer.Option(help="Recipe for the variants (name or YAML file).")
    ] = "hat-heldout",
    variants: Annotated[
        int | None, typer.Option(help="Variants per episode and set (default: the recipe's).")
    ] = None,
    families: Annotated[
        str,
        typer.Option(
            help="Family-alone sets besides all families: `all` (every family of the recipe), "
            "`none`, or a comma list."
        ),
    ] = "all",
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="Model name to send (transformers serve wants the exact string it was started "
            "with)."
        ),
    ] = None,
    model_path: Annotated[
        Path | None,
        typer.Option(
            help="Local model folder: run in-process with transformers (greedy, batched)."
        ),
    ] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Report folder.")] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Evaluate this many episodes, picked by a hash of (seed, id): a fixed spread over "
            "the file.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Episode pick and per-request sampling seeds.")] = 0,
    temperature: Annotated[
        float, typer.Option(min=0.0, help="Sampling temperature (endpoint).")
    ] = 0.0,
    top_p: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help="Nucleus sampling (endpoint).")
    ] = None,
    max_tokens: Annotated[int, typer.Option(min=1, help="Most tokens per answer.")] = 256,
    concurrency: Annotated[int, typer.Option(min=1, help="Requests in flight (endpoint).")] = 4,
    stream: Annotated[
        bool, typer.Option(help="Stream answers to measure time to first token (endpoint).")
    ] = False,
    api_key_env: Annotated[
        str, typer.Option(help="Environment variable holding the API key (never written).")
    ] = "OPENAI_API_KEY",
    timeout: Annotated[
        float, typer.Option(min=0.001, help="Seconds to wait for one answer.")
    ] = 120.0,
    max_retries: Annotated[
        int,
        typer.Option(min=0, help="Retries of a request that failed with 429/5xx or a timeout."),
    ] = 4,
    batch_size: Annotated[int, typer.Option(min=1, help="Prompts per batch (in-process).")] = 8,
    datasets_dir: Annotated[
        Path | None,
        typer.Option(
            help="Where generated variant versions go (default: OUT/datasets); share one folder "
            "between reports to generate once."
        ),
    ] = None,
    harness: Annotated[
        Path | None, typer.Option(help="Default harness folder for episodes that name none.")
    ] = None,
    workers: Annotated[int, typer.Option(help="Processes for generating variants.")] = 1,
    resamples: Resamples = 2000,
    bootstrap_seed: BootstrapSeed = 20261201,
    trust_hooks: Annotated[
        bool,
        typer.Option(
            "--trust-hooks",
            help="Import harnesses' hooks.py (code: read it first): needed by "
            "hook transforms and to measure hook compliance.",
        ),
    ] = False,
) -> None:
    """Judge every turn of the original episodes and of K held-out variants per episode:
    all transform families together and each family alone.

    Example, against a server:

        hsa eval --episodes hsa/example/episodes.jsonl --recipe hat-heldout --variants 2 \\
            --base-url http://127.0.0.1:8000/v1 --model MODEL --out reports/base --trust-hooks

    or in-process with `--model-path DIR` (no server). Writes OUT/report.json, report.md and
    PNG plots. A killed run resumes where it stopped (same command); the same inputs and seed
    give the same report. `transformers serve` answers one request at a time and ignores
    `n` and `tool_choice`; vLLM serves many.
    """
    if ctx.invoked_subcommand is not None:
        return
    from hsa.augment.recipe import load_recipe
    from hsa.cli.progress import progress_bar
    from hsa.eval.items import plan_from_datasets, plan_from_episodes
    from hsa.eval.journal import PREDICTIONS_FILE
    from hsa.eval.report import MARKDOWN_FILE, REPORT_FILE, main_table, rejects_note
    from hsa.eval.run import Settings, run_eval

    if episodes is None and not dataset:
        raise HsaError(
            "give --episodes (variants made with --recipe) or --dataset VERSION_DIR "
            "(see hsa eval --help)"
        )
    if (base_url is None) == (model_path is None):
        raise HsaError("give --base-url URL with --model M, or --model-path DIR")
    if out_dir is None:
        raise HsaError("give --out REPORT_DIR")
    if base_url is not None:
        if not model:
            raise HsaError("--base-url needs --model (the name the endpoint serves)")
        from hsa.eval.backends import EndpointBackend
        from hsa.runtime.endpoint import Endpoint, Sampling

        backend = EndpointBackend(
            Endpoint(
                base_url,
                model,
                Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens),
                api_key_env=api_key_env,
                timeout_s=timeout,
                max_retries=max_retries,
                stream=stream,
            ),
            concurrency=concurrency,
            seed=seed,
        )
    else:
        if temperature != 0.0 or top_p is not None:
            raise HsaError("the in-process backend decodes greedily; sample through an endpoint")
        from hsa.eval.backends import InProcessBackend

        backend = InProcessBackend(model_path, max_tokens=max_tokens, batch_size=batch_size)

    if not dataset:

        def generated(name, result):
            m = result.manifest
            out.print(
                f"variants [bold]{name}[/bold]: {m['name']} {m['version']} "
                f"({m['counts']['rows']} rows" + (", already there" if result.reused else "") + ")",
                highlight=False,
            )

        plan = plan_from_episodes(
            episodes,
            load_recipe(recipe),
            datasets_dir or out_dir / "datasets",
            variants=variants,
            families=_families(families),
            limit=limit,
            seed=seed,
            harness=harness,
            trust_hooks=trust_hooks,
            workers=workers,
            on_version=generated,
        )
    else:
        plan = plan_from_datasets(
            dataset,
            episodes=episodes,
            harness=harness,
            limit=limit,
            seed=seed,
            trust_hooks=trust_hooks,
        )
    items = plan.itemset.items
    if note := rejects_note(plan.inputs):
        err.print(note, markup=False, highlight=False)
    if not items:
        raise HsaError(
            "nothing to judge: the episodes have no gold turn"
            + (" (the file holds no episode)" if not plan.itemset.episodes else ""),
            file=str(episodes if episodes is not None else dataset[0]),
        )
    out.print(
        f"{len(plan.itemset.episodes)} episodes, {len(items)} judged turns in "
        f"{1 + len(plan.sets)} sets",
        highlight=False,
    )
    settings = Settings(
        trust_hooks=trust_hooks,
        resamples=resamples,
        bootstrap_seed=bootstrap_seed,
        inputs=plan.inputs,
    )
    # The total is known once the journal is read: prompts not answered yet.
    with progress_bar("eval", total=None, unit="answers", show_rows=False) as advance:
        report = run_eval(
            plan.itemset,
            plan.sets,
            backend,
            out_dir,
            settings,
            on_answer=lambda done, total: advance(done, None, total),
        )
    header, rows = main_table(report)
    _print_table(header, rows, title="Harness robustness")
    latency = report["latency"]["e2e_s"]
    if latency["n"]:
        out.print(
            f"latency (end to end): P50 {1000 * latency['p50']:.0f} ms, P95 "
            f"{1000 * latency['p95']:.0f} ms, P99 {1000 * latency['p99']:.0f} ms over "
            f"{latency['n']} requests",
            highlight=False,
        )
    out.print(
        f"wrote {out_dir / REPORT_FILE}, {out_dir / MARKDOWN_FILE} and plots", highlight=False
    )
    print(out_dir)
    failed, asked = len(report["no_answer"]), report["requests"]
    if failed:
        # Counted wrong in the report; on the terminal too, so that a run against a failing
        # server never reads as a model scoring 0%.
        err.print(
            f"{failed} of {asked} requests got no answer (their errors are in "
            f"{out_dir / PREDICTIONS_FILE}); the report counts them wrong. Rerun the same "
            f"command to ask them again.",
            highlight=False,
        )
    if failed == asked:
        raise typer.Exit(1)


@eval_app.command("compare")
def compare(
    reports: Annotated[
        list[Path],
        typer.Argument(help="Report folders (or report.json files); the first is the baseline."),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    markdown: Annotated[
        Path | None,
        typer.Option(
            help="Also write the tables as Markdown to this file (with a pool, the "
            "per-harness-variant ones too)."
        ),
    ] = None,
    resamples: Resamples = 2000,
    bootstrap_seed: BootstrapSeed = 20261201,
) -> None:
    """Two or more reports side by side on the same items, with paired tests (paired bootstrap
    over episodes, McNemar's exact test on turns). Refuses reports made on different items.
    With a recipe's pool of harness variants (harness_variants: N), also per harness variant:
    each report's median and worst drop, under how many variants each model's accuracy is higher
    or lower than the baseline's, and the baseline's worst variants side by side.

        hsa eval compare reports/base reports/hsa-sft
    """
    from hsa.eval.compare import (
        compare_reports,
        comparison_markdown,
        comparison_table,
        harness_variant_tables,
        report_labels,
    )
    from hsa.eval.report import read_report
    from hsa.files.jsonl import atomic_path, dumps

    loaded = [read_report(p) for p in reports]
    comparison = compare_reports(
        loaded, report_labels([str(p) for p in reports]), resamples=resamples, seed=bootstrap_seed
    )
    if markdown is not None:
        with atomic_path(markdown) as tmp:
            tmp.write_text(comparison_markdown(comparison), encoding="utf-8")
    if as_json:
        print(dumps(comparison))
        return
    header, rows = comparison_table(comparison)
    _print_table(
        header, rows, title=f"{comparison['items']} paired turns; first report is the baseline"
    )
    out.print(
        "b/c: turns only the baseline / only the other report got right. CI: percentile "
        "bootstrap over episodes.",
        highlight=False,
    )
    for title, header, rows in harness_variant_tables(comparison):
        _print_table(header, rows, title=title)
