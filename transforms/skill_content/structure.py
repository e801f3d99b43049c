"""What a skill body is made of, as a rewrite reads it: the title, sections (which hold examples,
which are about steps or order), lists (which may be shuffled, which items are examples), and the
prose that may be reworded (outside examples and outside every invariant span).

Whether order carries meaning is read from the words of a heading, of the paragraph introducing a
list, and of the items themselves, in English and Chinese.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from hsa.text.markdown import Block, block_text, item_text, parse
from hsa.text.paraphrase import invariant_spans, negations, normalise_space

_EXAMPLE_HEADING = re.compile(
    r"(?<![A-Za-z])(examples?|samples?|e\.g\.)(?![A-Za-z])|示例|例子|样例"
    r"|范例|举例|例如|比如|案例",
    re.IGNORECASE,
)
_ORDER_HEADING = re.compile(
    r"(?<![A-Za-z])(steps?|order|ordering|sequence|sequential|procedures?|"
    r"process|workflow|flow|pipeline|stages?|phases?|first|then|how to)"
    r"(?![A-Za-z])|流程|步骤|顺序|次序|先后|过程|阶段|首先|然后",
    re.IGNORECASE,
)
_POSITION_REF = re.compile(
    r"(?<![A-Za-z])(above|below|preceding|previous|previously|following|"
    r"earlier|aforementioned|former|latter)(?![A-Za-z])|上面|上述|下面|"
    r"下述|前面|后面|上文|下文|前述|上一条|下一条|前一条|后一条|上一步|"
    r"下一步",
    re.IGNORECASE,
)
_SEQUENCE_START = re.compile(
    r"(then|next|after that|afterwards?|finally|lastly|also|second(ly)?|"
    r"third(ly)?|first(ly)?|before that|and|or|but|otherwise|else|"
    r"in that case|if so|if not|same)(?![A-Za-z])|然后|接着|之后|最后|"
    r"随后|再|其次|第二|第三|首先|并且|同时|此外|另外|否则|如果不|若不|"
    r"同样|但",
    re.IGNORECASE,
)
_ORDER_INTRO = re.compile(
    r"(?<![A-Za-z])(in (this|that|the following|the given) order|in order|"
    r"in sequence|step by step|steps?|sequence|order of|priority|"
    r"prioriti[sz]e)(?![A-Za-z])|顺序|依次|按以下|步骤|流程|优先",
    re.IGNORECASE,
)
_EXAMPLE_START = re.compile(
    r"(for example|for instance|e\.g\.|examples?\s*[:：]|eg[:：])"
    r"|例如|比如|譬如|举例|示例[:：]",
    re.IGNORECASE,
)


# A bullet that states a rule (a negation, hsa.text.paraphrase.negations, or a word of obligation
# or restriction: "only", "must", 必须...) is no example to drop, even under an "Example" heading:
# example sections hold rules about their examples too.
_RULE_WORD = re.compile(
    r"(?<![A-Za-z])(only|must|always|should|required?|make sure|ensure)(?![A-Za-z])"
    r"|必须|务必|只能|只有|仅|一定|确保",
    re.IGNORECASE,
)


def _states_rule(text: str) -> bool:
    return bool(_RULE_WORD.search(text) or negations(text))


def _introduces(block: Block) -> bool:
    """A paragraph ending in a colon ("The deploy file it writes:") introduces the next block."""
    return block.kind == "paragraph" and block_text(block).rstrip().endswith((":", "："))


# A table's delimiter row (GFM: "--- | ---", "|:---|---:|"), with or without outer pipes.
_TABLE_DELIMITER = re.compile(r"^(?=[^|]*\|) {0,3}\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def _movable_example(blocks: list[Block], k: int, first: int) -> bool:
    """Whether block ``k`` of an example section (its blocks from ``first``) is an example that
    may move or go: a paragraph, fenced code or quote; not a paragraph or quote that states a
    rule, not a caption nor the block a caption introduces (they go together or not at all:
    both stay), nor a table (reference, not an example)."""
    block = blocks[k]
    if block.kind not in ("paragraph", "fence", "opaque") or _introduces(block):
        return False
    if k > first and _introduces(blocks[k - 1]):
        return False
    if block.kind == "fence":
        return True
    if any(_TABLE_DELIMITER.match(line) for line in block.lines):
        return False  # a table, with pipes (an opaque block) or without (read as a paragraph)
    return not _states_rule(block_text(block))  # a paragraph or a quote that states a rule


@dataclass
class Section:
    start: int  # index of its heading block (or of its first block for the preamble)
    end: int
    heading: str = ""
    examples: bool = False
    ordered: bool = False
    units: list[int] = field(default_factory=list)  # example blocks that may move or go


@dataclass
class ListInfo:
    block: int
    shuffle: bool
    droppable: list[int]  # items that are examples


@dataclass
class Structure:
    title: int | None
    preamble: Section
    sections: list[Section]
    lists: list[ListInfo]
    reorder_sections: bool
    movable: list[int]  # sections that may change place
    split_level: int
    deeper: bool


@lru_cache(maxsize=65536)
def _starts(pattern: re.Pattern, text: str) -> bool:
    return bool(pattern.match(text.lstrip(" *_")))


@lru_cache(maxsize=65536)
def _refers_to_position(text: str) -> bool:
    """Whether ``text`` points at another place ("above", "下一步"). Cached: the pattern is slow to
    scan, and a harness's skill texts recur in every variant of every episode."""
    return _POSITION_REF.search(text) is not None


def structure_of(blocks: list[Block]) -> Structure:
    title = 0 if blocks and blocks[0].kind == "heading" and blocks[0].level == 1 else None
    start = 0 if title is None else 1
    heads = [i for i in range(start, len(blocks)) if blocks[i].kind == "heading"]
    level = min((blocks[i].level for i in heads), default=2)
    splits = [i for i in heads if blocks[i].level == level]
    deeper = any(blocks[i].level > level for i in heads)
    bounds = [start] + splits + [len(blocks)]
    preamble = Section(start, bounds[1])
    sections = []
    for a, b in zip(splits, bounds[2:], strict=True):  # each section ends where the next starts
        heading = blocks[a].text
        section = Section(
            a,
            b,
            heading,
            bool(_EXAMPLE_HEADING.search(heading)),
            bool(_ORDER_HEADING.search(heading)),
        )
        if section.examples and not any(blocks[k].kind == "heading" for k in range(a + 1, b)):
            section.units = [k for k in range(a + 1, b) if _movable_example(blocks, k, a + 1)]
        sections.append(section)
    refers = any(
        _refers_to_position(block_text(blocks[k]))
        for s in sections
        if not s.examples
        for k in range(s.start, s.end)
    )
    movable = [i for i, s in enumerate(sections) if not s.ordered]
    lists = []
    for section in [preamble] + sections:
        for k in range(section.start, section.end):
            block = blocks[k]
            if block.kind != "list":
                continue
            texts = [item_text(item) for item in block.items]
            intro = blocks[k - 1] if k > section.start else None
            shuffle = (
                not block.ordered
                and len(block.items) >= 2
                and not section.ordered
                and not (
                    intro is not None
                    and intro.kind == "paragraph"
                    and _ORDER_INTRO.search(block_text(intro))
                )
                and not any(_starts(_SEQUENCE_START, t) or _refers_to_position(t) for t in texts)
            )
            if block.ordered:
                droppable = []
            elif section.examples:
                droppable = [i for i, t in enumerate(texts) if not _states_rule(t)]
            else:
                droppable = [i for i, t in enumerate(texts) if _starts(_EXAMPLE_START, t)]
            lists.append(ListInfo(k, shuffle, droppable))
    return Structure(
        title, preamble, sections, lists, not refers and len(movable) >= 2, movable, level, deeper
    )


def example_context(structure: Structure) -> set[int]:
    """Blocks inside example sections: quoted conversations, left exactly as written."""
    return {k for s in structure.sections if s.examples for k in range(s.start + 1, s.end)}


def essentials(body: str) -> str:
    """The body outside its examples (example sections' content and example bullets): every
    invariant of this text survives every rewrite."""
    blocks, _ = parse(body)
    structure = structure_of(blocks)
    skip = example_context(structure)
    droppable = {(info.block, i) for info in structure.lists for i in info.droppable}
    parts = []
    for k, block in enumerate(blocks):
        if k in skip:
            continue
        if block.kind == "list":
            parts += [
                "\n".join(item.lines)
                for i, item in enumerate(block.items)
                if (k, i) not in droppable
            ]
        else:
            parts.append("\n".join(block.lines))
    return "\n\n".join(parts)


def rules_of(body: str) -> list[str]:
    """The body's non-example rules and prose (paragraphs and list items outside example
    sections and example bullets), normalised for comparison across rewrites: markers, emphasis,
    case and whitespace ignored. A rewrite keeps every one of them (phrases aside)."""
    blocks, _ = parse(body)
    structure = structure_of(blocks)
    skip = example_context(structure)
    droppable = {(info.block, i) for info in structure.lists for i in info.droppable}
    out = []
    for k, block in enumerate(blocks):
        if k in skip or block.kind not in ("paragraph", "list"):
            continue
        texts = (
            [item_text(item) for i, item in enumerate(block.items) if (k, i) not in droppable]
            if block.kind == "list"
            else [block_text(block)]
        )
        out += [normalise_space(t.replace("*", "")).lower() for t in texts]
    return sorted(out)


# ---- prose that may be reworded --------------------------------------------------------------


def inline_blocks(blocks: list[Block], structure: Structure) -> list[int]:
    """Blocks whose prose may be reworded: paragraphs and lists outside examples."""
    skip = example_context(structure)
    return [k for k, b in enumerate(blocks) if b.kind in ("paragraph", "list") and k not in skip]


def free_segments(text: str, names) -> list[tuple[int, int]]:
    """The ranges of ``text`` outside every invariant span (code, quotes, identifiers...)."""
    out, last = [], 0
    for start, end in invariant_spans(text, names):
        if start > last:
            out.append((last, start))
        last = max(last, end)
    if last < len(text):
        out.append((last, len(text)))
    return out


@lru_cache(maxsize=1024)
def _phrase_pattern(phrases: tuple[str, ...]) -> re.Pattern:
    """Mentions of ``phrases``: English ones as whole words, Chinese ones anywhere (a caller
    keeps those that are words of their text: hsa.text.chinese.skip_chinese_match)."""
    alternatives = []
    for phrase in sorted(phrases, key=len, reverse=True):
        if phrase.isascii():
            alternatives.append(rf"(?<![A-Za-z0-9_\-']){re.escape(phrase)}(?![A-Za-z0-9_\-'])")
        else:
            alternatives.append(re.escape(phrase))
    return re.compile("|".join(alternatives), re.IGNORECASE)


def phrases_in(text: str, phrases) -> re.Pattern | None:
    """The pattern of the ``phrases`` that occur in ``text`` at all (a fast substring test
    first: one alternation of every table phrase is slow on long bodies)."""
    lowered = text.lower()
    present = tuple(sorted(p for p in phrases if p in lowered))
    return _phrase_pattern(present) if present else None
