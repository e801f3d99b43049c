"""The dataset commands: ``hsa demo``, ``augment``, ``generate``, ``verify``, ``replay``,
``card``, ``push``, ``bench`` and ``transforms``.

Thin: the work is in :mod:`hsa.dataset` and :mod:`hsa.augment`; these functions parse options,
call them and print what happened. :mod:`hsa.cli.main` registers them, in the order of ``hsa --help``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from hsa.cli.console import err, fail_unless_healthy, out, print_reject_summary
from hsa.cli.options import DefaultHarness, HarnessRoots, MaxRejectShare, TrustHooks
from hsa.dataset.outcome import DEFAULT_MAX_REJECT_SHARE
from hsa.errors import HsaError

DEMO_RECIPE = "hat-train"


def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Where the version is written.")] = Path(
        "out"
    ),
    recipe: Annotated[str, typer.Option(help="Recipe to run on the example.")] = DEMO_RECIPE,
) -> None:
    """The main job on the embedded example: generate a verified dataset version with its card.

    The example is a digital-avatar host of a live-stream shop answering viewers' questions
    (Chinese and English) with 12 skills, 10 tools and 4 hooks; its 240 episodes are generated
    from a product catalogue by `python -m hsa.example.make_episodes`. The demo augments them with
    the `hat-train` recipe (all five transform families, training split), verifies every row,
    writes the Hugging Face card, and shows how to load and train on the result.
    """
    from hsa.augment.recipe import load_recipe
    from hsa.cli.progress import count_lines, progress_bar
    from hsa.dataset.audit import audit_version
    from hsa.dataset.generate import generate as run_generate
    from hsa.example import EPISODES_PATH, load_example_episodes, load_example_harness

    harness = load_example_harness()
    episodes = load_example_episodes()
    out.print(
        f"[bold]Example[/bold]: harness {harness.name} ({len(harness.skills)} skills, "
        f"{len(harness.tools)} tools, {len(harness.hooks)} hooks), {len(episodes)} episodes "
        f"in {EPISODES_PATH}"
    )
    parsed = load_recipe(recipe)
    with progress_bar(
        "generate", total=lambda: count_lines(EPISODES_PATH), unit="episodes"
    ) as advance:
        result = run_generate(
            parsed,
            EPISODES_PATH,
            out_dir,
            trust_hooks=True,
            license="apache-2.0",
            on_progress=advance,
        )
    manifest = result.manifest
    counts = manifest["counts"]
    out.print(
        f"[bold]Generated[/bold] {parsed.name} version {manifest['version']}"
        + (" (already there: same inputs, same version)" if result.reused else "")
        + f": {counts['rows']} rows from {counts['sources_out']} episodes, "
        f"{counts['load_rejects'] + counts['variant_rejects']} rejected"
    )
    by_family = manifest["statistics"]["rows_by_family"]
    out.print(
        "  rows changed per family: "
        + ", ".join(f"{k} {v}" for k, v in by_family.items() if k != "core")
    )
    report = audit_version(result.path, trust_hooks=True)
    if not report.ok:
        for problem in report.problems[:10]:
            err.print(f"  {problem}", markup=False, highlight=False)
        raise HsaError(f"the version did not verify: {len(report.problems)} problem(s)")
    out.print(
        f"[bold]Verified[/bold]: shard hashes and counts match; {report.rows_checked} rows "
        f"rebuilt from their lineage and re-verified"
    )
    out.print(f"[bold]Files[/bold] in {result.path}:")
    for path in sorted(p for p in result.path.rglob("*") if p.is_file()):
        out.print(f"  {path.relative_to(result.path)}  ({path.stat().st_size:,} bytes)")
    out.print(
        "[bold]Load it[/bold]:\n"
        f"  from datasets import load_dataset\n"
        f"  ds = load_dataset('parquet', data_files={{'train': '{result.path}/data/train-*.parquet'}})['train']\n"
        f"  ds[0]['messages'], ds[0]['tools']\n"
        "[bold]Train on it[/bold]: trl.SFTTrainer(model=..., train_dataset=ds.select_columns(['messages', 'tools']), "
        "args=SFTConfig(assistant_only_loss=True))  -- see README.md in the version folder\n"
        f"[bold]Check it[/bold]: hsa verify {result.path} --trust-hooks; "
        f"hsa replay {result.path} --id <row id> --trust-hooks",
        highlight=False,
    )
    print(result.path)


def augment(
    recipe: Annotated[
        str,
        typer.Option(
            help="Recipe YAML file, or the name of a shipped recipe (see transforms/recipes)."
        ),
    ],
    episodes: Annotated[Path, typer.Option(help="Episodes JSONL.")],
    out_path: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Variants JSONL to write: one {source_id, variant, episode, lineage, mapping} per line.",
        ),
    ],
    harness: DefaultHarness = None,
    rejects: Annotated[
        Path | None,
        typer.Option(help="Rejects JSONL; default: beside --out, .jsonl -> .rejects.jsonl."),
    ] = None,
    batch_size: Annotated[
        int, typer.Option(min=1, help="Episodes per batch (output never depends on it).")
    ] = 256,
    trust_hooks: TrustHooks = False,
    harness_roots: HarnessRoots = [],
    max_reject_share: MaxRejectShare = DEFAULT_MAX_REJECT_SHARE,
) -> None:
    """Run a recipe over episodes: make, verify and write every variant, with lineage.

    Each variant is reproducible from (recipe seed, episode id, variant index) alone, so the
    output does not depend on input order or batch size. Variants that fail verification go to
    the rejects file with the failed check and their lineage. Exits 1, with the rejects counted
    by reason, when no variant is written (an earlier --out is then left as it was) or rejects
    exceed --max-reject-share.

        hsa augment --recipe tools-basic --episodes parallel.jsonl --out variants.jsonl
    """
    from hsa.augment.recipe import load_recipe
    from hsa.cli.progress import count_lines, track
    from hsa.dataset.pipeline import check_source, write_variants
    from hsa.files.jsonl import atomic_path
    from hsa.files.overlap import refuse_overlap
    from hsa.importers import rejects_path_for
    from hsa.model.episode import distinct_episodes
    from hsa.model.harness import load_harness

    parsed = load_recipe(recipe)  # every recipe error surfaces before any work
    rejects_path = rejects or rejects_path_for(out_path)
    refuse_overlap({"--episodes": episodes}, {"--out": out_path, "--rejects": rejects_path})
    default = load_harness(harness, trust_hooks=trust_hooks) if harness else None
    items = track(
        # sources are checked as they are read, so that a refused one is named by its line
        distinct_episodes(
            episodes,
            harness=default,
            trust_hooks=trust_hooks,
            harness_roots=tuple(harness_roots),
            check=check_source,
        ),
        "augment",
        total=lambda: count_lines(episodes),
        unit="episodes",
    )
    # The variants are staged beside --out, which they replace only when the block ends: a run
    # that keeps nothing exits inside it, so an earlier run's variants stay as they were.
    with atomic_path(out_path) as staged:
        tally = write_variants(
            parsed, items, staged, rejects_path, batch_size=batch_size, sources_checked=True
        )
        rejected = tally.by_stage()
        out.print(
            f"recipe {parsed.name} (seed {parsed.seed}): {tally.kept} variants written, "
            f"{len(tally.rejects)} rejected"
            + (f" ({', '.join(f'{k} {v}' for k, v in rejected.items())})" if rejected else "")
        )
        if not tally.kept:
            out.print(
                f"wrote {rejects_path} only: no variant was kept ({out_path} is left as it was)"
            )
            fail_unless_healthy(tally, max_reject_share, what="variants", see=rejects_path)
    out.print(f"wrote {out_path} and {rejects_path}")
    fail_unless_healthy(tally, max_reject_share, what="variants", see=rejects_path)


def generate(
    recipe: Annotated[
        str,
        typer.Option(
            help="Recipe YAML file, or a shipped recipe's name (hat-train, hat-heldout, tools-basic, ...)."
        ),
    ],
    episodes: Annotated[Path, typer.Option(help="Episodes JSONL.")],
    out_dir: Annotated[
        Path,
        typer.Option("--out", help="Output root; the version lands in OUT/RECIPE-NAME/VERSION/."),
    ],
    harness: DefaultHarness = None,
    engine: Annotated[
        str,
        typer.Option(
            help="local (processes on this machine) or ray (Ray Data; pip install 'hsa[ray]')."
        ),
    ] = "local",
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="Processes that run batches (local: this one and N-1 more) or CPUs (ray).",
        ),
    ] = 1,
    batch_size: Annotated[
        int,
        typer.Option(
            min=1, help="Episodes per batch; memory is bounded by it. Output never depends on it."
        ),
    ] = 256,
    split: Annotated[
        str, typer.Option(help="Split name of the shards (data/SPLIT-*.parquet).")
    ] = "train",
    license: Annotated[
        str, typer.Option(help="License id for the data card (that of your source episodes).")
    ] = "other",
    trust_hooks: TrustHooks = False,
    harness_roots: HarnessRoots = [],
    max_reject_share: MaxRejectShare = DEFAULT_MAX_REJECT_SHARE,
) -> None:
    """Make a versioned, verified, TRL-ready dataset: shards, rejects, manifest and card.

    The version is a hash of the canonical recipe, the input fingerprint, the hsa version and the
    transform versions: same inputs, same version, byte-identical shards, whatever the worker
    count or engine. The version folder appears only when complete; an existing one is reused
    only when its files match its manifest (a damaged one is rebuilt). The last line printed is
    its path. Exits 1, with the rejects counted by reason, when the version has no rows or its
    rejects exceed --max-reject-share.

        hsa generate --recipe hat-train --episodes episodes.jsonl --out out --workers 2
    """
    from hsa.augment.recipe import load_recipe
    from hsa.cli.progress import count_lines, progress_bar
    from hsa.dataset.generate import generate as run_generate

    parsed = load_recipe(recipe)
    lines = (lambda: count_lines(episodes)) if episodes.is_file() else None
    with progress_bar("generate", total=lines, unit="episodes") as advance:
        result = run_generate(
            parsed,
            episodes,
            out_dir,
            harness=harness,
            engine=engine,
            workers=workers,
            batch_size=batch_size,
            split=split,
            trust_hooks=trust_hooks,
            license=license,
            on_progress=advance,
            harness_roots=tuple(harness_roots),
        )
    counts = result.manifest["counts"]
    if result.repaired:
        err.print(
            f"version {result.manifest['version']} existed but was damaged ("
            + "; ".join(result.repaired[:3])
            + (f"; {len(result.repaired) - 3} more" if len(result.repaired) > 3 else "")
            + "): rebuilt",
            markup=False,
            highlight=False,
        )
    if result.reused:
        out.print(
            f"version {result.manifest['version']} already exists (same inputs, files "
            f"checked against its manifest); nothing to do"
        )
    out.print(
        f"{counts['input_lines']} input lines -> {counts['rows']} rows from "
        f"{counts['sources_out']} sources; rejected: {counts['load_rejects']} on load, "
        f"{counts['variant_rejects']} variants"
        + (
            f" ({', '.join(f'{k} {v}' for k, v in result.manifest['statistics']['rejects_by_stage'].items())})"
            if result.manifest["statistics"]["rejects_by_stage"]
            else ""
        )
    )
    failure = result.failure(max_reject_share)
    if result.rejected:
        from hsa.dataset.card import top_rejects

        # A run that succeeds with rejects says why too: the reasons are otherwise only in
        # rejects.parquet, which few open.
        print_reject_summary(top_rejects(result.path, limit=10 if failure else 5), result.rejected)
    if failure:
        err.print(
            f"FAILED: {failure}; see {result.path / 'rejects.parquet'}",
            markup=False,
            highlight=False,
        )
    print(result.path)
    if failure:
        raise typer.Exit(1)


def verify(
    version_dir: Annotated[Path, typer.Argument(help="A version folder made by `hsa generate`.")],
    episodes: Annotated[
        Path | None,
        typer.Option(
            help="Source episodes; default: where the run that made the version on this machine found them."
        ),
    ] = None,
    trust_hooks: TrustHooks = False,
    harness: Annotated[
        Path | None,
        typer.Option(
            help="The default harness folder the version was made with (--harness of generate); default: where that run found it."
        ),
    ] = None,
    harness_roots: HarnessRoots = [],
) -> None:
    """Recompute shard hashes, check the counts, rebuild and re-verify every row.

    The version's files must be exactly the ones its manifest lists. Exits non-zero and lists
    what is wrong on any mismatch, and exits 1 for a version with no rows (generate keeps one
    only to show its rejects).
    """
    from hsa.cli.progress import progress_bar
    from hsa.dataset.audit import audit_version
    from hsa.dataset.writer import read_manifest
    from hsa.rollout.audit import audit_rollout, is_rollout

    manifest = read_manifest(version_dir)
    rows = manifest["counts"].get("rows")
    audit = audit_rollout if is_rollout(version_dir) else audit_version
    with progress_bar("verify", total=rows, unit="rows", show_rows=False) as advance:
        report = audit(
            version_dir,
            episodes=episodes,
            trust_hooks=trust_hooks,
            harness=harness,
            harness_roots=tuple(harness_roots),
            on_progress=lambda n: advance(n, n),
        )
    if not report.ok:
        for problem in report.problems:
            err.print(f"  {problem}", markup=False, highlight=False)
        err.print(f"FAILED: {version_dir}: {len(report.problems)} problem(s)")
        raise typer.Exit(1)
    if not rows:
        # Intact, but no dataset: generate keeps such a version only to show its rejects.
        rejects = manifest.get("rejects", {}).get("rows", 0)
        err.print(
            f"FAILED: {version_dir}: its files match its manifest, but the version has no rows "
            f"({rejects} rejects: see rejects.parquet)",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(1)
    out.print(
        f"ok: {version_dir}: hashes and counts match; {report.rows_checked} rows rebuilt "
        f"from lineage and verified"
    )


def replay(
    target: Annotated[
        Path,
        typer.Argument(help="A version folder (hsa generate) or a variants JSONL (hsa augment)."),
    ],
    row: Annotated[
        str, typer.Option("--id", help="The row to rebuild: SOURCE_ID#INDEX, e.g. parallel_3#2.")
    ],
    episodes: Annotated[
        Path | None,
        typer.Option(
            help="Source episodes (needed for a variants JSONL; for a version, default: where the run that made it found them)."
        ),
    ] = None,
    harness: Annotated[
        Path | None,
        typer.Option(help="Default harness folder (for a version, default: the one its run used)."),
    ] = None,
    trust_hooks: TrustHooks = False,
    harness_roots: HarnessRoots = [],
) -> None:
    """Rebuild one row from its source episode and lineage (no sampling) and compare.

    Exits 0 and prints the lineage when the rebuild equals the stored row, 1 otherwise. A row of
    a rollout version (hsa rollout: a teacher wrote its conversation) is checked as hsa verify
    checks it instead: its harness rebuilt from the lineage, its messages the trajectory under
    that harness, every judged step passing its gold.

        hsa replay out/hat-train/3f2a9c1b7d4e --id lc-single-call-002#1
    """
    from hsa.augment.step import steps_from
    from hsa.dataset.audit import replay_row, replay_variant
    from hsa.files.jsonl import dumps

    check = None
    if target.is_dir():
        from hsa.dataset.writer import read_manifest
        from hsa.rollout.audit import RowCheck, is_rollout

        if is_rollout(target):  # the teacher wrote the conversation: checked, not rebuilt
            check = RowCheck(target, read_manifest(target))
        stored, differing = replay_row(
            target,
            row,
            episodes=episodes,
            trust_hooks=trust_hooks,
            harness=harness,
            harness_roots=tuple(harness_roots),
            check=check,
        )
        lineage = steps_from(stored["hsa_lineage"])
    else:
        if episodes is None:
            raise HsaError("replaying from a variants JSONL needs --episodes")
        stored, differing = replay_variant(
            target,
            row,
            episodes=episodes,
            trust_hooks=trust_hooks,
            harness=harness,
            harness_roots=tuple(harness_roots),
        )
        lineage = steps_from(stored["lineage"])
    for step in lineage:
        mark = "fired" if step.fired else "skipped"
        out.print(
            f"  {step.path:>6}  {step.transform}@{step.version}  {mark}  "
            f"{dumps(step.params)[:100] if step.params is not None else ''}",
            markup=False,
            highlight=False,
        )
    if check is not None:
        if differing:
            problems = "; ".join(p.removeprefix(f"{row}: ") for p in differing)
            err.print(f"{row}: the rollout row does not check out: {problems}")
            raise typer.Exit(1)
        out.print(
            f"{row}: harness rebuilt from its source + {len(lineage)} lineage steps, and its "
            f"conversation is the teacher's trajectory under it, with every judged step passing "
            f"its gold"
        )
        return
    if differing:
        err.print(f"{row}: the rebuilt row DIFFERS from the stored one in {', '.join(differing)}")
        raise typer.Exit(1)
    out.print(
        f"{row}: rebuilt from its source + {len(lineage)} lineage steps: identical to the "
        f"stored row"
    )


def card(
    version_dir: Annotated[Path, typer.Argument(help="A version folder.")],
    license: Annotated[
        str, typer.Option(help="License id for the card's front matter (that of your source data).")
    ] = "other",
) -> None:
    """(Re)write a version's README.md: a Hugging Face dataset card with statistics.

    Refused for a damaged version (its files or manifest not as written): the card would state
    its statistics as facts."""
    from hsa.dataset.audit import refuse_damaged
    from hsa.dataset.card import write_card
    from hsa.dataset.writer import read_manifest

    refuse_damaged(version_dir, read_manifest(version_dir), "write its card", with_card=False)
    path = write_card(version_dir, license=license)
    out.print(f"wrote {path}")


def push(
    version_dir: Annotated[Path, typer.Argument(help="A version folder.")],
    repo_id: Annotated[str, typer.Option(help="Dataset repository, ORG/NAME.")],
    private: Annotated[
        bool, typer.Option("--private", help="Create the repository private.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the operations; send nothing.")
    ] = False,
    allow_restricted: Annotated[
        bool,
        typer.Option(
            "--allow-restricted-licences",
            "--allow-restricted-licenses",
            help="Push even though a skill in the rows states a licence that is not an open one "
            "(you must have the right to publish it).",
        ),
    ] = False,
) -> None:
    """Publish a version to the Hugging Face Hub in one commit: every file it lists (shards,
    card, manifest, rejects, and a pooled recipe's harness_variants.parquet).

    The token comes from HF_TOKEN or `hf auth login` and is never written anywhere. A version
    whose rows carry a skill under a licence that is not open (its card lists every skill's
    licence) is refused unless --allow-restricted-licences is given.
    """
    from hsa.dataset.hub import push_version

    lines = push_version(
        version_dir,
        repo_id,
        private=private,
        dry_run=dry_run,
        allow_restricted_licenses=allow_restricted,
    )
    for line in lines:
        out.print(line, markup=False, highlight=False)
    if not dry_run:
        out.print(f"pushed: https://huggingface.co/datasets/{repo_id}")


def bench(
    rows: Annotated[
        int, typer.Option(min=100, help="Synthetic episodes to generate and process.")
    ] = 100_000,
    workers: Annotated[int, typer.Option(min=1, help="Workers for the second generate run.")] = 2,
    recipe: Annotated[str, typer.Option(help="Recipe for the generate runs.")] = "hat-train",
    scenario: Annotated[
        list[str],
        typer.Option(
            help="per-episode-tools (each episode its own 8 tools) or shared-harness (every "
            "episode under one harness folder of 12 skills, 12 tools, 3 hooks); repeatable; "
            "default both, side by side."
        ),
    ] = [],
    only: Annotated[
        list[str],
        typer.Option(
            help="Run only these measurements (floor, naive, generate, untransformed); repeatable."
        ),
    ] = [],
    folder: Annotated[
        Path | None,
        typer.Option(
            help="Keep inputs and outputs here instead of a temporary folder (its "
            "per-episode-tools/ and shared-harness/ folders are made afresh on each run)."
        ),
    ] = None,
    repeats: Annotated[
        int,
        typer.Option(
            min=1,
            help="Runs of each measurement but the floors (naive, generate, untransformed), "
            "the fastest kept: on a shared or noisy machine one run can be a third slower than "
            "the next.",
        ),
    ] = 1,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON list, one per scenario.")
    ] = False,
) -> None:
    """Measure generate against a floor (the least work that writes the same rows) and, for
    per-episode tools, a naive datasets.map baseline; rows/s, ratios and peak memory per scenario.

    "untransformed" is generate with the recipe's seed, variants, pool and kept original around an
    identity-only pipeline: what loading, verifying, rendering and writing cost with no
    transform, so the ratios tell the rows' own cost from the transforms'.

    Each measurement runs in a fresh process; a floor runs three times and is its fastest run
    (the others are in --json's "runs"), and so does every other measurement with --repeats.
    Takes minutes at the default 100k rows (each repeat adds its time).
    """
    from hsa.dataset.bench import SCENARIOS, run_bench
    from hsa.files.jsonl import dumps

    unknown = sorted(set(scenario) - set(SCENARIOS))
    if unknown:
        raise typer.BadParameter(
            f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}",
            param_hint="--scenario",
        )
    chosen = tuple(s for s in SCENARIOS if s in scenario) or SCENARIOS
    reports = run_bench(
        rows, workers, recipe, scenarios=chosen, folder=folder, only=tuple(only), repeats=repeats
    )
    if as_json:
        print(dumps([r.to_dict() for r in reports]))
        return
    for report in reports:
        table = Table(
            title=f"hsa bench: {rows:,} synthetic episodes, {report.scenario}, recipe {recipe}"
        )
        for column in ("measurement", "rows out", "seconds", "rows/s", "peak RSS (MB)"):
            table.add_column(column, justify="left" if column == "measurement" else "right")
        for name, r in report.results.items():
            table.add_row(
                name,
                f"{r['rows']:,}",
                f"{r['seconds']:.1f}",
                f"{r['rows_per_s']:,.0f}",
                f"{r['peak_rss_mb']:,.0f}",
            )
        out.print(table)
        for name, value in report.ratios().items():
            out.print(f"{name}: {value:.2f}x")


def transforms(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list of objects.")] = False,
) -> None:
    """List the registered transforms (built-in families and `hsa.transforms` plugins): version,
    family, scope (harness: its draw depends on the harness alone; episode: it reads the
    conversation), options and promise."""
    from hsa.augment.registry import registered
    from hsa.files.jsonl import dumps

    rows = [
        {
            "name": name,
            "version": cls.version,
            "family": cls.family,
            "scope": cls.scope,
            "promise": cls.promise(),
            "options": cls.options(),
        }
        for name, cls in registered().items()
    ]
    if as_json:
        print(dumps(rows))
        return
    if not rows:
        out.print("no transforms registered yet")
        return
    if not out.is_terminal:
        # Piped or logged: a table cut to 80 columns wraps every cell to a word a line and cuts
        # names; one block per transform keeps each greppable.
        for row in rows:
            options = ", ".join(f"{k}={v!r}" for k, v in row["options"].items())
            print(f"{row['name']} {row['version']} ({row['family']}, scope {row['scope']})")
            print(f"  options: {options or 'none'}")
            print(f"  {row['promise']}")
        return
    table = Table()
    table.add_column("name", no_wrap=True)
    for column in ("version", "family", "scope", "options", "promise"):
        table.add_column(column)
    for row in rows:
        options = ", ".join(f"{k}={v!r}" for k, v in row["options"].items())
        table.add_row(
            row["name"], row["version"], row["family"], row["scope"], options, row["promise"]
        )
    out.print(table)
