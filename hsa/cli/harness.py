"""``hsa harness``: inspect and check harness folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hsa.cli.console import out

harness_app = typer.Typer(no_args_is_help=True, help="Inspect and check harness folders.")


@harness_app.command("validate")
def harness_validate(
    folder: Annotated[
        Path, typer.Argument(help="Harness folder (harness.yaml, skills/, tools/, hooks.py).")
    ],
    trust_hooks: Annotated[
        bool,
        typer.Option(
            "--trust-hooks",
            help="Import hooks.py (it is code: read it first) and check every hook's function is callable.",
        ),
    ] = False,
) -> None:
    """Check a harness folder: schemas are valid JSON Schema, names unique, references resolve."""
    from hsa.model.harness import load_harness
    from hsa.render import render_system_prompt

    harness = load_harness(folder, trust_hooks=trust_hooks)
    render_system_prompt(harness)  # the layout exists and renders
    out.print(
        f"ok: {folder}: harness {harness.name!r} v{harness.version}: "
        f"{len(harness.skills)} skills, {len(harness.tools)} tools, {len(harness.hooks)} hooks"
    )
    if harness.hooks:
        if trust_hooks:
            harness.hook_functions()
            out.print("hooks.py imported; every hook resolves to a function")
        else:
            out.print("hooks.py parsed, not imported (pass --trust-hooks to import it)")
