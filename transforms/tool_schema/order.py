"""The order of the tools list and of each schema's properties."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from hsa.augment.registry import register
from hsa.augment.transform import Transform
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.model.schema import edit_schema, pointer, schema_nodes
from hsa.transforms.tool_schema.common import shuffled, tool_named, with_tools


@register
@dataclass(frozen=True)
class ToolOrderPermutation(Transform):
    """Shuffles the order of the tools list; every tool and call is kept as it is."""

    name = "tool_order_permutation"
    scope = "harness"
    conversation = "kept"
    version = "1"
    family = "tool_schema"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        # Never the identity when there are two tools or more: a variant should vary.
        return {"order": shuffled(list(range(len(episode.harness.tools))), rng)}

    def apply(self, episode: Episode, params: dict) -> Episode:
        tools = episode.harness.tools
        order = params["order"]
        if sorted(order) != list(range(len(tools))):
            raise HsaError(f"order {order} is not a permutation of the {len(tools)} tools")
        return episode.with_harness(replace(episode.harness, tools=tuple(tools[i] for i in order)))


@register
@dataclass(frozen=True)
class ToolPropertyOrder(Transform):
    """Shuffles the order of the properties in every tool schema (nested objects, array items,
    ``anyOf``/``oneOf``/``allOf`` branches and ``$defs`` too); the properties themselves,
    ``required`` and every call are kept as they are."""

    name = "tool_property_order"
    scope = "harness"
    conversation = "kept"
    version = "2"  # 2: every sub-schema (hsa.model.schema), not only properties and items
    family = "tool_schema"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        orders: dict[str, dict[str, list[str]]] = {}
        for tool in episode.harness.tools:
            for parts, node in schema_nodes(tool.parameters):
                keys = (
                    list(node.get("properties") or {})
                    if isinstance(node.get("properties"), dict)
                    else []
                )
                if len(keys) >= 2:
                    orders.setdefault(tool.name, {})[pointer(parts)] = shuffled(keys, rng)
        return {"orders": orders}

    def apply(self, episode: Episode, params: dict) -> Episode:
        harness = episode.harness
        orders = params["orders"]
        for name in orders:
            tool_named(harness, name)

        def reorder(order: list[str], tool: str) -> Callable[[dict], dict]:
            def edit(node: dict) -> dict:
                properties = node.get("properties") or {}
                if sorted(order) != sorted(properties):
                    raise HsaError(
                        f"tool {tool!r}: order {order} is not a permutation of the "
                        f"properties {list(properties)}"
                    )
                return {**node, "properties": {k: properties[k] for k in order}}

            return edit

        tools = tuple(
            replace(
                t,
                parameters=edit_schema(
                    t.parameters, {p: reorder(o, t.name) for p, o in orders[t.name].items()}, t.name
                ),
            )
            if t.name in orders
            else t
            for t in harness.tools
        )
        return with_tools(episode, tools)
