"""How a hook's feedback reaches the model: the wrapper around the core feedback text.

A hook function returns ``{"ok": false, "feedback": "<core feedback>"}``; the harness runtime
wraps the core into the message the model sees (a ``tool`` result or a ``user`` message named
``hook.<name>``). The wrapper is a property of the hook, ``hook.config["feedback_format"]``: a
format id, ``"plain"`` (the core as is; also what an absent key means) or ``"<style>:<wording>"``
from :data:`FORMATS`, e.g. ``"xml:check"`` -> ``<check name="tool_arguments">...</check>``.

Promises: :func:`parse_feedback` inverts :func:`format_feedback` exactly, for every format, hook
name and core text (``parse(format(h, f, s, w), s:w) == (h, f)``); every wording has an id that
says what it looks like, and the wordings of each style are split into a ``train`` and a
``heldout`` part that never overlap (:data:`FORMAT_SPLITS`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hsa.errors import HsaError

PLAIN = "plain"
FORMAT_KEY = "feedback_format"
STYLES = (PLAIN, "tag", "xml", "json", "sentence")

# style -> wording id -> wording. "tag" and "sentence" wordings are text templates with {hook}
# and {feedback}; "xml" wordings are (element, name attribute); "json" wordings are
# (hook key, status key, failed status value, feedback key); the style says which, so Any.
WORDINGS: dict[str, dict[str, Any]] = {
    PLAIN: {"": "{feedback}"},
    "tag": {
        "square": "[{hook}] {feedback}",
        "paren": "({hook}) {feedback}",
        "lenticular": "【{hook}】{feedback}",
        "arrow": ">> {hook}: {feedback}",
    },
    "xml": {
        "hook": ("hook", "name"),
        "check": ("check", "name"),
        "hook-feedback": ("hook_feedback", "hook"),
        "system-check": ("system-check", "id"),
    },
    "json": {
        "hook": ("hook", "ok", False, "feedback"),
        "check": ("check", "passed", False, "message"),
        "hook-name": ("hook_name", "status", "failed", "detail"),
        "guard": ("guard", "result", "blocked", "reason"),
    },
    "sentence": {
        "en-failed": "Check {hook} failed: {feedback}",
        "en-blocked": "Hook {hook} blocked this step: {feedback}",
        "zh-failed": "检查 {hook} 未通过：{feedback}",
        "zh-blocked": "钩子 {hook} 拦截了这一步：{feedback}",
        "en-did-not-pass": "The {hook} check did not pass. {feedback}",
        "en-rejected": "Automatic check {hook} rejected the last step: {feedback}",
        "zh-quoted": "自动检查「{hook}」未通过。{feedback}",
        "zh-verify": "{hook} 校验失败：{feedback}",
    },
}

# Which wrapped formats a transform may draw for training and which are kept for evaluation.
# "plain" is in neither: it is what the source episodes use.
FORMAT_SPLITS: dict[str, tuple[str, ...]] = {
    "train": (
        "tag:square",
        "tag:paren",
        "xml:hook",
        "xml:check",
        "json:hook",
        "json:check",
        "sentence:en-failed",
        "sentence:en-blocked",
        "sentence:zh-failed",
        "sentence:zh-blocked",
    ),
    "heldout": (
        "tag:lenticular",
        "tag:arrow",
        "xml:hook-feedback",
        "xml:system-check",
        "json:hook-name",
        "json:guard",
        "sentence:en-did-not-pass",
        "sentence:en-rejected",
        "sentence:zh-quoted",
        "sentence:zh-verify",
    ),
}


# Formats without words that are still one language's writing: lenticular brackets are Chinese
# punctuation.
_WRITTEN_IN = {"tag:lenticular": "zh"}


def format_language(format_id: str) -> str | None:
    """The language a format is written in (``en``, ``zh``: a sentence's wording id starts with
    it; ``【hook】`` is Chinese punctuation), or None for a format of any language (plain, the
    other tags, XML, JSON)."""
    style, _, wording = format_id.partition(":")
    if style == "sentence":
        return wording.split("-", 1)[0]
    return _WRITTEN_IN.get(format_id)


FORMATS: tuple[str, ...] = (PLAIN,) + tuple(
    f"{style}:{wording}" for style in STYLES[1:] for wording in WORDINGS[style]
)


@dataclass(frozen=True, slots=True)
class ParsedFeedback:
    """A hook message taken apart: the hook it names (None for plain), the core feedback, and
    the format id it was written in."""

    hook: str | None
    feedback: str
    format: str


def split_format(format_id: str) -> tuple[str, str]:
    """``"xml:check"`` -> ``("xml", "check")``; ``"plain"`` -> ``("plain", "")``."""
    if format_id == PLAIN:
        return PLAIN, ""
    style, _, wording = format_id.partition(":")
    if style not in WORDINGS or style == PLAIN or wording not in WORDINGS[style]:
        raise HsaError(f"unknown hook feedback format {format_id!r}; known: {', '.join(FORMATS)}")
    return style, wording


def hook_format(config: dict) -> str:
    """The feedback format id a hook's configuration declares (absent: plain)."""
    value = config.get(FORMAT_KEY, PLAIN)
    if not isinstance(value, str):
        raise HsaError(f"hook config {FORMAT_KEY} must be a format id string, got {value!r}")
    split_format(value)
    return value


def _escape_attribute(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;")


def _unescape_attribute(value: str) -> str:
    return value.replace("&quot;", '"').replace("&amp;", "&")


def format_feedback(hook_name: str, feedback: str, style: str, wording: str = "") -> str:
    """The message text the model sees when hook ``hook_name`` fails with ``feedback``."""
    if style == PLAIN:
        return feedback
    split_format(f"{style}:{wording}")
    template = WORDINGS[style][wording]
    if style in ("tag", "sentence"):
        # Substituted in one pass so that braces in the hook name or feedback stay text.
        head, _, tail = str(template).partition("{feedback}")
        return head.replace("{hook}", hook_name) + feedback + tail.replace("{hook}", hook_name)
    if style == "xml":
        element, attribute = template
        return f'<{element} {attribute}="{_escape_attribute(hook_name)}">{feedback}</{element}>'
    hook_key, status_key, status, feedback_key = template
    return json.dumps(
        {hook_key: hook_name, status_key: status, feedback_key: feedback}, ensure_ascii=False
    )


def _parse_as(text: str, style: str, wording: str, hook: str | None) -> ParsedFeedback | None:
    format_id = PLAIN if style == PLAIN else f"{style}:{wording}"
    if style == PLAIN:
        return ParsedFeedback(None, text, PLAIN)
    template = WORDINGS[style][wording]
    if style in ("tag", "sentence"):
        head, _, tail = str(template).partition("{feedback}")
        if hook is not None:
            prefix, suffix = head.replace("{hook}", hook), tail.replace("{hook}", hook)
            if (
                text.startswith(prefix)
                and text.endswith(suffix)
                and len(text) >= len(prefix) + len(suffix)
            ):
                return ParsedFeedback(hook, text[len(prefix) : len(text) - len(suffix)], format_id)
            return None
        # Without a known name, the name is the shortest text that fits between the wording's
        # fixed parts (every wording has the name before the feedback).
        before, _, after = head.partition("{hook}")
        if tail or not text.startswith(before):
            return None
        rest = text[len(before) :]
        cut = rest.find(after) if after else -1
        if cut <= 0:
            return None
        return ParsedFeedback(rest[:cut], rest[cut + len(after) :], format_id)
    if style == "xml":
        element, attribute = template
        opening, closing = f'<{element} {attribute}="', f"</{element}>"
        if not (text.startswith(opening) and text.endswith(closing)):
            return None
        inner = text[len(opening) : len(text) - len(closing)]
        if hook is not None:
            name = _escape_attribute(hook) + '">'
            if not inner.startswith(name):
                return None
            return ParsedFeedback(hook, inner[len(name) :], format_id)
        name, found, feedback = inner.partition('">')
        if not found:
            return None
        return ParsedFeedback(_unescape_attribute(name), feedback, format_id)
    hook_key, status_key, status, feedback_key = template
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if (
        not isinstance(value, dict)
        or list(value) != [hook_key, status_key, feedback_key]
        or value[status_key] != status
        or type(value[status_key]) is not type(status)
        or not isinstance(value[hook_key], str)
        or not isinstance(value[feedback_key], str)
        or (hook is not None and value[hook_key] != hook)
    ):
        return None
    return ParsedFeedback(value[hook_key], value[feedback_key], format_id)


def parse_feedback(
    text: str, format_id: str | None = None, *, hook: str | None = None
) -> ParsedFeedback:
    """The core feedback (and hook name) of a hook message.

    With ``format_id`` (what the hook's config declares) the text must be in that format, for
    hook ``hook`` when given, or :class:`HsaError` names the mismatch; with both it is exact for
    any core text and hook name. Without ``hook`` the name is read as the shortest that fits the
    wording. Without ``format_id``, every wrapped format is tried in :data:`FORMATS` order and
    plain is the fallback: a plain core that happens to look like a wrapper (``"[x] ..."``) is
    read as one, so callers that know the format should pass it."""
    if format_id is not None:
        style, wording = split_format(format_id)
        parsed = _parse_as(text, style, wording, hook)
        if parsed is None:
            who = f" of hook {hook!r}" if hook is not None else ""
            raise HsaError(
                f"hook message{who} is not in its declared feedback format "
                f"{format_id!r}: {text[:80]!r}"
            )
        return parsed
    for candidate in FORMATS[1:]:
        style, wording = split_format(candidate)
        parsed = _parse_as(text, style, wording, hook)
        if parsed is not None:
            return parsed
    return ParsedFeedback(None, text, PLAIN)
