"""Whether a text reads as English: what a table of English phrases may reword.

The phrase tables (:mod:`hsa.text.phrases`, skill bodies' synonyms) hold English words that other
languages written in Latin script spell the same way (``Maximum``, ``Minimum``, ``Details``,
``Information`` in German), so a German description would come back as "Greatest 14 Tage". A
text is judged by its function words, the most frequent words of a language and the least
likely to be borrowed: English's against those of German, French, Spanish, Italian, Portuguese
and Dutch, each language counted on its own. Words that two of them share with English (``in``,
``a``, ``an``, ``no``, ``on``, ``also``, ``was``, ``will``) count for none. A text without a
function word (``Details zur Zuzahlung`` has one; ``Order ID`` has none) takes the judgement of
the document it belongs to, as :func:`hsa.text.chinese.japanese` does for kanji.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from pathlib import Path

import yaml

from hsa.errors import HsaError
from hsa.text.mentions import CODE_SPAN
from hsa.text.names import latin_script

FUNCTION_WORDS = Path(__file__).with_name("function_words.yaml")


@lru_cache(maxsize=4)
def _function_words(
    path: Path = FUNCTION_WORDS,
) -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    """(English's function words, every other language's) from ``path``."""
    table = {
        language: frozenset(str(word).lower() for word in words)
        for language, words in yaml.safe_load(path.read_text(encoding="utf-8")).items()
    }
    english = table.pop("en")
    for language, words in table.items():
        if words & english:
            raise HsaError(
                f"{language} lists English function words {sorted(words & english)}: a word "
                f"both languages use tells neither",
                file=str(path),
            )
    return english, table


# A token: word characters and hyphens; one counts when it is a word, letters only (a function
# word inside a name, ``from_date``, ``in-store``, is none), outside inline code.
_TOKEN = re.compile(r"[\w\-]+")


def reads_english(*texts: str, default: bool = True) -> bool:
    """Whether ``texts`` read as English: more English function words than those of any other
    language of ``function_words.yaml``; ``default`` (the document's judgement) when neither
    side has more."""
    counts = _language_counts(texts)
    english = counts.pop("en")
    top = max(counts.values())
    if english == top:
        return default
    return english > top


def _language_counts(texts: tuple[str, ...]) -> dict[str, int]:
    """Each language's function words in ``texts``, English's first (``en``)."""
    english, others = 0, [0] * len(_function_words()[1])
    for text in texts:
        found_english, found_others = _counts(text)
        english += found_english
        others = [a + b for a, b in zip(others, found_others, strict=True)]
    return {"en": english, **dict(zip(_function_words()[1], others, strict=True))}


def function_word_language(*texts: str) -> str | None:
    """The language of ``function_words.yaml`` whose function words ``texts`` use the most
    (``en``, ``de``, ``fr``, ``es``, ``it``, ``pt``, ``nl``); None when they use none, or two
    languages as many."""
    counts = _language_counts(texts)
    top = max(counts.values())
    leaders = [language for language, n in counts.items() if n == top]
    return leaders[0] if top and len(leaders) == 1 else None


def other_script(*texts: str) -> bool:
    """Whether ``texts`` are written mostly in a script that is neither Latin nor Chinese or
    Japanese (Hangul, Cyrillic, Greek, Arabic...): no function word of this module's languages
    stands in such a text, so :func:`reads_english` cannot tell it from English."""
    latin = other = 0
    for text in texts:
        found_latin, found_other = _scripts(text)
        latin, other = latin + found_latin, other + found_other
    return other > latin


@lru_cache(maxsize=65536)
def _scripts(text: str) -> tuple[int, int]:
    """(Latin letters, letters of another script than Latin, Chinese or Japanese) in ``text``."""
    latin = other = 0
    for ch in text:
        if not ch.isalpha():
            continue
        if latin_script(ch):
            latin += 1
        elif unicodedata.name(ch, "").split(" ", 1)[0] not in ("CJK", "HIRAGANA", "KATAKANA"):
            other += 1
    return latin, other


@lru_cache(maxsize=65536)
def _counts(text: str) -> tuple[int, tuple[int, ...]]:
    """(English function words, each other language's) in ``text``. Cached: a harness's texts
    recur in every variant of every episode."""
    english, others = _function_words()
    prose = CODE_SPAN.sub(" ", text) if "`" in text else text
    words = [token for token in _TOKEN.findall(prose.lower()) if token.isalpha()]
    return (
        sum(word in english for word in words),
        tuple(sum(word in table for word in words) for table in others.values()),
    )


# A word in Latin letters, whole: not glued to another Latin letter, a digit, "_", "-" or "."
# (identifiers and codes are no words of prose).
_LATIN_WORD = re.compile(r"(?<![A-Za-z0-9_\-.])[A-Za-z]+(?:'[a-z]+)?(?![A-Za-z0-9_\-]|\.[A-Za-z])")


# A quotation: what a text quotes in another script is the quote's, not the text's language.
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”|«[^»\n]*»|„[^“”\n]*[“”]|「[^」\n]*」')


def mixes_latin_words(texts, names) -> bool:
    """Whether ``texts`` written in another script than Latin (Cyrillic, Arabic, Devanagari...,
    outside what they quote) write ordinary words in Latin letters too, as code-mixed prose
    does ("UPI transaction fail हो गया", "failure का reason bank server timeout था"): of their
    Latin words outside code that are no name of ``names`` (and no acronym: SMS, PNR), at least
    three and a fifth of all.
    There a Latin word beside the text's own script is a word of the prose, not a name."""
    words = ordinary = 0
    for text in texts:
        prose = CODE_SPAN.sub(" ", text) if "`" in text else text
        if not _scripts(_QUOTED.sub(" ", prose))[1]:
            # no letter of another script outside quotes: English, say, or code, or an
            # English text quoting a sentence to say (an English skill with one Arabic
            # reply), whose English words are its own
            continue
        for word in _LATIN_WORD.findall(prose):
            if len(word) < 2 or word.isupper():
                continue
            words += 1
            ordinary += word not in names
    return ordinary >= 3 and ordinary * 5 >= words
