"""Run a harness's hooks at their events, with the payloads the runtime promises them.

A hook is ``fn(payload, config) -> {"ok": true}`` or ``{"ok": false, "feedback": "..."}`` (see
hsa.model.hook); every hook declared for an event runs, in harness order, and a failing one's feedback is
wrapped in that hook's feedback format (``config.feedback_format``, see hsa.model.hook_feedback) into
the message the model is shown as ``hook.<name>``. Payloads, by event (every payload also has
``event``; a hook reads the keys it needs):

* ``user_message``: ``text`` (the user's message), ``turn`` (0-based user turn);
* ``tool_call`` (before the call runs): ``tool_name``, ``arguments`` (the decoded JSON object, or
  the raw string when it is not one), ``parameters`` (the tool's JSON Schema; None for a tool the
  harness does not have), ``call_id``, and what the conversation has done so far, as a ``reply``
  hook reads it (``user_message``, ``loaded_skills``, ``skill_kinds``, ``tools_called``,
  ``skill_loader``: a policy "load the refund skill before issue_refund");
* ``tool_result`` (before the model sees it): ``tool_name``, ``arguments``, ``parameters`` and
  ``call_id`` as for ``tool_call``, plus ``result`` (text),
  ``error`` (bool) and ``source`` (who answered: skill, code, replay, fault:<kind>, error);
* ``reply`` (a message without tool calls): ``reply`` (its text), ``user_message`` (the last user
  message's text; also as ``viewer_message``, the key the first harnesses' hooks read),
  ``loaded_skills`` (skills loaded so far, in order), ``skill_kinds`` (every skill id -> kind),
  ``tools_called`` (domain tools run since that user message, in order), ``skill_loader``.

A hook that raises, or returns anything but a verdict, is a harness bug: :class:`HookError`.
Hooks get deep copies of their config and payload, so that one call cannot change the next,
another conversation's, or the tools the model is offered; the config without its
``feedback_format``, which is the runtime's to wrap the feedback with.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from typing import Any

import orjson

from hsa.errors import HsaError
from hsa.model.harness import Harness
from hsa.model.hook import HOOK_EVENTS, HOOK_SECONDS, blocked_calls, deadline, from_user
from hsa.model.hook_feedback import FORMAT_KEY, format_feedback, hook_format, split_format
from hsa.model.message import message_text


@dataclass(frozen=True, slots=True)
class HookVerdict:
    """One hook's decision on one event. ``message`` is the text the model is shown when the
    hook fails: its feedback wrapped in the hook's feedback format (see hsa.model.hook_feedback)."""

    hook: str
    event: str
    ok: bool
    feedback: str = ""
    message: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def hook_arguments(raw: Any) -> dict | str:
    """A call's arguments as hooks see them: the decoded object when they are one, otherwise the
    raw text (a hook may judge malformed arguments too)."""
    if isinstance(raw, dict):
        return raw
    try:
        value = orjson.loads(raw)
    except (orjson.JSONDecodeError, TypeError):
        return raw if isinstance(raw, str) else str(raw)
    return value if isinstance(value, dict) else raw


def hook_options(config: dict) -> dict:
    """What a hook's function is handed of its config: a copy, without the feedback format,
    which is hsa's to wrap the feedback with (hsa.model.hook_feedback) and which a variant's
    swap may add: a hook that reads its whole config as its own options (limits per
    parameter) would take it for one."""
    return copy.deepcopy({k: v for k, v in config.items() if k != FORMAT_KEY})


class HookError(HsaError):
    """A hook raised, or returned something that is not ``{"ok": bool, "feedback"?: str}``."""


class HookRunner:
    """The hooks of one harness, imported once (only if the harness is trusted: hooks.py is code)."""

    def __init__(self, harness: Harness):
        self.harness = harness
        self.functions = harness.hook_functions()  # raises HooksNotTrustedError without trust
        self.by_event = {
            event: tuple(h for h in harness.hooks if h.event == event) for event in HOOK_EVENTS
        }

    def run(self, event: str, payload: dict) -> tuple[HookVerdict, ...]:
        """Every hook of ``event`` on ``payload``, in harness order."""
        verdicts = []
        for hook in self.by_event[event]:
            try:
                # Deep copies: a hook that edits its config or payload (a list it appends to,
                # the tool's schema) must not change the next call, another conversation's
                # (rollouts share one harness object), or the harness the model is offered.
                with deadline(
                    HOOK_SECONDS, lambda: TimeoutError(f"no verdict in {HOOK_SECONDS} s")
                ):
                    result = self.functions[hook.name](
                        copy.deepcopy({"event": event, **payload}), hook_options(hook.config)
                    )
            except (Exception, SystemExit) as exc:  # sys.exit() in a hook ends no hsa command
                raise HookError(
                    f"hook {hook.name!r} (function {hook.function}) raised "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            if not isinstance(result, dict) or not isinstance(result.get("ok"), bool):
                raise HookError(
                    f"hook {hook.name!r} (function {hook.function}) returned "
                    f"{result!r}; expected {{'ok': true}} or {{'ok': false, "
                    f"'feedback': '...'}}"
                )
            if result["ok"]:
                verdicts.append(HookVerdict(hook.name, event, True))
                continue
            feedback = result.get("feedback")
            if not isinstance(feedback, str) or not feedback.strip():
                raise HookError(
                    f"hook {hook.name!r} (function {hook.function}) failed without "
                    f"feedback; a failing hook must say what to fix"
                )
            style, wording = split_format(hook_format(hook.config))
            verdicts.append(
                HookVerdict(
                    hook.name,
                    event,
                    False,
                    feedback,
                    format_feedback(hook.name, feedback, style, wording),
                )
            )
        return tuple(verdicts)


# ---- a recorded message judged by the hooks -------------------------------------------------
# An evaluation item, or a variant's judged step, is one message after a recorded prefix: the
# payloads are rebuilt from that prefix with the keys above. A message with tool calls is checked
# by the ``tool_call`` hooks on every call, a message without by the ``reply`` hooks
# (``loaded_skills``: skills the loader answered in the prefix; ``tools_called``: domain tools
# called since the last user message, calls a hook blocked excluded). The ``user_message`` and
# ``tool_result`` hooks judge the user and the tools, not the model, and are not run.


def reply_context(harness: Harness, conversation: tuple[dict, ...]) -> dict:
    """The ``reply`` payload keys that come from the conversation so far."""
    blocked = blocked_calls(conversation)
    loaded: list[str] = []
    called: list[str] = []
    user = ""
    for message in conversation:
        role = message.get("role")
        if from_user(message):
            user, called = message_text(message), []
        for call in message.get("tool_calls") or [] if role == "assistant" else []:
            if id(call) in blocked:
                continue
            name = call["function"]["name"]
            args = hook_arguments(call["function"]["arguments"])
            if name == harness.skill_loader and harness.skills:
                name_arg = args.get("name") if isinstance(args, dict) else None
                if isinstance(name_arg, str) and harness.skill(name_arg) is not None:
                    loaded.append(name_arg)
            elif harness.tool(name) is not None:
                called.append(name)
    return {
        "user_message": user,
        "viewer_message": user,
        "loaded_skills": loaded,
        "skill_kinds": {s.id: s.kind for s in harness.skills},
        "tools_called": called,
        "skill_loader": harness.skill_loader,
    }


def complies(runner: HookRunner, conversation: tuple[dict, ...], message: dict) -> bool | None:
    """True when every hook on the message's event accepts it; None when the harness has no
    hook for that event (nothing to comply with)."""
    event = "tool_call" if message.get("tool_calls") else "reply"
    if not runner.by_event[event]:
        return None
    return refusal(runner, conversation, message) is None


def refusal(
    runner: HookRunner, conversation: tuple[dict, ...], message: dict
) -> HookVerdict | None:
    """The first failing verdict of the hooks on the message's event (a call's ``tool_call``
    hooks, call by call; a reply's ``reply`` hooks), or None when they all accept it."""
    harness = runner.harness
    for i, call in enumerate(message.get("tool_calls") or ()):
        fn = call.get("function") or {}
        name = fn.get("name") or ""
        tool = harness.loader_tool() if name == harness.skill_loader else harness.tool(name)
        payload = {
            **reply_context(harness, conversation),
            "tool_name": name,
            "arguments": hook_arguments(fn.get("arguments", "")),
            "parameters": None if tool is None else tool.parameters,
            "call_id": call.get("id") or f"call_{i}",
        }
        failed = next((v for v in runner.run("tool_call", payload) if not v.ok), None)
        if failed is not None:
            return failed
    if message.get("tool_calls"):
        return None
    payload = {"reply": message_text(message), **reply_context(harness, conversation)}
    return next((v for v in runner.run("reply", payload) if not v.ok), None)
