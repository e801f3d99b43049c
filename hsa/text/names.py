"""Names of tools, parameters, skills and hooks: their words, their convention and their meaning.

* :func:`name_words` splits a name in any convention (``get_price``, ``getHTTPStatus2``,
  ``item-qa``, ``shop.ITEM_QA``) into its words;
* a *convention* is how words are joined (``snake``, ``camel``, ``kebab``, ``pascal``,
  ``screaming_snake``, ``title_snake``); :func:`write_name` writes words in one, and
  :func:`conventions_of` tells which conventions a name is written in (``get`` is snake, camel
  and kebab at once). Dots are namespace separators, never a convention: each dotted segment is
  written in the convention;
* :func:`meaning` is what a reader takes a name to say: its words lower-cased, abbreviations read
  as the full word (``hsa/text/abbreviations.yaml``), plurals as singulars, in any order, without
  articles. ``item_ids``, ``itemIdentifier`` and ``identifier_of_item`` mean one thing. A rename
  may never give an identifier the meaning of another identifier of its kind (verification checks
  it, see :mod:`hsa.verify`).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from pathlib import Path

import yaml

from hsa.errors import HsaError

CONVENTIONS = ("snake", "camel", "kebab", "pascal", "screaming_snake", "title_snake")

_CONVENTION_RE = {
    "snake": re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*"),
    "kebab": re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*"),
    "camel": re.compile(r"[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)*"),
    "pascal": re.compile(r"(?:[A-Z][a-z0-9]*)+"),
    "screaming_snake": re.compile(r"[A-Z0-9]+(?:_[A-Z0-9]+)*"),
    "title_snake": re.compile(r"[A-Z0-9][a-z0-9]*(?:_[A-Z0-9][a-z0-9]*)*"),
}
# Words that say nothing about what a name means.
_ARTICLES = frozenset({"a", "an", "the", "of"})
_IRREGULAR_PLURALS = {
    "people": "person",
    "children": "child",
    "men": "man",
    "women": "woman",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "geese": "goose",
    "indices": "index",
    "vertices": "vertex",
    "matrices": "matrix",
    "analyses": "analysis",
    "criteria": "criterion",
    "phenomena": "phenomenon",
    "statuses": "status",
    "aliases": "alias",
    "buses": "bus",
    "addresses": "address",
    "series": "series",
    "species": "species",
    "news": "news",
    "data": "data",
    "media": "media",
    "wolves": "wolf",
    "knives": "knife",
    "lives": "life",
    "leaves": "leaf",
    "shelves": "shelf",
    "halves": "half",
    "quizzes": "quiz",
    "ids": "id",
}
_KEEP_S = ("ss", "us", "is", "ous", "ics")
# Nouns a plural word is written with as they are: mass nouns, which have no plural ("flight
# details" is no "flight informations"), and nouns that are plural already and have no singular
# in their sense (pluralia tantum: "goods", "particulars"; a "-ics" word, "specifics", is one
# too). Words, or `_`-joined phrases, of the name tables (transforms/lexicon.yaml,
# abbreviations.yaml) and of everyday names.
_UNCOUNTABLE_WORDS = """
information info data feedback advice counsel guidance help assistance support knowledge
evidence research equipment furniture luggage baggage merchandise money music news weather
traffic progress headway software hardware homework mail spending postage freight shipping
seating sizing wellness wellbeing health safety moderation vetting triage processing management
handling banter gossip chitchat small_talk content footage tallness wideness heft aftercare
access lending selling retail procurement excise meteo personnel staff subject_matter
legal_tender source_code side_by_side series species media wording clothing jewelry jewellery
rice
"""
_PLURALIA_TANTUM_WORDS = """
goods particulars specifics belongings earnings takings holdings savings premises surroundings
outskirts clothes thanks regards proceeds headquarters odds whereabouts wares scissors pants
trousers glasses congratulations arrears dues
"""
UNCOUNTABLE = frozenset(_UNCOUNTABLE_WORDS.split())
PLURALIA_TANTUM = frozenset(_PLURALIA_TANTUM_WORDS.split())
# Singular words that end in -s as plurals do.
_SINGULAR_S = frozenset({"alias", "atlas", "bias", "canvas", "gas", "iris"})
_PLURAL_OF = {one: many for many, one in _IRREGULAR_PLURALS.items() if many != one} | {
    "corpus": "corpora",
    "rendezvous": "rendezvous",
}
_WRITTEN_PLURALS = frozenset(_PLURAL_OF.values())


_IDENTIFIER_LIKE = re.compile(r"[_.\-0-9]|[a-z][A-Z]")

# A compound written with a hyphen, as prose writes it: an English verb and its particle
# (follow-up, check-in, drop-off, opt-out) or a prefix and a word (e-mail, co-pay, re-order,
# self-service), and the few such words of the other languages harnesses are written in that
# keep their letters in ASCII (boas-vindas, bem-vindo, rendez-vous). Kebab-case names
# (link-number, x-api-key, order-id, refund-help) are none of these. Particles and prefixes that
# also end or start common kebab-case names (created-by, sort-by, depends-on, post-id, sub-id,
# mid-price) are left out: a false word leaves a name stale.
_PARTICLES = "up|in|out|off|down|back|away|through"
_PREFIXES = "e|co|re|pre|non|self|multi|anti|semi"
_HYPHENATED_WORDS = "boas-vindas|bem-vind[oa]s?|rendez-vous|vis-a-vis"
_HYPHENATED_WORD = re.compile(
    rf"(?:[a-z]+-(?:{_PARTICLES})|(?:{_PREFIXES})-[a-z]+|{_HYPHENATED_WORDS})"
)


@lru_cache(maxsize=65536)
def identifier_like(name: str) -> bool:
    """Names that cannot be ordinary prose: with ``_ . -``, digits, or camelCase humps; not a
    word written with a hyphen (``follow-up``, ``check-in``, ``e-mail``, ``boas-vindas``), which
    prose writes as an ordinary word ("an early check-in", the user's "a follow-up call"), so
    that a skill ``check-in`` is moved, as a plain word is, only where it stands as code.
    Remembered: every rename and every stale-name check asks it of the same few names per row."""
    return bool(_IDENTIFIER_LIKE.search(name)) and not _HYPHENATED_WORD.fullmatch(name)


def name_words(name: str) -> list[str]:
    """The words of a name, as written: split on any character that is not a letter or digit,
    on camelCase humps (after digits too) and after acronyms (``getHTTPStatus2`` -> get, HTTP,
    Status2; ``h264Video`` -> h264, Video). Digits stay in the word they are written in: ``s3``,
    ``k8s``, ``ipv4``, ``sha256`` are one word each, which ``s_3_bucket`` or ``k_8_s`` would
    not read as. Runs of letters of another script than Latin (``请调用get_price``) are words
    of their own; Latin letters beyond ASCII (``ausführungsdatum``, ``straße``) are not."""
    return list(_words(name))


@lru_cache(maxsize=4096)
def latin_script(ch: str) -> bool:
    """Whether ``ch`` is written in Latin script (ASCII, or a letter such as ü, ß, é): a run of
    other script (Chinese glued to an ASCII name) is a word of its own, an umlaut is not."""
    return ch.isascii() or unicodedata.name(ch, "").startswith("LATIN ")


@lru_cache(maxsize=65536)
def _words(name: str) -> tuple[str, ...]:
    words: list[str] = []
    for part in re.split(r"[^0-9A-Za-z\u0080-\U0010ffff]+", name):
        current = ""
        for i, ch in enumerate(part):
            if current:
                prev = current[-1]
                nxt = part[i + 1] if i + 1 < len(part) else ""
                boundary = (
                    (prev.islower() and ch.isupper())
                    or (prev.isdigit() and ch.isupper() and nxt.islower())
                    or (latin_script(prev) != latin_script(ch))
                    or (prev.isupper() and ch.isupper() and nxt.islower())
                )
                if boundary:
                    words.append(current)
                    current = ""
            current += ch
        if current:
            words.append(current)
    return tuple(words)


def write_name(words: list[str], convention: str) -> str:
    """``words`` joined in ``convention`` (one of :data:`CONVENTIONS`)."""
    low = [w.lower() for w in words if w]
    cap = [w[:1].upper() + w[1:] for w in low]
    if convention == "snake":
        return "_".join(low)
    if convention == "kebab":
        return "-".join(low)
    if convention == "camel":
        return low[0] + "".join(cap[1:]) if low else ""
    if convention == "pascal":
        return "".join(cap)
    if convention == "screaming_snake":
        return "_".join(w.upper() for w in low)
    if convention == "title_snake":
        return "_".join(cap)
    raise HsaError(f"unknown naming convention {convention!r}; known: {', '.join(CONVENTIONS)}")


def write_segments(name: str, convention: str) -> str:
    """``name`` in ``convention``, segment by segment: dots (namespaces) stay."""
    return ".".join(
        write_name(name_words(segment) or [segment], convention) for segment in name.split(".")
    )


@lru_cache(maxsize=65536)
def conventions_of(name: str) -> frozenset[str]:
    """The conventions ``name`` is written in (each dotted segment in it); every convention for a
    name with no ASCII letters, which says nothing about its convention."""
    if not re.search(r"[A-Za-z]", name):
        return frozenset(CONVENTIONS)
    segments = [s for s in name.split(".") if s]
    return frozenset(
        c
        for c, pattern in _CONVENTION_RE.items()
        if segments and all(pattern.fullmatch(s) for s in segments)
    )


def shared_conventions(names) -> frozenset[str]:
    """The conventions every one of ``names`` is written in (empty: they mix conventions)."""
    out = frozenset(CONVENTIONS)
    for name in names:
        out &= conventions_of(name)
    return out


def convention_of(names, preferred: tuple[str, ...] = CONVENTIONS) -> str | None:
    """The one convention ``names`` share, the first of ``preferred`` when several fit (``get``
    fits snake, camel and kebab); None when they mix conventions."""
    shared = shared_conventions(names)
    return next((c for c in preferred if c in shared), None)


# ---- meaning ---------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def abbreviation_groups() -> tuple[dict[str, tuple[str, ...]], ...]:
    """The abbreviation table (``hsa/text/abbreviations.yaml``): groups with a ``train`` and a
    ``heldout`` part, the full word first in ``train``."""
    path = Path(__file__).with_name("abbreviations.yaml")
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    groups = []
    seen: dict[str, int] = {}
    for i, group in enumerate(raw):
        parts = {split: tuple(group.get(split) or ()) for split in ("train", "heldout")}
        if not parts["train"] or set(parts["train"]) & set(parts["heldout"]):
            raise HsaError(
                f"group {i}: needs a train part, and parts that share no member", file=str(path)
            )
        for member in parts["train"] + parts["heldout"]:
            if member in seen:
                raise HsaError(f"{member!r} is in groups {seen[member]} and {i}", file=str(path))
            seen[member] = i
        groups.append(parts)
    return tuple(groups)


@lru_cache(maxsize=1)
def _full_words() -> dict[str, str]:
    return {
        member: group["train"][0]
        for group in abbreviation_groups()
        for member in group["train"] + group["heldout"]
    }


def singular(word: str) -> str:
    """The singular of a lower-case English word, by the common rules (good enough to tell two
    names apart; never used to write a name)."""
    if word in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[word]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes", "zzes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(_KEEP_S):
        return word[:-1]
    return word


def is_plural(word: str) -> bool:
    """Whether a lower-case English word is written plural: a plural form (``details``,
    ``addresses``, ``people``) or a noun that has no singular (``goods``, ``specifics``)."""
    if word in PLURALIA_TANTUM or word in _WRITTEN_PLURALS:
        return True
    if len(word) > 3 and word.endswith("ics"):
        return True
    if word in _SINGULAR_S:
        return False
    if len(word) <= 3 and word.endswith("s") and not word.endswith(("ss", "us")):
        return True  # hrs, qas: short plurals singular() leaves alone
    return singular(word) != word


def plural(word: str) -> str:
    """The plural of a lower-case English noun (or ``_``-joined noun phrase) as a name writes
    it: the common rules and the irregular plurals; a word that is plural already or has no
    plural (a mass noun: ``information``, ``data``, ``feedback``) stays as it is, so that no
    plural is made plural twice (``particulars``, not ``particularses``); in a phrase, its head
    (``proofs_of_purchase``, ``flight_details``)."""
    if "_" in word and word not in UNCOUNTABLE:
        words = word.split("_")
        head = words.index("of") - 1 if "of" in words[1:] else len(words) - 1
        words[head] = plural(words[head])
        return "_".join(words)
    if word in UNCOUNTABLE or _IRREGULAR_PLURALS.get(word) == word:
        return word
    if word in _PLURAL_OF:
        return _PLURAL_OF[word]
    if is_plural(word):
        return word
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith("sis"):  # synopsis, analysis, basis
        return word[:-2] + "es"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def _full_word(word: str) -> tuple[str, ...]:
    full = _full_words()
    if word not in full:
        word = singular(word)
    return tuple(full.get(word, word).split("_"))


@lru_cache(maxsize=65536)
def meaning(name: str) -> tuple[str, ...]:
    """What ``name`` says to a reader: its words, lower-cased, abbreviations read as the full
    word and plurals as singulars, without articles, in sorted order (``item_ids`` and
    ``identifierOfItem`` -> ``("identifier", "item")``)."""
    words = [part for w in name_words(name) for part in _full_word(w.lower())]
    return tuple(sorted(w for w in words if w not in _ARTICLES))
