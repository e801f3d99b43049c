"""The JSON Schema of a tool's parameters as a tree of sub-schemas: one walk for every reader.

A model reads every sub-schema of a tool's parameters: the object's ``properties``, array
``items``, the branches of ``anyOf``/``oneOf``/``allOf``, the shared definitions (``$defs``,
``definitions``) they ``$ref`` to, and the other keywords that hold schemas (see
:data:`SUBSCHEMA_MAPS`, :data:`SUBSCHEMA_LISTS` and :data:`SUBSCHEMA_VALUES`). Every reader of
those sub-schemas walks them here, so that the renames' prose rewrite, verification's search for
stale names, the description paraphrase and the order and spelling transforms see the same nodes.

A node is addressed by its path of keys from the root (``["properties", "items", "items"]``: the
array items of the property ``items``), written as a JSON pointer (RFC 6901) in transform params.
Schemas are never changed in place: :func:`edit_schema` copies the nodes on the way to an edit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any
from urllib.parse import unquote

from hsa.errors import HsaError
from hsa.model.memo import BoundedMemo

# Keywords whose value maps names to sub-schemas, holds a list of them, or is one.
SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
SUBSCHEMA_LISTS = ("prefixItems", "anyOf", "oneOf", "allOf")
SUBSCHEMA_VALUES = ("items", "additionalProperties", "not", "if", "then", "else", "contains")
# ``items`` also takes a list (the draft 4-7 tuple form).
_LIST_TOO = ("items",)
# Keywords whose sub-schemas describe the very value of the schema they stand in (in-place
# applicators), as lists and as single schemas: a property name they list (an ``anyOf`` branch's
# ``required``) is one of that object's own.
IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
IN_PLACE_VALUES = ("not", "if", "then", "else")
# Steps that lead from a value to the values inside it (an object's properties, an array's
# elements), as opposed to branches that describe the same value or definitions used elsewhere.
INSTANCE_STEPS = ("properties", "items")


def _children(node: dict) -> Iterator[tuple[list[str], dict]]:
    """(steps, sub-schema) of each direct sub-schema of ``node``, in the order written."""
    for key, value in node.items():
        if key in SUBSCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                if isinstance(sub, dict):
                    yield [key, name], sub
        elif key in SUBSCHEMA_LISTS or (key in _LIST_TOO and isinstance(value, list)):
            if isinstance(value, list):
                for i, sub in enumerate(value):
                    if isinstance(sub, dict):
                        yield [key, str(i)], sub
        elif key in SUBSCHEMA_VALUES and isinstance(value, dict):
            yield [key], value


# Walks by schema object: one tool's parameters are read by several transforms and checks in
# every variant (descriptions, order, spelling, the parameter renames, verification), and a
# schema is shared by every variant that leaves it alone. Keyed by id: a walk starts with the
# schema itself, so while it is remembered the schema lives and its id is no other object's.
# Schemas are never changed in place (:func:`edit_schema` copies), so a remembered walk stays true.
_WALKS: BoundedMemo[tuple[tuple[list[str], dict], ...]] = BoundedMemo(4096)


def schema_nodes(schema: Any) -> Iterator[tuple[list[str], dict]]:
    """Every sub-schema of ``schema`` (the schema itself first) with its path, depth first, each
    node's sub-schemas in the order its keys are written. The paths are shared between calls:
    readers copy one before changing it."""
    if not isinstance(schema, dict):
        return iter(())
    return iter(_WALKS.get(id(schema), lambda: tuple(_walk(schema))))


def _walk(schema: dict) -> Iterator[tuple[list[str], dict]]:
    stack: list[tuple[list[str], dict]] = [([], schema)]
    while stack:
        parts, node = stack.pop()
        yield parts, node
        stack.extend(reversed([(parts + steps, sub) for steps, sub in _children(node)]))


def property_name(parts: list[str]) -> str | None:
    """The property name when the node at ``parts`` is a value of some ``properties``, else None
    (read from the root, so a property named ``properties`` is not taken for the keyword)."""
    i, name = 0, None
    while i < len(parts):
        key = parts[i]
        # A name or an index follows a map or list keyword; ``items`` followed by an index is
        # the tuple form (a keyword, which comes next otherwise, is never a number).
        if (
            key in SUBSCHEMA_MAPS
            or key in SUBSCHEMA_LISTS
            or (key in _LIST_TOO and i + 1 < len(parts) and parts[i + 1].isdigit())
        ):
            name = parts[i + 1] if key == "properties" and i + 1 < len(parts) else None
            i += 2
        else:
            name = None
            i += 1
    return name


def property_names(schema: Any) -> set[str]:
    """The names of every property at any depth of ``schema`` (branches and definitions too)."""
    return {name for parts, _ in schema_nodes(schema) if (name := property_name(parts)) is not None}


def is_instance_path(parts: list[str]) -> bool:
    """Whether ``parts`` only steps into property values and array elements, so that the node
    describes the values found at that path in every call (not one branch of several)."""
    i = 0
    while i < len(parts):
        if parts[i] == "properties" and i + 1 < len(parts):
            i += 2
        elif parts[i] == "items":
            i += 1
        else:
            return False
    return True


def schema_descriptions(schema: Any) -> Iterator[str]:
    """Every ``description`` string of ``schema`` and its sub-schemas, depth first."""
    for _, node in schema_nodes(schema):
        if isinstance(node.get("description"), str):
            yield node["description"]


# ---- pointers --------------------------------------------------------------------------------


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1") if "~" in part or "/" in part else part


def pointer(parts: list[str]) -> str:
    """``parts`` as a JSON pointer (``""`` is the root)."""
    return "".join("/" + _escape(p) for p in parts)


def pointer_parts(text: str) -> list[str]:
    """The path a JSON pointer names; :class:`HsaError` when ``text`` is not one."""
    if text == "":
        return []
    if not text.startswith("/"):
        raise HsaError(f"schema pointer {text!r} must be empty or start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in text[1:].split("/")]


def _step(node: dict, parts: list[str], i: int) -> tuple[Any, int]:
    """The sub-schema one step of ``parts`` (from index ``i``) leads to, and the next index;
    (None, i) when that step is no sub-schema of ``node``."""
    key = parts[i]
    value = node.get(key)
    if key in SUBSCHEMA_MAPS and isinstance(value, dict) and i + 1 < len(parts):
        return value.get(parts[i + 1]), i + 2
    if (
        (key in SUBSCHEMA_LISTS or key in _LIST_TOO)
        and isinstance(value, list)
        and i + 1 < len(parts)
        and parts[i + 1].isdigit()
    ):
        index = int(parts[i + 1])
        return (value[index] if index < len(value) else None), i + 2
    if key in SUBSCHEMA_VALUES and isinstance(value, dict):
        return value, i + 1
    return None, i


def node_at(schema: Any, at: str) -> dict | None:
    """The sub-schema at JSON pointer ``at``, or None when there is none."""
    try:
        parts = pointer_parts(at)
    except HsaError:
        return None
    node, i = schema, 0
    while isinstance(node, dict) and i < len(parts):
        node, i = _step(node, parts, i)
    return node if isinstance(node, dict) else None


def referenced(schema: Any, root: Any) -> dict | None:
    """The sub-schema of ``root`` that a node's ``$ref`` names as a JSON pointer (``"#"``,
    ``"#/$defs/window"``, percent-encoded or not), or None: no reference, or one of another form
    (an anchor, an ``$id``), which only a validator resolves."""
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
        return None
    return node_at(root, unquote(ref[1:]))


def value_shapes(schema: Any, root: Any) -> list[dict]:
    """The schemas that describe ``schema``'s own value: itself, its in-place branches
    (``allOf``/``anyOf``/``oneOf``, ``then``/``else``) and what their ``$ref`` names in ``root``
    (``{"$ref": "#/$defs/Address"}``), followed to any depth, each once. A path into the value
    (``payout.bank_account``, ``mailing.line1``) may name a property of any of them. Not
    ``not``: what it describes is what the value is not."""
    shapes: list[dict] = []
    seen: set[int] = set()
    pending = [schema]
    while pending:
        node = pending.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        shapes.append(node)
        pending.append(referenced(node, root))
        for key in IN_PLACE_LISTS:
            pending.extend(node.get(key) or ())
        pending.extend(node.get(key) for key in ("then", "else"))
    return shapes


def in_place_references(schema: Any) -> Iterator[dict | None]:
    """What the references that describe ``schema``'s own value name (``"$ref"`` beside its
    keywords, or in its in-place branches: ``allOf: [{"$ref": "#/$defs/paging"}]``), each the
    sub-schema of ``schema`` it names, or None where only a validator could resolve it."""
    if not isinstance(schema, dict):
        return
    pending = [schema]
    while pending:
        node = pending.pop()
        if "$ref" in node:
            yield referenced(node, schema)
        for key in IN_PLACE_LISTS:
            pending.extend(n for n in node.get(key) or () if isinstance(n, dict))
        pending.extend(n for key in IN_PLACE_VALUES if isinstance(n := node.get(key), dict))


def unresolved_reference(schema: Any) -> tuple[list[str], str] | None:
    """(path of the node, its ``$ref``) of the first reference that surely names nothing, or
    None: a JSON pointer (``"#/$defs/x"``) to no sub-schema of ``schema``, or, in a schema that
    declares no ``$id`` (which could name a part of it), a reference to another document
    (``"other.json#/x"``, a URL): hsa fetches nothing. Anchors are left to the validator."""
    for parts, node in schema_nodes(schema):
        ref = node.get("$ref")
        if ref is None:
            continue
        if not isinstance(ref, str):
            return list(parts), repr(ref)
        if ref == "#" or ref.startswith("#/"):
            if referenced(node, schema) is None:
                return list(parts), ref
        elif not ref.startswith("#") and not any("$id" in n for _, n in schema_nodes(schema)):
            return list(parts), ref
    return None


def edit_schema(schema: dict, edits: dict[str, Callable[[dict], dict]], tool: str) -> dict:
    """``schema`` with the node at each JSON pointer replaced by ``edit(node)`` (a node's own
    sub-schemas are edited first). Nodes on the way to an edit are copied, the rest shared:
    schemas are never changed in place, by anyone."""
    unknown = sorted(p for p in edits if node_at(schema, p) is None)
    if unknown:
        raise HsaError(f"tool {tool!r} has no schema node at {unknown[0]!r}")
    if not edits:
        return schema
    wanted = {tuple(pointer_parts(p)): edit for p, edit in edits.items()}
    return _rebuild(schema, (), wanted, {k[:n] for k in wanted for n in range(len(k) + 1)})


def _rebuild(node: dict, parts: tuple, edits: dict, on_the_way: set) -> dict:
    out = dict(node)
    for steps, sub in _children(node):
        path = parts + tuple(steps)
        if path not in on_the_way:
            continue
        new = _rebuild(sub, path, edits, on_the_way)
        if len(steps) == 1:
            out[steps[0]] = new
        elif isinstance(out[steps[0]], list):
            out[steps[0]] = [new if str(i) == steps[1] else v for i, v in enumerate(out[steps[0]])]
        else:
            out[steps[0]] = {k: new if k == steps[1] else v for k, v in out[steps[0]].items()}
    return edits[parts](out) if parts in edits else out


def rewrite_descriptions(schema: Any, prose: Callable[[str], str]) -> Any:
    """The schema with every ``description`` (the places :func:`schema_descriptions` reads)
    passed through ``prose`` (a str -> str function). Parts where nothing changes are the
    input's own objects."""
    if not isinstance(schema, dict):
        return schema
    edits: dict[str, Callable[[dict], dict]] = {}
    for parts, node in schema_nodes(schema):
        description = node.get("description")
        if isinstance(description, str):
            new = prose(description)
            if new != description:
                edits[pointer(parts)] = partial(_described, text=new)
    return edit_schema(schema, edits, "") if edits else schema


def _described(node: dict, text: str) -> dict:
    return {**node, "description": text}


# Every keyword of JSON Schema (draft 2020-12 and the draft 4-7 ones it renamed: validation,
# applicators, annotations, core), and the two OpenAPI adds that tool schemas often carry. An
# unknown key is legal JSON Schema and checks nothing: a misspelt keyword ("tpye") silently
# drops its check.
KEYWORDS = frozenset(
    {
        *("$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary"),
        *("$comment", "$defs", "definitions", "$recursiveRef", "$recursiveAnchor"),
        *("type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum"),
        *("exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems"),
        *("uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties"),
        *("required", "dependentRequired", "dependencies", "allOf", "anyOf", "oneOf", "not"),
        *("if", "then", "else", "dependentSchemas", "prefixItems", "items", "additionalItems"),
        *("contains", "properties", "patternProperties", "additionalProperties"),
        *("propertyNames", "unevaluatedItems", "unevaluatedProperties", "format"),
        *("contentEncoding", "contentMediaType", "contentSchema", "title", "description"),
        *("default", "deprecated", "readOnly", "writeOnly", "examples", "nullable", "example"),
    }
)


def misspelt_keywords(schema: Any) -> Iterator[tuple[str, str, str]]:
    """(pointer of the node, key, the keyword it looks like) for every key of a sub-schema of
    ``schema`` that is no keyword of JSON Schema but nearly spells one (``tpye``, ``requried``,
    ``minimun``): legal, and checking nothing. Extensions (``x-...``) are none."""
    from difflib import get_close_matches

    for parts, node in schema_nodes(schema):
        for key in node:
            if not isinstance(key, str) or key in KEYWORDS or key.startswith("x-"):
                continue
            close = get_close_matches(key, KEYWORDS, n=1, cutoff=0.7)
            if close:
                yield pointer(parts), key, close[0]
