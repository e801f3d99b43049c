"""Markdown blocks that render back to the exact text they were read from, and the restyling
operations on them that keep a document's meaning (heading styles, list markers, wrapping).

:func:`parse` cuts a document into blocks (headings, lists of items, paragraphs, fenced code,
thematic breaks, and opaque blocks such as tables, quotes, HTML or indented code), each holding
the blank lines before it; :func:`render` of the result gives the input back byte for byte. Only
what reordering and restyling need is modelled, after CommonMark: a list item's continuation lines
are those indented to its content, a bullet list and a numbered list with another delimiter are
different lists, and a body whose only heading is its title may use bold lines as section
headings. Anything not understood is an opaque block, left as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from hsa.text.paraphrase import code_and_quote_spans

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|$)[ \t]*(.*?)(?:[ \t]+#+)?[ \t]*$")
ITEM = re.compile(r"^( {0,3})([-*+]|[0-9]{1,9}[.)])([ \t]+|$)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_BOLD_LINE = re.compile(r"^(\*\*|__)([^*_\n]*[^*_\s])\1[ \t]*$")


@cache  # a handful of markers: ``` ```` ~~~
def fence_close(marker: str) -> re.Pattern[str]:
    """The line that closes a fence opened with ``marker`` (its character, at least as many)."""
    return re.compile(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")


# A word that would start a new block at the start of a line: never the first word of a
# wrapped line or of a heading written as setext or bold.
_BLOCK_START = re.compile(r"^(#{1,6}|[-*+]|[0-9]{1,9}[.)]|=+|-+)$|^(>|\||<|```|~~~)")
_HARD_BREAK = re.compile(r"( {2,}|\\)$")
_CJK_EDGE = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")


def is_blank(line: str) -> bool:
    return not line.strip(" \t")


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


@dataclass
class Item:
    """One list item: its lines, and the blank lines before it (none for the first)."""

    gap: list[str]
    lines: list[str]


@dataclass
class Block:
    kind: str  # heading | list | paragraph | fence | rule | opaque
    gap: list[str]  # blank lines before the block
    lines: list[str] = field(default_factory=list)
    level: int = 0  # headings
    text: str = ""  # headings
    style: str = ""  # headings: atx | setext | bold
    items: list[Item] = field(default_factory=list)  # lists
    ordered: bool = False  # lists

    def render(self) -> list[str]:
        if self.kind == "list":
            out = []
            for i, item in enumerate(self.items):
                out += (item.gap if i else []) + item.lines
            return out
        return self.lines


def item_offset(match: re.Match) -> int:
    """The column where the content of the item whose first line ``match`` (of :data:`ITEM`)
    matched starts: continuation lines indented this far belong to the item."""
    pad = len(match.group(3).expandtabs(4))
    return len(match.group(1)) + len(match.group(2)) + (pad if 1 <= pad <= 4 else 1)


def _same_list(first: re.Match, other: re.Match) -> bool:
    a, b = first.group(2), other.group(2)
    return a == b if a in "-*+" else b not in "-*+" and a[-1] == b[-1]


def parse(text: str) -> tuple[list[Block], list[str]]:
    """Blocks (each with the blank lines before it) and the blank lines at the end; rendering
    them back gives ``text`` exactly."""
    lines = text.split("\n")
    blocks: list[Block] = []
    gap: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if is_blank(line):
            gap.append(line)
            i += 1
            continue
        fence = FENCE.match(line)
        item = ITEM.match(line)
        if fence:
            marker = fence.group(1)
            j = i + 1
            close = fence_close(marker)
            while j < n and not close.match(lines[j]):
                j += 1
            j = min(j + 1, n)
            block = Block("fence", gap, lines[i:j])
        elif ATX.match(line):
            atx = ATX.match(line)
            j = i + 1
            block = Block(
                "heading", gap, [line], level=len(atx.group(1)), text=atx.group(2), style="atx"
            )
        elif _RULE.match(line):
            j = i + 1
            block = Block("rule", gap, [line])
        elif item:
            block, j = _parse_list(lines, i, item, gap)
        elif indent_of(line.expandtabs(4)) >= 4:
            j = i + 1
            while j < n and not is_blank(lines[j]) and indent_of(lines[j].expandtabs(4)) >= 4:
                j += 1
            block = Block("opaque", gap, lines[i:j])
        else:
            block, j = _parse_paragraph(lines, i, gap)
        blocks.append(block)
        gap = []
        i = j
    _mark_bold_headings(blocks)
    return blocks, gap


def _parse_paragraph(lines: list[str], i: int, gap: list[str]) -> tuple[Block, int]:
    j, n = i + 1, len(lines)
    while j < n:
        line = lines[j]
        if _SETEXT.match(line):
            if j == i + 1:
                level = 1 if line.strip()[0] == "=" else 2
                return Block(
                    "heading",
                    gap,
                    lines[i : j + 1],
                    level=level,
                    text=lines[i].strip(),
                    style="setext",
                ), j + 1
            return Block("opaque", gap, lines[i : j + 1]), j + 1  # a multi-line setext heading
        if (
            is_blank(line)
            or FENCE.match(line)
            or ATX.match(line)
            or _RULE.match(line)
            or ITEM.match(line)
        ):
            break
        j += 1
    first = lines[i].lstrip(" ")
    kind = "opaque" if first[:1] in ("<", "|", ">") else "paragraph"
    return Block(kind, gap, lines[i:j]), j


def _parse_list(lines: list[str], i: int, first: re.Match, gap: list[str]) -> tuple[Block, int]:
    items = [Item([], [lines[i]])]
    offset = item_offset(first)
    j, n = i + 1, len(lines)
    while j < n:
        line = lines[j]
        if is_blank(line):
            k = j
            while k < n and is_blank(lines[k]):
                k += 1
            if k == n:
                break
            following = lines[k]
            match = ITEM.match(following)
            if match and not _RULE.match(following) and indent_of(following) < offset:
                if not _same_list(first, match):
                    break
                items.append(Item(lines[j:k], [following]))
                offset = item_offset(match)
                j = k + 1
                continue
            if indent_of(following.expandtabs(4)) >= offset:
                items[-1].lines.extend(lines[j : k + 1])
                j = k + 1
                continue
            break
        match = ITEM.match(line)
        if match and not _RULE.match(line) and indent_of(line) < offset:
            if not _same_list(first, match):
                break
            items.append(Item([], [line]))
            offset = item_offset(match)
            j += 1
            continue
        if indent_of(line) < offset and (FENCE.match(line) or ATX.match(line) or _RULE.match(line)):
            break
        items[-1].lines.append(line)
        j += 1
    return Block("list", gap, items=items, ordered=first.group(2)[-1] in ".)"), j


def _mark_bold_headings(blocks: list[Block]) -> None:
    """A body without headings (besides its title) may use bold lines as section headings."""
    start = 1 if blocks and blocks[0].kind == "heading" and blocks[0].level == 1 else 0
    if any(b.kind == "heading" for b in blocks[start:]):
        return
    for block in blocks[start:]:
        match = _BOLD_LINE.match(block.lines[0]) if block.kind == "paragraph" else None
        if match and len(block.lines) == 1:
            block.kind, block.level, block.text, block.style = "heading", 2, match.group(2), "bold"


def render(blocks: list[Block], trailing: list[str]) -> str:
    out: list[str] = []
    for block in blocks:
        out += block.gap + block.render()
    return "\n".join(out + trailing)


def block_text(block: Block) -> str:
    return "\n".join(block.render())


def item_text(item: Item) -> str:
    """An item's text on one line, without its marker."""
    match = ITEM.match(item.lines[0])
    return " ".join(
        [item.lines[0][match.end() :] if match else item.lines[0]]
        + [line.strip() for line in item.lines[1:]]
    )


# ---- restyling -------------------------------------------------------------------------------


def heading_lines(block: Block, style: str, title: bool) -> list[str] | None:
    """The heading ``block`` written in ``style`` (atx, atx_closed, setext or bold), or None when
    the style cannot carry it (a bold title, or a bold heading with emphasis of its own). Text
    that would read as another block in setext or bold falls back to ATX."""
    text = block.text
    safe = bool(text) and not _BLOCK_START.match(text.split(" ")[0]) and "\n" not in text
    if style == "atx" or (style in ("setext", "bold") and not safe):
        return ["#" * block.level + " " + text]
    if style == "atx_closed":
        return ["#" * block.level + " " + text + " " + "#" * block.level]
    if style == "setext":
        if block.level > 2:
            return ["#" * block.level + " " + text]
        return [text, ("=" if block.level == 1 else "-") * max(3, len(text))]
    if style == "bold":
        if title or "*" in text or "_" in text:
            return None
        return [f"**{text}**"]
    return None


def set_list_markers(block: Block, bullet: str, pad: int, delimiter: str) -> None:
    """Rewrite a list's markers in place: ``bullet`` and ``pad`` spaces for a bullet list, the
    numbers with ``delimiter`` for a numbered one; continuation lines move with the content.
    Lists whose items pad their content by more than four columns are left alone."""
    for item in block.items:
        match = ITEM.match(item.lines[0])
        if match is None or len(match.group(3).expandtabs(4)) > 4:
            return
    for item in block.items:
        match = ITEM.match(item.lines[0])
        indent, marker, space = match.groups()
        rest = item.lines[0][match.end() :]
        if block.ordered:
            new_marker, new_space = marker[:-1] + delimiter, space
        else:
            new_marker, new_space = bullet, " " * pad if rest else ""
        old, new = item_offset(match), len(indent) + len(new_marker) + max(len(new_space), 1)
        lines = [indent + new_marker + new_space + rest]
        for line in item.lines[1:]:
            if not is_blank(line) and indent_of(line) >= old:
                line = " " * (new - old) + line if new > old else line[old - new :]
            lines.append(line)
        item.lines = lines


def _join(lines: list[str]) -> str:
    """Lines joined by a space, or by nothing between two CJK characters (which a line break
    between them does not separate either)."""
    text = lines[0].rstrip(" \t")
    for line in lines[1:]:
        line = line.strip(" \t")
        if _CJK_EDGE.match(text[-1:] or "a") and _CJK_EDGE.match(line[:1] or "a"):
            text += line
        else:
            text += " " + line
    return text


def _unbroken(text: str) -> list[bool]:
    """For each character of ``text``, whether a line may not break there: inside inline code
    (`type: lint`, whose spaces are code) or a quoted string ("no known interactions", which a
    model should read whole), found as the paraphrase invariants find them: code first, then
    quotes in what is left, so that a quote inside code pairs with nothing outside it."""
    inside = [False] * len(text)
    for start, end in code_and_quote_spans(text):
        inside[start:end] = [True] * (end - start)
    return inside


def _wrap(head: str, text: str, prefix: str, width: int) -> list[str]:
    """``head`` (a list marker, or nothing) and ``text`` (one line) broken at spaces into lines
    of at most ``width`` where possible; never before a word that would start a new block, nor
    inside inline code or a quoted string."""
    inside = _unbroken(text)
    words, start = [], 0
    for i, ch in enumerate(text):
        if ch == " " and not inside[i]:
            words.append(text[start:i])
            start = i + 1
    words.append(text[start:])
    lines, current = [], head + words[0]
    for word in words[1:]:
        if (
            len(current) + 1 + len(word) > width
            and word
            and current.strip()
            and not _BLOCK_START.match(word)
        ):
            lines.append(current)
            current = prefix + word
        else:
            current += " " + word
    return lines + [current]


def rewrap(lines: list[str], prefix: str, width: int) -> list[str] | None:
    """One paragraph's or item's lines unwrapped (width 0) or rewrapped at ``width``, lines after
    the first starting with ``prefix``; None when the lines are not plain wrapped text (hard
    breaks, blank lines, nested blocks, tabs)."""
    if any(is_blank(line) or _HARD_BREAK.search(line) for line in lines[:-1]):
        return None
    for line in lines[1:]:
        stripped = line.strip(" \t")
        if (
            ITEM.match(stripped)
            or FENCE.match(stripped)
            or ATX.match(stripped)
            or _BLOCK_START.match(stripped.split(" ")[0])
            or indent_of(line) >= len(prefix) + 4
            or "\t" in line
        ):
            return None
    joined = _join(lines)
    if width == 0:
        return [joined]
    head = joined[: len(joined) - len(joined.lstrip(" "))]
    marker = ITEM.match(joined)
    if marker:
        head = joined[: marker.end()]
    return _wrap(head, joined[len(head) :], prefix, width)
