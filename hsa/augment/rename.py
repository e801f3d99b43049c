"""Apply an identifier mapping to a whole episode: harness, messages and gold move together.

This is the kernel every renaming transform uses, so that "every mention moves with the name" is
implemented once. What moves:

* the harness: tool names and their parameter keys (``properties``, ``required``), skill ids and
  ``allowed-tools``, hook names and hook configuration keys and values equal to a renamed name;
* prose everywhere the model reads it (tool and skill descriptions, skill content, prompt texts,
  hook descriptions, message content, tool results): identifier-like names wherever they stand as
  a whole identifier, plain-word names only as code: inline code or a call written out (see
  :mod:`hsa.text.mentions`);
* messages: tool-call names, argument keys of renamed parameters, skill-loader arguments, and hook
  feedback messages' ``name`` (``hook.<name>``);
* gold: calls, parameters and skills, through :meth:`Mapping.apply_to_gold`.

What does not move: the user's own data. A gold value the user types holds a harness name
sometimes (a reference "get_balance 7", a reason "wrong check_in date", a scene "night_mode"); in
every message the rename goes around it (:mod:`hsa.augment.user_data`), since the gold expects it
as written and results and replies that repeat it hold the same data.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from functools import cached_property, partial
from typing import Any
from urllib.parse import quote, unquote

import orjson

from hsa.augment.mapping import Mapping
from hsa.augment.user_data import (
    message_data,
    rewrite_around_user_data,
    rewrite_message_text,
    standalone,
)
from hsa.errors import HsaError
from hsa.files.jsonl import JSON_STRING_OR_BRACKET
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.model.harness import Harness
from hsa.model.hook import (
    HOOK_MESSAGE_PREFIX,
    configured_names,
    hook_feedback,
    spoken,
    tool_result,
)
from hsa.model.layout_text import rewrite_layout_text
from hsa.model.memo import LONG_TEXTS, BoundedMemo, LongTexts
from hsa.model.message import answered_calls, json_result
from hsa.model.schema import IN_PLACE_LISTS, IN_PLACE_VALUES, rewrite_descriptions
from hsa.model.skill import allowed_tool_name
from hsa.text.mentions import (
    replace_call_mentions,
    replace_code_mentions,
    replace_glued_mentions,
    replace_mentions,
    written_anywhere,
)
from hsa.text.names import identifier_like


def free_name(candidate: str, taken: set[str]) -> str:
    """``candidate``, or it with the first free numeric suffix (``_2``, ``_3``, ...) when a name
    of the harness already has it: renames must never merge two names into one."""
    if candidate not in taken:
        return candidate
    n = 2
    while f"{candidate}_{n}" in taken:
        n += 1
    return f"{candidate}_{n}"


class _Prose:
    """Rewrites prose for one mapping (identifier-like names anywhere, plain words as code or
    glued to Chinese, Japanese or Korean text: hsa.text.mentions.find_name_mentions). Made
    through :func:`_prose`, once per mapping; ``spoken``: the one for what people say (the
    user's and the assistant's words), where a glued plain word is a word of theirs."""

    glued = True

    def __init__(self, mapping: Mapping):
        names = {**mapping.skills, **mapping.tools, **mapping.hooks}
        self.identifiers = {k: v for k, v in names.items() if identifier_like(k)}
        self.words = {k: v for k, v in names.items() if not identifier_like(k)}
        self.names = names
        # A text that holds no old name (most message texts) is left at one search.
        self._any_name = written_anywhere(names)

    def may_change(self, text: str) -> bool:
        """False when the rewrite (as prose or as a result) certainly keeps ``text``: no old name
        is written in it. Read directly for a short text, where the layers around the search
        cost more than the search; a long one is left to the memo of long texts."""
        if self._any_name is None:
            return False
        return len(text) >= LongTexts.SHORTEST or self._any_name.search(text)

    def __call__(self, text: str) -> str:
        # A long text (a skill body loaded in many rows of a harness variant) is read once per
        # rewriter: the rewrite is a function of the mapping and the text alone.
        if self._any_name is None:
            return text
        return LONG_TEXTS.get((self, "prose"), text, lambda: self._prose(text))

    def _prose(self, text: str) -> str:
        assert self._any_name is not None
        return self._rewrite(text) if self._any_name.search(text) else text

    def _rewrite(self, text: str) -> str:
        text = replace_code_mentions(replace_mentions(text, self.identifiers), self.words)
        text = replace_call_mentions(text, self.words)
        return replace_glued_mentions(text, self.words) if self.glued else text

    @cached_property
    def spoken(self) -> _Prose:
        """This rewrite for the user's and the assistant's words (see the class)."""
        if not self.words:
            return self  # no plain word to read otherwise
        spoken = copy.copy(self)
        spoken.glued = False
        return spoken

    def result(self, content: str) -> str:
        """A tool result: a JSON object or array has its string values rewritten as prose, in
        place (:func:`rewrite_json_strings`; its keys are the backend's fields); any other
        result is prose. Read as raw JSON text, a name after an escape (``\\nget_price``,
        ``\\u00bfget_price``, as Python's json writes non-ASCII text) is glued to the escape's
        letters and never moved, and a web address written ``https:\\/\\/...`` is no address."""
        if self._any_name is None:
            return content
        return LONG_TEXTS.get((self, "result"), content, lambda: self._result(content))

    def result_around(
        self, content: str, keep: Callable[[], tuple[str, ...]] | None, new: str | None = None
    ) -> str:
        """:meth:`result` around the user's data ``keep()`` (hsa.augment.user_data): a result
        that echoes a value the user wrote (``{"scene": "night_mode"}``, where ``night_mode``
        is also a hook's name) holds the user's data, not the name. Read value by value in a
        JSON result, so a value is found however the JSON writes it. ``new``: the result
        through :meth:`result` when the caller has it already."""
        new = self.result(content) if new is None else new
        if new == content or keep is None:
            return new  # most results: nothing to move, or no user data to go around
        if json_result(content) is None:
            return rewrite_around_user_data(content, self, keep)
        return rewrite_json_strings(
            content, lambda text: rewrite_around_user_data(text, self, keep)
        )

    def _result(self, content: str) -> str:
        assert self._any_name is not None
        if not self._any_name.search(content):
            return content
        if json_result(content) is None:
            return self._rewrite(content)
        return rewrite_json_strings(content, self)

    def value(self, value: Any) -> Any:
        """A configuration value: a string equal to a renamed name is that name, else prose."""
        names = self.names
        return renamed_config(
            value, lambda key, depth: names.get(key, key), lambda text: names.get(text, self(text))
        )


def renamed_config(
    value: Any,
    key: Callable[[Any, int], Any],
    string: Callable[[str], str],
    depth: int = 1,
) -> Any:
    """A hook's configuration with every object key through ``key(key, depth)`` (depth 1: the
    hook's own options) and every string through ``string``, at any depth. A key may be a name
    as a value is: a hook configured per tool or per parameter (``limits: {amount: 500}``)
    reads its keys as the names it checks. Two keys of one object that a rename would merge
    (``amount`` renamed to ``total`` beside a ``total`` of the hook's own) are refused: one
    would be lost."""
    if isinstance(value, str):
        return string(value)
    if isinstance(value, list):
        return [renamed_config(v, key, string, depth) for v in value]
    if not isinstance(value, dict):
        return value
    keys: dict[Any, Any] = {k: key(k, depth) for k in value}  # YAML keys may be numbers
    if len(set(keys.values())) < len(keys):
        first: dict[Any, Any] = {}  # new key -> the first key that takes it
        for old, new in sorted(keys.items(), key=lambda kv: kv[0] != kv[1]):  # kept keys first
            if new in first:
                raise HsaError(
                    f"hook configuration key {old!r} renamed to {new!r} would merge with key "
                    f"{first[new]!r} of the same object"
                )
            first[new] = old
    return {keys[k]: renamed_config(item, key, string, depth + 1) for k, item in value.items()}


# The prose rewriter of each mapping, by its key: a harness variant's steps rename the
# conversations of all its episodes with the same few mappings. Pure: it reads the mapping alone.
_PROSE: BoundedMemo[_Prose] = BoundedMemo(1024)


def _prose(mapping: Mapping) -> _Prose:
    return _PROSE.get(mapping.key, lambda: _Prose(mapping))


# The colon after a key (a JSON string is a key when one follows it).
_KEY_COLON = re.compile(r"\s*:")


def rewrite_json_strings(
    content: str,
    value: Callable[[str], str],
    key: Callable[[str, int], str | None] | None = None,
) -> str:
    """``content`` (a JSON object or array) with every string value through ``value`` and every
    key through ``key(key, depth)`` (None or no ``key``: kept; depth 1 is the top level), in
    place, token by token: the text keeps its layout and its way of writing strings (``\\u``
    escapes for non-ASCII where the original string uses them), whatever its style."""
    parts, last, depth = [], 0, 0
    for match in JSON_STRING_OR_BRACKET.finditer(content):
        token = match.group(0)
        if token in ("{", "["):
            depth += 1
            continue
        if token in ("}", "]"):
            depth -= 1
            continue
        text = orjson.loads(token)
        if _KEY_COLON.match(content, match.end()):
            new = key(text, depth) if key is not None else None
            if new is None or new == text:
                continue
        else:
            new = value(text)
            if new == text:
                continue
        parts += [content[last : match.start()], json.dumps(new, ensure_ascii="\\u" in token)]
        last = match.end()
    return "".join(parts) + content[last:] if parts else content


def json_strings(content: str) -> list[str]:
    """The string values (not keys) of a JSON object or array's text, decoded, in order."""
    out = []
    for match in JSON_STRING_OR_BRACKET.finditer(content):
        token = match.group(0)
        if token[0] == '"' and not _KEY_COLON.match(content, match.end()):
            out.append(orjson.loads(token))
    return out


def rename_result(
    content: str, mapping: Mapping, keep: Callable[[], tuple[str, ...]] | None = None
) -> str:
    """A tool result's text with the skill, tool and hook names of ``mapping`` renamed where it
    mentions them, around the data ``keep()``, as :func:`rename_messages` renames a recorded
    result."""
    return _prose(mapping).result_around(content, keep)


def _rename_schema(schema: dict, renames: dict) -> dict:
    """A tool's parameters schema with its top-level properties renamed (``old -> new``)
    wherever the schema names them: ``properties``, ``required``, ``dependentRequired``,
    ``dependentSchemas`` and draft-7 ``dependencies``, the keys of the sample, default and
    fixed arguments (``examples``, ``default``, ``const``, ``enum``), here and in every in-place
    subschema.
    Left as written, an ``anyOf: [{required: [iban]}, ...]`` would name properties the variant's
    tool no longer has, and no call could satisfy it."""
    if not renames or not isinstance(schema, dict):
        return schema

    def name(key):
        return renames.get(key, key) if isinstance(key, str) else key

    def names(value):
        return [name(k) for k in value] if isinstance(value, list) else value

    def instance(value):
        return {name(k): v for k, v in value.items()} if isinstance(value, dict) else value

    out = dict(schema)
    if isinstance(out.get("properties"), dict):
        out["properties"] = {
            name(k): _retitled(v, k, name(k)) for k, v in out["properties"].items()
        }
    # Sample, default and fixed arguments are instances: their keys are the properties' names.
    for key in ("default", "const"):
        if key in out:
            out[key] = instance(out[key])
    for key in ("examples", "enum"):
        if isinstance(out.get(key), list):
            out[key] = [instance(v) for v in out[key]]
    if "required" in out:
        out["required"] = names(out["required"])
    for key in IN_PLACE_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_rename_schema(sub, renames) for sub in out[key]]
    for key in IN_PLACE_VALUES:
        if isinstance(out.get(key), dict):
            out[key] = _rename_schema(out[key], renames)
    if isinstance(out.get("dependentRequired"), dict):
        out["dependentRequired"] = {name(k): names(v) for k, v in out["dependentRequired"].items()}
    if isinstance(out.get("dependentSchemas"), dict):
        out["dependentSchemas"] = {
            name(k): _rename_schema(v, renames) for k, v in out["dependentSchemas"].items()
        }
    if isinstance(out.get("dependencies"), dict):  # draft 7: a list of names, or a schema
        out["dependencies"] = {
            name(k): names(v) if isinstance(v, list) else _rename_schema(v, renames)
            for k, v in out["dependencies"].items()
        }
    return out


def _pydantic_title(name: str) -> str:
    """The title Pydantic gives a property of this name (``created_gte`` -> "Created Gte")."""
    return name.replace("_", " ").title()


def _retitled(schema: Any, old: str, new: str) -> Any:
    """A renamed property's schema, its title made from its name (Pydantic's) made from the new
    name: left, the title spells the old name out (a masked one too). A title of its own words
    stays."""
    if old == new or not isinstance(schema, dict) or schema.get("title") != _pydantic_title(old):
        return schema
    return {**schema, "title": _pydantic_title(new)}


# A JSON pointer into a schema's top-level properties, as ``$ref`` writes one.
_PROPERTY_POINTER = "#/properties/"


def _renamed_refs(value: Any, renames: dict) -> Any:
    """``value`` (a schema) with every ``$ref`` into a renamed top-level property
    (``#/properties/amount``, ``#/properties/amount/items``) pointing at its new name: left as
    written, the variant's schema would not resolve."""
    if isinstance(value, list):
        return [_renamed_refs(v, renames) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _renamed_refs(v, renames) for k, v in value.items()}
    ref = value.get("$ref")
    if isinstance(ref, str) and ref.startswith(_PROPERTY_POINTER):
        head, slash, rest = ref[len(_PROPERTY_POINTER) :].partition("/")
        # A fragment is percent-encoded where a URI needs it (``created%5Bgte%5D`` names
        # ``created[gte]``), then RFC 6901 escaped; the new name is written the same way.
        old = unquote(head).replace("~1", "/").replace("~0", "~")
        if old in renames:
            new = renames[old].replace("~", "~0").replace("/", "~1")
            if "%" in head:
                new = quote(new, safe=_FRAGMENT_SAFE)
            out["$ref"] = _PROPERTY_POINTER + new + slash + rest
    return out


# What a URI fragment may hold as it is, beside letters, digits and "_.-~" (RFC 3986).
_FRAGMENT_SAFE = "!$&'()*+,;=:@/?"


def _rename_tool(tool, mapping: Mapping, prose: _Prose):
    name, description = mapping.tool(tool.name), prose(tool.description)
    renames = mapping.parameters.get(tool.name, {})
    parameters = _rename_schema(rewrite_descriptions(tool.parameters, prose), renames)
    if renames and b'"$ref"' in orjson.dumps(parameters):
        parameters = _renamed_refs(parameters, renames)
    if name == tool.name and description == tool.description and parameters is tool.parameters:
        return tool
    return replace(tool, name=name, description=description, parameters=parameters)


def _renamed_entry(entry: str, mapping: Mapping) -> str:
    """An ``allowed-tools`` entry with its tool renamed (``get_price(*)`` keeps its ``(*)``)."""
    name = allowed_tool_name(entry)
    return mapping.tool(name) + entry[len(name) :]


def rename_harness(harness: Harness, mapping: Mapping, prose: _Prose | None = None) -> Harness:
    prose = prose or _prose(mapping)
    tools = tuple(_rename_tool(t, mapping, prose) for t in harness.tools)
    skills = tuple(
        replace(
            s,
            id=mapping.skill(s.id),
            description=prose(s.description),
            content=prose(s.content),
            allowed_tools=tuple(_renamed_entry(e, mapping) for e in s.allowed_tools),
        )
        for s in harness.skills
    )
    hooks = tuple(
        replace(
            h,
            name=mapping.hooks.get(h.name, h.name),
            description=prose(h.description),
            config=prose.value(h.config),
        )
        for h in harness.hooks
    )
    return replace(
        harness,
        tools=tools,
        skills=skills,
        hooks=hooks,
        prompt=harness.prompt.rewritten(prose),
        layouts=renamed_layouts(harness.layouts, prose),
        # the loader's own words may name a skill ("(예: order-lookup-strategy)")
        skill_loader_text={k: prose(v) for k, v in harness.skill_loader_text.items()},
    )


def renamed_layouts(layouts: dict, rewrite: Callable[[str], str]) -> dict:
    """A harness's own layouts with the names their literal text writes moved by ``rewrite``
    (hsa.model.layout_text); the same dict when none moves."""
    out = {name: rewrite_layout_text(source, rewrite) for name, source in layouts.items()}
    return layouts if all(out[n] is layouts[n] for n in layouts) else out


def _rename_call(call: dict, harness: Harness, mapping: Mapping) -> dict:
    fn = call["function"]
    name = fn["name"]
    arguments = fn["arguments"]
    renames = mapping.parameters.get(name, {})
    is_loader = name == harness.skill_loader and bool(harness.skills)
    if renames or (is_loader and mapping.skills):
        args = orjson.loads(arguments)
        new_args = {renames.get(k, k): v for k, v in args.items()}
        if is_loader and isinstance(new_args.get("name"), str):
            new_args["name"] = mapping.skill(new_args["name"])
        if new_args != args or list(new_args) != list(args):
            arguments = orjson.dumps(new_args).decode()
    new_name = mapping.tool(name)
    if new_name == name and arguments is fn["arguments"]:
        return call
    return {**call, "function": {**fn, "name": new_name, "arguments": arguments}}


def rename_messages(
    messages: tuple[dict, ...],
    harness: Harness,
    mapping: Mapping,
    prose: _Prose | None = None,
    data: Callable[[dict, str | None], tuple[str, ...]] | None = None,
) -> tuple[dict, ...]:
    """``harness`` is the input-side harness (it tells which calls load skills). ``data(message,
    text)`` gives the conversation's data in a text of a message
    (:func:`hsa.augment.user_data.message_data`): a rename goes around it (asked only when the
    text would change)."""
    prose = prose or _prose(mapping)
    out = []
    loaded: set[int] | None = None  # the skill loader's results, found once one would change
    for message in messages:
        new = message
        content = message.get("content")
        keep = None if data is None else partial(data, message, None)
        if isinstance(content, str) and not prose.may_change(content):
            text = content  # as it is (most texts: no old name is written in them)
        elif isinstance(content, str) and content and tool_result(message):
            text = prose.result(content)
            if text != content and keep is not None:
                if loaded is None:
                    loaded = skill_results(messages, harness)
                if id(message) not in loaded:
                    text = prose.result_around(content, keep, text)
        else:
            text = rewrite_message_text(message, prose.spoken if spoken(message) else prose, keep)
        if prose.words and isinstance(text, str) and text and hook_feedback(message):
            text = _handed_names(text, message, messages, harness, prose.words, keep)
        if text != content:
            new = {**new, "content": text}
        # An assistant's written thinking (chat templates show it as the thinking text) is
        # renamed as its content is.
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str) and prose.may_change(reasoning):
            thought = rewrite_around_user_data(
                reasoning,
                prose.spoken,
                None if data is None else partial(data, message, reasoning),
            )
            if thought != reasoning:
                new = {**new, "reasoning_content": thought}
        calls = message.get("tool_calls")
        if calls:
            renamed = [_rename_call(c, harness, mapping) for c in calls]
            if any(r is not c for r, c in zip(renamed, calls, strict=True)):
                new = {**new, "tool_calls": renamed}
        name = message.get("name")
        if isinstance(name, str) and name.startswith(HOOK_MESSAGE_PREFIX) and mapping.hooks:
            hook = name[len(HOOK_MESSAGE_PREFIX) :]
            new = {**new, "name": HOOK_MESSAGE_PREFIX + mapping.hooks.get(hook, hook)}
        elif isinstance(name, str) and message.get("role") == "tool" and mapping.tool(name) != name:
            new = {**new, "name": mapping.tool(name)}  # the tool that answers, by its name
        out.append(new)
    # Untouched messages stay the same objects (most messages of most steps), and so does an
    # untouched conversation: later steps and the row statistics compare them at a glance.
    if isinstance(messages, tuple) and all(a is b for a, b in zip(out, messages, strict=True)):
        return messages
    return tuple(out)


def _handed_names(
    text: str,
    message: dict,
    messages: tuple[dict, ...],
    harness: Harness,
    words: dict[str, str],
    keep: Callable[[], tuple[str, ...]] | None,
) -> str:
    """A hook's feedback with the plain-word names the hook was handed renamed where they stand
    on their own: the tool of the call it blocked, and the names its configuration lists
    (hsa.model.hook.configured_names). A hook prints what it is handed (``f"{tool}: the
    check-out date must be after check-in"``, "Call {config['source_tool']} first"), which a
    variant's hook is handed renamed; elsewhere a plain word in prose is a word (it moves only
    as code), but there it is the name. Around the blocked call's values and the conversation's
    data (``keep``): the query "search something quick" the feedback quotes is the user's."""
    hook_name = message["name"][len(HOOK_MESSAGE_PREFIX) :]
    hook = next((h for h in harness.hooks if h.name == hook_name), None)
    handed = set(configured_names(hook.config, harness.names)[0]) if hook is not None else set()
    values: tuple[str, ...] = ()
    if message.get("role") == "tool":
        for _, call, result in answered_calls(messages):
            if result is message:
                handed.add(call["function"]["name"])
                values = tuple(json_strings(call["function"]["arguments"]))
                break
    renames = {name: words[name] for name in handed if name in words and name in text}
    if not renames:
        return text

    def rewrite(piece: str) -> str:
        for old, new in renames.items():
            # a function, so that no backslash of the new name is read as an escape
            piece = standalone(old).sub(partial(_same, new), piece)
        return piece

    return rewrite_around_user_data(
        text, rewrite, lambda: values + (keep() if keep is not None else ())
    )


def _same(text: str, _match: re.Match) -> str:
    return text


def skill_results(messages, harness: Harness) -> set[int]:
    """``id()`` of the messages that answer a call of ``harness``'s skill loader: a skill's body,
    the harness's own text, renamed as the skill is wherever the conversation's data stands in
    it (hsa.augment.user_data), so that it reads as the variant's skill does."""
    return {
        id(result)
        for _, call, result in answered_calls(messages)
        if call["function"]["name"] == harness.skill_loader
    }


# Renamed harnesses by (the harness object, mapping): episodes under one harness object (a
# harness folder many rows name) rename it the same way whenever a draw repeats (a case or
# namespace convention), and the harness is most of a rename's work. Keyed by the object, not
# by a content hash: hashing every intermediate harness of every variant cost more than the
# memo saved. The entry holds the harness, so while remembered its id is no other harness's.
_RENAMED: BoundedMemo[tuple[Harness, Harness]] = BoundedMemo(1024)


def rename_episode(episode: Episode, mapping: Mapping) -> Episode:
    """The episode with every identifier in ``mapping`` renamed (see the module docstring)."""
    if not mapping:
        return episode
    prose = _prose(mapping)
    return rename_conversation(
        episode, mapping, renamed_harness(episode.harness, mapping, prose), prose
    )


def renamed_harness(harness: Harness, mapping: Mapping, prose: _Prose | None = None) -> Harness:
    """``harness`` with every identifier in ``mapping`` renamed, remembered (``_RENAMED``)."""
    if not mapping:
        return harness
    made = _RENAMED.get(
        (id(harness), mapping.key), lambda: (harness, rename_harness(harness, mapping, prose))
    )
    return made[1]


def rename_conversation(
    episode: Episode, mapping: Mapping, harness: Harness, prose: _Prose | None = None
) -> Episode:
    """The episode under ``harness`` (what ``episode.harness`` became) with its messages and gold
    renamed by ``mapping``: :func:`rename_episode` when the renamed harness is known already."""
    if not mapping:
        return episode.with_harness(harness)
    return episode.with_harness(
        harness,
        messages=rename_messages(
            episode.messages,
            episode.harness,
            mapping,
            prose,
            data=partial(message_data, episode),
        ),
        gold=mapping.apply_to_gold(episode.gold),
    )
