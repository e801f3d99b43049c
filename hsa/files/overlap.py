"""A command's outputs never land on its inputs or on each other.

Writes are atomic (a temporary file renamed into place), so an output path that names an input
replaces the input once the output is complete: ``--rejects episodes.jsonl`` would leave the
episodes file holding the rejects, and ``--out`` equal to ``--rejects`` would leave one of the
two. Commands check their paths with :func:`refuse_overlap` before reading anything.
"""

from __future__ import annotations

import os
from pathlib import Path

from hsa.errors import HsaError


def _same(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:  # hard links, case-insensitive file systems
        return os.path.samefile(a, b)
    except OSError:  # one does not exist yet: then only the names could say they are one
        return False


def refuse_overlap(reads: dict[str, Path | None], writes: dict[str, Path | None]) -> None:
    """Raise :class:`HsaError` when an output (``writes``: option -> path) is an input
    (``reads``) or another output; ``None`` paths are skipped."""
    outputs = [(name, Path(path)) for name, path in writes.items() if path is not None]
    inputs = [(name, Path(path)) for name, path in reads.items() if path is not None]
    for i, (name, path) in enumerate(outputs):
        for other, other_path in inputs + outputs[:i]:
            if _same(path, other_path):
                raise HsaError(
                    f"{name} and {other} are the same file ({path}): writing {name} would "
                    f"replace {other}; give {name} another path"
                )


def refuse_inside(output: tuple[str, Path], folders: dict[str, Path | str | None]) -> None:
    """Raise :class:`HsaError` when the output folder (option, path) is one of ``folders``
    (option -> an input folder) or lies inside one: a model written into a dataset version
    becomes files its manifest does not list, and the version no longer verifies."""
    name, path = output[0], Path(output[1]).resolve()
    for other, folder in folders.items():
        if folder is None or not Path(folder).is_dir():
            continue  # a Hub id or nothing: no folder of ours to spoil
        root = Path(folder).resolve()
        if path == root or root in path.parents:
            raise HsaError(
                f"{name} lies inside {other} ({folder}): what it writes would become part of "
                f"that folder; give {name} a path outside it"
            )
