"""Distractor tools: plausible tools nobody needs, from a pool split into train and held-out
parts (options.yaml), never about what the request or the harness already asks or does."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import orjson

from hsa.augment.registry import register
from hsa.augment.transform import Transform
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.message import message_text
from hsa.model.tool import Tool
from hsa.text.names import name_words, write_segments
from hsa.transforms._names import declared_or_shared
from hsa.transforms.tool_schema.common import with_tools
from hsa.transforms.tool_schema.options import DISTRACTOR_TOOLS


def _request_text(episode: Episode) -> str:
    """What the task is about: the user's messages and the harness's own tools (a tool's name as
    its words, in any convention)."""
    parts = [message_text(m) for m in episode.messages if m.get("role") == "user"]
    parts += [f"{' '.join(name_words(t.name))} {t.description}" for t in episode.harness.tools]
    return " ".join(parts).lower()


def _mentions_keyword(text: str, keyword: str) -> bool:
    if keyword.isascii():
        return keyword.lower() in text and _keyword_pattern(keyword).search(text) is not None
    return keyword in text


@lru_cache(maxsize=4096)
def _keyword_pattern(keyword: str) -> re.Pattern:
    return re.compile(r"(?<![a-z])" + re.escape(keyword.lower()))


def _written_in(tool: dict, name_convention: str | None, parameter_convention: str | None) -> dict:
    """A pool tool with its name and top-level parameter names in the harness's conventions (as
    they are where the harness mixes conventions), so a distractor does not stand out by its
    spelling."""
    fn = tool["function"]
    name = write_segments(fn["name"], name_convention) if name_convention else fn["name"]
    schema = fn["parameters"]
    if parameter_convention:
        renames = {p: write_segments(p, parameter_convention) for p in schema["properties"]}
        schema = {**schema, "properties": {renames[k]: v for k, v in schema["properties"].items()}}
        if "required" in schema:
            schema["required"] = [renames[p] for p in schema["required"]]
    return {**tool, "function": {**fn, "name": name, "parameters": schema}}


@register
@dataclass(frozen=True)
class DistractorTools(Transform):
    """Adds plausible tools the task does not need (a realistic pool, none about what the user
    asks or the harness already does) at random places in the tools list, their names written
    in the harness's convention; every existing tool, call and the gold are kept as they are."""

    name = "distractor_tools"
    scope = "harness"
    conversation = "kept"
    version = "3"  # 3: the harness's tool names read as their words in any convention
    family = "tool_schema"

    min_count: int = 1
    max_count: int = 3
    split: Literal["train", "heldout"] = "train"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.min_count <= self.max_count:
            raise HsaError(
                f"transform {self.name!r}: need 0 <= min_count <= max_count, got "
                f"{self.min_count} and {self.max_count}"
            )

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        harness = episode.harness
        taken = set(harness.names)
        request = _request_text(episode)
        tool_convention = declared_or_shared(episode, harness.tool_names)
        parameter_convention = declared_or_shared(
            episode, [p for t in harness.tools for p in t.properties]
        )
        pool = [
            _written_in(d["tool"], tool_convention, parameter_convention)
            for d in DISTRACTOR_TOOLS[self.split]
            if not any(_mentions_keyword(request, k) for k in d["keywords"])
        ]
        pool = [tool for tool in pool if tool["function"]["name"] not in taken]
        count = min(rng.randint(self.min_count, self.max_count), len(pool))
        chosen = rng.sample(pool, count)
        size = len(harness.tools)
        added = []
        for tool in chosen:
            size += 1
            # A copy, so that no variant's harness shares a schema object with the pool.
            added.append({"at": rng.randrange(size), "tool": orjson.loads(orjson.dumps(tool))})
        return {"tools": added}

    def apply(self, episode: Episode, params: dict) -> Episode:
        harness = episode.harness
        taken = set(harness.names)
        tools = list(harness.tools)
        for i, entry in enumerate(params["tools"]):
            tool = Tool.from_dict(entry["tool"], where=f"params.tools[{i}].tool")
            if tool.name in taken:
                raise HsaError(f"distractor tool {tool.name!r} would reuse a name of the harness")
            taken.add(tool.name)
            at = entry["at"]
            if not isinstance(at, int) or not 0 <= at <= len(tools):
                raise HsaError(f"distractor position {at!r} is outside the tools list")
            tools.insert(at, tool)
        return with_tools(episode, tuple(tools))
