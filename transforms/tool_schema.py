"""Tool schemas: change how the tools are presented without changing what they do.

Changes: the order of the tools; the tools' names (function masking: opaque ids such as
``fn_7f3a``), with every mention moving along (tool calls, tool results that echo them, other
tools' descriptions, skill content, hook configuration, gold).
Keeps: each tool's behaviour and schema (types, required parameters, enums), every call's
arguments, and what the gold expects, up to the recorded renaming.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from hsa.episode import Episode
from hsa.errors import HsaError
from hsa.mapping import Mapping
from hsa.registry import register
from hsa.rename import rename_episode
from hsa.transform import Transform


@register
@dataclass(frozen=True)
class ToolOrderPermutation(Transform):
    """Shuffles the order of the tools list; every tool and call is kept as it is."""

    name = "tool_order_permutation"
    version = "1"
    family = "tool_schema"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        order = list(range(len(episode.harness.tools)))
        rng.shuffle(order)
        return {"order": order}

    def apply(self, episode: Episode, params: dict) -> Episode:
        tools = episode.harness.tools
        order = params["order"]
        if sorted(order) != list(range(len(tools))):
            raise HsaError(f"order {order} is not a permutation of the {len(tools)} tools")
        return episode.with_harness(replace(episode.harness, tools=tuple(tools[i] for i in order)))


@register
@dataclass(frozen=True)
class ToolNameMask(Transform):
    """Replaces tool names with opaque ids (fn_7f3a) everywhere they appear; the model must read
    descriptions instead of recognising names."""

    name = "tool_name_mask"
    version = "1"
    family = "tool_schema"

    fraction: float = 1.0  # share of the tools whose names are masked
    prefix: str = "fn_"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.fraction <= 1.0:
            raise HsaError(f"transform 'tool_name_mask': fraction must be in [0, 1], got "
                           f"{self.fraction!r}")

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        harness = episode.harness
        taken = set(harness.tool_names) | set(harness.skill_ids) | {harness.skill_loader}
        renames = {}
        for tool in harness.tools:
            if rng.random() >= self.fraction:
                continue
            while (new := f"{self.prefix}{rng.getrandbits(16):04x}") in taken:
                pass
            taken.add(new)
            renames[tool.name] = new
        return {"renames": renames}

    def mapping(self, episode: Episode, params: dict) -> Mapping:
        renames = params["renames"]
        unknown = set(renames) - set(episode.harness.tool_names)
        if unknown:
            raise HsaError(f"renames unknown tool(s) {sorted(unknown)}")
        return Mapping(tools=renames)

    def apply(self, episode: Episode, params: dict) -> Episode:
        return rename_episode(episode, self.mapping(episode, params))
