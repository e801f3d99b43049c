"""The user's own data in an episode: the gold's string values that the user writes out.

A value the user types ("wrong check_in date" as a cancellation reason, "get_balance" as a
reference) is data, even where it holds a harness name: the gold expects it as written. The rename
kernel (:mod:`hsa.augment.rename`) leaves such values in the user's messages as they are, and
verification (:mod:`hsa.verify`, ``user_data``) checks that every one is still there, as many
times; both read them here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache

from hsa.model.episode import Episode
from hsa.model.gold import Gold
from hsa.model.hook import from_user
from hsa.model.memo import BoundedMemo
from hsa.model.message import is_text_part, message_text


def gold_strings(gold: Gold) -> Iterator[str]:
    """Every non-empty string among the gold's acceptable argument values, at any depth."""
    stack: list = [
        values for turn in gold.turns for call in turn.calls for values in call.arguments.values()
    ]
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
    """``value`` where it stands on its own: not glued to identifier characters where it begins
    or ends with one (``price`` in ``get_price``, ``get_price`` in ``get_price_history``, are
    parts of other words, which a rename may move)."""
    before = r"(?<![A-Za-z0-9_])" if re.match(r"[A-Za-z0-9_]", value) else ""
    after = r"(?![A-Za-z0-9_])" if re.search(r"[A-Za-z0-9_]$", value) else ""
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
    """The values of :func:`stated`, without their counts: what a rename goes around."""
    return tuple(value for value, _ in stated(episode))


def rewrite_around_user_data(
    message: dict,
    text: str,
    rewrite: Callable[[str], str],
    keep: Callable[[], tuple[str, ...]] | None,
) -> str:
    """``text`` (of ``message``) through ``rewrite``; in the user's own message, around the
    places where a value of the user's data ``keep()`` stands on its own (:func:`standalone`;
    the longest first where two overlap), which stay as written. ``keep`` is asked only when the
    rewrite would change the text, and a text without such a place keeps the whole rewrite."""
    new = rewrite(text)
    if new == text or keep is None or not from_user(message):
        return new
    spans = _spans(text, keep())
    if not spans:
        return new
    parts, last = [], 0
    for start, end in spans:
        parts += [rewrite(text[last:start]) if start > last else "", text[start:end]]
        last = end
    parts.append(rewrite(text[last:]) if last < len(text) else "")
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
        return rewrite_around_user_data(message, content, rewrite, keep) if content else content
    if not isinstance(content, list):
        return content
    parts = [
        {**part, "text": text}
        if is_text_part(part)
        and (text := rewrite_around_user_data(message, part["text"], rewrite, keep)) != part["text"]
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
    """``text`` with every place where one of ``values`` stands on its own cut out (a line break
    in its stead, so that what stood on either side does not join)."""
    spans = _spans(text, values)
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts.append(text[last:start])
        last = end
    parts.append(text[last:])
    return "\n".join(parts)


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
