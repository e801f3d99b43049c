"""Episodes: one conversation under a harness, with the gold that says what solves it.

JSONL form, one episode per line::

    {"id": "...",
     "harness": {...inline harness...} | "path/to/harness-folder",   # optional with a default
     "messages": [OpenAI chat messages: system/user/assistant/tool, tool_calls with JSON arguments],
     "gold": {...} (see hsa.model.gold),
     "meta": {...}}                                                   # free-form, optional

A harness reference is resolved relative to the episodes file. Parsing checks everything a
transform or a scorer relies on, so a row that parses is safe to use: roles are known, tool-call
arguments are JSON objects, every called tool and loaded skill exists in the harness, tool results
answer an earlier call, and gold refers only to tools, parameters and skills the harness has
(stage ``load`` when one of these fails). A row that parses must then be a trustworthy training
target, each check with its own stage:

* ``check:call_schema`` -- every recorded assistant tool call validates against its tool's schema
  (jsonschema: types, ranges, enums; no parameter the schema does not define unless it allows
  more), except a call a hook blocked (its result is a ``hook.<name>`` message): a recorded
  mistake that the hook caught is part of the lesson;
* ``check:gold_schema`` -- every gold parameter has an acceptable value its schema accepts (see
  :func:`check_gold_values` for the BFCL cases that stand);
* ``check:recorded_turn`` -- each judged turn's recorded assistant message (when the episode has
  it) passes its own gold under the one scorer.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from hsa.errors import EpisodeError, HsaError, Reject, locate
from hsa.files.jsonl import json_error, loads, read_lines
from hsa.model.frozen import replace
from hsa.model.gold import Gold, fit_problem, value_fits
from hsa.model.harness import Harness, load_harness, referenced_folder
from hsa.model.hook import HOOK_MESSAGE_PREFIX, blocked_calls, hook_feedback, hook_rejected
from hsa.model.memo import BoundedMemo
from hsa.model.message import is_text_part
from hsa.model.schema import pointer, schema_nodes
from hsa.model.scorer import score_turn, type_problem
from hsa.model.tool import (
    Tool,
    schema_validator,
    simple_acceptor,
    validation_problem,
)

ROLES = ("system", "developer", "user", "assistant", "tool")
_MESSAGE_KEYS = {"role", "content", "tool_calls", "tool_call_id", "name", "reasoning_content"}
# Unicode categories an id may not hold: control characters (line breaks and tabs among them)
# and the line and paragraph separators, which break a line of text as "\n" does.
_BREAKING = frozenset({"Cc", "Zl", "Zp"})


@dataclass(frozen=True)
class Episode:
    """A conversation, the harness it ran under, and its gold. Messages stay OpenAI dicts."""

    id: str
    harness: Harness
    messages: tuple[dict, ...]
    gold: Gold
    meta: dict = field(default_factory=dict)
    harness_ref: str | None = None  # the reference it was loaded by, kept for the round trip

    def with_harness(self, harness: Harness, **changes: Any) -> Episode:
        """This episode under another harness (no longer the folder it was loaded by), with
        ``changes`` to its other fields made in the same copy."""
        return replace(self, harness=harness, harness_ref=None, **changes)

    def with_prompt_options(self, **changes: Any) -> Episode:
        """This episode with prompt options changed; a value of None removes the option."""
        prompt = self.harness.prompt
        options = dict(prompt.options)
        for key, value in changes.items():
            if value is None:
                options.pop(key, None)
            else:
                options[key] = value
        return self.with_harness(replace(self.harness, prompt=replace(prompt, options=options)))

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "harness": self.harness_ref if self.harness_ref is not None else self.harness.to_dict(),
            "messages": list(self.messages),
            "gold": self.gold.to_dict(),
            "meta": self.meta,
        }

    @classmethod
    def from_dict(
        cls,
        data: Any,
        *,
        harness: Harness | None = None,
        base_dir: str | os.PathLike | None = None,
        trust_hooks: bool = False,
        harness_cache: dict | None = None,
        harness_roots: tuple[str | os.PathLike, ...] = (),
    ) -> Episode:
        """Parse and validate one episode; ``harness`` is the default when the row names none.
        A harness named by path must lie in ``base_dir`` (default: the working directory) or
        one of ``harness_roots``."""
        if not isinstance(data, dict):
            raise EpisodeError(f"expected a JSON object, got {type(data).__name__}")
        row_id = data.get("id")
        if (
            not isinstance(row_id, str | int)
            or isinstance(row_id, bool)
            or str(row_id).strip() == ""
        ):
            raise EpisodeError("id must be a non-empty string", field="id")
        if isinstance(row_id, str) and any(unicodedata.category(c) in _BREAKING for c in row_id):
            # row ids are printed one per line and typed back (hsa replay --id)
            raise EpisodeError(
                f"id must hold no control character (line break, tab), got {row_id!r:.60}",
                field="id",
            )
        row_id = str(row_id)
        try:
            unknown = set(data) - {"id", "harness", "messages", "gold", "meta"}
            if unknown:
                raise EpisodeError(
                    f"unknown keys {sorted(unknown)}; allowed: id, harness, messages, gold, meta"
                )
            ref, resolved = _resolve_harness(
                data.get("harness"), harness, base_dir, trust_hooks, harness_cache, harness_roots
            )
            messages = parse_messages(data.get("messages"), resolved)
            if "gold" not in data:
                raise EpisodeError(
                    "gold is required: what counts as solving this episode", field="gold"
                )
            gold = Gold.from_dict(data["gold"], n_messages=len(messages))
            check_gold(gold, messages, resolved)
            meta = data.get("meta") or {}
            if not isinstance(meta, dict):
                raise EpisodeError("meta must be an object", field="meta")
            check_recorded_calls(messages, resolved)
            check_gold_values(gold, resolved)
            check_judged_steps_accepted(gold, messages)
            check_recorded_turns(gold, messages, resolved)
        except HsaError as exc:
            raise EpisodeError(
                exc.reason,
                file=exc.file,
                line=exc.line,
                row=row_id,
                field=exc.field,
                stage=getattr(exc, "stage", "load"),
            ) from None
        return cls(
            id=row_id, harness=resolved, messages=messages, gold=gold, meta=meta, harness_ref=ref
        )


def _resolve_harness(
    value: Any,
    default: Harness | None,
    base_dir,
    trust_hooks: bool,
    cache: dict | None,
    roots: tuple,
) -> tuple[str | None, Harness]:
    if value is None:
        if default is None:
            raise EpisodeError(
                "no harness: give one inline, by folder path, or as a default (--harness DIR)",
                field="harness",
            )
        return None, default
    if isinstance(value, str):
        base = Path.cwd() if base_dir is None else Path(base_dir)
        # A reference seen before in this cache: its folder was found and checked to lie inside
        # the allowed folders then (thousands of episodes name one harness folder, and
        # resolving the path is file-system work).
        seen = ("reference", value, str(base), roots)
        if cache is not None and seen in cache:
            return value, cache[seen]
        try:
            path = referenced_folder(value, base, roots)
            key = str(path.resolve())
            if cache is not None and key in cache:
                cache[seen] = cache[key]
                return value, cache[key]
            if not path.is_dir():
                # Said apart: a reference that reads as a path from the working directory
                # (a run from the folder above the episodes) must be told where it was read.
                raise EpisodeError(
                    f"harness reference {value[:120]!r}: no harness folder there; a reference "
                    f"is relative to the episodes file's folder, not the working directory",
                    field="harness",
                )
            loaded = load_harness(path, trust_hooks=trust_hooks)
        except (OSError, ValueError) as exc:  # a name too long, an embedded NUL byte...
            raise EpisodeError(
                f"harness reference is not a usable path: {type(exc).__name__}: {str(exc)[:120]}",
                field="harness",
            ) from None
        except HsaError as exc:
            if exc.field == "harness" and exc.file is None:  # refused before reading anything
                raise EpisodeError(exc.reason, field="harness") from None
            # Name the file relative to the episodes' folder: reasons are written into rejects,
            # which travel with a dataset and must not carry local absolute paths.
            where = locate(_shown(exc.file, base), exc.line, None, exc.field)
            raise EpisodeError(
                f"harness reference {value[:120]!r} does not load: "
                f"{where + ': ' if where else ''}{exc.reason}",
                field="harness",
            ) from None
        if cache is not None:
            cache[key] = cache[seen] = loaded
        return value, loaded
    if isinstance(value, dict):
        try:
            return None, Harness.from_dict(value, trust_hooks=trust_hooks)
        except HsaError as exc:
            raise EpisodeError(exc.reason, field=exc.field) from None
    raise EpisodeError(
        "harness must be an object (inline) or a string (folder path)", field="harness"
    )


def _shown(file: str | None, base: Path) -> str | None:
    """``file`` relative to ``base`` when it lies there (it does: harness references are
    confined to it), else as it is."""
    if file is None:
        return None
    try:
        return Path(file).resolve().relative_to(base.resolve()).as_posix()
    except (OSError, ValueError):
        return file


def parse_arguments(raw: Any, *, where: str) -> dict:
    """Tool-call arguments as a dict: a JSON object string (OpenAI) or an object (TRL)."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise EpisodeError(
            f"arguments must be a JSON string, got {type(raw).__name__}", field=where
        )
    try:
        value = loads(raw)
    except orjson.JSONDecodeError as exc:
        raise EpisodeError(f"arguments: {json_error(exc)}", field=where) from None
    if not isinstance(value, dict):
        raise EpisodeError(
            f"arguments must be a JSON object, got {type(value).__name__}", field=where
        )
    return value


def parse_messages(raw: Any, harness: Harness) -> tuple[dict, ...]:
    """Validate OpenAI chat messages against ``harness``; object arguments become JSON strings."""
    if not isinstance(raw, list) or not raw:
        raise EpisodeError("messages must be a non-empty list", field="messages")
    out = []
    open_calls: dict[str, str] = {}  # call id -> where the call is, until a result answers it
    answered: dict[str, int] = {}  # call id -> the message that answered it
    call_names: dict[str, str] = {}  # call id -> the tool it calls
    siblings: dict[str, list[str]] = {}  # call id -> the ids of every call of its message
    calls_made = results = 0
    for i, message in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise EpisodeError("expected an object", field=where)
        role = message.get("role")
        if role not in ROLES:
            raise EpisodeError(
                f"unknown role {role!r}; expected one of {', '.join(ROLES)}", field=f"{where}.role"
            )
        if role != "tool":
            _all_or_none_answered(open_calls, answered, siblings, where)
        unknown = set(message) - _MESSAGE_KEYS
        if unknown:
            raise EpisodeError(f"unknown keys {sorted(unknown)}", field=where)
        content = message.get("content")
        if not (content is None or isinstance(content, str) or _is_text_parts(content)):
            raise EpisodeError(
                "content must be a string, null or a list of text parts", field=f"{where}.content"
            )
        name = message.get("name")
        if isinstance(name, str) and name.startswith(HOOK_MESSAGE_PREFIX):
            # Hook feedback names the hook that sent it: one the harness does not define
            # (a typo, another harness's hook) could be neither renamed nor reformatted with it.
            hook = name[len(HOOK_MESSAGE_PREFIX) :]
            hooks = sorted(h.name for h in harness.hooks)
            if hook not in hooks:
                raise EpisodeError(
                    f"hook feedback named {name!r}, but the harness defines no hook "
                    f"{hook!r} (hooks: {', '.join(hooks) or 'none'})",
                    field=f"{where}.name",
                )
        message = dict(message)
        if "tool_calls" in message:
            if role != "assistant":
                raise EpisodeError(
                    "only assistant messages carry tool_calls", field=f"{where}.tool_calls"
                )
            message["tool_calls"] = _parse_tool_calls(
                message["tool_calls"], harness, where, open_calls
            )
            call_names.update(
                (c["id"], c["function"]["name"]) for c in message["tool_calls"] if "id" in c
            )
            ids = [c["id"] for c in message["tool_calls"] if "id" in c]
            siblings.update((call_id, ids) for call_id in ids)
            calls_made += len(message["tool_calls"])
        elif role == "assistant" and content is None:
            raise EpisodeError("an assistant message needs content or tool_calls", field=where)
        reasoning = message.get("reasoning_content")
        if reasoning is not None and not isinstance(reasoning, str):
            raise EpisodeError(
                f"reasoning_content must be a string or null, got {type(reasoning).__name__}",
                field=f"{where}.reasoning_content",
            )
        if role == "tool":
            results += 1
            if results > calls_made and message.get("tool_call_id") is None:
                # More results than calls so far (one before any call, at the very start):
                # a result that answers nothing tells the model a tool spoke unasked. (One
                # with an id is told by its id below: "answers no earlier tool call", or a
                # call already answered.)
                raise EpisodeError(
                    "a tool result with no earlier tool call left to answer",
                    field=f"{where}.tool_call_id",
                )
            call_id = message.get("tool_call_id")
            if call_id is not None and not isinstance(call_id, str):
                raise EpisodeError(
                    f"tool_call_id must be a string, got {type(call_id).__name__}",
                    field=f"{where}.tool_call_id",
                )
            if call_id is not None:
                if call_id not in open_calls:
                    raise EpisodeError(
                        f"tool_call_id {call_id!r} answers a call messages[{answered[call_id]}] "
                        f"already answered"
                        if call_id in answered
                        else f"tool_call_id {call_id!r} answers no earlier tool call",
                        field=f"{where}.tool_call_id",
                    )
                del open_calls[call_id]
                answered[call_id] = i
            _check_answering_tool(
                name, call_names.get(call_id) if call_id is not None else None, harness, where
            )
            if not isinstance(content, str):
                raise EpisodeError(
                    "a tool result's content must be a string", field=f"{where}.content"
                )
        out.append(message)
    _all_or_none_answered(open_calls, answered, siblings, "messages")
    return tuple(out)


def _all_or_none_answered(
    open_calls: dict[str, str],
    answered: dict[str, int],
    siblings: dict[str, list[str]],
    where: str,
) -> None:
    """Refuse a conversation that goes on (``where``: the next message, or the end) past calls
    of one message of which some have a result and others none: the reply that follows uses
    results one call never got ("PED-104233 is delivered and PED-220871 in transit", where only
    the first was looked up), which a model trained on it learns to make up; the OpenAI API
    refuses such a conversation too. Calls of a message left all unanswered are a choice of the
    data (results left out on purpose, as hsa's miniature task does), and pass."""
    for call_id, at in open_calls.items():
        done = [s for s in siblings.get(call_id, ()) if s in answered]
        if done:
            raise EpisodeError(
                f"{at} (id {call_id!r}) has no tool result, though its message's call "
                f"{done[0]!r} has one (messages[{answered[done[0]]}]); answer every call of a "
                "message, or none",
                field=where,
            )


def _check_answering_tool(name: Any, called: str | None, harness: Harness, where: str) -> None:
    """A tool result's ``name`` (hook feedback aside) is the tool that answers: the one its
    ``tool_call_id`` calls (``called``), or without an id a tool of the harness. Another name
    would be renamed as no call is, and tell the model a tool answered that was never called."""
    if name is None or (isinstance(name, str) and name.startswith(HOOK_MESSAGE_PREFIX)):
        return
    if not isinstance(name, str):
        raise EpisodeError(
            f"a tool result's name must be a string, got {type(name).__name__}",
            field=f"{where}.name",
        )
    if called is not None and name != called:
        raise EpisodeError(
            f"a tool result named {name!r} answers a call of {called!r} (its tool_call_id)",
            field=f"{where}.name",
        )
    tools = [*harness.tool_names, *([harness.skill_loader] if harness.skills else [])]
    if called is None and name not in tools:
        raise EpisodeError(
            f"a tool result named {name!r}, which is no tool of the harness "
            f"(tools: {', '.join(tools) or 'none'})",
            field=f"{where}.name",
        )


def _is_text_parts(content: Any) -> bool:
    return isinstance(content, list) and all(is_text_part(p) for p in content)


def _parse_tool_calls(raw: Any, harness: Harness, where: str, open_calls: dict[str, str]) -> list:
    if not isinstance(raw, list) or not raw:
        raise EpisodeError("tool_calls must be a non-empty list", field=f"{where}.tool_calls")
    calls = []
    for j, call in enumerate(raw):
        cw = f"{where}.tool_calls[{j}]"
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            raise EpisodeError(
                "expected {id, type: function, function: {name, arguments}}", field=cw
            )
        if call.get("type", "function") != "function":
            raise EpisodeError(
                f"a tool call's type must be 'function' (chat templates and the OpenAI API "
                f"take no other), got {call['type']!r}",
                field=f"{cw}.type",
            )
        fn = call["function"]
        name = fn.get("name")
        if not isinstance(name, str):
            raise EpisodeError("function name must be a string", field=f"{cw}.function.name")
        args = parse_arguments(fn.get("arguments", "{}"), where=f"{cw}.function.arguments")
        if name == harness.skill_loader and harness.skills:
            skill_id = args.get("name")
            if not isinstance(skill_id, str) or harness.skill(skill_id) is None:
                raise EpisodeError(
                    f"loads skill {skill_id!r}, which the harness does not have "
                    f"(skills: {', '.join(harness.skill_ids)})",
                    field=f"{cw}.function.arguments.name",
                )
        elif harness.tool(name) is None:
            raise EpisodeError(
                f"calls unknown tool {name!r}; the harness has: "
                f"{', '.join(harness.tool_names) or 'no tools'}",
                field=f"{cw}.function.name",
            )
        call = dict(call)
        if not isinstance(fn.get("arguments"), str):
            call["function"] = {**fn, "arguments": orjson.dumps(args).decode()}
        if "id" in call:
            if not isinstance(call["id"], str):
                raise EpisodeError("tool call id must be a string", field=f"{cw}.id")
            if call["id"] in open_calls:
                # A result names the call it answers by id: with two calls open under one id,
                # it could answer either (an id may come back once its call is answered).
                raise EpisodeError(
                    f"tool call id {call['id']!r} is already the id of "
                    f"{open_calls[call['id']]}, which no result has answered yet",
                    field=f"{cw}.id",
                )
            open_calls[call["id"]] = cw
        calls.append(call)
    return calls


def _turn_field(gold: Gold, i: int) -> str:
    return f"gold.turns[{i}]" if len(gold.turns) > 1 else "gold"


def check_gold(gold: Gold, messages: tuple[dict, ...], harness: Harness) -> None:
    """Gold may only name tools, parameters and skills the harness has, at assistant turns."""
    for i, turn in enumerate(gold.turns):
        where = _turn_field(gold, i)
        if turn.at > len(messages):
            raise EpisodeError(
                f"at={turn.at} is past the last message ({len(messages)} messages)",
                field=f"{where}.at",
            )
        if turn.at < len(messages) and messages[turn.at].get("role") != "assistant":
            raise EpisodeError(
                f"at={turn.at} points at a {messages[turn.at].get('role')!r} "
                f"message; it must point at an assistant message or the end",
                field=f"{where}.at",
            )
        for j, call in enumerate(turn.calls):
            tool = harness.tool(call.name)
            if tool is None:
                raise EpisodeError(
                    f"gold calls unknown tool {call.name!r}", field=f"{where}.calls[{j}].name"
                )
            props = tool.properties
            for key, params in (("arguments", call.arguments), ("omittable", call.omittable)):
                for param in params:
                    if param not in props:
                        raise EpisodeError(
                            f"gold names parameter {param!r}, which tool {call.name!r} does "
                            f"not define",
                            field=f"{where}.calls[{j}].{key}",
                        )
            for param in tool.required:
                if param not in call.arguments:
                    raise EpisodeError(
                        f"gold cannot be satisfied: {call.name!r} requires "
                        f"{param!r} but the gold gives it no acceptable value",
                        field=f"{where}.calls[{j}].arguments.{param}",
                    )
        for skill_id in turn.skills:
            if harness.skill(skill_id) is None:
                raise EpisodeError(
                    f"gold needs skill {skill_id!r}, which the harness does not have",
                    field=f"{where}.skills",
                )


def arguments_schema(tool: Tool) -> dict:
    """The schema a call's arguments must fit: the tool's parameters, closed to parameters it does
    not define unless it says otherwise (as the scorer judges them: BFCL's unexpected_param)."""
    schema = tool.parameters
    if "additionalProperties" in schema or "patternProperties" in schema:
        return schema
    return {**schema, "additionalProperties": False}


# The validator of each tool's arguments (:func:`arguments_schema`) and its quick acceptance
# test (:func:`simple_acceptor`), by the tool object: the rows of one harness variant share its
# tool objects, so each is built and looked up once, not serialised per call to find it by
# content. The entry holds the tool, so while remembered its id is no other tool's.
_ARGUMENT_VALIDATORS: BoundedMemo[tuple[Tool, Any, Callable[[Any], bool] | None]] = BoundedMemo(
    4096
)


def _arguments_problem(arguments: Any, tool: Tool) -> str | None:
    """Why ``arguments`` do not fit ``tool`` (see :func:`validation_problem`), or None."""

    def make() -> tuple[Tool, Any, Callable[[Any], bool] | None]:
        schema = arguments_schema(tool)
        return tool, schema_validator(schema), simple_acceptor(schema)

    _, validator, accepts = _ARGUMENT_VALIDATORS.get(id(tool), make)
    if accepts is not None and accepts(arguments):
        return None
    return validation_problem(arguments, validator)


def check_recorded_calls(messages: tuple[dict, ...], harness: Harness) -> None:
    """Every recorded tool call (skill loads aside, checked on parse) fits its tool's schema,
    unless a hook blocked it; stage ``check:call_schema``."""
    blocked = blocked_calls(messages)
    for i, message in enumerate(messages):
        for j, call in enumerate(message.get("tool_calls") or ()):
            fn = call["function"]
            tool = harness.tool(fn["name"])
            if tool is None or id(call) in blocked:
                continue  # the skill loader, or a mistake a hook caught
            problem = _arguments_problem(orjson.loads(fn["arguments"]), tool)
            if problem is not None:
                raise EpisodeError(
                    f"recorded call to {tool.name!r} does not fit the tool's schema: {problem}",
                    stage="check:call_schema",
                    field=f"messages[{i}].tool_calls[{j}].function.arguments",
                )


def _same_json(a: Any, b: Any) -> bool:
    canonical = orjson.OPT_SORT_KEYS
    return orjson.dumps(a, option=canonical) == orjson.dumps(b, option=canonical)


def unfit_defaults(parameters: dict) -> Iterator[tuple[str, str]]:
    """(pointer of the node, why) for every ``default`` of a tool's schema that has the node's
    type but breaks its own limits (``default: 99`` where ``maximum: 60``): legal JSON Schema (a
    default is an annotation), yet :func:`check_gold_values` takes a gold value equal to it as
    "left at its default", whatever it is. A default of another type (BFCL's ``"false"`` for a
    boolean) is a BFCL variable, no such slip."""
    for parts, node in schema_nodes(parameters):
        if "default" not in node or type_problem(node["default"], node) is not None:
            continue
        problem = fit_problem(node["default"], node, parameters)
        if problem is not None:
            yield pointer(parts), problem


def check_gold_values(gold: Gold, harness: Harness) -> None:
    """Every gold parameter has an acceptable value that validates against its schema (types,
    ranges, enums); stage ``check:gold_schema``.

    As in BFCL's checker, these stand: ``null`` for a parameter that is not required and the
    schema's own ``default`` (both say "left at its default"), and a parameter whose every
    acceptable value has another JSON type than the schema's: a BFCL "variable", which the
    scorer compares exactly. A value of the schema's type that breaks a range or an enum (500
    where the maximum is 99) has no such excuse."""
    for i, turn in enumerate(gold.turns):
        for j, call in enumerate(turn.calls):
            tool = harness.tool(call.name)
            assert tool is not None, "check_gold rejects a gold call of an unknown tool first"
            for param, values in call.arguments.items():
                schema = tool.properties[param]
                if any(
                    (v is None and param not in tool.required)
                    or (
                        isinstance(schema, dict)
                        and "default" in schema
                        and _same_json(v, schema["default"])
                    )
                    for v in values
                ):
                    continue
                if any(value_fits(v, schema, tool.parameters) for v in values):
                    continue
                typed = [v for v in values if type_problem(v, schema) is None]
                if not typed:
                    continue  # a BFCL variable
                problem = fit_problem(typed[0], schema, tool.parameters) or "does not fit"
                raise EpisodeError(
                    f"no acceptable value of {call.name}.{param} fits its schema: "
                    f"{orjson.dumps(typed[0]).decode()[:80]}: {problem}",
                    stage="check:gold_schema",
                    field=f"{_turn_field(gold, i)}.calls[{j}].arguments.{param}",
                )


# The scorer's verdict on a recorded message, by what it reads: the message and the gold turn
# (objects: episodes are frozen), the skill loader, and the tools the turn's gold calls. A
# variant's rename leaves most messages and turns it does not touch the same objects (the final
# reply of every variant of an episode), so their verdict is made once. The entry holds all
# three, so while remembered their ids are theirs.
_RECORDED_VERDICTS: BoundedMemo[tuple[dict, Any, tuple, Any]] = BoundedMemo(4096)


def check_judged_steps_accepted(gold: Gold, messages: tuple[dict, ...]) -> None:
    """No judged turn is a step a hook of the harness sent back: its recorded message passes
    its gold (:func:`check_recorded_turns`), so the gold would reward, in RL and in
    evaluation, the step the harness refuses; stage ``check:recorded_turn``. Asked of an
    episode as it loads: no transform moves a judged turn onto a rejected step."""
    if not any(map(hook_feedback, messages)):
        return
    rejected = set(hook_rejected(messages))
    for i, turn in enumerate(gold.turns):
        if turn.at in rejected:
            feedback = next(m["name"] for m in messages[turn.at + 1 :] if hook_feedback(m))
            raise EpisodeError(
                f"the gold judges messages[{turn.at}], which {feedback} sent back: a judged step "
                "is one the harness accepts (judge the step after the feedback instead)",
                stage="check:recorded_turn",
                field=_turn_field(gold, i),
            )


def check_recorded_turns(gold: Gold, messages: tuple[dict, ...], harness: Harness) -> None:
    """Each judged turn's recorded assistant message passes its own gold under the one scorer: a
    recording that contradicts its gold would teach the wrong answer; stage
    ``check:recorded_turn``."""
    loader = harness.skill_loader if harness.skills else None
    for i, turn in enumerate(gold.turns):
        if turn.at >= len(messages):
            continue  # a prompt awaiting its message (BFCL): nothing recorded to check
        message = messages[turn.at]
        tools = tuple(harness.tool(call.name) for call in turn.calls)
        verdict = _RECORDED_VERDICTS.get(
            (id(message), id(turn), loader, tuple(map(id, tools))),
            lambda: (message, turn, tools, score_turn(message, turn, harness)),  # noqa: B023
        )[3]
        if not verdict.correct:
            raise EpisodeError(
                f"the recorded messages[{turn.at}] fails its own gold: {verdict.reason}",
                stage="check:recorded_turn",
                field=_turn_field(gold, i),
            )


def read_episodes(
    path: str | os.PathLike,
    *,
    harness: Harness | None = None,
    trust_hooks: bool = False,
    harness_roots: tuple[str | os.PathLike, ...] = (),
) -> Iterator[Episode | Reject]:
    """Parse a JSONL file: one Episode per good line, one Reject (file, line, field, stage) per
    bad one. Harness folders are looked up beside the file or under ``harness_roots``."""
    for _, item in numbered_episodes(
        path, harness=harness, trust_hooks=trust_hooks, harness_roots=harness_roots
    ):
        yield item


def numbered_episodes(
    path: str | os.PathLike,
    *,
    harness: Harness | None = None,
    trust_hooks: bool = False,
    harness_roots: tuple[str | os.PathLike, ...] = (),
) -> Iterator[tuple[int, Episode | Reject]]:
    """:func:`read_episodes`, each item with its line number (an Episode carries none)."""
    path = Path(path)
    cache: dict = {}
    for line in read_lines(path):
        if line.error is not None:
            reject = Reject(
                source=str(path), line=line.number, id=None, field=None, reason=line.error
            )
            yield line.number, reject
            continue
        try:
            yield (
                line.number,
                Episode.from_dict(
                    line.value,
                    harness=harness,
                    base_dir=path.parent,
                    trust_hooks=trust_hooks,
                    harness_cache=cache,
                    harness_roots=harness_roots,
                ),
            )
        except HsaError as exc:
            row = line.value.get("id") if isinstance(line.value, dict) else None
            yield (
                line.number,
                Reject(
                    source=str(path),
                    line=line.number,
                    id=exc.row if exc.row is not None else (None if row is None else str(row)),
                    field=exc.field,
                    reason=exc.reason,
                    stage=getattr(exc, "stage", "load"),
                ),
            )


def duplicate_id(first_line: int | None, why: str = "they key each variant's randomness") -> str:
    """Why an episode whose id an earlier one has is rejected: the one wording of the rule for
    every reader of episodes (loading, augment, generate, rollout), naming the first line that
    has the id where the reader knows it."""
    where = "an earlier episode has it" if first_line is None else f"line {first_line} has it"
    return f"duplicate episode id; {where} (ids must be unique, {why})"


def distinct_episodes(
    path: str | os.PathLike,
    *,
    harness: Harness | None = None,
    trust_hooks: bool = False,
    harness_roots: tuple[str | os.PathLike, ...] = (),
    check: Callable[[Episode], None] | None = None,
) -> Iterator[Episode | Reject]:
    """:func:`read_episodes`, where an episode whose id an earlier line's episode has is a
    reject at its own line (field ``id``, naming that line): a run identifies variants, and
    derives their randomness, by id, so the first episode of each id is the one it makes.
    ``check``, when given, raises an :class:`EpisodeError` for an episode the run cannot use
    (hsa.dataset.pipeline.check_source): a reject at its line, as every other."""
    first_line: dict[str, int] = {}
    for number, item in numbered_episodes(
        path, harness=harness, trust_hooks=trust_hooks, harness_roots=harness_roots
    ):
        if isinstance(item, Episode):
            first = first_line.setdefault(item.id, number)
            if first != number:
                item = Reject(
                    source=str(path),
                    line=number,
                    id=item.id,
                    field="id",
                    reason=duplicate_id(first),
                )
            elif check is not None:
                try:
                    check(item)
                except EpisodeError as exc:
                    item = Reject.from_error(exc, source=str(path), line=number, id=item.id)
        yield item


def read_all_episodes(
    path: str | os.PathLike,
    *,
    harness: Harness | None = None,
    trust_hooks: bool = False,
    harness_roots: tuple[str | os.PathLike, ...] = (),
) -> list[Episode]:
    """Every episode of a JSONL file, for a task that must see them all (scoring): when a line
    does not load, an HsaError saying how many do not, and the first."""
    episodes: list[Episode] = []
    rejects: list[Reject] = []
    for item in read_episodes(
        path, harness=harness, trust_hooks=trust_hooks, harness_roots=harness_roots
    ):
        if isinstance(item, Episode):
            episodes.append(item)
        else:
            rejects.append(item)
    if rejects:
        raise HsaError(f"{len(rejects)} episode line(s) do not load; first: {rejects[0]}")
    seen: set[str] = set()
    for episode in episodes:
        if episode.id in seen:
            # Predictions are matched by id: one prediction would be scored twice. The lines
            # are looked up on this error path alone.
            lines = [
                line.number
                for line in read_lines(Path(path))
                if isinstance(line.value, dict) and str(line.value.get("id")) == episode.id
            ]
            raise HsaError(
                f"episode id {episode.id!r} is on lines {', '.join(map(str, lines))}; ids must "
                f"be unique in a file (predictions are matched by id)",
                file=str(path),
            )
        seen.add(episode.id)
    return episodes


def find_episode(
    path: str | os.PathLike,
    episode_id: str,
    *,
    harness: Harness | None = None,
    trust_hooks: bool = False,
    harness_roots: tuple[str | os.PathLike, ...] = (),
) -> Episode | None:
    """The episode a run over ``path`` used for ``episode_id``: the first line with that id that
    loads (a run skips lines that do not). Only matching lines are validated, so finding one
    row's source in a large file costs a JSON parse per line, not an episode load per line."""
    path = Path(path)
    for line in read_lines(path):
        value = line.value
        if not isinstance(value, dict) or str(value.get("id")) != episode_id:
            continue
        try:
            return Episode.from_dict(
                value,
                harness=harness,
                base_dir=path.parent,
                trust_hooks=trust_hooks,
                harness_roots=harness_roots,
            )
        except HsaError:
            continue
    return None
