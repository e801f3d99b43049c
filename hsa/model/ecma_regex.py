"""JSON Schema's regular expressions read as ECMA-262 reads them, not as Python's ``re`` does.

A schema's ``pattern`` (and ``patternProperties``) is an ECMA-262 regular expression, where
``\\d`` is ``[0-9]``, ``\\w`` is ``[A-Za-z0-9_]`` and ``\\b`` borders those; Python's ``re``
reads them over all of Unicode, so ``"２０２５-０５-０３"`` (full-width digits, as Japanese
data writes them) matched ``^\\d{4}-\\d{2}-\\d{2}$`` and a gold value the tool's backend refuses
loaded as correct. jsonschema uses ``re`` as it is; the validators here read ``pattern`` and
``patternProperties`` with ``re.ASCII``, and ``\\s`` (which ECMA-262 keeps Unicode: a no-break
or ideographic space is whitespace there) written out as ECMA-262's set. (Which keys
``additionalProperties`` counts as named by a pattern is still jsonschema's reading: a key
written in other digits than ASCII's is a key no tool has.)
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError

# ECMA-262's WhiteSpace and LineTerminator beyond ASCII's (\s under re.ASCII): what \s adds there.
_UNICODE_SPACES = "\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> re.Pattern:
    """``pattern`` compiled to match what ECMA-262 matches (see the module docstring)."""
    return re.compile(_ecma_spaces(pattern), re.ASCII)


def _ecma_spaces(pattern: str) -> str:
    """``pattern`` with each ``\\s`` and ``\\S`` written to hold ECMA-262's whitespace; inside a
    character class ``\\s`` takes the extra spaces beside it (``\\S`` there stays ASCII's: a set
    cannot be negated inside another)."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            escape = pattern[i : i + 2]
            if escape == "\\s":
                out.append(f"\\s{_UNICODE_SPACES}" if in_class else f"[\\s{_UNICODE_SPACES}]")
            elif escape == "\\S" and not in_class:
                out.append(f"[^\\s{_UNICODE_SPACES}]")
            else:
                out.append(escape)
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            out.append(c)
            # a "]" right after "[" or "[^" is a member, not the class's end
            rest = pattern[i + 1 :]
            lead = "^" if rest.startswith("^") else ""
            if rest[len(lead) :].startswith("]"):
                out.append(lead + "]")
                i += len(lead) + 1
            i += 1
            continue
        if c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any):
    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, properties: dict, instance: Any, schema: Any):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            if compile_pattern(pattern).search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


@lru_cache(maxsize=16)
def ecma_validator(cls: type) -> type:
    """``cls`` (a jsonschema validator class, of any draft) reading its patterns as ECMA-262."""
    return jsonschema.validators.extend(
        cls,
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
        },
    )
