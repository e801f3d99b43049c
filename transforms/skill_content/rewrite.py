"""Applying a rewrite plan to a skill body: drops and reorders first, then rewording (phrases,
emphasis of negations), heading and list styles, list spacing and wrapping. Every rewrite is
checked against the body less its dropped examples with :func:`hsa.text.paraphrase.lost_invariants`;
a plan that does not fit the body, or would lose an invariant, is refused with the reason.

A plan is JSON only (it lives in a variant's params, so replay needs nothing else)::

    {"sections": [order], "lists": {"<list index>": [order]}, "examples": {"<section>": [order]},
     "headings": style, "list_style": style, "whitespace": style, "emphasis": style,
     "phrases": [[old, new], ...]}

every key optional; an order names kept parts in their new order, so a part left out is dropped.
"""

from __future__ import annotations

import re
from functools import lru_cache

import orjson

from hsa.errors import HsaError
from hsa.model.frozen import replace
from hsa.text.chinese import japanese, skip_chinese_match
from hsa.text.language import reads_english
from hsa.text.markdown import (
    ITEM,
    Block,
    Item,
    block_text,
    heading_lines,
    indent_of,
    is_blank,
    item_offset,
    parse,
    render,
    rewrap,
    set_list_markers,
)
from hsa.text.paraphrase import lost_invariants
from hsa.transforms.skill_content.options import (
    EMPHASIS_STYLES,
    HEADING_STYLES,
    LIST_STYLES,
    PHRASES,
    WHITESPACE_STYLES,
)
from hsa.transforms.skill_content.structure import (
    LABEL_COLON,
    LABEL_TEXT,
    Structure,
    example_context,
    free_segments,
    inline_blocks,
    phrases_in,
    sentence_ends,
    structure_of,
)

# A paragraph that starts with a short label ("Note:", "注意：", "Customer (angry):", French
# "Client : " with a space or no-break space before its colon) or with a link reference
# definition ("[handbook]: https://...") reads as fields, not as wrapped prose: rewrapping
# leaves it as written (joined, the lines would no longer be fields, nor definitions).
_LABEL = re.compile(rf"^\s*(?:\[[^\]\n]+\]:\s|[^\s:：]{LABEL_TEXT}{LABEL_COLON}(?!//))")
# A negation stands on its own: no letter of any script glued to it ("noté", "notá" are French
# and Spanish words, not "not" and a letter).
_NEGATION_WORDS = re.compile(
    r"(?<![^\W\d_])(?<![0-9_*'’\-])(do not|does not|cannot|can['’]t|don['’]t|"
    r"doesn['’]t|won['’]t|never|not)(?![^\W\d_])(?![0-9_*'’\-])"
    r"|(?<!\*)(不要|禁止|切勿|不得|不能|不可|严禁)(?!\*)",
    re.IGNORECASE,
)
_STRONG = re.compile(
    r"\*\*(?=[^\s*])([^*\n]*?[^\s*])\*\*|(?<![A-Za-z0-9_])__(?=[^\s_])"
    r"([^_\n]*?[^\s_])__(?![A-Za-z0-9_])"
)


def rewrite_body(body: str, plan: dict, names=()) -> str:
    """``body`` rewritten by ``plan`` (from :func:`~hsa.transforms.skill_content.plan.draw_plan`);
    HsaError if the plan does not fit the body or the rewrite would lose an invariant of the body
    outside dropped examples."""
    if not isinstance(plan, dict):
        raise HsaError(f"a rewrite plan must be an object, got {plan!r:.100}")
    # Memoised: sampling checks a plan with the same call that apply then makes, and the same
    # skill bodies recur in every episode of a harness.
    outcome = _rewrite_memo(body, orjson.dumps(plan, option=orjson.OPT_SORT_KEYS), tuple(names))
    if isinstance(outcome, HsaError):
        raise HsaError(outcome.reason)
    return outcome


@lru_cache(maxsize=8192)
def _rewrite_memo(body: str, plan_json: bytes, names: tuple) -> str | HsaError:
    plan = orjson.loads(plan_json)
    try:
        rewrite = _apply_plan(body, plan, names)
        drops = {
            key: {k: _in_place(v) for k, v in _orders(plan, key).items()}
            for key in ("lists", "examples")
        }
        reference = _reference(body, orjson.dumps(drops, option=orjson.OPT_SORT_KEYS), names)
        if isinstance(reference, HsaError):
            return reference
        lost = lost_invariants(reference, rewrite, names)
    except HsaError as exc:
        return exc
    if lost:
        return HsaError(f"the rewrite loses {lost[:5]}")
    return rewrite


@lru_cache(maxsize=8192)
def _reference(body: str, drops_json: bytes, names: tuple) -> str | HsaError:
    """What a rewrite is checked against: the body less its dropped examples, otherwise as
    written. Few plans differ in their drops, so most variants find it here."""
    try:
        return _apply_plan(body, orjson.loads(drops_json), names)
    except HsaError as exc:
        return exc


def _in_place(order):
    """An order's kept parts in their original order (malformed orders are left to refuse)."""
    if isinstance(order, list) and all(isinstance(i, int) for i in order):
        return sorted(order)
    return order


def _apply_plan(body: str, plan: dict, names) -> str:
    if not isinstance(plan, dict):
        raise HsaError(f"a rewrite plan must be an object, got {plan!r:.100}")
    blocks, trailing = parse(body)
    structure = structure_of(blocks)
    replacements = _replacements(plan)
    headings = _choice(plan, "headings", HEADING_STYLES)
    list_style = _choice(plan, "list_style", LIST_STYLES)
    whitespace = _choice(plan, "whitespace", WHITESPACE_STYLES)
    emphasis = _choice(plan, "emphasis", EMPHASIS_STYLES)
    blocks = _rearrange(blocks, structure, plan)
    structure = structure_of(blocks)
    if replacements or emphasis:
        in_japanese, in_english = body_languages(body, plan.get("document") or {})
        _reword(blocks, structure, names, replacements, emphasis, in_japanese, in_english)
    if headings:
        _restyle_headings(blocks, structure, headings)
    if list_style:
        style = {**LIST_STYLES["train"], **LIST_STYLES["heldout"]}[list_style]
        for block in blocks:
            if block.kind == "list":
                set_list_markers(block, *style)
    if whitespace:
        spacing, width = {**WHITESPACE_STYLES["train"], **WHITESPACE_STYLES["heldout"]}[whitespace]
        _restyle_whitespace(blocks, structure, spacing, width)
    return render(blocks, trailing)


# ---- reading a plan --------------------------------------------------------------------------


def _check_order(order, n: int, *, what: str, required=(), keep_order: bool = False) -> list[int]:
    if (
        not isinstance(order, list)
        or not order
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in order)
        or len(set(order)) != len(order)
        or not all(0 <= i < n for i in order)
    ):
        raise HsaError(f"{what}: {order!r} is not an order of some of its {n} parts")
    missing = sorted(set(required) - set(order))
    if missing:
        raise HsaError(f"{what}: parts {missing} may not be dropped")
    if keep_order and order != sorted(order):
        raise HsaError(f"{what}: its order carries meaning and may not change")
    return order


def _choice(plan: dict, key: str, table: dict) -> str | None:
    value = plan.get(key)
    known = [name for part in table.values() for name in part]
    if value is not None and value not in known:
        raise HsaError(f"plan {key} {value!r} is not one of {known}")
    return value


def _orders(plan: dict, key: str) -> dict:
    value = plan.get(key) or {}
    if not isinstance(value, dict):
        raise HsaError(f"plan {key} must map an index to an order, got {value!r:.100}")
    return value


def _replacements(plan: dict) -> dict[str, str]:
    out = {}
    for pair in plan.get("phrases") or ():
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(p, str) for p in pair)
        ):
            raise HsaError(f"plan phrases: {pair!r} is not an [old, new] pair")
        old, new = pair[0].lower(), pair[1]
        if (
            old not in PHRASES
            or new.lower() not in PHRASES
            or PHRASES[old][0] != PHRASES[new.lower()][0]
        ):
            raise HsaError(
                f"plan phrases: {pair[0]!r} -> {pair[1]!r} is not a pair from one synonym group"
            )
        out[old] = new
    return out


# ---- drops and reorders ----------------------------------------------------------------------


def _rearrange(blocks: list[Block], structure: Structure, plan: dict) -> list[Block]:
    """Blocks after the plan's drops and reorders; gaps stay with positions, not with blocks."""
    blocks = [
        replace(b, gap=list(b.gap), items=[Item(list(i.gap), list(i.lines)) for i in b.items])
        for b in blocks
    ]
    for key, order in _orders(plan, "lists").items():
        if not key.isdigit() or int(key) >= len(structure.lists):
            raise HsaError(f"plan lists: no list {key!r} (the body has {len(structure.lists)})")
        info = structure.lists[int(key)]
        block = blocks[info.block]
        n = len(block.items)
        _check_order(
            order,
            n,
            what=f"list {key}",
            required=[i for i in range(n) if i not in info.droppable],
            keep_order=not info.shuffle,
        )
        gaps = [item.gap for item in block.items]
        ends = sentence_ends(block.items)
        block.items = [
            Item(gaps[p] if p else [], block.items[i].lines) for p, i in enumerate(order)
        ]
        if ends is not None:
            _punctuate_places(block.items, [ends[i] for i in order], ends)
    dropped: set[int] = set()
    for key, order in _orders(plan, "examples").items():
        if not key.isdigit() or int(key) >= len(structure.sections):
            raise HsaError(f"plan examples: no section {key!r}")
        units = structure.sections[int(key)].units
        _check_order(order, len(units), what=f"examples of section {key}")
        moved = {
            units[slot]: replace(blocks[units[unit]], gap=blocks[units[slot]].gap)
            for slot, unit in enumerate(order)
        }
        dropped |= set(units[len(order) :])
        for k, block in moved.items():
            blocks[k] = block
    order = plan.get("sections")
    sections = structure.sections
    if order is not None:
        _check_order(order, len(sections), what="sections", required=range(len(sections)))
        fixed = [i for i in range(len(sections)) if i not in structure.movable]
        if not structure.reorder_sections or any(order[i] != i for i in fixed):
            raise HsaError(
                "plan sections: this body's sections keep their places (a section "
                "about steps or order, or text that points above or below)"
            )
    else:
        order = list(range(len(sections)))
    head = blocks[: structure.preamble.end]
    out = [b for k, b in enumerate(head) if k not in dropped]
    for slot, index in enumerate(order):
        section = sections[index]
        part = [
            b
            for k, b in enumerate(blocks[section.start : section.end], section.start)
            if k not in dropped
        ]
        part[0] = replace(part[0], gap=blocks[sections[slot].start].gap)
        out += part
    return out


def _punctuate_places(items: list[Item], own: list[str], ends: list[str]) -> None:
    """Moved items of a list written as one sentence (``ends``: its places' endings, from
    :func:`sentence_ends`; ``own``: the ending each moved item brought): each ends as its place
    did, the last as the list's last did (where items were dropped too)."""
    for k, (item, end) in enumerate(zip(items, own, strict=True)):
        place = ends[-1] if k == len(items) - 1 else ends[k]
        if place != end:
            line = item.lines[-1]
            item.lines = [*item.lines[:-1], line[: len(line) - len(end)] + place]


# ---- styles ----------------------------------------------------------------------------------


def _restyle_headings(blocks: list[Block], structure: Structure, style: str) -> None:
    for k, block in enumerate(blocks):
        if block.kind != "heading":
            continue
        title = k == 0 and structure.title is not None
        if (
            style == "bold"
            and not title
            and (block.level != structure.split_level or structure.deeper)
        ):
            continue
        lines = heading_lines(block, style, title)
        if lines is None:
            continue
        block.lines, block.style = lines, "bold" if lines[0].startswith("**") else style
        # Setext and bold headings must not run into the block before or after them.
        if block.style in ("setext", "bold") and k and not block.gap:
            block.gap = [""]
        if block.style == "bold" and k + 1 < len(blocks) and not blocks[k + 1].gap:
            blocks[k + 1].gap = [""]


def _restyle_whitespace(blocks: list[Block], structure: Structure, spacing, width) -> None:
    examples = example_context(structure)
    for k, block in enumerate(blocks):
        if block.kind == "list":
            single = all(not any(is_blank(line) for line in item.lines) for item in block.items)
            if spacing is not None and single:
                for i, item in enumerate(block.items):
                    item.gap = [] if spacing == "tight" or i == 0 else [""]
            if width is None or k in examples:
                continue
            for item in block.items:
                match = ITEM.match(item.lines[0])
                if match and match.group(0).strip() and item.lines[0][match.end() :].strip():
                    new = rewrap(item.lines, " " * item_offset(match), width)
                    if new is not None:
                        item.lines = new
        elif block.kind == "paragraph" and width is not None and k not in examples:
            if _LABEL.match(block.lines[0]) or indent_of(block.lines[0]):
                continue
            new = rewrap(block.lines, "", width)
            if new is not None:
                block.lines = new


# ---- rewording -------------------------------------------------------------------------------


def _emphasise(text: str, start: int, end: int, style: str) -> str:
    segment = text[start:end]
    if style == "plain":
        return _STRONG.sub(lambda m: m.group(1) or m.group(2), segment)

    def mark(match: re.Match) -> str:
        word = match.group(0)
        inside_strong = text.count("**", 0, start + match.start()) % 2 == 1
        if inside_strong:
            return word
        if style == "caps_negations" and word.isascii():
            return word.upper()
        if style == "italic_negations":
            return f"*{word}*"
        return f"**{word}**"

    return _NEGATION_WORDS.sub(mark, segment)


def body_languages(body: str, document: dict) -> tuple[bool, bool]:
    """(Japanese, English) as the phrase tables read a skill body: by its own text, and where
    that does not tell, by its harness's (``document``: a plan's, drawn from the harness, see
    hsa.transforms._language): a body of kanji and katakana alone in a Japanese harness is
    Japanese, a heading without a function word in a German body German."""
    return (
        _japanese_body(body) or bool(document.get("japanese")),
        reads_english(body, default=document.get("english", True)),
    )


@lru_cache(maxsize=4096)
def _japanese_body(body: str) -> bool:
    """Cached: every draw of a harness's plans reads the same bodies (reads_english caches its
    own counts)."""
    return japanese(body)


def block_english(block: Block, in_english: bool) -> bool:
    """Whether a block reads as English (hsa.text.language), by its own function words, else
    by its body's (``in_english``): where English phrases may be replaced."""
    return reads_english(block_text(block), default=in_english)


def skip_phrase(segment: str, match: re.Match, *, in_japanese: bool, in_english: bool) -> bool:
    """Whether a phrase found in ``segment`` must be left as written: a Chinese phrase that is
    no word of it or stands in a Japanese body (hsa.text.chinese), an English one in a block
    that does not read as English (German writes ``Details`` as English does) or written in
    capitals ("Write one SELECT" is no "Write one Choose")."""
    if not in_english and _LATIN.match(match.group(0)):
        return True
    written = match.group(0)
    if len(written) > 1 and written.isascii() and written.isupper():
        return True  # a keyword or an acronym (SQL's SELECT, HTTP's GET), not the word
    return skip_chinese_match(segment, match.start(), match.end(), in_japanese=in_japanese)


_LATIN = re.compile(r"[A-Za-z]")


def _rephrase(
    segment: str, replacements: dict[str, str], in_japanese: bool, in_english: bool
) -> str:
    pattern = phrases_in(segment, replacements)
    if pattern is None:
        return segment

    def swap(match: re.Match) -> str:
        new = replacements.get(match.group(0).lower())
        if new is None or skip_phrase(
            segment, match, in_japanese=in_japanese, in_english=in_english
        ):
            return match.group(0)
        return new[:1].upper() + new[1:] if match.group(0)[:1].isupper() else new

    return pattern.sub(swap, segment)


def _reword(
    blocks: list[Block],
    structure: Structure,
    names,
    replacements,
    emphasis,
    in_japanese: bool,
    in_english: bool,
) -> None:
    for k in inline_blocks(blocks, structure):
        block = blocks[k]
        english = block_english(block, in_english) if replacements else True
        parts = block.items if block.kind == "list" else [block]
        for part in parts:
            text = "\n".join(part.lines)
            out, last = [], 0
            for start, end in free_segments(text, names):
                out.append(text[last:start])
                segment = text[start:end]
                if replacements:
                    segment = _rephrase(segment, replacements, in_japanese, english)
                if emphasis:
                    segment = _emphasise(
                        text[:start] + segment, start, start + len(segment), emphasis
                    )
                out.append(segment)
                last = end
            out.append(text[last:])
            new = "".join(out)
            if new.count("\n") == text.count("\n"):
                part.lines = new.split("\n")
