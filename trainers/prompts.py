"""General prompts for on-policy distillation, from a local JSONL or Parquet file.

Each line (row) is one prompt, in one of these shapes:

* ``{"prompt": "text"}`` -- one user message;
* ``{"prompt": [messages]}`` or ``{"messages": [messages]}`` -- a conversation in OpenAI chat
  format; a trailing assistant message is dropped (the student writes its own);

with an optional ``"tools"`` list (OpenAI tool objects) that is rendered into that prompt only.
A file with any bad line is refused, naming the file, line and field: a training set with rows
silently missing would not be the one the record names. ``trainers/prompts/general-mini.jsonl``
is a small bilingual set shipped for tests and CPU demos.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hsa.errors import HsaError
from hsa.files.jsonl import read_lines
from hsa.model.episode import parse_arguments

SHIPPED_PROMPTS = Path(__file__).resolve().parent / "prompts" / "general-mini.jsonl"
_ROLES = ("system", "developer", "user", "assistant", "tool")


@dataclass(frozen=True)
class GeneralPrompt:
    messages: list[dict]
    tools: list[dict] | None


def read_prompts(path: str | os.PathLike) -> list[GeneralPrompt]:
    path = Path(path)
    if not path.is_file():
        raise HsaError("prompts file not found", file=str(path))
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            values = list(enumerate(pq.read_table(path).to_pylist(), start=1))
        except Exception as exc:  # a foreign or truncated file: say so, with the file
            raise HsaError(f"not a readable Parquet file ({exc})", file=str(path)) from None
        errors: list[tuple[int, str]] = []
    else:
        values, errors = [], []
        for line in read_lines(path):
            if line.error is not None:
                errors.append((line.number, line.error))
            else:
                values.append((line.number, line.value))
    prompts = []
    for number, value in values:
        try:
            prompts.append(_prompt(value))
        except HsaError as exc:
            errors.append((number, f"{exc.field}: {exc.reason}" if exc.field else exc.reason))
    if errors:
        listed = "; ".join(f"line {n}: {reason}" for n, reason in errors[:5])
        raise HsaError(
            f"{len(errors)} bad prompt(s) ({listed}{'; ...' if len(errors) > 5 else ''})",
            file=str(path),
        )
    if not prompts:
        raise HsaError("the prompts file has no prompts", file=str(path))
    return prompts


def _with_object_arguments(message: dict, where: str) -> dict:
    """The message with its tool calls' arguments as objects, as dataset rows give them to the
    chat template (hsa.dataset.rows.chat_template_messages): templates apply ``tojson`` to the
    arguments, and OpenAI's JSON string would come out encoded twice."""
    calls = message.get("tool_calls")
    if not calls:
        return message
    if not isinstance(calls, list):
        raise HsaError("tool_calls must be a list", field=f"{where}.tool_calls")
    out = []
    for j, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise HsaError(
                "expected {function: {name, arguments}}", field=f"{where}.tool_calls[{j}]"
            )
        arguments = parse_arguments(
            function.get("arguments", "{}"), where=f"{where}.tool_calls[{j}].function.arguments"
        )
        out.append({**call, "function": {**function, "arguments": arguments}})
    return {**message, "tool_calls": out}


def _prompt(value) -> GeneralPrompt:
    if not isinstance(value, dict):
        raise HsaError("expected an object with 'prompt' or 'messages'")
    raw = value.get("prompt", value.get("messages"))
    if isinstance(raw, str):
        if not raw.strip():
            raise HsaError("empty prompt", field="prompt")
        messages = [{"role": "user", "content": raw}]
    elif isinstance(raw, list) and raw:
        key = "prompt" if "prompt" in value else "messages"
        for i, message in enumerate(raw):
            if not isinstance(message, dict) or message.get("role") not in _ROLES:
                raise HsaError(
                    f"expected a message with a role in {list(_ROLES)}", field=f"{key}[{i}]"
                )
        messages = [_with_object_arguments(m, f"{key}[{i}]") for i, m in enumerate(raw)]
        while messages and messages[-1]["role"] == "assistant":
            messages.pop()
        if not messages:
            raise HsaError("only assistant messages: nothing to prompt with", field=key)
    else:
        raise HsaError("expected 'prompt' (text or messages) or 'messages' (a non-empty list)")
    tools = value.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
    ):
        raise HsaError("tools must be a list of OpenAI tool objects", field="tools")
    return GeneralPrompt(messages, tools or None)
