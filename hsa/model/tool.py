"""Tools: OpenAI function schemas, with MCP tool objects accepted and normalised on load.

A :class:`Tool` is the function part of an OpenAI tool (``{"type": "function", "function": {...}}``):
its ``name``, ``description`` and ``parameters`` (a JSON Schema for an object). Keys the model does
not interpret (``strict``, MCP ``annotations``...) are kept in ``extra`` so nothing is lost on a
round trip.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jsonschema
import orjson

from hsa.errors import HarnessError

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
        if data.get("type") == "function" and "function" in data:
            fn = data["function"]
            if not isinstance(fn, dict):
                raise HarnessError("expected an object", field=f"{where}.function")
            where = f"{where}.function"
        else:
            fn = data
        if "inputSchema" in fn:  # MCP: {"name", "description", "inputSchema", "annotations"...}
            fn = dict(fn)
            if "parameters" in fn:
                raise HarnessError(
                    "has both 'parameters' and MCP 'inputSchema'; keep one", field=where
                )
            fn["parameters"] = fn.pop("inputSchema")
        name = fn.get("name")
        if not isinstance(name, str) or not name.strip() or any(c.isspace() for c in name):
            raise HarnessError(
                f"tool name must be a non-empty string without spaces, got {name!r}",
                field=f"{where}.name",
            )
        description = fn.get("description", "")
        if not isinstance(description, str):
            raise HarnessError("description must be a string", field=f"{where}.description")
        parameters = fn.get("parameters", {"type": "object", "properties": {}})
        check_parameters_schema(parameters, where=f"{where}.parameters")
        extra = {k: v for k, v in fn.items() if k not in _FUNCTION_KEYS}
        return cls(name=name, description=description, parameters=parameters, extra=extra)


@lru_cache(maxsize=65536)
def _schema_problem(schema_json: bytes) -> tuple[str, str] | None:
    """(message, path) of the first meta-schema violation, or None. Cached by content: the same
    parameter schemas recur across thousands of episodes, and the meta-schema check is slow."""
    schema = orjson.loads(schema_json)
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in exc.path)
        return exc.message, path
    return None


@lru_cache(maxsize=8192)
def _validator(schema_json: bytes) -> jsonschema.protocols.Validator:
    schema = orjson.loads(schema_json)
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(
        schema
    )


def schema_validator(schema: Any) -> jsonschema.protocols.Validator:
    """A validator for a (meta-checked) JSON Schema, cached by content: the same schemas recur in
    every episode and every variant, and building a validator is slow."""
    return _validator(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))


def schema_problem(value: Any, schema: Any) -> str | None:
    """Why ``value`` does not validate against ``schema`` (jsonschema's errors, most relevant
    first, each with its path inside the value; at most three), or None when it does."""
    return validation_problem(value, schema_validator(schema))


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
    if schema.get("type", "object") != "object":
        raise HarnessError(
            f"parameters must describe an object (type 'object'), got type {schema.get('type')!r}",
            field=where,
        )
