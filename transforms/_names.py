"""Renaming by words, for the name transforms of every family (skill ids, tool, parameter and hook
names). Not a family itself: its name starts with ``_``, so the package does not register it.

A name is rewritten word by word from tables that hold no harness's domain: a synonym from the
general English lexicon (``lexicon.yaml`` beside this module), or an abbreviation or expansion
(``hsa/text/abbreviations.yaml``). One replacement per word across the harness, so the harness stays
consistent. When no word of a name is in the tables, the fallbacks need no table at all: the
leading verb moves behind the rest (``search_flights`` -> ``flights_search``), the name is only
rewritten in the variant's convention, a general suffix is added, and last an opaque mask.

Every new name is unique in its namespace, passes the caller's own test (skill ids must be
identifier-like and unmentioned), and never has the meaning (:func:`hsa.text.names.meaning`) of
another identifier of its kind, under that one's original or new name: the check verification
makes (``meaning_taken``), made here first so that no variant is lost to it.

*One naming convention per harness variant*: the first renaming transform of a variant draws a
convention from its split and records it in ``prompt.options["naming"]``; later ones read it, so
every renamed tool, parameter, skill and hook of the variant is written in it. A harness may
declare its own there. Transforms offer ``naming: mixed`` to draw a convention per name instead.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import combinations, pairwise
from pathlib import Path
from typing import Literal

import yaml

from hsa.augment.user_data import standalone
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.harness import Harness
from hsa.model.hook import configured_names, printed_strings
from hsa.model.memo import BoundedMemo
from hsa.text.mentions import CODE_SPAN, KEYWORD_CALL, find_mentions, replace_glued_mentions
from hsa.text.names import (
    CONVENTIONS,
    abbreviation_groups,
    convention_of,
    identifier_like,
    meaning,
    name_words,
    plural,
    shared_conventions,
    singular,
    write_name,
)
from hsa.transforms._language import english_names

NAMING_OPTION = "naming"
NamingMode = Literal["variant", "mixed"]

# The conventions a variant is written in. Train: the everyday ones; held out: the rarer ones.
CONVENTION_SPLITS: dict[str, tuple[str, ...]] = {
    "train": ("snake", "camel", "kebab"),
    "heldout": ("pascal", "screaming_snake", "title_snake"),
}
_MAX_TRIES = 12
# What the opaque part of a masked name is made of. ``consonants`` (the default): a mask reads
# as no word and, having no digits, stays one word in every convention (``fn_qzkx``, ``fnQzkx``,
# ``FN_QZKX``). ``letters`` (both cases and ``_``): names of any shape, for training a model to
# copy a name whatever its shape; a convention may split or recase such a word. ``lowercase``:
# random lowercase words (tool_name_mask's random first words, ``prefix_letters``).
OPAQUE_ALPHABETS: dict[str, str] = {
    "consonants": "bcdfghjkmnpqrstvwxz",
    "letters": "abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "lowercase": "abcdefghijklmnopqrstuvwxyz",
}
OpaqueAlphabet = Literal["consonants", "letters", "lowercase"]


def opaque_word(
    rng: random.Random, letters: tuple[int, ...] = (4,), alphabet: OpaqueAlphabet = "consonants"
) -> str:
    """Random characters of ``alphabet``, the opaque part of a masked name: as many as one of
    ``letters`` (drawn only when there is a choice, so the default draws what it always drew)."""
    count = letters[0] if len(letters) == 1 else rng.choice(letters)
    chars = OPAQUE_ALPHABETS[alphabet]
    return "".join(rng.choice(chars) for _ in range(count))


LEXICON_PATH = Path(__file__).with_name("lexicon.yaml")


@dataclass(frozen=True)
class SynonymGroup:
    """Interchangeable words or phrases (``_``-joined); see lexicon.yaml."""

    pos: str
    train: tuple[str, ...]
    heldout: tuple[str, ...]
    when: frozenset[str] = frozenset()

    def part(self, split: str) -> tuple[str, ...]:
        return self.train if split == "train" else self.heldout


@dataclass(frozen=True, eq=False)
class Lexicon:
    groups: tuple[SynonymGroup, ...]
    compounds: frozenset[tuple[str, str]]
    by_phrase: dict[tuple[str, ...], tuple[SynonymGroup, ...]]
    longest: int
    verbs: frozenset[str]  # single words with a verb group
    # verbs whose bare form names their action after its object (an order lookup): the only
    # ones a name's words may be reordered around
    action_nouns: frozenset[str] = frozenset()

    def group(
        self, phrase: tuple[str, ...], context: set[str], leading: bool
    ) -> SynonymGroup | None:
        """The group of ``phrase`` in this context: a group whose ``when`` words the context
        has (plurals read as their singular), else the one without ``when``; verb groups only
        for a name's leading word."""
        groups = [g for g in self.by_phrase.get(phrase, ()) if leading or g.pos != "verb"]
        if leading:  # where a name puts its action, read the word as a verb first
            groups.sort(key=lambda g: g.pos != "verb")
        if any(g.when for g in groups):  # "permissions" says what "permission" says
            context = context | {singular(w) for w in context}
        for group in groups:
            if group.when and context & group.when:
                return group
        return next((g for g in groups if not g.when), None)


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The lexicon in lexicon.yaml, checked as it loads (a broken table fails every run)."""
    raw = yaml.safe_load(LEXICON_PATH.read_text(encoding="utf-8"))
    groups = []
    for i, entry in enumerate(raw["groups"]):
        group = SynonymGroup(
            pos=entry["pos"],
            train=tuple(entry["train"]),
            heldout=tuple(entry["heldout"]),
            when=frozenset(entry.get("when") or ()),
        )
        if not group.train or not group.heldout or set(group.train) & set(group.heldout):
            raise HsaError(
                f"group {i} ({group.train}) needs a train and a held-out part that share no member",
                file=str(LEXICON_PATH),
            )
        groups.append(group)
    compounds = frozenset(tuple(pair) for pair in raw.get("compounds") or ())
    index: dict[tuple[str, ...], list[SynonymGroup]] = {}
    for group in groups:
        for member in group.train + group.heldout:
            index.setdefault(tuple(member.split("_")), []).append(group)
    verbs = frozenset(
        p[0] for p, gs in index.items() if len(p) == 1 and any(g.pos == "verb" for g in gs)
    )
    return Lexicon(
        tuple(groups),
        compounds,
        {k: tuple(v) for k, v in index.items()},
        max(len(k) for k in index),
        verbs,
        frozenset(raw.get("action_nouns") or ()),
    )


@lru_cache(maxsize=1)
def _abbreviations() -> dict[str, dict[str, tuple[str, ...]]]:
    return {
        member: group
        for group in abbreviation_groups()
        for member in group["train"] + group["heldout"]
    }


def replacements(
    phrase: tuple[str, ...], split: str, context: set[str], leading: bool
) -> list[tuple[str, ...]]:
    """What the tables of ``split`` offer for a phrase of a name (lower-case words): synonyms
    of the phrase or of its full word, and other forms of an abbreviation. A plural phrase
    (``flight_details``) names things: it takes the noun groups of its singular, and each
    replacement in the plural (:func:`hsa.text.names.plural`: a plural or mass noun as it is,
    ``particulars``, ``information``); an adjective has no plural, so a plural gets none."""
    lex = lexicon()
    is_plural = False
    group = lex.group(phrase, context, leading)
    abbreviation = _abbreviations().get(phrase[0]) if len(phrase) == 1 else None
    if group is None and abbreviation is None:
        one = phrase[:-1] + (singular(phrase[-1]),)
        if one != phrase:
            is_plural, leading = True, False  # "alerts" are alerts, never "notifies"
            phrase = one
            group = lex.group(phrase, context, leading)
            abbreviation = _abbreviations().get(phrase[0]) if len(phrase) == 1 else None
    if group is None and abbreviation is not None:  # `info`: the synonyms of `information`
        group = lex.group(tuple(abbreviation["train"][0].split("_")), context, leading)
    if is_plural and group is not None and group.pos == "adj":
        group = None
    out: list[tuple[str, ...]] = []
    for member in (group.part(split) if group else ()) + (
        abbreviation[split] if abbreviation else ()
    ):
        if tuple(member.split("_")) == phrase:
            continue
        words = tuple((plural(member) if is_plural else member).split("_"))
        if words not in out:
            out.append(words)
    return out


@lru_cache(maxsize=1)
def _stem_groups() -> dict[str, frozenset[int]]:
    """The lexicon's groups each one-word member is in (any part of speech or sense), by the
    member's stem (:func:`_stem`: ``validator`` is in the group of ``validate``)."""
    out: dict[str, set[int]] = {}
    for i, group in enumerate(lexicon().groups):
        for member in group.train + group.heldout:
            if "_" not in member:
                out.setdefault(_stem(member), set()).add(i)
    return {stem: frozenset(ids) for stem, ids in out.items()}


def _stem(word: str) -> str:
    """``word`` less the endings that make a noun of a verb (``validator``, ``checker``,
    ``validation`` -> ``validat``, ``check``): enough to see a word said twice."""
    for _ in range(2):
        for ending in ("or", "er", "ion", "ing", "ed", "e"):
            if word.endswith(ending) and len(word) - len(ending) >= 4:
                word = word[: -len(ending)]
                break
        else:
            break
    return word


@lru_cache(maxsize=65536)
def echoes(name: str) -> tuple[int, int]:
    """How often ``name`` says a thing twice: (pairs of its words, as :func:`meaning` reads
    them, that are one word; pairs that say one thing: one word, one stem (``validate``,
    ``validator``) or words of one lexicon group (``check``, ``validator``)). A new name may
    not say more twice than its old one: ``check_iban_check`` and ``validate_check_iban`` are
    no names of ``check_iban``, nor ``kb.replyReply`` of ``kb.answerReply``."""
    groups = _stem_groups()
    none: frozenset[int] = frozenset()
    same = related = 0
    for a, b in combinations(meaning(name), 2):
        stem_a, stem_b = _stem(a), _stem(b)
        if a == b:
            same += 1
        if stem_a == stem_b or groups.get(stem_a, none) & groups.get(stem_b, none):
            related += 1
    return same, related


@dataclass(frozen=True)
class Slot:
    """A phrase of a name that the tables can replace: words[start:end] of one segment."""

    segment: int
    start: int
    end: int
    key: tuple[str, ...]
    options: tuple[tuple[str, ...], ...]


# Words that tie a name's words into a phrase, which no reordering keeps (``refund_to_card``).
_FUNCTION_WORDS = frozenset(
    {
        "to",
        "for",
        "from",
        "by",
        "with",
        "on",
        "in",
        "at",
        "of",
        "into",
        "via",
        "per",
        "as",
        "and",
        "or",
        "the",
        "a",
        "an",
    }
)


def slots(
    segments: list[list[str]], split: str, context: set[str], verbs: bool = True
) -> list[Slot]:
    """The replaceable phrases of a name's segments, longest match first, left to right; words
    of a fixed compound (``check_in``) are never split up. ``verbs``: whether a leading word may
    be a verb (tool names are ``search_flights``; parameter names are noun phrases, where
    ``refund_method`` is no "reimburse"). In a dotted name only the last segment leads with an
    action: the others name what it acts on (``alerts.ack``, ``orders.cancel_order``), so their
    first word is no verb (``alerts`` never becomes ``notifies``)."""
    lex = lexicon()
    found = []
    for s, words in enumerate(segments):
        acts = verbs and s == len(segments) - 1
        low = [w.lower() for w in words]
        fixed = {
            i + k for i, pair in enumerate(pairwise(low)) if pair in lex.compounds for k in (0, 1)
        }
        i = 0
        while i < len(low):
            for length in range(min(lex.longest, len(low) - i), 0, -1):
                if any(k in fixed for k in range(i, i + length)) or not all(
                    w.isascii() and w.isalpha() for w in low[i : i + length]
                ):
                    continue
                phrase = tuple(low[i : i + length])
                options = replacements(phrase, split, context, leading=acts and i == 0)
                if options:
                    found.append(Slot(s, i, i + length, phrase, tuple(options)))
                    i += length
                    break
            else:
                i += 1
    return found


# Whether a harness writes such calls, by fingerprint: every draw of a pool asks it of the same
# harness. Pure: it reads the harness's texts alone.
_WRITES_KEYWORD_CALLS: BoundedMemo[bool] = BoundedMemo(1024)


def split_conventions(split: str, harness: Harness | None) -> tuple[str, ...]:
    """The conventions a variant of ``harness`` may be written in: its split's, less kebab case
    when the harness's texts write calls with keyword arguments. One convention names a
    variant's tools and parameters alike, and ``get-price(link-number=5)`` is no call in any
    language; without such calls kebab case is as good a name as any."""
    conventions = CONVENTION_SPLITS[split]
    if harness is None or "kebab" not in conventions:
        return conventions
    writes = _WRITES_KEYWORD_CALLS.get(
        harness.fingerprint,
        lambda: any(KEYWORD_CALL.search(text) for _, text in harness.prose()),
    )
    return tuple(c for c in conventions if c != "kebab") if writes else conventions


def variant_convention(
    episode: Episode,
    split: str,
    rng: random.Random,
    mode: NamingMode,
    avoid: str | None = None,
    kept: Iterable[str] = (),
) -> tuple[str | None, str | None]:
    """(the convention renamed names are written in, the convention to record in the prompt
    options or None): the one the harness variant has; else one of those the names a rename must
    keep (``kept``: a tool hooks.py compares by name) are written in, so that the variant's
    names share it too (drawn from ``split``'s where one is); else one drawn from ``split``
    (other than ``avoid`` when possible); recorded unless declared; (None, None) for
    ``mixed``."""
    if mode == "mixed":
        return None, None
    declared = episode.harness.prompt.options.get(NAMING_OPTION)
    if declared is not None:
        if declared not in CONVENTIONS:
            raise HsaError(
                f"prompt.options.{NAMING_OPTION} is {declared!r}; known conventions: "
                f"{', '.join(CONVENTIONS)}"
            )
        return declared, None
    conventions = split_conventions(split, episode.harness)
    kept = list(kept)
    if kept and (fits := shared_conventions(kept)):
        # Drawn among those the kept names are written in: the split's where it has one.
        conventions = tuple(c for c in conventions if c in fits) or tuple(
            c for c in CONVENTIONS if c in fits
        )
    choices = [c for c in conventions if c != avoid] or list(conventions)
    chosen = rng.choice(choices)
    return chosen, chosen


def declared_or_shared(episode: Episode, names: Iterable[str]) -> str | None:
    """The variant's convention if one is recorded, else the one ``names`` share (None: they
    mix conventions or there are none)."""
    declared = episode.harness.prompt.options.get(NAMING_OPTION)
    if declared in CONVENTIONS:
        return declared
    names = list(names)
    return convention_of(names) if names else None


def record_convention(episode: Episode, params: dict) -> Episode:
    """The episode with the convention a transform drew (``params["naming"]``) recorded. A
    transform that renamed nothing (a skill-id step under a harness without skills, as BFCL's
    are) records nothing: no name of the variant is written in its draw, and a later draw (the
    distractors' names) follows the names the harness has."""
    chosen = params.get("naming")
    if chosen is None or not params.get("renames"):
        return episode
    if chosen not in CONVENTIONS:
        raise HsaError(f"naming must be one of {', '.join(CONVENTIONS)}, got {chosen!r}")
    return episode.with_prompt_options(**{NAMING_OPTION: chosen})


class Renamer:
    """Hands out new names for the identifiers of one kind, for one transform application.

    ``names``: every identifier of the kind (what a new name may not mean); ``taken``: names a
    new name may not be (updated as names are handed out); ``accept``: the caller's own test;
    ``verbs``: whether names of the kind lead with a verb (see :func:`slots`); ``harness``: the
    harness the names are of, for the conventions ``naming: mixed`` draws from
    (:func:`split_conventions`)."""

    def __init__(
        self,
        names: Iterable[str],
        taken: set[str],
        split: str,
        rng: random.Random,
        *,
        convention: str | None,
        mixed: tuple[str, ...] = (),
        suffixes: tuple[str, ...] = (),
        mask_prefixes: tuple[str, ...] = ("x",),
        mask_word: Callable[[random.Random], str] = opaque_word,
        accept: Callable[[str], bool] = lambda name: True,
        rate: float = 1.0,
        verbs: bool = True,
        harness: Harness | None = None,
    ):
        self.taken, self.split, self.rng, self.verbs = taken, split, rng, verbs
        self.convention = convention
        self.mixed = mixed or split_conventions(split, harness)
        self.suffixes, self.mask_prefixes = suffixes, mask_prefixes
        self.mask_word = mask_word
        self.accept, self.rate = accept, rate
        self.said_by: dict[tuple[str, ...], set[str]] = {}
        for name in names:
            self.said_by.setdefault(meaning(name), set()).add(name)
        self.chosen: dict[tuple[str, ...], tuple[str, ...]] = {}
        # The tables are English: in a harness written in another language they would put an
        # English sense on a word both spell alike (Portuguese ``data``, a date, -> ``dataset``).
        self.reworded = harness is None or english_names(harness)

    # ---- the rules every new name keeps ----------------------------------------------------

    def fits(self, old: str, new: str) -> bool:
        """Whether ``new`` may be the new name of ``old``: :meth:`free`, and it says no word
        twice where ``old`` says it once (:func:`echoes`: a suffix or pattern word the name has
        already, a synonym beside the word it replaced)."""
        return self.free(old, new) and all(
            n <= o for n, o in zip(echoes(new), echoes(old), strict=True)
        )

    def free(self, old: str, new: str) -> bool:
        """Whether ``new`` is unused, passes the caller's test and says what no other
        identifier says: all an opaque name (a mask, whose words say nothing) must be."""
        if not new or new == old or new in self.taken or not self.accept(new):
            return False
        said, own = meaning(new), meaning(old)
        # Identifiers that already said what ``old`` says (``item``, ``items``) take nothing
        # from each other.
        return said == own or all(meaning(o) == own for o in self.said_by.get(said, ()))

    def take(self, old: str, new: str) -> str:
        self.taken.add(new)
        self.said_by.setdefault(meaning(new), set()).add(old)
        return new

    def take_first(self, old: str, candidates: Iterable[str]) -> str | None:
        """The first of ``candidates`` (opaque names) that is :meth:`free`, taken for ``old``;
        None if none is. Candidates are drawn lazily, so a generator draws only until one is."""
        new = next((n for n in candidates if self.free(old, n)), None)
        return None if new is None else self.take(old, new)

    def style(self) -> str:
        return self.convention or self.rng.choice(self.mixed)

    # ---- new names ---------------------------------------------------------------------------

    def paraphrase(self, old: str, context: set[str]) -> str:
        """A new name for ``old`` with other words where the tables allow, else by the
        fallbacks (an action noun moved to the end, convention, suffix, mask); always a name that fits."""
        style = self.style()
        segments = [name_words(s) or [s] for s in old.split(".")]
        found = slots(segments, self.split, context, self.verbs) if self.reworded else []
        for words in self._candidates(segments, found):
            new = ".".join(write_name(w, style) for w in words)
            if self.fits(old, new):
                return self.take(old, new)
        return self.mask(old, style)

    def restyle(self, old: str) -> str | None:
        """``old`` in the variant's convention, if that differs and fits (its words are kept)."""
        if self.convention is None:
            return None
        new = ".".join(write_name(name_words(s) or [s], self.convention) for s in old.split("."))
        return self.take(old, new) if self.fits(old, new) else None

    def mask(self, old: str, style: str | None = None) -> str:
        """An opaque name (``fn_qzkx``) in the convention: the last resort, and masking itself."""
        style = style or self.convention or "snake"
        prefix = self.rng.choice(self.mask_prefixes)
        # Another opaque word every 50 tries: ``MQzkx`` (PascalCase after a one-letter prefix)
        # is no identifier a skill id may be, ``MQzkxBcdf`` is.
        for attempt in range(200):
            words = [prefix] + [self.mask_word(self.rng) for _ in range(1 + attempt // 50)]
            new = write_name(words, style)
            if self.free(old, new):
                return self.take(old, new)
        raise HsaError(f"no free opaque name for {old!r} in convention {style}")

    def _candidates(
        self, segments: list[list[str]], found: list[Slot]
    ) -> Iterator[list[list[str]]]:
        if found:
            for attempt in range(_MAX_TRIES):
                yield self._replaced(segments, found, fresh=attempt > 0)
        if self.verbs and len(segments[-1]) >= 2:
            last = segments[-1]
            # A leading verb moved to the end, where its bare form names the action on what
            # came after it (``lookup_order`` -> ``order_lookup``): only a verb that reads so
            # (lexicon.yaml's action_nouns), for at the end most verbs read as another word
            # (``set_lock`` is no ``lock_set``, ``schedule_meeting`` no ``meeting_schedule``).
            # Never the other way: a noun compound's last word may be a verb too, and moved
            # first it reads as another compound (``rate_reply`` is no ``reply_rate``). Nor out
            # of a compound: ``check_in`` is no ``in_check``.
            # Nor around a preposition or an article: ``refund_to_card`` is no
            # ``to_card_refund``.
            low = [w.lower() for w in last]
            if (
                low[0] in lexicon().action_nouns
                and (low[0], low[1]) not in lexicon().compounds
                and not _FUNCTION_WORDS.intersection(low[1:])
            ):
                yield segments[:-1] + [last[1:] + last[:1]]
        yield segments  # the same words in the convention
        for suffix in self._suffix_order:
            yield segments[:-1] + [segments[-1] + suffix.split("_")]

    @cached_property
    def _suffix_order(self) -> list[str]:
        """The suffixes in the order this variant tries them, drawn once (when a name first
        needs one): one operator writes one suffix (``_fn``) on every name that needs one, not
        ``_fn``, ``_tool`` and ``_api`` on three names; the next is tried only where the first
        does not fit."""
        return self.rng.sample(self.suffixes, len(self.suffixes))

    def _replaced(
        self, segments: list[list[str]], found: list[Slot], fresh: bool
    ) -> list[list[str]]:
        """The segments with table replacements: each phrase with chance ``rate`` (at least
        one) and the harness-wide choice per phrase; on later attempts (``fresh``) fresh draws
        of a random half, so that a replacement that is taken does not block the rest."""
        rate = 0.5 if fresh else self.rate
        chosen = [self.rng.random() < rate for _ in found]
        if not any(chosen):
            chosen[self.rng.randrange(len(found))] = True
        out = [list(words) for words in segments]
        for slot, replace in sorted(
            zip(found, chosen, strict=True), key=lambda p: (-p[0].segment, -p[0].start)
        ):
            if not replace:
                continue
            if fresh or slot.key not in self.chosen:
                pick = self.rng.choice(slot.options)
                if not fresh:
                    self.chosen[slot.key] = pick
            else:
                pick = self.chosen[slot.key]
                if pick not in slot.options:  # another sense elsewhere in the harness
                    pick = self.rng.choice(slot.options)
            out[slot.segment][slot.start : slot.end] = list(pick)
        return out


def written_as_words(
    harness: Harness, names: Iterable[str], own: Callable[[str], tuple[str, ...]]
) -> frozenset[str]:
    """The plain-word names among ``names`` (not identifier-like: ``search``, ``check-in``) that
    ``harness``'s prose (:meth:`Harness.prose`) writes as plain words, outside code, in a text
    other than the name's own (``own(name)``: the places of the prose that say what it does in
    that word, "Search the catalogue", "Guides the guest through online check-in"). Prose keeps
    plain words (a word is no name there), so renamed, such a name would leave the prose
    sending the model to a tool or a skill the variant does not have ("load the check-in skill
    first"). A hook's configuration that lists the name as a name (``tools: [search, book]``,
    the way the README configures a hook per tool: hsa.model.hook.configured_names) writes no
    word; one that lists it among words (``banned_words: [guaranteed, refund]``) does. Nor does
    a name glued to Chinese, Japanese or Korean text ("まずsearchで"): there it is the name
    (hsa.text.mentions.find_glued_mentions)."""
    plain = [n for n in names if not identifier_like(n)]
    if not plain:
        return frozenset()
    # a name glued to Chinese, Japanese or Korean text is the name there (searchで), no word
    glued = dict.fromkeys(plain, "\x00")
    words = [
        (where, replace_glued_mentions(CODE_SPAN.sub(" ", t), glued))
        for where, t in _worded_prose(harness)
    ]
    return frozenset(
        n
        for n in plain
        if any(
            n in t and standalone(n).search(t)  # a substring test first: most texts lack it
            for where, t in words
            if where not in own(n)
        )
    )


def _worded_prose(harness: Harness) -> Iterator[tuple[str, str]]:
    """:meth:`Harness.prose`, each hook's configuration read without the names it lists as
    names (:func:`hsa.model.hook.configured_names`; :func:`written_as_words`)."""
    hooks = {f"hook {hook.name}": hook for hook in harness.hooks}
    for where, text in harness.prose():
        hook = hooks.get(where)
        if hook is not None:
            _, words = configured_names(hook.config, harness.names)
            text = "\n".join([hook.description, *words])
        yield where, text


def fixed_by_code(harness: Harness, names) -> frozenset[str]:
    """Those of ``names`` the harness's code holds by name, which a rename must leave: what
    :meth:`Harness.written_in_code` finds (compared or read as a string), and an identifier
    hooks.py writes inside its strings ("confira o passageiro_id", "rode buscar_voos de novo":
    its feedback prints them as they are in every variant, and would name what the variant no
    longer has), and a tool named by a plain word that those strings write as a word ("use
    reschedule with the event_id": the feedback sends the model to that tool). A parameter's
    plain word there, "amount", is the sentence's own."""
    identifiers = [n for n in names if identifier_like(n)]
    tools = set(harness.tool_names)
    plain_tools = [n for n in names if n in tools and not identifier_like(n)]
    strings = printed_strings(harness.hooks_source)
    printed = {name for text in strings for name in find_mentions(text, identifiers)}
    if plain_tools:
        # in any case: a sentence may open with it ("Reschedule, create_return and ... only work")
        lowered = [text.lower() for text in strings]
        printed.update(
            n for n in plain_tools if any(standalone(n.lower()).search(t) for t in lowered)
        )
    return harness.written_in_code(names) | printed
