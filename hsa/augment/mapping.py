"""The identifier mapping of a variant: which skill, tool, parameter and hook names became what.

A mapping goes from the names on its input side to the names on its output side. Parameter renames
are keyed by the tool's name on the input side. Mappings compose (``first.then(second)``) and
invert, and can be applied to gold: verification checks that the variant's gold, mapped back
through the inverse, is the original gold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

from hsa.model.frozen import replace
from hsa.model.gold import Gold, GoldCall, TurnGold

KINDS = ("skills", "tools", "hooks")


def _clean(renames: dict) -> dict:
    return {k: v for k, v in renames.items() if k != v}


@dataclass(frozen=True)
class Mapping:
    """old -> new names, per kind; only real renames are kept."""

    skills: dict = field(default_factory=dict)
    tools: dict = field(default_factory=dict)
    parameters: dict = field(default_factory=dict)  # input-side tool name -> {old: new}
    hooks: dict = field(default_factory=dict)

    def __post_init__(self):
        for kind in KINDS:
            object.__setattr__(self, kind, _clean(getattr(self, kind)))
        params = {tool: _clean(renames) for tool, renames in self.parameters.items()}
        object.__setattr__(self, "parameters", {t: r for t, r in params.items() if r})

    def __bool__(self) -> bool:
        return any((self.skills, self.tools, self.parameters, self.hooks))

    # ---- algebra ---------------------------------------------------------------------------

    def then(self, step: Mapping) -> Mapping:
        """This mapping followed by ``step`` (whose input side is this one's output side)."""
        if not step:
            return self
        if not self:
            return step
        out = {}
        for kind in KINDS:
            first, second = getattr(self, kind), getattr(step, kind)
            merged = {old: second.get(new, new) for old, new in first.items()}
            produced = set(first.values())
            for old, new in second.items():
                if old not in produced and old not in merged:
                    merged[old] = new
            out[kind] = merged
        back = {new: old for old, new in self.tools.items()}
        params: dict[str, dict] = {}
        for tool in set(self.parameters) | {back.get(t, t) for t in step.parameters}:
            current = self.tools.get(tool, tool)
            first = self.parameters.get(tool, {})
            second = step.parameters.get(current, {})
            merged = {old: second.get(new, new) for old, new in first.items()}
            produced = set(first.values())
            for old, new in second.items():
                if old not in produced and old not in merged:
                    merged[old] = new
            params[tool] = merged
        return Mapping(parameters=params, **out)

    def inverse(self) -> Mapping:
        """new -> old names (made once per mapping: verification asks it of every variant)."""
        return self._inverse

    @cached_property
    def _inverse(self) -> Mapping:
        return Mapping(
            skills={v: k for k, v in self.skills.items()},
            tools={v: k for k, v in self.tools.items()},
            hooks={v: k for k, v in self.hooks.items()},
            parameters={
                self.tools.get(tool, tool): {v: k for k, v in renames.items()}
                for tool, renames in self.parameters.items()
            },
        )

    # ---- application -----------------------------------------------------------------------

    def tool(self, name: str) -> str:
        return self.tools.get(name, name)

    def skill(self, skill_id: str) -> str:
        return self.skills.get(skill_id, skill_id)

    def parameter(self, tool: str, param: str) -> str:
        """``param`` of the input-side tool ``tool``, renamed."""
        return self.parameters.get(tool, {}).get(param, param)

    def apply_to_call(self, call: GoldCall) -> GoldCall:
        """``call`` renamed; the same object when the mapping names neither its tool nor its
        parameters (gold is frozen, so sharing it is safe)."""
        renames = self.parameters.get(call.name)
        name = self.tools.get(call.name, call.name)
        if not renames:
            return call if name == call.name else GoldCall(name, call.arguments, call.omittable)
        return GoldCall(
            name=name,
            arguments={renames.get(k, k): v for k, v in call.arguments.items()},
            omittable=tuple(renames.get(p, p) for p in call.omittable),
        )

    def apply_to_gold(self, gold: Gold) -> Gold:
        if not self:
            return gold
        # A turn the mapping does not touch is kept as it is (most turns of a rename that
        # reaches one tool): equal either way, and no copy is made per variant. Verification
        # and every rename ask this of every variant, so the untouched case costs a lookup.
        turns: list[TurnGold] | None = None
        for k, turn in enumerate(gold.turns):
            renamed = self._renamed_turn(turn)
            if renamed is not turn:
                if turns is None:
                    turns = list(gold.turns)
                turns[k] = renamed
        return gold if turns is None else Gold(turns=tuple(turns))

    def _renamed_turn(self, turn: TurnGold) -> TurnGold:
        """``turn`` with the tools, parameters and skills it names renamed; the same object when
        it names none of them."""
        skills = self.skills
        calls = turn.calls
        touched_skills = bool(skills) and any(s in skills for s in turn.skills)
        names = self._call_names
        touched_calls = bool(names) and any(c.name in names for c in calls)
        if not (touched_skills or touched_calls):
            return turn
        return replace(
            turn,
            calls=tuple(self.apply_to_call(c) for c in calls) if touched_calls else calls,
            skills=tuple(self.skill(s) for s in turn.skills) if touched_skills else turn.skills,
        )

    @cached_property
    def _call_names(self) -> frozenset[str]:
        """The input-side tool names whose gold calls this mapping rewrites."""
        return frozenset(self.tools) | frozenset(self.parameters)

    def renamed(self) -> dict[str, dict[str, str]]:
        """Every old -> new name, per kind; parameters as ``tool.param``."""
        out = {kind: dict(getattr(self, kind)) for kind in KINDS}
        out["parameters"] = {
            f"{tool}.{old}": new
            for tool, renames in self.parameters.items()
            for old, new in renames.items()
        }
        return out

    # ---- serialisation ---------------------------------------------------------------------

    @cached_property
    def key(self) -> bytes:
        """The mapping as canonical bytes, for memos keyed by a mapping (its dicts do not hash)."""
        return orjson.dumps(self.to_dict(), option=orjson.OPT_SORT_KEYS)

    @cached_property
    def json(self) -> str:
        """:meth:`to_dict` as JSON text (a row's ``hsa_mapping``): made once per mapping, as
        every row of a harness variant whose later steps rename nothing shares its mapping."""
        return orjson.dumps(self.to_dict()).decode()

    def to_dict(self) -> dict:
        out: dict[str, Any] = {
            k: dict(sorted(getattr(self, k).items())) for k in KINDS if getattr(self, k)
        }
        if self.parameters:
            out["parameters"] = {
                t: dict(sorted(r.items())) for t, r in sorted(self.parameters.items())
            }
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Mapping:
        return cls(**{k: dict(v) for k, v in data.items()})


EMPTY = Mapping()
