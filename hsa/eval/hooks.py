"""Hook compliance of one judged message: would the harness's hooks accept it?

The runtime runs hooks inside a live conversation (hsa.runtime.conversation); an evaluation item is
a single message after a recorded prefix, so the payloads are rebuilt from that prefix with the
keys hsa.runtime.hooks documents: a message with tool calls is checked by the ``tool_call`` hooks
on every call, a message without by the ``reply`` hooks (``loaded_skills``: skills the loader
answered in the prefix; ``tools_called``: domain tools called since the last user message, calls a
hook blocked excluded). The ``user_message`` and ``tool_result`` hooks judge the user and the
tools, not the model, and are not run. Hooks are code: this runs only for trusted harnesses.
"""

from __future__ import annotations

from hsa.model.harness import Harness
from hsa.model.hook import blocked_calls, from_user
from hsa.model.message import message_text
from hsa.runtime.hooks import HookRunner, hook_arguments


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
    harness = runner.harness
    calls = message.get("tool_calls") or []
    if calls:
        if not runner.by_event["tool_call"]:
            return None
        for i, call in enumerate(calls):
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
            if not all(v.ok for v in runner.run("tool_call", payload)):
                return False
        return True
    if not runner.by_event["reply"]:
        return None
    payload = {"reply": message_text(message), **reply_context(harness, conversation)}
    return all(v.ok for v in runner.run("reply", payload))
