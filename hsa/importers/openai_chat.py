"""Import OpenAI / TRL conversational JSONL: ``{"messages": [...], "tools": [...]}`` per line.

The gold is taken from the conversation itself: the last assistant message that makes tool calls
becomes the judged turn, each argument's value its only acceptable value (parallel calls in any
order). A conversation whose assistant never calls a tool gets a ``no_call`` gold on its last
assistant message. The id is the line's ``id`` when present, else ``<file stem>-<line number>``.
Messages as the OpenAI SDK dumps them are read too: its fields that carry nothing
(``refusal: null``, ``annotations: []``, ``audio``, ``function_call`` and ``tool_calls`` null)
count as absent. TRL's conversational prompt-completion rows (``prompt`` and ``completion``,
lists of messages) are read as their prompt then their completion. Rows of the legacy
function-calling API are read too: ``functions`` as the tools, an assistant's ``function_call``
as its one tool call (given the id ``call_<n>``), and a ``role: function`` message as the tool
result of the latest unanswered call of that name.

Rows as datasets on the Hugging Face Hub store them are read as well: ``tools`` written as a
JSON string, and the dataset's own columns (``category``, ``source``) kept under the episode's
``meta`` (one notice per set of such columns). Rows of formats this importer does not read are
refused by name: ShareGPT's ``conversations``, xLAM's ``query``/``answers``, and tool calls
written into an assistant's text (``<tool_call>{...}</tool_call>``), which would read as a
reply.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson

from hsa.errors import EpisodeError, HsaError, Notice, Reject
from hsa.files.jsonl import RefusedJson, loads, read_lines
from hsa.importers import ImportResult
from hsa.model.episode import Episode, parse_arguments
from hsa.model.gold import exact_arguments

_KEYS = {"id", "messages", "tools", "meta"}
_LEGACY_KEYS = {"functions"}
# TRL's conversational prompt-completion rows: the conversation is the prompt, then the completion.
_PROMPT_COMPLETION_KEYS = {"prompt", "completion"}
# What the OpenAI SDK's message objects write when they carry nothing (``model_dump()`` of a
# chat completion message), and the fine-tuning format's per-line switch: read as absent. A
# value that carries something (a refusal's text, annotations) is still an unknown key.
_EMPTY_SDK_FIELDS = ("refusal", "annotations", "audio", "function_call", "tool_calls")
_IGNORED_KEYS = {"parallel_tool_calls"}


def _without_training_weights(messages: list) -> list:
    """The messages without OpenAI fine-tuning's per-message ``weight``: 1 (train on it) is what
    every assistant message of a row is; 0 (show it, learn nothing from it) is refused, since a
    row trains on all its assistant messages and the weight would be lost."""
    out = []
    for i, message in enumerate(messages):
        if isinstance(message, dict) and "weight" in message:
            weight = message["weight"]
            if weight != 1 or isinstance(weight, bool):
                raise EpisodeError(
                    f"weight {weight!r}: a fine-tuning weight other than 1 (train on this "
                    f"message) is not kept, since hsa rows train on every assistant message; "
                    f"drop the row or the message",
                    field=f"messages[{i}].weight",
                )
            message = {k: v for k, v in message.items() if k != "weight"}
        out.append(message)
    return out


def _without_empty_sdk_fields(messages: list) -> list:
    out = []
    for message in messages:
        if isinstance(message, dict) and any(
            k in message and message[k] in (None, []) for k in _EMPTY_SDK_FIELDS
        ):
            message = {
                k: v for k, v in message.items() if not (k in _EMPTY_SDK_FIELDS and v in (None, []))
            }
        out.append(message)
    return out


def gold_from_messages(messages: list) -> dict:
    """The final assistant tool calls as gold (see the module docstring)."""
    assistant = [
        i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"
    ]
    if not assistant:
        raise EpisodeError("no assistant message to take the gold from", field="messages")
    with_calls = [i for i in assistant if messages[i].get("tool_calls")]
    if not with_calls:
        return {"at": assistant[-1], "no_call": True}
    at = with_calls[-1]
    calls = []
    for j, call in enumerate(messages[at]["tool_calls"]):
        where = f"messages[{at}].tool_calls[{j}].function"
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            raise EpisodeError("expected {function: {name, arguments}}", field=where)
        args = parse_arguments(fn.get("arguments", "{}"), where=f"{where}.arguments")
        calls.append({"name": fn.get("name"), "arguments": exact_arguments(args)})
    return {"at": at, "calls": calls, "ordered": False}


def import_openai(
    path: str | os.PathLike, *, progress: Callable[[Iterable], Iterable] | None = None
) -> ImportResult:
    """Import a conversational JSONL file; one episode or one reject per line."""
    path = Path(path)
    result = ImportResult(source=str(path))
    lines = read_lines(path)
    told: set[tuple[str, ...]] = set()  # the sets of extra columns a notice named
    for line in progress(lines) if progress else lines:
        result.lines += 1
        if line.error is not None:
            result.rejects.append(Reject(str(path), line.number, None, None, line.error))
            continue
        value = line.value
        row_id = value.get("id") if isinstance(value, dict) else None
        if row_id is not None and (not isinstance(row_id, str | int) or isinstance(row_id, bool)):
            result.rejects.append(
                Reject(
                    str(path),
                    line.number,
                    None,
                    "id",
                    f"id must be a string or an integer, got {type(row_id).__name__}",
                )
            )
            continue
        row_id = str(row_id) if row_id is not None else f"{path.stem}-{line.number}"
        if result.repeats_id(row_id, line.number):
            continue
        try:
            result.keep(Episode.from_dict(_episode_row(value, row_id, path.name)), line.number)
            extra = tuple(sorted(extra_columns(value)))
            if extra and extra not in told:  # once per set of columns, not once per row
                told.add(extra)
                result.notices.append(
                    Notice(
                        str(path),
                        line.number,
                        row_id,
                        None,
                        f"columns {list(extra)} kept under meta (this row and every later one "
                        f"with them)",
                    )
                )
        except HsaError as exc:
            # The row's tools become the episode's inline harness; name the field as the user
            # wrote it ("tools[2]...", not "harness.tools[2]...").
            if exc.field and exc.field.startswith("harness.tools"):
                exc = EpisodeError(exc.reason, row=exc.row, field=exc.field[len("harness.") :])
            result.rejects.append(
                Reject.from_error(exc, source=str(path), line=line.number, id=row_id)
            )
    result.check_counts()
    return result


# Other formats' rows, by the keys that tell them: read by no importer, said so by name.
_OTHER_FORMATS = (
    (
        {"conversations"},
        "a ShareGPT row (conversations of from/value turns): hsa reads OpenAI messages "
        "(role/content, tool_calls); convert the turns first",
    ),
    (
        {"query", "answers"},
        "an xLAM/APIGen row (query, tools, answers): hsa reads OpenAI messages; write the query "
        "as a user message and the answers as the assistant's tool_calls, and the tools as "
        "JSON Schema functions",
    ),
)


def _episode_row(value: Any, row_id: str, source: str) -> dict:
    if not isinstance(value, dict):
        raise EpisodeError(
            f"expected a JSON object with messages and tools, got {type(value).__name__}"
        )
    unknown = extra_columns(value)
    for keys, what in _OTHER_FORMATS:
        if keys <= set(value) and "messages" not in value:
            raise EpisodeError(what, field=sorted(keys)[0])
    if unknown and "messages" not in value and not _PROMPT_COMPLETION_KEYS & set(value):
        raise EpisodeError(f"unknown keys {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    if _PROMPT_COMPLETION_KEYS & set(value):
        value = _prompt_completion(value)
    messages = value.get("messages")
    if not isinstance(messages, list):
        raise EpisodeError("messages must be a list", field="messages")
    messages = _without_training_weights(_without_empty_sdk_fields(messages))
    tools = value.get("tools") or []
    if "functions" in value:
        if "tools" in value:
            raise EpisodeError("a row has both tools and functions (the legacy name): give one")
        tools = _legacy_tools(value["functions"])
    messages = _legacy_calls(messages)
    tools = _decoded_tools(tools)
    _no_calls_in_text(messages)
    meta = value.get("meta") or {}
    if not isinstance(meta, dict):
        raise EpisodeError(f"meta must be an object, got {type(meta).__name__}", field="meta")
    meta = {**meta}
    # A dataset's own columns (a category, a source, a split) are the row's metadata.
    for key in sorted(unknown):
        if key in meta:
            raise EpisodeError(
                f"column {key!r} is also a key of meta: give it once", field=f"meta.{key}"
            )
        meta[key] = value[key]
    meta.setdefault("source", source)
    return {
        "id": row_id,
        "harness": {"name": "openai-import", "tools": tools},
        "messages": messages,
        "gold": gold_from_messages(messages),
        "meta": meta,
    }


def extra_columns(value: dict) -> set[str]:
    """The keys of a conversation's row that no format here reads: kept under its meta."""
    return set(value) - _KEYS - _LEGACY_KEYS - _PROMPT_COMPLETION_KEYS - _IGNORED_KEYS


def _decoded_tools(tools: Any) -> list:
    """The row's tools: a list of tool objects, or such a list written as a JSON string (as
    datasets on the Hugging Face Hub store them, one string column for rows of any tools)."""
    if isinstance(tools, str):
        try:
            # read as every JSON users write is (hsa.files.jsonl.loads): a key written twice
            # or an integer beyond 64 bits is refused, never kept as the reader guesses
            tools = loads(tools)
        except RefusedJson as exc:
            raise EpisodeError(f"tools, written as a JSON string: {exc}", field="tools") from None
        except orjson.JSONDecodeError as exc:
            raise EpisodeError(
                f"tools is a string that is no JSON ({exc}); give a list of tool objects, or "
                f"one written as a JSON string",
                field="tools",
            ) from None
    if not isinstance(tools, list):
        raise EpisodeError("tools must be a list of tool objects", field="tools")
    return tools


# A tool call written into an assistant's text, as Hermes-style chat templates print them
# (Qwen, NousResearch): read as text, it would be a reply, and its gold "no call".
_CALL_IN_TEXT = re.compile(r"<tool_call>\s*\{")


def _no_calls_in_text(messages: list) -> None:
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if (
            isinstance(message, dict)
            and message.get("role") == "assistant"
            and not message.get("tool_calls")
            and isinstance(content, str)
            and _CALL_IN_TEXT.search(content)
        ):
            raise EpisodeError(
                "an assistant message writes a tool call into its text (<tool_call>{...}"
                "</tool_call>, a Hermes-style template's output): hsa reads calls from "
                "tool_calls, and would take this one for a reply; parse the calls into "
                "tool_calls first",
                field=f"messages[{i}].content",
            )


def _legacy_tools(functions: Any) -> list:
    """The legacy ``functions`` list as tools."""
    if not isinstance(functions, list):
        raise EpisodeError("functions must be a list of function objects", field="functions")
    return [{"type": "function", "function": f} for f in functions]


def _legacy_calls(messages: list) -> list:
    """``messages`` with legacy ``function_call`` and ``role: function`` messages written as
    tool calls and tool results (see the module docstring); other messages as they are."""
    if not any(
        isinstance(m, dict) and ("function_call" in m or m.get("role") == "function")
        for m in messages
    ):
        return messages
    out: list[Any] = []
    unanswered: list[tuple[str, Any]] = []  # (call id, function name): calls no result answers
    for i, message in enumerate(messages):
        if isinstance(message, dict) and "function_call" in message:
            fn = message["function_call"]
            if not isinstance(fn, dict) or "tool_calls" in message:
                raise EpisodeError(
                    "function_call must be one {name, arguments} object, without tool_calls",
                    field=f"messages[{i}].function_call",
                )
            call_id = f"call_{len(out)}"
            unanswered.append((call_id, fn.get("name")))
            message = {k: v for k, v in message.items() if k != "function_call"}
            message["tool_calls"] = [{"id": call_id, "type": "function", "function": fn}]
        elif isinstance(message, dict) and message.get("role") == "function":
            name = message.get("name")
            answered = next((c for c in reversed(unanswered) if c[1] == name), None)
            if answered is None:
                raise EpisodeError(
                    f"a function result answers no call of {name} before it",
                    field=f"messages[{i}]",
                )
            unanswered.remove(answered)
            message = {
                "role": "tool",
                "tool_call_id": answered[0],
                "content": message.get("content"),
            }
        out.append(message)
    return out


def _prompt_completion(value: dict) -> dict:
    """A TRL conversational prompt-completion row as a messages row: the prompt's messages, then
    the completion's."""
    if "messages" in value:
        raise EpisodeError("a row has both messages and prompt/completion: give one")
    for key in ("prompt", "completion"):
        if not isinstance(value.get(key), list):
            raise EpisodeError(
                f"{key} must be a list of messages (TRL's conversational prompt-completion "
                f"format; a plain-text prompt has no tool calls to learn from)",
                field=key,
            )
    rest = {k: v for k, v in value.items() if k not in _PROMPT_COMPLETION_KEYS}
    return {**rest, "messages": [*value["prompt"], *value["completion"]]}
