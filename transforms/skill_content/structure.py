"""What a skill body is made of, as a rewrite reads it: the title, sections (which hold examples,
which are about steps or order), lists (which may be shuffled, which items are examples), and the
prose that may be reworded (outside examples and outside every invariant span).

Whether order carries meaning is read from the words of a heading, of the paragraph introducing a
list, and of the items themselves (English, Chinese, Japanese, German, French, Spanish), and from
the Markdown: an unordered list may be shuffled only when nothing marks it as steps and every item
clearly holds what is its own (:func:`_holds_its_blocks`, :func:`_steps`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from hsa.text.chinese import han_or_kana
from hsa.text.language import function_word_language, other_script
from hsa.text.markdown import (
    FENCE,
    ITEM,
    Block,
    Item,
    block_text,
    fence_close,
    indent_of,
    is_blank,
    item_offset,
    item_text,
    parse,
)
from hsa.text.paraphrase import (
    code_and_quote_spans,
    invariant_spans,
    negations,
    normalise_space,
)
from hsa.text.position import POSITION

# A heading of examples: "Examples", "Sample replies"; not "Examples of red flags" (a catalogue
# of what the rule applies to) nor "Covered perils (e.g. fire, theft)" (reference items).
_EXAMPLE_HEADING = re.compile(
    r"(?<![A-Za-z])(examples?|samples?)(?![A-Za-z])(?!\s+of\b)|示例|例子|样例"
    r"|范例|举例|例如|比如|案例",
    re.IGNORECASE,
)
# A numbered heading ("1. Stop the water", "2) Dry", "Step 3"): sections in a counted order.
_NUMBERED_HEADING = re.compile(r"\s*(?:\d+[.):]|(?:step|phase|stage)\s+\d+\b)", re.IGNORECASE)
# A label's text and its colon: at most 30 characters more, then ":" or "：", a space, no-break
# space or narrow no-break space before it as French writes it ("Client :"). One rule for the
# labels of fields (hsa.transforms.skill_content.rewrite) and of a conversation's speakers.
LABEL_TEXT = "[^:：\n]{0,30}?"
LABEL_COLON = "[ \u00a0\u202f]?[:：]"
# A paragraph that opens with a speaker's label ("Customer:", "Agent (calm):", "Kunde :"): a turn
# of a quoted conversation.
_SPEAKER = re.compile(rf"\s*[*_]*[^\s:：*_]{LABEL_TEXT}[*_]*{LABEL_COLON}(?:\s|$)")
_ORDER_HEADING = re.compile(
    r"(?<![A-Za-z])(steps?|order|ordering|sequence|sequential|procedures?|"
    r"process|workflow|flow|pipeline|stages?|phases?|first|then|how to)"
    r"(?![A-Za-z])|流程|步骤|顺序|次序|先后|过程|阶段|首先|然后|手順|順番|ステップ|流れ|工程|段取り"
    r"|フロー|(?<!\w)(schritte?|ablauf|reihenfolge|vorgehen|verfahren|étapes?|procédure|"
    r"marche à suivre|déroulement|démarche|processus|pasos|procedimiento|proceso|flujo)(?!\w)",
    re.IGNORECASE,
)
_POSITION_REF = re.compile(
    r"(?<![A-Za-z])(above|below|preceding|previous|previously|following|"
    r"earlier|aforementioned|former|latter)(?![A-Za-z])|上面|上述|下面|"
    r"下述|前面|后面|上文|下文|前述|上一条|下一条|前一条|后一条|上一步|"
    rf"下一步|{POSITION}",
    re.IGNORECASE,
)
# Words that tie a list item to the items around it, so that the list is a sequence (steps, a
# last resort) whose order a shuffle would change: in every language the rewrite reads (English,
# Chinese, Japanese) and the European ones skills are often written in (German, French, Spanish).
# Read on an item's prose, outside code and quoted strings.
#
# Opening an item: a connective or a pronoun that continues the item before ("Then...", "If it
# has shipped...", "Otherwise...", 然后, 再, 否则, 次に, それでも, dann, sonst, puis, luego...).
_SEQUENCE_START = re.compile(
    r"(?:(then|next|after(wards?)?|before|once|finally|lastly|last|also|second(ly)?|"
    r"third(ly)?|first(ly)?|and|or|but|otherwise|else|in that case|"
    r"if (so|not|that|this|it|they|these|those|still|nothing|none|neither|all else|the above)|"
    r"when (that|this|it|done|finished|complete)|failing (that|this)|as a last resort|"
    r"at the end|in the end|eventually|subsequently|meanwhile|now|again|still|until|"
    r"only (then|after|once|when)|(start|begin) (by|with)|same|it|its|this|that|these|those|"
    r"they|such)(?![A-Za-z])"
    r"|(zuerst|zunächst|erstens|zweitens|drittens|als (erstes|nächstes|letztes)|dann|danach|"
    r"anschließend|daraufhin|schließlich|zuletzt|zum schluss|am ende|sonst|ansonsten|"
    r"andernfalls|außerdem|erst|vorher|nachher|(wenn|falls) (nicht|nichts|dies)|"
    r"d'abord|ensuite|puis|enfin|finalement|sinon|après|avant|si (rien|cela|ça|non)|"
    r"primero|luego|después|despues|entonces|finalmente|por último|al final|si (no|nada)|"
    r"de lo contrario|además|"
    # Hinglish (Hindi written in Latin letters)
    r"(sabse )?pehle|pahle|phir|fir|(uske|iske|us ke|is ke) baad|baad mein|aakhir mein|"
    r"akhir mein|ant mein|agar (nahi|nahin))(?!\w))"
    r"|然后|接着|接下来|之后|最后|最终|随后|先|再|其次|第[一二三四五六七八九十\d]|首先|并且|同时|"
    r"此外|另外|否则|如果不|若不|如果?(仍|还|都|以上|这|此|上述)|若(仍|还|都|以上)|还是|仍然|"
    r"以上|同样|但|这|此|该|它|其"
    r"|まず|最初に|はじめに|初めに|次に|続いて|その後|そのあと|それから|最後に|最後は|"
    r"最終的に|それでも|そうでなければ|さもなければ|でなければ|それ以外|その|この|これ|それ|"
    r"また|さらに|ただし",
    re.IGNORECASE,
)
# Anywhere in an item: a last resort or a condition on how the other items went ("If nothing
# helps", "as a last resort", 都不行, それでも, wenn nichts hilft...), a pointer to another
# step ("the previous step", "step 2") or to what another item lists ("reject on one of
# these"), or what was done already ("tell the user it has already been passed on", 已经转达,
# bereits, déjà): it follows the item that does it.
_FALLBACK = re.compile(
    r"(?<![A-Za-z])(?:if nothing( else)?( \w+)? (helps|helped|works|worked|fixes|fixed|"
    r"solves|resolves)|if none of|if all else fails|(as )?a last resort|failing (that|this)|"
    r"if (that|this|it|these|those|they|the above)( still)? (fails?|failed|does(n't| not)|"
    r"did(n't| not)|do(n't| not)|is(n't| not)|was(n't| not)|are(n't| not)|won't|will not|"
    r"can't|cannot)|if (it|that|this|the (problem|issue|error)) (still )?persists|if still|"
    r"(none|any|all) of the (above|previous|others)|(after|before) (these|those|the above|"
    r"all (of )?(the )?others)|(the )?previous (step|item|one|call|result)|"
    r"(from|in|to|see) step \w+|already|"
    # "one of these", "on these grounds": what another item lists; "such" points back at what
    # another item said ("without such words"), but "words such as" lists its own examples
    r"(of|on|by|with|without|about|for|to|from|in) (these|those)|such(?!\s+as(?![A-Za-z])))"
    r"(?![A-Za-z])"
    r"|(?<!\w)(?:(wenn|falls) nichts|hilft (das|dies|es) nicht|hilft nichts|"
    r"(wenn|falls) (das|dies|es) nicht|als letzte[sn]? (mittel|ausweg)|notfalls|im notfall|"
    r"si rien ne|en dernier recours|si (cela|ça|ceci) ne|"
    r"si nada|como último recurso|si (eso|esto) no|bereits|schon|déjà)(?!\w)"
    r"|都不行|都无效|均无效|都没用|仍不行|仍然不|还是不行|还不行|仍未|仍无法|依然不|实在不行|"
    r"如果以上|若以上|以上都|以上均|最后手段|万不得已|已经"
    r"|それでも|どれも|いずれも|解決しない場合|解決しなければ|直らない場合|直らなければ|"
    r"うまくいかない場合|うまくいかなければ|だめな場合|上記で|最終手段|前の手順|前のステップ|"
    r"すでに|既に",
    re.IGNORECASE,
)
# An item that claims the first or the last place for itself ("Check the balance first.", 请先…,
# まず, zuerst; "finally", 最后, 最後に, zuletzt) ties the list's order, unless the same item
# orders its own parts ("Answer yes or no first, then the number"): then the words pair inside
# it, with a follower ("then", 再, 次に, dann...).
_OPENER = re.compile(
    r"(?<![A-Za-z])(first(ly)?(?=\s*([.;,:!?)]|$))|first of all|at first|to (begin|start) with|"
    r"before anything else)(?![A-Za-z])"
    r"|(?<!\w)(zuerst|zunächst|als erstes|erstens|vorab|d'abord|en premier|premièrement|"
    r"primero|en primer lugar|antes que nada)(?!\w)"
    r"|首先|(请|要|需|应|须|得|就|必须)先|事先|预先|最先|第一步|まず|最初に|はじめに|初めに|先に",
    re.IGNORECASE,
)
_CLOSER = re.compile(
    r"(?<![A-Za-z])(finally|lastly|at the end|in the end|last of all|at last|as a last step)"
    r"(?![A-Za-z])"
    r"|(?<!\w)(schließlich|zuletzt|zum schluss|am ende|als letztes|enfin|finalement|"
    r"en dernier|finalmente|por último|al final)(?!\w)"
    r"|最后|最终|最後に|最後は|最終的に",
    re.IGNORECASE,
)
_FOLLOWER = re.compile(
    r"(?<![A-Za-z])(then|next|afterwards?|after that|second(ly)?|later)(?![A-Za-z])"
    r"|(?<!\w)(dann|danach|anschließend|zweitens|später|puis|ensuite|luego|después|despues|"
    r"entonces)(?!\w)"
    r"|然后|再|接着|之后|其次|随后|第二|次に|それから|その後|続いて|あとで|後で",
    re.IGNORECASE,
)
# An item that directs a tool call: a call word before a code span naming it ("Call
# `cancel_booking`", "with `get_booking`", 调用 `x`, `x` を呼び出す, mit `x`), or a code span
# written as a call (`send_reset(email)`). Two items that direct calls to different tools are
# steps: what one call returns (the booking it found) is what the next acts on, and a skill body
# rarely says which calls are independent.
_CALL = re.compile(
    r"(?:(?<![A-Za-z])(?:call|calls|calling|invoke|invoking|run|running|use|using|with|via|"
    r"through|mit|über|per|verwende|verwenden|nutze|nutzen|rufe|rufen|aufrufen|avec|appelez|"
    r"appelle|appeler|utilisez|utilise|utiliser|con|llama|llamar|usa|usar|utiliza|utilizar|"
    r"mediante)\s+(?:(?:the|dem|der|das|el|la|le|l')\s*)?(?:(?:tool|outil|herramienta)\s+)?"
    r"|(?:调用|使用|用|通过|借助)\s*)`([A-Za-z_][\w.\-]*)[^`]*`"
    r"|`([A-Za-z_][\w.\-]*)[^`]*`\s*(?:を(?:呼び出|使|実行|呼ん|コール)|で)"
    r"|`([A-Za-z_][\w.\-]*)\(",
    re.IGNORECASE,
)
_ORDER_INTRO = re.compile(
    r"(?<![A-Za-z])(in (this|that|the following|the given) order|in order|"
    r"in sequence|step by step|steps?|sequence|order of|priority|"
    r"prioriti[sz]e|in turn|one by one|one after (the )?other|ranked|ranking|"
    # a ranking the list is written in: "most reliable first", "best first", "least ... last"
    r"(most|least|best|worst|highest|lowest|cheapest|fastest|safest|strongest)( \w+)? "
    r"(first|last))(?![A-Za-z])|顺序|依次|按以下|步骤|流程|优先"
    r"|順番|順に|手順|ステップ"
    r"|(?<!\w)(der reihe nach|nacheinander|reihenfolge|schritte?|dans l'ordre|étapes?|"
    r"en orden|pasos?)(?!\w)",
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
    """A paragraph ending in a colon ("The deploy file it writes:") introduces the next block;
    so does a list whose last item does ("4. Approve:", then the call at the margin)."""
    if block.kind == "list":
        return bool(block.lines) and block.lines[-1].rstrip().endswith((":", "："))
    return block.kind == "paragraph" and block_text(block).rstrip().endswith((":", "："))


# A paragraph that is an example by its look: a quoted request or reply ("Approve PO-2026-00481
# for me"), as its first character says; a turn of a conversation is one too (_SPEAKER).
_QUOTED = re.compile(r"\s*[*_]*[\"“„«「『'‘]")


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
    if block.kind == "paragraph" and not (
        _QUOTED.match(block.lines[0]) or _SPEAKER.match(block.lines[0])
    ):
        # Prose under an example heading is the section's own instruction ("To follow up,
        # call list_requisitions"; "for approving, see leave-approval-policy"), not an example.
        return False
    return not _states_rule(block_text(block))  # a paragraph or a quote that states a rule


def _one_turn(block: Block) -> bool:
    """Whether ``block`` is a paragraph of one turn of a conversation: a speaker's label opens
    it, and no other line of it opens with one."""
    if block.kind != "paragraph" or not _SPEAKER.match(block.lines[0]):
        return False
    return not any(_SPEAKER.match(line) for line in block.lines[1:])


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


# ---- lists whose order is free -------------------------------------------------------------
#
# An unordered list may be shuffled only when both hold:
# - every item holds all that is its own, so that it moves as one: CommonMark gives an item the
#   lines indented to its content (code, quotes, nested lists) and the lazy lines of its
#   paragraph; a list that leaves part of an item outside it (a code fence at the margin right
#   under the last item, a block that the last item introduces with a colon, a fence that the
#   item opens but does not close, the rest of the list after such a block) keeps its order;
# - nothing marks the list as steps: no item opens on a connective or pronoun that continues the
#   one before, names a last resort or another step, claims the first or last place for itself,
#   or points above or below; nor do two items direct calls to different tools.
# A list kept in order by mistake only loses a variant; a list shuffled by mistake tells the model
# to act in another order. Hence the burden of proof lies on shuffling.


@dataclass(frozen=True)
class _ItemReading:
    holds: bool  # every line is clearly the item's (CommonMark), any fence it opens closed
    colon: bool  # it ends in prose with a colon: it introduces what comes after it
    prose: str  # its text outside code blocks, on one line


@lru_cache(maxsize=65536)
def _read_item(lines: tuple[str, ...]) -> _ItemReading:
    match = ITEM.match(lines[0])
    if match is None:
        return _ItemReading(False, False, " ".join(line.strip() for line in lines))
    offset = item_offset(match)
    prose: list[str] = []
    fence = ""  # the marker of the fence the item has open
    first = lines[0][match.end() :]
    opening = FENCE.match(first)
    if opening:
        fence, state = opening.group(1), "code"
    elif first.strip():
        prose.append(first.strip())
        state = "prose"
    else:
        state = "none"
    blank = False
    for line in lines[1:]:
        if is_blank(line):
            blank = True
            continue
        indent, text = indent_of(line.expandtabs(4)), line.strip()
        if fence:
            if indent < offset:  # the item ends here (CommonMark), its fence left open
                return _ItemReading(False, False, " ".join(prose))
            if fence_close(fence).match(text):
                fence = ""
        elif indent < offset:
            # A lazy line continues a paragraph only; under code, after a blank line, or as a
            # quote, table or HTML line it starts a block of its own, outside the item.
            if state != "prose" or blank or text[:1] in "<>|":
                return _ItemReading(False, False, " ".join(prose))
            prose.append(text)
            continue
        elif indent - offset < 4 and (opened := FENCE.match(text)):
            fence = opened.group(1)
        elif indent - offset >= 4 and (blank or state == "code"):
            state = "code"  # indented code
            blank = False
            continue
        else:
            prose.append(text)
            state, blank = "prose", False
            continue
        state, blank = "code", False
    colon = state == "prose" and prose[-1].rstrip(" *_").endswith((":", "："))
    return _ItemReading(not fence, colon, " ".join(prose))


def _reading(item: Item) -> _ItemReading:
    return _read_item(tuple(item.lines))


def _hangs_on(blocks: list[Block], k: int) -> bool:
    """Whether the block after list ``k`` belongs to its last item: right under it with no blank
    line (a code fence at the margin, which ends a list), or introduced by it with a colon."""
    if k + 1 >= len(blocks) or blocks[k + 1].kind in ("heading", "rule"):
        return False
    return not blocks[k + 1].gap or _reading(blocks[k].items[-1]).colon


def _holds_its_blocks(blocks: list[Block], k: int) -> bool:
    """Whether every item of list ``k`` holds all that is its own, so that each moves as one."""
    readings = [_reading(item) for item in blocks[k].items]
    if not all(r.holds for r in readings) or any(r.colon for r in readings[:-1]):
        return False  # a fence left open, or an item that introduces the next one
    if _hangs_on(blocks, k):
        return False
    if k and not blocks[k].gap and blocks[k - 1].kind in ("fence", "opaque", "list"):
        return False  # the rest of a list that a block right above interrupted
    # The rest of a list after a block that hangs on its first part.
    return not (k >= 2 and blocks[k - 2].kind == "list" and _hangs_on(blocks, k - 2))


@lru_cache(maxsize=65536)
def _cues(prose: str) -> tuple[bool, frozenset[str]]:
    """Whether an item's prose ties it to the other items, and the tools it directs calls to."""
    calls = frozenset(name for m in _CALL.finditer(prose) for name in m.groups() if name)
    bare = list(prose)
    for start, end in code_and_quote_spans(prose):  # words in code or quotes are not the item's
        bare[start:end] = " " * (end - start)
    text = "".join(bare)
    if _starts(_SEQUENCE_START, text) or _FALLBACK.search(text) or _refers_to_position(text):
        return True, calls
    for opener in _OPENER.finditer(text):
        rest = text[opener.end() :]
        if not (_FOLLOWER.search(rest) or _CLOSER.search(rest)):
            return True, calls  # "Check the balance first."
    for closer in _CLOSER.finditer(text):
        before = text[: closer.start()]
        if not (_OPENER.search(before) or _FOLLOWER.search(before)):
            return True, calls  # "... and finally ..." with nothing before it in the item
    return False, calls


def _steps(items: list[Item]) -> bool:
    """Whether a list's items read as steps (see above)."""
    cues = [_cues(_reading(item).prose) for item in items]
    if any(tied for tied, _ in cues):
        return True
    calling = [calls for _, calls in cues if calls]
    return len(calling) >= 2 and len(frozenset().union(*calling)) >= 2


# The languages whose words the cues above read in Latin script; Chinese and Japanese are read
# wherever their characters stand.
_CUE_LANGUAGES = frozenset({"en", "de", "fr", "es"})


def _cues_read(blocks: list[Block]) -> bool:
    """Whether the cues can read the body: it holds Chinese or Japanese, or its function words
    are those of a language the cues know (or, with none, its letters are ASCII). An Italian
    body's "Per prima cosa ... Poi ... Infine" is a sequence no table sees, and a list whose
    order cannot be read is not free."""
    texts = [block_text(block) for block in blocks]
    if any(map(han_or_kana, texts)):
        return True
    if other_script(*texts):
        # Written mostly in Cyrillic, Arabic, Greek...: a quoted English sentence ("I want to
        # pay it off in six months") gives English function words to a Russian body.
        return False
    language = function_word_language(*texts)
    if language is not None:
        return language in _CUE_LANGUAGES
    # No function word tells: a body of ASCII letters (a terse German "- Sei freundlich.") is read
    # as the cues' languages are; letters beyond ASCII (Polish, Russian, Greek...) may be in a
    # language none of them is.
    return all(ch.isascii() for text in texts for ch in text if ch.isalpha())


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
            bool(_ORDER_HEADING.search(heading) or _NUMBERED_HEADING.match(heading)),
        )
        if section.examples and not any(blocks[k].kind == "heading" for k in range(a + 1, b)):
            section.units = [k for k in range(a + 1, b) if _movable_example(blocks, k, a + 1)]
            # A conversation written a turn a paragraph ("Customer: ...", then "Agent: ..."):
            # moved or dropped one by one, its questions and answers would pair up anew. (A
            # paragraph that holds a whole exchange, a turn a line, is an example of its own.)
            if sum(_one_turn(blocks[k]) for k in section.units) >= 2:
                section.units = []
            # Requests and the calls that answer them (a quoted request, then its JSON call):
            # moved or dropped one by one, a request would lose its call, or the section its
            # only call.
            if len({blocks[k].kind == "fence" for k in section.units}) > 1:
                section.units = []
        sections.append(section)
    # The preamble too: "the words below must never appear" opens a body whose next section is
    # the list it means.
    refers = any(
        _refers_to_position(block_text(blocks[k]))
        for s in [preamble, *sections]
        if not s.examples
        for k in range(s.start, s.end)
    )
    read = _cues_read(blocks)
    movable = [i for i, s in enumerate(sections) if not s.ordered] if read else []
    lists = []
    for section in [preamble] + sections:
        for k in range(section.start, section.end):
            block = blocks[k]
            if block.kind != "list":
                continue
            texts = [item_text(item) for item in block.items]
            intro = blocks[k - 1] if k > section.start else None
            # (an ordered list neither moves nor drops items: whether it holds is not asked)
            holds = not block.ordered and _holds_its_blocks(blocks, k)
            shuffle = (
                read
                and not block.ordered
                and len(block.items) >= 2
                and not section.ordered
                and not (
                    intro is not None
                    and intro.kind == "paragraph"
                    and _ORDER_INTRO.search(block_text(intro))
                )
                and holds
                and not _steps(block.items)
            )
            if block.ordered or not holds:
                droppable = []  # (an item that does not hold all that is its own cannot go)
            elif section.examples:
                droppable = [i for i, t in enumerate(texts) if not _states_rule(t)]
            else:
                droppable = [i for i, t in enumerate(texts) if _starts(_EXAMPLE_START, t)]
            lists.append(ListInfo(k, shuffle, droppable))
    return Structure(
        title, preamble, sections, lists, not refers and len(movable) >= 2, movable, level, deeper
    )


# A list written as one sentence: every item but the last closes with a separator ("- a;",
# "- b; and", "- c,", 、), the last with a full stop or nothing. Its punctuation belongs to the
# places, so that a moved item neither ends the sentence early nor leaves it open (the rewrite
# moves it with them, and the rules a rewrite keeps are read without it).
_ITEM_SEPARATOR = re.compile(r"(?:[;,](?:\s+(?:and|or))?|[；，、])\s*$")
_ITEM_CLOSE = re.compile(r"[.。!！]?\s*$")


def sentence_ends(items: list[Item]) -> list[str] | None:
    """Each item's closing punctuation (spaces after it included), when the list is written as
    one sentence; else None."""
    if len(items) < 2 or not all(item.lines for item in items):
        return None
    lasts = [item.lines[-1] for item in items]
    separators = [_ITEM_SEPARATOR.search(line) for line in lasts[:-1]]
    if not all(separators) or _ITEM_SEPARATOR.search(lasts[-1]):
        return None
    close = _ITEM_CLOSE.search(lasts[-1])
    assert close is not None  # it matches the empty end of any line
    return [m.group(0) for m in separators if m] + [close.group(0)]


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
    case and whitespace ignored, and a list item's closing punctuation (in a list written as one
    sentence it stays with the places: :func:`sentence_ends`). A rewrite keeps every one of them
    (phrases aside)."""
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
        if block.kind == "list":  # whether or not the list is one sentence, before or after
            texts = [_ITEM_SEPARATOR.sub("", _ITEM_CLOSE.sub("", t)) for t in texts]
        out += [normalise_space(t.replace("*", "")).lower() for t in texts]
    return sorted(out)


# ---- prose that may be reworded --------------------------------------------------------------


def inline_blocks(blocks: list[Block], structure: Structure) -> list[int]:
    """Blocks whose prose may be reworded: paragraphs and lists outside examples."""
    skip = example_context(structure)
    return [k for k, b in enumerate(blocks) if b.kind in ("paragraph", "list") and k not in skip]


# A block quote's lines inside a list item ("include this sentence once:" and the sentence, as
# "  > ..." lines, and the lazy lines that continue a quoted paragraph without ">"): words to
# say as written, as a block quote of its own is.
_QUOTED_LINE = re.compile(
    r"^[ \t]*>.*(?:\n(?![ \t]*(?:[-*+]|\d+[.)])[ \t])[ \t]*[^\s>].*)*", re.MULTILINE
)


def free_segments(text: str, names) -> list[tuple[int, int]]:
    """The ranges of ``text`` outside every invariant span (code, quotes, identifiers, a block
    quote's lines...)."""
    out, last = [], 0
    spans = invariant_spans(text, names)
    if ">" in text:
        spans = sorted(spans + [m.span() for m in _QUOTED_LINE.finditer(text)])
    for start, end in spans:
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
