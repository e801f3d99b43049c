"""Where the project's shipped assets live, from a checkout or from an installed wheel.

In a checkout the assets are top-level folders beside ``hsa/`` (``templates/``); a wheel carries
them inside the package as ``hsa/_assets/<name>`` (see pyproject.toml). The example harness lives in
``hsa/example`` and travels with the package either way.
"""

from __future__ import annotations

from pathlib import Path

from hsa.errors import HsaError

_PACKAGE = Path(__file__).resolve().parent.parent  # the hsa package folder


def asset_dir(name: str) -> Path:
    """The folder of a shipped asset (``templates``), installed copy first, then the checkout."""
    for candidate in (_PACKAGE / "_assets" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise HsaError(
        f"shipped asset folder {name!r} not found in {_PACKAGE / '_assets'} or "
        f"{_PACKAGE.parent}; the installation is incomplete"
    )


def templates_dir() -> Path:
    return asset_dir("templates")
