"""What the tool_schema transforms share: finding a tool by name, replacing the tools list, the
calls of an episode, and a shuffle that always changes the order."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import orjson

from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.model.harness import Harness
from hsa.model.tool import Tool


def tool_named(harness: Harness, name: str) -> Tool:
    tool = harness.tool(name)
    if tool is None:
        raise HsaError(f"the harness has no tool {name!r}")
    return tool


def with_tools(episode: Episode, tools: tuple[Tool, ...]) -> Episode:
    return episode.with_harness(replace(episode.harness, tools=tools))


def calls(episode: Episode) -> Iterator[tuple[str, str, dict]]:
    """(tool name, call id, decoded arguments) of every tool call in the messages."""
    for message in episode.messages:
        for call in message.get("tool_calls") or ():
            fn = call["function"]
            yield fn["name"], call.get("id"), orjson.loads(fn["arguments"])


def shuffled(items: list, rng: random.Random) -> list:
    """A random order of ``items`` that differs from the given one whenever two items differ."""
    out = list(items)
    if all(type(i) is str for i in items):  # the common case: names and enum strings
        distinct = len(set(items))
    else:
        distinct = len({json.dumps(i, sort_keys=True) for i in items})
    if distinct < 2:
        return out
    while out == items:
        rng.shuffle(out)
    return out
