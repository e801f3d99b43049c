"""Paraphrase text without losing what it requires: the one rule of what a rewording keeps.

Skill bodies, tool and parameter descriptions (any instruction text) may be reworded, but some
things in them are requirements, not wording. This module is the one place that says which:
:func:`invariants` lists them, :func:`lost_invariants` says which of them a rewrite dropped, and
:func:`invariant_spans` says where they stand, so that rule-based rewordings never touch them. The
skill-content rewrite, the LLM paraphrase and the tool-description paraphrase
(:mod:`hsa.text.phrases`) all keep, and are all tested against, the same list:

* every number (``200``, ``96.2``, ``5-7`` gives 5 and 7);
* every quoted string (``"..."``, ``'...'``, ``“...”``, ``‘...’``, ``「...」``, ``『...』``,
  ``《...》``) and inline code span, compared with whitespace normalised (a line break inside a
  quote or code span is a space);
* every identifier: the harness names given (tools, parameters, skills, hooks, the skill loader),
  mentioned at identifier boundaries, and any other snake_case, camelCase or dotted
  (``math.factorial``, ``items.json``) token;
* every web address (``https://...``), as written (a renamed identifier keeps its old spelling
  there: :mod:`hsa.text.mentions`);
* every negation (:data:`NEGATIONS_EN`, where ``not``, ``cannot`` and every ``n't`` count as one
  kind; :data:`NEGATIONS_ZH`, except in the compounds of :data:`NOT_NEGATIONS_ZH`), as many
  times as the original has it.

:func:`llm_paraphrase` asks any OpenAI-compatible endpoint (vLLM, ``transformers serve``, a
hosted API) through the ``openai`` client, imported lazily (``pip install 'hsa[llm]'``). Answers
are cached on disk by a content hash of (model, prompt, text, temperature, sample), written
atomically, so a second run (and every replay) never calls the endpoint; failures (timeout,
connection, HTTP status, an empty answer) raise :class:`ParaphraseUnavailable` with a short reason
and are not cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hsa.errors import HsaError
from hsa.files.jsonl import atomic_path
from hsa.text.mentions import CODE_SPAN, URL, find_mentions
from hsa.text.names import identifier_like

# ---- invariants -----------------------------------------------------------------------------

_CODE = CODE_SPAN
# Quote pairs never span a blank line, so one stray quote cannot swallow a whole document. A
# single quote opens and closes only away from letters, so apostrophes (don't, users') are none.
_NO_BLANK_LINE = r"(?!\n[ \t]*\n)"
_QUOTES = (
    re.compile(rf'"((?:{_NO_BLANK_LINE}[^"])*)"'),
    re.compile(rf"(?<![A-Za-z])'((?:{_NO_BLANK_LINE}[^']){{0,80}})'(?![A-Za-z])"),
    re.compile(rf"“((?:{_NO_BLANK_LINE}[^”])*)”"),
    re.compile(rf"‘((?:{_NO_BLANK_LINE}[^’])*)’"),
    re.compile(r"「([^」]*)」"),
    re.compile(r"『([^』]*)』"),
    re.compile(r"《([^》]*)》"),
)
_NUMBER = re.compile(r"(?<![0-9.])[0-9]+(?:\.[0-9]+)?")
# Identifier-looking tokens that are not harness names: snake_case, SCREAMING_CASE, camelCase,
# and dotted names with a segment of two characters or more (``math.factorial``; ``e.g`` and
# ``U.S`` are prose).
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_\-.])"
    r"(?:(?=[A-Za-z0-9_.]*[A-Za-z0-9_]{2})[A-Za-z_][A-Za-z0-9_]*"
    r"(?:\.[A-Za-z_][A-Za-z0-9_]*)+"
    r"|[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]*)"
    r"(?![A-Za-z0-9_\-]|\.[A-Za-z0-9])"
)

# The negations a rewording keeps, one list for every text. English: these words, and every
# "n't" contraction (don't, wouldn't...), which counts as "not" like "cannot" does.
NEGATIONS_EN = (
    "not",
    "cannot",
    "never",
    "no",
    "none",
    "nothing",
    "nobody",
    "nowhere",
    "neither",
    "nor",
    "without",
    "unless",
)
# Chinese: the characters and words that negate ...
NEGATIONS_ZH = ("禁止", "严禁", "切勿", "不", "没", "无", "未", "勿", "别", "非", "否", "莫")
# ... except inside these compounds, where the character does not ("不过" but, "区别" difference,
# "非常" very, "是否" whether...).
NOT_NEGATIONS_ZH = (
    "不过",
    "不仅",
    "不但",
    "不断",
    "区别",
    "特别",
    "分别",
    "类别",
    "级别",
    "性别",
    "识别",
    "告别",
    "个别",
    "差别",
    "别人",
    "别的",
    "无论",
    "非常",
    "是否",
    "莫名",
)
# No letter of any script glued on either side: "noté" is a French word, not "not".
_ENGLISH_NEGATION = re.compile(
    r"(?<![^\W\d_])(" + "|".join(NEGATIONS_EN) + r"|[A-Za-z]+n['’]t)(?![^\W\d_])",
    re.IGNORECASE,
)
_CHINESE_NEGATION = re.compile("|".join(NEGATIONS_ZH))
_CHINESE_NOT_NEGATION = re.compile("|".join(NOT_NEGATIONS_ZH))
_CJK = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f"
_SPACE_BETWEEN_CJK = re.compile(rf"(?<=[{_CJK}]) (?=[{_CJK}])")


def normalise_space(text: str) -> str:
    """Whitespace runs as one space, none between two CJK characters (a wrapped line break)."""
    return _SPACE_BETWEEN_CJK.sub("", " ".join(text.split()))


def _negation(word: str) -> str:
    word = word.lower().replace("’", "'")
    return "not" if word in ("not", "cannot") or word.endswith("n't") else word


def negations(text: str) -> list[str]:
    """The negations of ``text`` (outside code spans), in order, each as the kind it counts as
    (``don't`` -> ``not``)."""
    prose = _CODE.sub(" ", text)
    found = [_negation(w) for w in _ENGLISH_NEGATION.findall(prose)]
    masked = _CHINESE_NOT_NEGATION.sub(lambda m: "\0" * len(m.group(0)), prose)
    return found + _CHINESE_NEGATION.findall(masked)


def invariants(text: str, names: Iterable[str] = ()) -> Counter:
    """What a rewrite of ``text`` must keep, as a multiset of display strings (see module doc)."""
    return Counter(_invariants(text, tuple(names)))


@lru_cache(maxsize=16384)
def _invariants(text: str, names: tuple[str, ...]) -> Counter:
    found: Counter = Counter()
    for match in _CODE.finditer(text):
        found[f"`{normalise_space(match.group(2))}`"] += 1
    prose = _CODE.sub(" ", text)
    for pattern in _QUOTES:
        for match in pattern.finditer(prose):
            found[f"“{normalise_space(match.group(1))}”"] += 1
    found.update(_NUMBER.findall(text))
    identifiers = sorted(n for n in set(names) if n and identifier_like(n))
    mentioned = find_mentions(text, identifiers)
    found.update(mentioned)
    known = set(identifiers)
    found.update(t for t in _TOKEN.findall(text) if t not in known)
    found.update(URL.findall(text))
    found.update(negations(text))
    return found


_URL = re.compile(
    rf"{URL.pattern}|\]\([^)\n]*\)|<[^<>\n]+>"
    r"|[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}"
)


def code_and_quote_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) ranges of ``text``'s code spans and quoted strings: code first, then
    quotes in what code leaves, so a quote inside code pairs with nothing outside it."""
    spans = [m.span() for m in _CODE.finditer(text)]
    masked = _CODE.sub(lambda m: " " * len(m.group(0)), text)
    for pattern in _QUOTES:
        spans += [m.span() for m in pattern.finditer(masked)]
    return spans


def invariant_spans(text: str, names: Iterable[str] = ()) -> list[tuple[int, int]]:
    """The (start, end) ranges of ``text`` that hold invariants a rewording must not touch: code
    spans, quoted strings, identifiers (harness names, also plain-word ones as whole words, and
    identifier-looking tokens), URLs, e-mail addresses, link targets and HTML tags; sorted, not
    merged. Numbers and negations are invariants too but stand outside these spans: a rewording
    table holds neither (each family tests its tables with :func:`invariants`), and a negation
    may be restyled in place (``**not**``, ``NOT``) as long as it is kept."""
    spans = code_and_quote_spans(text)
    spans += [m.span() for m in _TOKEN.finditer(text)]
    spans += [m.span() for m in _URL.finditer(text)]
    pattern = _names_pattern(tuple(sorted({n for n in names if n})))
    if pattern is not None:
        spans += [m.span() for m in pattern.finditer(text)]
    return sorted(spans)


@lru_cache(maxsize=256)
def _names_pattern(names: tuple[str, ...]) -> re.Pattern | None:
    """Whole-word mentions of any of ``names`` (plain words too), longest first."""
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_\-.])(?:{alternatives})(?![A-Za-z0-9_\-]|\.[A-Za-z0-9_])")


def lost_invariants(original: str, rewrite: str, names: Iterable[str] = ()) -> list[str]:
    """The invariants of ``original`` that ``rewrite`` has fewer of, sorted; empty when kept."""
    names = tuple(names)
    before, after = invariants(original, names), invariants(rewrite, names)
    return sorted(item for item, count in before.items() if after[item] < count)


# ---- LLM backend ----------------------------------------------------------------------------

INSTRUCTION = (
    "You rewrite the Markdown instructions of an agent skill so they say exactly the same thing "
    "in different words. Keep every rule and every example, with the same meaning and strength. "
    'Copy unchanged: every number, every quoted string ("...", “...”, 「...」), every `code` '
    "span, every identifier (tool, parameter and skill names), and every negation (not, never, "
    "no, don't, 不, 不要, 别, 禁止, 勿, 没有). Keep the title as the first line and keep numbered "
    "steps in their order. Keep the language of each sentence (Chinese stays Chinese, English "
    "stays English). Answer with the rewritten Markdown only, without comments or code fences."
)


class ParaphraseUnavailable(Exception):
    """The endpoint gave no usable answer; ``reason`` is short enough for a lineage record."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible chat endpoint and how to call it."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    temperature: float = 0.7
    cache_dir: str = ""  # "" disables the cache


def cache_key(model: str, prompt: str, text: str, temperature: float, sample: int) -> str:
    payload = json.dumps([model, prompt, text, temperature, sample], ensure_ascii=False)
    return hashlib.blake2b(payload.encode(), digest_size=20).hexdigest()


def _cache_path(endpoint: Endpoint, key: str) -> Path | None:
    if not endpoint.cache_dir:
        return None
    return Path(os.path.expanduser(endpoint.cache_dir)) / key[:2] / f"{key}.json"


def _read_cache(path: Path | None) -> str | None:
    if path is None or not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))["output"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged entry is a miss; the next answer overwrites it


def _write_cache(path: Path | None, record: dict) -> None:
    if path is None:
        return
    # Written beside the target, then renamed: readers see the old entry or the whole new one.
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")


_FENCED = re.compile(r"\A\s*(`{3,}|~{3,})[^\n]*\n(.*?)\n\1\s*\Z", re.DOTALL)


def _clean(output: str, original: str) -> str:
    """Remove a code fence wrapped around the whole answer; keep the original's final newline."""
    match = _FENCED.match(output)
    text = match.group(2) if match else output.strip("\n")
    if original.endswith("\n") and not text.endswith("\n"):
        text += "\n"
    return text


def llm_paraphrase(text: str, endpoint: Endpoint, *, style: str = "", sample: int = 0) -> str:
    """A paraphrase of ``text`` from ``endpoint`` (cached), or :class:`ParaphraseUnavailable`.

    ``style`` is appended to the instruction (a wording register drawn by the caller); ``sample``
    tells several cached paraphrases of the same text apart. The answer is not checked here:
    callers check it with :func:`lost_invariants`."""
    prompt = f"{INSTRUCTION} {style}".strip()
    key = cache_key(endpoint.model, prompt, text, endpoint.temperature, sample)
    path = _cache_path(endpoint, key)
    cached = _read_cache(path)
    if cached is not None:
        return _clean(cached, text)
    try:
        import openai
    except ImportError:
        raise HsaError(
            "the LLM paraphrase backend needs the openai client: pip install 'hsa[llm]'"
        ) from None
    client = openai.OpenAI(
        base_url=endpoint.base_url,
        timeout=endpoint.timeout_s,
        max_retries=0,
        api_key=os.environ.get(endpoint.api_key_env) or "EMPTY",
    )
    try:
        response = client.chat.completions.create(
            model=endpoint.model,
            temperature=endpoint.temperature,
            seed=sample,
            messages=[{"role": "system", "content": prompt}, {"role": "user", "content": text}],
        )
    except openai.APITimeoutError:
        raise ParaphraseUnavailable("timeout") from None
    except openai.APIConnectionError as exc:
        raise ParaphraseUnavailable(f"connection error: {exc}") from None
    except openai.APIStatusError as exc:
        raise ParaphraseUnavailable(f"http {exc.status_code}") from None
    except openai.OpenAIError as exc:
        raise ParaphraseUnavailable(f"{type(exc).__name__}: {exc}") from None
    choices = getattr(response, "choices", None) or []
    output = choices[0].message.content if choices else None
    if not isinstance(output, str) or not output.strip():
        raise ParaphraseUnavailable("empty response")
    _write_cache(path, {"model": endpoint.model, "key": key, "output": output})
    return _clean(output, text)
