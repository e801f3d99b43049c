"""Renaming top-level tool parameters with every mention: the rename kernel
(:func:`hsa.augment.rename.rename_episode`) moves schema keys, ``required``, tool-call argument
keys and gold; this adds prose mentions (tool, skill, prompt and hook texts and messages), hook
configuration keys and values that name a parameter and tool results that echo the renamed
arguments."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

import orjson

from hsa.augment.mapping import Mapping
from hsa.augment.rename import (
    rename_conversation,
    renamed_config,
    renamed_harness,
    renamed_layouts,
    rewrite_json_strings,
    skill_results,
)
from hsa.augment.user_data import (
    message_data,
    rewrite_around_user_data,
    rewrite_message_text,
    standalone,
)
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.model.harness import Harness
from hsa.model.hook import (
    HOOK_MESSAGE_PREFIX,
    Hook,
    formatted_values,
    from_user,
    hook_feedback,
    outside_format_fields,
    tool_result,
    written_in_code,
)
from hsa.model.hook_feedback import format_feedback, hook_format, parse_feedback, split_format
from hsa.model.memo import LONG_TEXTS, BoundedMemo
from hsa.model.message import json_result
from hsa.model.schema import (
    KEYWORDS,
    in_place_references,
    property_name,
    property_names,
    rewrite_descriptions,
    schema_nodes,
    value_shapes,
)
from hsa.text.language import mixes_latin_words
from hsa.text.mentions import parameter_mentions, replace_mentions
from hsa.text.names import identifier_like
from hsa.transforms._names import fixed_by_code
from hsa.transforms.tool_schema.common import calls, schema_values


def parameter_mapping(harness: Harness, names: dict[str, str]) -> Mapping:
    """The mapping of ``names`` (``old -> new``, the same in every tool that has ``old``)."""
    known = harness.parameter_names
    unknown = sorted(set(names) - known)
    if unknown:
        raise HsaError(f"renames unknown parameter(s) {unknown}; the tools have {sorted(known)}")
    return Mapping(
        parameters={
            t.name: {o: n for o, n in names.items() if o in t.properties} for t in harness.tools
        }
    )


def check_parameter_names(harness: Harness, names: dict[str, str]) -> None:
    """New parameter names must be unique, and no tool may end up with two parameters of one
    name (a swap a -> b, b -> a is fine)."""
    new = list(names.values())
    if len(set(new)) != len(new):
        raise HsaError(f"parameter renames give two parameters one name: {names}")
    for tool in harness.tools:
        renamed = [names.get(p, p) for p in tool.properties]
        if len(set(renamed)) != len(renamed):
            raise HsaError(
                f"parameter renames {names} give tool {tool.name!r} two parameters of one name"
            )


def _renamed_result(
    content: str,
    prose,
    call: tuple | None,
    per_tool: dict,
    keep: Callable[[], tuple[str, ...]] | None = None,
    fields: frozenset[str] = frozenset(),
) -> str:
    """A tool result under renamed parameters. A JSON result is the backend's data: its keys
    are its own fields, which no harness rename reaches, except a top-level key that echoes a
    renamed argument of the call (same key, same value) and is none of the backend's own
    ``fields`` (:func:`_backend_fields`); its strings are text, where mentions move as in any
    prose, around the conversation's data ``keep()`` (hsa.augment.user_data). Rewritten in
    place (:func:`rewrite_json_strings`), so the result keeps its layout whatever its style.
    Any other result is prose."""
    result = json_result(content)
    if result is None:
        return rewrite_around_user_data(
            content, partial(_rewritten, prose), _with_data_keys(keep, content)
        )
    renames = per_tool.get(call[0], {}) if call is not None else {}
    echoed: set[str] = set()
    if isinstance(result, dict) and renames:
        args = call[1]
        echoed = {
            k
            for k in result
            if k in renames and k in args and args[k] == result[k] and k not in fields
        }
        if any(renames[k] in result for k in echoed):
            echoed = set()  # the new name is a field of the result already: keep both as sent
    return rewrite_json_strings(
        content,
        lambda text: rewrite_around_user_data(text, prose, _with_data_keys(keep, text)),
        lambda key, depth: renames[key] if depth == 1 and key in echoed else None,
    )


# A key of the data a tool's output writes as text: ``key=value`` glued, as logs write fields
# (``namespace=prod podName=api-1``), or quoted before a colon, as JSON in a log line does
# (``{"dryRun":true}``). Not ``key: value`` with a space, which an error message writes of the
# argument it refuses ("tailLines: must be at most 5000"); and only on a line of three or more
# such fields (a log's), since an error writes the one it refuses ("tailLines=6000 exceeds the
# maximum"), which is about the call and moves with it.
_DATA_KEY = re.compile(r"""(?<![\w.\-])([A-Za-z_][\w\-]*)=(?=[^=\s])|"([A-Za-z_][\w\-]*)"\s*:""")
_LOG_FIELDS = 3


def _with_data_keys(
    keep: Callable[[], tuple[str, ...]] | None, text: str
) -> Callable[[], tuple[str, ...]] | None:
    """``keep`` (the conversation's data) and the keys of the data a tool's output writes as
    ``text`` (:data:`_DATA_KEY`): a log line's ``namespace=prod`` is the backend's field, which
    no rename of the harness's parameters reaches (renamed, the log would show a field it never
    had). None for a loaded skill's body (``keep`` None), the harness's own text. Read when
    asked, as ``keep`` is: only where the rewrite would change the text."""
    if keep is None:
        return None
    return lambda: (*keep(), *_log_keys(text))


def _log_keys(text: str) -> list[str]:
    """The keys of ``text``'s lines of :data:`_LOG_FIELDS` or more data fields, sorted."""
    return sorted(
        {
            a or b
            for line in text.splitlines()
            if len(fields := _DATA_KEY.findall(line)) >= _LOG_FIELDS
            for a, b in fields
        }
    )


def _rewritten(prose: Callable[[str], str], text: str) -> str:
    """A message text through a parameter rename's prose rewrite, remembered when it is long (a
    skill body that many rows of a harness variant load): the rewrite reads its renames alone."""
    return LONG_TEXTS.get(prose, text, lambda: prose(text))


def rename_parameters(episode: Episode, names: dict[str, str]) -> Episode:
    """``episode`` with top-level parameters renamed (``old -> new``, the same in every tool that
    has ``old``) and every mention of them (see the module doc)."""
    per_tool, prose, mapping = _parameter_renames(episode.harness, names)
    if not per_tool:
        return episode
    h = renamed_harness(episode.harness, mapping)

    def own(tool: str) -> Callable[[str], str]:
        # A tool's own texts name its own parameters, and those of the tools they name ("pass
        # it as related_case when you call open_complaint"): a name only a tool the text does
        # not name takes is what this one returns ("results include plan_id", a key its results
        # keep), not a parameter to rename.
        def rewrite(text: str) -> str:
            renames = dict(per_tool.get(tool, {}))
            for other, theirs in per_tool.items():
                if other != tool and other in text and standalone(other).search(text):
                    renames.update(theirs)
            if renames == names:
                return prose(text)
            return _parameter_renames(episode.harness, renames)[1](text) if renames else text

        return rewrite

    tools = tuple(
        replace(
            t,
            description=own(t.name)(t.description),
            parameters=rewrite_descriptions(t.parameters, own(t.name)),
        )
        for t in h.tools
    )
    skills = tuple(
        replace(s, description=prose(s.description), content=prose(s.content)) for s in h.skills
    )
    # A configuration key or value equal to a tool, skill or hook name is that name, not a
    # parameter.
    config_names = {k: v for k, v in names.items() if k not in episode.harness.names}

    def config_string(value: str) -> str:
        # A parameter's name is that parameter; any other string is the hook's text, where
        # mentions move as in any prose: a path into an object parameter the hook requires
        # (``patient.birthDate``), a message it sends back that names a parameter.
        if value in config_names:
            return config_names[value]
        return value if value in episode.harness.names else outside_format_fields(value, prose)

    # A key moves with the parameter it names below a hook's own options (``limits:
    # {amount: 500}``, a map the hook reads by its keys), and where the hook's code does not
    # write it (``config["limits"]["amount"]`` reads it by name). An option's own name that a
    # parameter shares (``limit``, ``message``, ``mode``) is the hook's, and stays.
    written = written_in_code(episode.harness.hooks_source, config_names)

    def config_key(key: Any, depth: int) -> Any:
        return config_names.get(key, key) if depth > 1 and key not in written else key

    hooks = tuple(
        replace(
            k,
            description=prose(k.description),
            config=renamed_config(k.config, config_key, config_string),
        )
        for k in h.hooks
    )
    prompt = h.prompt.rewritten(prose)
    layouts = renamed_layouts(h.layouts, prose)
    harness = replace(h, tools=tools, skills=skills, hooks=hooks, prompt=prompt, layouts=layouts)
    return _renamed_conversation(episode, mapping, prose, harness, names)


def rename_parameters_in_conversation(
    episode: Episode, names: dict[str, str], harness: Harness
) -> Episode:
    """:func:`rename_parameters` when the harness it returns is known already (``harness``):
    only the messages and gold are renamed."""
    per_tool, prose, mapping = _parameter_renames(episode.harness, names)
    if not per_tool:
        return episode.with_harness(harness)
    return _renamed_conversation(episode, mapping, prose, harness, names)


def renamed_call_result(
    content: str,
    harness: Harness,
    mapping: Mapping,
    name: str,
    arguments: dict,
    keep: Callable[[], tuple[str, ...]] | None = None,
) -> str:
    """``content``, a result of the call ``name(arguments)`` (names of ``harness``, the input
    side of ``mapping``), under ``mapping``'s parameter renames as a recorded result is renamed
    (:func:`_renamed_result`): what tool code that knows only the old names returns, read under
    a harness variant (hsa.runtime), around the data ``keep()``."""
    names = {old: new for renames in mapping.parameters.values() for old, new in renames.items()}
    if not names or not any(old in content for old in names):
        return content
    _, prose, _ = _parameter_renames(harness, names)
    return _renamed_result(content, prose, (name, arguments), mapping.parameters, keep)


# (renames per tool, prose rewrite) by (harness fingerprint, names): every row of a pool's
# harness variant renames the same parameters of the same harness. Pure: both are read from the
# harness's tools and names and the renames alone.
_RENAMES: BoundedMemo[tuple] = BoundedMemo(1024)


def _parameter_renames(harness: Harness, names: dict[str, str]) -> tuple:
    """(renames per tool, the prose rewrite, their mapping) of ``names`` in ``harness``."""
    key = (harness.fingerprint, orjson.dumps(names))
    return _RENAMES.get(key, lambda: _planned_renames(harness, names))


def _planned_renames(harness: Harness, names: dict[str, str]) -> tuple:
    per_tool = {
        t.name: {old: new for old, new in names.items() if old in t.properties}
        for t in harness.tools
    }
    per_tool = {tool: renames for tool, renames in per_tool.items() if renames}
    ambiguous = _ambiguous(harness)
    mentioned = {k: v for k, v in names.items() if k not in ambiguous}
    prose = parameter_mentions(
        mentioned,
        _object_properties(harness, mentioned),
        _array_parameters(harness, mentioned),
        argument_names(harness),
        KEYWORDS,
        not _code_mixed(harness),
    )
    return per_tool, prose, Mapping(parameters=per_tool)


# Whether a harness's prose is code-mixed, by fingerprint: every rename of a pool's variants asks.
_CODE_MIXED: BoundedMemo[bool] = BoundedMemo(1024)


def _code_mixed(harness: Harness) -> bool:
    """Whether the harness's prose in another script than Latin writes ordinary words in Latin
    letters too (Hinglish: "UPI transaction fail हो गया"), where a Latin word beside the script's
    own is a word of the prose ("अगर phone खो गया है"), not the parameter ``phone``."""
    return _CODE_MIXED.get(
        harness.fingerprint,
        lambda: mixes_latin_words([t for _, t in harness.prose()], harness.identifiers),
    )


def argument_names(harness: Harness) -> dict[str, frozenset[str]]:
    """Each tool's name -> the names of its properties at any depth: the keys its calls' arguments
    may have (what tells them from other data's keys in code, hsa.text.mentions)."""
    return {t.name: frozenset(property_names(t.parameters)) for t in harness.tools}


def _object_properties(harness: Harness, names) -> dict[str, frozenset[str]]:
    """The properties of each of ``names`` that is an object parameter of some tool, or an array
    of objects (in every tool that has it): what a path into it (``resource.kind``,
    ``packages[*].items``) may name next."""
    found: dict[str, set[str]] = {}
    for tool in harness.tools:
        root = tool.parameters
        for name in names:
            # Its shapes in place: a `$ref` to a definition, `oneOf` branches (a payout to a bank
            # account or a check address), and an array's items with theirs.
            shapes = value_shapes(tool.properties.get(name), root)
            shapes += [item for shape in shapes for item in value_shapes(shape.get("items"), root)]
            for shape in shapes:
                inner = shape.get("properties")
                if isinstance(inner, dict):
                    found.setdefault(name, set()).update(inner)
    return {name: frozenset(steps) for name, steps in found.items()}


def _array_parameters(harness: Harness, names) -> frozenset[str]:
    """Which of ``names`` some tool takes as an array: an index into it (``lines[*]``) is a path
    into the parameter."""
    return frozenset(
        name
        for tool in harness.tools
        for name in names
        for shape in value_shapes(tool.properties.get(name), tool.parameters)
        if shape.get("type") == "array" or "items" in shape
    )


def _ambiguous(harness: Harness) -> set[str]:
    """Names whose prose mentions cannot be told to be a top-level parameter's, so they are
    never rewritten: a tool, skill or hook name, a nested property, the skill loader's own
    argument (``name``)."""
    nested = _nested_names(harness)
    return set(harness.names) | nested | ({"name"} if harness.skills else set())


def _nested_names(harness: Harness) -> set[str]:
    """The names of the properties nested below a tool's top-level ones, in any tool."""
    return {
        name
        for t in harness.tools
        for parts, _ in schema_nodes(t.parameters)
        if len(parts) > 2 and (name := property_name(parts)) is not None
    }


# The parameters of a harness a rename may take, by exact harness fingerprint (the order of a
# tool's properties is the order of the draws): every draw of a harness's pool asks it of the
# same harness. Pure: it reads the harness alone.
_RENAMABLE: BoundedMemo[tuple[str, ...]] = BoundedMemo(1024)


def renamable_parameters(harness: Harness) -> tuple[str, ...]:
    """The harness's top-level parameter names, in order, less those whose mentions in the
    harness's texts could not move with them: an ambiguous name (see :func:`_ambiguous`) or one
    that is also a value the tools take (:func:`schema_values`) that those texts mention where a
    rename would reach (`` `name` ``, ``build(name="x")``); and a name that is also such a value
    and may stand as one where any text or a hook's config writes it: an identifier-like name
    (``departure_time``, a parameter and a ``sortBy`` choice: a skill's
    `` `search(sortBy="departure_time")` ``, a result's value) or one a hook config writes
    (``plan``, a parameter and a ticket type in ``allowed_types``). Renamed, the first would be
    stale in every such mention while the schema says otherwise; the second would take the value
    along, which no schema accepts renamed."""
    return _RENAMABLE.get(harness.exact_fingerprint, lambda: _renamable(harness))


def _renamable(harness: Harness) -> tuple[str, ...]:
    names = list(dict.fromkeys(p for t in harness.tools for p in t.properties))
    valued = schema_values(harness) & set(names)
    configured = {v for hook in harness.hooks for v in _config_strings(hook.config)}
    fixed = {n for n in valued if identifier_like(n) or n in configured}
    # A parameter named like a tool, skill or hook that a hook's config writes
    # (``flag_param: refund`` beside a skill ``refund``): the config value moves as that name,
    # never as the parameter, so the parameter keeps it.
    fixed |= set(harness.names) & configured & set(names)
    # A parameter named like a property nested in some tool (``currency`` of ``declare``, and
    # ``customs.currency`` of ``book``) that a hook's config writes (``required_fields:
    # [hs_code, currency]``): the config may name the nested one, which keeps its name, so a
    # config renamed with the parameter would check for a field no call sends.
    fixed |= _nested_names(harness) & configured & set(names)
    # A parameter hooks.py reads by its name (``arguments.get("payment")``): renamed, the hook
    # would look for an argument no call has, and stop checking; or one it prints in its
    # feedback ("confira o passageiro_id"), which would name what the variant no longer has.
    fixed |= fixed_by_code(harness, names)
    # A tool whose schema constrains its property names (``propertyNames: {pattern: ...}``):
    # a new name in another convention could break the constraint the tool declares.
    fixed |= {p for t in harness.tools if "propertyNames" in t.parameters for p in t.properties}
    # A parameter named like a value a hook's config lists among values that name nothing
    # (``allowed_reasons: [late_delivery, missing_items]``): the list is data, which a rename
    # must not move, and the parameter keeps its name with it.
    for hook in harness.hooks:
        for values in _config_lists(hook.config):
            if any(v not in names and v not in harness.names for v in values):
                fixed |= set(values) & set(names)
    # A tool that applies a definition to its arguments by reference (``allOf: [{"$ref":
    # "#/$defs/paging"}]``): the definition bounds or requires properties by name, and may serve
    # other objects too, so it is not renamed; the names it writes stay, or its constraints
    # would hold of names no call sends.
    for t in harness.tools:
        for target in in_place_references(t.parameters):
            # every key and string of the definition (below depth 1, keys count too)
            written = set(t.properties) if target is None else set(_config_strings(target, 2))
            fixed |= set(t.properties) & written
    ambiguous = ((_ambiguous(harness) | valued) & set(names)) - fixed
    if ambiguous:
        texts = [t for _, t in harness.prose()]
        arguments = argument_names(harness)
        for n in ambiguous:  # text by text, as the rename reads them
            mentions = parameter_mentions({n: "\0"}, arguments=arguments, schema_keywords=KEYWORDS)
            if any(mentions(t) != t for t in texts):
                fixed.add(n)
    return tuple(n for n in names if n not in fixed)


def _config_lists(value: Any):
    """Every list of strings in a hook's configuration, at any depth."""
    if isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            yield value
        for v in value:
            yield from _config_lists(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _config_lists(v)


def _config_strings(value: Any, depth: int = 1):
    """Every string of a hook's configuration that a parameter rename would move: values at any
    depth, and object keys below the hook's own options (the keys ``rename_parameters`` moves;
    an option's name stays whatever it is called)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _config_strings(v, depth)
    elif isinstance(value, dict):
        for k, v in value.items():
            if depth > 1:
                yield k
            yield from _config_strings(v, depth + 1)


def _renamed_conversation(
    episode: Episode, mapping: Mapping, prose, harness: Harness, names: dict[str, str]
) -> Episode:
    """``episode`` under ``harness`` with its messages and gold through the rename kernel, and
    prose mentions in its messages and tool results (:func:`_renamed_result`) renamed too."""
    out = rename_conversation(episode, mapping, harness)
    per_tool = mapping.parameters
    by_id: dict | None = None  # the calls, parsed once a result needs them
    fields: frozenset[str] | None = None  # the backend's own fields, read once a result needs
    loaded: set[int] = set()  # the skill loader's results (of ``episode``'s messages), as well
    messages = []
    for original, message in zip(episode.messages, out.messages, strict=True):
        content = message.get("content")
        new = message
        # the conversation's data stays (hsa.augment.user_data.message_data)
        keep = partial(message_data, episode, original, None)
        # A text without an old name has nothing to move (most messages): it is left unread.
        if isinstance(content, str) and not any(old in content for old in names):
            text = content
        elif from_user(original):
            # The user's own words: a name they write there is theirs (`limit=5` in their
            # code, a column of their table), not the harness's parameter, which they do not
            # see; renamed, the user would describe code or data they never wrote.
            text = content
        elif isinstance(content, str) and tool_result(message):
            if by_id is None:
                by_id = {call_id: (name, args) for name, call_id, args in calls(episode)}
                loaded = skill_results(episode.messages, episode.harness)
            call = by_id.get(message.get("tool_call_id"))
            if fields is None:
                fields = _backend_fields(episode, by_id, loaded)
            # A loaded skill's body is the harness's text: renamed as the skill is.
            text = _renamed_result(
                content, prose, call, per_tool, None if id(original) in loaded else keep, fields
            )
        else:
            rewrite = partial(_rewritten, prose)
            hook, words = _configured_words(episode.harness, original, names)
            if words:
                rewrite = partial(
                    _feedback_rewritten, rewrite, words, hook, episode.harness.hooks_source
                )
            text = rewrite_message_text(message, rewrite, keep)
        if text != content:
            new = {**message, "content": text}
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str) and any(old in reasoning for old in names):
            thought = rewrite_around_user_data(
                reasoning,
                partial(_rewritten, prose),
                partial(message_data, episode, original, reasoning),
            )
            if thought != reasoning:
                new = {**new, "reasoning_content": thought}
        messages.append(new)
    return replace(out, messages=tuple(messages))


# The backend's own fields of each episode, by the episode object (held by the entry, as
# hsa.augment.user_data holds its episodes): every variant of an episode asks it of the same
# original, whose results are parsed once.
_FIELDS: BoundedMemo[tuple[Episode, frozenset[str]]] = BoundedMemo(1024)


def _backend_fields(episode: Episode, by_id: dict, loaded: set[int]) -> frozenset[str]:
    """:func:`_fields_of` of ``episode`` (``by_id`` and ``loaded``: its calls and its skill
    loader's results), remembered."""
    return _FIELDS.get(id(episode), lambda: (episode, _fields_of(episode, by_id, loaded)))[1]


def _fields_of(episode: Episode, by_id: dict, loaded: set[int]) -> frozenset[str]:
    """The keys the episode's JSON results write as the backend's own fields: nested ones, and
    top-level ones of a result whose call passed no argument of that name, or passed another
    value than the result's. A read by id of a
    FHIR server returns ``{"resourceType": "Appointment", "id": "rdv-5531", ...}``, where
    ``id`` echoes the call's ``id``; but the search's Bundle of the same conversation writes
    ``id`` in every resource it lists, so the key is the standard's field, not an echo, and
    stays whatever the parameter is called."""
    found: set[str] = set()
    for message in episode.messages:
        if not tool_result(message) or id(message) in loaded:
            continue
        content = message.get("content")
        result = json_result(content) if isinstance(content, str) else None
        if result is None:
            continue
        call = by_id.get(message.get("tool_call_id"))
        args = call[1] if call is not None else {}
        if isinstance(result, dict):
            # a key the call did not pass, or passed with another value (a flight "remarcado"
            # to VOO-4481 when the call asked for VOO-4480): the backend's own field
            found.update(k for k in result if k not in args or args[k] != result[k])
            nested = list(result.values())
        else:
            nested = [result]
        while nested:
            value = nested.pop()
            if isinstance(value, dict):
                found.update(value)
                nested.extend(value.values())
            elif isinstance(value, list):
                nested.extend(value)
    return frozenset(found)


def _configured_words(
    harness: Harness, message: dict, names: dict[str, str]
) -> tuple[Hook | None, dict[str, str]]:
    """The hook whose feedback ``message`` is, and the plain-word parameters (old -> new) its
    configuration names: such a hook reads the parameter it checks from its config (moved with
    the rename) and writes it into its feedback ("amount 26000 is over the limit"), so in its
    feedback the word is the parameter, as the variant's hook would now write it. No words for
    any other message."""
    if not hook_feedback(message):
        return None, {}
    hook = next((h for h in harness.hooks if HOOK_MESSAGE_PREFIX + h.name == message["name"]), None)
    if hook is None:
        return None, {}
    configured = set(_config_strings(hook.config))
    return hook, {
        old: new for old, new in names.items() if old in configured and not identifier_like(old)
    }


def _feedback_rewritten(
    rewrite: Callable[[str], str], words: dict[str, str], hook: Hook, source: str | None, text: str
) -> str:
    """A hook's feedback through the parameter rename's prose, and its configured plain-word
    parameters (:func:`_configured_words`) moved where they first stand as a whole word of the
    core feedback: the wrapper of its format (json:guard's key "reason") is the format's, and
    stays. Only the first: a hook writes the name it reads from its config once, where it
    names what it checks ("referencia «4821» no es una referencia válida. Pídele la
    referencia..."), and the same word later in its own sentence is its own word. Where one of
    hooks.py's strings (``source``) writes the feedback, what it formatted in moves, wherever it
    stands (``f"... {param} ... صحّح {param}"``), and its own words ("El importe {value}
    supera el máximo") stay: the variant's hook prints them too."""
    text = rewrite(text)
    format_id = hook_format(hook.config)
    try:
        parsed = parse_feedback(text, format_id, hook=hook.name)
    except HsaError:  # not in its format (an older recording): the whole text is the feedback
        return replace_mentions(text, words, first_only=True)
    core = parsed.feedback
    values = formatted_values(source, core)
    if values is None:
        core = replace_mentions(core, words, first_only=True)
    else:
        core = _in_values(core, values, words)
    return format_feedback(hook.name, core, *split_format(format_id))


def _in_values(text: str, values: list[tuple[int, int]], words: dict[str, str]) -> str:
    """``text`` with ``words`` moved in each of the ``values`` spans (what a hook formatted in:
    its config's name, as often as it writes it), and its own words around them as they are."""
    out, last = [], 0
    for start, end in values:
        out += [text[last:start], replace_mentions(text[start:end], words)]
        last = end
    out.append(text[last:])
    return "".join(out)
