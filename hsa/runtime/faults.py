"""Fault injection: tool calls that time out, return malformed results or are refused, on request,
to see whether a model recovers.

A :class:`FaultPlan` gives each fault kind a probability per tool call. Whether a call faults is
drawn from a generator derived from (plan seed, conversation id, call index), so the same
conversation gets the same faults in any order, at any concurrency and after a resume. Faults hit
domain tools only: skill loads are the harness's own content. What the model sees:

* ``timeout``: ``{"error": "timeout", "message": "<tool> did not answer in time ..."}``;
* ``malformed``: the real result cut in half (JSON that does not parse);
* ``permission_denied``: ``{"error": "permission_denied", "message": ...}``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hsa.augment.mapping import EMPTY, Mapping
from hsa.augment.rng import derive_rng
from hsa.errors import HsaError
from hsa.runtime.tools import CallContext, ToolExecutor, ToolResult, error_result

FAULT_KINDS = ("timeout", "malformed", "permission_denied")


@dataclass(frozen=True)
class FaultPlan:
    """Fault kind -> probability per call; ``tools`` limits faults to those tools (by their
    original names; empty: every tool)."""

    rates: tuple[tuple[str, float], ...]
    tools: tuple[str, ...] = ()
    seed: int = 0

    def __post_init__(self):
        total = 0.0
        seen: set[str] = set()
        for kind, rate in self.rates:
            if kind not in FAULT_KINDS:
                raise HsaError(
                    f"unknown fault {kind!r}; known: {', '.join(FAULT_KINDS)}", field="faults"
                )
            if kind in seen:
                raise HsaError(f"fault {kind} is given twice", field="faults")
            seen.add(kind)
            if not 0.0 <= rate <= 1.0:
                raise HsaError(
                    f"fault rate of {kind} must be within [0, 1], got {rate}", field="faults"
                )
            total += rate
        if total > 1.0:
            raise HsaError(f"fault rates add up to {total:g}; at most 1", field="faults")
        # One plan, one order: the draw splits [0, 1) in this order, and the plan's identity (a
        # rollout version's) does not depend on how the kinds were written.
        canonical = tuple(sorted(self.rates, key=lambda kr: FAULT_KINDS.index(kr[0])))
        object.__setattr__(self, "rates", canonical)

    @classmethod
    def parse(cls, spec: str, *, seed: int = 0, tools: tuple[str, ...] = ()) -> FaultPlan:
        """``"timeout=0.1,malformed=0.05"``; a kind without a rate means 1 (every call)."""
        rates = []
        for part in filter(None, (p.strip() for p in spec.split(","))):
            kind, _, rate = part.partition("=")
            try:
                rates.append((kind.strip(), float(rate) if rate else 1.0))
            except ValueError:
                raise HsaError(
                    f"fault rate {rate!r} of {kind.strip()} is not a number", field="faults"
                ) from None
        return cls(tuple(rates), tuple(tools), seed)

    def to_dict(self) -> dict:
        return {"rates": dict(self.rates), "tools": list(self.tools), "seed": self.seed}

    def draw(self, conversation_id: str, index: int) -> str | None:
        """The fault of call ``index`` of a conversation, or None."""
        value = derive_rng(self.seed, conversation_id, index, "fault").random()
        for kind, rate in self.rates:
            if value < rate:
                return kind
            value -= rate
        return None


class FaultInjector:
    """Wraps an executor: calls the plan picks get a fault instead of (or made from) the result."""

    def __init__(self, inner: ToolExecutor, plan: FaultPlan, *, mapping: Mapping = EMPTY):
        self.inner, self.plan = inner, plan
        self.back = mapping.inverse()

    async def __call__(self, name: str, arguments: dict, context: CallContext) -> ToolResult:
        kind = None
        if not self.plan.tools or self.back.tool(name) in self.plan.tools:
            kind = self.plan.draw(context.conversation_id, context.index)
        if kind == "timeout":
            return error_result(
                "timeout",
                f"{name} did not answer in time; the call may be retried",
                "fault:timeout",
            )
        if kind == "permission_denied":
            return error_result(
                "permission_denied",
                f"this agent is not allowed to call {name}",
                "fault:permission_denied",
            )
        result = await self.inner(name, arguments, context)
        if kind == "malformed":
            text = result.content if result is not None else '{"result": "'
            return ToolResult(text[: max(1, len(text) // 2)], "fault:malformed", True)
        return result
