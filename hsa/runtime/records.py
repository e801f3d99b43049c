"""What a conversation leaves behind: every request, user turn, step, hook verdict and tool result.

The runtime yields these records as they happen (``hsa chat`` prints them, a rollout judges them)
and keeps them in a :class:`Trajectory`. Every record has ``to_dict`` (JSON-only values), so a
trajectory can be journaled and written beside a dataset version.

Latency follows the conventions of vLLM's serving benchmark: end-to-end latency per request, time
to first token (TTFT: the first streamed chunk that carries output, not the role-only chunk some
servers send at once), time per output token after the first (TPOT = (E2E - TTFT) / (output
tokens - 1)), and output tokens per second over a run; summaries give mean, P50, P95 and P99.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from hsa.model.hook_runner import HookVerdict


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One chat-completion request as the endpoint answered it (after any retries)."""

    index: int  # 0-based, per conversation
    latency_s: float  # end to end, of the attempt that answered
    ttft_s: float | None = None  # streaming only
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    attempts: int = 1  # 1 + retries
    waited_s: float = 0.0  # backoff between attempts
    finish_reason: str | None = None

    @property
    def tpot_s(self) -> float | None:
        if self.ttft_s is None or not self.completion_tokens or self.completion_tokens < 2:
            return None
        return (self.latency_s - self.ttft_s) / (self.completion_tokens - 1)

    def to_dict(self) -> dict:
        return {**asdict(self), "tpot_s": self.tpot_s}


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """How one tool call was answered. ``source`` says by what: ``skill`` (the skill loader),
    ``code`` (a Python implementation), ``replay`` (a recorded result), ``fault:<kind>`` (an
    injected fault), ``hook`` (a failing ``tool_call`` hook's feedback instead of the call), or
    ``error`` (nothing could answer it: unknown tool, unmatched call, bad arguments)."""

    call_id: str
    name: str
    arguments: str
    content: str
    source: str
    error: bool = False
    seconds: float = 0.0
    hook: str | None = None  # the failing hook whose message answers the call (source "hook")
    # ``tool_result`` hooks on the result, passing or failing. A failing one leaves the result as
    # it is (the call ran, and was no mistake) and says why after the step's results, as a
    # user-side message named after it.
    result_hooks: tuple[HookVerdict, ...] = ()

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class UserTurn:
    """A user message entering the conversation (``turn`` counts them from 0), with the verdicts
    of the ``user_message`` hooks on it."""

    turn: int
    message: dict
    hooks: tuple[HookVerdict, ...] = ()

    def to_dict(self) -> dict:
        return {
            "turn": self.turn,
            "message": self.message,
            "hooks": [h.to_dict() for h in self.hooks],
        }


@dataclass(frozen=True, slots=True)
class Step:
    """One assistant message. It is ``accepted`` when every hook on it passed; ``position`` is
    its place among the accepted steps of its user turn (None for a step a hook sent back), which
    is how gold turns find the step they judge. ``at`` is its index in the conversation."""

    index: int
    turn: int
    position: int | None
    at: int
    request: int
    message: dict
    hooks: tuple[HookVerdict, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.position is not None

    @property
    def final(self) -> bool:
        """A reply (no tool call) the hooks accepted: the user turn is over."""
        return self.accepted and not self.message.get("tool_calls")

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "turn": self.turn,
            "position": self.position,
            "at": self.at,
            "request": self.request,
            "message": self.message,
            "hooks": [h.to_dict() for h in self.hooks],
        }


# How a conversation ended.
DONE = "done"  # every user turn got a final reply
STOPPED = "stopped"  # the caller stopped it (a rollout that has judged enough)
STEP_LIMIT = "step_limit"  # the model used every step it was allowed
HOOK_ERROR = "hook_error"  # a hook raised or returned something that is not a verdict
ENDPOINT_ERROR = "endpoint_error"


@dataclass
class Trajectory:
    """A whole conversation: its messages (no system prompt: that is rendered from the harness),
    and every record in the order it happened."""

    id: str
    messages: list[dict] = field(default_factory=list)
    turns: list[UserTurn] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    tools: list[ToolOutcome] = field(default_factory=list)
    requests: list[RequestRecord] = field(default_factory=list)
    status: str | None = None
    reason: str = ""

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "status": self.status,
            "reason": self.reason,
            "messages": self.messages,
            "turns": [t.to_dict() for t in self.turns],
            "steps": [s.to_dict() for s in self.steps],
            "tools": [t.to_dict() for t in self.tools],
            "requests": [r.to_dict() for r in self.requests],
        }


@dataclass(frozen=True, slots=True)
class End:
    """The last record of a conversation."""

    status: str
    reason: str = ""


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) with linear interpolation between closest ranks (numpy's
    default), or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _distribution(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "mean": sum(values) / len(values),
        **{f"p{q}": percentile(values, q) for q in (50, 95, 99)},
    }


def summarize_requests(requests: list[RequestRecord], wall_s: float | None = None) -> dict:
    """Counts, token totals and latency distributions (E2E, TTFT, TPOT) of many requests;
    ``output_tokens_per_s`` over ``wall_s`` when given (the run's wall-clock time)."""
    completion = sum(r.completion_tokens or 0 for r in requests)
    out: dict[str, Any] = {
        "requests": len(requests),
        "retries": sum(r.attempts - 1 for r in requests),
        "prompt_tokens": sum(r.prompt_tokens or 0 for r in requests),
        "completion_tokens": completion,
        "e2e_s": _distribution([r.latency_s for r in requests]),
        "ttft_s": _distribution([r.ttft_s for r in requests if r.ttft_s is not None]),
        "tpot_s": _distribution([r.tpot_s for r in requests if r.tpot_s is not None]),
    }
    if wall_s:
        out["output_tokens_per_s"] = completion / wall_s
    return out
