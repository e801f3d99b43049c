"""Tool and parameter names: equivalent words from the general lexicon, or opaque masks, every
renamed name in the harness variant's one naming convention (:mod:`hsa.transforms._names`)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Literal

from hsa.augment.mapping import Mapping
from hsa.augment.registry import register
from hsa.augment.rename import rename_episode
from hsa.augment.transform import Share, Transform
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.harness import Harness
from hsa.model.tool import Tool
from hsa.text.names import name_words
from hsa.transforms._names import (
    NamingMode,
    OpaqueAlphabet,
    Renamer,
    declared_or_shared,
    opaque_word,
    record_convention,
    variant_convention,
)
from hsa.transforms.tool_schema.common import fixed_tool_names
from hsa.transforms.tool_schema.options import (
    PARAMETER_MASK_PREFIXES,
    PARAMETER_NAME_SUFFIXES,
    TOOL_MASK_PREFIXES,
    TOOL_NAME_SUFFIXES,
)
from hsa.transforms.tool_schema.parameters import (
    check_parameter_names,
    parameter_mapping,
    renamable_parameters,
    rename_parameters,
    rename_parameters_in_conversation,
)


def _context_words(tool: Tool) -> set[str]:
    """The words of a tool's name and description: what tells a word's sense."""
    return {w.lower() for w in name_words(tool.name)} | {
        w.lower() for w in re.findall(r"[A-Za-z]+", tool.description)
    }


def _extended(base: str, word: str, convention: str | None) -> str:
    """``base`` with one more word, written as ``base`` is (its naming convention)."""
    if convention in ("camel", "pascal"):
        return base + word[:1].upper() + word[1:]
    if convention == "kebab":
        return f"{base}-{word}"
    if convention == "screaming_snake":
        return f"{base}_{word.upper()}"
    if convention == "title_snake":
        return f"{base}_{word[:1].upper()}{word[1:]}"
    return f"{base}_{word}"


@register
@dataclass(frozen=True)
class ToolNameMask(Transform):
    """Replaces tool names with opaque ids (fn_qzkx) everywhere they appear; the model must read
    descriptions instead of recognising names. Masks are written in the harness's convention.
    A tool keeps its name where a rename could not move every mention: a plain word its prose
    writes as a word (bash, search), a value the tools take, a name its code holds
    (common.fixed_tool_names)."""

    name = "tool_name_mask"
    scope = "harness"
    conversation = "renamed"
    version = "42"  # 42: a name glued to CJK text in the harness's prose is the name, no word that
    # keeps it; one name alone in a hook configuration is a name only under a key that says so
    # 41: a plain word spaced from Chinese or Japanese (和 reason 必须) is the name
    # too, but inside quoted speech (“这个size有M吗”)
    # 40: a hook configuration's string is a name only in a list of names, among
    # keys that are names or under a key that says so (banned words and branches are words); feedback
    # renames the names its hook is handed, around the blocked call's values; no move around a
    # preposition; lexicon senses (review, deposit, city, email, build, handling, estimate...) gone
    # 39: a plain-word name glued to Chinese, Japanese or Korean text is the name
    # (searchで), but in what the user and the assistant say
    # 38: a plain-word tool a hook's configuration lists is renamed (a
    # configuration's name is the name, no word of prose), and the feedback on a blocked call names
    # its tool as the variant's hook does
    # 37: an own call's argument moves in the assistant's words only written as
    # code; a plain-word tool printed by hooks.py in any case
    # 36: SQL: EXPLAIN with options; FROM before a pronoun is English; SHOW and
    # CREATE read as statements only
    # 35: a step that renames nothing records no naming convention
    # 34: a tool named by a plain word that hooks.py's strings print keeps its name
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
    # 25: a tool name the calls' values write as code (a function a code search
    # looks for) is the conversation's data
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
    # 18: a plain-word tool the prose names as a word keeps its name
    # 17: a name the user writes as their own word stays in their
    # words; 16: umlauts stay in their word; a Hangul or Cyrillic harness is no
    # English one; 15: digits stay in their word (s3, k8s);
    # 14: names in the prompt options' headings and instructions move;
    # 13: a tool name hooks.py writes keeps its name;
    # what the gold requires a reply to say stays; 12: a loaded skill's body is
    # renamed whole; data glued into a name is no
    # data; query strings keep their keys; 11: the data calls pass stays where results and replies
    # repeat it; 10: a hook
    # configuration key renamed onto another key of its object is
    # refused, not merged; 9: a tool named like a value the tools take keeps its name, mentioned or
    # not;
    # the user's own data (a gold value the user types) is not renamed
    # 8: JSON tool results' strings decoded (escapes, \/ addresses)
    # 7: a tool named like a parameter and mentioned keeps its name
    # 6: identifier-like names too; 5: a tool named like a value keeps its name
    family = "tool_schema"

    fraction: Share = 1.0  # share of the tools whose names are masked
    prefix: str | None = None  # a fixed prefix, as written; None draws a first word of the split
    split: Literal["train", "heldout"] = "train"
    # How many characters an opaque word may have, one of these drawn per mask. Several give
    # names of mixed lengths, so a model learns to copy a name to its end instead of counting.
    letters: tuple[int, ...] = (4,)
    # What opaque words are made of: lowercase consonants, or letters of both cases and "_"
    # (names of any shape; see OPAQUE_ALPHABETS).
    alphabet: OpaqueAlphabet = "consonants"
    # Lengths of a random first word (lowercase letters) drawn per variant instead of one of the
    # split's few prefixes: a model then meets names that share a first word it has never seen,
    # as it will in the held-out split, and must tell the tools apart after it. Empty: the
    # split's prefixes. Never one of the other split's prefixes.
    prefix_letters: tuple[int, ...] = ()
    # Share of the masked tools whose name is another masked tool's name and one more opaque
    # word (op_dxjt, op_dxjt_qz): names that begin another name, as real harnesses have
    # (get_user, get_user_details). A model that copies names must then go on reading after a
    # whole name that is also the start of another.
    nested: Share = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        for option in ("letters", "prefix_letters"):
            lengths = getattr(self, option)
            if (option == "letters" and not lengths) or any(n < 1 for n in lengths):
                raise HsaError(
                    f"transform {self.name!r}: option {option!r} must list lengths of at "
                    f"least 1, got {list(lengths)!r}"
                )
            # A recipe gives a list: keep it a tuple so the transform stays hashable.
            object.__setattr__(self, option, tuple(lengths))

    def _opaque_word(self, rng: random.Random) -> str:
        return opaque_word(rng, self.letters, self.alphabet)

    def _prefix_word(self, rng: random.Random) -> str:
        if not self.prefix_letters:
            return rng.choice(TOOL_MASK_PREFIXES[self.split])
        taken = {
            w for split, words in TOOL_MASK_PREFIXES.items() if split != self.split for w in words
        }
        while (word := opaque_word(rng, self.prefix_letters, "lowercase")) in taken:
            pass
        return word

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        harness = episode.harness
        word = self._prefix_word(rng)
        renamer = Renamer(
            harness.tool_names,
            set(harness.names),
            self.split,
            rng,
            convention=declared_or_shared(episode, harness.tool_names),
            mask_prefixes=(word,),
            mask_word=self._opaque_word,
        )
        renames = {}
        fixed = fixed_tool_names(harness)
        for tool in harness.tools:
            if rng.random() >= self.fraction or tool.name in fixed:
                continue
            if self.prefix is None:
                renames[tool.name] = renamer.mask(tool.name)
                continue
            new = renamer.take_first(
                tool.name, (f"{self.prefix}{self._opaque_word(rng)}" for _ in range(200))
            )
            if new is None:
                raise HsaError(f"no free masked name with prefix {self.prefix!r}")
            renames[tool.name] = new
        if self.nested:  # no draw at 0, so the default draws what it always drew
            self._nest(renames, renamer, rng)
        return {"renames": renames}

    def _nest(self, renames: dict, renamer: Renamer, rng: random.Random) -> None:
        """Gives a ``nested`` share of the masked tools another masked tool's new name with one
        more opaque word, written in the names' convention; the other tools are the bases."""
        masked = list(renames)
        nested = [old for old in masked if rng.random() < self.nested]
        bases = [old for old in masked if old not in nested]
        if not bases:
            return
        for old in nested:
            base = renames[rng.choice(bases)]
            new = renamer.take_first(
                old,
                (_extended(base, self._opaque_word(rng), renamer.convention) for _ in range(200)),
            )
            if new is None:
                raise HsaError(f"no free masked name that extends {base!r}")
            renames[old] = new

    def mapping(self, episode: Episode, params: dict) -> Mapping:
        renames = params["renames"]
        unknown = set(renames) - set(episode.harness.tool_names)
        if unknown:
            raise HsaError(f"renames unknown tool(s) {sorted(unknown)}")
        return Mapping(tools=renames)

    def apply(self, episode: Episode, params: dict) -> Episode:
        return rename_episode(episode, self.mapping(episode, params))


@register
@dataclass(frozen=True)
class ToolNameParaphrase(Transform):
    """Renames tools to equivalent names (get_weather -> fetchWeatherReport): words from the
    general English lexicon and the abbreviation table, or, where no table knows a word, the
    verb moved behind the rest, a suffix or a mask; every name of the harness variant in its
    one naming convention. Every mention moves along (calls, tool results, other tools'
    descriptions, skills, hooks, gold); no new name says what another tool's name says. A tool
    keeps its name where a rename could not move every mention: a plain word its prose writes
    as a word (bash, search), a value the tools take, a name its code holds.

    ``fraction`` is the share of tools given new words; the others are only rewritten in the
    variant's convention. ``naming: mixed`` draws a convention per name instead."""

    name = "tool_name_paraphrase"
    scope = "harness"
    conversation = "renamed"
    version = "71"  # 71: a name glued to CJK text in the harness's prose is the name, no word that
    # keeps it; one name alone in a hook configuration is a name only under a key that says so
    # 70: a plain word spaced from Chinese or Japanese (和 reason 必须) is the name
    # too, but inside quoted speech (“这个size有M吗”)
    # 69: a hook configuration's string is a name only in a list of names, among
    # keys that are names or under a key that says so (banned words and branches are words); feedback
    # renames the names its hook is handed, around the blocked call's values; no move around a
    # preposition; lexicon senses (review, deposit, city, email, build, handling, estimate...) gone
    # 68: a plain-word name glued to Chinese, Japanese or Korean text is the name
    # (searchで), but in what the user and the assistant say
    # 67: a plain-word tool a hook's configuration lists is renamed (a
    # configuration's name is the name, no word of prose), and the feedback on a blocked call names
    # its tool as the variant's hook does
    # 66: a leading verb moves to the end only where its bare form names its action
    # (order_lookup, never lock_set), a last word never moves first; lexicon: a device controlled not
    # calibrated, a colour no hue, enabled no operational
    # 65: an own call's argument moves in the assistant's words only written as
    # code; a plain-word tool printed by hooks.py in any case
    # 64: SQL: EXPLAIN with options; FROM before a pronoun is English; SHOW and
    # CREATE read as statements only
    # 63: an application is no app, money no legal tender
    # 62: food-delivery senses gone (diner, tail, dispatch, distribute)
    # 61: a step that renames nothing records no naming convention
    # 60: more lexicon senses gone (distance, identify, width, random, team, map,
    # check, interest, ticket, title, convert, process, room, preference, average, rank, cancel,
    # threshold, amount; quant); no value or setting suffix
    # 59: a tool named by a plain word that hooks.py's strings print keeps its name
    # 58: SQL read in EXPLAIN, CREATE ... AS, WITH RECURSIVE and SHOW statements;
    # FROM before an article is English
    # 57: lexicon senses reviewed: groups and members of another sense gone (top_p,
    # min_price, page_token, node_id, period, country, language, profile...), fewer abbreviations
    # 56: a name hooks.py prints is read in its strings as every mention is
    # (hsa.text.mentions: addresses aside, a German compound's noun after it)
    # 55: a name in a hooks.py docstring is no feedback and keeps no name fixed;
    # set, bundle and report take their other senses only beside their words
    # 54: the skill loader's own words are renamed with the ids and read as the
    # harness's text
    # 53: word senses from BFCL: a present value is no gift, a stock price no cost,
    # a bond's coupon no voucher, a video game no match, and more words take their sense only beside
    # its words
    # 52: a name before a hyphen and a capitalised word (a German compound's noun,
    # entity_id-Angabe) moves
    # 51: a name hooks.py writes inside its strings (its feedback prints it) keeps
    # it
    # 50: a tool, skill or hook name a value writes (as code or in SQL) is data in
    # results and the user's words, not in the assistant's
    # 49: access and mode take their other senses only beside words of them alone
    # (not allow, group, settings)
    # 48: a tool name the calls' values write as code (a function a code search
    # looks for) is the conversation's data
    # 47: access takes its permission sense only beside words of it; special is no deal; a mode no
    # regime but a device's
    # 46: a payout is a dividend only where the tool is about shares (an insurance
    # payout is none)
    # 45: a name the harness's own layout compares in its Jinja code keeps it
    # 44: a name in an absolute path without a scheme (GET /api/v1/deploy_status)
    # is a segment of the path, no mention
    # 43: a name moves before a hyphen and a word of another script
    # (calculate_debt-запрос); a plain-word parameter beside a word of a script written with spaces
    # (Cyrillic, Arabic, Greek...) moves
    # 42: words written with a hyphen (check-in, follow-up) are words in prose, and
    # a plain-word name the prose writes as a word keeps it; a verb never leaves its compound
    # (check_in is no in_check)
    # 41: a tax is no duty nor excise (kinds of tax); duty is customs duty
    # 40: business words keep their sense (credit note, goods receipt, journal,
    # duties)
    # 39: place leads names as a verb too: venue only where the text is about places
    # 38: names in a harness's own layout text move
    # 37: names move in thinking and a result's name
    # 36: a total loss is one thing; a policy a compliance check reads is no set of
    # rules
    # 35: no hour for hr, cluster for group, patron for user, critique for audit;
    # reset password is one thing
    # 34: a plain-word parameter written against Chinese, Japanese or Korean text
    # moves
    # 33: a parameter named like a skill, tool or hook that a hook's config writes
    # is kept
    # 32: a coupon issued is no problem, to apply for a refund no use, a refund
    # policy no repaying
    # 31: no neighbouring sense in incident response (duty, aggregate, incident,
    # service)
    # 30: code in a language tool calls are not written in (promql, bash) keeps its
    # names
    # 29: one suffix per variant on every name that needs one
    # 28: no neighbouring sense in a clinic or a shop (payment, price, height,
    # items, member, query, size, options)
    # 27: a plain-word tool the prose names as a word keeps its name
    # 26: other systems' code (a query, a script) keeps its names
    # 25: a name the user writes as their own word stays in their
    # words; 24: contact is a person only beside a person's words;
    # 23: umlauts stay in their word; a Hangul or Cyrillic harness is no
    # English one; 22: digits stay in their word (s3, k8s);
    # 21: names in the prompt options' headings and instructions move;
    # 20: keys of other data in code (a manifest) are no parameters;
    # 19: no English synonyms in the names of a harness in another language;
    # 18: the convention is one the tools it keeps are written in; 17: a tool name
    # hooks.py writes keeps its name;
    # what the gold requires a reply to say stays; 16: a loaded skill's body is
    # renamed whole; data glued into a name is no
    # data; query strings keep their keys; 15: the data calls pass stays where results and replies
    # repeat it; 14: a hook
    # configuration key renamed onto another key of its object is
    # refused, not merged; 13: no neighbouring senses (callback, session, statement); plurals once;
    # a tool named like a value the tools take keeps its name; the user's own data stays
    # 12: lexicon synonyms of one sense (name -> label gone)
    # 10: a tool named like a parameter and mentioned keeps its name
    # 9: lexicon senses, plurals; 7: no kebab case with keyword calls
    family = "tool_schema"

    fraction: Share = 1.0  # share of the tools that are renamed
    split: Literal["train", "heldout"] = "train"
    naming: NamingMode = "variant"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        harness = episode.harness
        fixed = fixed_tool_names(harness)
        convention, record = variant_convention(
            episode, self.split, rng, self.naming, kept=kept_names(harness)
        )
        renamer = Renamer(
            harness.tool_names,
            set(harness.names),
            self.split,
            rng,
            convention=convention,
            harness=harness,
            suffixes=TOOL_NAME_SUFFIXES[self.split],
            mask_prefixes=TOOL_MASK_PREFIXES[self.split],
        )
        chosen = [t for t in harness.tools if rng.random() < self.fraction and t.name not in fixed]
        renames = {t.name: renamer.paraphrase(t.name, _context_words(t)) for t in chosen}
        for tool in harness.tools:  # one convention for the whole tool list
            if (
                tool.name not in renames
                and tool.name not in fixed
                and (new := renamer.restyle(tool.name)) is not None
            ):
                renames[tool.name] = new
        return {"renames": renames, "naming": record}

    def mapping(self, episode: Episode, params: dict) -> Mapping:
        renames = params["renames"]
        harness = episode.harness
        unknown = set(renames) - set(harness.tool_names)
        if unknown:
            raise HsaError(f"renames unknown tool(s) {sorted(unknown)}")
        new = list(renames.values())
        clash = (set(new) & harness.names) - set(renames)
        if clash or len(set(new)) != len(new):
            raise HsaError(f"new tool names must be unique and unused, got {renames}")
        return Mapping(tools=renames)

    def apply(self, episode: Episode, params: dict) -> Episode:
        return record_convention(rename_episode(episode, self.mapping(episode, params)), params)


def kept_names(harness: Harness) -> set[str]:
    """The tool and parameter names the renames leave (:func:`fixed_tool_names`, and the
    parameters :func:`renamable_parameters` holds back): one convention names a variant's tools
    and parameters alike, so the one drawn must fit these too."""
    return set(fixed_tool_names(harness)) | (
        harness.parameter_names - set(renamable_parameters(harness))
    )


class _ParameterRename(Transform):
    """Shared by the parameter renames: params are ``{"renames": {old: new}}``, one new name per
    old name across all tools, so that a mention in prose (a skill saying `link_number`) means
    the same parameter in every tool that has it."""

    def mapping(self, episode: Episode, params: dict) -> Mapping:
        return parameter_mapping(episode.harness, params["renames"])

    def apply(self, episode: Episode, params: dict) -> Episode:
        names = params["renames"]
        parameter_mapping(episode.harness, names)
        check_parameter_names(episode.harness, names)
        return rename_parameters(episode, names)

    def apply_to_conversation(
        self, episode: Episode, params: dict, harness: Harness, mapping: Mapping
    ) -> Episode | None:
        # The checks of apply read the harness alone, so a known harness has passed them.
        return rename_parameters_in_conversation(episode, params["renames"], harness)

    @staticmethod
    def _names(episode: Episode) -> list[str]:
        return list(renamable_parameters(episode.harness))

    @staticmethod
    def _taken(episode: Episode) -> set[str]:
        return set(episode.harness.names) | {p for t in episode.harness.tools for p in t.properties}


@register
@dataclass(frozen=True)
class ParameterNameParaphrase(_ParameterRename):
    """Renames tool parameters to equivalent names (link_number -> itemNo): words from the
    general English lexicon and the abbreviation table (a suffix or a mask where no table knows a
    word), one new name per old name across all tools, in the variant's one naming convention;
    argument keys in calls, schemas, gold, prose mentions, hook configuration that names them
    (``link_params``) and tool results echoing them move along. Types, argument values and what
    the gold expects are kept; no new name says what another parameter's name says.

    ``fraction`` is the share of parameter names given new words; the others are only rewritten
    in the variant's convention. ``naming: mixed`` draws a convention per name instead."""

    name = "parameter_name_paraphrase"
    scope = "harness"
    version = "104"  # 104: a name glued to CJK text in the harness's prose is the name, no word
    # that keeps it; one name alone in a hook configuration is a name only under a key that says so
    # 103: a plain word spaced from Chinese or Japanese (和 reason 必须) is the name
    # too, but inside quoted speech (“这个size有M吗”)
    # 102: a tool's text renames the parameters of the tools it names too; a hook
    # configuration's string is a name only where the configuration says so; lexicon senses gone
    # (city, email, notification, handling...)
    # 101: a plain-word name a hook's configuration lists is no word of the prose:
    # the tools it keeps, and the convention drawn beside them, follow
    # 100: a tool's own texts rename only its own parameters: a name only another
    # tool takes is what it returns (results include plan_id)
    # 99: lexicon: a colour no hue, shade or tint, enabled no operational, a local
    # guide no primer, a complaint no objection
    # 98: a result's listed data read as every JSON result is
    # (hsa.model.message.json_result: leading whitespace too)
    # 97: an own call's argument moves in the assistant's words only written as
    # code; a plain-word tool printed by hooks.py in any case
    # 96: SQL: EXPLAIN with options; FROM before a pronoun is English; SHOW and
    # CREATE read as statements only
    # 95: an application is no app, money no legal tender
    # 94: food-delivery senses gone (diner, tail, dispatch, distribute)
    # 93: the assistant's words about its own call's argument name the parameter
    # beside a column
    # 92: a step that renames nothing records no naming convention
    # 91: more lexicon senses gone (distance, identify, width, random, team, map,
    # check, interest, ticket, title, convert, process, room, preference, average, rank, cancel,
    # threshold, amount; quant); no value or setting suffix
    # 90: SQL read in EXPLAIN, CREATE ... AS, WITH RECURSIVE and SHOW statements;
    # FROM before an article is English
    # 89: lexicon senses reviewed: groups and members of another sense gone (top_p,
    # min_price, page_token, node_id, period, country, language, profile...), fewer abbreviations
    # 88: a whole value of a result naming another tool's parameter is its data
    # 87: a name hooks.py prints is read in its strings as every mention is
    # (hsa.text.mentions: addresses aside, a German compound's noun after it)
    # 86: code-mixed prose is read outside quotes, however many of its words are
    # Latin
    # 85: code-mixed prose is read from texts written mostly in the other script; a
    # hook's formatted name moves wherever it stands; right-to-left marks beside a name; a call's
    # elided query is no SQL span; a docstring freezes no name; set, bundle and report senses
    # 84: a plain word in ASCII brackets glued to CJK or Hangul (a gloss,
    # 택배사(carrier)가) is the parameter
    # 83: the skill loader's own words are renamed with the ids and read as the
    # harness's text
    # 82: word senses from BFCL: a present value is no gift, a stock price no cost,
    # a bond's coupon no voucher, a video game no match, and more words take their sense only beside
    # its words
    # 81: a name before a hyphen and a capitalised word (a German compound's noun,
    # entity_id-Angabe) moves
    # 80: a name hooks.py writes inside its strings (its feedback prints it) keeps
    # it
    # 79: names passed in values: plain words only in SQL, tool names as code or in
    # SQL; in the assistant's words only arguments' names, and name= glued is a keyword; a key the
    # backend writes with another value is no echo
    # 78: a fenced arguments object is read by its own top-level keys, its info
    # string aside
    # 77: a quoted message is no SQL for a word SQL has too; a keyword argument
    # alone (type=...) is no JSON Schema; a query string's keys are the server's; a key the backend
    # writes elsewhere is no echo; access and mode senses narrowed
    # 76: a name the calls' values write (a column a query selects) is the
    # conversation's data, but not in hook feedback nor where written as a keyword
    # 75: in hook feedback a string of hooks.py writes, only what it formatted in moves
    # 74: access takes its permission sense only beside words of it; special is no deal; a mode no
    # regime but a device's
    # 73: SQL keeps its columns (a code span, a quoted string or a block of SQL)
    # 72: an error about the call moves (tailLines=6000 exceeds); only a log line
    # of three or more fields keeps its keys
    # 71: a plain word beside another script moves only alone among its words, not
    # in an English phrase, a compound or code-mixed prose (Hinglish)
    # 70: an arguments object is read by its own keys (a free-keyed map inside
    # names no parameter)
    # 69: a JSON Schema in a skill keeps its keywords, whatever parameters are
    # named like them
    # 68: the fields a tool's output writes as data (namespace=prod,
    # {"dryRun":true}) are the backend's and stay
    # 67: a payout is a dividend only where the tool is about shares (an insurance
    # payout is none)
    # 66: a path into a parameter follows its $ref and its oneOf/anyOf/allOf
    # branches (payout.bank_account, mailing.line1)
    # 65: a name the harness's own layout compares in its Jinja code keeps it
    # 64: a name in an absolute path without a scheme (GET /api/v1/deploy_status)
    # is a segment of the path, no mention; code names a plain-word tool as a call does (a
    # manifest's status: key makes it no arguments)
    # 63: a name moves before a hyphen and a word of another script
    # (calculate_debt-запрос); a plain-word parameter beside a word of a script written with spaces
    # (Cyrillic, Arabic, Greek...) moves
    # 62: words written with a hyphen (check-in, follow-up) are words in prose, and
    # a plain-word name the prose writes as a word keeps it; a verb never leaves its compound
    # (check_in is no in_check)
    # 61: a tax is no duty nor excise (kinds of tax); duty is customs duty
    # 60: business words keep their sense (credit note, goods receipt, journal,
    # duties)
    # 59: place leads names as a verb too: venue only where the text is about places
    # 58: names in a harness's own layout text move
    # 57: a configured word moves where the feedback first names it
    # 56: an example of arguments mixing identifiers and words is renamed whole
    # 55: a nested field a hook config names keeps its name
    # 54: the user's own words are never renamed
    # 53: names move in thinking and a result's name
    # 52: a total loss is one thing; a policy a compliance check reads is no set of
    # rules
    # 51: a configured word moves in the hook feedback's core, never in its wrapper
    # 50: no hour for hr, cluster for group, patron for user, critique for audit;
    # reset password is one thing
    # 49: hook template fields and config value lists keep their names
    # 48: a title made from a parameter's name moves with it
    # 47: a plain-word parameter against CJK punctuation moves
    # 46: a variable a statement of code binds stays
    # 45: sample, default and fixed arguments' keys move with the parameters
    # 44: names a definition applied by reference constrains stay
    # 43: a percent-encoded $ref to a renamed property follows it
    # 42: a plain-word parameter written against Chinese, Japanese or Korean text
    # moves
    # 41: a parameter named like a skill, tool or hook that a hook's config writes
    # is kept
    # 40: a coupon issued is no problem, to apply for a refund no use, a refund
    # policy no repaying
    # 39: no neighbouring sense in incident response (duty, aggregate, incident,
    # service)
    # 38: code in a language tool calls are not written in (promql, bash) keeps its
    # names
    # 37: one suffix per variant on every name that needs one
    # 36: no neighbouring sense in a clinic or a shop (payment, price, height,
    # items, member, query, size, options)
    # 35: a plain-word tool the prose names as a word keeps its name
    # 34: other systems' code (a query, a script) keeps its names
    # 33: a $ref into a renamed property follows it;
    # propertyNames keep names; 32: a name the user writes as their own word stays in their
    # words; 31: contact is a person only beside a person's words;
    # 30: umlauts stay in their word; a Hangul or Cyrillic harness is no
    # English one; 29: a rename reaches every schema keyword that names the
    # object's properties; 28: a plain-word parameter its hook's config names moves in
    # that hook's feedback; 27: digits stay in their word (s3, k8s);
    # 26: names in the prompt options' headings and instructions move;
    # 25: keys of other data in code (a manifest) are no parameters;
    # 24: no English synonyms in the names of a harness in another language;
    # 23: a hook option's own name holds no parameter back; 22: the convention is
    # one the parameters it keeps are written in; 21: a
    # parameter name hooks.py writes keeps its name;
    # what the gold requires a reply to say stays; 20: a one-letter name
    # glued to "=" in prose is the text's own variable; 19: a
    # loaded skill's body is renamed whole; data glued into a name is no
    # data; query strings keep their keys; hook options named like a parameter stay; paths into
    # array parameters move; 18: hook configuration strings are prose (paths into a renamed object
    # parameter move); a plain word glued to "=" and a value is code; 17: the data calls pass stays
    # where results and replies repeat it; 16: hook
    # configuration keys that name a parameter move with it; 15: no
    # neighbouring senses (condition, method, origin); plurals once;
    # paths into a renamed object parameter move with it; the user's own data stays
    # 14: lexicon synonyms of one sense (name -> label gone)
    # 12: JSON results in place, senses; 11: memo by exact order
    family = "tool_schema"

    fraction: Share = 1.0  # share of the distinct parameter names that are renamed
    split: Literal["train", "heldout"] = "train"
    naming: NamingMode = "variant"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        names = self._names(episode)
        convention, record = variant_convention(
            episode, self.split, rng, self.naming, kept=kept_names(episode.harness)
        )
        renamer = Renamer(
            names,
            self._taken(episode),
            self.split,
            rng,
            convention=convention,
            harness=episode.harness,
            suffixes=PARAMETER_NAME_SUFFIXES[self.split],
            mask_prefixes=PARAMETER_MASK_PREFIXES[self.split],
            verbs=False,
        )
        chosen = [n for n in names if rng.random() < self.fraction]
        renames = {}
        for old in chosen:
            tool = next(t for t in episode.harness.tools if old in t.properties)
            renames[old] = renamer.paraphrase(old, _context_words(tool))
        for old in names:  # one convention for every parameter
            if old not in renames and (new := renamer.restyle(old)) is not None:
                renames[old] = new
        return {"renames": renames, "naming": record}

    def apply(self, episode: Episode, params: dict) -> Episode:
        return record_convention(super().apply(episode, params), params)


@register
@dataclass(frozen=True)
class ParameterNameMask(_ParameterRename):
    """Replaces tool parameter names with opaque ids (arg_qzkx) everywhere they appear, so the
    model must read parameter descriptions; argument keys in calls, schemas, gold, prose
    mentions, hook configuration that names them and tool results echoing them move along.
    Types, argument values and what the gold expects are kept. Masks are written in the
    harness's convention."""

    name = "parameter_name_mask"
    scope = "harness"
    version = "83"  # 83: a name glued to CJK text in the harness's prose is the name, no word that
    # keeps it; one name alone in a hook configuration is a name only under a key that says so
    # 82: a plain word spaced from Chinese or Japanese (和 reason 必须) is the name
    # too, but inside quoted speech (“这个size有M吗”)
    # 81: a tool's text renames the parameters of the tools it names too; a hook
    # configuration's string is a name only where the configuration says so; lexicon senses gone
    # (city, email, notification, handling...)
    # 80: a plain-word name a hook's configuration lists is no word of the prose:
    # the tools it keeps, and the convention drawn beside them, follow
    # 79: a tool's own texts rename only its own parameters: a name only another
    # tool takes is what it returns (results include plan_id)
    # 78: a result's listed data read as every JSON result is
    # (hsa.model.message.json_result: leading whitespace too)
    # 77: an own call's argument moves in the assistant's words only written as
    # code; a plain-word tool printed by hooks.py in any case
    # 76: SQL: EXPLAIN with options; FROM before a pronoun is English; SHOW and
    # CREATE read as statements only
    # 75: the assistant's words about its own call's argument name the parameter
    # beside a column
    # 74: a step that renames nothing records no naming convention
    # 73: SQL read in EXPLAIN, CREATE ... AS, WITH RECURSIVE and SHOW statements;
    # FROM before an article is English
    # 72: a whole value of a result naming another tool's parameter is its data
    # 71: a name hooks.py prints is read in its strings as every mention is
    # (hsa.text.mentions: addresses aside, a German compound's noun after it)
    # 70: code-mixed prose is read outside quotes, however many of its words are
    # Latin
    # 69: code-mixed prose is read from texts written mostly in the other script; a
    # hook's formatted name moves wherever it stands; right-to-left marks beside a name; a call's
    # elided query is no SQL span; a docstring freezes no name; set, bundle and report senses
    # 68: a plain word in ASCII brackets glued to CJK or Hangul (a gloss,
    # 택배사(carrier)가) is the parameter
    # 67: the skill loader's own words are renamed with the ids and read as the
    # harness's text
    # 66: a name a hook's string writes glued to a Hangul particle (phone_last4는)
    # keeps it
    # 65: a name before a hyphen and a capitalised word (a German compound's noun,
    # entity_id-Angabe) moves
    # 64: a name hooks.py writes inside its strings (its feedback prints it) keeps
    # it
    # 63: names passed in values: plain words only in SQL, tool names as code or in
    # SQL; in the assistant's words only arguments' names, and name= glued is a keyword; a key the
    # backend writes with another value is no echo
    # 62: a fenced arguments object is read by its own top-level keys, its info
    # string aside
    # 61: a quoted message is no SQL for a word SQL has too; a keyword argument
    # alone (type=...) is no JSON Schema; a query string's keys are the server's; a key the backend
    # writes elsewhere is no echo
    # 60: a name the calls' values write (a column a query selects) is the
    # conversation's data, but not in hook feedback nor where written as a keyword
    # 59: in hook feedback a string of hooks.py writes, only what it formatted in moves
    # 58: SQL keeps its columns (a code span, a quoted string or a block of SQL)
    # 57: an error about the call moves (tailLines=6000 exceeds); only a log line
    # of three or more fields keeps its keys
    # 56: a plain word beside another script moves only alone among its words, not
    # in an English phrase, a compound or code-mixed prose (Hinglish)
    # 55: an arguments object is read by its own keys (a free-keyed map inside
    # names no parameter)
    # 54: a JSON Schema in a skill keeps its keywords, whatever parameters are
    # named like them
    # 53: the fields a tool's output writes as data (namespace=prod,
    # {"dryRun":true}) are the backend's and stay
    # 52: a path into a parameter follows its $ref and its oneOf/anyOf/allOf
    # branches (payout.bank_account, mailing.line1)
    # 51: a name the harness's own layout compares in its Jinja code keeps it
    # 50: a name in an absolute path without a scheme (GET /api/v1/deploy_status)
    # is a segment of the path, no mention; code names a plain-word tool as a call does (a
    # manifest's status: key makes it no arguments)
    # 49: a name moves before a hyphen and a word of another script
    # (calculate_debt-запрос); a plain-word parameter beside a word of a script written with spaces
    # (Cyrillic, Arabic, Greek...) moves
    # 48: words written with a hyphen (check-in, follow-up) are words in prose, and
    # a plain-word name the prose writes as a word keeps it; a verb never leaves its compound
    # (check_in is no in_check)
    # 47: names in a harness's own layout text move
    # 46: a configured word moves where the feedback first names it
    # 45: an example of arguments mixing identifiers and words is renamed whole
    # 44: a nested field a hook config names keeps its name
    # 43: the user's own words are never renamed
    # 42: names move in thinking and a result's name
    # 41: a configured word moves in the hook feedback's core, never in its wrapper
    # 40: hook template fields and config value lists keep their names
    # 39: a title made from a parameter's name moves with it
    # 38: a plain-word parameter against CJK punctuation moves
    # 37: a variable a statement of code binds stays
    # 36: sample, default and fixed arguments' keys move with the parameters
    # 35: names a definition applied by reference constrains stay
    # 34: a percent-encoded $ref to a renamed property follows it
    # 33: a plain-word parameter written against Chinese, Japanese or Korean text
    # moves
    # 32: a parameter named like a skill, tool or hook that a hook's config writes
    # is kept
    # 31: code in a language tool calls are not written in (promql, bash) keeps its
    # names
    # 30: other systems' code (a query, a script) keeps its names
    # 29: a $ref into a renamed property follows it;
    # propertyNames keep names; 28: a name the user writes as their own word stays in their
    # words; 27: umlauts stay in their word; a Hangul or Cyrillic harness is no
    # English one; 26: a rename reaches every schema keyword that names the
    # object's properties; 25: a plain-word parameter its hook's config names moves in
    # that hook's feedback; 24: digits stay in their word (s3, k8s);
    # 23: names in the prompt options' headings and instructions move;
    # 22: keys of other data in code (a manifest) are no parameters;
    # 21: a hook option's own name holds no parameter back; 20: a parameter name
    # hooks.py writes keeps its name;
    # what the gold requires a reply to say stays; 19: a one-letter name
    # glued to "=" in prose is the text's own variable; 18: a
    # loaded skill's body is renamed whole; data glued into a name is no
    # data; query strings keep their keys; hook options named like a parameter stay; paths into
    # array parameters move; 17: hook configuration strings are prose (paths into a renamed object
    # parameter move); a plain word glued to "=" and a value is code; 16: the data calls pass stays
    # where results and replies repeat it; 15: hook
    # configuration keys that name a parameter move with it; 14: paths
    # into a renamed object parameter (`resource.kind`) move with it;
    # the user's own data (a gold value the user types) is not renamed
    # 13: a parameter named like a schema value keeps its name
    # 12: JSON results in place, senses; 11: memo by exact order
    family = "tool_schema"

    fraction: Share = 1.0  # share of the distinct parameter names that are masked
    split: Literal["train", "heldout"] = "train"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        names = self._names(episode)
        word = rng.choice(PARAMETER_MASK_PREFIXES[self.split])
        renamer = Renamer(
            names,
            self._taken(episode),
            self.split,
            rng,
            convention=declared_or_shared(episode, names),
            mask_prefixes=(word,),
        )
        return {
            "renames": {old: renamer.mask(old) for old in names if rng.random() < self.fraction}
        }
