"""The text of an OpenAI chat message, read one way by every reader (the scorer, hooks, the
runtime, verification, the transforms).

A message's ``content`` is a string, None (an assistant message that only calls tools), or a list
of content parts. Only ``{"type": "text", "text": str}`` parts carry text; other parts (images,
audio, refusals, anything malformed) carry none. Text parts are joined with one space, as
``transformers serve`` joins them for a text-only model: the model reads the parts as one text,
and two words in neighbouring parts never run together into one (a false mention of a name).
"""

from __future__ import annotations

from typing import Any

import orjson


def is_text_part(part: Any) -> bool:
    """Whether ``part`` is a content part that carries text: ``{"type": "text", "text": str}``."""
    return (
        isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
    )


def content_text(content: Any, sep: str = " ") -> str:
    """The text of a message's ``content``: itself when a string, its text parts joined with
    ``sep`` when a list, and "" for anything else (None included)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return sep.join(part["text"] for part in content if is_text_part(part))
    return ""


def message_text(message: dict) -> str:
    """The text of ``message`` (see :func:`content_text`)."""
    return content_text(message.get("content"))


def called_tools(messages) -> set[str]:
    """The names of the tools ``messages`` call (skill loads included)."""
    return {
        call["function"]["name"] for message in messages for call in message.get("tool_calls") or ()
    }


def answered_calls(messages) -> list[tuple[int, dict, dict]]:
    """(index of the assistant message that made the call, call, tool message) for each ``tool``
    message of ``messages`` that answers a call: the call its ``tool_call_id`` names, or, for a
    message without one, the first call of the latest assistant message that nothing has
    answered yet (data without ids lists the results in the order of the calls). Hook feedback
    that answers a blocked call is paired too."""
    out = []
    by_id: dict[str, tuple[int, dict]] = {}
    waiting: list[dict] = []  # the latest assistant message's calls not yet answered
    latest = -1
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            latest, waiting = i, list(message.get("tool_calls") or ())
            by_id.update((c["id"], (i, c)) for c in waiting if isinstance(c.get("id"), str))
        elif role == "tool":
            call_id = message.get("tool_call_id")
            made = by_id.pop(call_id, None) if isinstance(call_id, str) else None
            if made is None and call_id is None and waiting:
                made = latest, waiting[0]
            if made is not None:
                waiting = [c for c in waiting if c is not made[1]]
                out.append((*made, message))
    return out


def json_result(content: str) -> dict | list | None:
    """A tool result's JSON object or array, or None for any other text."""
    if content.lstrip()[:1] not in ("{", "["):
        return None
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict | list) else None
