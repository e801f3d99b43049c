"""The ``hsa`` command line. User errors exit with status 2 and one clear message, no traceback."""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Annotated

import click
import typer
from rich.console import Console
from rich.table import Table

from hsa import __version__
from hsa.cli.eval import eval_app
from hsa.cli.runtime import runtime_app
from hsa.errors import HsaError
from hsa.dataset.outcome import DEFAULT_MAX_REJECT_SHARE, failure

# Options several commands share, declared once.
TrustHooks = Annotated[bool, typer.Option(
    "--trust-hooks", help="Allow harnesses' hooks.py to be imported (it is code: read it first).")]
DefaultHarness = Annotated[Path | None, typer.Option(
    help="Default harness folder for episodes that name none.")]
HarnessRoots = Annotated[list[Path], typer.Option(
    "--harness-root", help="A folder that harness paths in episodes may lead into, besides the "
                           "episodes file's own folder (repeatable). Paths leading anywhere else "
                           "are rejected: a harness's text becomes training data.")]
MaxRejectShare = Annotated[float, typer.Option(
    min=0.0, max=1.0, help="Exit 1 when rejects make up more than this share of the output "
                           "(rejects / (rows + rejects)); a run with no rows always exits 1.")]

app = typer.Typer(
    name="hsa", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    help="Harness-State Augmentation: task-preserving harness variants for tool-calling agents.\n\n"
         "Load episodes and the harness they run in (skills, tools, prompt layout, hooks), check "
         "them, score model answers with BFCL's AST rules, and list the registered transforms.\n\n"
         "Start with `hsa demo`; see `hsa COMMAND --help` for each command.")
import_app = typer.Typer(no_args_is_help=True, help="Turn other formats into hsa episode JSONL, "
                                                   "harness tools and harness skeletons.")
harness_app = typer.Typer(no_args_is_help=True, help="Inspect and check harness folders.")
app.add_typer(import_app, name="import")
app.add_typer(harness_app, name="harness")
app.add_typer(eval_app, name="eval")  # hsa eval, hsa eval compare (hsa.cli.eval)
app.add_typer(runtime_app)  # rollout, serve, chat (hsa.cli.runtime)

# soft_wrap: long messages (paths, reject reasons) stay on one line, so they can be grepped.
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _version(value: bool) -> None:
    if value:
        out.print(f"hsa {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False):
    pass


# ---- demo ----------------------------------------------------------------------------------

DEMO_RECIPE = "hat-train"


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Where the version is written.")] = Path("out"),
    recipe: Annotated[str, typer.Option(help="Recipe to run on the example.")] = DEMO_RECIPE,
) -> None:
    """The main job on the embedded example: generate a verified dataset version with its card.

    The example is a digital-avatar host of a live-stream shop answering viewers' questions
    (Chinese and English) with 12 skills, 10 tools and 4 hooks; its 240 episodes are generated
    from a product catalogue by `python -m hsa.example.make_episodes`. The demo augments them with
    the `hat-train` recipe (all five transform families, training split), verifies every row,
    writes the Hugging Face card, and shows how to load and train on the result.
    """
    from hsa.dataset.audit import audit_version
    from hsa.example import EPISODES_PATH, load_example_episodes, load_example_harness
    from hsa.dataset.generate import generate as run_generate
    from hsa.cli.progress import count_lines, progress_bar
    from hsa.augment.recipe import load_recipe

    harness = load_example_harness()
    episodes = load_example_episodes()
    out.print(f"[bold]Example[/bold]: harness {harness.name} ({len(harness.skills)} skills, "
              f"{len(harness.tools)} tools, {len(harness.hooks)} hooks), {len(episodes)} episodes "
              f"in {EPISODES_PATH}")
    parsed = load_recipe(recipe)
    with progress_bar("generate", total=lambda: count_lines(EPISODES_PATH),
                      unit="episodes") as advance:
        result = run_generate(parsed, EPISODES_PATH, out_dir, trust_hooks=True,
                              license="apache-2.0", on_progress=advance)
    manifest = result.manifest
    counts = manifest["counts"]
    out.print(f"[bold]Generated[/bold] {parsed.name} version {manifest['version']}"
              + (" (already there: same inputs, same version)" if result.reused else "")
              + f": {counts['rows']} rows from {counts['sources_out']} episodes, "
              f"{counts['load_rejects'] + counts['variant_rejects']} rejected")
    by_family = manifest["statistics"]["rows_by_family"]
    out.print("  rows changed per family: "
              + ", ".join(f"{k} {v}" for k, v in by_family.items() if k != "core"))
    report = audit_version(result.path, trust_hooks=True)
    if not report.ok:
        for problem in report.problems[:10]:
            err.print(f"  {problem}", markup=False, highlight=False)
        raise HsaError(f"the version did not verify: {len(report.problems)} problem(s)")
    out.print(f"[bold]Verified[/bold]: shard hashes and counts match; {report.rows_checked} rows "
              f"rebuilt from their lineage and re-verified")
    out.print(f"[bold]Files[/bold] in {result.path}:")
    for path in sorted(p for p in result.path.rglob("*") if p.is_file()):
        out.print(f"  {path.relative_to(result.path)}  ({path.stat().st_size:,} bytes)")
    out.print("[bold]Load it[/bold]:\n"
              f"  from datasets import load_dataset\n"
              f"  ds = load_dataset('parquet', data_files={{'train': '{result.path}/data/train-*.parquet'}})['train']\n"
              f"  ds[0]['messages'], ds[0]['tools']\n"
              "[bold]Train on it[/bold]: trl.SFTTrainer(model=..., train_dataset=ds.select_columns(['messages', 'tools']), "
              "args=SFTConfig(assistant_only_loss=True))  -- see README.md in the version folder\n"
              f"[bold]Check it[/bold]: hsa verify {result.path} --trust-hooks; "
              f"hsa replay {result.path} --id <row id> --trust-hooks", highlight=False)
    print(result.path)


# ---- harness -------------------------------------------------------------------------------

@harness_app.command("validate")
def harness_validate(
    folder: Annotated[Path, typer.Argument(help="Harness folder (harness.yaml, skills/, tools/, hooks.py).")],
    trust_hooks: Annotated[bool, typer.Option("--trust-hooks", help="Import hooks.py (it is code: read it first) and check every hook's function is callable.")] = False,
) -> None:
    """Check a harness folder: schemas are valid JSON Schema, names unique, references resolve."""
    from hsa.model.harness import load_harness
    from hsa.render import render_system_prompt

    harness = load_harness(folder, trust_hooks=trust_hooks)
    render_system_prompt(harness)  # the layout exists and renders
    out.print(f"ok: {folder}: harness {harness.name!r} v{harness.version}: "
              f"{len(harness.skills)} skills, {len(harness.tools)} tools, {len(harness.hooks)} hooks")
    if harness.hooks:
        if trust_hooks:
            harness.hook_functions()
            out.print("hooks.py imported; every hook resolves to a function")
        else:
            out.print("hooks.py parsed, not imported (pass --trust-hooks to import it)")


# ---- import --------------------------------------------------------------------------------

def _report_import(result, out_path: Path, rejects_path: Path) -> None:
    out.print(f"{result.source}: {result.lines} lines -> {len(result.episodes)} episodes, "
              f"{len(result.rejects)} rejected")
    for reject in result.rejects[:5]:
        err.print(f"  rejected {reject}", markup=False, highlight=False)
    if len(result.rejects) > 5:
        err.print(f"  ... {len(result.rejects) - 5} more in {rejects_path}")
    if result.notices:
        err.print(f"{len(result.notices)} episode(s) kept with a change:")
        for notice in result.notices:
            err.print(f"  {notice}", markup=False, highlight=False)
    out.print(f"wrote {out_path} and {rejects_path}")
    # Only an import that keeps nothing fails: dropping lines of a foreign format is its job.
    _fail_unless_healthy(len(result.episodes), [(r.stage, r.reason) for r in result.rejects],
                         1.0, what="episodes")


def _line_progress(path: Path, description: str):
    from hsa.cli.progress import count_lines, track
    return partial(track, description=description, total=lambda: count_lines(path),
                   unit="lines")


@import_app.command("bfcl")
def import_bfcl_cmd(
    questions: Annotated[Path, typer.Argument(help="BFCL questions file, e.g. BFCL_v4_parallel.json.")],
    out_path: Annotated[Path, typer.Option("--out", help="Episodes JSONL to write.")],
    answers: Annotated[Path | None, typer.Option(help="Possible-answer file; default: possible_answer/<same name> beside QUESTIONS. Irrelevance files need none.")] = None,
    rejects: Annotated[Path | None, typer.Option(help="Rejects JSONL; default: <out>.rejects.jsonl.")] = None,
) -> None:
    """Import Berkeley Function Calling Leaderboard questions (+ possible answers) as episodes.

    BFCL's schema dialect (dict, float, tuple, any, array enums) becomes JSON Schema, `""` in an
    answer becomes an omittable parameter, dotted names stay. Example:

        hsa import bfcl ../shared/data/bfcl/BFCL_v4_multiple.json --out multiple.jsonl
    """
    from hsa.importers.bfcl import import_bfcl

    result = import_bfcl(questions, answers, progress=_line_progress(questions, "import bfcl"))
    _report_import(result, *result.write(out_path, rejects))


@import_app.command("openai")
def import_openai_cmd(
    source: Annotated[Path, typer.Argument(help="JSONL with `messages` and `tools` per line (OpenAI / TRL format).")],
    out_path: Annotated[Path, typer.Option("--out", help="Episodes JSONL to write.")],
    rejects: Annotated[Path | None, typer.Option(help="Rejects JSONL; default: <out>.rejects.jsonl.")] = None,
) -> None:
    """Import conversations; the gold is the last assistant message's tool calls (or no call).

        hsa import openai chats.jsonl --out episodes.jsonl
    """
    from hsa.importers.openai_chat import import_openai

    result = import_openai(source, progress=_line_progress(source, "import openai"))
    _report_import(result, *result.write(out_path, rejects))


@import_app.command("mcp")
def import_mcp_cmd(
    responses: Annotated[list[Path], typer.Argument(help="An MCP tools/list result ({\"tools\": [...]}) or its JSON-RPC response; several files are the pages of one listing.")],
    out_dir: Annotated[Path, typer.Option("--out", help="The harness's tools folder, e.g. my-harness/tools.")],
    rejects: Annotated[Path | None, typer.Option(help="Rejects JSONL; default: <out>.rejects.jsonl beside the folder.")] = None,
) -> None:
    """Split an MCP server's tool listing into one tools/<name>.json per tool.

    Each file keeps the MCP tool object as the server sent it (inputSchema, title, annotations);
    a tool that does not load (no name, an inputSchema that is no JSON Schema of an object, a
    name seen before) is rejected with its reason. Nothing is overwritten.

        hsa import mcp tools-list.json --out my-harness/tools
    """
    from hsa.importers import rejects_path_for
    from hsa.importers.mcp import import_mcp, write_tools

    result = import_mcp(responses)
    rejects_path = rejects or rejects_path_for(out_dir)
    written = write_tools(result, out_dir, rejects_path)
    out.print(f"{', '.join(result.sources)}: {result.listed} tools listed -> {len(written)} "
              f"files, {len(result.rejects)} rejected")
    for reject in result.rejects[:5]:
        err.print(f"  rejected {reject}", markup=False, highlight=False)
    out.print(f"wrote {len(written)} files to {out_dir} and {rejects_path}")
    if not written:
        raise HsaError("no tool could be imported")


@import_app.command("skills")
def import_skills_cmd(
    folders: Annotated[list[Path], typer.Argument(help="Skill folders (with a SKILL.md), or folders of them.")],
    out_dir: Annotated[Path, typer.Option("--out", help="The harness folder to create.")],
    name: Annotated[str | None, typer.Option(help="The harness's name; default: the --out folder's name.")] = None,
) -> None:
    """Make a harness skeleton from Agent Skills folders (Claude Code skills included).

    Each SKILL.md folder is copied whole into OUT/skills/<name>/; harness.yaml lists the skills,
    their kinds, and as runtime_tools the allowed-tools no tools/*.json defines yet (Read, Grep,
    Bash...). A skill that does not load is rejected, naming its SKILL.md. Add tools with
    `hsa import mcp ... --out OUT/tools`.

        hsa import skills ~/.claude/skills/pdf ./team-skills --out my-harness
    """
    from hsa.importers.skills import import_skills

    result = import_skills(folders, out_dir, name=name)
    out.print(f"{result.folders} skill folders -> {len(result.skills)} skills, "
              f"{len(result.rejects)} rejected")
    for reject in result.rejects:
        err.print(f"  rejected {reject}", markup=False, highlight=False)
    for notice in result.notices:
        err.print(f"  {notice}", markup=False, highlight=False)
    licensed = sorted({s.license for s, _ in result.skills if s.license})
    if licensed:
        out.print("licences stated: " + "; ".join(licensed), markup=False, highlight=False)
    out.print(f"wrote {out_dir} (check it: hsa harness validate {out_dir})")


# ---- score ---------------------------------------------------------------------------------

@app.command()
def score(
    episodes: Annotated[Path, typer.Option(help="Episodes JSONL with gold.")],
    predictions: Annotated[Path, typer.Option(help='Predictions JSONL: {"id": ..., "message": <assistant message>, "at"?: <gold turn index>} per line.')],
    harness: DefaultHarness = None,
    trust_hooks: TrustHooks = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object: accuracy, correct, total, categories, items.")] = False,
    harness_roots: HarnessRoots = [],
) -> None:
    """Score model messages against gold with BFCL's AST rules; ids without a prediction are wrong.

        hsa score --episodes parallel.jsonl --predictions preds.jsonl --json
    """
    from hsa.model.episode import Episode, read_episodes
    from hsa.model.harness import load_harness
    from hsa.files.jsonl import dumps, read_lines
    from hsa.model.scorer import score_predictions

    default = load_harness(harness, trust_hooks=trust_hooks) if harness else None
    loaded, bad_episodes = [], []
    for item in read_episodes(episodes, harness=default, trust_hooks=trust_hooks,
                              harness_roots=tuple(harness_roots)):
        (loaded if isinstance(item, Episode) else bad_episodes).append(item)
    if bad_episodes:
        raise HsaError(f"{len(bad_episodes)} episode line(s) do not load; first: {bad_episodes[0]}")
    by_id, bad_lines = {}, []
    for line in read_lines(predictions):
        value = line.value
        if line.error or not isinstance(value, dict) or "id" not in value or "message" not in value:
            bad_lines.append(f"{predictions}:{line.number}: "
                             f"{line.error or 'expected {id, message}'}")
            continue
        by_id.setdefault(str(value["id"]), value)
    report = score_predictions(loaded, by_id)
    report.bad_lines = bad_lines
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
        out.print(f"{len(report.missing)} id(s) without a prediction (counted wrong): "
                  + ", ".join(report.missing[:20]) + (" ..." if len(report.missing) > 20 else ""))
    for note in bad_lines[:5]:
        err.print(f"unreadable prediction line {note}", markup=False, highlight=False)
    if report.unknown_ids:
        err.print(f"{len(report.unknown_ids)} prediction id(s) match no episode: "
                  + ", ".join(report.unknown_ids[:10]), markup=False, highlight=False)


# ---- augment -------------------------------------------------------------------------------

@app.command()
def augment(
    recipe: Annotated[str, typer.Option(help="Recipe YAML file, or the name of a shipped recipe (see transforms/recipes).")],
    episodes: Annotated[Path, typer.Option(help="Episodes JSONL.")],
    out_path: Annotated[Path, typer.Option("--out", help="Variants JSONL to write: one {source_id, variant, episode, lineage, mapping} per line.")],
    harness: DefaultHarness = None,
    rejects: Annotated[Path | None, typer.Option(help="Rejects JSONL; default: <out>.rejects.jsonl.")] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Episodes per batch (output never depends on it).")] = 256,
    trust_hooks: TrustHooks = False,
    harness_roots: HarnessRoots = [],
    max_reject_share: MaxRejectShare = DEFAULT_MAX_REJECT_SHARE,
) -> None:
    """Run a recipe over episodes: make, verify and write every variant, with lineage.

    Each variant is reproducible from (recipe seed, episode id, variant index) alone, so the
    output does not depend on input order or batch size. Variants that fail verification go to
    the rejects file with the failed check and their lineage. Exits 1, with the rejects counted
    by reason, when no variant is written or rejects exceed --max-reject-share.

        hsa augment --recipe tools-basic --episodes parallel.jsonl --out variants.jsonl
    """
    from hsa.model.episode import read_episodes
    from hsa.model.harness import load_harness
    from hsa.importers import rejects_path_for
    from hsa.files.jsonl import write_jsonl
    from hsa.dataset.pipeline import augment as run_augment
    from hsa.cli.progress import count_lines, track
    from hsa.augment.recipe import load_recipe
    from hsa.augment.variant import Variant, VariantReject

    parsed = load_recipe(recipe)  # every recipe error surfaces before any work
    default = load_harness(harness, trust_hooks=trust_hooks) if harness else None
    rejects_path = rejects or rejects_path_for(out_path)
    counts: Counter = Counter()
    reject_rows: list[dict] = []

    def variants():
        items = track(read_episodes(episodes, harness=default, trust_hooks=trust_hooks,
                                    harness_roots=tuple(harness_roots)),
                      "augment", total=lambda: count_lines(episodes), unit="episodes")
        for item in run_augment(parsed, items, batch_size=batch_size):
            if isinstance(item, Variant):
                counts["variants"] += 1
                yield item.to_dict()
            elif isinstance(item, VariantReject):
                counts[item.stage] += 1
                reject_rows.append({"kind": "variant", **item.to_dict()})
            else:
                counts[item.stage] += 1
                reject_rows.append({"kind": "episode", **item.to_dict(), "stage": item.stage})

    write_jsonl(out_path, variants())
    write_jsonl(rejects_path, reject_rows)
    rejected = {k: v for k, v in counts.items() if k != "variants"}
    out.print(f"recipe {parsed.name} (seed {parsed.seed}): {counts['variants']} variants written, "
              f"{sum(rejected.values())} rejected"
              + (f" ({', '.join(f'{k} {v}' for k, v in sorted(rejected.items()))})" if rejected else ""))
    out.print(f"wrote {out_path} and {rejects_path}")
    _fail_unless_healthy(counts["variants"], [(r["stage"], r["reason"]) for r in reject_rows],
                         max_reject_share, what="variants")


def _fail_unless_healthy(kept: int, rejects: list[tuple[str, str]], max_share: float, *,
                         what: str) -> None:
    """Exit 1, after the rejects counted by stage and reason, when the run is no success (see
    hsa.dataset.outcome)."""
    why = failure(kept, len(rejects), what=what, max_reject_share=max_share)
    if why is None:
        return
    _print_reject_summary(Counter((stage, reason[:120]) for stage, reason in rejects).most_common(10),
                          len(rejects))
    err.print(f"FAILED: {why}", markup=False, highlight=False)
    raise typer.Exit(1)


def _print_reject_summary(top: list, total: int) -> None:
    """The most frequent reject reasons, ``[((stage, reason), count), ...]``."""
    if not total:
        return
    err.print(f"rejects by reason ({total} in all):", markup=False, highlight=False)
    for (stage, reason), count in top:
        err.print(f"  {count:>7,}  {stage}: {reason}", markup=False, highlight=False)


# ---- datasets ------------------------------------------------------------------------------

@app.command()
def generate(
    recipe: Annotated[str, typer.Option(help="Recipe YAML file, or a shipped recipe's name (hat-train, hat-heldout, tools-basic, ...).")],
    episodes: Annotated[Path, typer.Option(help="Episodes JSONL.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Output root; the version lands in OUT/RECIPE-NAME/VERSION/.")],
    harness: DefaultHarness = None,
    engine: Annotated[str, typer.Option(help="local (processes on this machine) or ray (Ray Data; pip install 'hsa[ray]').")] = "local",
    workers: Annotated[int, typer.Option(min=1, help="Worker processes (local) or CPUs (ray).")] = 1,
    batch_size: Annotated[int, typer.Option(min=1, help="Episodes per batch; memory is bounded by it. Output never depends on it.")] = 256,
    split: Annotated[str, typer.Option(help="Split name of the shards (data/SPLIT-*.parquet).")] = "train",
    license: Annotated[str, typer.Option(help="License id for the data card (that of your source episodes).")] = "other",
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
    from hsa.dataset.generate import generate as run_generate
    from hsa.cli.progress import count_lines, progress_bar
    from hsa.augment.recipe import load_recipe

    parsed = load_recipe(recipe)
    lines = (lambda: count_lines(episodes)) if episodes.is_file() else None
    with progress_bar("generate", total=lines, unit="episodes") as advance:
        result = run_generate(parsed, episodes, out_dir, harness=harness, engine=engine,
                              workers=workers, batch_size=batch_size, split=split,
                              trust_hooks=trust_hooks, license=license, on_progress=advance,
                              harness_roots=tuple(harness_roots))
    counts = result.manifest["counts"]
    if result.repaired:
        err.print(f"version {result.manifest['version']} existed but was damaged ("
                  + "; ".join(result.repaired[:3])
                  + (f"; {len(result.repaired) - 3} more" if len(result.repaired) > 3 else "")
                  + "): rebuilt", markup=False, highlight=False)
    if result.reused:
        out.print(f"version {result.manifest['version']} already exists (same inputs, files "
                  f"checked against its manifest); nothing to do")
    out.print(f"{counts['input_lines']} input lines -> {counts['rows']} rows from "
              f"{counts['sources_out']} sources; rejected: {counts['load_rejects']} on load, "
              f"{counts['variant_rejects']} variants"
              + (f" ({', '.join(f'{k} {v}' for k, v in result.manifest['statistics']['rejects_by_stage'].items())})"
                 if result.manifest['statistics']['rejects_by_stage'] else ""))
    failure = result.failure(max_reject_share)
    if failure:
        from hsa.dataset.card import top_rejects
        _print_reject_summary([((stage, reason), count) for stage, reason, count
                               in top_rejects(result.path, limit=10)], result.rejected)
        err.print(f"FAILED: {failure}; see {result.path / 'rejects.parquet'}", markup=False,
                  highlight=False)
    print(result.path)
    if failure:
        raise typer.Exit(1)


@app.command()
def verify(
    version_dir: Annotated[Path, typer.Argument(help="A version folder made by `hsa generate`.")],
    episodes: Annotated[Path | None, typer.Option(help="Source episodes; default: where the run that made the version on this machine found them.")] = None,
    trust_hooks: TrustHooks = False,
    harness: Annotated[Path | None, typer.Option(help="The default harness folder the version was made with (--harness of generate); default: where that run found it.")] = None,
    harness_roots: HarnessRoots = [],
) -> None:
    """Recompute shard hashes, check the counts, rebuild and re-verify every row.

    The version's files must be exactly the ones its manifest lists. Exits non-zero and lists
    what is wrong on any mismatch.
    """
    from hsa.dataset.audit import audit_version
    from hsa.cli.progress import progress_bar
    from hsa.rollout.audit import audit_rollout, is_rollout
    from hsa.dataset.writer import read_manifest

    rows = read_manifest(version_dir)["counts"].get("rows")
    audit = audit_rollout if is_rollout(version_dir) else audit_version
    with progress_bar("verify", total=rows, unit="rows", show_rows=False) as advance:
        report = audit(version_dir, episodes=episodes, trust_hooks=trust_hooks,
                       harness=harness, harness_roots=tuple(harness_roots),
                       on_progress=lambda n: advance(n, n))
    if not report.ok:
        for problem in report.problems:
            err.print(f"  {problem}", markup=False, highlight=False)
        err.print(f"FAILED: {version_dir}: {len(report.problems)} problem(s)")
        raise typer.Exit(1)
    out.print(f"ok: {version_dir}: hashes and counts match; {report.rows_checked} rows rebuilt "
              f"from lineage and verified")


@app.command()
def replay(
    target: Annotated[Path, typer.Argument(help="A version folder (hsa generate) or a variants JSONL (hsa augment).")],
    row: Annotated[str, typer.Option("--id", help="The row to rebuild: SOURCE_ID#INDEX, e.g. parallel_3#2.")],
    episodes: Annotated[Path | None, typer.Option(help="Source episodes (needed for a variants JSONL; for a version, default: where the run that made it found them).")] = None,
    harness: Annotated[Path | None, typer.Option(help="Default harness folder (for a version, default: the one its run used).")] = None,
    trust_hooks: TrustHooks = False,
    harness_roots: HarnessRoots = [],
) -> None:
    """Rebuild one row from its source episode and lineage (no sampling) and compare.

    Exits 0 and prints the lineage when the rebuild equals the stored row, 1 otherwise.

        hsa replay out/hat-train/3f2a9c1b7d4e --id lc-single-call-002#1
    """
    import orjson

    from hsa.files.jsonl import dumps
    from hsa.augment.lineage import Step

    if target.is_dir():
        from hsa.dataset.audit import replay_row
        stored, differing = replay_row(target, row, episodes=episodes, trust_hooks=trust_hooks,
                                       harness=harness, harness_roots=tuple(harness_roots))
        lineage = [Step.from_dict(s) for s in orjson.loads(stored["hsa_lineage"])]
    else:
        if episodes is None:
            raise HsaError("replaying from a variants JSONL needs --episodes")
        lineage, differing = _replay_variant_line(target, row, episodes, harness, trust_hooks,
                                                  tuple(harness_roots))
    for step in lineage:
        mark = "fired" if step.fired else "skipped"
        out.print(f"  {step.path:>6}  {step.transform}@{step.version}  {mark}  "
                  f"{dumps(step.params)[:100] if step.params is not None else ''}",
                  markup=False, highlight=False)
    if differing:
        err.print(f"{row}: the rebuilt row DIFFERS from the stored one in {', '.join(differing)}")
        raise typer.Exit(1)
    out.print(f"{row}: rebuilt from its source + {len(lineage)} lineage steps: identical to the "
              f"stored row")


def _replay_variant_line(variants: Path, row: str, episodes: Path, harness: Path | None,
                         trust_hooks: bool, harness_roots: tuple[Path, ...]):
    from hsa.model.episode import find_episode
    from hsa.model.harness import load_harness
    from hsa.files.jsonl import dumps, read_lines
    from hsa.augment.lineage import Step, replay as replay_lineage

    source_id, _, index = row.rpartition("#")
    if not source_id or not index.isdigit():
        raise HsaError(f"--id must look like SOURCE_ID#INDEX, got {row!r}")
    stored = next((line.value for line in read_lines(variants) if isinstance(line.value, dict)
                   and line.value.get("source_id") == source_id
                   and line.value.get("variant") == int(index)), None)
    if stored is None:
        raise HsaError(f"no variant {row} in {variants}")
    default = load_harness(harness, trust_hooks=trust_hooks) if harness else None
    original = find_episode(episodes, source_id, harness=default, trust_hooks=trust_hooks,
                            harness_roots=harness_roots)
    if original is None:
        raise HsaError(f"source episode {source_id!r} not found (or not valid) in {episodes}")
    lineage = [Step.from_dict(s) for s in stored["lineage"]]
    rebuilt, mapping = replay_lineage(original, lineage)
    differing = [name for name, a, b in (("episode", rebuilt.to_dict(), stored["episode"]),
                                         ("mapping", mapping.to_dict(), stored["mapping"]))
                 if dumps(a) != dumps(b)]
    return lineage, differing


@app.command()
def card(
    version_dir: Annotated[Path, typer.Argument(help="A version folder.")],
    license: Annotated[str, typer.Option(help="License id for the card's front matter (that of your source data).")] = "other",
) -> None:
    """(Re)write a version's README.md: a Hugging Face dataset card with statistics."""
    from hsa.dataset.card import write_card

    path = write_card(version_dir, license=license)
    out.print(f"wrote {path}")


@app.command()
def push(
    version_dir: Annotated[Path, typer.Argument(help="A version folder.")],
    repo_id: Annotated[str, typer.Option(help="Dataset repository, ORG/NAME.")],
    private: Annotated[bool, typer.Option("--private", help="Create the repository private.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the operations; send nothing.")] = False,
    allow_restricted: Annotated[bool, typer.Option(
        "--allow-restricted-licences", "--allow-restricted-licenses",
        help="Push even though a skill in the rows states a licence that is not an open one "
             "(you must have the right to publish it).")] = False,
) -> None:
    """Publish a version to the Hugging Face Hub in one commit (shards, card, manifest, rejects).

    The token comes from HF_TOKEN or `hf auth login` and is never written anywhere. A version
    whose rows carry a skill under a licence that is not open (its card lists every skill's
    licence) is refused unless --allow-restricted-licences is given.
    """
    from hsa.dataset.hub import push_version

    lines = push_version(version_dir, repo_id, private=private, dry_run=dry_run,
                         allow_restricted_licenses=allow_restricted)
    for line in lines:
        out.print(line, markup=False, highlight=False)
    if not dry_run:
        out.print(f"pushed: https://huggingface.co/datasets/{repo_id}")


@app.command()
def bench(
    rows: Annotated[int, typer.Option(min=100, help="Synthetic episodes to generate and process.")] = 100_000,
    workers: Annotated[int, typer.Option(min=1, help="Workers for the second generate run.")] = 2,
    recipe: Annotated[str, typer.Option(help="Recipe for the generate runs.")] = "hat-train",
    only: Annotated[list[str], typer.Option(help="Run only these measurements (floor, naive, generate); repeatable.")] = [],
    folder: Annotated[Path | None, typer.Option(help="Keep inputs and outputs here instead of a temporary folder.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Measure generate against a floor (Parquet + JSON round trip) and a naive datasets.map
    baseline on synthetic ~4 KB agent episodes; rows/s, ratios and peak memory.

    Each measurement runs in a fresh process. Takes minutes at the default 100k rows.
    """
    from hsa.dataset.bench import run_bench
    from hsa.files.jsonl import dumps

    report = run_bench(rows, workers, recipe, folder=folder, only=tuple(only))
    if as_json:
        print(dumps(report.to_dict()))
        return
    table = Table(title=f"hsa bench: {rows:,} synthetic episodes, recipe {recipe}")
    for column in ("measurement", "rows out", "seconds", "rows/s", "peak RSS (MB)"):
        table.add_column(column, justify="left" if column == "measurement" else "right")
    for name, r in report.results.items():
        table.add_row(name, f"{r['rows']:,}", f"{r['seconds']:.1f}", f"{r['rows_per_s']:,.0f}",
                      f"{r['peak_rss_mb']:,.0f}")
    out.print(table)
    if all(k in report.results for k in ("floor", "naive", "generate_1")):
        for name, value in report.ratios().items():
            out.print(f"{name}: {value:.2f}x")


# ---- transforms ----------------------------------------------------------------------------

@app.command()
def transforms(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list of objects.")] = False,
) -> None:
    """List the registered transforms (built-in families and `hsa.transforms` plugins)."""
    from hsa.files.jsonl import dumps
    from hsa.augment.registry import registered

    rows = [{"name": name, "version": cls.version, "family": cls.family,
             "promise": cls.promise(), "options": cls.options()}
            for name, cls in registered().items()]
    if as_json:
        print(dumps(rows))
        return
    if not rows:
        out.print("no transforms registered yet")
        return
    table = Table()
    for column in ("name", "version", "family", "options", "promise"):
        table.add_column(column)
    for row in rows:
        options = ", ".join(f"{k}={v!r}" for k, v in row["options"].items())
        table.add_row(row["name"], row["version"], row["family"], options, row["promise"])
    out.print(table)


# ---- command plugins -----------------------------------------------------------------------

COMMANDS_GROUP = "hsa.commands"


def _add_plugin_commands() -> None:
    """Add the command groups other packages register under the ``hsa.commands`` entry-point
    group (each a typer app, added under the entry point's name): `hsa train` comes from the
    trainers this way, so hsa never imports a layer above it. A group that fails to load stays
    listed and says why when it is run, instead of breaking every other command."""
    from importlib.metadata import entry_points

    for entry in entry_points(group=COMMANDS_GROUP):
        try:
            group = entry.load()
        except Exception as exc:  # a broken plugin must not take `hsa --help` down with it
            reason = f"command group {entry.name!r} ({entry.value}) failed to load: " \
                     f"{type(exc).__name__}: {exc}"
            group = typer.Typer(help=f"(unavailable: {reason})")

            @group.callback(invoke_without_command=True)
            def _unavailable(reason: str = typer.Option(reason, hidden=True)) -> None:
                raise HsaError(reason)
        app.add_typer(group, name=entry.name)


_add_plugin_commands()


_PLACEHOLDER = re.compile(r"(?<!\\)<(?=[A-Za-z])")


def _keep_placeholders(text: str | None) -> str | None:
    """Help is rendered as Markdown, where a placeholder such as ``<row id>`` reads as an HTML tag
    and vanishes: escape its ``<`` everywhere except in code (backtick spans, indented or fenced
    blocks), where Markdown keeps it as written."""
    if not text:
        return text
    lines, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or line.startswith(("    ", "\t")):
            lines.append(line)
            continue
        parts = line.split("`")
        lines.append("`".join(_PLACEHOLDER.sub(r"\\<", part) if i % 2 == 0 else part
                              for i, part in enumerate(parts)))
    return "\n".join(lines)


def _command() -> click.Command:
    """The click command tree of the app, every help text with its placeholders kept."""
    root = typer.main.get_command(app)
    stack = [root]
    while stack:
        command = stack.pop()
        command.help = _keep_placeholders(command.help)
        for param in command.params:
            if isinstance(getattr(param, "help", None), str):
                param.help = _keep_placeholders(param.help)
        stack.extend(getattr(command, "commands", {}).values())
    return root


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; an HsaError becomes one line on stderr and exit status 2, and
    nothing else reaches the user as a traceback either."""
    # Click handles its own usage errors (exit 2 with a hint) and exits through SystemExit;
    # only our own user errors reach the except clause.
    try:
        _command()(args=argv, prog_name="hsa")
    except HsaError as exc:
        err.print(f"error: {exc}", markup=False, highlight=False)
        return 2
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        err.print("interrupted", markup=False, highlight=False)
        return 130
    except OSError as exc:  # the machine, not the input: a full disk, a missing permission
        where = f"{exc.filename}: " if exc.filename else ""
        err.print(f"error: {where}{exc.strerror or exc}", markup=False, highlight=False)
        return 2
    except Exception as exc:
        if os.environ.get("HSA_DEBUG"):
            raise
        err.print(f"error: unexpected {type(exc).__name__}: {exc}\n(a bug in hsa: rerun with "
                  f"HSA_DEBUG=1 for the traceback and report it)", markup=False, highlight=False)
        return 1
    return 0

