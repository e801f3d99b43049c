"""Skill content: reword and restyle skill bodies (Markdown) without changing what they require.

Changes: the order of sections and of unordered bullet lists where order carries no meaning,
header styles (ATX ``##``, closed ATX, setext, a bold line), list markers, emphasis of negations,
line wrapping and list spacing, phrases from curated synonym tables (English and Chinese), and the
order and number of examples (sections and bullets marked as examples / 示例 / 例如); or, with
``skill_content_llm_paraphrase``, a paraphrase from any OpenAI-compatible endpoint. Every message
that carries a body (the ``tool`` result answering a skill-loader call for that skill, when it is
the body verbatim) carries the new body, so the trajectory stays consistent.
Keeps: every number, quoted string, code span, identifier (tool, parameter, skill and hook names)
and negation of the body outside dropped examples (checked on every rewrite with
:func:`hsa.text.paraphrase.lost_invariants`), every non-example rule, the title first, numbered steps
and anything in a section about steps or order (步骤, 流程, 顺序) in their order, lists whose items
refer to each other ("then", "above", 然后...) in their order, at least one example of each
example section, skill ids, descriptions, kinds and allowed tools, and every message and gold turn
other than the carried bodies.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from hsa.model.frozen import replace
from functools import lru_cache
from typing import Literal

import orjson

from hsa.model.episode import Episode
from hsa.errors import HsaError
from hsa.model.harness import Harness
from hsa.text.paraphrase import Endpoint, ParaphraseUnavailable, invariant_spans, llm_paraphrase
from hsa.text.paraphrase import lost_invariants, normalise_space
from hsa.augment.registry import register
from hsa.augment.transform import Share, Transform

Split = Literal["train", "heldout"]

# ---- option spaces (train and held-out parts never overlap) ----------------------------------

HEADING_STYLES: dict[str, tuple[str, ...]] = {
    "train": ("atx", "setext"),
    "heldout": ("bold", "atx_closed"),
}
# name -> (bullet, spaces after the bullet, delimiter of numbered items)
LIST_STYLES: dict[str, dict[str, tuple[str, int, str]]] = {
    "train": {"dash": ("-", 1, "."), "star": ("*", 1, ".")},
    "heldout": {"plus": ("+", 1, ")"), "dash_wide": ("-", 3, ")"), "star_wide": ("*", 3, ")")},
}
# name -> (list spacing, wrapping): spacing "tight" | "loose" | None (keep); wrapping None (keep),
# 0 (one line per paragraph or item) or a width to rewrap at.
WHITESPACE_STYLES: dict[str, dict[str, tuple[str | None, int | None]]] = {
    "train": {"tight": ("tight", None), "unwrap": (None, 0), "wrap_100": (None, 100)},
    "heldout": {"loose": ("loose", None), "wrap_64": (None, 64), "loose_unwrap": ("loose", 0)},
}
EMPHASIS_STYLES: dict[str, tuple[str, ...]] = {
    "train": ("plain", "strong_negations"),
    "heldout": ("caps_negations", "italic_negations"),
}
# Interchangeable phrases. A phrase found in a body (from either part) is replaced by another
# phrase of its group from the drawn part. No phrase holds a negation, a digit, a quote, a code
# span or Markdown punctuation (tested), so a substitution cannot touch an invariant. Words that
# name harness concepts ("reply", "skill", "tool", 回复) are left out on purpose: "reply skill" is
# a skill kind, not wording.
SKILL_PHRASES: tuple[dict[str, tuple[str, ...]], ...] = (
    {"train": ("exactly as", "precisely as"), "heldout": ("just as", "word for word as")},
    {"train": ("make sure", "ensure"), "heldout": ("be sure",)},
    {"train": ("in one sentence", "in a single sentence"), "heldout": ("in just one sentence",)},
    {"train": ("at most",), "heldout": ("at the most",)},
    {"train": ("for example", "for instance"), "heldout": ("e.g.", "to give an example")},
    {"train": ("the viewer", "the audience member"), "heldout": ("the customer", "the shopper")},
    {"train": ("briefly", "concisely"), "heldout": ("in brief", "succinctly")},
    {"train": ("quickly", "promptly"), "heldout": ("swiftly", "speedily")},
    {"train": ("in parallel", "at the same time"), "heldout": ("concurrently", "simultaneously")},
    {"train": ("one after the other", "in sequence"), "heldout": ("sequentially", "in turn")},
    {"train": ("politely", "courteously"), "heldout": ("graciously", "kindly")},
    {"train": ("honestly", "truthfully"), "heldout": ("candidly", "frankly")},
    {"train": ("right away", "at once"), "heldout": ("immediately", "straight away")},
    {"train": ("usually", "typically"), "heldout": ("generally", "normally")},
    {"train": ("often", "frequently"), "heldout": ("regularly", "commonly")},
    {"train": ("choose", "pick"), "heldout": ("select", "opt for")},
    {"train": ("ask for", "request"), "heldout": ("solicit", "inquire about")},
    {"train": ("give", "provide"), "heldout": ("supply", "hand over")},
    {"train": ("tell the viewer", "let the viewer know"), "heldout": ("inform the viewer",)},
    {"train": ("mention", "bring up"), "heldout": ("point out", "refer to")},
    {"train": ("apologise", "apologize"), "heldout": ("say sorry", "express regret")},
    {"train": ("help with", "assist with"), "heldout": ("lend a hand with",)},
    {"train": ("the shop", "the store"), "heldout": ("the seller", "the merchant")},
    {"train": ("customer service", "customer support"), "heldout": ("customer care",)},
    {"train": ("sold out", "out of stock"), "heldout": ("unavailable", "gone")},
    {"train": ("one line per", "a line for each"), "heldout": ("a separate line for each",)},
    {"train": ("the final reply", "the final answer"),
     "heldout": ("the last reply", "the closing reply")},
    {"train": ("load this skill", "read this skill"),
     "heldout": ("consult this skill", "open this skill")},
    {"train": ("answer the question", "respond to the question"),
     "heldout": ("address the question", "reply to the question")},
    {"train": ("stay friendly", "remain friendly"), "heldout": ("keep friendly", "stay kind")},
    {"train": ("in the public chat", "in the open chat"),
     "heldout": ("in the public comments", "where everyone can see")},
    {"train": ("instead of", "rather than"), "heldout": ("in place of",)},
    {"train": ("wait for",), "heldout": ("await",)},
    {"train": ("the tool returned", "the tool gave"),
     "heldout": ("the tool reported", "the tool provided")},
    {"train": ("if any", "if there is one"), "heldout": ("where present", "when applicable")},
    {"train": ("plainly", "clearly"), "heldout": ("openly", "in plain words")},
    {"train": ("before answering", "prior to answering"), "heldout": ("ahead of answering",)},
    {"train": ("keep it to", "limit it to"), "heldout": ("restrict it to",)},
    {"train": ("然后", "接着"), "heldout": ("随后", "之后")},
    {"train": ("如果", "假如"), "heldout": ("若是", "倘若")},
    {"train": ("必须", "务必"), "heldout": ("一定要",)},
    {"train": ("简短", "简洁"), "heldout": ("简明", "精简")},
    {"train": ("回答", "答复"), "heldout": ("回应",)},
    {"train": ("告诉", "告知"), "heldout": ("通知",)},
    {"train": ("商品", "产品"), "heldout": ("宝贝", "货品")},
    {"train": ("价格", "价钱"), "heldout": ("售价",)},
    {"train": ("库存", "存货"), "heldout": ("余量",)},
    {"train": ("发货", "出货"), "heldout": ("寄出",)},
    {"train": ("礼貌地", "客气地"), "heldout": ("得体地",)},
    {"train": ("立即", "马上"), "heldout": ("立刻", "即刻")},
    {"train": ("注意", "留意"), "heldout": ("关注",)},
    {"train": ("确认", "核实"), "heldout": ("核对", "确定")},
    {"train": ("加载", "载入"), "heldout": ("读取",)},
    {"train": ("例如", "比如"), "heldout": ("譬如", "举例来说")},
    {"train": ("语气", "口吻"), "heldout": ("语调",)},
    {"train": ("热情", "热心"), "heldout": ("亲切",)},
    {"train": ("推荐", "建议"), "heldout": ("推介",)},
    {"train": ("尽量", "尽可能"), "heldout": ("力求",)},
    {"train": ("解释", "说明"), "heldout": ("阐明",)},
    {"train": ("优惠", "折扣"), "heldout": ("让利",)},
)
# Registers of the LLM paraphrase, appended to its instruction.
PARAPHRASE_STYLES: dict[str, tuple[str, ...]] = {
    "train": ("Use plain, direct wording.", "Use a slightly more formal register.",
              "Prefer short sentences."),
    "heldout": ("Use a warm, conversational register.", "Prefer terse imperatives.",
                "Vary the sentence structure as much as you can."),
}

# ---- Markdown blocks -------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|$)[ \t]*(.*?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_ITEM = re.compile(r"^( {0,3})([-*+]|[0-9]{1,9}[.)])([ \t]+|$)")
_BOLD_LINE = re.compile(r"^(\*\*|__)([^*_\n]*[^*_\s])\1[ \t]*$")
_BLOCK_START = re.compile(r"^(#{1,6}|[-*+]|[0-9]{1,9}[.)]|=+|-+)$|^(>|\||<|```|~~~)")
_HARD_BREAK = re.compile(r"( {2,}|\\)$")
_LABEL = re.compile(r"^\s*[^\s:：]{1,20}[:：]")
_CJK_EDGE = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")

_EXAMPLE_HEADING = re.compile(r"(?<![A-Za-z])(examples?|samples?|e\.g\.)(?![A-Za-z])|示例|例子|样例"
                              r"|范例|举例|例如|比如|案例", re.IGNORECASE)
_ORDER_HEADING = re.compile(r"(?<![A-Za-z])(steps?|order|ordering|sequence|sequential|procedures?|"
                            r"process|workflow|flow|pipeline|stages?|phases?|first|then|how to)"
                            r"(?![A-Za-z])|流程|步骤|顺序|次序|先后|过程|阶段|首先|然后",
                            re.IGNORECASE)
_POSITION_REF = re.compile(r"(?<![A-Za-z])(above|below|preceding|previous|previously|following|"
                           r"earlier|aforementioned|former|latter)(?![A-Za-z])|上面|上述|下面|"
                           r"下述|前面|后面|上文|下文|前述|上一条|下一条|前一条|后一条|上一步|"
                           r"下一步", re.IGNORECASE)
_SEQUENCE_START = re.compile(r"(then|next|after that|afterwards?|finally|lastly|also|second(ly)?|"
                             r"third(ly)?|first(ly)?|before that|and|or|but|otherwise|else|"
                             r"in that case|if so|if not|same)(?![A-Za-z])|然后|接着|之后|最后|"
                             r"随后|再|其次|第二|第三|首先|并且|同时|此外|另外|否则|如果不|若不|"
                             r"同样|但", re.IGNORECASE)
_ORDER_INTRO = re.compile(r"(?<![A-Za-z])(in (this|that|the following|the given) order|in order|"
                          r"in sequence|step by step|steps?|sequence|order of|priority|"
                          r"prioriti[sz]e)(?![A-Za-z])|顺序|依次|按以下|步骤|流程|优先",
                          re.IGNORECASE)
_EXAMPLE_START = re.compile(r"(for example|for instance|e\.g\.|examples?\s*[:：]|eg[:：])"
                            r"|例如|比如|譬如|举例|示例[:：]", re.IGNORECASE)


def _blank(line: str) -> bool:
    return not line.strip(" \t")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


@dataclass
class _Item:
    gap: list[str]  # blank lines before this item (empty for the first)
    lines: list[str]


@dataclass
class _Block:
    kind: str  # heading | list | paragraph | fence | rule | opaque
    gap: list[str]  # blank lines before the block
    lines: list[str] = field(default_factory=list)
    level: int = 0  # headings
    text: str = ""  # headings
    style: str = ""  # headings: atx | setext | bold
    items: list[_Item] = field(default_factory=list)  # lists
    ordered: bool = False  # lists

    def render(self) -> list[str]:
        if self.kind == "list":
            out = []
            for i, item in enumerate(self.items):
                out += (item.gap if i else []) + item.lines
            return out
        return self.lines


def _item_offset(match: re.Match) -> int:
    pad = len(match.group(3).expandtabs(4))
    return len(match.group(1)) + len(match.group(2)) + (pad if 1 <= pad <= 4 else 1)


def _same_list(first: re.Match, other: re.Match) -> bool:
    a, b = first.group(2), other.group(2)
    return a == b if a in "-*+" else b not in "-*+" and a[-1] == b[-1]


def _parse(text: str) -> tuple[list[_Block], list[str]]:
    """Blocks (each with the blank lines before it) and the blank lines at the end; rendering
    them back gives ``text`` exactly."""
    lines = text.split("\n")
    blocks: list[_Block] = []
    gap: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if _blank(line):
            gap.append(line)
            i += 1
            continue
        fence = _FENCE.match(line)
        item = _ITEM.match(line)
        if fence:
            marker = fence.group(1)
            j = i + 1
            close = re.compile(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")
            while j < n and not close.match(lines[j]):
                j += 1
            j = min(j + 1, n)
            block = _Block("fence", gap, lines[i:j])
        elif _ATX.match(line):
            atx = _ATX.match(line)
            j = i + 1
            block = _Block("heading", gap, [line], level=len(atx.group(1)), text=atx.group(2),
                           style="atx")
        elif _RULE.match(line):
            j = i + 1
            block = _Block("rule", gap, [line])
        elif item:
            block, j = _parse_list(lines, i, item, gap)
        elif _indent(line.expandtabs(4)) >= 4:
            j = i + 1
            while j < n and not _blank(lines[j]) and _indent(lines[j].expandtabs(4)) >= 4:
                j += 1
            block = _Block("opaque", gap, lines[i:j])
        else:
            block, j = _parse_paragraph(lines, i, gap)
        blocks.append(block)
        gap = []
        i = j
    _mark_bold_headings(blocks)
    return blocks, gap


def _parse_paragraph(lines: list[str], i: int, gap: list[str]) -> tuple[_Block, int]:
    j, n = i + 1, len(lines)
    while j < n:
        line = lines[j]
        if _SETEXT.match(line):
            if j == i + 1:
                level = 1 if line.strip()[0] == "=" else 2
                return _Block("heading", gap, lines[i:j + 1], level=level,
                              text=lines[i].strip(), style="setext"), j + 1
            return _Block("opaque", gap, lines[i:j + 1]), j + 1  # a multi-line setext heading
        if (_blank(line) or _FENCE.match(line) or _ATX.match(line) or _RULE.match(line)
                or _ITEM.match(line)):
            break
        j += 1
    first = lines[i].lstrip(" ")
    kind = "opaque" if first[:1] in ("<", "|", ">") else "paragraph"
    return _Block(kind, gap, lines[i:j]), j


def _parse_list(lines: list[str], i: int, first: re.Match, gap: list[str]) -> tuple[_Block, int]:
    items = [_Item([], [lines[i]])]
    offset = _item_offset(first)
    j, n = i + 1, len(lines)
    while j < n:
        line = lines[j]
        if _blank(line):
            k = j
            while k < n and _blank(lines[k]):
                k += 1
            if k == n:
                break
            following = lines[k]
            match = _ITEM.match(following)
            if match and not _RULE.match(following) and _indent(following) < offset:
                if not _same_list(first, match):
                    break
                items.append(_Item(lines[j:k], [following]))
                offset = _item_offset(match)
                j = k + 1
                continue
            if _indent(following.expandtabs(4)) >= offset:
                items[-1].lines.extend(lines[j:k + 1])
                j = k + 1
                continue
            break
        match = _ITEM.match(line)
        if match and not _RULE.match(line) and _indent(line) < offset:
            if not _same_list(first, match):
                break
            items.append(_Item([], [line]))
            offset = _item_offset(match)
            j += 1
            continue
        if _indent(line) < offset and (_FENCE.match(line) or _ATX.match(line)
                                       or _RULE.match(line)):
            break
        items[-1].lines.append(line)
        j += 1
    return _Block("list", gap, items=items, ordered=first.group(2)[-1] in ".)"), j


def _mark_bold_headings(blocks: list[_Block]) -> None:
    """A body without headings (besides its title) may use bold lines as section headings."""
    start = 1 if blocks and blocks[0].kind == "heading" and blocks[0].level == 1 else 0
    if any(b.kind == "heading" for b in blocks[start:]):
        return
    for block in blocks[start:]:
        match = _BOLD_LINE.match(block.lines[0]) if block.kind == "paragraph" else None
        if match and len(block.lines) == 1:
            block.kind, block.level, block.text, block.style = "heading", 2, match.group(2), "bold"


def _render(blocks: list[_Block], trailing: list[str]) -> str:
    out: list[str] = []
    for block in blocks:
        out += block.gap + block.render()
    return "\n".join(out + trailing)


# ---- structure: title, sections, lists, examples ---------------------------------------------

@dataclass
class _Section:
    start: int  # index of its heading block (or of its first block for the preamble)
    end: int
    heading: str = ""
    examples: bool = False
    ordered: bool = False
    units: list[int] = field(default_factory=list)  # example blocks that may move or go


@dataclass
class _ListInfo:
    block: int
    shuffle: bool
    droppable: list[int]  # items that are examples


@dataclass
class _Structure:
    title: int | None
    preamble: _Section
    sections: list[_Section]
    lists: list[_ListInfo]
    reorder_sections: bool
    movable: list[int]  # sections that may change place
    split_level: int
    deeper: bool


def _block_text(block: _Block) -> str:
    return "\n".join(block.render())


def _item_text(item: _Item) -> str:
    match = _ITEM.match(item.lines[0])
    return " ".join([item.lines[0][match.end():] if match else item.lines[0]]
                    + [line.strip() for line in item.lines[1:]])


@lru_cache(maxsize=65536)
def _starts(pattern: re.Pattern, text: str) -> bool:
    return bool(pattern.match(text.lstrip(" *_")))


@lru_cache(maxsize=65536)
def _refers_to_position(text: str) -> bool:
    """Whether ``text`` points at another place ("above", "下一步"). Cached: the pattern is slow to
    scan, and a harness's skill texts recur in every variant of every episode."""
    return _POSITION_REF.search(text) is not None


def _structure(blocks: list[_Block]) -> _Structure:
    title = 0 if blocks and blocks[0].kind == "heading" and blocks[0].level == 1 else None
    start = 0 if title is None else 1
    heads = [i for i in range(start, len(blocks)) if blocks[i].kind == "heading"]
    level = min((blocks[i].level for i in heads), default=2)
    splits = [i for i in heads if blocks[i].level == level]
    deeper = any(blocks[i].level > level for i in heads)
    bounds = [start] + splits + [len(blocks)]
    preamble = _Section(start, bounds[1])
    sections = []
    for a, b in zip(splits, splits[1:] + [len(blocks)]):
        heading = blocks[a].text
        section = _Section(a, b, heading, bool(_EXAMPLE_HEADING.search(heading)),
                           bool(_ORDER_HEADING.search(heading)))
        if section.examples and not any(blocks[k].kind == "heading" for k in range(a + 1, b)):
            section.units = [k for k in range(a + 1, b)
                             if blocks[k].kind in ("paragraph", "fence", "opaque")
                             and not _block_text(blocks[k]).rstrip().endswith((":", "："))]
        sections.append(section)
    refers = any(_refers_to_position(_block_text(blocks[k]))
                 for s in sections if not s.examples for k in range(s.start, s.end))
    movable = [i for i, s in enumerate(sections) if not s.ordered]
    lists = []
    for section in [preamble] + sections:
        for k in range(section.start, section.end):
            block = blocks[k]
            if block.kind != "list":
                continue
            texts = [_item_text(item) for item in block.items]
            intro = blocks[k - 1] if k > section.start else None
            shuffle = (not block.ordered and len(block.items) >= 2 and not section.ordered
                       and not (intro is not None and intro.kind == "paragraph"
                                and _ORDER_INTRO.search(_block_text(intro)))
                       and not any(_starts(_SEQUENCE_START, t) or _refers_to_position(t)
                                   for t in texts))
            if block.ordered:
                droppable = []
            elif section.examples:
                droppable = list(range(len(block.items)))
            else:
                droppable = [i for i, t in enumerate(texts) if _starts(_EXAMPLE_START, t)]
            lists.append(_ListInfo(k, shuffle, droppable))
    return _Structure(title, preamble, sections, lists, not refers and len(movable) >= 2,
                      movable, level, deeper)


def _example_context(structure: _Structure) -> set[int]:
    """Blocks inside example sections: quoted conversations, left exactly as written."""
    return {k for s in structure.sections if s.examples for k in range(s.start + 1, s.end)}


# ---- drawing a plan --------------------------------------------------------------------------

def _phrase_table() -> dict[str, tuple[int, str]]:
    """Every phrase (lower case) -> (its group, its part)."""
    return {phrase.lower(): (g, part) for g, group in enumerate(SKILL_PHRASES)
            for part in ("train", "heldout") for phrase in group[part]}


_PHRASES = _phrase_table()


@lru_cache(maxsize=1024)
def _phrase_pattern(phrases: tuple[str, ...]) -> re.Pattern:
    """Mentions of ``phrases``: English ones as whole words, Chinese ones anywhere."""
    alternatives = []
    for phrase in sorted(phrases, key=len, reverse=True):
        if phrase.isascii():
            alternatives.append(rf"(?<![A-Za-z0-9_\-']){re.escape(phrase)}(?![A-Za-z0-9_\-'])")
        else:
            alternatives.append(re.escape(phrase))
    return re.compile("|".join(alternatives), re.IGNORECASE)


def _phrases_in(text: str, phrases) -> re.Pattern | None:
    """The pattern of the ``phrases`` that occur in ``text`` at all (a fast substring test
    first: one alternation of every table phrase is slow on long bodies)."""
    lowered = text.lower()
    present = tuple(sorted(p for p in phrases if p in lowered))
    return _phrase_pattern(present) if present else None


def _free_segments(text: str, names) -> list[tuple[int, int]]:
    """The ranges of ``text`` outside every invariant span (code, quotes, identifiers...)."""
    out, last = [], 0
    for start, end in invariant_spans(text, names):
        if start > last:
            out.append((last, start))
        last = max(last, end)
    if last < len(text):
        out.append((last, len(text)))
    return out


def _inline_blocks(blocks: list[_Block], structure: _Structure) -> list[int]:
    """Blocks whose prose may be reworded: paragraphs and lists outside examples."""
    skip = _example_context(structure)
    return [k for k, b in enumerate(blocks) if b.kind in ("paragraph", "list") and k not in skip]


def _found_phrases(blocks, structure, names) -> list[str]:
    found = set()
    for k in _inline_blocks(blocks, structure):
        text = _block_text(blocks[k])
        pattern = _phrases_in(text, _PHRASES)
        if pattern is None:
            continue
        for start, end in _free_segments(text, names):
            found.update(m.group(0).lower() for m in pattern.finditer(text, start, end))
    return sorted(found)


@lru_cache(maxsize=4096)
def _analysis(body: str, names: tuple[str, ...]):
    """What drawing a plan reads of a body, computed once per body (read-only afterwards: the
    same skill bodies recur in every episode of a harness)."""
    blocks, _ = _parse(body)
    structure = _structure(blocks)
    return blocks, structure, _found_phrases(blocks, structure, names)


def draw_plan(body: str, names, rng: random.Random, split: str, *, reorder: bool = True,
              restyle: bool = True, rephrase: bool = True, drop_examples: bool = True) -> dict:
    """A rewrite plan for ``body``: JSON-only, every choice :func:`rewrite_body` needs."""
    blocks, structure, found = _analysis(body, tuple(names))
    plan: dict = {}
    if reorder and structure.reorder_sections and rng.random() < 0.7:
        order = list(range(len(structure.sections)))
        moved = list(structure.movable)
        rng.shuffle(moved)
        for slot, section in zip(structure.movable, moved):
            order[slot] = section
        if order != sorted(order):
            plan["sections"] = order
    lists = {}
    for index, info in enumerate(structure.lists):
        items = list(range(len(blocks[info.block].items)))
        if drop_examples and info.droppable:
            dropped = {i for i in info.droppable if rng.random() < 0.4}
            if len(dropped) == len(items):
                dropped.discard(rng.choice(sorted(dropped)))
            items = [i for i in items if i not in dropped]
        if reorder and info.shuffle and rng.random() < 0.8:
            rng.shuffle(items)
        if items != list(range(len(blocks[info.block].items))):
            lists[str(index)] = items
    if lists:
        plan["lists"] = lists
    examples = {}
    for index, section in enumerate(structure.sections):
        units = list(range(len(section.units)))
        if len(units) < 2:
            continue
        if drop_examples and rng.random() < 0.4:
            units = sorted(rng.sample(units, rng.randint(1, len(units) - 1)))
        if reorder and rng.random() < 0.6:
            rng.shuffle(units)
        if units != list(range(len(section.units))):
            examples[str(index)] = units
    if examples:
        plan["examples"] = examples
    if restyle:
        for key, table in (("headings", HEADING_STYLES), ("list_style", LIST_STYLES),
                           ("whitespace", WHITESPACE_STYLES), ("emphasis", EMPHASIS_STYLES)):
            if rng.random() < 0.6:
                plan[key] = rng.choice(sorted(table[split]))
    if rephrase:
        phrases = []
        for phrase in found:
            group = SKILL_PHRASES[_PHRASES[phrase][0]]
            choices = [p for p in group[split] if p.lower() != phrase]
            if choices and rng.random() < 0.7:
                phrases.append([phrase, rng.choice(choices)])
        if phrases:
            plan["phrases"] = phrases
    return plan


# ---- applying a plan -------------------------------------------------------------------------

def _check_order(order, n: int, *, what: str, required=(), keep_order: bool = False) -> list[int]:
    if (not isinstance(order, list) or not order
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in order)
            or len(set(order)) != len(order) or not all(0 <= i < n for i in order)):
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


def _rearrange(blocks: list[_Block], structure: _Structure, plan: dict) -> list[_Block]:
    """Blocks after the plan's drops and reorders; gaps stay with positions, not with blocks."""
    blocks = [replace(b, gap=list(b.gap), items=[_Item(list(i.gap), list(i.lines))
                                                  for i in b.items]) for b in blocks]
    for key, order in _orders(plan, "lists").items():
        if not key.isdigit() or int(key) >= len(structure.lists):
            raise HsaError(f"plan lists: no list {key!r} (the body has {len(structure.lists)})")
        info = structure.lists[int(key)]
        block = blocks[info.block]
        n = len(block.items)
        _check_order(order, n, what=f"list {key}",
                     required=[i for i in range(n) if i not in info.droppable],
                     keep_order=not info.shuffle)
        gaps = [item.gap for item in block.items]
        block.items = [_Item(gaps[p] if p else [], block.items[i].lines)
                       for p, i in enumerate(order)]
    dropped: set[int] = set()
    for key, order in _orders(plan, "examples").items():
        if not key.isdigit() or int(key) >= len(structure.sections):
            raise HsaError(f"plan examples: no section {key!r}")
        units = structure.sections[int(key)].units
        _check_order(order, len(units), what=f"examples of section {key}")
        moved = {units[slot]: replace(blocks[units[unit]], gap=blocks[units[slot]].gap)
                 for slot, unit in enumerate(order)}
        dropped |= set(units[len(order):])
        for k, block in moved.items():
            blocks[k] = block
    order = plan.get("sections")
    sections = structure.sections
    if order is not None:
        _check_order(order, len(sections), what="sections", required=range(len(sections)))
        fixed = [i for i in range(len(sections)) if i not in structure.movable]
        if not structure.reorder_sections or any(order[i] != i for i in fixed):
            raise HsaError("plan sections: this body's sections keep their places (a section "
                           "about steps or order, or text that points above or below)")
    else:
        order = list(range(len(sections)))
    head = blocks[:structure.preamble.end]
    out = [b for k, b in enumerate(head) if k not in dropped]
    for slot, index in enumerate(order):
        section = sections[index]
        part = [b for k, b in enumerate(blocks[section.start:section.end], section.start)
                if k not in dropped]
        part[0] = replace(part[0], gap=blocks[sections[slot].start].gap)
        out += part
    return out


def _heading_lines(block: _Block, style: str, title: bool) -> list[str] | None:
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


def _restyle_headings(blocks: list[_Block], structure: _Structure, style: str) -> None:
    for k, block in enumerate(blocks):
        if block.kind != "heading":
            continue
        title = k == 0 and structure.title is not None
        if style == "bold" and not title and (block.level != structure.split_level
                                              or structure.deeper):
            continue
        lines = _heading_lines(block, style, title)
        if lines is None:
            continue
        block.lines, block.style = lines, "bold" if lines[0].startswith("**") else style
        # Setext and bold headings must not run into the block before or after them.
        if block.style in ("setext", "bold") and k and not block.gap:
            block.gap = [""]
        if block.style == "bold" and k + 1 < len(blocks) and not blocks[k + 1].gap:
            blocks[k + 1].gap = [""]


def _restyle_list(block: _Block, style: tuple[str, int, str]) -> None:
    bullet, pad, delimiter = style
    for item in block.items:
        match = _ITEM.match(item.lines[0])
        if match is None or len(match.group(3).expandtabs(4)) > 4:
            return
    for item in block.items:
        match = _ITEM.match(item.lines[0])
        indent, marker, space = match.groups()
        rest = item.lines[0][match.end():]
        if block.ordered:
            new_marker, new_space = marker[:-1] + delimiter, space
        else:
            new_marker, new_space = bullet, " " * pad if rest else ""
        old, new = _item_offset(match), len(indent) + len(new_marker) + max(len(new_space), 1)
        lines = [indent + new_marker + new_space + rest]
        for line in item.lines[1:]:
            if not _blank(line) and _indent(line) >= old:
                line = " " * (new - old) + line if new > old else line[old - new:]
            lines.append(line)
        item.lines = lines


def _join(lines: list[str]) -> str:
    text = lines[0].rstrip(" \t")
    for line in lines[1:]:
        line = line.strip(" \t")
        if _CJK_EDGE.match(text[-1:] or "a") and _CJK_EDGE.match(line[:1] or "a"):
            text += line
        else:
            text += " " + line
    return text


def _wrap(head: str, text: str, prefix: str, width: int) -> list[str]:
    """``head`` (a list marker, or nothing) and ``text`` (one line) broken at spaces into lines
    of at most ``width`` where possible; never before a word that would start a new block."""
    words = text.split(" ")
    lines, current = [], head + words[0]
    for word in words[1:]:
        if (len(current) + 1 + len(word) > width and word and current.strip()
                and not _BLOCK_START.match(word)):
            lines.append(current)
            current = prefix + word
        else:
            current += " " + word
    return lines + [current]


def _rewrap(lines: list[str], prefix: str, width: int) -> list[str] | None:
    """One paragraph's or item's lines unwrapped (width 0) or rewrapped; None when the lines
    are not plain wrapped text."""
    if any(_blank(line) or _HARD_BREAK.search(line) for line in lines[:-1]):
        return None
    for line in lines[1:]:
        stripped = line.strip(" \t")
        if (_ITEM.match(stripped) or _FENCE.match(stripped) or _ATX.match(stripped)
                or _BLOCK_START.match(stripped.split(" ")[0]) or _indent(line) >= len(prefix) + 4
                or "\t" in line):
            return None
    joined = _join(lines)
    if width == 0:
        return [joined]
    head = joined[:len(joined) - len(joined.lstrip(" "))]
    marker = _ITEM.match(joined)
    if marker:
        head = joined[:marker.end()]
    return _wrap(head, joined[len(head):], prefix, width)


def _restyle_whitespace(blocks: list[_Block], structure: _Structure, spacing, width) -> None:
    examples = _example_context(structure)
    for k, block in enumerate(blocks):
        if block.kind == "list":
            single = all(not any(_blank(line) for line in item.lines) for item in block.items)
            if spacing is not None and single:
                for i, item in enumerate(block.items):
                    item.gap = [] if spacing == "tight" or i == 0 else [""]
            if width is None or k in examples:
                continue
            for item in block.items:
                match = _ITEM.match(item.lines[0])
                if match and match.group(0).strip() and item.lines[0][match.end():].strip():
                    new = _rewrap(item.lines, " " * _item_offset(match), width)
                    if new is not None:
                        item.lines = new
        elif block.kind == "paragraph" and width is not None and k not in examples:
            if _LABEL.match(block.lines[0]) or _indent(block.lines[0]):
                continue
            new = _rewrap(block.lines, "", width)
            if new is not None:
                block.lines = new


_NEGATION_WORDS = re.compile(r"(?<![A-Za-z0-9_*'’\-])(do not|does not|cannot|can['’]t|don['’]t|"
                             r"doesn['’]t|won['’]t|never|not)(?![A-Za-z0-9_*'’\-])"
                             r"|(?<!\*)(不要|禁止|切勿|不得|不能|不可|严禁)(?!\*)", re.IGNORECASE)
_STRONG = re.compile(r"\*\*(?=[^\s*])([^*\n]*?[^\s*])\*\*|(?<![A-Za-z0-9_])__(?=[^\s_])"
                     r"([^_\n]*?[^\s_])__(?![A-Za-z0-9_])")


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


def _rephrase(segment: str, replacements: dict[str, str]) -> str:
    pattern = _phrases_in(segment, replacements)
    if pattern is None:
        return segment

    def swap(match: re.Match) -> str:
        new = replacements.get(match.group(0).lower())
        if new is None:
            return match.group(0)
        return new[:1].upper() + new[1:] if match.group(0)[:1].isupper() else new
    return pattern.sub(swap, segment)


def _reword(blocks: list[_Block], structure: _Structure, names, replacements, emphasis) -> None:
    for k in _inline_blocks(blocks, structure):
        block = blocks[k]
        parts = block.items if block.kind == "list" else [block]
        for part in parts:
            text = "\n".join(part.lines)
            out, last = [], 0
            for start, end in _free_segments(text, names):
                out.append(text[last:start])
                segment = text[start:end]
                if replacements:
                    segment = _rephrase(segment, replacements)
                if emphasis:
                    segment = _emphasise(text[:start] + segment, start, start + len(segment),
                                         emphasis)
                out.append(segment)
                last = end
            out.append(text[last:])
            new = "".join(out)
            if new.count("\n") == text.count("\n"):
                part.lines = new.split("\n")


def _replacements(plan: dict) -> dict[str, str]:
    out = {}
    for pair in plan.get("phrases") or ():
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(isinstance(p, str) for p in pair)):
            raise HsaError(f"plan phrases: {pair!r} is not an [old, new] pair")
        old, new = pair[0].lower(), pair[1]
        if old not in _PHRASES or new.lower() not in _PHRASES or \
                _PHRASES[old][0] != _PHRASES[new.lower()][0]:
            raise HsaError(f"plan phrases: {pair[0]!r} -> {pair[1]!r} is not a pair from one "
                           f"synonym group")
        out[old] = new
    return out


def _in_place(order):
    """An order's kept parts in their original order (malformed orders are left to refuse)."""
    if isinstance(order, list) and all(isinstance(i, int) for i in order):
        return sorted(order)
    return order


def _apply_plan(body: str, plan: dict, names) -> str:
    if not isinstance(plan, dict):
        raise HsaError(f"a rewrite plan must be an object, got {plan!r:.100}")
    blocks, trailing = _parse(body)
    structure = _structure(blocks)
    replacements = _replacements(plan)
    headings = _choice(plan, "headings", HEADING_STYLES)
    list_style = _choice(plan, "list_style", LIST_STYLES)
    whitespace = _choice(plan, "whitespace", WHITESPACE_STYLES)
    emphasis = _choice(plan, "emphasis", EMPHASIS_STYLES)
    blocks = _rearrange(blocks, structure, plan)
    structure = _structure(blocks)
    if replacements or emphasis:
        _reword(blocks, structure, names, replacements, emphasis)
    if headings:
        _restyle_headings(blocks, structure, headings)
    if list_style:
        style = {**LIST_STYLES["train"], **LIST_STYLES["heldout"]}[list_style]
        for block in blocks:
            if block.kind == "list":
                _restyle_list(block, style)
    if whitespace:
        spacing, width = {**WHITESPACE_STYLES["train"], **WHITESPACE_STYLES["heldout"]}[whitespace]
        _restyle_whitespace(blocks, structure, spacing, width)
    return _render(blocks, trailing)


def rewrite_body(body: str, plan: dict, names=()) -> str:
    """``body`` rewritten by ``plan`` (from :func:`draw_plan`); HsaError if the plan does not fit
    the body or the rewrite would lose an invariant of the body outside dropped examples."""
    if not isinstance(plan, dict):
        raise HsaError(f"a rewrite plan must be an object, got {plan!r:.100}")
    # Memoised: sampling checks a plan with the same call that apply then makes, and the same
    # skill bodies recur in every episode of a harness.
    outcome = _rewrite_memo(body, orjson.dumps(plan, option=orjson.OPT_SORT_KEYS),
                            tuple(names))
    if isinstance(outcome, HsaError):
        raise HsaError(outcome.reason)
    return outcome


@lru_cache(maxsize=8192)
def _rewrite_memo(body: str, plan_json: bytes, names: tuple) -> str | HsaError:
    plan = orjson.loads(plan_json)
    try:
        rewrite = _apply_plan(body, plan, names)
        drops = {key: {k: _in_place(v) for k, v in _orders(plan, key).items()}
                 for key in ("lists", "examples")}
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


def essentials(body: str) -> str:
    """The body outside its examples (example sections' content and example bullets): every
    invariant of this text survives every rewrite."""
    blocks, _ = _parse(body)
    structure = _structure(blocks)
    skip = _example_context(structure)
    droppable = {(info.block, i) for info in structure.lists for i in info.droppable}
    parts = []
    for k, block in enumerate(blocks):
        if k in skip:
            continue
        if block.kind == "list":
            parts += ["\n".join(item.lines) for i, item in enumerate(block.items)
                      if (k, i) not in droppable]
        else:
            parts.append("\n".join(block.lines))
    return "\n\n".join(parts)


def rules_of(body: str) -> list[str]:
    """The body's non-example rules and prose (paragraphs and list items outside example
    sections and example bullets), normalised for comparison across rewrites: markers, emphasis,
    case and whitespace ignored. A rewrite keeps every one of them (phrases aside)."""
    blocks, _ = _parse(body)
    structure = _structure(blocks)
    skip = _example_context(structure)
    droppable = {(info.block, i) for info in structure.lists for i in info.droppable}
    out = []
    for k, block in enumerate(blocks):
        if k in skip or block.kind not in ("paragraph", "list"):
            continue
        texts = ([_item_text(item) for i, item in enumerate(block.items)
                  if (k, i) not in droppable] if block.kind == "list" else [_block_text(block)])
        out += [normalise_space(t.replace("*", "")).lower() for t in texts]
    return sorted(out)


# ---- episodes --------------------------------------------------------------------------------

def harness_names(harness: Harness) -> list[str]:
    """Names a skill body may mention as identifiers: tools, their parameters, skills, hooks
    and the skill loader."""
    names = set(harness.names)
    for tool in harness.tools:
        names.update(tool.properties)
    return sorted(names)


def with_skill_bodies(episode: Episode, bodies: dict[str, str]) -> Episode:
    """The episode with new bodies for some skills, also in every skill-loader result that
    carried the old body verbatim."""
    harness = episode.harness
    unknown = sorted(set(bodies) - set(harness.skill_ids))
    if unknown:
        raise HsaError(f"no skill {unknown} in the harness (it has {list(harness.skill_ids)})")
    old = {s.id: s.content for s in harness.skills}
    skills = tuple(replace(s, content=bodies[s.id]) if s.id in bodies else s
                   for s in harness.skills)
    loads: dict[str, str] = {}  # tool_call_id -> loaded skill id
    messages = []
    for message in episode.messages:
        for call in message.get("tool_calls") or ():
            fn = call["function"]
            if fn["name"] == harness.skill_loader and harness.skills:
                loaded = orjson.loads(fn["arguments"]).get("name")
                if isinstance(loaded, str) and loaded in bodies and old[loaded] != bodies[loaded]:
                    loads[call["id"]] = loaded
        content = message.get("content")
        skill = loads.get(message.get("tool_call_id")) if message.get("role") == "tool" else None
        if skill is not None and isinstance(content, str) and old[skill].strip():
            if content == old[skill]:
                message = {**message, "content": bodies[skill]}
            elif old[skill] in content:
                message = {**message, "content": content.replace(old[skill], bodies[skill])}
        messages.append(message)
    return replace(episode.with_harness(replace(harness, skills=skills)),
                   messages=tuple(messages))



@register
@dataclass(frozen=True)
class SkillContentRewrite(Transform):
    """Rewrites every skill body by rule: sections and unordered bullets reordered where order
    carries no meaning, header and list-marker styles, negation emphasis, wrapping and list
    spacing, synonym phrases (EN/ZH), examples reordered or partly dropped; every number, quoted
    string, code span, identifier, negation and non-example rule, the title, numbered steps and
    at least one example per example section are kept, and skill-loader results carry the new
    body.

    ``reorder``, ``restyle``, ``rephrase`` and ``drop_examples`` switch the kinds of change;
    ``fraction`` is the share of skills rewritten. A body the drawn plan leaves as it was (a
    short skill without lists or phrases of the tables) gets a style that changes it."""

    name = "skill_content_rewrite"
    version = "2"
    family = "skill_content"

    split: Split = "train"
    fraction: Share = 1.0
    reorder: bool = True
    restyle: bool = True
    rephrase: bool = True
    drop_examples: bool = True

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        names = harness_names(episode.harness)
        plans = {}
        for skill in episode.harness.skills:
            if rng.random() >= self.fraction:
                continue
            plan = draw_plan(skill.content, names, rng, self.split, reorder=self.reorder,
                             restyle=self.restyle, rephrase=self.rephrase,
                             drop_examples=self.drop_examples)
            plan = _safe_plan(skill.content, plan, names)
            if self.restyle:
                plan = _changing_plan(skill.content, plan, names, rng, self.split)
            if plan:
                plans[skill.id] = plan
        return {"plans": plans}

    def apply(self, episode: Episode, params: dict) -> Episode:
        plans = params.get("plans")
        if not isinstance(plans, dict):
            raise HsaError(f"params need 'plans' (skill id -> rewrite plan), got {params!r:.200}")
        names = harness_names(episode.harness)
        bodies = {}
        for skill_id, plan in plans.items():
            skill = episode.harness.skill(skill_id)
            if skill is None:
                raise HsaError(f"no skill {skill_id!r} in the harness")
            bodies[skill_id] = _rewritten(skill, plan, names)
        return with_skill_bodies(episode, bodies)


def _rewritten(skill, plan: dict, names) -> str:
    """The skill's body rewritten by ``plan``; an error names the skill."""
    try:
        return rewrite_body(skill.content, plan, names)
    except HsaError as exc:
        raise HsaError(f"skill {skill.id!r}: {exc.reason}") from None


_RESTYLES = (("headings", HEADING_STYLES), ("list_style", LIST_STYLES),
             ("whitespace", WHITESPACE_STYLES), ("emphasis", EMPHASIS_STYLES))


def _changing_plan(body: str, plan: dict, names, rng: random.Random, split: str) -> dict:
    """``plan``, or when it leaves ``body`` as it was, ``plan`` with one style of the split that
    changes the body (the first, in a random order, that does and keeps every invariant)."""
    if _rewrites_to(body, plan, names) not in (None, body):
        return plan
    options = [(key, option) for key, table in _RESTYLES for option in sorted(table[split])
               if plan.get(key) != option]
    rng.shuffle(options)
    for key, option in options:
        candidate = {**plan, key: option}
        if _rewrites_to(body, candidate, names) not in (None, body):
            return candidate
    return plan


def _rewrites_to(body: str, plan: dict, names) -> str | None:
    try:
        return rewrite_body(body, plan, names)
    except HsaError:
        return None


def _safe_plan(body: str, plan: dict, names) -> dict:
    """``plan``, or the largest part of it that keeps every invariant: a body that defeats a
    rule (a stray quote that pairs differently once bullets move) loses that rule, not the rest."""
    restyle = ("headings", "list_style", "whitespace", "emphasis")
    candidates = [plan, {k: v for k, v in plan.items() if k != "phrases"},
                  {k: v for k, v in plan.items() if k not in restyle + ("phrases",)},
                  {k: v for k, v in plan.items() if k in restyle},
                  {k: v for k, v in plan.items() if k in ("headings", "list_style")}]
    for candidate in candidates:
        try:
            rewrite_body(body, candidate, names)
        except HsaError:
            continue
        return candidate
    return {}


@register
@dataclass(frozen=True)
class SkillContentLlmParaphrase(Transform):
    """Paraphrases every skill body with an LLM (any OpenAI-compatible endpoint); a paraphrase
    that loses a number, quoted string, code span, identifier or negation is refused and the
    rule-based rewrite is used instead, with the reason in params. The text goes into params, so
    replay never calls the endpoint; skill-loader results carry the new body.

    Without ``base_url`` and ``model`` every skill takes the rule-based rewrite ("no endpoint
    configured"). ``samples`` distinct paraphrases are cached per body and register; a variant
    draws one. ``cache_dir`` "" disables the cache."""

    name = "skill_content_llm_paraphrase"
    version = "1"
    family = "skill_content"

    split: Split = "train"
    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    cache_dir: str = "~/.cache/hsa/paraphrase"
    temperature: float = 0.7
    samples: int = 4
    fraction: Share = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.samples < 1 or self.timeout_s <= 0:
            raise HsaError(f"transform {self.name!r}: samples must be at least 1 and timeout_s "
                           f"positive, got {self.samples!r} and {self.timeout_s!r}")

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        names = harness_names(episode.harness)
        endpoint = Endpoint(self.base_url, self.model, self.api_key_env, self.timeout_s,
                            self.temperature, self.cache_dir)
        skills = {}
        for skill in episode.harness.skills:
            if rng.random() >= self.fraction or not skill.content.strip():
                continue
            # Drawn before the endpoint is asked, so the random stream never depends on it.
            style = rng.choice(PARAPHRASE_STYLES[self.split])
            sample = rng.randrange(self.samples)
            # Drawn whatever the endpoint answers (the random stream must not depend on it);
            # made safe only when the rules are the fallback.
            plan = draw_plan(skill.content, names, rng, self.split)
            reason = None
            if not (self.base_url and self.model):
                reason = "no endpoint configured (set base_url and model)"
            else:
                try:
                    text = llm_paraphrase(skill.content, endpoint, style=style, sample=sample)
                except ParaphraseUnavailable as exc:
                    reason = exc.reason
                else:
                    lost = lost_invariants(skill.content, text, names)
                    if lost:
                        reason = f"lost: {lost[:8]}"
                    elif text == skill.content:
                        reason = "unchanged"
                    else:
                        skills[skill.id] = {"backend": "llm", "text": text, "style": style,
                                            "sample": sample}
                        continue
            skills[skill.id] = {"backend": "rules", "fallback_reason": reason,
                                "plan": _safe_plan(skill.content, plan, names)}
        return {"skills": skills}

    def apply(self, episode: Episode, params: dict) -> Episode:
        skills = params.get("skills")
        if not isinstance(skills, dict):
            raise HsaError(f"params need 'skills' (skill id -> paraphrase), got {params!r:.200}")
        names = harness_names(episode.harness)
        bodies = {}
        for skill_id, record in skills.items():
            skill = episode.harness.skill(skill_id)
            if skill is None or not isinstance(record, dict):
                raise HsaError(f"no skill {skill_id!r} in the harness, or no record for it")
            if record.get("backend") == "llm":
                text = record.get("text")
                lost = lost_invariants(skill.content, text, names) if isinstance(text, str) \
                    else ["text"]
                if lost:
                    raise HsaError(f"skill {skill_id!r}: the recorded paraphrase loses {lost[:5]}")
                bodies[skill_id] = text
            elif record.get("backend") == "rules":
                bodies[skill_id] = _rewritten(skill, record.get("plan") or {}, names)
            else:
                raise HsaError(f"skill {skill_id!r}: backend must be 'llm' or 'rules', got "
                               f"{record.get('backend')!r}")
        return with_skill_bodies(episode, bodies)
