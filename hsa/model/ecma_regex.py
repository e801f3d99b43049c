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
    """``pattern`` compiled to match what ECMA-262 matches (see the module docstring); a
    pattern Python cannot read raises :class:`re.error`."""
    return re.compile(_python_pattern(pattern), re.ASCII)


# What "." matches in ECMA-262: any character but its line terminators (Python's "." passes
# "\r", U+2028 and U+2029).
_ANY_BUT_LINE_TERMINATOR = "[^\n\r\u2028\u2029]"
# A named group and a reference to one, as ECMA-262 writes them (not a lookbehind, "(?<=").
_NAMED_GROUP = re.compile(r"\(\?<(?=[A-Za-z_])")
_NAMED_REFERENCE = re.compile(r"\\k<([A-Za-z_]\w*)>")


def _python_pattern(pattern: str) -> str:
    """``pattern`` as Python's ``re`` (with ``re.ASCII``) reads what ECMA-262 means by it:
    ``\\s`` and ``\\S`` hold ECMA-262's whitespace (inside a character class ``\\s`` takes the
    extra spaces beside it; ``\\S`` there stays ASCII's: a set cannot be negated inside
    another); ``$`` is the end of the text only (Python's also matches before a final line
    break, so "2025-06-30\\n" passed ``^\\d{4}-\\d{2}-\\d{2}$``); ``[]`` matches nothing and
    ``[^]`` any character; ``.`` any but a line terminator; ``(?<name>...)`` and ``\\k<name>``
    are Python's named groups."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            escape = pattern[i : i + 2]
            reference = _NAMED_REFERENCE.match(pattern, i)
            if reference and not in_class:
                out.append(f"(?P={reference.group(1)})")
                i = reference.end()
                continue
            if escape == "\\s":
                out.append(f"\\s{_UNICODE_SPACES}" if in_class else f"[\\s{_UNICODE_SPACES}]")
            elif escape == "\\S" and not in_class:
                out.append(f"[^\\s{_UNICODE_SPACES}]")
            else:
                out.append(escape)
            i += 2
            continue
        if in_class:
            in_class = c != "]"
            out.append(c)
            i += 1
            continue
        if c == "[":
            if pattern.startswith("[]", i):
                out.append("(?!)")  # the empty class: matches nothing
                i += 2
            elif pattern.startswith("[^]", i):
                out.append("[\\s\\S]")  # any character, a line break too
                i += 3
            else:
                in_class = True
                out.append(c)
                i += 1
            continue
        if c == "$":
            out.append("\\Z")
        elif c == ".":
            out.append(_ANY_BUT_LINE_TERMINATOR)
        elif _NAMED_GROUP.match(pattern, i):
            out.append("(?P<")
            i += 3
            continue
        else:
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


@lru_cache(maxsize=16)
def ecma_format_checker(cls: Any) -> jsonschema.FormatChecker:
    """``cls``'s format checker with ``regex`` read as :func:`compile_pattern` reads patterns:
    the meta-schema check refused ``(?<verb>...)``, a named group ECMA-262 writes so, since
    Python writes ``(?P<verb>...)``."""
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = dict(cls.FORMAT_CHECKER.checkers)
    checker.checks("regex", raises=re.error)(
        lambda value: not isinstance(value, str) or compile_pattern(value) is not None
    )
    return checker
