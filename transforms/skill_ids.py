"""Skill identifiers: rename the harness's skills so the model reads ids instead of memorising them.

Changes: skill ids, in one of four styles, one transform each: semantic synonyms
(``item_qa`` -> ``product_question_answering``), case and separator (``item-qa`` -> ``itemQa``),
namespaces (``shop.item-qa``) and opaque ids (``skill_7f3a``, like function masking). Every
mention moves with the id, through :func:`hsa.rename.rename_episode`: the inline harness (so the
rendered system prompt and the skill loader's ``enum``), skill-loader call arguments, skill
content and descriptions (also where a ``load_skill`` result carries a body verbatim, which
therefore stays equal to the variant's skill content), assistant and tool text, hook
configuration and gold.
Keeps: every skill's kind, description, content and allowed tools (up to the renaming), which
skill each step loads, and what the gold expects, up to the recorded renaming. New ids are
unique, never a name the harness already uses for a tool, skill, hook or the skill loader, never
a name its texts already mention, and always identifier-like, so prose mentions of them can be
found again. Renamed ids need not be valid Agent Skills folder names: variants live inline.

The styles are separate transforms rather than one ``style`` option because each has its own
option space and train/held-out split, and lineage and robustness reports then name the style
that changed; a recipe mixes them with ``one_of``, or chains them (synonyms, then namespace).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Literal

from hsa.episode import Episode
from hsa.errors import HsaError
from hsa.mapping import Mapping
from hsa.mentions import find_code_mentions, find_mentions
from hsa.registry import register
from hsa.rename import rename_episode
from hsa.transform import Share, Transform
from hsa.verify import identifier_like

Split = Literal["train", "heldout"]

# Word-level synonyms for the words skill ids are made of, in this domain (live commerce) and in
# general agent harnesses. Keys and values are snake_case phrases; a value may have several words.
# Per key, the train part and the held-out part never overlap, and no word of any held-out value
# is a word of any train value, so held-out ids use vocabulary no training variant has.
SKILL_WORD_SYNONYMS: dict[str, dict[str, tuple[str, ...]]] = {
    "reply": {"train": ("response", "respond"), "heldout": ("answer", "rejoinder")},
    "replies": {"train": ("responses",), "heldout": ("answers",)},
    "answer": {"train": ("response",), "heldout": ("reply",)},
    "answering": {"train": ("responding",), "heldout": ("replying",)},
    "qa": {"train": ("question_answering", "faq"), "heldout": ("q_and_a", "inquiry_handling")},
    "q_and_a": {"train": ("faq",), "heldout": ("inquiry_handling",)},
    "question": {"train": ("query",), "heldout": ("inquiry",)},
    "questions": {"train": ("queries",), "heldout": ("inquiries",)},
    "price": {"train": ("pricing", "cost"), "heldout": ("price_quote", "charge")},
    "pricing": {"train": ("cost",), "heldout": ("charge",)},
    "coupon": {"train": ("voucher", "discount_code"), "heldout": ("promo", "rebate")},
    "coupons": {"train": ("vouchers",), "heldout": ("promos",)},
    "discount": {"train": ("reduction", "markdown"), "heldout": ("rebate", "saving")},
    "stock": {"train": ("inventory", "availability"), "heldout": ("supply", "on_hand")},
    "inventory": {"train": ("availability",), "heldout": ("supply",)},
    "shipping": {"train": ("delivery", "dispatch"), "heldout": ("logistics", "freight")},
    "delivery": {"train": ("dispatch",), "heldout": ("freight",)},
    "size": {"train": ("sizing", "fit"), "heldout": ("measurement", "dimensions")},
    "advice": {"train": ("guidance", "recommendation"), "heldout": ("tips", "counsel")},
    "recommendation": {"train": ("suggestion",), "heldout": ("tip",)},
    "greeting": {"train": ("welcome", "hello"), "heldout": ("salutation", "hi")},
    "chitchat": {"train": ("small_talk", "smalltalk"), "heldout": ("banter", "casual_chat")},
    "chit_chat": {"train": ("small_talk",), "heldout": ("banter",)},
    "refusal": {"train": ("decline", "rejection"), "heldout": ("denial", "refuse")},
    "off_topic": {"train": ("out_of_scope", "unrelated"), "heldout": ("irrelevant", "tangent")},
    "strategy": {"train": ("plan", "playbook"), "heldout": ("approach", "tactics")},
    "plan": {"train": ("playbook",), "heldout": ("approach",)},
    "comparison": {"train": ("compare", "versus"), "heldout": ("contrast", "side_by_side")},
    "compare": {"train": ("comparison",), "heldout": ("contrast",)},
    "complaint": {"train": ("grievance", "issue"), "heldout": ("dispute", "problem_report")},
    "complaints": {"train": ("grievances",), "heldout": ("disputes",)},
    "handling": {"train": ("management", "resolution"), "heldout": ("processing", "triage")},
    "upsell": {"train": ("cross_sell", "upgrade"), "heldout": ("add_on", "promotion")},
    "bundle": {"train": ("package", "combo"), "heldout": ("kit", "set")},
    "after_sales": {"train": ("post_purchase", "aftercare"), "heldout": ("support", "returns")},
    "product": {"train": ("item", "goods"), "heldout": ("merchandise", "article")},
    "products": {"train": ("items", "goods"), "heldout": ("merchandise", "catalog")},
    "item": {"train": ("goods",), "heldout": ("merchandise",)},
    "info": {"train": ("information", "details"), "heldout": ("facts", "data")},
    "information": {"train": ("details",), "heldout": ("facts",)},
    "search": {"train": ("lookup", "find"), "heldout": ("discover", "seek")},
    "lookup": {"train": ("find",), "heldout": ("seek",)},
    "check": {"train": ("verify", "inspect"), "heldout": ("validate", "examine")},
    "get": {"train": ("fetch", "retrieve"), "heldout": ("obtain", "read")},
    "help": {"train": ("assist", "aid"), "heldout": ("assistance",)},
    "guide": {"train": ("handbook", "manual"), "heldout": ("howto", "primer")},
    "policy": {"train": ("rules", "terms"), "heldout": ("regulations", "conditions")},
    "rules": {"train": ("guidelines",), "heldout": ("regulations",)},
    "order": {"train": ("purchase",), "heldout": ("transaction",)},
    "returns": {"train": ("refunds",), "heldout": ("exchanges",)},
    "refund": {"train": ("reimbursement",), "heldout": ("money_back",)},
    "summary": {"train": ("overview", "digest"), "heldout": ("synopsis", "recap")},
    "email": {"train": ("mail", "message"), "heldout": ("correspondence", "letter")},
    "calendar": {"train": ("schedule", "agenda"), "heldout": ("planner", "timetable")},
    "weather": {"train": ("forecast",), "heldout": ("meteo",)},
    "translation": {"train": ("localization",), "heldout": ("interpretation",)},
    "translate": {"train": ("localize",), "heldout": ("interpret",)},
    "code": {"train": ("programming", "source"), "heldout": ("coding", "software")},
    "review": {"train": ("critique", "assessment"), "heldout": ("evaluation", "appraisal")},
    "writing": {"train": ("composition",), "heldout": ("drafting",)},
    "write": {"train": ("compose",), "heldout": ("draft",)},
    "report": {"train": ("writeup",), "heldout": ("brief",)},
    "booking": {"train": ("reservation",), "heldout": ("appointment",)},
    "travel": {"train": ("trip",), "heldout": ("journey",)},
    "math": {"train": ("arithmetic", "calculation"), "heldout": ("computation", "maths")},
    "user": {"train": ("customer", "client"), "heldout": ("member", "patron")},
    "customer": {"train": ("client",), "heldout": ("patron",)},
    "support": {"train": ("service_desk",), "heldout": ("helpdesk",)},
    "host": {"train": ("presenter", "streamer"), "heldout": ("anchor", "emcee")},
    "live": {"train": ("livestream", "streaming"), "heldout": ("broadcast", "realtime")},
    "viewer": {"train": ("audience", "watcher"), "heldout": ("spectator", "follower")},
    "tone": {"train": ("voice", "style"), "heldout": ("manner", "register")},
    "format": {"train": ("layout", "formatting"), "heldout": ("presentation", "shape")},
    "escalation": {"train": ("handover", "transfer"), "heldout": ("referral", "routing")},
    "safety": {"train": ("guardrail", "protection"), "heldout": ("safeguard", "caution")},
    "moderation": {"train": ("filtering",), "heldout": ("screening",)},
    "follow_up": {"train": ("followup", "next_steps"), "heldout": ("check_in",)},
    "sales": {"train": ("selling", "commerce"), "heldout": ("retail", "trade")},
    "promotion": {"train": ("campaign", "deal"), "heldout": ("special", "offer")},
    "gift": {"train": ("present",), "heldout": ("reward",)},
    "payment": {"train": ("checkout", "billing"), "heldout": ("settlement", "paying")},
    "account": {"train": ("profile",), "heldout": ("membership",)},
}

# Case and separator styles. Train: the everyday code conventions; held out: the rarer ones.
CASE_STYLES: dict[str, tuple[str, ...]] = {
    "train": ("snake", "kebab", "camel", "screaming_snake"),
    "heldout": ("dotted", "pascal", "screaming_kebab"),
}

# Namespaces put in front of every id (``shop.item-qa``).
SKILL_NAMESPACES: dict[str, tuple[str, ...]] = {
    "train": ("shop", "store", "live", "host", "skills", "agent", "core", "sales"),
    "heldout": ("mall", "studio", "room", "crew", "kit", "hub", "desk", "team"),
}

# Prefixes of opaque ids (``skill_7f3a``).
OPAQUE_PREFIXES: dict[str, tuple[str, ...]] = {
    "train": ("skill_", "sk_", "s_", "skill-"),
    "heldout": ("module_", "m_", "ability_", "playbook-"),
}

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\x00-\x7f]+")
_MAX_TRIES = 20


def id_words(skill_id: str) -> list[str]:
    """The lowercase words of an id in any style (``item-qa``, ``itemQa``, ``shop.ITEM_QA``)."""
    return [w.lower() for w in _WORDS.findall(skill_id)]


def case_of(skill_id: str) -> str:
    """The case style an id is written in (``kebab`` when nothing says otherwise)."""
    if "." in skill_id:
        return "dotted"
    if "_" in skill_id:
        return "screaming_snake" if skill_id.upper() == skill_id else "snake"
    if "-" in skill_id:
        return "screaming_kebab" if skill_id.upper() == skill_id else "kebab"
    if re.search(r"[a-z][A-Z]", skill_id):
        return "pascal" if skill_id[:1].isupper() else "camel"
    return "kebab"


def write_id(words: list[str], style: str) -> str:
    """``words`` joined in case ``style`` (one of the CASE_STYLES)."""
    if style == "snake":
        return "_".join(words)
    if style == "kebab":
        return "-".join(words)
    if style == "dotted":
        return ".".join(words)
    if style == "screaming_snake":
        return "_".join(words).upper()
    if style == "screaming_kebab":
        return "-".join(words).upper()
    capitalised = [w[:1].upper() + w[1:] for w in words]
    if style == "pascal":
        return "".join(capitalised)
    if style == "camel":
        return words[0] + "".join(capitalised[1:]) if words else ""
    raise HsaError(f"unknown case style {style!r}; known: "
                   f"{', '.join(CASE_STYLES['train'] + CASE_STYLES['heldout'])}")


def _synonym_keys() -> list[tuple[str, ...]]:
    return sorted((tuple(k.split("_")) for k in SKILL_WORD_SYNONYMS), key=len, reverse=True)


def synonym_phrases(words: list[str]) -> list[tuple[int, int, str]]:
    """(start, end, key) of each table phrase in ``words``, longest match first, left to right."""
    keys = _synonym_keys()
    found, i = [], 0
    while i < len(words):
        for key in keys:
            if tuple(words[i:i + len(key)]) == key:
                found.append((i, i + len(key), "_".join(key)))
                i += len(key)
                break
        else:
            i += 1
    return found


class _Namer:
    """Hands out new ids that are unique, free in the harness's one namespace, identifier-like
    and not already mentioned anywhere in the episode's texts."""

    def __init__(self, episode: Episode):
        harness = episode.harness
        self.taken = set(harness.names)
        texts = [harness.description, *harness.prompt.text.values()]
        texts += [s.description + "\n" + s.content for s in harness.skills]
        texts += [t.description for t in harness.tools]
        texts += [h.description for h in harness.hooks]
        for message in episode.messages:
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content)
            if isinstance(content, str):
                texts.append(content)
        self.text = "\n".join(texts)

    def free(self, name: str) -> bool:
        return (bool(name) and name not in self.taken and identifier_like(name)
                and not find_mentions(self.text, [name])
                and not find_code_mentions(self.text, [name]))

    def take(self, name: str) -> None:
        self.taken.add(name)

    def fork(self) -> _Namer:
        """A namer with the same texts and its own copy of the taken names."""
        other = object.__new__(_Namer)
        other.taken, other.text = set(self.taken), self.text
        return other


def _check_renames(episode: Episode, renames) -> dict:
    """``renames`` (old -> new skill id) checked against the episode; HsaError when unfit."""
    if not isinstance(renames, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in renames.items()):
        raise HsaError(f"renames must map skill ids to new ids, got {renames!r:.200}")
    harness = episode.harness
    unknown = sorted(set(renames) - set(harness.skill_ids))
    if unknown:
        raise HsaError(f"renames unknown skill(s) {unknown}; the harness has "
                       f"{list(harness.skill_ids)}")
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
    """Shared by the skill-id styles: params are ``{"renames": {old: new}}``."""

    family = "skill_ids"

    def mapping(self, episode: Episode, params: dict) -> Mapping:
        return Mapping(skills=_check_renames(episode, params.get("renames")))

    def apply(self, episode: Episode, params: dict) -> Episode:
        return rename_episode(episode, self.mapping(episode, params))


@register
@dataclass(frozen=True)
class SkillIdSynonym(_SkillRename):
    """Rewrites the words of skill ids with curated synonyms (item_qa ->
    product_question_answering), one synonym per word across the whole harness, in each id's own
    case style; every mention moves with the id, and kinds, contents and what the gold expects
    are kept.

    ``rate`` is the chance that each known word is replaced; every id with a known word still
    changes at least one. Ids with no word in the table keep their id."""

    name = "skill_id_synonym"
    version = "1"

    split: Split = "train"
    rate: Share = 0.8

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        skills = episode.harness.skill_ids
        namer = _Namer(episode)
        phrases = {s: synonym_phrases(id_words(s)) for s in skills}
        # One synonym per table phrase for the whole harness: a harness names things consistently.
        chosen = {key: rng.choice(SKILL_WORD_SYNONYMS[key][self.split])
                  for key in sorted({k for found in phrases.values() for _, _, k in found})}
        renames = {}
        for skill_id in skills:
            found = phrases[skill_id]
            if not found:
                continue
            words = id_words(skill_id)
            for attempt in range(_MAX_TRIES):
                replace_at = [rng.random() < self.rate for _ in found]
                if not any(replace_at):
                    replace_at[rng.randrange(len(found))] = True
                out, last = [], 0
                for (start, end, key), replace in zip(found, replace_at):
                    out += words[last:start]
                    synonym = chosen[key] if attempt == 0 else rng.choice(
                        SKILL_WORD_SYNONYMS[key][self.split])
                    out += synonym.split("_") if replace else words[start:end]
                    last = end
                out += words[last:]
                new = write_id(out, case_of(skill_id))
                if new != skill_id and namer.free(new):
                    namer.take(new)
                    renames[skill_id] = new
                    break
        return {"renames": renames}


def _best_renames(episode: Episode, candidates: list[str], new_id) -> dict[str, str]:
    """The renames made by the first candidate style (in drawn order) that renames the most ids;
    ``new_id(candidate, skill_id)`` names an id, and every new id is free in the episode."""
    skills = episode.harness.skill_ids
    base, best = _Namer(episode), {}
    for candidate in candidates:
        namer = base.fork()
        renames = {}
        for skill_id in skills:
            new = new_id(candidate, skill_id)
            if new != skill_id and namer.free(new):
                namer.take(new)
                renames[skill_id] = new
        if len(renames) > len(best):
            best = renames
        if len(best) == len(skills):
            break
    return best


@register
@dataclass(frozen=True)
class SkillIdCase(_SkillRename):
    """Rewrites every skill id in one other case and separator style (item-qa -> itemQa,
    ITEM_QA, item.qa...), the same style for the whole harness; the words, every mention, kinds,
    contents and what the gold expects are kept."""

    name = "skill_id_case"
    version = "1"

    split: Split = "train"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        styles = list(CASE_STYLES[self.split])
        rng.shuffle(styles)
        return {"renames": _best_renames(
            episode, styles, lambda style, skill_id: write_id(id_words(skill_id), style))}


@register
@dataclass(frozen=True)
class SkillIdNamespace(_SkillRename):
    """Puts every skill id under one namespace (item-qa -> shop.item-qa); the rest of the id,
    every mention, kinds, contents and what the gold expects are kept."""

    name = "skill_id_namespace"
    version = "1"

    split: Split = "train"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        namespaces = list(SKILL_NAMESPACES[self.split])
        rng.shuffle(namespaces)
        return {"renames": _best_renames(
            episode, namespaces, lambda namespace, skill_id: f"{namespace}.{skill_id}")}


@register
@dataclass(frozen=True)
class SkillIdMask(_SkillRename):
    """Replaces skill ids with opaque ids (skill_7f3a) everywhere they appear, like function
    masking for tools: the model must read skill descriptions instead of recognising ids; kinds,
    contents and what the gold expects are kept.

    ``fraction`` is the share of skills masked; one prefix is drawn per harness."""

    name = "skill_id_mask"
    version = "1"

    split: Split = "train"
    fraction: Share = 1.0

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        namer = _Namer(episode)
        prefix = rng.choice(OPAQUE_PREFIXES[self.split])
        renames = {}
        for skill_id in episode.harness.skill_ids:
            if rng.random() >= self.fraction:
                continue
            while not namer.free(new := f"{prefix}{rng.getrandbits(16):04x}"):
                pass
            namer.take(new)
            renames[skill_id] = new
        return {"renames": renames}
