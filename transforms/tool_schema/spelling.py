"""Equivalent spellings of a tool schema: ``required`` and ``enum`` in another order, and an
explicit ``"additionalProperties": false`` where no call or gold value needs more."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hsa.augment.mapping import Mapping
from hsa.augment.registry import register
from hsa.augment.transform import Share, Transform
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.model.harness import Harness
from hsa.model.message import called_tools
from hsa.model.schema import (
    IN_PLACE_LISTS,
    IN_PLACE_VALUES,
    edit_schema,
    is_instance_path,
    pointer,
    pointer_parts,
    schema_nodes,
)
from hsa.transforms.tool_schema.common import calls, shuffled, tool_named, with_tools


def _objects_at(value: Any, steps: list[str], gold: bool) -> Iterator[Any]:
    """The instances that sit at schema path ``steps`` (an instance path: properties and items
    only) inside ``value``. In gold, an object's value is a pattern ``{key: [acceptable
    values]}`` (BFCL), so each acceptable value is followed; ``""`` marks a key that may be left
    out."""
    if not steps:
        yield value
        return
    head, rest = steps[0], steps[1:]
    if head == "items":
        if isinstance(value, list):
            for element in value:
                yield from _objects_at(element, rest, gold)
    elif head == "properties" and rest and isinstance(value, dict):
        key, rest = rest[0], rest[1:]
        if key not in value:
            return
        if (
            gold
            and isinstance(value[key], list)
            and all(isinstance(v, list) for v in value.values())
        ):
            for alternative in value[key]:
                if alternative != "":
                    yield from _objects_at(alternative, rest, gold)
        else:
            yield from _objects_at(value[key], rest, gold)


def _arguments_by_tool(episode: Episode) -> dict[str, list[dict]]:
    """The decoded arguments of every tool call in the messages, per tool (parsed once, read
    for every schema node)."""
    out: dict[str, list[dict]] = {}
    for name, _, args in calls(episode):
        out.setdefault(name, []).append(args)
    return out


def _closing_is_safe(
    episode: Episode, arguments: dict[str, list[dict]], tool: str, parts: list[str], node: dict
) -> bool:
    """Whether every call (``arguments``: :func:`_arguments_by_tool`) and gold value at this
    object node only uses its declared keys, so that ``"additionalProperties": false`` rejects
    nothing the task needs. Only a node on an instance path qualifies: a branch of ``anyOf`` or
    ``allOf`` describes the value together with its siblings, so closing it alone could reject
    keys another branch declares."""
    if not is_instance_path(parts) or not _declares_its_keys(node):
        return False
    allowed = set(node.get("properties") or {})
    instances: list[Any] = []
    for args in arguments.get(tool, ()):
        instances.extend(_objects_at(args, parts, gold=False))
    for turn in episode.gold.turns:
        for call in turn.calls:
            if call.name == tool:
                instances.extend(_objects_at(dict(call.arguments), parts, gold=bool(parts)))
                if not parts:  # the top level: the gold's parameter names themselves
                    instances.append(dict.fromkeys(call.omittable))
    return all(set(i) <= allowed for i in instances if isinstance(i, dict))


# Keywords through which an object node takes keys from other schemas (a ``$ref``, in-place
# branches, conditions, dependent schemas, patterns): "additionalProperties": false on the node
# would refuse those keys, whatever its calls use, since it sees only the node's own properties.
_KEYS_FROM_ELSEWHERE = frozenset(
    {
        "$ref",
        "$dynamicRef",
        *IN_PLACE_LISTS,
        *IN_PLACE_VALUES,
        "dependentSchemas",
        "dependencies",
        "patternProperties",
        "unevaluatedProperties",
    }
)


def _declares_its_keys(node: dict) -> bool:
    """Whether an object node's ``properties`` are every key it allows by name (no keyword of
    :data:`_KEYS_FROM_ELSEWHERE`): only such a node keeps its meaning closed."""
    return not _KEYS_FROM_ELSEWHERE & set(node)


def _check_closing(
    episode: Episode, arguments: dict[str, list[dict]], tool: str, parts: list[str], node: dict
) -> None:
    """Raise unless the object node at ``parts`` may be closed (:func:`_closing_is_safe`)."""
    if not _closing_is_safe(episode, arguments, tool, parts, node):
        raise HsaError(
            f"tool {tool!r} schema node {pointer(parts)!r}: it takes keys from other schemas, "
            f"or a call or gold value uses an undeclared key, so it cannot be closed"
        )


def _closed_nodes(params: dict, tool: str) -> list[str]:
    """The schema nodes (pointers) of ``tool`` that the params close."""
    return [
        at
        for at, change in params["edits"].get(tool, {}).items()
        if change.get("additionalProperties") == "close"
    ]


@register
@dataclass(frozen=True)
class ToolSchemaSpelling(Transform):
    """Spells tool schemas differently with the same meaning: ``required`` and ``enum`` lists in
    another order (in every sub-schema), and an explicit ``"additionalProperties": false`` added
    where no call or gold value uses an undeclared key (on the nodes that describe a property or
    an array element): what the scorer holds a call to already, since it refuses a parameter the
    tool does not declare. A ``false`` the schema has is kept: dropped, the variant's schema
    accepts calls its harness refuses (a runtime or a hook that validates arguments against it
    then lets them through), and tells the model so. Types, constraints and values are kept."""

    name = "tool_schema_spelling"
    scope = "harness"
    version = "4"  # 4: a closed object is never opened;
    # 3: no object closed that takes keys through $ref, branches or conditions;
    # 2: every sub-schema (hsa.model.schema), not only properties and items
    family = "tool_schema"

    rate: Share = 0.5  # chance of each possible respelling

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        options: list[tuple[str, str, dict]] = []
        arguments = _arguments_by_tool(episode)
        for tool in episode.harness.tools:
            for parts, node in schema_nodes(tool.parameters):
                at = pointer(parts)
                required = node.get("required")
                if isinstance(required, list) and len(set(required)) >= 2:
                    options.append((tool.name, at, {"required": shuffled(required, rng)}))
                enum = node.get("enum")
                if isinstance(enum, list) and len(enum) >= 2:
                    new = shuffled(enum, rng)
                    if new != enum:
                        options.append((tool.name, at, {"enum": new}))
                if (
                    isinstance(node.get("properties"), dict)
                    and is_instance_path(parts)
                    and "additionalProperties" not in node
                    and _closing_is_safe(episode, arguments, tool.name, parts, node)
                ):
                    options.append((tool.name, at, {"additionalProperties": "close"}))
        chosen = [o for o in options if rng.random() < self.rate]
        if not chosen and options and self.rate > 0:
            chosen = [rng.choice(options)]  # a variant that respells nothing is no variant
        edits: dict[str, dict[str, dict]] = {}
        for name, at, change in chosen:
            edits.setdefault(name, {}).setdefault(at, {}).update(change)
        return {"edits": edits}

    def apply(self, episode: Episode, params: dict) -> Episode:
        harness = episode.harness
        for name in params["edits"]:
            tool_named(harness, name)
        arguments = _arguments_by_tool(episode)

        def respell(change: dict, tool: str, parts: list[str]) -> Callable[[dict], dict]:
            def edit(node: dict) -> dict:
                out = dict(node)
                where = f"tool {tool!r} schema node {pointer(parts)!r}"
                for key in ("required", "enum"):
                    if key in change:
                        new, old = change[key], node.get(key)
                        if not isinstance(old, list) or sorted(map(json.dumps, new)) != sorted(
                            map(json.dumps, old)
                        ):
                            raise HsaError(f"{where}: {key} {new} is not a reordering of {old}")
                        out[key] = new
                closing = change.get("additionalProperties")
                if closing == "close":
                    if "additionalProperties" in node:
                        raise HsaError(f"{where} already sets additionalProperties")
                    _check_closing(episode, arguments, tool, parts, node)
                    out["additionalProperties"] = False
                elif closing is not None:
                    # "open" (drop a false) was drawn until version 4: it changed what the
                    # schema accepts
                    raise HsaError(
                        f"{where}: additionalProperties change must be 'close', got {closing!r}"
                    )
                return out

            return edit

        tools = []
        for tool in harness.tools:
            changes = params["edits"].get(tool.name)
            if changes is None:
                tools.append(tool)
                continue
            schema = edit_schema(
                tool.parameters,
                {p: respell(c, tool.name, pointer_parts(p)) for p, c in changes.items()},
                tool.name,
            )
            # No meta-schema re-check: respell() only reorders `required`/`enum` (checked above to
            # be permutations) and sets `additionalProperties: false`, none of which
            # can make a valid schema invalid, and the check cost a quarter of generation time.
            tools.append(replace(tool, parameters=schema))
        return with_tools(episode, tuple(tools))

    def apply_to_conversation(
        self, episode: Episode, params: dict, harness: Harness, mapping: Mapping
    ) -> Episode | None:
        # The respelled schemas are in the known harness. Closing an object is the one edit whose
        # check reads the conversation (every call and gold value must use declared keys only),
        # so that check is made again, in apply's order (edit_schema's walk, tool by tool); the
        # calls are parsed only when a draw closes something.
        # Only tools the calls or the gold name: for any other, every closed node passed when
        # the harness variant was made (an instance path is a property of the node alone), and
        # with no instance to read it passes again.
        named = called_tools(episode.messages) | {
            call.name for turn in episode.gold.turns for call in turn.calls
        }
        closed_by_tool = [
            (tool, closed)
            for tool in episode.harness.tools
            if tool.name in named and (closed := _closed_nodes(params, tool.name))
        ]
        if not closed_by_tool:
            return episode.with_harness(harness)
        arguments = _arguments_by_tool(episode)

        def closing(tool: str, parts: list[str]) -> Callable[[dict], dict]:
            def check(node: dict) -> dict:
                _check_closing(episode, arguments, tool, parts, node)
                return node

            return check

        for tool, closed in closed_by_tool:
            edit_schema(
                tool.parameters,
                {p: closing(tool.name, pointer_parts(p)) for p in closed},
                tool.name,
            )
        return episode.with_harness(harness)
