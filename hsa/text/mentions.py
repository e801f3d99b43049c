r"""Find and rewrite mentions of identifiers in free text, respecting identifier boundaries.

An identifier may contain letters, digits, ``_``, ``-`` and inner dots (``math.factorial``,
``item-qa``, ``shop.item_qa``). A mention of ``get_price`` is one not glued to more identifier
characters: ``get_price_history`` and ``get-price-x`` are other names and are neither matched nor
rewritten, while ``get_price.`` at the end of a sentence and ``\`get_price\``` are mentions.

Names that are plain words (``search``) would match ordinary prose; for them only code counts:
inline code (``\`search\```, :func:`find_code_mentions` and :func:`replace_code_mentions`) and
calls written out (``search(query="x")``, :func:`find_call_mentions` and
:func:`replace_call_mentions`), in a code block or in prose alike.

A web address is no mention: ``https://bank.example/help/dispute_transaction`` or
``...?ref=item-qa`` names a page on a server, which a renamed address would not reach; the
address stays as written (and a check for stale names does not read it either).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from itertools import groupby
from operator import itemgetter

from hsa.text import sql
from hsa.text.chinese import KANA_OR_HAN
from hsa.text.holes import OTHER_CODE
from hsa.text.names import identifier_like

# Not preceded by an identifier character, nor by "<identifier char>." (inside a dotted name);
# not followed by an identifier character, nor by ".<identifier char>". Identifier characters are
# ASCII on purpose: Python's \w includes CJK, and Chinese prose glues identifiers to words
# ("请调用get_price查询") without any space.
_ID = "A-Za-z0-9_"
_BEFORE = rf"(?<![{_ID}\-])(?<![{_ID}]\.)"
# A hyphen glues a name to what follows only where an identifier goes on (``order-id``): a word
# of another script after it is prose's own suffix ("calculate_debt-запрос"), and so is a
# capitalised word, a German compound's noun ("die entity_id-Angabe", "das voo_id-Feld").
_AFTER = rf"(?![{_ID}])(?!-(?![A-ZÄÖÜ][a-zäöüß])[{_ID}])(?!\.[{_ID}])"
# A web address: ASCII URL characters only (Chinese and Japanese text and compact JSON put no
# space after one: "请看https://x.example/help，然后调用get_price", {"page":"https://...","next":...}),
# without quotes, brackets, commas or semicolons (which close an address in prose far more often
# than they belong to one), and not ending in ".", ":" or "?" (the sentence's). hsa.text.paraphrase
# keeps the same addresses (and link targets, tags, e-mail) out of a rewording.
URL = re.compile(r"https?://[A-Za-z0-9\-._~:/?#@$&+=%]*[A-Za-z0-9\-_~/#@$&+=%]")


def sub_outside_urls(pattern: re.Pattern, replace: Callable[[re.Match], str], text: str) -> str:
    """``pattern.sub(replace, text)``, leaving matches that start inside a web address."""
    addresses = _addresses(text)
    if not addresses:
        return pattern.sub(replace, text)
    return pattern.sub(lambda m: m.group(0) if _inside(m.start(), addresses) else replace(m), text)


# An absolute path without a scheme, of a web server or a file system: a request a log writes
# ("GET /api/v1/deploy_status?namespace=prod"), a file ("/var/log/get_logs.log"). At least two
# segments and not glued to a word before it, so a slash command ("/deploy") or alternatives
# ("get_price/get_stock") are none; a name in one is a segment of the path, no mention.
_PATH = (
    r"(?<![\w.:/~\-])/(?:[A-Za-z0-9\-._~%]+/)+[A-Za-z0-9\-._~%]*"
    r"(?:\?[A-Za-z0-9\-._~%&=+]*)?"
)
_ADDRESS = re.compile(rf"{URL.pattern}|{_PATH}")


def _addresses(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s web addresses and paths stand (none without a slash, the common case,
    at once)."""
    return [m.span() for m in _ADDRESS.finditer(text)] if "/" in text else []


def _outside_urls(pattern: re.Pattern, text: str) -> list[re.Match]:
    """``pattern``'s matches in ``text`` that start outside every web address."""
    addresses = _addresses(text)
    return [m for m in pattern.finditer(text) if not _inside(m.start(), addresses)]


def _inside(offset: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= offset < end for start, end in spans)


def _alternation(names) -> str:
    """``names`` as one regex alternation, longest first (so that "a.b" wins over "a" where
    both could start at one place)."""
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


@lru_cache(maxsize=4096)
def _pattern(names: tuple[str, ...]) -> re.Pattern:
    """Mentions of ``names``, as one alternation with the boundaries above. Callers pass only the
    names a cheap substring test found in the text, so the sets are small and recur; scanning in
    the regex engine is several times faster than tokenising every word in Python."""
    return re.compile(f"{_BEFORE}(?:{_alternation(names)}){_AFTER}")


def written_anywhere(names) -> NameSearch | None:
    """A search for any of ``names`` written at all, boundaries aside (None for no names): a
    text it finds nothing in mentions none of them, in any form, so one search rules out most
    texts before the scans below."""
    return NameSearch(names) if names else None


class NameSearch:
    """Whether a text writes any of some names at all (:func:`written_anywhere`).

    Its first searches test each name as a substring; once it has been asked often, it compiles
    the names into one regex, a trie (``get_(?:price|stock)`` for ``get_price`` and
    ``get_stock``). Compiling costs about 0.4 ms, which a mapping that one episode's variant
    uses (its own tools) never earns back, while a harness variant's mapping reads thousands of
    texts; and a trie, unlike an alternation of whole names, does not try every name at every
    position of the text (100 names on a 1.2 KB skill body: 165 us as an alternation, 60 us as
    substrings, 24 us as a trie)."""

    __slots__ = ("_asked", "_regex", "names")

    # Searches by substrings before the regex is compiled.
    COMPILE_AFTER = 64

    def __init__(self, names):
        self.names = tuple(sorted(set(names)))
        self._regex: re.Pattern | None = None
        self._asked = 0

    def search(self, text: str) -> bool:
        if self._regex is not None:
            return self._regex.search(text) is not None
        self._asked += 1
        if self._asked > self.COMPILE_AFTER:
            try:
                self._regex = re.compile(_trie_regex(list(self.names), 0))
            except _TooDeep:  # names that are prefixes of prefixes, a hundred deep
                self._regex = re.compile("|".join(map(re.escape, self.names)))
        return any(name in text for name in self.names)


# Groups nested deeper than this make the regex parser recurse too far (each name that is a
# prefix of the next opens one more optional group).
_MAX_NESTING = 100


class _TooDeep(Exception):
    pass


def _trie_regex(names: list[str], nesting: int) -> str:
    """The regex of ``names`` (sorted, distinct) as a trie: their common prefix, then one
    branch per next character, optional where a name ends there. Splitting a sorted list by
    prefixes costs a few calls per name, where building a node per character cost a
    millisecond for the few names of a per-episode mapping."""
    if nesting > _MAX_NESTING:
        raise _TooDeep
    if len(names) == 1:
        return re.escape(names[0])
    # Character by character, as a regex reads names (sorted: the first and last have it).
    prefix = os.path.commonprefix([names[0], names[-1]])  # noqa: RUF071
    if prefix:
        return re.escape(prefix) + _trie_regex([n[len(prefix) :] for n in names], nesting)
    ends_here = names[0] == ""  # sorted: the empty rest, if any, comes first
    rest = names[1:] if ends_here else names
    branches = [
        _trie_regex(list(group), nesting + 1) for _, group in groupby(rest, key=itemgetter(0))
    ]
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    if not ends_here:
        return body
    return (f"(?:{body})" if len(branches) == 1 else body) + "?"


def find_mentions(text: str, names) -> list[str]:
    """The names (from ``names``) mentioned in ``text``, in order of appearance."""
    if not text:
        return []
    present = {n for n in names if n in text}  # a cheap substring test rules most texts out
    if not present:
        return []
    return [m.group(0) for m in _outside_urls(_pattern(tuple(sorted(present))), text)]


def replace_mentions(text: str, mapping: Mapping[str, str], *, first_only: bool = False) -> str:
    """Rewrite every mention of a key of ``mapping`` to its value, all in one pass (so a rename
    chain a->b, b->c never turns a into c); ``first_only``: only each key's first mention."""
    if not mapping or not text:
        return text
    present = {k: v for k, v in mapping.items() if k != v and k in text}
    if not present:
        return text
    seen: set[str] = set()

    def renamed(m: re.Match) -> str:
        name = m.group(0)
        if first_only and name in seen:
            return name
        seen.add(name)
        return present[name]

    return sub_outside_urls(_pattern(tuple(sorted(present))), renamed, text)


# How a plain-word name stands as code: written between backticks, or as a call (below). Each
# form is a format of the name, whose first character is also a quick test of the text.
_INLINE_CODE = "`{}`"
_WRITTEN_CALL = "{}("


def _written(names, text: str, form: str) -> tuple[str, ...]:
    """Of ``names``, those ``text`` holds written in ``form``: a substring test before any
    pattern (most texts hold none)."""
    if not text or form.replace("{}", "")[0] not in text:
        return ()
    return tuple(sorted({n for n in names if form.format(n) in text}))


def _find_written(text: str, names, form: str, pattern_of) -> list[str]:
    present = _written(names, text, form)
    return [m.group(1) for m in _outside_urls(pattern_of(present), text)] if present else []


def _replace_written(text: str, mapping: Mapping[str, str], form: str, pattern_of, new: str):
    present = _written((k for k, v in mapping.items() if k != v), text, form)
    if not present:
        return text
    return sub_outside_urls(pattern_of(present), lambda m: new.format(mapping[m.group(1)]), text)


@lru_cache(maxsize=4096)
def _code_pattern(names: tuple[str, ...]) -> re.Pattern:
    return re.compile(f"`({_alternation(names)})`")


def find_code_mentions(text: str, names) -> list[str]:
    """Names mentioned as inline code (between backticks) in ``text``."""
    return _find_written(text, names, _INLINE_CODE, _code_pattern)


def replace_code_mentions(text: str, mapping: Mapping[str, str]) -> str:
    """Rewrite inline-code mentions (`` `old` `` -> `` `new` ``) of the keys of ``mapping``."""
    return _replace_written(text, mapping, _INLINE_CODE, _code_pattern, _INLINE_CODE)


def find_name_mentions(text: str, identifiers, words, *, spoken: bool = False) -> list[str]:
    """Mentions of harness names in ``text`` where a rename moves them: ``identifiers``
    (identifier-like names) wherever they stand, ``words`` (plain words) only as code (inline
    code or a call written out) or, in a text no person spoke (``spoken``: the user's or the
    assistant's words), glued to Chinese, Japanese or Korean prose
    (:func:`find_glued_mentions`). The rule every stale-name check reads."""
    found = (
        find_mentions(text, identifiers)
        + find_code_mentions(text, words)
        + find_call_mentions(text, words)
    )
    return found if spoken else found + find_glued_mentions(text, words)


# In Chinese, Japanese or Korean prose, a plain word written in Latin letters right against the
# text's own script ("searchで最新のプランを", "把query设为", "query에는") is no word of that
# prose: it names the tool, skill or parameter, as code would. So does one in ASCII brackets
# glued to that script, as a gloss of its word: "택배사(carrier)가", "种类(query)を". Not in
# what people say: a shopper's "我要refund" or "这个size有M吗" mixes in an English word, and a
# reply that answers in their words does too.
# Spaced as Chinese is often typeset ("和 reason 必须"), a word with that script on one side
# across a space, and no Latin word on the other, is glued as well.
@lru_cache(maxsize=4096)
def _glued_pattern(words: tuple[str, ...]) -> re.Pattern:
    alternatives = _alternation(words)
    space = "[ \u00a0]"
    return re.compile(
        rf"(?<={_CJK_NEIGHBOUR})({alternatives}){_WORD_ENDS}"
        rf"|(?<={_CJK_NEIGHBOUR}{space})({alternatives}){_WORD_ENDS}(?!{space}?[A-Za-z])"
        rf"|(?<![A-Za-z0-9_\-])({alternatives})(?={_CJK_NEIGHBOUR})"
        rf"|(?<![A-Za-z0-9_\-])(?<![A-Za-z]{space})({alternatives})(?={space}{_CJK_NEIGHBOUR})"
        rf"|(?<={_CJK_NEIGHBOUR}\()({alternatives})(?=\))"
        rf"|(?<=\()({alternatives})(?=\){_CJK_NEIGHBOUR})"
    )


# Quoted speech in that script (“这个size有M吗”, 「searchしたい」): a shopper's words a skill
# quotes mix in English words of theirs, as the shopper's own message does.
_QUOTED_SPEECH = re.compile(r"“[^”\n]*”|「[^」\n]*」|『[^』\n]*』")


def _glued_words(text: str, names) -> tuple[str, ...]:
    """Of the plain-word ``names``, those ``text`` may hold glued (a CJK text that writes them)."""
    if not names or not _CJK_OR_HANGUL_TEXT.search(text):
        return ()
    return tuple(sorted(n for n in names if n in text))


def _glued_matches(pattern: re.Pattern, text: str) -> list[re.Match]:
    """``pattern``'s matches outside web addresses and quoted speech (see above)."""
    matches = _outside_urls(pattern, text)
    if not matches or not any(quote in text for quote in "“「『"):
        return matches
    speech = [
        m.span() for m in _QUOTED_SPEECH.finditer(text) if _CJK_OR_HANGUL_TEXT.search(m.group(0))
    ]
    return [m for m in matches if not _inside(m.start(), speech)]


def _glued_name(m: re.Match) -> str:
    return next(g for g in m.groups() if g)


def find_glued_mentions(text: str, names) -> list[str]:
    """Plain-word ``names`` written glued to Chinese, Japanese or Korean prose (see above)."""
    present = _glued_words(text, names)
    if not present:
        return []
    return [_glued_name(m) for m in _glued_matches(_glued_pattern(present), text)]


def replace_glued_mentions(text: str, mapping: Mapping[str, str]) -> str:
    """Rewrite the keys of ``mapping`` written glued to Chinese, Japanese or Korean prose."""
    present = _glued_words(text, [k for k, v in mapping.items() if k != v])
    if not present:
        return text
    matches = _glued_matches(_glued_pattern(present), text)
    if not matches:
        return text
    out, at = [], 0
    for m in matches:
        out += [text[at : m.start()], mapping[_glued_name(m)]]
        at = m.end()
    return "".join(out) + text[at:]


# Arguments written as code: none, a first argument that is a string, object or list literal, or
# a keyword argument somewhere (``name=``, not ``==``); nested calls one level deep; over several
# lines (a call split in a code block), never across inline code. ``refund(s)``, ``refund(note:
# once)``, ``refund(customer's choice)`` and ``refund(10:00-17:00)`` are prose. The one rule of
# "a call written out", for names (below) and for parameter keywords (parameter_mentions).
_KEYWORD = r"[^()`]*?\b[A-Za-z_][A-Za-z0-9_]*\s*=(?!=)"  # ``name=`` inside the parentheses
_ARGS = rf"""\((?=\s*\)|\s*["'{{\[]|{_KEYWORD})(?:[^()`]|\([^()`]*\))*\)"""
_BEFORE_CALL = r"(?<![A-Za-z0-9_.\-])"
# A call written out with a keyword argument (``get_price(link_number=5)``): code in which a
# parameter is a keyword.
KEYWORD_CALL = re.compile(rf"{_BEFORE_CALL}[A-Za-z_][A-Za-z0-9_.\-]*\((?={_KEYWORD})")


@lru_cache(maxsize=4096)
def _call_pattern(names: tuple[str, ...]) -> re.Pattern:
    return re.compile(rf"{_BEFORE_CALL}({_alternation(names)})(?={_ARGS})")


def find_call_mentions(text: str, names) -> list[str]:
    """Names (from ``names``) written as calls (``refund(order_id="A1")``) in ``text``, outside
    web addresses: the form in which a plain-word name is code wherever it stands."""
    return _find_written(text, names, _WRITTEN_CALL, _call_pattern)


def replace_call_mentions(text: str, mapping: Mapping[str, str]) -> str:
    """Rewrite the keys of ``mapping`` written as calls (``refund(...)`` -> ``reimburse(...)``)."""
    return _replace_written(text, mapping, _WRITTEN_CALL, _call_pattern, "{}")


# Code between backticks, as Markdown pairs them: a whole run of backticks closes at the next run
# of the same length (a run without one opens nothing, and no backtick inside it opens anything),
# so a fenced block (```yaml ... ```) is one span and ``a `b` c`` another. Pairing
# single backticks instead would match a fence's third backtick with the next inline code and
# read everything between as code (and the code after it as prose). hsa.text.paraphrase keeps
# these spans as written.
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
# A call written out in prose, glued to its parenthesised arguments (``get_info(topic="x")``):
# code whether or not it stands between backticks.
_CALL = rf"{_BEFORE_CALL}[A-Za-z_][A-Za-z0-9_.\-]*{_ARGS}"
_CODE_OR_CALL = re.compile(rf"(?s:{CODE_SPAN.pattern})|(?P<call>{_CALL})")


# Any key in code, whatever it names: quoted before ":" or "=", or bare before "=" or ":" (not a
# port, a scheme or "::"), as the keyword patterns of parameter_mentions read one.
_ANY_KEY = re.compile(
    r"""(?<![A-Za-z0-9_.\-])(['"])([A-Za-z_][\w\-]*)\1(?=\s*[=:](?!:))"""
    r"""|(?<![A-Za-z0-9_.\-/@'"])([A-Za-z_][\w\-]*)(?=\s*=(?!=)|:(?![:/\d]))"""
)


def parameter_mentions(
    renames: Mapping[str, str],
    paths: Mapping[str, frozenset[str]] | None = None,
    arrays: frozenset[str] = frozenset(),
    arguments: Mapping[str, frozenset[str]] | None = None,
    schema_keywords: frozenset[str] = frozenset(),
    beside_other_scripts: bool = True,
) -> Callable[[str], str]:
    """A rewrite of prose for renamed parameters (``old -> new``): identifier-like names wherever
    they stand as a whole identifier; plain-word names (``size``, and hyphenated words such as
    ``follow-up``: :func:`hsa.text.names.identifier_like`) only where they are code: as
    inline code (`` `size` ``), as a keyword inside inline code (`` `check_stock(size="M")` ``,
    `` `size: M` ``, `` `{"size": "M"}` ``) or inside a call written out in prose
    (``check_stock(size="M")``), since as plain words they are ordinary prose.

    ``paths`` gives an object parameter's own properties (``resource -> {kind, path}``; an
    array parameter's, its items' properties): a path into it (``resource.kind``,
    ``resource.path[0]``), in code or prose, is a mention of the parameter wherever it stands,
    since nothing else starts with both names; a path to anything else (``resource.owner``,
    ``account.resource.kind``) is not. An index into one of the ``arrays`` parameters
    (``lines[*]``, ``packages[0].items``) is such a path too.

    ``arguments`` (each tool's name -> the names of its properties at any depth) tells the keys
    of a call from those of other data: with it, a keyword in code or in a call is the
    parameter's only where that code names a tool with the parameter, or where every key it has
    is some tool's property (an arguments object, `` `size: M` ``). A Kubernetes manifest
    (``kind:``, ``spec:``, ``replicas:``) or a ``kubectl patch`` JSON in a skill is the cluster's
    data, which a renamed key would break. So is a JSON Schema (code whose keys are all
    ``schema_keywords``, ``type`` among them: ``{"type": "string", "format": "date"}``), whatever
    properties tools have named like its keywords.

    ``beside_other_scripts``: whether a plain word beside a word of a script written with
    spaces (Cyrillic, Arabic...) names the parameter; not in code-mixed prose, whose Latin words
    are its own (hsa.text.language.mixes_latin_words)."""
    indexed = frozenset(arrays) & set(renames)
    steps = {**dict.fromkeys(indexed, frozenset()), **(paths or {})}
    into = _paths_into(
        {k: v for k, v in steps.items() if k in renames and (v or k in indexed)}, renames, indexed
    )
    identifiers = {k: v for k, v in renames.items() if identifier_like(k)}
    words = {k: v for k, v in renames.items() if not identifier_like(k)}
    alternatives = _alternation(words)
    # A keyword: the name quoted (``"size": "M"``, ``'size'=``) or bare before "=" in a call,
    # and in inline code also bare right before ":" (``size: M``), but not a port or a scheme
    # (``host:8080``, ``http://``) nor a name inside a string or a path (``q="size=M"``,
    # ``/size``), nor a key of a query string (``Appointment?status=booked&date=...``: the
    # server's own search parameters).
    quoted = rf"(?<![A-Za-z0-9_.\-])(['\"])({alternatives})\1(?=\s*[=:](?!:))"
    bare = rf"(?<![A-Za-z0-9_.\-/@'\"?&])({alternatives})"
    in_call = re.compile(rf"{quoted}|{bare}(?=\s*=)")
    in_code = re.compile(rf"{quoted}|{bare}(?=\s*=|:(?![:/\d]))")
    # In prose too, a plain word glued to "=" and a value is an assignment, code wherever it
    # stands: a hook's feedback "temperature=28 is outside the range", a reply "set level=3".
    # Not "a = b", "x==y", nor a query string's "?level=3" or "&limit=50", with or without the
    # address's scheme (a pasted "shop.example/inventory?sku=1&limit=50"); nor a one-letter
    # name, a variable of the text's own ("a quadratic equation where a=2, b=6": BFCL).
    assigned = _alternation(w for w in words if len(w) > 1)
    code_call_or_assignment = (
        re.compile(
            rf"{_CODE_OR_CALL.pattern}|(?<![?&])(?<![A-Za-z0-9_.\-/@'\"])"
            rf"(?P<assignment>{assigned})(?==[^=\s])"
        )
        if any(len(w) > 1 for w in words)
        else _CODE_OR_CALL
    )

    def renamed(m: re.Match) -> str:
        if m.group(2) is not None:
            return m.group(1) + words[m.group(2)] + m.group(1)
        if _binds_a_variable(m):
            return m.group(0)
        return words[m.group(3)]

    # Glued to Chinese, Japanese or Korean prose, a plain word names the parameter
    # (:func:`_glued_pattern`). So does one beside a word of a script written with spaces
    # (Cyrillic, Arabic, Greek, Hebrew, Hangul...): "передавайте числом в amount",
    # "مرّر رمز المطار في origin", "بـseat".
    beside = (
        re.compile(
            rf"(?:{_AFTER_SPACED}){_NO_LATIN_BEFORE}({alternatives}){_WORD_ENDS}{_NO_LATIN_AFTER}"
            rf"|(?<![A-Za-z0-9_\-]){_NO_LATIN_BEFORE}({alternatives}){_WORD_ENDS}"
            rf"(?={_BEFORE_SPACED}){_NO_LATIN_AFTER}"
        )
        if words and beside_other_scripts
        else None
    )

    # Every tool property, read once for both readers: whether code is about arguments. The new
    # names too: the identifier-like names are renamed first, so an example of arguments that
    # mixes them with plain words (``{"mode": "sea", "quote_id": "Q-1"}``) reads with its new
    # key by the time its plain words are asked about.
    keys = (
        None
        if arguments is None
        else frozenset().union(*arguments.values()) | frozenset(renames.values())
    )
    about_arguments = (
        None if keys is None else _arguments_reader(arguments, keys, words, schema_keywords)
    )

    def keywords(span: re.Match, addresses: list[tuple[int, int]]) -> str:
        text = span.group(0)
        if span.groupdict().get("assignment") is not None:
            return text if _inside(span.start(), addresses) else words[text]
        if span.group("call") is None:
            whole = replace_code_mentions(text, words)  # the span is the name (`size`)
            if whole != text:
                return whole
            pattern = in_code
        else:
            pattern = in_call
        if about_arguments is not None and not about_arguments(text):
            return text  # another system's data (a manifest, a query): its keys are its own
        return sub_outside_urls(pattern, renamed, text)

    about_code = (
        None if keys is None else _arguments_reader(arguments, keys, renames, schema_keywords)
    )

    def rewrite(text: str) -> str:
        if about_code is not None and ("```" in text or "~~~" in text):
            # A fenced block of another system's code is its data, whole: a query of its
            # database (```sql, or a block of SQL with no language named: a renamed column,
            # ``invoice-id``, breaks it), code in any language tool calls are not written in
            # (CALL_LANGUAGES), or code whose keys are not all tool properties and that names
            # no tool with the parameter (a script reading rows, ``{"invoice_id":
            # r["invoice_id"], "name": ...}``).
            return _outside_code_of_others(text, outside_sql, about_code)
        return outside_sql(text)

    def outside_sql(text: str) -> str:
        # SQL in a code span or a quoted string (`SELECT user_id ... GROUP BY user_id`, a
        # written call's query="... WHERE date = '2024-04-14'") is the database's: its columns
        # are its own, whatever parameters are spelled like them (hsa.text.sql).
        spans = _sql_spans(text) if sql.HINT.search(text) else []
        punched = OTHER_CODE.punch(text, spans) if spans else None
        if punched is None:
            return rewrite_prose(text)
        masked, held = punched
        return OTHER_CODE.fill(rewrite_prose(masked), held)

    def rewrite_prose(text: str) -> str:
        if not text:
            return text
        if into is not None and ("." in text or "[" in text):
            # First, and only a path: the rules below never read a name followed by ".x", so
            # a swap (a -> b, b -> a) renames no path twice.
            text = into(text)
        text = replace_mentions(text, identifiers)
        # a substring test first: most texts (every message of every row) name no word at all
        if not any(w in text for w in words):
            return text
        if "`" in text or "(" in text or "=" in text:
            # Code spans, written-out calls and assignments in one pass, each span once: a swap
            # (a -> b, b -> a) must not rename a name twice.
            addresses = _addresses(text)
            text = code_call_or_assignment.sub(lambda span: keywords(span, addresses), text)
        if _CJK_OR_HANGUL_TEXT.search(text):
            text = replace_glued_mentions(text, words)
        if beside is not None and _SPACED_SCRIPT_TEXT.search(text):
            text = sub_outside_urls(beside, lambda m: words[m.group(1) or m.group(2)], text)
        return text

    return rewrite


# A statement of a block of code that binds a variable: at the start of its line, maybe declared
# (``const``, ``let``, ``var``), the name, then "=" with a space before it or after a declaration
# (``query = "SkyShop"``, ``const limit=20``); not "==". A call's keyword is written glued
# (``query=query``), and so are the lines of a list of arguments (``size=2``).
_LINE_HEAD = re.compile(r"[ \t]*(?P<declared>(?:const|let|var)[ \t]+)?")
_SPACED_BINDING = re.compile(r"[ \t]+=(?!=)")
_GLUED_BINDING = re.compile(r"[ \t]*=(?!=)")


def _binds_a_variable(m: re.Match) -> bool:
    """Whether the name ``m`` matched is a variable a statement of code binds (see above): the
    program's own name, which a call may then pass (``get_info(query=query)``), not a keyword."""
    text, start = m.string, m.start()
    head = _LINE_HEAD.fullmatch(text, text.rfind("\n", 0, start) + 1, start)
    if head is None:
        return False
    after = _GLUED_BINDING if head.group("declared") else _SPACED_BINDING
    return after.match(text, m.end()) is not None


# A letter of Chinese, Japanese (kana) or Korean (Hangul) script, as a pattern and a search.
_CJK_OR_HANGUL = f"[{KANA_OR_HAN}\uac00-\ud7af]"
_CJK_OR_HANGUL_TEXT = re.compile(_CJK_OR_HANGUL)
# What a name written in such prose may stand against: its letters, and the punctuation and
# full-width forms it writes around a name (、。「」 U+3000-U+303F; （）：， U+FF00-U+FFEF):
# "種別（category）は", "「message」は".
_CJK_NEIGHBOUR = f"[{KANA_OR_HAN}\uac00-\ud7af\u3000-\u303f\uff00-\uffef]"
# A letter of an alphabet written with spaces between words, other than Latin: Greek, Cyrillic,
# Armenian, Hebrew, Arabic (with its tatweel, "الـamount"), the Indic scripts, Thai, Georgian,
# Hangul; and the marks that set a Latin word's direction inside right-to-left text (U+200E,
# U+200F, U+061C, around "month" in an Arabic sentence). A Latin word beside one, maybe across
# a space, a quotation mark or a bracket, is foreign to that prose.
_SPACED_SCRIPT = (
    "[\u0370-\u03ff\u0400-\u052f\u0531-\u058f\u0590-\u05ff\u0600-\u06ff\u0750-\u077f"
    "\u08a0-\u08ff\u0900-\u0dff\u0e00-\u0e7f\u10a0-\u10ff\uac00-\ud7af\ufb1d-\ufdff"
    "\ufe70-\ufeff\u200e\u200f\u061c]"
)
_SPACED_SCRIPT_TEXT = re.compile(_SPACED_SCRIPT)
# A Latin word alone among the words of such a script: one of its sides is a letter of the
# script (maybe across a space, a dash, a quotation mark or a bracket: "в amount,", "(limit —
# не больше 12)", "urgency «аварийная»"), and neither side is another Latin word ("customer
# service единого", «amount due», "six months»" are English phrases, whose words are their
# own). Lookbehinds are of fixed widths, so each width is written out.
_O = _SPACED_SCRIPT
_AFTER_SPACED = (
    f"(?<={_O})|(?<={_O}[ \u00a0«“„\"'(\\[])|(?<={_O} [«“„\"'(\\[])|(?<={_O} [—–-] )|(?<={_O}[—–] )"
)
_BEFORE_SPACED = f"[ \u00a0]?[»”\"')\\],;:.!?]?[ \u00a0]?(?:[—–-][ \u00a0])?[«“„\"'(\\[]?{_O}"
_NO_LATIN_BEFORE = "(?<![A-Za-z][ \u00a0])(?<![A-Za-z][ \u00a0][«“„\"'(\\[])"
_NO_LATIN_AFTER = "(?![ \u00a0]?[»”\"')\\]]?[ \u00a0]?[A-Za-z])"
# Where a plain word written in Latin letters ends: no identifier character follows, nor a
# hyphen ("email-рассылку" is one word of the prose).
_WORD_ENDS = "(?![A-Za-z0-9_\\-])"


# A fenced block of code (```lang ... ```), and the info strings of the languages that tool calls
# and their arguments are written in (as data: JSON, YAML; as code: Python, JavaScript; or with no
# language named). A block in any other language is another system's code, whatever keys it
# holds: a query (```sql: `SELECT invoice_id`; ```promql: `{namespace="payments"}`, whose label
# matchers read as arguments), a shell command, a manifest of its own.
CALL_LANGUAGES = frozenset(
    {
        "",
        "json",
        "jsonc",
        "json5",
        "jsonl",
        "ndjson",
        "yaml",
        "yml",
        "toml",
        "xml",
        "python",
        "py",
        "python3",
        "py3",
        "pycon",
        "javascript",
        "js",
        "mjs",
        "jsx",
        "typescript",
        "ts",
        "tsx",
        "text",
        "txt",
        "plaintext",
        "plain",
    }
)
_FENCED_BLOCK = re.compile(
    r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*\n(.*?\n)??[ \t]*\1[`~]*[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


def _outside_code_of_others(
    text: str, rewrite: Callable[[str], str], about_arguments: Callable[[str], bool]
) -> str:
    """``text`` through ``rewrite``, but its fenced blocks of other systems' code (in a language
    tool calls are not written in, :data:`CALL_LANGUAGES`, or code :func:`_arguments_reader`
    finds no tool arguments in), which stay as written."""
    parts, last = [], 0
    for block in _FENCED_BLOCK.finditer(text):
        body = block.group(3) or ""
        if (
            block.group(2).lower() not in CALL_LANGUAGES
            or sql.sql_statement(body)
            or not about_arguments(body)
        ):
            parts += [rewrite(text[last : block.start()]), block.group(0)]
            last = block.end()
    if not parts:
        return rewrite(text)
    parts.append(rewrite(text[last:]))
    return "".join(parts)


# A quoted string, in code or prose: triple-quoted (a Python block's query over lines), or on one
# line; a single quote only where no letter is glued to it outside ("don't", "the user's" are
# no quotes).
_QUOTED = re.compile(
    r'"""(?P<triple_double>[\s\S]*?)"""'
    r"|'''(?P<triple_single>[\s\S]*?)'''"
    r'|"(?P<double>(?:[^"\\\n]|\\.)*)"'
    r"|(?<![A-Za-z0-9])'(?P<single>(?:[^'\\\n]|\\.)*)'(?![A-Za-z0-9])"
)


def _sql_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` writes SQL (hsa.text.sql), in order, none overlapping: a quoted string's
    content (a statement or a clause it opens with), and a code span (one or two backticks)
    that is SQL once its strings are held apart, whole."""
    strings: list[tuple[int, int]] = []
    quoted: list[tuple[int, int]] = []  # every string's content, SQL or not
    for m in _QUOTED.finditer(text):
        group = m.lastgroup
        if group is None:
            continue
        quoted.append(m.span(group))
        if sql.quoted_sql(m.group(group)):
            strings.append(m.span(group))
    spans: list[tuple[int, int]] = []
    for m in CODE_SPAN.finditer(text):
        if len(m.group(1)) > 2:
            continue  # a fence, read block by block (_outside_code_of_others)
        start, end = m.span(2)
        # every string held apart: a call's query="SELECT ..." is no SQL of the call's own
        code = text[start:end]
        for a, b in reversed([(a, b) for a, b in quoted if start <= a and b <= end]):
            code = code[: a - start] + code[b - start :]
        if sql.written_in_sql(code):
            spans.append(m.span())
    return sorted(
        spans + [(a, b) for a, b in strings if not any(s <= a and b <= e for s, e in spans)]
    )


@lru_cache(maxsize=1024)
def _naming(tools: tuple[str, ...]) -> re.Pattern:
    """Any of ``tools`` named in code: an identifier-like name as a whole identifier; a
    plain-word name (``status``, ``get``, ``apply``) only as a call is named, called
    (``status(``), as a quoted value (``"name": "status"``, not the key ``"status":``) or after
    ``tool:``/``name:``/``function:``. A manifest's ``status:`` key or a script's ``get`` names
    no tool, and its keys are its own. Cached: every rename of a harness's parameters reads its
    code with the same tools, and only where code holds a keyword."""
    names = [t for t in tools if identifier_like(t)]
    words = [t for t in tools if not identifier_like(t)]
    parts = [rf"{_BEFORE}(?:{_alternation(names)}){_AFTER}"] if names else []
    if words:
        word = _alternation(words)
        parts += [
            rf"{_BEFORE}(?:{word})(?=\s*\()",
            rf"(['\"])(?:{word})\1(?!\s*:)",
            rf"\b(?:tool|name|function)['\"]?\s*[:=]\s*['\"]?(?:{word}){_AFTER}",
        ]
    return re.compile("|".join(parts))


_INFO_STRING = re.compile(r"\A[A-Za-z0-9_+.\-]*[ \t]*\n")


def _object_keys(code: str) -> set[str] | None:
    """The top-level keys of ``code`` that is one JSON object (in backticks or not), or None:
    what an arguments object names are its own keys; those inside a value are what the value
    holds (a free-keyed map, ``"properties": {"adjuster": "Kim"}``, names no parameter)."""
    # a fenced block's info string ("json" after the backticks) is no part of its code
    text = _INFO_STRING.sub("", code.strip().strip("`"), count=1).strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return set(value) if isinstance(value, dict) else None


def _arguments_reader(
    arguments: Mapping[str, frozenset[str]],
    keys: frozenset[str],
    words: Mapping[str, str],
    schema_keywords: frozenset[str],
) -> Callable[[str], bool]:
    """Whether a piece of code is about tool arguments (see :func:`parameter_mentions`):
    ``keys`` is every tool's property names, ``words`` the renamed names."""
    tools = tuple(sorted(tool for tool, names in arguments.items() if names & set(words)))

    def about(code: str) -> bool:
        # The pattern is made at the first code read, not with the reader: most harnesses
        # have no code that asks, and each harness of its own needs a pattern of its own.
        if tools and _naming(tools).search(code):
            return True
        found = _object_keys(code)
        colons = True  # whether every key is written as a schema writes one (``"type": ...``)
        if found is None:
            matches = list(_ANY_KEY.finditer(code))
            found = {m.group(2) or m.group(3) for m in matches}
            colons = all(code[m.end() :].lstrip().startswith(":") for m in matches)
        if "type" in found and found <= schema_keywords and colons:
            # A JSON Schema (a claims tool's `type`, `format`, `items` aside); not a keyword
            # argument (`type="suivi"`), which only a call writes.
            return False
        return found <= keys

    return about


def _paths_into(
    paths: Mapping[str, frozenset[str]], renames: Mapping[str, str], arrays: frozenset[str]
) -> Callable[[str], str] | None:
    """A rewrite of the paths into renamed object and array parameters (see
    :func:`parameter_mentions`)."""
    if not paths:
        return None
    pattern = re.compile(
        rf"{_BEFORE}({_alternation(paths)})(?=((?:\[[^\]\s]*\])*)\.([A-Za-z_][{_ID}\-]*)"
        rf"|(\[[^\]\s]*\]))"
    )

    def renamed(m: re.Match) -> str:
        old, indexes, step, index = m.group(1), m.group(2), m.group(3), m.group(4)
        if (indexes or index) and old not in arrays:
            return old  # an index into a name that is no array parameter's
        return renames[old] if indexes or index or step in paths[old] else old

    return lambda text: sub_outside_urls(pattern, renamed, text)
