"""One lineage step: a node of the pipeline as it ran for one variant (see hsa.augment.lineage)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Step:
    """One node of the pipeline as it ran for one variant."""

    transform: str
    version: str
    path: str
    fired: bool
    params: dict | None = None

    def to_dict(self) -> dict:
        return {
            "transform": self.transform,
            "version": self.version,
            "path": self.path,
            "fired": self.fired,
            "params": self.params,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Step:
        return cls(
            transform=data["transform"],
            version=data["version"],
            path=data["path"],
            fired=bool(data["fired"]),
            params=data.get("params"),
        )
