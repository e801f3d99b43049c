"""The agent loop: one conversation under a harness against an OpenAI-compatible endpoint.

For each user message: the ``user_message`` hooks run (a failing one's feedback follows the user
message as ``hook.<name>``); then the model is asked, with the harness rendered by the same
renderer as the datasets (hsa.render) and its tools plus the skill loader on offer, until it gives
a reply the hooks accept. Each assistant message is a :class:`~hsa.runtime.records.Step`:

* with tool calls: the ``tool_call`` hooks run on every call before anything runs. A blocked call
  is answered by the first failing hook's message (a ``tool`` message named ``hook.<name>``) and
  the step counts as sent back; the other calls run. The skill loader is answered with the
  skill's body; other calls go to the tool executors; then the ``tool_result`` hooks run. A
  failing one leaves the result as it is and the step stands (the call ran; a bad result is the
  tool's doing): its message follows the step's results as a ``user`` message named
  ``hook.<name>``;
* without tool calls (a reply): the ``reply`` hooks run; every failing one's message follows as a
  ``user`` message named ``hook.<name>`` and the model tries again; a reply every hook accepts
  ends the user turn.

Tool-call ids are renumbered ``call_1``, ``call_2``... in conversation order, so a conversation's
messages do not depend on the ids a server happens to make up. At most ``max_steps`` requests
are made. :meth:`Conversation.run` yields every record as it happens; the caller may stop at any
record (a step is yielded before its tools run), and the conversation's :class:`Trajectory` then
ends with that message.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, AsyncIterator, Iterable

import orjson

from hsa.augment.rng import derive_seed
from hsa.model.harness import Harness, loaded_skill
from hsa.model.hook import HOOK_MESSAGE_PREFIX
from hsa.model.hook_runner import HookError, HookRunner, hook_arguments
from hsa.model.message import message_text
from hsa.render import render_conversation
from hsa.runtime.endpoint import ChatClient, EndpointError
from hsa.runtime.records import (
    DONE,
    ENDPOINT_ERROR,
    HOOK_ERROR,
    STEP_LIMIT,
    STOPPED,
    End,
    HookVerdict,
    RequestRecord,
    Step,
    ToolOutcome,
    Trajectory,
    UserTurn,
)
from hsa.runtime.tools import CallContext, ToolExecutor, ToolResult, error_result

DEFAULT_MAX_STEPS = 24
Record = UserTurn | RequestRecord | Step | ToolOutcome | End


def _failed(verdicts: Iterable[HookVerdict]) -> list[HookVerdict]:
    return [v for v in verdicts if not v.ok]


async def _each(users: Iterable[dict] | AsyncIterable[dict]) -> AsyncIterator[dict]:
    if isinstance(users, AsyncIterable):
        async for user in users:
            yield user
    else:
        for user in users:
            yield user


class Conversation:
    """One conversation; create one per conversation (it holds its trajectory)."""

    def __init__(
        self,
        harness: Harness,
        client: ChatClient,
        tools: ToolExecutor,
        *,
        hooks: HookRunner | None = None,
        conversation_id: str = "chat",
        max_steps: int = DEFAULT_MAX_STEPS,
        prefix: Iterable[dict] = (),
    ):
        self.harness = harness
        self.client = client
        self.tools = tools
        self.hooks = hooks if hooks is not None else HookRunner(harness)
        self.max_steps = max_steps
        self.trajectory = Trajectory(conversation_id, messages=list(prefix))
        self._offered = harness.openai_tools()
        self._kinds = {s.id: s.kind for s in harness.skills}
        self._loaded: list[str] = []
        self._call_ids = 0
        self._tool_calls = 0

    @property
    def id(self) -> str:
        return self.trajectory.id

    async def run(self, users: Iterable[dict] | AsyncIterable[dict]) -> AsyncIterator[Record]:
        """Play the user messages ``users`` (OpenAI ``user`` messages, possibly read as the
        conversation goes), yielding every record. An :class:`EndpointError` propagates (the
        trajectory's status says so)."""
        record = self.trajectory
        try:
            turn = 0
            async for user in _each(users):
                async for item in self._user_turn(turn, user):
                    yield item
                    if isinstance(item, End):
                        return
                turn += 1
            record.status = DONE
            yield End(DONE)
        except EndpointError as exc:
            record.status, record.reason = ENDPOINT_ERROR, str(exc)
            raise
        except HookError as exc:
            record.status, record.reason = HOOK_ERROR, str(exc)
            yield End(HOOK_ERROR, str(exc))
        finally:
            if record.status is None:  # the caller stopped early
                record.status = STOPPED

    async def _user_turn(self, turn: int, user: dict) -> AsyncIterator[Record]:
        messages = self.trajectory.messages
        messages.append(user)
        text = message_text(user)
        verdicts = self.hooks.run("user_message", {"text": text, "turn": turn})
        for verdict in _failed(verdicts):
            messages.append(
                {
                    "role": "user",
                    "name": f"{HOOK_MESSAGE_PREFIX}{verdict.hook}",
                    "content": verdict.message,
                }
            )
        entry = UserTurn(turn, user, verdicts)
        self.trajectory.turns.append(entry)
        yield entry
        position = 0
        tools_called: list[str] = []
        while True:
            if len(self.trajectory.requests) >= self.max_steps:
                reason = f"the model used all {self.max_steps} steps without finishing"
                self.trajectory.status, self.trajectory.reason = STEP_LIMIT, reason
                yield End(STEP_LIMIT, reason)
                return
            message, request = await self._ask()
            yield request
            messages.append(message)
            calls = message.get("tool_calls") or []
            # What the conversation has done so far, read by reply and tool_call hooks alike (a
            # policy "load the refund skill before issue_refund" reads the skills loaded).
            context = {
                "user_message": text,
                "viewer_message": text,
                "loaded_skills": list(self._loaded),
                "skill_kinds": dict(self._kinds),
                "tools_called": list(tools_called),
                "skill_loader": self.harness.skill_loader,
            }
            if calls:
                checks = [
                    self.hooks.run("tool_call", {**context, **self._call_payload(call)})
                    for call in calls
                ]
                accepted = not any(_failed(c) for c in checks)
            else:
                checks = [self.hooks.run("reply", {**context, "reply": message_text(message)})]
                accepted = not _failed(checks[0])
            step = Step(
                index=len(self.trajectory.steps),
                turn=turn,
                position=position if accepted else None,
                at=len(messages) - 1,
                request=request.index,
                message=message,
                hooks=tuple(v for c in checks for v in c),
            )
            position += accepted
            self.trajectory.steps.append(step)
            yield step
            if not calls:
                if accepted:
                    return
                for verdict in _failed(checks[0]):
                    messages.append(
                        {
                            "role": "user",
                            "name": f"{HOOK_MESSAGE_PREFIX}{verdict.hook}",
                            "content": verdict.message,
                        }
                    )
                continue
            about_results: list[HookVerdict] = []
            for call, check in zip(calls, checks, strict=True):
                outcome = await self._answer(call, _failed(check), tools_called)
                self.trajectory.tools.append(outcome)
                answer = {
                    "role": "tool",
                    "tool_call_id": outcome.call_id,
                    "content": outcome.content,
                }
                if outcome.hook is not None:
                    answer["name"] = f"{HOOK_MESSAGE_PREFIX}{outcome.hook}"
                messages.append(answer)
                about_results.extend(_failed(outcome.result_hooks))
                yield outcome
            # A result a tool_result hook fails is the tool's doing, not the model's: the step
            # stands, and the feedback follows the step's results from the user side (as after
            # a reply), where hook_rejected reads it as being about them.
            messages.extend(
                {"role": "user", "name": f"{HOOK_MESSAGE_PREFIX}{v.hook}", "content": v.message}
                for v in about_results
            )

    async def _ask(self):
        index = len(self.trajectory.requests)
        sampling = self.client.endpoint.sampling
        seed = (
            None
            if sampling.seed is None
            else derive_seed(sampling.seed, self.id, index, "request") % 2**31
        )
        completion = await self.client.complete(
            render_conversation(self.harness, self.trajectory.messages),
            self._offered,
            index=index,
            request_id=f"{self.id}:{index}",
            seed=seed,
        )
        self.trajectory.requests.append(completion.record)
        message = completion.message
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                self._call_ids += 1
                calls.append({**call, "id": f"call_{self._call_ids}"})
            message = {**message, "tool_calls": calls}
        return message, completion.record

    def _call_payload(self, call: dict) -> dict:
        fn = call["function"]
        name = fn["name"]
        tool = (
            self.harness.loader_tool()
            if name == self.harness.skill_loader
            else self.harness.tool(name)
        )
        return {
            "tool_name": name,
            "arguments": hook_arguments(fn["arguments"]),
            "parameters": None if tool is None else tool.parameters,
            "call_id": call["id"],
        }

    async def _answer(
        self, call: dict, blocked: list[HookVerdict], tools_called: list[str]
    ) -> ToolOutcome:
        fn = call["function"]
        name, raw = fn["name"], fn["arguments"]

        def outcome(
            result: ToolResult,
            seconds: float = 0.0,
            hook: str | None = None,
            result_hooks: tuple[HookVerdict, ...] = (),
        ):
            return ToolOutcome(
                call["id"],
                name,
                str(raw),
                result.content,
                result.source,
                result.error,
                seconds,
                hook,
                result_hooks,
            )

        if blocked:
            return outcome(ToolResult(blocked[0].message, "hook", True), hook=blocked[0].hook)
        arguments = hook_arguments(raw)
        start = time.perf_counter()
        if not isinstance(arguments, dict):
            result = error_result(
                "bad_arguments", f"arguments of {name} are not a JSON object: {str(raw)[:200]}"
            )
        elif name == self.harness.skill_loader and self.harness.skills:
            result = self._load_skill(arguments)
        elif self.harness.tool(name) is None:
            # Only the harness's tools run: a tools.py may hold helpers the model must not call,
            # and a name the model made up is its mistake, said as such.
            result = error_result(
                "unknown_tool",
                f"{name!r} is no tool of this harness; its tools: "
                + ", ".join(self.harness.tool_names),
            )
        else:
            result = await self.tools(name, arguments, CallContext(self.id, self._tool_calls))
            self._tool_calls += 1
            tools_called.append(name)
        seconds = time.perf_counter() - start
        payload = {
            **self._call_payload(call),
            "result": result.content,
            "error": result.error,
            "source": result.source,
        }
        return outcome(result, seconds, result_hooks=self.hooks.run("tool_result", payload))

    def _load_skill(self, arguments: dict) -> ToolResult:
        skill_id = loaded_skill(arguments)
        if skill_id is None:  # as the scorer judges it (wrong_skills)
            return error_result(
                "bad_arguments",
                f"{self.harness.skill_loader} takes exactly one argument, name (a skill id: "
                f"{', '.join(self.harness.skill_ids)}), got {orjson.dumps(arguments).decode()[:80]}",
                "skill",
            )
        skill = self.harness.skill(skill_id)
        if skill is None:
            return error_result(
                "unknown_skill",
                f"no skill {skill_id!r}; the skills are: {', '.join(self.harness.skill_ids)}",
                "skill",
            )
        self._loaded.append(skill.id)
        return ToolResult(skill.content, "skill")
