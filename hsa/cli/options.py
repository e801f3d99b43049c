"""Options several commands share, declared once (typer's ``Annotated`` form)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

TrustHooks = Annotated[
    bool,
    typer.Option(
        "--trust-hooks",
        help="Allow harnesses' hooks.py to be imported (it is code: read it first).",
    ),
]
DefaultHarness = Annotated[
    Path | None, typer.Option(help="Default harness folder for episodes that name none.")
]
HarnessRoots = Annotated[
    list[Path],
    typer.Option(
        "--harness-root",
        help="A folder that harness paths in episodes may lead into, besides the "
        "episodes file's own folder (repeatable). Paths leading anywhere else "
        "are rejected: a harness's text becomes training data.",
    ),
]
MaxRejectShare = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Exit 1 when rejects make up more than this share of the output "
        "(rejects / (rows + rejects)), or when lines rejected on load (not JSON, an episode "
        "that does not load or fails its checks, a repeated id) make up more than this share "
        "of the input lines, blank ones aside; a run with no rows always exits 1.",
    ),
]
