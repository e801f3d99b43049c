"""Paths a user gives where a Hugging Face Hub id could stand too (a model, a LoRA adapter).

``org/name`` may be either, so only a path that can name nothing but a local file or folder is
checked here: what transformers or vLLM would otherwise report as a malformed Hub id is said as
the missing folder it is.
"""

from __future__ import annotations

from pathlib import Path

LOCAL_ONLY = ("/", "./", "../", "~")  # how a path that is surely no Hub id starts


def missing_local(path: str) -> bool:
    """Whether ``path`` can only name something on this machine and nothing is there."""
    return path.startswith(LOCAL_ONLY) and not Path(path).expanduser().exists()
