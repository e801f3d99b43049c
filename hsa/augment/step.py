"""One lineage step: a node of the pipeline as it ran for one variant (see hsa.augment.lineage)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from hsa.errors import HsaError
from hsa.files.jsonl import json_error, loads


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
    def from_dict(cls, data: Any, *, where: str = "step") -> Step:
        """A step as :meth:`to_dict` writes it; :class:`HsaError` naming the field of anything
        else (a lineage edited by hand or made by another tool is read, never trusted)."""
        if not isinstance(data, dict):
            raise HsaError(f"expected a step object, got {type(data).__name__}", field=where)
        for key in ("transform", "version", "path"):
            if not isinstance(data.get(key), str):
                raise HsaError(
                    f"expected a string, got {data.get(key)!r:.60}", field=f"{where}.{key}"
                )
        if not isinstance(data.get("fired"), bool):
            raise HsaError(
                f"expected true or false, got {data.get('fired')!r:.60}", field=f"{where}.fired"
            )
        params = data.get("params")
        if not (params is None or isinstance(params, dict)) or (data["fired"] and params is None):
            raise HsaError(
                f"expected the params object of a {'fired' if data['fired'] else 'skipped'} "
                f"step, got {params!r:.60}",
                field=f"{where}.params",
            )
        return cls(
            transform=data["transform"],
            version=data["version"],
            path=data["path"],
            fired=data["fired"],
            params=params,
        )


def steps_from(data: Any, *, where: str = "lineage") -> tuple[Step, ...]:
    """The steps of a recorded lineage, from its JSON text or the list that text parses to;
    :class:`HsaError` naming the field of the first thing that is no step."""
    if isinstance(data, str | bytes):
        try:
            data = loads(data)
        except orjson.JSONDecodeError as exc:
            raise HsaError(json_error(exc), field=where) from None
    if not isinstance(data, list | tuple):
        raise HsaError(f"expected a list of steps, got {type(data).__name__}", field=where)
    return tuple(Step.from_dict(step, where=f"{where}[{i}]") for i, step in enumerate(data))
