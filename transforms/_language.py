"""The language a harness is written in, as the rewording transforms read it: the harness is the
document, so a text too short to tell (a description of kanji alone, 対象商品; a heading
"Details") reads as the harness around it does (hsa.text.chinese.japanese,
hsa.text.language.reads_english)."""

from __future__ import annotations

from hsa.model.harness import Harness
from hsa.model.memo import BoundedMemo
from hsa.text.chinese import chinese, han_or_kana, japanese
from hsa.text.language import other_script, reads_english

# (Japanese, English, Chinese) by fingerprint: a draw per episode of a harness of its own read
# every text of it again, and one reading answers all three. Pure: it reads the texts alone.
_LANGUAGES: BoundedMemo[tuple[bool, bool, bool]] = BoundedMemo(1024)


def _languages(harness: Harness) -> tuple[bool, bool, bool]:
    return _LANGUAGES.get(harness.fingerprint, lambda: _read(_own_texts(harness)))


def _read(texts: list[str]) -> tuple[bool, bool, bool]:
    in_japanese = japanese(*texts)
    # Texts with no function word of any language tell nothing, and read as English by
    # default; not where they write Han or kana: a harness all in Japanese or Chinese (its
    # names ASCII) has no English function word, and is no English harness.
    written_in_han_or_kana = any(han_or_kana(text) for text in texts)
    in_english = reads_english(*texts, default=not written_in_han_or_kana) and not other_script(
        *texts
    )
    return in_japanese, in_english, chinese(*texts)


def _own_texts(harness: Harness) -> list[str]:
    """The harness's prose, less the prompt options' headings and instructions: wording a
    variant may take from a table (English headings on an Italian harness that kept the render's
    English ones) tells nothing of the language the harness is written in."""
    wording = {where for where, _ in harness.prompt.wording()}
    return [text for where, text in harness.prose() if where not in wording]


def japanese_harness(harness: Harness) -> bool:
    """Whether the harness's texts, read together, are Japanese."""
    return _languages(harness)[0]


def english_harness(harness: Harness) -> bool:
    """Whether the harness's texts, read together, are English (or tell no language): not when
    they are written in another script than Latin, Chinese or Japanese (a Korean harness has no
    function word of any language hsa.text.language counts)."""
    return _languages(harness)[1]


def english_names(harness: Harness) -> bool:
    """Whether the English tables may reword the harness's names: its texts read English
    (:func:`english_harness`), or they are written in Chinese or Japanese, whose harnesses name
    their tools and parameters in ASCII, in English words (a romanised word, ``kaimono``, is in
    no table and stays as it is). The names of a harness in another Latin-script language are
    its own language's words (Portuguese ``data``, a date, is no ``dataset``)."""
    in_japanese, in_english, in_chinese = _languages(harness)
    return in_english or in_japanese or in_chinese


def chinese_harness(harness: Harness) -> bool:
    """Whether the harness's texts, read together, write Chinese (Han characters, not Japanese)."""
    return _languages(harness)[2]


def table_languages(harness: Harness) -> frozenset[str]:
    """Which languages of the curated wording tables (``en``, ``zh``: prompt headings and
    instructions, hook feedback sentences) the harness is written in: wording in another
    language (Chinese headings in an Italian harness) is a mix no operator writes."""
    _, in_english, in_chinese = _languages(harness)
    return frozenset(("en",) * in_english + ("zh",) * in_chinese)
