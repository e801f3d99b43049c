"""Skill identifiers: rename the harness's skills so the model reads ids instead of memorising them.

Changes: skill ids, in one of four styles, one transform each: other words (``item-qa`` ->
``product-question-answering``, from the general English lexicon and the abbreviation table, with
table-free fallbacks for words no table knows), another naming convention (``item-qa`` ->
``itemQa``), a namespace (``agent.item-qa``, drawn from the harness's own name or a general
table) and opaque ids (``skill_qzkx``, like function masking). Every mention moves with
the id, through :func:`hsa.augment.rename.rename_episode`: the inline harness (so the rendered system
prompt and the skill loader's ``enum``), skill-loader call arguments, skill content and
descriptions (also where a ``load_skill`` result carries a body verbatim, which therefore stays
equal to the variant's skill content), assistant and tool text, hook configuration and gold.
Keeps: every skill's kind, description, content and allowed tools (up to the renaming), which
skill each step loads, and what the gold expects, up to the recorded renaming. New ids are
unique, never a name the harness already uses for a tool, skill, hook or the skill loader, never
a name its texts already mention, always identifier-like, so prose mentions of them can be found
again, and never say what another skill's id says (:func:`hsa.text.names.meaning`). Renamed ids need
not be valid Agent Skills folder names: variants live inline. Renamed ids are written in the
harness variant's one naming convention (see :mod:`hsa.transforms._names`).

The styles are separate transforms rather than one ``style`` option because each has its own
option space and train/held-out split, and lineage and robustness reports then name the style
that changed; a recipe mixes them with ``one_of``, or chains them (synonyms, then namespace).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from hsa.augment.mapping import Mapping
from hsa.augment.registry import register
from hsa.augment.rename import rename_episode
from hsa.augment.transform import Share, Transform
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.harness import Harness
from hsa.model.memo import BoundedMemo
from hsa.model.message import message_text
from hsa.text.mentions import find_code_mentions, find_mentions
from hsa.text.names import convention_of, identifier_like, name_words, write_segments
from hsa.transforms._names import (
    NAMING_OPTION,
    NamingMode,
    Renamer,
    declared_or_shared,
    fixed_by_code,
    lexicon,
    record_convention,
    split_conventions,
    variant_convention,
    written_as_words,
)

Split = Literal["train", "heldout"]

_TABLES = yaml.safe_load(Path(__file__).with_suffix(".yaml").read_text(encoding="utf-8"))
# General namespaces, first words of opaque ids, and suffixes of last resort (skill_ids.yaml).
SKILL_NAMESPACES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["namespaces"].items()
}
OPAQUE_PREFIXES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["mask_prefixes"].items()
}
SKILL_SUFFIXES: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _TABLES["suffixes"].items()}
_NAMESPACE_STOPWORDS = frozenset(_TABLES["namespace_stopwords"])


def harness_namespaces(episode: Episode, split: str) -> tuple[str, ...]:
    """Namespaces drawn from the harness's own name (``airline-support`` -> airline, support):
    words of at least three letters that are no verb of the lexicon, each given to one split by
    a stable hash of the word, so that the two splits never share one."""
    verbs = lexicon().verbs
    out = []
    for word in (w.lower() for w in name_words(episode.harness.name)):
        if (
            len(word) < 3
            or not word.isascii()
            or not word.isalpha()
            or word in verbs
            or word in _NAMESPACE_STOPWORDS
            or word in out
        ):
            continue
        part = (
            "train"
            if hashlib.blake2b(word.encode(), digest_size=1).digest()[0] % 2 == 0
            else "heldout"
        )
        if part == split:
            out.append(word)
    return tuple(out)


class _Namer:
    """Hands out new ids that are unique, free in the harness's one namespace, identifier-like
    and not already mentioned anywhere in the episode's texts."""

    def __init__(self, episode: Episode):
        harness = episode.harness
        # A parameter's name too: a skill renamed `incident_report` beside `create_claim`'s
        # parameter of that name would be either, wherever a text says it.
        self.taken = set(harness.names) | harness.parameter_names
        texts = [harness.description, *harness.prompt.text.values()]
        texts += [text for _, text in harness.prompt.wording()]
        texts += [s.description + "\n" + s.content for s in harness.skills]
        texts += [t.description for t in harness.tools]
        texts += [h.description for h in harness.hooks]
        texts += [message_text(message) for message in episode.messages]
        self.text = "\n".join(texts)

    def free(self, name: str) -> bool:
        return (
            bool(name)
            and name not in self.taken
            and identifier_like(name)
            and not find_mentions(self.text, [name])
            and not find_code_mentions(self.text, [name])
        )

    def take(self, name: str) -> None:
        self.taken.add(name)

    def fork(self) -> _Namer:
        """A namer with the same texts and its own copy of the taken names."""
        other = object.__new__(_Namer)
        other.taken, other.text = set(self.taken), self.text
        return other


def fixed_skill_ids(harness: Harness) -> frozenset[str]:
    """Skill ids a rename leaves: those the harness's code writes (hooks.py's
    ``"returns-policy" in payload["loaded_skills"]``, a layout's ``{% if skill.id == ... %}``),
    which the variant's code would look for under the old id and never find once the skill had
    a new one; and an id that is also a tool's parameter name
    (a skill ``refund`` beside ``update_order(refund=...)``): no text tells which one a mention
    means (a hook's ``flag_param: refund``, "the `refund` parameter"), and renamed as the skill
    it would stop naming the parameter. And a plain-word id (``greeting``, ``check-in``) that
    the harness's prose writes as a word ("for an early check-in, load the check-in skill
    first") but in the skill's own texts: prose keeps words, and would name a skill the
    variant does not have."""
    return _FIXED.get(harness.fingerprint, lambda: _fixed(harness))


# Fixed ids by harness fingerprint: every draw of every variant of a harness asks, and the
# answer reads the harness's prose. Pure: it reads the harness alone.
_FIXED: BoundedMemo[frozenset[str]] = BoundedMemo(1024)


def _fixed(harness: Harness) -> frozenset[str]:
    ids = harness.skill_ids
    return (
        fixed_by_code(harness, ids)
        | (harness.parameter_names & set(ids))
        | written_as_words(harness, ids, lambda n: (f"skill {n}",))
    )


def _check_renames(episode: Episode, renames) -> dict:
    """``renames`` (old -> new skill id) checked against the episode; HsaError when unfit."""
    if not isinstance(renames, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in renames.items()
    ):
        raise HsaError(f"renames must map skill ids to new ids, got {renames!r:.200}")
    harness = episode.harness
    unknown = sorted(set(renames) - set(harness.skill_ids))
    if unknown:
        raise HsaError(
            f"renames unknown skill(s) {unknown}; the harness has {list(harness.skill_ids)}"
        )
    final = [renames.get(s, s) for s in harness.skill_ids]
    if len(set(final)) != len(final):
        raise HsaError(f"renames {renames} give two skills the same id")
    others = set(harness.tool_names) | {h.name for h in harness.hooks} | {harness.skill_loader}
    clash = sorted(set(renames.values()) & others)
    if clash:
        raise HsaError(f"new skill id(s) {clash} are already tool, hook or skill-loader names")
    empty = [old for old, new in renames.items() if not new]
    if empty:
        raise HsaError(f"new id for skill(s) {empty} is empty")
    return renames


@dataclass(frozen=True)
class _SkillRename(Transform):
    """Shared by the skill-id styles: params are ``{"renames": {old: new}, "naming": ...}``,
    ``naming`` the convention the transform drew for the variant (recorded in the prompt
    options), or None."""

    family = "skill_ids"
    conversation = "renamed"

    def mapping(self, episode: Episode, params: dict) -> Mapping:
        return Mapping(skills=_check_renames(episode, params.get("renames")))

    def apply(self, episode: Episode, params: dict) -> Episode:
        return record_convention(rename_episode(episode, self.mapping(episode, params)), params)

    def renamer(
        self, episode: Episode, namer: _Namer, rng: random.Random, convention: str | None, **options
    ) -> Renamer:
        split = self.split
        return Renamer(
            episode.harness.skill_ids,
            namer.taken,
            split,
            rng,
            convention=convention,
            harness=episode.harness,
            suffixes=SKILL_SUFFIXES[split],
            mask_prefixes=OPAQUE_PREFIXES[split],
            accept=namer.free,
            # A skill id names a topic, in a noun compound far more often than an action
            # (``schedule-builder``, ``rate-reply``, ``refund-policy``): its first word is
            # read as a noun, never as a verb to reword or move (``arrange-builder``,
            # ``builder-schedule`` say other things).
            verbs=False,
            **options,
        )


def _skill_context(skill) -> set[str]:
    """The words of a skill's id and description: what tells a word's sense."""
    return {w.lower() for w in name_words(skill.id) + name_words(skill.description)}


@register
@dataclass(frozen=True)
class SkillIdSynonym(_SkillRename):
    """Rewrites the words of skill ids (item-qa -> product-question-answering): synonyms from
    the general English lexicon, abbreviations and expansions, one replacement per word across
    the whole harness, in the variant's one naming convention; ids no table can reword are
    reordered, restyled or suffixed instead. Every mention moves with the id, and kinds,
    contents and what the gold expects are kept.

    ``rate`` is the chance that each known word is replaced (every id with one changes at least
    one); ``naming: mixed`` draws a convention per id instead of one for the variant."""

    name = "skill_id_synonym"
    scope = "harness"
    version = "63"  # 63: a name glued to CJK text in the harness's prose is the name, no word that
    # keeps it; one name alone in a hook configuration is a name only under a key that says so
    # 62: a plain word spaced from Chinese or Japanese (和 reason 必须) is the name
    # too, but inside quoted speech (“这个size有M吗”)
    # 61: a hook configuration's string is a name only in a list of names, among
    # keys that are names or under a key that says so; lexicon senses gone (review, deposit,
    # handling, guide beside user...)
    # 60: a plain-word name glued to Chinese, Japanese or Korean text is the name
    # (searchで), but in what the user and the assistant say
    # 59: a plain-word skill id a hook's configuration lists is renamed (a
    # configuration's name is the name, no word of prose)
    # 58: no verb's synonym first in a skill id, and no word moved (a skill id
    # names a topic); lexicon: a local guide no primer, a complaint no objection, a colour no hue,
    # enabled no operational, a device controlled not calibrated
    # 57: SQL: EXPLAIN with options; FROM before a pronoun is English; SHOW and
    # CREATE read as statements only
    # 56: an application is no app, money no legal tender
    # 55: food-delivery senses gone (diner, tail, dispatch, distribute)
    # 54: a step that renames nothing records no naming convention
    # 53: more lexicon senses gone (distance, identify, width, random, team, map,
    # check, interest, ticket, title, convert, process, room, preference, average, rank, cancel,
    # threshold, amount; quant); no value or setting suffix
    # 52: SQL read in EXPLAIN, CREATE ... AS, WITH RECURSIVE and SHOW statements;
    # FROM before an article is English
    # 51: lexicon senses reviewed: groups and members of another sense gone (top_p,
    # min_price, page_token, node_id, period, country, language, profile...), fewer abbreviations
    # 50: a name hooks.py prints is read in its strings as every mention is
    # (hsa.text.mentions: addresses aside, a German compound's noun after it)
    # 49: a name in a hooks.py docstring is no feedback and keeps no name fixed;
    # set, bundle and report take their other senses only beside their words
    # 48: the skill loader's own words are renamed with the ids and read as the
    # harness's text
    # 47: word senses from BFCL: a present value is no gift, a stock price no cost,
    # a bond's coupon no voucher, a video game no match, and more words take their sense only beside
    # its words
    # 46: a name before a hyphen and a capitalised word (a German compound's noun,
    # entity_id-Angabe) moves
    # 45: a name hooks.py writes inside its strings (its feedback prints it) keeps
    # it
    # 44: a tool, skill or hook name a value writes (as code or in SQL) is data in
    # results and the user's words, not in the assistant's
    # 43: access and mode take their other senses only beside words of them alone
    # (not allow, group, settings)
    # 42: a skill id the calls' values write as code is the conversation's data
    # 41: access takes its permission sense only beside words of it; special is no deal; a mode no
    # regime but a device's
    # 40: a payout is a dividend only where the tool is about shares (an insurance
    # payout is none)
    # 39: a name the harness's own layout compares in its Jinja code keeps it
    # 38: a name in an absolute path without a scheme (GET /api/v1/deploy_status)
    # is a segment of the path, no mention
    # 37: a name moves before a hyphen and a word of another script
    # (calculate_debt-запрос); a plain-word parameter beside a word of a script written with spaces
    # (Cyrillic, Arabic, Greek...) moves
    # 36: words written with a hyphen (check-in, follow-up) are words in prose, and
    # a plain-word name the prose writes as a word keeps it; a verb never leaves its compound
    # (check_in is no in_check)
    # 35: a tax is no duty nor excise (kinds of tax); duty is customs duty
    # 34: business words keep their sense (credit note, goods receipt, journal,
    # duties)
    # 33: place leads names as a verb too: venue only where the text is about places
    # 32: names in a harness's own layout text move
    # 31: names move in thinking and a result's name
    # 30: a total loss is one thing; a policy a compliance check reads is no set of
    # rules
    # 29: no skill is renamed into a parameter's name
    # 28: no hour for hr, cluster for group, patron for user, critique for audit;
    # reset password is one thing
    # 27: a skill id that is also a parameter name is kept
    # 26: a coupon issued is no problem, to apply for a refund no use, a refund
    # policy no repaying
    # 25: no neighbouring sense in incident response (duty, aggregate, incident,
    # service)
    # 24: one suffix per variant on every name that needs one
    # 23: no neighbouring sense in a clinic or a shop (payment, price, height,
    # items, member, query, size, options)
    # 22: a name the user writes as their own word stays in their
    # words; 21: contact is a person only beside a person's words;
    # 20: umlauts stay in their word; a Hangul or Cyrillic harness is no
    # English one; 19: digits stay in their word (s3, k8s);
    # 18: names in the prompt options' headings and instructions move;
    # 17: no English synonyms in the ids of a harness in another language;
    # 16: a skill id hooks.py writes is kept;
    # 15: what the gold requires a reply to say stays; 14: a loaded skill's body is
    # renamed whole; data glued into a name is no
    # data; query strings keep their keys; 13: the data calls pass stays where results and replies
    # repeat it; 12: a hook
    # configuration key renamed onto another key of its object is
    # refused, not merged; 11: no neighbouring senses; plurals once; no word said twice; the
    # user's own data (a gold value the user types) is not renamed
    # 10: lexicon synonyms of one sense (name -> label gone)
    # 8: lexicon senses, plurals; 6: no kebab case with keyword calls

    split: Split = "train"
    rate: Share = 0.8
    naming: NamingMode = "variant"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        fixed = fixed_skill_ids(episode.harness)
        convention, record = variant_convention(episode, self.split, rng, self.naming, kept=fixed)
        namer = _Namer(episode)
        renamer = self.renamer(episode, namer, rng, convention, rate=self.rate)
        renames = {
            s.id: renamer.paraphrase(s.id, _skill_context(s))
            for s in episode.harness.skills
            if s.id not in fixed
        }
        return {"renames": renames, "naming": record}


@register
@dataclass(frozen=True)
class SkillIdCase(_SkillRename):
    """Rewrites every skill id in another naming convention (item-qa -> itemQa, ITEM_QA...),
    the variant's one convention; the words, every mention, kinds, contents and what the gold
    expects are kept."""

    name = "skill_id_case"
    scope = "harness"
    version = "40"  # 40: a name glued to CJK text in the harness's prose is the name, no word that
    # keeps it; one name alone in a hook configuration is a name only under a key that says so
    # 39: a plain word spaced from Chinese or Japanese (和 reason 必须) is the name
    # too, but inside quoted speech (“这个size有M吗”)
    # 38: a hook configuration's string is a name only in a list of names, among
    # keys that are names or under a key that says so; lexicon senses gone (review, deposit,
    # handling, guide beside user...)
    # 37: a plain-word name glued to Chinese, Japanese or Korean text is the name
    # (searchで), but in what the user and the assistant say
    # 36: a plain-word skill id a hook's configuration lists is renamed (a
    # configuration's name is the name, no word of prose)
    # 35: SQL: EXPLAIN with options; FROM before a pronoun is English; SHOW and
    # CREATE read as statements only
    # 34: a step that renames nothing records no naming convention
    # 33: SQL read in EXPLAIN, CREATE ... AS, WITH RECURSIVE and SHOW statements;
    # FROM before an article is English
    # 32: a name hooks.py prints is read in its strings as every mention is
    # (hsa.text.mentions: addresses aside, a German compound's noun after it)
    # 31: a name in a hooks.py docstring is no feedback and keeps no name fixed;
    # set, bundle and report take their other senses only beside their words
    # 30: the skill loader's own words are renamed with the ids and read as the
    # harness's text
    # 29: a name a hook's string writes glued to a Hangul particle (phone_last4는)
    # keeps it
    # 28: a name before a hyphen and a capitalised word (a German compound's noun,
    # entity_id-Angabe) moves
    # 27: a name hooks.py writes inside its strings (its feedback prints it) keeps
    # it
    # 26: a tool, skill or hook name a value writes (as code or in SQL) is data in
    # results and the user's words, not in the assistant's
    # 25: a skill id the calls' values write as code is the conversation's data
    # 24: a name the harness's own layout compares in its Jinja code keeps it
    # 23: a name in an absolute path without a scheme (GET /api/v1/deploy_status)
    # is a segment of the path, no mention
    # 22: a name moves before a hyphen and a word of another script
    # (calculate_debt-запрос); a plain-word parameter beside a word of a script written with spaces
    # (Cyrillic, Arabic, Greek...) moves
    # 21: words written with a hyphen (check-in, follow-up) are words in prose, and
    # a plain-word name the prose writes as a word keeps it; a verb never leaves its compound
    # (check_in is no in_check)
    # 20: names in a harness's own layout text move
    # 19: names move in thinking and a result's name
    # 18: no skill is renamed into a parameter's name
    # 17: a skill id that is also a parameter name is kept
    # 16: a name the user writes as their own word stays in their
    # words; 15: umlauts stay in their word; a Hangul or Cyrillic harness is no
    # English one; 14: digits stay in their word (s3, k8s);
    # 13: names in the prompt options' headings and instructions move;
    # 12: a skill id hooks.py writes is kept;
    # 11: what the gold requires a reply to say stays; 10: a loaded skill's body is
    # renamed whole; data glued into a name is no
    # data; query strings keep their keys; 9: the data calls pass stays where results and replies
    # repeat it; 8: a hook
    # configuration key renamed onto another key of its object is
    # refused, not merged; 7: the user's own data (a gold value the user types) is not renamed
    # 6: JSON tool results' strings decoded (escapes, \/ addresses)
    # 5: no kebab case for a harness that writes keyword calls

    split: Split = "train"
    naming: NamingMode = "variant"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        ids = episode.harness.skill_ids
        current = convention_of(ids) if ids else None
        fixed = fixed_skill_ids(episode.harness)
        convention, record = variant_convention(
            episode, self.split, rng, self.naming, avoid=current, kept=fixed
        )
        renamable = [skill_id for skill_id in ids if skill_id not in fixed]
        base = _Namer(episode)
        if convention is not None and record is None:  # the variant's, already chosen
            candidates = [convention]
        else:  # drawn here: of the split's conventions, the one that renames the most ids
            conventions = split_conventions(self.split, episode.harness)
            first = convention or rng.choice(conventions)
            rest = [c for c in conventions if c != first]
            rng.shuffle(rest)
            candidates = [first] + rest
        best, best_convention = {}, candidates[0]
        for candidate in candidates:
            namer = base.fork()
            renamer = self.renamer(episode, namer, rng, candidate)
            renames = {}
            for skill_id in renamable:
                new = renamer.restyle(skill_id)
                if new is not None:
                    renames[skill_id] = new
            if len(renames) > len(best):
                best, best_convention = renames, candidate
            if len(best) == len(renamable):
                break
        return {"renames": best, "naming": best_convention if record is not None else None}


@register
@dataclass(frozen=True)
class SkillIdNamespace(_SkillRename):
    """Puts every skill id under one namespace (item-qa -> agent.item-qa), a word of the
    harness's own name or of a general table; the rest of the id, every mention, kinds, contents
    and what the gold expects are kept."""

    name = "skill_id_namespace"
    scope = "harness"
    version = "48"  # 48: a name glued to CJK text in the harness's prose is the name, no word that
    # keeps it; one name alone in a hook configuration is a name only under a key that says so
    # 47: a plain word spaced from Chinese or Japanese (和 reason 必须) is the name
    # too, but inside quoted speech (“这个size有M吗”)
    # 46: a hook configuration's string is a name only in a list of names, among
    # keys that are names or under a key that says so; lexicon senses gone (review, deposit,
    # handling, guide beside user...)
    # 45: a plain-word name glued to Chinese, Japanese or Korean text is the name
    # (searchで), but in what the user and the assistant say
    # 44: a plain-word skill id a hook's configuration lists is renamed (a
    # configuration's name is the name, no word of prose)
    # 43: no verb's synonym first in a skill id, and no word moved (a skill id
    # names a topic); lexicon: a local guide no primer, a complaint no objection, a colour no hue,
    # enabled no operational, a device controlled not calibrated
    # 42: SQL: EXPLAIN with options; FROM before a pronoun is English; SHOW and
    # CREATE read as statements only
    # 41: an application is no app, money no legal tender
    # 40: food-delivery senses gone (diner, tail, dispatch, distribute)
    # 39: more lexicon senses gone (distance, identify, width, random, team, map,
    # check, interest, ticket, title, convert, process, room, preference, average, rank, cancel,
    # threshold, amount; quant); no value or setting suffix
    # 38: SQL read in EXPLAIN, CREATE ... AS, WITH RECURSIVE and SHOW statements;
    # FROM before an article is English
    # 37: lexicon senses reviewed: groups and members of another sense gone (top_p,
    # min_price, page_token, node_id, period, country, language, profile...), fewer abbreviations
    # 36: a name hooks.py prints is read in its strings as every mention is
    # (hsa.text.mentions: addresses aside, a German compound's noun after it)
    # 35: a name in a hooks.py docstring is no feedback and keeps no name fixed;
    # set, bundle and report take their other senses only beside their words
    # 34: the skill loader's own words are renamed with the ids and read as the
    # harness's text
    # 33: a name a hook's string writes glued to a Hangul particle (phone_last4는)
    # keeps it
    # 32: a name before a hyphen and a capitalised word (a German compound's noun,
    # entity_id-Angabe) moves
    # 31: a name hooks.py writes inside its strings (its feedback prints it) keeps
    # it
    # 30: a tool, skill or hook name a value writes (as code or in SQL) is data in
    # results and the user's words, not in the assistant's
    # 29: a skill id the calls' values write as code is the conversation's data
    # 28: a name the harness's own layout compares in its Jinja code keeps it
    # 27: a name in an absolute path without a scheme (GET /api/v1/deploy_status)
    # is a segment of the path, no mention
    # 26: a name moves before a hyphen and a word of another script
    # (calculate_debt-запрос); a plain-word parameter beside a word of a script written with spaces
    # (Cyrillic, Arabic, Greek...) moves
    # 25: words written with a hyphen (check-in, follow-up) are words in prose, and
    # a plain-word name the prose writes as a word keeps it; a verb never leaves its compound
    # (check_in is no in_check)
    # 24: names in a harness's own layout text move
    # 23: names move in thinking and a result's name
    # 22: no skill is renamed into a parameter's name
    # 21: a skill id that is also a parameter name is kept
    # 20: a coupon issued is no problem, to apply for a refund no use, a refund
    # policy no repaying
    # 19: no neighbouring sense in incident response (duty, aggregate, incident,
    # service)
    # 18: no neighbouring sense in a clinic or a shop (payment, price, height,
    # items, member, query, size, options)
    # 17: a name the user writes as their own word stays in their
    # words; 16: umlauts stay in their word; a Hangul or Cyrillic harness is no
    # English one; 15: digits stay in their word (s3, k8s);
    # 14: names in the prompt options' headings and instructions move;
    # 13: a skill id hooks.py writes is kept;
    # 12: what the gold requires a reply to say stays; 11: a loaded skill's body is
    # renamed whole; data glued into a name is no
    # data; query strings keep their keys; 10: the data calls pass stays where results and replies
    # repeat it; 9: a hook
    # configuration key renamed onto another key of its object is
    # refused, not merged; 8: lexicon verbs changed (hold, join, attach, rejoin); no word said
    # twice;
    # the user's own data (a gold value the user types) is not renamed
    # 7: lexicon verbs changed (localize, summon, bid, forge)
    # 5: no kebab case for a harness that writes keyword calls

    split: Split = "train"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        ids = episode.harness.skill_ids
        fixed = fixed_skill_ids(episode.harness)
        renamable = [skill_id for skill_id in ids if skill_id not in fixed]
        declared = episode.harness.prompt.options.get(NAMING_OPTION)
        convention = declared_or_shared(episode, ids)
        namespaces = list(harness_namespaces(episode, self.split) + SKILL_NAMESPACES[self.split])
        rng.shuffle(namespaces)
        base, best = _Namer(episode), {}
        for namespace in namespaces:
            namer = base.fork()
            renamer = self.renamer(episode, namer, rng, convention)
            renames = {}
            for skill_id in renamable:
                # Under a convention the variant already has, the id is written in it too.
                new = (
                    write_segments(f"{namespace}.{skill_id}", convention)
                    if declared
                    else f"{namespace}.{skill_id}"
                )
                if renamer.fits(skill_id, new):
                    renames[skill_id] = renamer.take(skill_id, new)
            if len(renames) > len(best):
                best = renames
            if len(best) == len(renamable):
                break
        return {"renames": best}


@register
@dataclass(frozen=True)
class SkillIdMask(_SkillRename):
    """Replaces skill ids with opaque ids (skill_qzkx) everywhere they appear, like function
    masking for tools: the model must read skill descriptions instead of recognising ids; kinds,
    contents and what the gold expects are kept.

    ``fraction`` is the share of skills masked; one prefix is drawn per harness and written in
    the harness's convention."""

    name = "skill_id_mask"
    scope = "harness"
    version = "38"  # 38: a name glued to CJK text in the harness's prose is the name, no word that
    # keeps it; one name alone in a hook configuration is a name only under a key that says so
    # 37: a plain word spaced from Chinese or Japanese (和 reason 必须) is the name
    # too, but inside quoted speech (“这个size有M吗”)
    # 36: a hook configuration's string is a name only in a list of names, among
    # keys that are names or under a key that says so; lexicon senses gone (review, deposit,
    # handling, guide beside user...)
    # 35: a plain-word name glued to Chinese, Japanese or Korean text is the name
    # (searchで), but in what the user and the assistant say
    # 34: a plain-word skill id a hook's configuration lists is renamed (a
    # configuration's name is the name, no word of prose)
    # 33: SQL: EXPLAIN with options; FROM before a pronoun is English; SHOW and
    # CREATE read as statements only
    # 32: SQL read in EXPLAIN, CREATE ... AS, WITH RECURSIVE and SHOW statements;
    # FROM before an article is English
    # 31: a name hooks.py prints is read in its strings as every mention is
    # (hsa.text.mentions: addresses aside, a German compound's noun after it)
    # 30: a name in a hooks.py docstring is no feedback and keeps no name fixed;
    # set, bundle and report take their other senses only beside their words
    # 29: the skill loader's own words are renamed with the ids and read as the
    # harness's text
    # 28: a name a hook's string writes glued to a Hangul particle (phone_last4는)
    # keeps it
    # 27: a name before a hyphen and a capitalised word (a German compound's noun,
    # entity_id-Angabe) moves
    # 26: a name hooks.py writes inside its strings (its feedback prints it) keeps
    # it
    # 25: a tool, skill or hook name a value writes (as code or in SQL) is data in
    # results and the user's words, not in the assistant's
    # 24: a skill id the calls' values write as code is the conversation's data
    # 23: a name the harness's own layout compares in its Jinja code keeps it
    # 22: a name in an absolute path without a scheme (GET /api/v1/deploy_status)
    # is a segment of the path, no mention
    # 21: a name moves before a hyphen and a word of another script
    # (calculate_debt-запрос); a plain-word parameter beside a word of a script written with spaces
    # (Cyrillic, Arabic, Greek...) moves
    # 20: words written with a hyphen (check-in, follow-up) are words in prose, and
    # a plain-word name the prose writes as a word keeps it; a verb never leaves its compound
    # (check_in is no in_check)
    # 19: names in a harness's own layout text move
    # 18: names move in thinking and a result's name
    # 17: no skill is renamed into a parameter's name
    # 16: a skill id that is also a parameter name is kept
    # 15: a name the user writes as their own word stays in their
    # words; 14: umlauts stay in their word; a Hangul or Cyrillic harness is no
    # English one; 13: digits stay in their word (s3, k8s);
    # 12: names in the prompt options' headings and instructions move;
    # 11: a skill id hooks.py writes is kept;
    # 10: what the gold requires a reply to say stays; 9: a loaded skill's body is
    # renamed whole; data glued into a name is no data;
    # query strings keep their keys; 8: the data calls pass stays where results and replies repeat
    # it; 7: a hook
    # configuration key renamed onto another key of its object is
    # refused, not merged; 6: the user's own data (a gold value the user types) is not renamed
    # 5: JSON tool results' strings decoded (escapes, \/ addresses)
    # 4: URLs keep names; plain-word names written as calls are renamed

    split: Split = "train"
    fraction: Share = 1.0

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        ids = episode.harness.skill_ids
        fixed = fixed_skill_ids(episode.harness)
        prefix = rng.choice(OPAQUE_PREFIXES[self.split])
        namer = _Namer(episode)
        convention = declared_or_shared(episode, ids) or "kebab"
        renamer = Renamer(
            ids,
            namer.taken,
            self.split,
            rng,
            convention=convention,
            mask_prefixes=(prefix,),
            accept=namer.free,
        )
        return {
            "renames": {
                skill_id: renamer.mask(skill_id)
                for skill_id in ids
                # Drawn for every id, kept or not, so that a kept id shifts no other id's draw.
                if rng.random() < self.fraction and skill_id not in fixed
            }
        }
