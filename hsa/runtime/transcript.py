"""A conversation's records as lines a person reads (``hsa chat`` prints them as they happen):
user messages, hook verdicts, the model's tool calls and replies with their timings, skill loads
and tool results with who answered them."""

from __future__ import annotations

from hsa.runtime.records import End, HookVerdict, RequestRecord, Step, ToolOutcome, UserTurn

WIDTH = 160


def _short(text: str, width: int = WIDTH) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _hooks(verdicts: tuple[HookVerdict, ...], calls: int = 0) -> list[str]:
    """A line per verdict. A call's result is the feedback of the first check that blocked it
    (hsa.runtime.conversation), so of the verdicts on a call (``calls`` of them in a step, each
    run by every tool_call hook in turn) only that one is shown to the model."""
    per_call = len(verdicts) // calls if calls and len(verdicts) % calls == 0 else 0
    lines = []
    for i, v in enumerate(verdicts):
        if v.ok:
            lines.append(f"  hook {v.hook} ({v.event}): ok")
            continue
        start = i - i % per_call if per_call else None
        earlier = start is not None and any(not u.ok for u in verdicts[start:i])
        lines.append(
            f"  hook {v.hook} ({v.event}): FAILED (not shown: an earlier check's feedback "
            f"answers the call) {_short(v.message)}"
            if earlier
            else f"  hook {v.hook} ({v.event}): FAILED -> the model is shown: {_short(v.message)}"
        )
    return lines


def _timing(request: RequestRecord) -> str:
    parts = [f"{request.latency_s:.2f} s"]
    if request.ttft_s is not None:
        parts.append(f"TTFT {request.ttft_s:.2f} s")
    if request.prompt_tokens is not None and request.completion_tokens is not None:
        parts.append(f"{request.prompt_tokens}+{request.completion_tokens} tokens")
    if request.attempts > 1:
        parts.append(f"{request.attempts} attempts, {request.waited_s:.1f} s waiting")
    return ", ".join(parts)


class Transcript:
    """Turns records into lines as they come; a request's timing is shown with the step it
    produced (the request record arrives first)."""

    def __init__(self):
        self.request: RequestRecord | None = None

    def lines(self, record) -> list[str]:
        if isinstance(record, RequestRecord):
            self.request = record
            return []
        if isinstance(record, Step):
            lines = _step(record)
            if self.request is not None:
                lines[0] += f"   [{_timing(self.request)}]"
                self.request = None
            return lines
        return _other(record)


def _step(record: Step) -> list[str]:
    calls = record.message.get("tool_calls") or []
    if calls:
        shown = ", ".join(
            f"{c['function']['name']}({_short(c['function']['arguments'], 80)})" for c in calls
        )
        head = f"assistant -> {shown}"
    else:
        head = f"assistant: {_short(record.message.get('content') or '')}"
    lines = [head, *_hooks(record.hooks, len(calls))]
    if not record.accepted:
        lines.append("  sent back by a hook: the model tries again")
    return lines


def _other(record) -> list[str]:
    if isinstance(record, UserTurn):
        return [f"user: {_short(record.message.get('content') or '')}", *_hooks(record.hooks)]
    if isinstance(record, ToolOutcome):
        if record.source == "hook":
            return [f"  {record.name}: not run, blocked by hook {record.hook}"]
        if record.source == "skill" and not record.error:
            return [
                f"  skill loaded via {record.name}: {_short(record.content, 100)} "
                f"({len(record.content)} chars)"
            ]
        mark = " ERROR" if record.error else ""
        return [
            f"  {record.name} <- {record.source}{mark} ({record.seconds * 1000:.0f} ms): "
            f"{_short(record.content, 120)}",
            *_hooks(tuple(v for v in record.result_hooks if not v.ok)),
        ]
    if isinstance(record, End):
        return [f"-- {record.status}" + (f": {record.reason}" if record.reason else "")]
    return []
