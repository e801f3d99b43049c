"""Where Chinese text has word boundaries, so that a Chinese phrase is replaced only as a word.

Chinese writes no spaces between words, so a phrase of a synonym table found as a substring may be
the end of one word and the start of the next (``然后`` in ``虽然后来``: 虽然 + 后来), or part of a
longer word (``解释`` in ``最终解释权``); replacing it there mangles the text (``虽接着来``).
:func:`skip_chinese_match` says whether a match is such a piece, by the word boundaries of jieba's
segmentation (its own dictionary, shipped in its wheel: nothing is downloaded). The segmenter is a
tokenizer of hsa's own, so a dictionary a user loads into jieba's default one never changes hsa's
output; jieba is pinned, so the same text always splits the same way.

Han characters are Japanese words too (``商品を交換する``), and a Chinese synonym put into Japanese
text (``产品を交換する``) is wrong in both languages. Whether text is Japanese is decided for a whole
document (a skill body, a harness's descriptions: :func:`japanese`), since one of its lines or
descriptions may hold kanji alone (``対象商品``); and by the share of hiragana, which Japanese
writes throughout and Chinese only in a quoted name (``山の茶``), while katakana turns up in Chinese
for foreign names (``优衣库（ユニクロ）``, ``・``).
"""

from __future__ import annotations

import logging
import re
import threading
from functools import lru_cache
from typing import Any

_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_HIRAGANA = re.compile("[\u3041-\u309f]")
_tokenizer: Any = None
_lock = threading.Lock()


def _segmenter() -> Any:
    """hsa's jieba tokenizer, loaded on first use (its dictionary takes about a second)."""
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            import jieba

            # jieba logs its dictionary loading at DEBUG to stderr, which would interleave with
            # hsa's progress output.
            jieba.setLogLevel(logging.WARNING)
            tokenizer = jieba.Tokenizer()
            # Built from the dictionary in the package, never from jieba's cache file: jieba
            # reads "$TMPDIR/jieba.cache" without checking where it came from, so a stale or
            # foreign cache (another version, another user, another host's /tmp) would split
            # text otherwise and change rows with no version change.
            with tokenizer.get_dict_file() as dictionary:
                tokenizer.FREQ, tokenizer.total = tokenizer.gen_pfdict(dictionary)
            tokenizer.initialized = True
            _tokenizer = tokenizer
        return _tokenizer


@lru_cache(maxsize=4096)
def word_boundaries(text: str) -> frozenset[int]:
    """The offsets in ``text`` where a word starts or ends (0 and ``len(text)`` included)."""
    bounds = {0, len(text)}
    for _, start, end in _segmenter().tokenize(text):
        bounds.add(start)
        bounds.add(end)
    return frozenset(bounds)


# Japanese writes a large share of its CJK characters in hiragana (particles, endings: 商品を交換
# する has 3 of 7), Chinese none; a Chinese text that quotes a Japanese name (山の茶) has a few.
JAPANESE_HIRAGANA_SHARE = 0.1
# The code point ranges of kana and Han (CJK ideographs), for a character class.
KANA_OR_HAN = "\u3041-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA_OR_HAN = re.compile(f"[{KANA_OR_HAN}]")


def japanese(*texts: str) -> bool:
    """Whether a document of ``texts`` is Japanese: hiragana make up at least
    :data:`JAPANESE_HIRAGANA_SHARE` of its Han and kana characters."""
    hiragana = sum(len(_HIRAGANA.findall(text)) for text in texts if text)
    if not hiragana:
        return False
    cjk = sum(len(_KANA_OR_HAN.findall(text)) for text in texts if text)
    return hiragana >= JAPANESE_HIRAGANA_SHARE * cjk


def han_or_kana(text: str) -> bool:
    """Whether ``text`` holds a Han or kana character (Chinese or Japanese writing)."""
    return _KANA_OR_HAN.search(text) is not None


def chinese(*texts: str) -> bool:
    """Whether a document of ``texts`` writes Chinese: it holds a Han character and is not
    Japanese (:func:`japanese`)."""
    return any(text and _HAN.search(text) for text in texts) and not japanese(*texts)


def skip_chinese_match(text: str, start: int, end: int, *, in_japanese: bool) -> bool:
    """Whether ``text[start:end]``, a match of a Chinese phrase, must be left alone: it holds Han
    characters and ``text`` belongs to a Japanese document (``in_japanese``: :func:`japanese`),
    or it starts or ends inside a word of ``text``. Matches without a Han character are never
    left (their own patterns keep to word boundaries)."""
    if not _HAN.search(text, start, end):
        return False
    if in_japanese:
        return True
    bounds = word_boundaries(text)
    return start not in bounds or end not in bounds
