"""The identity transform: the reference point of every contract test."""

from __future__ import annotations

from dataclasses import dataclass

from hsa.augment.registry import register
from hsa.augment.transform import Transform
from hsa.model.episode import Episode


@register
@dataclass(frozen=True)
class Identity(Transform):
    """Changes nothing; keeps everything (a baseline for recipes and tests)."""

    name = "identity"
    scope = "harness"
    conversation = "kept"
    version = "1"
    family = "core"

    def apply(self, episode: Episode, params: dict) -> Episode:
        return episode
