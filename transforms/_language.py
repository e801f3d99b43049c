"""The language a harness is written in, as the rewording transforms read it: the harness is the
document, so a text too short to tell (a description of kanji alone, 対象商品; a heading
"Details") reads as the harness around it does (hsa.text.chinese.japanese,
hsa.text.language.reads_english)."""

from __future__ import annotations

from hsa.model.harness import Harness
from hsa.model.memo import BoundedMemo
from hsa.text.chinese import chinese, japanese
from hsa.text.language import other_script, reads_english

# By fingerprint: a draw per episode of a harness of its own read every text of it again. Pure:
# both read the texts alone.
_JAPANESE: BoundedMemo[bool] = BoundedMemo(1024)
_ENGLISH: BoundedMemo[bool] = BoundedMemo(1024)
_CHINESE: BoundedMemo[bool] = BoundedMemo(1024)


def _own_texts(harness: Harness) -> list[str]:
    """The harness's prose, less the prompt options' headings and instructions: wording a
    variant may take from a table (English headings on an Italian harness that kept the render's
    English ones) tells nothing of the language the harness is written in."""
    wording = {where for where, _ in harness.prompt.wording()}
    return [text for where, text in harness.prose() if where not in wording]


def japanese_harness(harness: Harness) -> bool:
    """Whether the harness's texts, read together, are Japanese."""
    return _JAPANESE.get(harness.fingerprint, lambda: japanese(*_own_texts(harness)))


def english_harness(harness: Harness) -> bool:
    """Whether the harness's texts, read together, are English (or tell no language): not when
    they are written in another script than Latin, Chinese or Japanese (a Korean harness has no
    function word of any language hsa.text.language counts)."""
    return _ENGLISH.get(harness.fingerprint, lambda: _english(_own_texts(harness)))


def _english(texts: list[str]) -> bool:
    return reads_english(*texts) and not other_script(*texts)


def chinese_harness(harness: Harness) -> bool:
    """Whether the harness's texts, read together, write Chinese (Han characters, not Japanese)."""
    return _CHINESE.get(harness.fingerprint, lambda: chinese(*_own_texts(harness)))


def table_languages(harness: Harness) -> frozenset[str]:
    """Which languages of the curated wording tables (``en``, ``zh``: prompt headings and
    instructions, hook feedback sentences) the harness is written in: wording in another
    language (Chinese headings in an Italian harness) is a mix no operator writes."""
    found = set()
    if english_harness(harness):
        found.add("en")
    if chinese_harness(harness):
        found.add("zh")
    return frozenset(found)
