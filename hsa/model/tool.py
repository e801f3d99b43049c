"""Tools: OpenAI function schemas, with MCP tool objects accepted and normalised on load.

A :class:`Tool` is the function part of an OpenAI tool (``{"type": "function", "function": {...}}``):
its ``name``, ``description`` and ``parameters`` (a JSON Schema for an object). Keys the model does
not interpret (``strict``, MCP ``annotations``...) are kept in ``extra`` so nothing is lost on a
round trip.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jsonschema
import orjson

from hsa.errors import HarnessError
from hsa.model.ecma_regex import ecma_format_checker, ecma_validator
from hsa.model.memo import BoundedMemo
from hsa.model.schema import schema_nodes, unresolved_reference

_FUNCTION_KEYS = ("name", "description", "parameters")


@dataclass(frozen=True, slots=True)
class Tool:
    """One callable tool as the model sees it."""

    name: str
    description: str = ""
    parameters: dict = field(default_factory=lambda: {"type": "object", "properties": {}})
    extra: dict = field(default_factory=dict)

    @property
    def properties(self) -> dict:
        return self.parameters.get("properties") or {}

    @property
    def required(self) -> list[str]:
        return list(self.parameters.get("required") or [])

    def to_openai(self) -> dict:
        """The OpenAI / TRL tool object: ``{"type": "function", "function": {...}}``."""
        fn = {"name": self.name, "description": self.description, "parameters": self.parameters}
        fn.update(self.extra)
        return {"type": "function", "function": fn}

    def to_dict(self) -> dict:
        return self.to_openai()

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "tool") -> Tool:
        """Accept an OpenAI tool, a bare OpenAI function object, or an MCP tool (``inputSchema``)."""
        if not isinstance(data, dict):
            raise HarnessError(f"expected a JSON object, got {type(data).__name__}", field=where)
        if "type" in data and data["type"] != "function" and "name" not in data:
            raise HarnessError(
                f"a tool's type must be 'function', got {data['type']!r}", field=f"{where}.type"
            )
        if data.get("type") == "function" and "function" in data:
            fn = data["function"]
            if not isinstance(fn, dict):
                raise HarnessError("expected an object", field=f"{where}.function")
            where = f"{where}.function"
        else:
            fn = data
        schema_key = "parameters"  # where the schema stands in the file, for its errors
        if "inputSchema" in fn:  # MCP: {"name", "description", "inputSchema", "annotations"...}
            schema_key = "inputSchema"
            fn = dict(fn)
            if "parameters" in fn:
                raise HarnessError(
                    "has both 'parameters' and MCP 'inputSchema'; keep one", field=where
                )
            fn["parameters"] = fn.pop("inputSchema")
        for key in fn:
            if (meant := _misspelt(key)) is not None:
                raise HarnessError(
                    f"{key!r} is no key of a tool (did you mean {meant!r}?): the tool would "
                    f"load without its {meant}",
                    field=f"{where}.{key}",
                )
        name = fn.get("name")
        if not isinstance(name, str) or not name.strip() or any(c.isspace() for c in name):
            raise HarnessError(
                f"tool name must be a non-empty string without spaces, got {name!r}",
                field=f"{where}.name",
            )
        if (
            not name.strip(".")
            or name.startswith("/")
            or "\\" in name
            or any(unicodedata.category(c) == "Cc" for c in name)
        ):
            # "billing/refund" (an MCP namespace) stays; a path of its own names no function
            raise HarnessError(
                f"tool name {name!r} is a path or holds a control character, no function's name",
                field=f"{where}.name",
            )
        description = fn.get("description", "")
        if not isinstance(description, str):
            raise HarnessError("description must be a string", field=f"{where}.description")
        parameters = fn.get("parameters", {"type": "object", "properties": {}})
        check_parameters_schema(parameters, where=f"{where}.{schema_key}")
        extra = {k: v for k, v in fn.items() if k not in _FUNCTION_KEYS}
        return cls(name=name, description=description, parameters=parameters, extra=extra)


# Keys of the tool objects hsa reads besides its own (OpenAI's ``strict``; MCP's): kept as they
# are (``Tool.extra``), like any key no key of a tool's nearly spells.
_KNOWN_EXTRA_KEYS = frozenset(
    {"strict", "title", "annotations", "outputSchema", "_meta", "icons", "type"}
)


def _misspelt(key: Any) -> str | None:
    """The key of a tool that ``key`` nearly spells and is not (``paramters``, ``descripton``),
    or None. Any other key is kept as the tool's own; a misspelt one would silently leave the
    tool without its parameters or description."""
    if not isinstance(key, str) or key in _FUNCTION_KEYS or key in _KNOWN_EXTRA_KEYS:
        return None
    from difflib import get_close_matches

    close = get_close_matches(key, (*_FUNCTION_KEYS, "inputSchema"), n=1, cutoff=0.8)
    return close[0] if close else None


@lru_cache(maxsize=65536)
def _schema_problem(schema_json: bytes) -> tuple[str, str] | None:
    """(message, path) of the first meta-schema violation, or None. Cached by content: the same
    parameter schemas recur across thousands of episodes, and the meta-schema check is slow."""
    schema = orjson.loads(schema_json)
    for parts, node in schema_nodes(schema):
        unreadable = _unreadable_pattern(node)
        if unreadable is not None:
            return unreadable, _field_path(parts) + ".pattern"
    # Any: the protocol jsonschema declares leaves out check_schema's format_checker
    validator: Any = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    try:
        validator.check_schema(schema, format_checker=ecma_format_checker(validator))
    except jsonschema.SchemaError as exc:
        path = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in exc.path)
        return exc.message, path
    unresolved = unresolved_reference(schema)
    if unresolved is not None:
        parts, ref = unresolved
        path = _field_path(parts) + ".$ref"
        # A reference that resolves nowhere fails every validation that reaches it: said once,
        # here, instead of by whichever value first meets it.
        return (
            f"$ref {ref!r} names no sub-schema of these parameters (only references inside "
            "them, such as '#/$defs/<name>', resolve: hsa fetches no schema)",
            path,
        )
    for parts, node in schema_nodes(schema):
        missing = _required_nowhere(node) if parts else []  # the root's is said apart
        if missing:
            path = _field_path(parts) + ".required"
            return (
                f"required {missing} names no property of this object, which takes no other "
                "(additionalProperties: false): no value of it is valid",
                path,
            )
        closed = _enum_closed(node)
        if closed is not None:
            return closed, _field_path(parts) + ".enum"
    return None


# A Unicode property escape (``\p{L}``, ``\P{Lu}``): ECMA-262 with the u flag, which Python's
# re cannot read.
_PROPERTY_ESCAPE = re.compile(r"\\[pP]\{[^}]*\}")


# Syntax of Python's re that ECMA-262 has not (an inline flag, a Python named group or
# reference, \A and \Z): read by Python, such a pattern validates calls that a JSON Schema
# validator of any other language refuses, or is itself refused there.
_PYTHON_ONLY = re.compile(r"\(\?[aiLmsux-]+[):]|\(\?P[<=>]|(?<!\\)\\[AZ]")


def _unreadable_pattern(node: Any) -> str | None:
    """Why ``node``'s ``pattern`` cannot be read as JSON Schema's ECMA-262 pattern: a Unicode
    property escape (which hsa cannot read), or syntax of Python's alone."""
    pattern = node.get("pattern") if isinstance(node, dict) else None
    if not isinstance(pattern, str):
        return None
    found = _PROPERTY_ESCAPE.search(pattern)
    if found is not None:
        return (
            f"pattern {pattern!r} writes {found.group(0)}, a Unicode property escape, which hsa "
            "cannot read (it reads patterns with Python's re): write the characters it means "
            "as a class instead (a letter of French names: [A-Za-zÀ-ÖØ-öø-ÿ])"
        )
    found = _PYTHON_ONLY.search(pattern)
    if found is not None:
        return (
            f"pattern {pattern!r} writes {found.group(0)}, which is Python's regex syntax, not "
            "ECMA-262's (JSON Schema's): an inline flag, (?P<name>...) or \\A and \\Z; write "
            "it as ECMA-262 does ((?<name>...), ^ and $, a class for case)"
        )
    return None


# JSON Schema's types, by the values of each (a bool is no integer, an integer is a number).
_OF_TYPE = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def _enum_closed(node: dict) -> str | None:
    """Why ``node``'s ``enum`` lets no value through, or None: an empty list, or values none of
    which is of the node's type (``"enum": [1, 2, 3]`` on a string). Every call that gives the
    parameter is then refused, and every episode that uses it rejected one by one, where the
    tool file is the mistake."""
    enum = node.get("enum")
    if not isinstance(enum, list):
        return None
    if not enum:
        return "enum is empty: no value is valid, so no call could give it and be correct"
    kinds = node.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(kinds, list) or not all(k in _OF_TYPE for k in kinds):
        return None
    if any(_OF_TYPE[k](v) for v in enum for k in kinds):
        return None
    return (
        f"enum {enum!r} has no value of type {' or '.join(kinds)}: no value is valid, so no "
        "call could give it and be correct"
    )


def _field_path(parts: list[str]) -> str:
    """A schema node's path as an error's field writes it (``.properties.filter``, ``[0]``)."""
    return "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in parts)


def _required_nowhere(node: dict) -> list[str]:
    """The names a closed object requires but does not define: ``additionalProperties: false``
    refuses every key its own ``properties`` (or ``patternProperties``) do not name, whatever
    its branches say; beside a ``$ref`` (which draft 7 reads alone) it may not apply."""
    if node.get("additionalProperties") is not False or any(
        key in node for key in ("patternProperties", "$ref")
    ):
        return []
    properties = node.get("properties") or {}
    required = node.get("required")
    return [n for n in required if n not in properties] if isinstance(required, list) else []


@lru_cache(maxsize=8192)
def _validator(schema_json: bytes) -> jsonschema.protocols.Validator:
    schema = orjson.loads(schema_json)
    draft = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return ecma_validator(draft)(schema)


def schema_validator(schema: Any) -> jsonschema.protocols.Validator:
    """A validator for a (meta-checked) JSON Schema, cached by content: the same schemas recur in
    every episode and every variant, and building a validator is slow."""
    return _validator(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))


# Validators of sub-schemas by (root, sub-schema) objects: every episode under a harness checks
# its gold against the same tool objects, and finding a validator by content serialises the
# whole parameters each time. The entry holds both objects, so while it is remembered their ids
# are theirs; schemas are never changed in place (hsa.model.schema).
_WITHIN: BoundedMemo[tuple[Any, Any, jsonschema.protocols.Validator]] = BoundedMemo(4096)


def validator_within(root: Any, schema: Any) -> jsonschema.protocols.Validator:
    """A validator of ``schema``, a sub-schema of ``root`` (one parameter of a tool's
    parameters): its references resolve against ``root``, as they do when the whole is
    validated."""

    def make() -> tuple[Any, Any, jsonschema.protocols.Validator]:
        validator = schema_validator(root)
        return root, schema, validator if schema is root else validator.evolve(schema=schema)

    return _WITHIN.get((id(root), id(schema)), make)[2]


def schema_problem(value: Any, schema: Any, root: Any = None) -> str | None:
    """Why ``value`` does not validate against ``schema`` (a sub-schema of ``root``, when
    given) (jsonschema's errors, most relevant first, each with its path inside the value; at
    most three), or None when it does."""
    return validation_problem(value, validator_within(schema if root is None else root, schema))


def validation_problem(value: Any, validator: jsonschema.protocols.Validator) -> str | None:
    """:func:`schema_problem` with the schema's validator at hand."""
    if validator.is_valid(value):
        return None
    errors = sorted(validator.iter_errors(value), key=jsonschema.exceptions.relevance)
    shown = []
    for error in errors[:3]:
        path = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        shown.append(f"{path.lstrip('.')}: {error.message}" if path else error.message)
    return "; ".join(shown) + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else "")


# The schemas most tools have, which a few lines can check: an object of named properties, each a
# string, integer, number or boolean, maybe with an enum or bounds. Keywords that say nothing
# about validity pass; any other keyword leaves the schema to jsonschema.
_SIMPLE_OBJECT_KEYS = frozenset({"type", "properties", "required", "additionalProperties"})
_SIMPLE_VALUE_KEYS = frozenset({"type", "enum", "minimum", "maximum"})
_ANNOTATIONS = frozenset({"description", "title", "default", "examples"})
_SIMPLE_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


def _simple_value(schema: Any) -> Callable[[Any], bool] | None:
    if not isinstance(schema, dict) or not set(schema) - _ANNOTATIONS <= _SIMPLE_VALUE_KEYS:
        return None
    kind = schema.get("type")
    types = _SIMPLE_TYPES.get(kind) if isinstance(kind, str) else None
    enum, low, high = schema.get("enum"), schema.get("minimum"), schema.get("maximum")
    numeric = kind in ("integer", "number")
    bounds_ok = all(b is None or (numeric and type(b) in (int, float)) for b in (low, high))
    if types is None or not bounds_ok or (enum is not None and not isinstance(enum, list)):
        return None  # bounds on strings or booleans (which jsonschema ignores) included

    def accepts(value: Any) -> bool:
        # Exact types: jsonschema also takes 1.0 as an integer and tells True from 1 in enums,
        # so anything outside the plainest cases is left to it.
        if type(value) not in types:
            return False
        if enum is not None and not any(type(e) is type(value) and e == value for e in enum):
            return False
        return (low is None or value >= low) and (high is None or value <= high)

    return accepts


def simple_acceptor(schema: Any) -> Callable[[Any], bool] | None:
    """A quick test that says True only of values ``schema`` certainly accepts, for the plainest
    object schemas (None for any other schema); a False means "ask jsonschema", never "invalid".
    Verification checks every recorded call of every variant, and jsonschema takes about 25
    microseconds a call where this takes one or two."""
    if (
        not isinstance(schema, dict)
        or "$schema" in schema  # another draft: its validator decides
        or not set(schema) - _ANNOTATIONS <= _SIMPLE_OBJECT_KEYS
        or schema.get("type") != "object"
        or schema.get("additionalProperties", True) not in (True, False)
    ):
        return None
    properties, required = schema.get("properties", {}), schema.get("required", [])
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    checks = {name: _simple_value(sub) for name, sub in properties.items()}
    if any(check is None for check in checks.values()):
        return None
    closed = schema.get("additionalProperties") is False

    def accepts(value: Any) -> bool:
        if type(value) is not dict or any(name not in value for name in required):
            return False
        for name, item in value.items():
            check = checks.get(name)
            if check is None:
                if closed:
                    return False
            elif not check(item):
                return False
        return True

    return accepts


def check_parameters_schema(schema: Any, *, where: str) -> None:
    """Raise unless ``schema`` is a valid JSON Schema (meta-schema check) describing an object."""
    if not isinstance(schema, dict):
        raise HarnessError(
            f"parameters must be a JSON Schema object, got {type(schema).__name__}", field=where
        )
    problem = _schema_problem(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))
    if problem is not None:
        message, path = problem
        raise HarnessError(f"not a valid JSON Schema: {message}", field=f"{where}{path}")
    if "$ref" in schema and "properties" not in schema:
        # The scorer, the gold checks and every transform read a tool's arguments from the
        # top-level properties: a schema that is a reference to them has none.
        raise HarnessError(
            "the parameters are a reference to an object schema: write the object's "
            "properties at the top (its definitions may stay in $defs)",
            field=f"{where}.$ref",
        )
    if schema.get("type", "object") != "object":
        raise HarnessError(
            f"parameters must describe an object (type 'object'), got type {schema.get('type')!r}",
            field=where,
        )
    properties = schema.get("properties") or {}
    undefined = [name for name in schema.get("required") or () if name not in properties]
    if undefined:
        # A call's argument the properties do not define is unexpected (the scorer judges as
        # BFCL does), so a call could never both give a required one and pass.
        raise HarnessError(
            f"required {undefined} names no parameter of properties: no call could give it and "
            f"be correct (a typo, or a property left out?)",
            field=f"{where}.required",
        )
