"""Per-variant proof that a variant still poses its source episode's task.

Checks, in order (the first failure rejects the variant, naming the check):

* ``gold_preserved`` — the variant's gold, mapped back through the inverse identifier mapping, is
  the original gold (turn positions may move; what each turn expects may not);
* ``user_data`` — every gold string value the user wrote out is still in the user's messages, as
  many times (a value that is also a harness name must not be renamed in the user's words
  alone);
* ``gold_consistent`` — the variant's gold only names tools, parameters and skills its harness has,
  at assistant turns (the same rules as loading an episode);
* ``gold_schema`` — every acceptable value of every gold call validates against the variant's
  schema for that parameter, whenever it validated against the original's;
* ``schema_refs`` — every ``$ref`` of the variant's tool schemas names a part of its schema
  (a renamed property a reference points at is followed, as loading demands);
* ``call_schema`` and ``recorded_turn`` — the variant is still a trustworthy training target,
  by the same rules as a source episode (see hsa.model.episode): its recorded tool calls fit the
  variant's schemas, and each judged turn's recorded message passes the variant's gold;
* ``stale_identifier`` — no renamed skill, tool or hook name survives in the variant's harness
  or messages, and no renamed parameter in its schemas, calls or gold. Mentions respect identifier
  boundaries (``get_price`` never matches ``get_price_history``). Plain-word names (``search``)
  are ordinary words in prose, so there they count only as code (`` `search` ``, or a call
  written out: ``search(q="x")``); they are always
  checked where they are identifiers (tool-call names, skill-loader arguments, schema keys);
* ``meaning_taken`` — no renamed skill, tool, hook or parameter has the meaning
  (:func:`hsa.text.names.meaning`: the same words up to case, convention, abbreviation, plural and
  order) of another identifier of its kind in the harness, under that one's original or new name
  (identifiers that already meant the same, such as ``item`` and ``items``, take nothing):
  ``item_ids -> product_ids`` where a ``product_id`` parameter means something else poses another
  task to a reader, though every identifier still resolves;
* ``hooks_accept`` — where the harness's hooks are trusted (they are code, run only on opt-in),
  each judged turn's recorded message that the source's hooks accept is accepted by the
  variant's hooks (hsa.model.hook_runner): a rename that reached a hook's setting which is no
  name (a word the reply must say, spelled like a parameter) makes a hook that refuses the very
  answer the row teaches, and every rollout, evaluation and hook reward under that harness
  variant would punish it; and where the source's hooks decide every recorded assistant step as
  it was recorded (refused where a hook's feedback answers it, accepted elsewhere), the
  variant's hooks must too, at every step (no hook raising, no recorded refusal the variant's
  hook would not make).
"""

from __future__ import annotations

from functools import partial

import orjson

from hsa.augment.mapping import Mapping
from hsa.augment.rename import json_strings, skill_results
from hsa.augment.user_data import (
    message_data,
    names_in_users_words,
    occurrences,
    stated,
    user_words,
    without,
)
from hsa.errors import EpisodeError, HsaError
from hsa.model.episode import Episode, check_gold, check_recorded_calls, check_recorded_turns
from hsa.model.frozen import replace
from hsa.model.gold import Gold, value_fits
from hsa.model.harness import Harness
from hsa.model.hook import hook_rejected, spoken, tool_result
from hsa.model.hook_runner import HookError, HookRunner, refusal
from hsa.model.memo import LONG_TEXTS, BoundedMemo
from hsa.model.message import called_tools, json_result, message_text
from hsa.model.schema import pointer, schema_nodes, unresolved_reference
from hsa.text.mentions import NameSearch, find_name_mentions, written_anywhere
from hsa.text.names import identifier_like, meaning


class VerificationFailed(HsaError):
    def __init__(self, check: str, reason: str):
        self.check = check
        super().__init__(reason)


def verify_variant(original: Episode, variant: Episode, mapping: Mapping) -> None:
    """Raise :class:`VerificationFailed` unless ``variant`` preserves ``original``'s task."""
    _gold_preserved(original.gold, variant.gold, mapping)
    if mapping:
        _user_data_kept(original, variant)
    try:
        check_gold(variant.gold, variant.messages, variant.harness)
    except HsaError as exc:
        raise VerificationFailed("gold_consistent", f"{exc.field}: {exc.reason}") from None
    _gold_schema(original, variant, mapping)
    harness = variant.harness
    _, dangling = _DANGLING_REFERENCES.get(
        id(harness), lambda: (harness, _dangling_reference(harness))
    )
    if dangling is not None:
        raise VerificationFailed("schema_refs", dangling)
    try:
        check_recorded_calls(variant.messages, variant.harness)
        check_recorded_turns(variant.gold, variant.messages, variant.harness)
    except EpisodeError as exc:
        raise VerificationFailed(
            exc.stage.removeprefix("check:"), f"{exc.field}: {exc.reason}"
        ) from None
    _no_stale_identifiers(variant, mapping)
    if mapping:
        taken = _MEANING_TAKEN.get(
            (original.harness.exact_fingerprint, mapping.key),
            lambda: _meaning_taken(original.harness, mapping),
        )
        if taken is not None:
            raise VerificationFailed("meaning_taken", taken)
    _hooks_accept(original, variant)


# Each trusted harness's hooks, imported once, by the harness object (held by the entry, so its
# id is no other's while remembered): a pool's harness variant judges many rows.
_RUNNERS: BoundedMemo[tuple[Harness, HookRunner]] = BoundedMemo(256)
# What each source episode's own hooks say of it, by the episode object (held by the entry):
# every variant of an episode asks it of the same source. Whether they decide every recorded
# step as it was recorded (:func:`_hooks_agree`), and why they refuse a judged turn
# (:func:`judged_refusal`).
_SELF_CONSISTENT: BoundedMemo[tuple[Episode, bool]] = BoundedMemo(1024)
_SOURCE_REFUSAL: BoundedMemo[tuple[Episode, str | None]] = BoundedMemo(1024)


def _runner(harness: Harness) -> HookRunner:
    return _RUNNERS.get(id(harness), lambda: (harness, HookRunner(harness)))[1]


def judged_refusal(episode: Episode) -> str | None:
    """Why the episode's own trusted hooks refuse the recorded message of a judged turn (or
    cannot judge it: a hook raises), or None: a source whose gold rewards a step its harness
    refuses (a Saturday interview its business-days hook blocks, recorded as done) is no
    training target. Not asked where the hooks are not trusted (they are code)."""
    found = refused_turn(episode)
    return None if found is None else f"messages[{found[0]}]: {found[1]}"


def refused_turn(episode: Episode) -> tuple[int, str] | None:
    """:func:`judged_refusal` as (the message's index, why), for a reject naming the field."""
    harness = episode.harness
    if not harness.hooks or not harness.trust_hooks:
        return None
    runner = _runner(harness)
    for turn in episode.gold.turns:
        if turn.at >= len(episode.messages):
            continue
        try:
            refused = refusal(runner, episode.messages[: turn.at], episode.messages[turn.at])
        except HookError as exc:
            return turn.at, str(exc)
        if refused is not None:
            return turn.at, (
                f"its harness's hook {refused.hook!r} refuses the recorded message of a judged "
                f"turn ({refused.feedback}); a judged step is one the harness accepts"
            )
    return None


def _hooks_accept(original: Episode, variant: Episode) -> None:
    harness = variant.harness
    if not harness.hooks or not harness.trust_hooks or not original.harness.trust_hooks:
        return
    if _SELF_CONSISTENT.get(id(original), lambda: (original, _hooks_agree(original) is None))[1]:
        # Every recorded step, the judged ones among them (a judged step is none a hook sent
        # back), run once through the variant's hooks.
        found = _hooks_agree(variant)
    elif _SOURCE_REFUSAL.get(id(original), lambda: (original, judged_refusal(original)))[1]:
        return  # the source's hooks refuse its own judged turn: nothing for a variant to keep
    else:
        found = judged_refusal(variant)
    if found is not None:
        raise VerificationFailed("hooks_accept", found)


def _hooks_agree(episode: Episode) -> str | None:
    """Where the episode's hooks decide a recorded assistant step otherwise than it was
    recorded (a step a hook's feedback answers is refused, any other accepted), or cannot
    decide it (a hook raises), or None. Asked of a variant only when its source's own hooks
    agree with its recording: then a variant's hook that no longer refuses what its feedback
    says it refused (a limit keyed by a parameter the rename moved), or that raises at a step no
    turn judges, would make rows that teach what the variant's harness never does."""
    runner = _runner(episode.harness)
    rejected = set(hook_rejected(episode.messages))
    for i, message in enumerate(episode.messages):
        if message.get("role") != "assistant":
            continue
        try:
            refused = refusal(runner, episode.messages[:i], message)
        except HookError as exc:
            return f"messages[{i}]: {exc}"
        if refused is None and i in rejected:
            return (
                f"messages[{i}]: the variant's hooks accept a step its recorded hook feedback "
                f"refused"
            )
        if refused is not None and i not in rejected:
            return (
                f"messages[{i}]: the variant's hook {refused.hook!r} refuses a recorded step "
                f"({refused.feedback})"
            )
    return None


def _same_but_positions(first: Gold, second: Gold) -> bool:
    """Whether two golds ask the same turns, wherever the turns stand (a retry policy moves
    them); a turn that stands where it stood is compared as it is, without a copy."""
    return len(first.turns) == len(second.turns) and all(
        a == b or replace(a, at=0) == replace(b, at=0)
        for a, b in zip(first.turns, second.turns, strict=True)
    )


def _gold_preserved(original: Gold, variant: Gold, mapping: Mapping) -> None:
    restored = mapping.inverse().apply_to_gold(variant)
    if restored is original:  # a gold the mapping touches neither way is the same object
        return
    if not _same_but_positions(restored, original):
        raise VerificationFailed(
            "gold_preserved",
            "the variant's gold mapped back through the "
            "inverse mapping differs from the original gold",
        )


def _user_data_kept(original: Episode, variant: Episode) -> None:
    """Every gold string value the user wrote out is still in the user's words: a value that is
    also a harness name (a reference "get_balance", a reason "cancel_booking due to illness") is
    renamed in the user's text as a mention, while the gold, which is data, keeps it; the
    variant would ask for one thing and expect another."""
    said = stated(original)
    if not said:
        return
    now = user_words(variant)
    for value, times in said:
        # Counted, not found: "get_price" inside "get_price_history" must not stand in for the
        # user's own "get_price" that a rename moved.
        if sum(occurrences(value, text) for text in now) < times:
            raise VerificationFailed(
                "user_data",
                f"the user's {value!r}, a gold value, is no longer in the user's words (a "
                f"rename took it for a harness name)",
            )


def _gold_schema(original: Episode, variant: Episode, mapping: Mapping) -> None:
    for turn_o, turn_v in zip(original.gold.turns, variant.gold.turns, strict=False):
        for call_o, call_v in zip(turn_o.calls, turn_v.calls, strict=False):
            tool_o = original.harness.tool(call_o.name)
            tool_v = variant.harness.tool(call_v.name)
            for param, values in call_o.arguments.items():
                new_param = mapping.parameter(call_o.name, param)
                schema_o, schema_v = tool_o.properties[param], tool_v.properties[new_param]
                if schema_o == schema_v and not _refers(schema_o):
                    continue  # the same schema gives the same verdict, unless it refers elsewhere
                for value in values:
                    if value_fits(value, schema_o, tool_o.parameters) and not value_fits(
                        value, schema_v, tool_v.parameters
                    ):
                        raise VerificationFailed(
                            "gold_schema",
                            f"gold value {orjson.dumps(value).decode()[:60]} of "
                            f"{call_v.name}.{new_param} no longer fits its schema",
                        )


def _dangling_reference(harness: Harness) -> str | None:
    """Why a tool of ``harness`` has a ``$ref`` that names nothing (a property renamed or moved
    under it), or None. Loading refuses such a reference; a transform must not make one."""
    for tool in harness.tools:
        if found := unresolved_reference(tool.parameters):
            parts, ref = found
            return (
                f"{tool.name}: the $ref {ref} at {pointer(parts) or '/'} of its parameters "
                f"names nothing in the variant's schema"
            )
    return None


# What _dangling_reference says of a variant's harness, by the harness's id: the rows of a
# harness variant share the object. The entry holds the harness, so while remembered its id is
# no other harness's.
_DANGLING_REFERENCES: BoundedMemo[tuple[Harness, str | None]] = BoundedMemo(1024)


def _refers(schema) -> bool:
    """Whether a schema holds a ``$ref`` (its verdict then reads the rest of its parameters)."""
    return any("$ref" in node for _, node in schema_nodes(schema))


def _no_stale_identifiers(variant: Episode, mapping: Mapping) -> None:
    names, prose_names, code_names, any_name = _STALE_NAMES.get(
        mapping.key, lambda: _stale_names(mapping)
    )
    if names:
        harness = variant.harness
        in_harness = _STALE_IN_HARNESS.get(
            (harness.exact_fingerprint, mapping.key),
            lambda: _stale_in_harness(harness, names, prose_names, code_names),
        )
        if in_harness is not None:
            raise VerificationFailed("stale_identifier", in_harness)
        stale = _stale_in_messages(variant, mapping, prose_names, code_names, any_name)
        if stale:
            raise VerificationFailed(
                "stale_identifier", f"renamed {stale[1]!r} survives in {stale[0]}"
            )
        for i, message in enumerate(variant.messages):
            answering = message.get("name") if message.get("role") == "tool" else None
            if answering in names:
                raise VerificationFailed(
                    "stale_identifier", f"renamed {answering!r} survives in messages[{i}].name"
                )
            for j, call in enumerate(message.get("tool_calls") or ()):
                fn = call["function"]
                loaded = fn["name"] == harness.skill_loader and orjson.loads(fn["arguments"]).get(
                    "name"
                )
                for value in (fn["name"], loaded):
                    if value in names:
                        raise VerificationFailed(
                            "stale_identifier",
                            f"renamed {value!r} survives in messages[{i}].tool_calls[{j}]",
                        )
    _no_stale_parameters(variant, mapping)


def _stale_names(
    mapping: Mapping,
) -> tuple[frozenset[str], list[str], list[str], NameSearch | None]:
    """The old skill, tool and hook names that must not survive ``mapping``, of them the
    identifier-like ones (found anywhere in prose) and the plain words (found only as code), and
    a search for any of them written at all (a text without one mentions none: most messages)."""
    renamed = mapping.renamed()
    # A name that is also some identifier's new name (a swap) is legitimately still there.
    names = {old for kind in ("skills", "tools", "hooks") for old in renamed[kind]} - {
        new for kind in ("skills", "tools", "hooks") for new in renamed[kind].values()
    }
    prose_names = sorted(n for n in names if identifier_like(n))
    code_names = sorted(n for n in names if not identifier_like(n))
    return frozenset(names), prose_names, code_names, written_anywhere(names)


def _stale_in_harness(
    harness: Harness, names: frozenset[str], prose_names: list[str], code_names: list[str]
) -> str | None:
    """Why a renamed name survives in ``harness`` (as one of its names, or in its texts), or
    None when none does."""
    structural = set(harness.tool_names) | set(harness.skill_ids) | {h.name for h in harness.hooks}
    still_named = sorted(names & structural)  # sorted: the same reason in every process
    if still_named:
        return f"renamed {still_named[0]!r} is still a name in the variant's harness"
    stale = _first_mention(harness.prose(), prose_names, code_names)
    return None if stale is None else f"renamed {stale[1]!r} survives in {stale[0]}"


# What ``_no_stale_identifiers`` reads of a mapping (``_stale_names``), by the mapping's key, and
# what it finds in a harness, by (exact harness fingerprint, mapping key): in a pool of harness
# variants every row of a variant carries the same harness and the same renames, so both are
# made once. Pure: the fingerprint hashes every text, the key every rename.
_STALE_NAMES: BoundedMemo[tuple[frozenset[str], list[str], list[str], NameSearch | None]] = (
    BoundedMemo(1024)
)
_STALE_IN_HARNESS: BoundedMemo[str | None] = BoundedMemo(1024)


def _first_mention(
    prose, prose_names: list[str], code_names: list[str], *, spoken: bool = False
) -> tuple[str, str] | None:
    """(where, name) of the first of ``prose``'s texts that mentions one of the names
    (``spoken``: texts people said, as hsa.text.mentions.find_name_mentions reads them)."""
    for where, text in prose:
        found = find_name_mentions(text, prose_names, code_names, spoken=spoken)
        if found:
            return where, found[0]
    return None


def _stale_in_messages(
    episode: Episode,
    mapping: Mapping,
    prose_names: list[str],
    code_names: list[str],
    any_name: NameSearch | None,
) -> tuple[str, str] | None:
    """(where, name) of the first message text of the episode that mentions one of the names,
    or None. A long text (a skill body loaded in many rows of a harness variant) is read once
    per mapping: what it mentions is a function of the text and the names alone."""
    if any_name is None:
        return None
    loaded: set[int] | None = None  # the skill loader's results, found once one is asked
    own: tuple[str, ...] | None = None  # names the user writes as words, found once asked
    # the names the calls' values write (a function the code search looks for) are the
    # conversation's data too, as the rename read them
    taken = frozenset(prose_names)
    for i, message in enumerate(episode.messages):
        # An assistant's written thinking is read by the model as its content is.
        reasoning = message.get("reasoning_content")
        # what people say reads a plain word glued to Chinese or Japanese as their word, as the
        # rename did
        said = spoken(message)
        texts = [("content", message_text(message), tool_result(message))]
        if isinstance(reasoning, str):
            texts.append(("reasoning_content", reasoning, False))
        for field, content, result in texts:
            if not content:
                continue
            found = LONG_TEXTS.get(
                ("stale", mapping.key, result, said),
                content,
                partial(
                    _stale_in_text, content, result, prose_names, code_names, any_name, (), said
                ),
            )
            if found is not None:
                # The conversation's data (a reference "get_balance 7" the user gives, a scene
                # "night_mode" a call passes and its result echoes) is no mention: the rename
                # went around it (hsa.augment.user_data), and ``user_data`` checks that the
                # user's is still there. Not in a loaded skill's body, the harness's text,
                # renamed whole.
                if loaded is None:
                    loaded = skill_results(episode.messages, episode.harness)
                if id(message) not in loaded:
                    if own is None:
                        # A name the user writes as their own word kept it
                        # (hsa.augment.user_data); sorted, so that the order values are read in
                        # is no set's hash order.
                        own = tuple(
                            sorted(names_in_users_words(episode, [*prose_names, *code_names]))
                        )
                    data = message_data(episode, message, content, taken) + own
                    found = _stale_in_text(
                        content, result, prose_names, code_names, any_name, data, said
                    )
            if found is not None:
                return f"messages[{i}].{field}", found
    # Tool-call argument values are the task's data (the gold compares them): never prose.
    return None


def _stale_in_text(
    content: str,
    result: bool,
    prose_names: list[str],
    code_names: list[str],
    any_name: NameSearch,
    data: tuple[str, ...] = (),
    spoken: bool = False,
) -> str | None:
    """The first of the names a message text mentions, or None: a JSON tool result's string
    values, decoded, as the rename reads them (its keys are the backend's fields); outside the
    places where a value of ``data`` stands on its own."""
    written = any_name.search(content)
    # Raw JSON text hides a name only behind a \u escape: without one, and without a name as
    # written, a result is not parsed (most results of most variants).
    if result and (written or "\\u" in content) and json_result(content) is not None:
        texts = json_strings(content)
    elif written:
        texts = [content]
    else:
        return None
    if data:
        texts = [without(text, data) for text in texts]
    named = (("", text) for text in texts if any_name.search(text))
    found = _first_mention(named, prose_names, code_names, spoken=spoken)
    return None if found is None else found[1]


def _no_stale_parameters(variant: Episode, mapping: Mapping) -> None:
    if not mapping.parameters:
        return
    # The tools the messages call, read once: most tools with renamed parameters are not called.
    called = called_tools(variant.messages)
    for tool_old, renames in mapping.parameters.items():
        tool = variant.harness.tool(mapping.tool(tool_old))
        if tool is None:
            continue
        stale = set(renames) & set(tool.properties)
        stale -= set(renames.values())  # a swap (a->b, b->a) leaves both names present
        if stale:
            raise VerificationFailed(
                "stale_identifier",
                f"renamed parameter(s) {sorted(stale)} still in the schema of {tool.name!r}",
            )
        if tool.name not in called:
            continue
        for i, message in enumerate(variant.messages):
            for call in message.get("tool_calls") or ():
                if call["function"]["name"] == tool.name:
                    args = orjson.loads(call["function"]["arguments"])
                    left = (set(renames) & set(args)) - set(renames.values())
                    if left:
                        raise VerificationFailed(
                            "stale_identifier",
                            f"renamed parameter(s) {sorted(left)} still used in messages[{i}]",
                        )


def identifiers_by_kind(harness, mapping: Mapping) -> dict[str, dict[str, set[str]]]:
    """Per kind (skill, tool, hook, parameter), each identifier of ``harness`` (by its name
    there) with the names it has after ``mapping``: a parameter of one name in several tools is
    one identifier, renamed the same in each."""
    out: dict[str, dict[str, set[str]]] = {
        "skill": {s: {mapping.skill(s)} for s in harness.skill_ids},
        "tool": {t: {mapping.tool(t)} for t in harness.tool_names},
        "hook": {h.name: {mapping.hooks.get(h.name, h.name)} for h in harness.hooks},
        "parameter": {},
    }
    for tool in harness.tools:
        for param in tool.properties:
            out["parameter"].setdefault(param, set()).add(mapping.parameter(tool.name, param))
    return out


# Whether a mapping gives an identifier of a harness another one's meaning, by (exact harness
# fingerprint, mapping): every row of a pool's harness variant asks it of the same harness and
# mapping. Pure: it reads the harness's identifiers and the mapping alone.
_MEANING_TAKEN: BoundedMemo[str | None] = BoundedMemo(1024)


def _meaning_taken(harness: Harness, mapping: Mapping) -> str | None:
    """Why ``mapping`` makes a new name of ``harness`` say what another identifier says, or
    None when no new name does."""
    for kind, identifiers in identifiers_by_kind(harness, mapping).items():
        said_by: dict[tuple[str, ...], dict[str, str]] = {}  # meaning -> identifier -> a name
        for old, news in identifiers.items():
            for name in sorted({old} | news):
                said_by.setdefault(meaning(name), {}).setdefault(old, name)
        for old, news in identifiers.items():
            for new in sorted(news - {old}):
                said, own = meaning(new), meaning(old)
                if said == own:
                    continue  # its own meaning, in other words or another convention
                # An identifier that already said what ``old`` says (``item``, ``items``) has
                # nothing to take from it.
                others = {k: v for k, v in said_by[said].items() if meaning(k) != own}
                if others:
                    taken = others[min(others)]
                    return (
                        f"renamed {kind} {old!r} -> {new!r} says what {kind} "
                        f"{taken!r} says (words: {' '.join(said)})"
                    )
    return None
