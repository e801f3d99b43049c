"""A variant (an episode after a recipe, with its lineage and mapping) and a rejected variant."""

from __future__ import annotations

from dataclasses import dataclass, field

from hsa.augment.mapping import Mapping
from hsa.augment.step import Step
from hsa.model.episode import Episode
from hsa.model.harness import Harness


@dataclass(frozen=True, slots=True)
class HarnessChange:
    """A trail entry's first side for a step that changed the harness alone (its conversation
    kept): the harness before and after it; the entry's last side is the episode whose
    conversation both share (as the replay of a pool's harness stage records such steps, without
    a copy of the episode for each)."""

    before: Harness
    after: Harness


@dataclass(frozen=True)
class Variant:
    """Variant ``index`` of source episode ``source_id``. Index 0 is the original when the recipe
    keeps it."""

    source_id: str
    index: int
    episode: Episode
    lineage: tuple[Step, ...]
    mapping: Mapping
    # (family, episode before, episode after) of each fired transform, in order, or (family,
    # HarnessChange, episode) for one that changed the harness alone: what
    # hsa.dataset.rows.visible_families reads. Not serialised; replay rebuilds it.
    trail: tuple = field(default=(), compare=False, repr=False)
    # "<source harness fingerprint>:<slot>" when the recipe has a harness-variant pool
    # (``harness_variants``): the variants that share it share their harness-scoped draws.
    harness_variant: str | None = None
    # How many leading steps of ``lineage`` are the harness variant's own (its harness stage, see
    # hsa.augment.stage): the same for every variant that takes it. Not serialised.
    stage_steps: int = field(default=0, compare=False, repr=False)

    @property
    def harness_lineage(self) -> tuple[Step, ...]:
        """The lineage steps of this variant's harness variant (its harness stage); empty
        without a pool."""
        return self.lineage[: self.stage_steps]

    def to_dict(self) -> dict:
        out = {
            "source_id": self.source_id,
            "variant": self.index,
            "episode": self.episode.to_dict(),
            "lineage": [s.to_dict() for s in self.lineage],
            "mapping": self.mapping.to_dict(),
        }
        if self.harness_variant is not None:
            out["harness_variant"] = self.harness_variant
        return out


@dataclass(frozen=True)
class VariantReject:
    """A variant that failed: the stage (``transform`` or a verification check) and why."""

    source_id: str
    index: int
    stage: str
    reason: str
    lineage: tuple[Step, ...] = ()

    def to_dict(self) -> dict:
        return {
            "source_id": self.source_id,
            "variant": self.index,
            "stage": self.stage,
            "reason": self.reason,
            "lineage": [s.to_dict() for s in self.lineage],
        }

    def __str__(self) -> str:
        return f"{self.source_id}#{self.index} {self.stage}: {self.reason}"
