"""The harness runtime: one conversation under a harness against any OpenAI-compatible endpoint.

Used by rollouts (teacher trajectories written as dataset versions), evaluation and ``hsa chat``.
It renders the system prompt with the datasets' renderer, offers the harness's tools and skill
loader, answers skill loads, runs hooks at their events (feedback and retry), executes tools by
code or replay (with faults on request), enforces a step limit and records every step. It holds no
dataset code.
"""

from hsa.model.hook_runner import HookError, HookRunner
from hsa.runtime.conversation import DEFAULT_MAX_STEPS, Conversation
from hsa.runtime.endpoint import ChatClient, Completion, Endpoint, EndpointError, Sampling
from hsa.runtime.faults import FAULT_KINDS, FaultInjector, FaultPlan
from hsa.runtime.records import (
    End,
    HookVerdict,
    RequestRecord,
    Step,
    ToolOutcome,
    Trajectory,
    UserTurn,
    summarize_requests,
)
from hsa.runtime.replay import ReplayTools, recorded_results
from hsa.runtime.tools import CallContext, CodeTools, ToolBelt, ToolResult, error_result

__all__ = [
    "DEFAULT_MAX_STEPS",
    "FAULT_KINDS",
    "CallContext",
    "ChatClient",
    "CodeTools",
    "Completion",
    "Conversation",
    "End",
    "Endpoint",
    "EndpointError",
    "FaultInjector",
    "FaultPlan",
    "HookError",
    "HookRunner",
    "HookVerdict",
    "ReplayTools",
    "RequestRecord",
    "Sampling",
    "Step",
    "ToolBelt",
    "ToolOutcome",
    "ToolResult",
    "Trajectory",
    "UserTurn",
    "error_result",
    "recorded_results",
    "summarize_requests",
]
