"""Reward functions for TRL's ``GRPOTrainer``, computed from gold by the one scorer.

Each completion is parsed once into an assistant message (:func:`trainers.chat.parse_completion`,
from its token ids, with the row's tools) and judged once by :func:`hsa.scorer.judge` under the
row's own harness variant, rebuilt from its lineage. The rewards read that judgement:

==========  ===================================================================================
exact       1.0 when BFCL's verdict is correct, else 0.0
partial     mean of the partial credit for call names, fully correct arguments and call count
format      share of the calls that name a tool of the harness and whose arguments validate
            against its schema; 0.0 for a tool call that does not parse; None without a call
skills      1.0 when exactly the gold's skills are loaded; None when the turn names none
reply       1.0 when the text meets the turn's reply constraints; None when it has none
hooks       share of the harness's hooks that pass on the completion (``tool_call`` hooks on
            each call, ``reply`` hooks on a reply); None when no hook runs. Runs hooks.py: needs
            ``trust_hooks``
==========  ===================================================================================

None means "does not apply": TRL leaves it out of the weighted sum (NaN) instead of counting 0.
Reward functions receive the dataset's ``hsa_row`` and ``hsa_at`` columns (repeated per
generation), which name the judged turn.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from hsa.errors import HsaError, HooksNotTrustedError
from hsa.harness import Harness
from hsa.hook import Hook
from hsa.rename import HOOK_MESSAGE_PREFIX
from hsa.scorer import Judgement, judge, message_calls, message_text
from hsa.tool import schema_validator
from trainers.chat import parse_completion
from trainers.recipe import REWARDS
from trainers.version import JudgedTurn, JudgedTurns


@dataclass(frozen=True)
class Scored:
    """One completion of one judged turn, parsed and judged."""

    turn: JudgedTurn
    harness: Harness
    message: dict
    malformed: bool        # it opened a tool call that did not parse
    judgement: Judgement


class RewardSet:
    """The rewards of one training run over a version's judged turns."""

    def __init__(self, turns: JudgedTurns, tokenizer, *, trust_hooks: bool = False):
        self.turns, self.tokenizer, self.trust_hooks = turns, tokenizer, trust_hooks
        self._cache: OrderedDict[tuple, Scored] = OrderedDict()

    def functions(self, names: list[str] | tuple[str, ...] = REWARDS) -> list:
        """Reward callables in TRL's signature, named as TRL logs them (``rewards/<name>/mean``)."""
        unknown = [n for n in names if n not in REWARDS]
        if unknown:
            raise HsaError(f"unknown reward(s) {unknown}; rewards: {', '.join(REWARDS)}")
        if "hooks" in names and not self.trust_hooks:
            raise HsaError("the hooks reward runs each harness's hooks.py (code): pass "
                           "--trust-hooks after reading it, or set rewards.hooks=0")
        return [_RewardFunction(self, name) for name in names]

    def scored(self, prompt: str, completion_ids: list[int], row_id: str, at: int) -> Scored:
        key = (row_id, at, tuple(completion_ids))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        turn = self.turns.get(row_id, at)
        harness = self.turns.harness(row_id)
        message, malformed = parse_completion(self.tokenizer, completion_ids, prompt, turn.tools)
        scored = Scored(turn, harness, message, malformed, judge(message, turn.gold, harness))
        self._cache[key] = scored
        if len(self._cache) > 4096:  # a few generation batches; every reward reads each once
            self._cache.popitem(last=False)
        return scored

    def value(self, name: str, scored: Scored) -> float | None:
        return _VALUES[name](self, scored)


class _RewardFunction:
    def __init__(self, rewards: RewardSet, name: str):
        self.rewards, self.name = rewards, name
        self.__name__ = name  # TRL names its logged metrics after the function

    def __call__(self, prompts: list[str], completions: list, completion_ids: list[list[int]],
                 hsa_row: list[str], hsa_at: list[int], **_: Any) -> list[float | None]:
        return [self.rewards.value(self.name, self.rewards.scored(p, ids, row, at))
                for p, ids, row, at in zip(prompts, completion_ids, hsa_row, hsa_at, strict=True)]


# ---- the rewards ------------------------------------------------------------------------------

def _exact(_: RewardSet, s: Scored) -> float:
    return float(s.judgement.correct)


def _partial(_: RewardSet, s: Scored) -> float:
    parts = [s.judgement.partial[k] for k in ("name", "arguments", "count")]
    return sum(parts) / len(parts)


def _format(_: RewardSet, s: Scored) -> float | None:
    if s.malformed:
        return 0.0
    calls = message_calls(s.message)
    if not calls:
        return None
    tools = {t.name: t for t in s.harness.all_tools()}
    valid = 0
    for name, arguments in calls:
        tool = tools.get(name)
        if tool is not None and isinstance(arguments, dict) and \
                schema_validator(tool.parameters).is_valid(arguments):
            valid += 1
    return valid / len(calls)


def _skills(_: RewardSet, s: Scored) -> float | None:
    return s.judgement.partial["skills"]


def _reply(_: RewardSet, s: Scored) -> float | None:
    return s.judgement.partial["reply"]


def _hooks(_: RewardSet, s: Scored) -> float | None:
    results = run_hooks(s.harness, s.turn.prompt, s.message)
    return sum(results) / len(results) if results else None


_VALUES = {"exact": _exact, "partial": _partial, "format": _format, "skills": _skills,
           "reply": _reply, "hooks": _hooks}


# ---- hooks on a completion --------------------------------------------------------------------

def run_hooks(harness: Harness, prompt: list[dict], message: dict) -> list[bool]:
    """Run the harness's hooks on an assistant message as the agent loop would: every
    ``tool_call`` hook on each call, every ``reply`` hook on a message without calls. Returns one
    pass/fail per hook run. A hook that raises counts as failed: a completion must not pass a
    check because the check broke.

    Payloads carry what a hook may ask about the event: for ``tool_call``, ``tool_name``,
    ``arguments`` and the tool's ``parameters`` schema; for ``reply``, the ``reply`` text, the
    ``viewer_message`` it answers (the last user message that is not hook feedback), the
    ``loaded_skills`` so far, every skill's kind (``skill_kinds``), the domain ``tools_called``
    since that message, and the ``skill_loader``'s name."""
    if not harness.hooks:
        return []
    try:
        functions = harness.hook_functions()
    except HooksNotTrustedError:
        raise HsaError("the hooks reward needs the harness's hooks.py imported: pass "
                       "--trust-hooks") from None
    calls = message_calls(message)
    results = []
    if calls:
        for hook in _hooks_on(harness, "tool_call"):
            for name, arguments in calls:
                tool = next((t for t in harness.all_tools() if t.name == name), None)
                payload = {"tool_name": name, "arguments": arguments,
                           "parameters": tool.parameters if tool else {}}
                results.append(_passes(functions[hook.name], payload, hook))
        return results
    payload = _reply_payload(harness, prompt, message)
    for hook in _hooks_on(harness, "reply"):
        results.append(_passes(functions[hook.name], payload, hook))
    return results


def _hooks_on(harness: Harness, event: str) -> list[Hook]:
    return [h for h in harness.hooks if h.event == event]


def _passes(function, payload: dict, hook: Hook) -> bool:
    try:
        result = function(payload, dict(hook.config))
    except Exception:
        return False
    return isinstance(result, dict) and result.get("ok") is True


def _reply_payload(harness: Harness, prompt: list[dict], message: dict) -> dict:
    loader = harness.skill_loader
    loaded: list[str] = []
    since_viewer: list[str] = []
    viewer = ""
    for m in prompt:
        name = m.get("name")
        if m.get("role") == "user" and not (isinstance(name, str)
                                            and name.startswith(HOOK_MESSAGE_PREFIX)):
            viewer, since_viewer = message_text(m), []
        for call_name, arguments in message_calls(m) if m.get("role") == "assistant" else ():
            if call_name == loader:
                skill = arguments.get("name") if isinstance(arguments, dict) else None
                if isinstance(skill, str):
                    loaded.append(skill)
            else:
                since_viewer.append(call_name)
    return {"reply": message_text(message), "viewer_message": viewer,
            "loaded_skills": loaded, "skill_kinds": {s.id: s.kind for s in harness.skills},
            "tools_called": since_viewer, "skill_loader": loader}
