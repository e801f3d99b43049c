"""Reward functions for TRL's ``GRPOTrainer``, computed from gold by the one scorer.

Each completion is parsed once into an assistant message (:func:`hsa.trainers.chat.parse_completion`,
from its token ids, with the row's tools) and judged once by :func:`hsa.model.scorer.judge` under the
row's own harness variant, rebuilt from its lineage. The rewards read that judgement:

==========  ===================================================================================
exact       1.0 when BFCL's verdict is correct, else 0.0
partial     mean of the partial credit for call names, fully correct arguments and call count
format      share of the calls that name a tool of the harness and whose arguments validate
            against its schema; 0.0 for a tool call that does not parse; None without a call
skills      1.0 when exactly the gold's skills are loaded; None when the turn names none
reply       1.0 when the text meets the turn's reply constraints; None when it has none
hooks       1.0 when every hook of the harness on the completion's event accepts it
            (``tool_call`` hooks on each call, ``reply`` hooks on a reply; the payloads the
            runtime sends, as evaluation builds them), else 0.0; None when the harness has no
            hook for that event. Runs hooks.py: needs ``trust_hooks``
==========  ===================================================================================

None means "does not apply": TRL leaves it out of the weighted sum (NaN) instead of counting 0.
Reward functions receive the dataset's ``hsa_row`` and ``hsa_at`` columns (repeated per
generation), which name the judged turn.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from hsa.errors import HsaError
from hsa.model.harness import Harness
from hsa.model.hook_runner import HookRunner, complies
from hsa.model.scorer import Judgement, judge, message_calls
from hsa.model.tool import schema_validator
from hsa.trainers.chat import parse_completion
from hsa.trainers.recipe import REWARDS
from hsa.trainers.version import JudgedTurn, JudgedTurns


@dataclass(frozen=True)
class Scored:
    """One completion of one judged turn, parsed and judged."""

    turn: JudgedTurn
    harness: Harness
    message: dict
    malformed: bool  # it opened a tool call that did not parse
    judgement: Judgement


class RewardSet:
    """The rewards of one training run over a version's judged turns."""

    def __init__(self, turns: JudgedTurns, tokenizer, *, trust_hooks: bool = False):
        self.turns, self.tokenizer, self.trust_hooks = turns, tokenizer, trust_hooks
        self._cache: OrderedDict[tuple, Scored] = OrderedDict()
        self._runners: dict[str, HookRunner] = {}

    def functions(self, names: list[str] | tuple[str, ...] = REWARDS) -> list:
        """Reward callables in TRL's signature, named as TRL logs them (``rewards/<name>/mean``)."""
        unknown = [n for n in names if n not in REWARDS]
        if unknown:
            raise HsaError(f"unknown reward(s) {unknown}; rewards: {', '.join(REWARDS)}")
        if "hooks" in names and not self.trust_hooks:
            raise HsaError(
                "the hooks reward runs each harness's hooks.py (code): pass "
                "--trust-hooks after reading it, or set rewards.hooks=0"
            )
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

    def hook_runner(self, row_id: str, harness: Harness) -> HookRunner:
        runner = self._runners.get(row_id)
        if runner is None:
            runner = self._runners[row_id] = HookRunner(harness)
        return runner

    def value(self, name: str, scored: Scored) -> float | None:
        return _VALUES[name](self, scored)


class _RewardFunction:
    def __init__(self, rewards: RewardSet, name: str):
        self.rewards, self.name = rewards, name
        self.__name__ = name  # TRL names its logged metrics after the function

    def __call__(
        self,
        prompts: list[str],
        completions: list,
        completion_ids: list[list[int]],
        hsa_row: list[str],
        hsa_at: list[int],
        **_: Any,
    ) -> list[float | None]:
        return [
            self.rewards.value(self.name, self.rewards.scored(p, ids, row, at))
            for p, ids, row, at in zip(prompts, completion_ids, hsa_row, hsa_at, strict=True)
        ]


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
        if (
            tool is not None
            and isinstance(arguments, dict)
            and schema_validator(tool.parameters).is_valid(arguments)
        ):
            valid += 1
    return valid / len(calls)


def _skills(_: RewardSet, s: Scored) -> float | None:
    return s.judgement.partial["skills"]


def _reply(_: RewardSet, s: Scored) -> float | None:
    return s.judgement.partial["reply"]


def _hooks(rewards: RewardSet, s: Scored) -> float | None:
    passed = complies(
        rewards.hook_runner(s.turn.row_id, s.harness), tuple(s.turn.prompt), s.message
    )
    return None if passed is None else float(passed)


_VALUES = {
    "exact": _exact,
    "partial": _partial,
    "format": _format,
    "skills": _skills,
    "reply": _reply,
    "hooks": _hooks,
}
