"""Reword a text with a table of interchangeable phrases, keeping everything it requires.

A :class:`PhraseTable` holds groups of phrases that say the same (``get``/``retrieve``/``obtain``;
``获取``/``查询``), each split into a ``train`` and a ``heldout`` part. :meth:`PhraseTable.paraphrase`
replaces every phrase of the table found in a text by another of the split's part, outside the
spans :func:`hsa.text.paraphrase.invariant_spans` names, so the rewording keeps every invariant of
:mod:`hsa.text.paraphrase` (the one rule skill bodies are held to as well); no member of a table
may itself hold an invariant (no number, quote, identifier or negation), which the families test.
English phrases match case-insensitively as whole words, Chinese ones as written where they are
words of the text (:mod:`hsa.text.chinese`: ``然后`` is no phrase of ``虽然后来``); an article
before a replaced English phrase follows it (``a product`` -> ``an item``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from hsa.errors import HsaError
from hsa.text.chinese import japanese, skip_chinese_match
from hsa.text.holes import USER_DATA
from hsa.text.language import reads_english
from hsa.text.paraphrase import invariant_spans


@dataclass(frozen=True)
class Phrasing:
    """Interchangeable phrases (``lang`` "en": matched case-insensitively as whole words; "zh":
    matched as written, as whole words of the text's segmentation). ``pos`` "verb": English verbs,
    which after a determiner are the nouns they are spelled like (:data:`_DETERMINER`)."""

    train: tuple[str, ...]
    heldout: tuple[str, ...]
    lang: str = "en"
    pos: str = ""

    def part(self, split: str) -> tuple[str, ...]:
        return self.train if split == "train" else self.heldout

    @property
    def members(self) -> tuple[str, ...]:
        return self.train + self.heldout


# Protected spans become holes (hsa.text.holes): never in a phrase, never matched by one.
_HOLES = USER_DATA
_ASCII_WORD = re.compile(r"[a-z]+")
# An object pronoun after a verb: a phrasal verb ("look up", "give back") cannot stand before it.
_PRONOUN = re.compile(r"\s+(?:it|them|him|her|me|us|you|this|that|these|those)\b", re.IGNORECASE)
# A word that makes the next one a noun: "the check", "a change", "its returns", "each find",
# and so after one word between ("a mailed check", "the final change"). A verb phrase written
# after one is that noun (BFCL's descriptions say "The check ..." and "the change ..."), which
# another verb would not name ("a mailed verify").
_DETERMINER = re.compile(
    r"(?<![A-Za-z0-9_\-'])(?:a|an|the|this|that|these|those|each|every|any|no|its|their|your|"
    r"our|his|her|my|one|another)\s+(?:[A-Za-z\-]+\s+)?$",
    re.IGNORECASE,
)


# Where a sentence (or a list item, a heading, a label) starts: nothing before, or a full stop,
# a colon, a line break or a bullet, maybe with an opening quote or bracket.
_SENTENCE_START = re.compile(
    r"(?:\A|[.!?:;\n。！？：；]|^[ \t]*(?:[-*+•]|\d+[.)]))[ \t]*[\"'(\[“‘«「]?[ \t]*\Z", re.M
)
# The last word before a match, and what stands between them (spaces, a hyphen).
_LAST_WORD = re.compile(r"([A-Za-z]+)[ \t\-]*\Z")


def _protect(text: str, names: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """``text`` with each (merged) invariant span swapped for a placeholder, and the spans."""
    merged: list[list[int]] = []
    for start, end in invariant_spans(text, names):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        elif end > start:
            merged.append([start, end])
    punched = _HOLES.punch(text, [(start, end) for start, end in merged])
    if punched is None:  # the caller leaves a text that writes the holes' characters alone
        raise ValueError("a text that writes the holes' characters cannot be protected")
    return punched


def _restore(text: str, kept: tuple[str, ...]) -> str:
    return _HOLES.fill(text, kept)


@lru_cache(maxsize=4096)
def _en_pattern(members: tuple[str, ...]) -> re.Pattern:
    alternatives = "|".join(re.escape(m) for m in sorted(members, key=lambda m: (-len(m), m)))
    return re.compile(
        r"(?:(?<![A-Za-z0-9_\-'])(?P<art>[Aa]n?) )?(?<![A-Za-z0-9_\-'])(?P<phrase>"
        + alternatives
        + r")(?![A-Za-z0-9_\-])",
        re.IGNORECASE,
    )


@lru_cache(maxsize=4096)
def _zh_pattern(members: tuple[str, ...]) -> re.Pattern:
    alternatives = "|".join(re.escape(m) for m in sorted(members, key=lambda m: (-len(m), m)))
    return re.compile(f"(?P<phrase>{alternatives})")


def article(old: str, word: str) -> str:
    """ "a" or "an" before ``word`` (a spelling rule with the common exceptions), capitalised
    like ``old``."""
    lower = word.lower()
    vowel = lower[:1] in "aeiou" and not lower.startswith(("uni", "use", "usu", "one", "eu"))
    vowel = vowel or lower.startswith(("hour", "honest"))
    new = "an" if vowel else "a"
    return new.capitalize() if old[:1].isupper() else new


class PhraseTable:
    """Groups of interchangeable phrases, indexed for rewording many texts fast."""

    def __init__(self, groups: Iterable[Phrasing]):
        self.groups = tuple(groups)
        self._group_of: dict[str, Phrasing] = {}
        zh = set()
        by_first_word: dict[str, list[tuple[str, str]]] = {}
        for group in self.groups:
            for member in group.members:
                self._group_of[member.lower()] = group
                if group.lang == "zh":
                    zh.add(member)
                else:
                    # A phrase the pattern matches starts at a word boundary, so its first word
                    # is a whole ASCII word of the text: looking those words up narrows the
                    # substring tests to a handful.
                    first = _ASCII_WORD.match(member.lower())
                    if first is None:
                        raise HsaError(f"English phrase {member!r} must start with a letter")
                    by_first_word.setdefault(first.group(0), []).append((member.lower(), member))
        self._zh = tuple(sorted(zh))
        self._by_first_word = {w: tuple(sorted(set(e))) for w, e in by_first_word.items()}
        self._prepared = lru_cache(maxsize=16384)(self._prepare)

    def _patterns(self, masked: str) -> tuple[re.Pattern | None, re.Pattern | None]:
        """Patterns of just the phrases that occur in ``masked`` (a substring test each): one
        alternation of every phrase, scanned over every text, is slow."""
        lowered = masked.lower()
        en = tuple(
            sorted(
                member
                for word in set(_ASCII_WORD.findall(lowered))
                for low, member in self._by_first_word.get(word, ())
                if low in lowered
            )
        )
        zh = tuple(m for m in self._zh if m in masked)
        return (_en_pattern(en) if en else None), (_zh_pattern(zh) if zh else None)

    def _prepare(self, text: str, names: tuple[str, ...]):
        """What a paraphrase of ``text`` reads, computed once per text and the ``names`` in it
        (descriptions recur in every episode of a harness)."""
        masked, kept = _protect(text, names)
        return (masked, kept, *self._patterns(masked))

    def paraphrase(
        self,
        text: str,
        split: str,
        rng: random.Random,
        names: Iterable[str] = (),
        *,
        in_japanese: bool = False,
        in_english: bool = True,
        names_a_value: bool = False,
    ) -> str:
        """``text`` with every phrase of the table replaced by another of the split's part;
        every invariant (:mod:`hsa.text.paraphrase`) and every one of ``names`` is kept. In
        Japanese (``text`` itself, or the document it belongs to: ``in_japanese``, see
        :func:`hsa.text.chinese.japanese`) no Chinese phrase is replaced; in a text that does
        not read as English (:func:`hsa.text.language.reads_english`; ``in_english``, the
        document's judgement, where the text has no function word) no English one is: German
        spells ``Maximum`` and ``Details`` as English does. ``names_a_value``: the text describes
        a value (a parameter's description), which opens with a noun phrase, so a verb it opens
        with is the noun it is spelled like ("Check number or card code": no "Verify number")."""
        if not text or _HOLES.written(text):
            return text  # text already using the placeholders' code points is left as it is
        masked, kept, en, zh = self._prepared(text, tuple(sorted(n for n in names if n in text)))
        if en is not None and not reads_english(text, default=in_english):
            en = None
        if en is None and zh is None:
            return text
        in_japanese = in_japanese or (zh is not None and japanese(text))

        def swap(match: re.Match) -> str:
            phrase = match.group("phrase")
            group = self._group_of[phrase.lower()]
            if len(phrase) > 1 and phrase.isupper() and phrase not in group.members:
                return match.group(0)  # an acronym (GET, HTTP), not the word
            if group.pos == "verb" and (
                match.group("art")
                or _DETERMINER.search(match.string, 0, match.start())
                or (names_a_value and not match.string[: match.start()].strip())
            ):
                return match.group(0)  # a noun here ("the check", "a change", "Check number")
            before = match.string[: match.start()]
            if phrase[:1].isupper() and not phrase.isupper() and not _SENTENCE_START.search(before):
                # a capital inside a sentence: a name or a placeholder ("in the format of City,
                # State"), not the word
                return match.group(0)
            # no choice that repeats the word before it ("unique identifier" -> "unique unique
            # key")
            previous = _LAST_WORD.search(before)
            repeated = previous.group(1).lower() if previous else None
            choices = [
                c
                for c in group.part(split)
                if c.lower() != phrase.lower() and c.split()[0].lower() != repeated
            ]
            if not choices:
                return match.group(0)
            new = rng.choice(choices)
            if group.pos == "verb" and " " in new and _PRONOUN.match(match.string, match.end()):
                return match.group(0)  # "look up it": the particle would go after the pronoun
            acronym = len(phrase) > 1 and phrase.isupper()
            if phrase[:1].isupper() and not acronym and not new.isupper():
                new = new[:1].upper() + new[1:]
            old_article = match.groupdict().get("art")
            return f"{article(old_article, new)} {new}" if old_article else new

        if en is not None:
            masked = en.sub(swap, masked)
        if zh is not None:
            # a Chinese phrase that is part of longer words is none (hsa.text.chinese)
            masked = zh.sub(
                lambda m: (
                    m.group(0)
                    if skip_chinese_match(m.string, m.start(), m.end(), in_japanese=in_japanese)
                    else swap(m)
                ),
                masked,
            )
        return _restore(masked, kept)
