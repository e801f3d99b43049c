"""Hooks: change how the harness's checks look and how much of their retries a trajectory shows.

Changes: hook names (with every mention: ``hook.<name>`` message names, hook descriptions and
configuration, skill and prompt texts), the format each hook's feedback is wrapped in
(``hook.config["feedback_format"]``, see :mod:`hsa.model.hook_feedback`), and, for the retry policy, the
fail -> hook feedback -> recover sequences of a trajectory, most of which are cut down to the
recovering turn.
Keeps: what every hook decides (its function, event and the rest of its configuration), the core
text of every hook feedback message (up to the renaming), every gold turn's expectation, and the
assistant message each gold turn judges.
"""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import orjson
import yaml

from hsa.augment.mapping import Mapping
from hsa.augment.registry import register
from hsa.augment.rename import (
    HOOK_MESSAGE_PREFIX,
    json_strings,
    rename_conversation,
    rename_episode,
    rename_messages,
)
from hsa.augment.transform import Share, Transform
from hsa.augment.user_data import occurrences
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.model.gold import Gold
from hsa.model.harness import Harness
from hsa.model.hook_feedback import (
    FORMAT_KEY,
    FORMAT_SPLITS,
    format_feedback,
    format_language,
    hook_format,
    parse_feedback,
    split_format,
)
from hsa.model.memo import BoundedMemo
from hsa.model.message import message_text
from hsa.model.schema import property_names
from hsa.render import prompt_parts, tools_json
from hsa.text.names import name_words, write_name
from hsa.transforms._language import table_languages
from hsa.transforms._names import NamingMode, Renamer, record_convention, variant_convention

_TABLES = yaml.safe_load(Path(__file__).with_suffix(".yaml").read_text(encoding="utf-8"))
# How a swapped-in hook implementation names itself (hooks.yaml): word patterns, written in the
# variant's naming convention.
NAMING_STYLES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["naming_patterns"].items()
}


def hook_name_in(pattern: str, old: str, convention: str = "snake") -> str:
    """``old`` (any hook name) named by ``pattern`` (``"{words} check"``), in ``convention``."""
    words = [w.lower() for w in name_words(old)] or ["hook"]
    out = [part for token in pattern.split() for part in (words if token == "{words}" else [token])]
    # A word said twice in a row is said once: a pattern word the name already ends or starts
    # with (refund_guard + "guard" is refund_guard, not refund_guard_guard).
    return write_name([w for i, w in enumerate(out) if i == 0 or w != out[i - 1]], convention)


def _hook_of(message: dict) -> str | None:
    name = message.get("name")
    if isinstance(name, str) and name.startswith(HOOK_MESSAGE_PREFIX):
        return name[len(HOOK_MESSAGE_PREFIX) :]
    return None


@register
@dataclass(frozen=True)
class HookImplementationSwap(Transform):
    """Swaps every hook for an equivalent implementation: same decision, a new name (in the
    variant's naming convention) and a new feedback format (tag, XML, JSON or a worded sentence,
    EN or ZH); every hook feedback message is rewritten into the new format around the same core
    feedback."""

    name = "hook_implementation_swap"
    scope = "harness"
    version = "41"  # 41: a plain word spaced from Chinese or Japanese (和 reason 必须) is the name
    # too, but inside quoted speech (“这个size有M吗”)
    # 40: a hook configuration's string is a name only in a list of names, among
    # keys that are names or under a key that says so; lexicon senses gone (review, deposit,
    # handling, guide beside user...)
    # 39: a plain-word name glued to Chinese, Japanese or Korean text is the name
    # (searchで), but in what the user and the assistant say
    # 38: a leading verb moves to the end only where its bare form names its action
    # (order_lookup, never lock_set), a last word never moves first; lexicon: a device controlled not
    # calibrated, a colour no hue, enabled no operational
    # 37: SQL: EXPLAIN with options; FROM before a pronoun is English; SHOW and
    # CREATE read as statements only
    # 36: an application is no app, money no legal tender
    # 35: food-delivery senses gone (diner, tail, dispatch, distribute)
    # 34: a step that renames nothing records no naming convention
    # 33: more lexicon senses gone (distance, identify, width, random, team, map,
    # check, interest, ticket, title, convert, process, room, preference, average, rank, cancel,
    # threshold, amount; quant); no value or setting suffix
    # 32: SQL read in EXPLAIN, CREATE ... AS, WITH RECURSIVE and SHOW statements;
    # FROM before an article is English
    # 31: lexicon senses reviewed: groups and members of another sense gone (top_p,
    # min_price, page_token, node_id, period, country, language, profile...), fewer abbreviations
    # 30: the skill loader's own words are renamed with the ids and read as the
    # harness's text
    # 29: a name before a hyphen and a capitalised word (a German compound's noun,
    # entity_id-Angabe) moves
    # 28: a tool, skill or hook name a value writes (as code or in SQL) is data in
    # results and the user's words, not in the assistant's
    # 27: a hook name the calls' values write as code is the conversation's data
    # 26: a name in an absolute path without a scheme (GET /api/v1/deploy_status)
    # is a segment of the path, no mention
    # 25: a name moves before a hyphen and a word of another script
    # (calculate_debt-запрос); a plain-word parameter beside a word of a script written with spaces
    # (Cyrillic, Arabic, Greek...) moves
    # 24: words written with a hyphen (check-in, follow-up) are words in prose, and
    # a plain-word name the prose writes as a word keeps it; a verb never leaves its compound
    # (check_in is no in_check)
    # 23: a hook named like a parameter keeps its name
    # 22: names in a harness's own layout text move
    # 21: names move in thinking and a result's name
    # 20: a harness in Han or kana alone is no English one
    # 19: a name the user writes as their own word stays in their
    # words; 18: umlauts stay in their word; a Hangul or Cyrillic harness is no
    # English one; 17: digits stay in their word (s3, k8s);
    # 16: lenticular brackets only in a Chinese harness;
    # 15: names in the prompt options' headings and instructions move;
    # 14: feedback sentences only in a language the harness is written in;
    # 13: what the gold requires a reply to say stays; 12: a loaded skill's body is
    # renamed whole; data glued into a name is no
    # data; query strings keep their keys; 11: the data calls pass stays where results and replies
    # repeat it; 10: a hook
    # configuration key renamed onto another key of its object is
    # refused, not merged; 9: no word said twice, nor a synonym (check_iban_check,
    # validate_check_iban);
    # the user's own data (a gold value the user types) is not renamed
    # 8: JSON tool results' strings decoded (escapes, \/ addresses)
    # 7: a pattern word is not repeated; 6: no kebab case with keyword calls
    family = "hooks"

    split: Literal["train", "heldout"] = "train"
    naming: NamingMode = "variant"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        harness = episode.harness
        if not harness.hooks:
            return {"renames": {}, "format": None}
        patterns = list(NAMING_STYLES[self.split])
        rng.shuffle(patterns)  # the first is the variant's; the others serve when it is taken
        convention, record = variant_convention(episode, self.split, rng, self.naming)
        renamer = Renamer(
            [h.name for h in harness.hooks],
            set(harness.names),
            self.split,
            rng,
            convention=convention,
            harness=harness,
            mask_prefixes=("hook",),
        )
        renames = {}
        # A hook named like a parameter (``pin``, beside a ``pin_param: pin`` in its config):
        # a config value or feedback word that says it may name either, and renamed as the
        # hook, the hook would look for an argument no call sends. Such a hook keeps its name.
        properties = {n for t in harness.tools for n in property_names(t.parameters)}
        for hook in harness.hooks:
            if hook.name in properties:
                continue
            style = renamer.style()
            renames[hook.name] = next(
                (
                    renamer.take(hook.name, new)
                    for new in (hook_name_in(p, hook.name, style) for p in patterns)
                    if renamer.fits(hook.name, new)
                ),
                None,
            ) or renamer.mask(hook.name, style)
        current = {hook_format(h.config) for h in harness.hooks}
        # A sentence in a language the harness is not written in would wrap its hooks' own
        # feedback in another language's words.
        languages = table_languages(harness)
        choices = [
            f
            for f in FORMAT_SPLITS[self.split]
            if f not in current and format_language(f) in (None, *languages)
        ]
        return {"renames": renames, "format": rng.choice(choices), "naming": record}

    def mapping(self, episode: Episode, params: dict) -> Mapping:
        renames = params["renames"]
        names = {h.name for h in episode.harness.hooks}
        unknown = set(renames) - names
        if unknown:
            raise HsaError(
                f"renames unknown hook(s) {sorted(unknown)}; the harness has "
                f"{sorted(names) or 'no hooks'}"
            )
        harness = episode.harness
        others = set(harness.tool_names) | set(harness.skill_ids) | {harness.skill_loader}
        new = list(renames.values())
        clash = set(new) & (others | (names - set(renames)))
        clash |= {n for n in new if new.count(n) > 1}
        if clash:
            raise HsaError(
                f"new hook name(s) {sorted(clash)} collide with other names of the "
                f"harness or with each other"
            )
        return Mapping(hooks=renames)

    def apply(self, episode: Episode, params: dict) -> Episode:
        mapping = self.mapping(episode, params)
        harness = episode.harness
        if not harness.hooks:
            return episode
        fmt = params["format"]
        if not isinstance(fmt, str):
            raise HsaError(
                f"format must be a feedback format id for a harness with hooks, got {fmt!r}"
            )
        style, wording = split_format(fmt)
        cores = _feedback_cores(episode)
        out = record_convention(rename_episode(episode, mapping), params)
        hooks = tuple(replace(h, config={**h.config, FORMAT_KEY: fmt}) for h in out.harness.hooks)
        out = out.with_harness(replace(out.harness, hooks=hooks))
        return _reformatted(out, cores, harness, mapping, style, wording)

    def apply_to_conversation(
        self, episode: Episode, params: dict, harness: Harness, mapping: Mapping
    ) -> Episode | None:
        # The swapped implementations are in the known harness; the feedback messages are the
        # conversation's part (and their check that each names a hook of the harness).
        if not episode.harness.hooks:
            return episode.with_harness(harness)
        cores = _feedback_cores(episode)
        out = rename_conversation(episode, mapping, harness)
        style, wording = split_format(params["format"])
        return _reformatted(out, cores, episode.harness, mapping, style, wording)


def _feedback_cores(episode: Episode) -> dict[int, tuple[str, str]]:
    """(hook, feedback core) of every hook feedback message, by index; an error names a message
    from a hook the harness does not define."""
    formats = {h.name: hook_format(h.config) for h in episode.harness.hooks}
    cores: dict[int, tuple[str, str]] = {}
    for i, message in enumerate(episode.messages):
        hook = _hook_of(message)
        if hook is None:
            continue
        if hook not in formats:
            raise HsaError(
                f"messages[{i}] is named hook.{hook}, a hook the harness does not "
                f"define (hooks: {', '.join(sorted(formats))})"
            )
        # Read with the format the hook declares: a plain core that looks like a wrapper
        # ("[x] ...") must stay whole.
        core = parse_feedback(message_text(message), formats[hook], hook=hook).feedback
        cores[i] = (hook, core)
    return cores


def _reformatted(
    out: Episode,
    cores: dict[int, tuple[str, str]],
    harness: Harness,
    mapping: Mapping,
    style: str,
    wording: str,
) -> Episode:
    """``out`` with each feedback message (``cores``, read from the input episode under
    ``harness``) written in the feedback format's ``style`` and ``wording``, its core renamed as
    any other message text is."""
    if not cores:
        return out
    renamed = rename_messages(
        tuple({"role": "user", "content": core} for _, core in cores.values()), harness, mapping
    )
    messages = list(out.messages)
    for (i, (hook, _)), moved in zip(cores.items(), renamed, strict=True):
        text = format_feedback(
            mapping.hooks.get(hook, hook), moved["content"] or "", style, wording
        )
        content = messages[i].get("content")
        messages[i] = {
            **messages[i],
            "content": [{"type": "text", "text": text}] if isinstance(content, list) else text,
        }
    return replace(out, messages=tuple(messages))


def retry_sequences(episode: Episode) -> list[dict]:
    """Every fail -> hook feedback -> recover sequence that can be cut out whole.

    A sequence is an assistant message the gold does not judge, then hook messages about it, then
    an assistant message (the recovery). The hook messages are either ``tool`` results named
    ``hook.<name>`` that answer every one of its tool calls (a call the hook let through would be
    lost with it, so such a message is no sequence), or ``user`` messages named ``hook.<name>``
    after it (a reply a hook rejected), or the former followed by the latter. A recovery that
    writes a number or date, or whose calls pass a value, only the hook messages gave
    (:func:`_leans_on_feedback`) keeps its sequence: cut, the row would teach the model to say it
    from nowhere."""
    messages = episode.messages
    judged = {turn.at for turn in episode.gold.turns}
    found = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant" or i in judged:
            continue
        j, hook_messages = i + 1, []
        calls = message.get("tool_calls") or []
        if calls:
            ids = [call.get("id") for call in calls]
            if not all(isinstance(x, str) for x in ids) or len(set(ids)) != len(ids):
                continue
            pending = set(ids)
            while (
                j < len(messages)
                and pending
                and messages[j].get("role") == "tool"
                and messages[j].get("tool_call_id") in pending
                and _hook_of(messages[j])
            ):
                pending.discard(messages[j]["tool_call_id"])
                hook_messages.append(j)
                j += 1
            if pending:
                continue
        while j < len(messages) and messages[j].get("role") == "user" and _hook_of(messages[j]):
            hook_messages.append(j)
            j += 1
        if not hook_messages or j >= len(messages) or messages[j].get("role") != "assistant":
            continue
        if _leans_on_feedback(episode, i, hook_messages, j):
            continue
        found.append(
            {
                "at": i,
                "hook_messages": hook_messages,
                "hooks": [_hook_of(messages[k]) for k in hook_messages],
                "recovery": j,
            }
        )
    return found


# A number as text writes it: 7, 19.99, 2024-07-19, 10:30, 3/4 (a datum a reply can only have
# read somewhere).
_DATUM = re.compile(r"\d+(?:[.,:/\-]\d+)*")


# Arabic's decimal and thousands separators (١٢٫٥, ١٬٢٥٠), as "." and "," write them.
_SEPARATORS = {"\u066b": ".", "\u066c": ","}


def _ascii_digits(text: str) -> str:
    """``text`` with the digits of every script (Arabic-Indic ٢٣, Devanagari २३, full-width
    ２３) written as ASCII digits, and Arabic's separators as "." and ","."""
    return "".join(
        str(unicodedata.decimal(ch)) if ch.isdecimal() else _SEPARATORS.get(ch, ch) for ch in text
    )


# A number written in groups of three digits (2,000 or 1,250,000.50), or in the Indian way
# (1,00,000: lakhs and crores), as a reply writes what a hook's feedback gave as 2000.
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,2}(?:,\d{2})+,\d{3}(?:\.\d+)?")


def _data(text: str) -> set[str]:
    """The data ``text`` writes, each as written and a grouped number also without its commas:
    "at most $2,000" writes the 2000 of "over the limit of 2000"; and a hyphenated datum's
    parts too: a range "(18-24 °C)" gives the 24 a reply then writes. Digits of every script
    are read as the ASCII ones: an Arabic feedback's "٢٣ كغ" gives the 23 a call passes."""
    if not text.isascii():
        text = _ascii_digits(text)
    found = set(_DATUM.findall(text))
    return (
        found
        | {datum.replace(",", "") for datum in found if _GROUPED.fullmatch(datum)}
        | {part for datum in found if "-" in datum for part in datum.split("-") if part}
    )


def _written(message: dict) -> str:
    """What a message writes: its text, and an assistant's calls' arguments."""
    calls = message.get("tool_calls") or ()
    return " ".join([message_text(message), *(c["function"]["arguments"] for c in calls)])


def _leans_on_feedback(episode: Episode, at: int, hook_messages: list[int], recovery: int) -> bool:
    """Whether the recovery, or any assistant message after it, writes a number or date, or its
    calls pass a string value, that the hook messages give and nothing else the model reads
    before it does: the messages kept, and of the harness what rows show (the rendered prompt
    and the tools). A hook's config (``max_amount: 10000``) or a skill body no message loads is
    no source: the model never reads them. Of prose, only numbers and dates count as data (its
    words are the reply's own); a call's string values are data whatever they spell (an airport
    code, a coupon). Later messages count too: a recovery that loads a skill first, and refunds
    the cap the feedback gave one call later, leans on it as much."""
    messages = episode.messages
    feedback = "\n".join(message_text(messages[k]) for k in hook_messages)
    given = _data(feedback)
    cut = {at, *hook_messages}
    # What the kept messages before the one checked write, read only once a message uses data
    # the feedback gave, and then each kept message once (not again for each later message).
    kept_texts: list[str] = []
    kept_data: set[str] = set()
    read_up_to = 0
    for later in range(recovery, len(messages)):
        message = messages[later]
        if message.get("role") != "assistant":
            continue
        used = _data(_written(message)) & given
        values = {v for v in _argument_strings(message) if occurrences(v, feedback)}
        if not used and not values:
            continue
        for k in range(read_up_to, later):
            if k not in cut:
                kept_texts.append(_written(messages[k]))
                kept_data |= _data(kept_texts[-1])
        read_up_to = later
        # A value the recovery changed from the blocked call's to one the feedback gives
        # ("quantity" 5 -> 2 after "limit 2 per order") was read there, whatever else in the
        # prompt writes that number (a "2-day" dispatch): cut, the row would teach the model
        # to change the customer's 5 to a 2 it never read. Only the conversation kept says it.
        if (_changed_data(messages[at], message) & given) - kept_data:
            return True
        shown_text, shown = _shown(episode.harness)
        if used - shown - kept_data:
            return True
        read = "\n".join([shown_text, *kept_texts])
        if any(not occurrences(value, read) for value in values):
            return True
    return False


def _changed_data(blocked: dict, message: dict) -> set[str]:
    """The data (:func:`_data`) of the argument values ``message``'s calls pass otherwise than
    the ``blocked`` message's calls of the same tool passed them."""
    # loaded, a call's arguments are a JSON object (hsa.model.episode.parse_arguments)
    before: dict[tuple[str, str], object] = {}
    for call in blocked.get("tool_calls") or ():
        for key, value in orjson.loads(call["function"]["arguments"]).items():
            before.setdefault((call["function"]["name"], key), value)
    changed: set[str] = set()
    for call in message.get("tool_calls") or ():
        for key, value in orjson.loads(call["function"]["arguments"]).items():
            old = before.get((call["function"]["name"], key), value)
            if old != value:
                changed |= _data(orjson.dumps(value).decode())
    return changed


def _argument_strings(message: dict) -> set[str]:
    """The string values (at any depth) that an assistant message's calls pass, stripped; those
    of one character say too little to tell where they were read."""
    return {
        value.strip()
        for call in message.get("tool_calls") or ()
        for value in json_strings(call["function"]["arguments"])
        if len(value.strip()) > 1
    }


# What rows show of a harness (its rendered prompt and its tools) as text, and the data it
# writes, by exact fingerprint: every retry sequence of every episode under one harness variant
# reads the same.
_SHOWN: BoundedMemo[tuple[str, frozenset[str]]] = BoundedMemo(1024)


def _shown(harness: Harness) -> tuple[str, frozenset[str]]:
    def make() -> tuple[str, frozenset[str]]:
        texts = (*prompt_parts(harness), tools_json(harness))
        return "\n".join(texts), frozenset().union(*(_data(t) for t in texts))

    return _SHOWN.get(harness.exact_fingerprint, make)


def _without_thinking(message: dict) -> dict:
    """A recovery whose failure and feedback were cut, without the thinking it wrote after
    reading them ("the hook caps it at 90"): it would think about a check the row never shows."""
    if "reasoning_content" not in message:
        return message
    return {k: v for k, v in message.items() if k != "reasoning_content"}


@register
@dataclass(frozen=True)
class HookRetryPolicy(Transform):
    """Cuts most fail -> hook feedback -> recover sequences down to the recovering turn, keeping a
    share (``keep_share``) whole; each gold turn still judges the same assistant message."""

    name = "hook_retry_policy"
    # 2: a recovery that writes a datum only the feedback gave keeps its sequence; 3: a datum
    # counts as read only where rows show it (prompt, tools, messages), not in a hook's config
    # or an unloaded skill body
    version = "13"  # 13: a recovery that changes a value of the blocked call to one only the
    # feedback gives keeps its sequence (a limit of 2 the viewer's 5 became), whatever else in the
    # prompt writes that number
    # 12: the skill loader's own words are read as the harness's text (its language)
    # 11: numbers grouped the Indian way (1,00,000) are the same numbers
    # 10: digits of every script are the same numbers (an Arabic feedback's ٢٣ is
    # the 23 a call passes)
    # 9: a cut recovery loses the thinking it wrote after the feedback
    # 8: a range in the feedback gives its ends
    # 7: a later message that writes what only the feedback gave keeps its sequence
    # 6: a value stands on its own as user data does (hyphen and dot glue);
    # 5: a call's string value the feedback gave (an airport code) is read there;
    # 4: a number the feedback gave, written in groups (2,000), is read there
    family = "hooks"

    keep_share: Share = 0.2  # chance that one sequence is kept whole

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        stripped, kept = [], []
        for sequence in retry_sequences(episode):
            (kept if rng.random() < self.keep_share else stripped).append(sequence)
        return {"stripped": stripped, "kept": kept}

    def apply(self, episode: Episode, params: dict) -> Episode:
        stripped = params["stripped"]
        if not stripped:
            return episode
        found = retry_sequences(episode)
        removed: set[int] = set()
        recoveries: set[int] = set()
        for sequence in stripped:
            if sequence not in found:
                raise HsaError(
                    f"no strippable hook-retry sequence {sequence} in this episode (found: {found})"
                )
            removed.update([sequence["at"], *sequence["hook_messages"]])
            recoveries.add(sequence["recovery"])
        messages = tuple(
            _without_thinking(m) if i in recoveries else m
            for i, m in enumerate(episode.messages)
            if i not in removed
        )
        gold = Gold(
            turns=tuple(
                replace(turn, at=turn.at - sum(1 for r in removed if r < turn.at))
                for turn in episode.gold.turns
            )
        )
        return replace(episode, messages=messages, gold=gold)
