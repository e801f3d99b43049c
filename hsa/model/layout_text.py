"""The literal text of a harness's own prompt layout (``layouts/<name>.j2``): what the Jinja
template writes besides what it is given, outside its ``{{ }}``, ``{% %}`` and ``{# #}``.

A layout may write names into that text ("call check_availability before book_room"), which the
model reads in every prompt as it reads a section's text: renames move them, verification looks
for stale ones, and the transforms that read the harness's prose read it (via
:meth:`hsa.model.harness.Harness.prose`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

# A Jinja expression, statement or comment, as the default delimiters write them.
_JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)


def layout_text(source: str) -> str:
    """The template's literal pieces, one per line."""
    return "\n".join(piece for piece in _JINJA.split(source) if piece.strip())


def rewrite_layout_text(source: str, rewrite: Callable[[str], str]) -> str:
    """``source`` with every literal piece through ``rewrite``; its Jinja code as written."""
    parts, last = [], 0
    for code in _JINJA.finditer(source):
        parts += [
            rewrite(source[last : code.start()]) if code.start() > last else "",
            code.group(0),
        ]
        last = code.end()
    parts.append(rewrite(source[last:]) if last < len(source) else "")
    out = "".join(parts)
    return source if out == source else out


# A string literal of Jinja code, quoted either way (no escapes: names hold none).
_STRING = re.compile(r"'([^'\\\n]*)'" + r'|"([^"\\\n]*)"')


def written_in_layout_code(layouts: Mapping[str, str], names) -> frozenset[str]:
    """Which of ``names`` the layouts' Jinja code writes as string literals
    (``{% if item.name == "get_logs_tail" %} (preferred first look){% endif %}``): the code
    compares by the name, and renamed, the text it guards would silently go."""
    literals = {
        a or b
        for source in layouts.values()
        for code in _JINJA.findall(source)
        for a, b in _STRING.findall(code)
    }
    return frozenset(n for n in names if n in literals)
