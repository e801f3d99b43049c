"""The shape (OpenAI or MCP) in which the prompt shows the tools."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from hsa.augment.registry import register
from hsa.augment.transform import Transform
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.transforms.tool_schema.options import TOOL_SHAPE_OPTION, TOOL_SHAPES


@register
@dataclass(frozen=True)
class ToolShape(Transform):
    """Switches the shape in which the prompt shows tool schemas between OpenAI
    (``{"type": "function", "function": {...}}``) and MCP (``{"name", "inputSchema"}``), through
    ``prompt.options["tool_shape"]``; the tools themselves, and the OpenAI-shaped tools list given
    to trainers, are kept."""

    name = "tool_shape"
    scope = "harness"
    conversation = "kept"
    version = "1"
    family = "tool_schema"

    shape: Literal["other", "openai", "mcp"] = "other"  # "other": the shape not shown now

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        current = episode.harness.prompt.options.get(TOOL_SHAPE_OPTION, "openai")
        if self.shape != "other":
            return {"tool_shape": self.shape}
        return {"tool_shape": next((s for s in TOOL_SHAPES if s != current), TOOL_SHAPES[0])}

    def apply(self, episode: Episode, params: dict) -> Episode:
        shape = params["tool_shape"]
        if shape not in TOOL_SHAPES:
            raise HsaError(f"tool_shape must be one of {list(TOOL_SHAPES)}, got {shape!r}")
        return episode.with_prompt_options(**{TOOL_SHAPE_OPTION: shape})
