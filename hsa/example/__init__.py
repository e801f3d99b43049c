"""The embedded example: a live-commerce AI host harness and its episodes, shipped with hsa.

Promises: ``HARNESS_DIR`` and ``EPISODES_PATH`` point at files inside this package (so they are
found from a checkout and from an installed wheel alike); the harness loads and validates, with its
hooks trusted because they ship with hsa; every episode parses against it with no rejects, or
:func:`load_example_episodes` raises. ``python -m hsa.example.make_episodes`` regenerates the
episodes from ``catalogue.yaml`` byte for byte.
"""

from __future__ import annotations

from pathlib import Path

from hsa.errors import EpisodeError, Reject
from hsa.model.episode import Episode, read_episodes
from hsa.model.harness import Harness, load_harness

__all__ = [
    "CATALOGUE_PATH",
    "CHATS_PATH",
    "EPISODES_PATH",
    "HARNESS_DIR",
    "PREDICTIONS_PATH",
    "load_example_episodes",
    "load_example_harness",
]

_HERE = Path(__file__).resolve().parent
HARNESS_DIR = _HERE / "harness"
EPISODES_PATH = _HERE / "episodes.jsonl"
CATALOGUE_PATH = _HERE / "catalogue.yaml"
# The README tour's inputs (python -m hsa.example.make_tour_inputs writes them).
CHATS_PATH = _HERE / "chats.jsonl"
PREDICTIONS_PATH = _HERE / "predictions.jsonl"


def load_example_harness() -> Harness:
    """The example harness, loaded from :data:`HARNESS_DIR` with its (shipped) hooks trusted."""
    return load_harness(HARNESS_DIR, trust_hooks=True)


def load_example_episodes() -> list[Episode]:
    """Every example episode, parsed and validated; raises on the first row that does not parse."""
    episodes = []
    for item in read_episodes(EPISODES_PATH, trust_hooks=True):
        if isinstance(item, Reject):
            raise EpisodeError(
                item.reason, file=item.source, line=item.line, row=item.id, field=item.field
            )
        episodes.append(item)
    return episodes
