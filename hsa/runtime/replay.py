"""The replay simulator: tool calls answered from the results recorded in episodes.

A recorded result is a ``tool`` message that answers an earlier assistant tool call (hook
feedback answering a blocked call is not a result; skill loads are the skill loader's). A call is
matched by tool name and arguments: equal as JSON (types kept: ``1`` is not ``1.0`` or ``true``),
or equal once parameters set to their schema ``default`` are left out on both sides (passing a
default explicitly is the same call). The same call made again gets the next recorded result for
it, and the last one again when they run out. An unmatched call gets an error result that says so
and does not reveal what was recorded (a teacher must not read the answer off the error).
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from hsa.model.episode import Episode
from hsa.model.harness import Harness
from hsa.model.hook import tool_result
from hsa.model.message import answered_calls
from hsa.runtime.tools import CallContext, ToolResult, error_result


def _key(name: str, arguments: dict) -> bytes:
    return name.encode() + b"\0" + orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)


class ReplayTools:
    """Recorded results, keyed by call; one instance per conversation (it counts repeats)."""

    def __init__(self, harness: Harness, recorded: Iterable[tuple[str, dict, str]]):
        self.harness = harness
        self.results: dict[bytes, list[str]] = {}
        for name, arguments, content in recorded:
            self.results.setdefault(_key(name, arguments), []).append(content)
            lenient = self._without_defaults(name, arguments)
            if lenient != arguments:
                self.results.setdefault(_key(name, lenient), []).append(content)
        self.used: dict[bytes, int] = {}

    @classmethod
    def from_episodes(
        cls, episodes: Iterable[Episode], harness: Harness | None = None
    ) -> ReplayTools:
        """Every result recorded in ``episodes`` (the harness of the first one unless given)."""
        episodes = list(episodes)
        if harness is None:
            if not episodes:
                raise ValueError("from_episodes needs an episode or a harness")
            harness = episodes[0].harness
        return cls(harness, (r for e in episodes for r in recorded_results(e.messages, harness)))

    def _without_defaults(self, name: str, arguments: dict) -> dict:
        tool = self.harness.tool(name)
        if tool is None:
            return arguments
        properties = tool.properties
        return {
            k: v
            for k, v in arguments.items()
            if not (
                isinstance(properties.get(k), dict)
                and "default" in properties[k]
                and properties[k]["default"] == v
                and type(properties[k]["default"]) is type(v)
            )
        }

    async def __call__(self, name: str, arguments: dict, context: CallContext) -> ToolResult | None:
        for key in (_key(name, arguments), _key(name, self._without_defaults(name, arguments))):
            results = self.results.get(key)
            if results:
                n = self.used.get(key, 0)
                self.used[key] = n + 1
                return ToolResult(results[min(n, len(results) - 1)], "replay")
        if self.harness.tool(name) is None:
            return None  # not a tool of this harness: the belt reports it as unavailable
        return error_result(
            "no_recorded_result",
            f"the environment has no result for this call of {name} (a replay "
            f"answers only calls that were recorded, by name and arguments)",
        )


def recorded_results(messages: Iterable[dict], harness: Harness) -> list[tuple[str, dict, str]]:
    """(tool name, arguments, result text) of every tool result recorded in ``messages``."""
    out = []
    for _, call, message in answered_calls(messages):
        fn = call.get("function") or {}
        name, raw = fn.get("name"), fn.get("arguments", "{}")
        # hook feedback and skill loads are no tool's result; only the rest is parsed
        if name == harness.skill_loader or not tool_result(message):
            continue
        if not isinstance(message.get("content"), str):
            continue
        try:
            arguments = raw if isinstance(raw, dict) else orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(arguments, dict):
            out.append((name, arguments, message["content"]))
    return out
