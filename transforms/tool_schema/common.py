"""What the tool_schema transforms share: finding a tool by name, replacing the tools list, the
calls of an episode, a shuffle that always changes the order, and the tool names no rename
may take."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import orjson

from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.model.harness import Harness
from hsa.model.memo import BoundedMemo
from hsa.model.schema import schema_nodes
from hsa.model.tool import Tool
from hsa.text.mentions import find_name_mentions
from hsa.text.names import identifier_like
from hsa.transforms._names import fixed_by_code, written_as_words


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


def schema_values(harness: Harness) -> set[str]:
    """Every string a tool's schema names as a value: enum members, consts and defaults."""
    values: set[str] = set()
    for tool in harness.tools:
        for _, node in schema_nodes(tool.parameters):
            if not isinstance(node, dict):
                continue
            members = node.get("enum") if isinstance(node.get("enum"), list) else []
            values.update(
                v for v in [*members, node.get("const"), node.get("default")] if isinstance(v, str)
            )
    return values


# The tool names a rename leaves, by harness fingerprint (every draw of a pool asks it of the
# same harness). Pure: it reads the harness alone.
_FIXED: BoundedMemo[frozenset[str]] = BoundedMemo(1024)


def fixed_tool_names(harness: Harness) -> frozenset[str]:
    """Tool names a rename leaves. A tool name that is also a value the tools take
    (``update_ticket``, a tool, and ``"update_ticket"``, an ``action`` the ``get_audit_log``
    tool accepts) is data wherever the conversation writes it, in calls' arguments, in results
    (``{"action": "update_ticket"}``), in the user's words, and no harness-scoped draw can see
    where: renamed, the results would contradict the schema and the calls. A tool name that is
    also a parameter's name (``baggage``, a tool, and ``book``'s ``baggage``) is kept when the
    harness's texts mention it where a rename would reach (a plain word as code,
    `` `baggage` ``; an identifier-like name anywhere): such a mention may be either, and
    renamed as the tool it would name a parameter no tool has. A plain-word tool name the
    harness's prose writes as a plain word ("find the patient with search first") is kept: prose
    keeps plain words, and would name a tool the variant does not have."""
    return _FIXED.get(harness.fingerprint, lambda: _fixed(harness))


def _fixed(harness: Harness) -> frozenset[str]:
    names = set(harness.tool_names)
    # A tool name that is also a value the tools take; and one the harness's code (hooks.py, its
    # layouts) compares or reads by its name (``tool_name == "applyPatch"``), which a renamed
    # tool would never match, or prints in its feedback (hsa.transforms._names.fixed_by_code).
    values = (names & schema_values(harness)) | fixed_by_code(harness, names)
    # A plain-word tool name (``search``) the prose writes as a plain word ("identify the
    # patient with search first"), but in the tool's own descriptions, which say what it does in
    # that word ("Search the catalogue").
    values |= written_as_words(
        harness, names - values, lambda n: (f"tool {n}", f"tool {n} parameters")
    )
    clashing = (names & harness.parameter_names) - values
    if not clashing:
        return frozenset(values)
    identifiers = [n for n in clashing if identifier_like(n)]
    words = [n for n in clashing if not identifier_like(n)]
    mentioned = {
        m for _, text in harness.prose() for m in find_name_mentions(text, identifiers, words)
    }
    return frozenset(values | mentioned)
