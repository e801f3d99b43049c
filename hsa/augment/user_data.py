"""The user's own data in an episode: the gold's string values that the user writes out.

A value the user types ("wrong check_in date" as a cancellation reason, "get_balance" as a
reference) is data, even where it holds a harness name: the gold expects it as written. The rename
kernel (:mod:`hsa.augment.rename`) leaves such values as they are wherever they stand in the
conversation (the user's words, a tool result that echoes them, a reply that repeats them), and
verification (:mod:`hsa.verify`, ``user_data``) checks that every one is still in the user's
words, as many times; both read them here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache

import orjson

from hsa.model.episode import Episode
from hsa.model.gold import Gold
from hsa.model.harness import Harness
from hsa.model.hook import from_user, hook_feedback
from hsa.model.memo import BoundedMemo
from hsa.model.message import answered_calls, is_text_part, json_result, message_text
from hsa.model.schema import property_names
from hsa.text.holes import USER_DATA
from hsa.text.mentions import CODE_SPAN
from hsa.text.names import identifier_like
from hsa.text.sql import written_in_sql


def gold_strings(gold: Gold) -> Iterator[str]:
    """Every non-empty string among the gold's acceptable argument values, at any depth."""
    return strings_in(
        [values for turn in gold.turns for call in turn.calls for values in call.arguments.values()]
    )


def strings_in(values: list) -> Iterator[str]:
    """Every non-empty string in ``values`` (JSON data), at any depth, dict keys aside."""
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if value:
                yield value
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())


@lru_cache(maxsize=4096)
def standalone(value: str) -> re.Pattern:
    """``value`` where it stands on its own: not glued to a name's characters where it begins or
    ends with one (``price`` in ``get_price``, ``get_price`` in ``get_price_history``,
    ``entretien`` in ``planification-entretien``, ``yamato`` in ``yamato.cool`` are parts of
    other names, which a rename may move whole); a hyphen or a dot between two words glues
    them, a full stop after a word does not."""
    before = r"(?<![A-Za-z0-9_\-])(?<![A-Za-z0-9_]\.)" if re.match(r"[A-Za-z0-9_]", value) else ""
    after = r"(?![A-Za-z0-9_\-])(?!\.[A-Za-z0-9_])" if re.search(r"[A-Za-z0-9_]$", value) else ""
    return re.compile(before + re.escape(value) + after)


def occurrences(value: str, text: str) -> int:
    """How often ``value`` stands in ``text`` on its own (:func:`standalone`)."""
    if value not in text:
        return 0
    return len(standalone(value).findall(text))


def user_words(episode: Episode) -> list[str]:
    """The texts of the user's own messages (hook feedback, which retry policies may cut, is
    the harness's words, not the user's)."""
    return [message_text(m) for m in episode.messages if from_user(m)]


# What the user states of each episode, by the episode object (held by the entry, so its id is
# no other's while remembered): every variant of an episode asks it of the same original.
_STATED: BoundedMemo[tuple[Episode, tuple[tuple[str, int], ...]]] = BoundedMemo(1024)


def stated(episode: Episode) -> tuple[tuple[str, int], ...]:
    """(value, times the user writes it) for every gold string value the user writes out."""
    return _STATED.get(id(episode), lambda: (episode, _stated(episode)))[1]


def user_values(episode: Episode) -> tuple[str, ...]:
    """The values of :func:`stated`, without their counts."""
    return tuple(value for value, _ in stated(episode))


# The data of each episode's conversation, by the episode object (held by the entry, as in
# ``_STATED``): asked only of a text a rename would change, once per episode.
_DATA: BoundedMemo[tuple[Episode, tuple[str, ...]]] = BoundedMemo(1024)


def conversation_data(episode: Episode) -> tuple[str, ...]:
    """What a rename goes around in every message of ``episode``: the user's own values
    (:func:`user_values`), every string its tool calls pass, the task's data, which the gold
    compares and no rename touches in the calls themselves (a tool result that echoes
    ``"night_mode"``, a reply that repeats it, hold that data, though a hook is called so too),
    and every string the gold requires a reply to contain. The skill loader's skill ids are
    names, renamed in its calls, not data."""
    return _DATA.get(id(episode), lambda: (episode, _conversation_data(episode)))[1]


def _conversation_data(episode: Episode) -> tuple[str, ...]:
    called = _called_strings(episode)
    # What the gold requires a reply to say ("remote_only"), said as written.
    required = (s for turn in episode.gold.turns for s in turn.reply.get("contains", ()) if s)
    worded = names_in_users_words(episode, episode.harness.names)
    return tuple(sorted(set(user_values(episode)) | set(called) | set(required) | worded))


# The strings each episode's calls pass, by the episode object (held by the entry, as in
# ``_STATED``): the conversation's data and the names its values write both read them, and
# every call's arguments are parsed once.
_CALLED: BoundedMemo[tuple[Episode, tuple[str, ...]]] = BoundedMemo(1024)


def _called_strings(episode: Episode) -> tuple[str, ...]:
    """Every string the episode's calls pass (the skill loader's aside), at any depth."""
    return _CALLED.get(id(episode), lambda: (episode, _strings_called(episode)))[1]


def _strings_called(episode: Episode) -> tuple[str, ...]:
    passed = [
        arguments
        for message in episode.messages
        for call in message.get("tool_calls") or ()
        if call["function"]["name"] != episode.harness.skill_loader
        and isinstance(arguments := orjson.loads(call["function"]["arguments"]), dict)
    ]
    return tuple(strings_in([value for arguments in passed for value in arguments.values()]))


def message_data(
    episode: Episode, message: dict, text: str | None = None, names: frozenset[str] | None = None
) -> tuple[str, ...]:
    """What a rename goes around in ``text`` (by default the message's own), of ``message`` of
    ``episode``: the conversation's data (:func:`conversation_data`) and the names its calls
    pass inside their values (:func:`passed_names`; ``names``: which names those may be, by
    default the harness's; verification asks of a variant for the names its renames took away).
    Those names, and the parameters' names a result lists as its data (:func:`listed_names`),
    are the data's in a tool's result and in the user's words. Not in a hook's
    feedback, which says what the variant's hook says (its config and the call moved with the
    renames); in the assistant's words, not a tool's, skill's or hook's name (the assistant
    means its own tools: "I'll run buscar_voos again", though a note it passed wrote
    ``buscar_voos(...)``), nor an argument's name written as a keyword (``account_id="0015..."``:
    the parameter) or one the message's own calls pass, written as code (its words describe
    those calls)."""
    data = conversation_data(episode)
    if hook_feedback(message):
        return data
    passed = passed_names(episode, names) + listed_names(episode, message, names)
    if passed and message.get("role") == "assistant":
        arguments = _arguments(episode.harness)
        text = message_text(message) if text is None else text
        own = _own_arguments(message, text)
        passed = tuple(
            n for n in passed if n in arguments and n not in own and not _as_keyword(n).search(text)
        )
    return data + passed if passed else data


def _own_arguments(message: dict, text: str) -> set[str]:
    """The argument names the message's own calls pass that its text writes as code ("passing
    `region` EMEA and `quarter` 2025-Q2"): there the words describe those calls. Written as a
    plain word ("grouping sales.orders by customer_id") the name may be the column the calls'
    query selects, and stays the data's."""
    spans = [m.group(0) for m in CODE_SPAN.finditer(text)] if "`" in text else []
    if not spans:
        return set()
    names: set[str] = set()
    for call in message.get("tool_calls") or ():
        # loaded, a call's arguments are a JSON object (hsa.model.episode.parse_arguments)
        arguments = orjson.loads(call["function"]["arguments"])
        names.update(n for n in arguments if any(occurrences(n, span) for span in spans))
    return names


@lru_cache(maxsize=4096)
def _as_keyword(name: str) -> re.Pattern:
    """``name`` written as a call's keyword, glued to its value (``name="x"``, ``name=3``): not a
    comparison (``name = 'x'`` in SQL, ``==``), nor a key of JSON data."""
    word = re.escape(name)
    return re.compile(rf"(?<![\w-]){word}=(?!=)")


# The words each episode's calls write inside their values, and those its SQL values write, by
# the episode object (held by the entry, as in ``_STATED``).
_PASSED: BoundedMemo[tuple[Episode, tuple[frozenset[str], frozenset[str]]]] = BoundedMemo(1024)


def passed_names(episode: Episode, names: frozenset[str] | None = None) -> tuple[str, ...]:
    """The harness's names that the calls write inside the values they pass: the column
    ``user_id`` of the query a ``run_sql`` call runs, beside a ``get_user_profile(user_id)``
    tool; the project's function ``read_file`` that a code search looks for, beside a tool
    ``read_file``. In that conversation the word is the data's: the result that lists the
    column, the database's error about it and the file that defines the function hold the
    data, which a rename must not reach (renamed, the query would select a column its own
    result does not have, and the search find nothing it shows). An argument's name written as
    an identifier (``passageiro_id``) counts in any value; one that is a plain word
    (``destino``, ``date``) only in a value that is SQL, where it is a column (in an e-mail's
    body, "destino Lisboa" is a word). A tool's, skill's or hook's name (an identifier) counts
    where a value writes it as code (``read_file\\(``, ``def read_file(``) or in SQL (``WHERE
    tool = 'emitir_bilhete'``): a reference the user gives ("get_balance 7") is a value that
    holds the name, and the user's "then run get_balance" still means the tool."""
    harness = episode.harness
    names = _passable(harness) if names is None else names
    if not names:
        return ()
    words, in_sql = _PASSED.get(id(episode), lambda: (episode, _words_passed(episode)))[1]
    arguments = _arguments(harness)
    found = set()
    named = []
    for name in words & names:
        if name not in arguments:
            named.append(name)
        elif identifier_like(name) or name in in_sql:
            found.add(name)
    if named:
        values = _called_strings(episode)
        found.update(
            n for n in named if n in in_sql or any(_as_code(n).search(v) for v in values if n in v)
        )
    return tuple(sorted(found))


# The names each episode's results list as their data, and the parameters of the tool that
# answered each result (:func:`listed_names`), by the episode object (held by the entry, as in
# ``_STATED``).
_LISTED: BoundedMemo[tuple[Episode, tuple[frozenset[str], dict[int, set[str]]]]] = BoundedMemo(1024)


def listed_names(
    episode: Episode, message: dict, names: frozenset[str] | None = None
) -> tuple[str, ...]:
    """The tools' parameter names (of ``names`` when given) that a tool's result writes as a
    whole value where the tool that answered has no parameter of that name: a warehouse's
    column ``customer_id`` (``{"name": "customer_id"}``) beside a
    ``get_customer_profile(customer_id)`` tool, a bill's product code ``intl_roaming`` beside a
    line setting of that name. The backend lists its data: renamed, the result would list a
    column its table does not have, and a reply that repeats it a code the bill never had. In
    a result of a tool that has the parameter (``"field": "customer_id"`` of a refused call)
    the name is about the call, and moves with it."""
    listed, own = _LISTED.get(id(episode), lambda: (episode, _listed(episode)))[1]
    if names is not None:
        listed &= names
    mine = own.get(id(message))
    return tuple(sorted(listed if mine is None else listed - mine))


def _listed(episode: Episode) -> tuple[frozenset[str], dict[int, set[str]]]:
    harness = episode.harness
    arguments = _arguments(harness)
    found: set[str] = set()
    own: dict[int, set[str]] = {}
    for _, call, result in answered_calls(episode.messages):
        tool = harness.tool(call["function"]["name"])
        if tool is None:
            continue
        own[id(result)] = mine = property_names(tool.parameters)
        content = result.get("content")
        value = json_result(content) if isinstance(content, str) else None
        if value is not None:
            found.update(s for s in strings_in([value]) if s in arguments and s not in mine)
    return frozenset(found), own


# A word of a value, as names are written (``user_id``, ``invoice-id``, ``checkInDate``).
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*")


def _words_passed(episode: Episode) -> tuple[frozenset[str], frozenset[str]]:
    """The words of every value the calls pass, and of those values that are SQL."""
    values = _called_strings(episode)
    return (
        frozenset(word for value in values for word in _WORD.findall(value)),
        frozenset(
            word for value in values if written_in_sql(value) for word in _WORD.findall(value)
        ),
    )


@lru_cache(maxsize=4096)
def _as_code(name: str) -> re.Pattern:
    """``name`` as code names a function: called (``name(``, or ``name\\(`` in a pattern) or
    defined (``def name``, ``function name``)."""
    word = re.escape(name)
    return re.compile(
        rf"(?<![\w.-]){word}(?=\\?\()|\b(?:def|function|func|fn|class)\s+{word}(?![\w-])"
    )


# Each harness's argument names that name nothing else, and the names a value may write, by
# fingerprint: every episode under a harness asks.
_ARGUMENTS: BoundedMemo[frozenset[str]] = BoundedMemo(1024)
_PASSABLE: BoundedMemo[frozenset[str]] = BoundedMemo(1024)


def _arguments(harness: Harness) -> frozenset[str]:
    """The names of the tools' properties at any depth that no tool, skill or hook has."""
    return _ARGUMENTS.get(
        harness.fingerprint,
        lambda: (
            frozenset(name for tool in harness.tools for name in property_names(tool.parameters))
            - set(harness.names)
        ),
    )


def _passable(harness: Harness) -> frozenset[str]:
    return _PASSABLE.get(
        harness.fingerprint,
        lambda: _arguments(harness) | {n for n in harness.names if identifier_like(n)},
    )


# A name written as a language writes a compound (``online-banking``, ``check-in``): lowercase
# words joined by hyphens.
_HYPHENATED_WORDS = re.compile(r"[a-z]+(?:-[a-z]+)+")


def names_in_users_words(episode: Episode, names: Iterable[str]) -> set[str]:
    """Those of ``names`` written as words (:data:`_HYPHENATED_WORDS`) that the user writes in
    their own text, outside code: the customer's "Mein online-banking ist gesperrt" is their
    word, not the skill ``online-banking``; renamed there (and in the reply that repeats it), the
    user would type the id the model is meant to find. Verification asks it of a variant with
    the names its renames took away."""
    names = [name for name in names if _HYPHENATED_WORDS.fullmatch(name)]
    if not names:
        return set()
    found: set[str] = set()
    for text in user_words(episode):
        prose = CODE_SPAN.sub(" ", text)
        found.update(n for n in names if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", prose))
    return found


def rewrite_around_user_data(
    text: str,
    rewrite: Callable[[str], str],
    keep: Callable[[], tuple[str, ...]] | None,
) -> str:
    """``text`` (of any message) through ``rewrite``, around the places where a value of the
    user's data ``keep()`` stands on its own (:func:`standalone`; the longest first where two
    overlap), which stay as written. Not only in the user's words: a tool result that echoes
    the value (``{"scene": "night_mode"}``) and a reply that repeats it hold the same data.
    ``keep`` is asked only when the rewrite would change the text, and a text without such a
    place keeps the whole rewrite."""
    new = rewrite(text)
    if new == text or keep is None:
        return new
    spans = _spans(text, keep())
    if not spans:
        return new
    punched = USER_DATA.punch(text, spans)
    if punched is None:  # the text writes the holes' own characters: around them, piece by piece
        return _pieces(text, spans, rewrite, lambda value: value)
    # Rewritten whole, with each value held by a hole (hsa.text.holes): the text keeps its
    # structure (a code span around a value is still one span, where a mention beside it is
    # still code).
    masked, held = punched
    return USER_DATA.fill(rewrite(masked), held)


def _pieces(
    text: str,
    spans: list[tuple[int, int]],
    outside: Callable[[str], str],
    inside: Callable[[str], str],
) -> str:
    """``text`` with each stretch between ``spans`` through ``outside`` and each span through
    ``inside``, piece by piece (where holes cannot be used: the text writes their characters)."""
    parts, last = [], 0
    for start, end in spans:
        parts += [outside(text[last:start]) if start > last else "", inside(text[start:end])]
        last = end
    parts.append(outside(text[last:]) if last < len(text) else "")
    return "".join(parts)


def rewrite_message_text(
    message: dict,
    rewrite: Callable[[str], str],
    keep: Callable[[], tuple[str, ...]] | None,
):
    """The ``content`` of ``message`` with its text through ``rewrite`` around the user's data
    (:func:`rewrite_around_user_data`): a string, or each text part of a list of content parts
    (other parts carry no text: hsa.model.message); any other content, or content the rewrite
    leaves alone, is handed back as it is (the same object)."""
    content = message.get("content")
    if isinstance(content, str):
        return rewrite_around_user_data(content, rewrite, keep) if content else content
    if not isinstance(content, list):
        return content
    parts = [
        {**part, "text": text}
        if is_text_part(part)
        and (text := rewrite_around_user_data(part["text"], rewrite, keep)) != part["text"]
        else part
        for part in content
    ]
    return content if all(a is b for a, b in zip(parts, content, strict=True)) else parts


def _stated(episode: Episode) -> tuple[tuple[str, int], ...]:
    said = user_words(episode)
    counts = {
        v: sum(occurrences(v, text) for text in said) for v in set(gold_strings(episode.gold))
    }
    return tuple(sorted((v, n) for v, n in counts.items() if n))


def without(text: str, values: tuple[str, ...]) -> str:
    """``text`` with every place where one of ``values`` stands on its own held by a hole, as
    :func:`rewrite_around_user_data` holds it (a line break where the text writes the holes'
    characters): what stood on either side does not join, and the rest reads as it did."""
    spans = _spans(text, values)
    if not spans:
        return text
    punched = USER_DATA.punch(text, spans)
    if punched is not None:
        return punched[0]
    return _pieces(text, spans, lambda piece: piece, lambda value: "\n")


def _spans(text: str, values: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where ``values`` stand on their own in ``text``, longest value first, none overlapping,
    in order."""
    spans: list[tuple[int, int]] = []
    for value in sorted(values, key=len, reverse=True):
        if value in text:
            for m in standalone(value).finditer(text):
                if not any(m.start() < end and start < m.end() for start, end in spans):
                    spans.append(m.span())
    return sorted(spans)
