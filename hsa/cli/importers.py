"""``hsa import``: other formats into hsa episode JSONL, harness tools and harness skeletons.

Thin: the work is in :mod:`hsa.importers`; these commands call it and report what was kept and
what was rejected.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from hsa.cli.console import err, fail_unless_healthy, out
from hsa.dataset.outcome import Tally

import_app = typer.Typer(
    no_args_is_help=True,
    help="Turn other formats into hsa episode JSONL, harness tools and harness skeletons.",
)


def _report_import(result, out_path: Path, rejects_path: Path, *, why_rejected: str = "") -> None:
    out.print(
        f"{result.source}: {result.lines} lines -> {len(result.episodes)} episodes, "
        f"{len(result.rejects)} rejected{why_rejected}"
    )
    for reject in result.rejects[:5]:
        err.print(f"  rejected {reject}", markup=False, highlight=False)
    if len(result.rejects) > 5:
        err.print(
            f"  ... {len(result.rejects) - 5} more in {rejects_path}"
            if result.episodes
            else f"  ... {len(result.rejects) - 5} more (not written: the import kept nothing)"
        )
    if result.notices:
        err.print(f"{len(result.notices)} episode(s) kept with a change:")
        for notice in result.notices:
            err.print(f"  {notice}", markup=False, highlight=False)
    if result.episodes:
        out.print(f"wrote {out_path} and {rejects_path}")
    else:
        out.print(f"wrote nothing: no episode was kept ({out_path} is left as it was)")
    # Only an import that keeps nothing fails: dropping lines of a foreign format is its job.
    fail_unless_healthy(
        Tally(len(result.episodes), [(r.stage, r.reason) for r in result.rejects]),
        1.0,
        what="episodes",
    )


def _line_progress(path: Path, description: str):
    from hsa.cli.progress import count_lines, track

    return partial(track, description=description, total=lambda: count_lines(path), unit="lines")


def _refuse_overlap(reads: dict, out_path: Path, rejects: Path | None) -> None:
    """An import's episodes and rejects files land on none of its inputs, nor on each other."""
    from hsa.files.overlap import refuse_overlap
    from hsa.importers import rejects_path_for

    refuse_overlap(reads, {"--out": out_path, "--rejects": rejects or rejects_path_for(out_path)})


@import_app.command("bfcl")
def import_bfcl_cmd(
    questions: Annotated[
        Path, typer.Argument(help="BFCL questions file, e.g. BFCL_v4_parallel.json.")
    ],
    out_path: Annotated[Path, typer.Option("--out", help="Episodes JSONL to write.")],
    answers: Annotated[
        Path | None,
        typer.Option(
            help="Possible-answer file; default: possible_answer/<same name> beside QUESTIONS. Irrelevance files need none; relevance files are not imported."
        ),
    ] = None,
    rejects: Annotated[
        Path | None,
        typer.Option(help="Rejects JSONL; default: beside --out, .jsonl -> .rejects.jsonl."),
    ] = None,
) -> None:
    """Import Berkeley Function Calling Leaderboard questions (+ possible answers) as episodes.

    BFCL's schema dialect (dict, float, tuple, any, array enums) becomes JSON Schema, `""` in an
    answer becomes an omittable parameter, dotted names stay. Example:

        hsa import bfcl ../shared/data/bfcl/BFCL_v4_multiple.json --out multiple.jsonl
    """
    from hsa.importers.bfcl import RELEVANCE_REASON, default_answers_path, import_bfcl

    _refuse_overlap(
        {"QUESTIONS": questions, "--answers": answers or default_answers_path(questions)},
        out_path,
        rejects,
    )
    result = import_bfcl(questions, answers, progress=_line_progress(questions, "import bfcl"))
    # Said on the summary line: no answers file or fix to the data would import these rows.
    relevance = sum(r.reason == RELEVANCE_REASON for r in result.rejects)
    why = (
        f" ({relevance} in a relevance category: BFCL judges any call correct there, "
        f"which no hsa gold can say)"
        if relevance
        else ""
    )
    _report_import(result, *result.write(out_path, rejects), why_rejected=why)


@import_app.command("openai")
def import_openai_cmd(
    source: Annotated[
        Path,
        typer.Argument(
            help="JSONL with `messages` and `tools` per line (OpenAI / TRL format; TRL's "
            "`prompt`/`completion` rows and the legacy `functions`/`function_call` rows too; "
            "`tools` may be a JSON string, as Hub datasets store it, and other columns go "
            "under each episode's `meta`)."
        ),
    ],
    out_path: Annotated[Path, typer.Option("--out", help="Episodes JSONL to write.")],
    rejects: Annotated[
        Path | None,
        typer.Option(help="Rejects JSONL; default: beside --out, .jsonl -> .rejects.jsonl."),
    ] = None,
) -> None:
    """Import conversations; the gold is the tool calls of the last assistant message that
    makes any (replies after it are not judged), or no call on the last assistant message of a
    conversation without calls.

    hsa import openai chats.jsonl --out episodes.jsonl
    """
    from hsa.importers.openai_chat import import_openai

    _refuse_overlap({"SOURCE": source}, out_path, rejects)
    result = import_openai(source, progress=_line_progress(source, "import openai"))
    _report_import(result, *result.write(out_path, rejects))


@import_app.command("mcp")
def import_mcp_cmd(
    responses: Annotated[
        list[Path],
        typer.Argument(
            help='An MCP tools/list result ({"tools": [...]}) or its JSON-RPC response; several files are the pages of one listing.'
        ),
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", help="The harness's tools folder, e.g. my-harness/tools.")
    ],
    rejects: Annotated[
        Path | None,
        typer.Option(help="Rejects JSONL; default: <out>.rejects.jsonl beside the folder."),
    ] = None,
) -> None:
    """Split an MCP server's tool listing into one tools/<name>.json per tool.

    Each file keeps the MCP tool object as the server sent it (inputSchema, title, annotations);
    a tool that does not load (no name, an inputSchema that is no JSON Schema of an object, a
    name seen before) is rejected with its reason. Nothing is overwritten: a second server
    imported into the same folder adds its tools, and its rejects after the first one's; an
    import that keeps no tool writes nothing.

        hsa import mcp tools-list.json --out my-harness/tools
    """
    from hsa.files.overlap import refuse_overlap
    from hsa.importers import rejects_path_for
    from hsa.importers.mcp import import_mcp, write_tools

    rejects_path = rejects or rejects_path_for(out_dir)
    refuse_overlap(
        {f"RESPONSES[{i}]": r for i, r in enumerate(responses)}, {"--rejects": rejects_path}
    )
    result = import_mcp(responses)
    written = write_tools(result, out_dir, rejects_path)
    out.print(
        f"{', '.join(result.sources)}: {result.listed} tools listed -> {len(written)} "
        f"files, {len(result.rejects)} rejected"
    )
    for reject in result.rejects[:5]:
        err.print(f"  rejected {reject}", markup=False, highlight=False)
    if len(result.rejects) > 5:
        err.print(f"  ... {len(result.rejects) - 5} more", markup=False, highlight=False)
    for notice in result.notices:
        err.print(f"  {notice}", markup=False, highlight=False)
    if not written:
        # the job ran and kept nothing: exit 1, as every import that keeps nothing does, and
        # write nothing (a rejects file beside no tools would read as a run that made some)
        err.print(
            f"FAILED: no tool could be imported; nothing was written ({out_dir} and "
            f"{rejects_path} are left as they were)",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(1)
    if result.rejects:
        out.print(f"wrote {len(written)} files to {out_dir} and {rejects_path}")
    else:
        out.print(f"wrote {len(written)} files to {out_dir}")


@import_app.command("skills")
def import_skills_cmd(
    folders: Annotated[
        list[Path], typer.Argument(help="Skill folders (with a SKILL.md), or folders of them.")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="The harness folder to create.")],
    name: Annotated[
        str | None, typer.Option(help="The harness's name; default: the --out folder's name.")
    ] = None,
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
    out.print(
        f"{result.folders} skill folders -> {len(result.skills)} skills, "
        f"{len(result.rejects)} rejected"
    )
    for reject in result.rejects:
        err.print(f"  rejected {reject}", markup=False, highlight=False)
    for notice in result.notices:
        err.print(f"  {notice}", markup=False, highlight=False)
    licensed = sorted({s.license for s, _ in result.skills if s.license})
    if licensed:
        out.print("licences stated: " + "; ".join(licensed), markup=False, highlight=False)
    out.print(f"wrote {out_dir} (check it: hsa harness validate {out_dir})")
