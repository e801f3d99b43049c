"""Gold: what counts as solving an episode, turn by turn.

A :class:`TurnGold` judges one assistant message: the one at index ``at`` of the episode's
messages, whose prompt is ``messages[:at]`` (``at == len(messages)`` means the episode is a prompt
waiting for that message, as in BFCL). It expects exactly one of:

* tool calls (``calls``), each with the acceptable values of every parameter and the parameters
  that may be omitted; ``ordered`` says whether parallel calls must come in order;
* skills the message must load through the harness's skill loader (``skills``), alone or beside
  calls;
* no tool call at all (``no_call``), e.g. for an irrelevant request or a final reply;

plus optional ``reply`` constraints on the message's text. An episode's :class:`Gold` is one or more
turns; its single-turn form is written flat in JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from referencing.exceptions import Unresolvable

from hsa.errors import EpisodeError, HsaError
from hsa.model.schema import referenced
from hsa.model.tool import validation_problem, validator_within

_REPLY_KEYS = {"contains", "not_contains", "language", "max_chars"}
# The languages a reply constraint may name (ISO 639-1), each by the script it is written in:
# the scorer judges a reply's language by its script (hsa.model.scorer.check_reply), so two
# languages of one script (English, French) pass for each other; a reply in another script
# does not.
_SCRIPT_LANGUAGES = {
    "han": ("zh",),
    "japanese": ("ja",),
    "hangul": ("ko",),
    "latin": (
        *("en", "fr", "de", "es", "it", "pt", "nl", "sv", "da", "nb", "no", "fi", "is"),
        *("pl", "cs", "sk", "sl", "hr", "ro", "hu", "tr", "vi", "id", "ms", "tl", "ca"),
        *("et", "lv", "lt", "sq", "eu", "gl", "ga", "cy", "sw", "af"),
    ),
    "cyrillic": ("ru", "uk", "bg", "be", "mk", "kk", "mn"),
    "greek": ("el",),
    "arabic": ("ar", "fa", "ur"),
    "hebrew": ("he",),
    "devanagari": ("hi", "mr", "ne"),
    "thai": ("th",),
}
REPLY_LANGUAGES: dict[str, str] = {
    code: script for script, codes in _SCRIPT_LANGUAGES.items() for code in codes
}


@dataclass(frozen=True, slots=True)
class GoldCall:
    """One expected tool call: name, acceptable values per parameter, and omittable parameters."""

    name: str
    arguments: dict  # parameter -> list of acceptable values
    omittable: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.omittable:
            out["omittable"] = list(self.omittable)
        return out

    @classmethod
    def from_dict(cls, data: Any, *, where: str) -> GoldCall:
        if not isinstance(data, dict):
            raise EpisodeError("expected an object {name, arguments, omittable?}", field=where)
        unknown = set(data) - {"name", "arguments", "omittable"}
        if unknown:
            raise EpisodeError(
                f"unknown keys {sorted(unknown)}; allowed: name, arguments, omittable", field=where
            )
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise EpisodeError("name must be a non-empty string", field=f"{where}.name")
        arguments = data.get("arguments", {})
        if not isinstance(arguments, dict):
            raise EpisodeError(
                "arguments must map each parameter to a list of acceptable values",
                field=f"{where}.arguments",
            )
        for param, values in arguments.items():
            if not isinstance(values, list) or not values:
                raise EpisodeError(
                    "expected a non-empty list of acceptable values",
                    field=f"{where}.arguments.{param}",
                )
        omittable = data.get("omittable", [])
        if not isinstance(omittable, list) or not all(isinstance(p, str) for p in omittable):
            raise EpisodeError(
                "omittable must be a list of parameter names", field=f"{where}.omittable"
            )
        return cls(name=name, arguments=arguments, omittable=tuple(omittable))


@dataclass(frozen=True, slots=True)
class TurnGold:
    """What the assistant message at index ``at`` must do (see the module docstring)."""

    at: int
    calls: tuple[GoldCall, ...] = ()
    ordered: bool = False
    skills: tuple[str, ...] = ()
    no_call: bool = False
    reply: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"at": self.at}
        if self.calls:
            out["calls"] = [c.to_dict() for c in self.calls]
            if self.ordered:
                out["ordered"] = True
        if self.skills:
            out["skills"] = list(self.skills)
        if self.no_call:
            out["no_call"] = True
        if self.reply:
            out["reply"] = dict(self.reply)
        return out

    @classmethod
    def from_dict(cls, data: Any, *, where: str, default_at: int) -> TurnGold:
        if not isinstance(data, dict):
            raise EpisodeError("expected an object", field=where)
        unknown = set(data) - {"at", "calls", "ordered", "skills", "no_call", "reply"}
        if unknown:
            raise EpisodeError(
                f"unknown keys {sorted(unknown)}; allowed: at, calls, ordered, "
                f"skills, no_call, reply",
                field=where,
            )
        at = data.get("at", default_at)
        if not isinstance(at, int) or isinstance(at, bool) or at < 0:
            raise EpisodeError("at must be a message index (integer >= 0)", field=f"{where}.at")
        calls = data.get("calls", [])
        if not isinstance(calls, list):
            raise EpisodeError("calls must be a list", field=f"{where}.calls")
        skills = data.get("skills", [])
        if not isinstance(skills, list) or not all(isinstance(s, str) for s in skills):
            raise EpisodeError("skills must be a list of skill ids", field=f"{where}.skills")
        no_call = data.get("no_call", False)
        ordered = data.get("ordered", False)
        for key, value in (("no_call", no_call), ("ordered", ordered)):
            if not isinstance(value, bool):
                raise EpisodeError("must be true or false", field=f"{where}.{key}")
        if no_call and (calls or skills):
            raise EpisodeError(
                "no_call is true but calls or skills are given; choose one",
                field=f"{where}.no_call",
            )
        if not (no_call or calls or skills):
            raise EpisodeError("a turn must expect calls, skills, or no_call: true", field=where)
        reply = data.get("reply") or {}
        _check_reply(reply, where=f"{where}.reply")
        return cls(
            at=at,
            calls=tuple(
                GoldCall.from_dict(c, where=f"{where}.calls[{i}]") for i, c in enumerate(calls)
            ),
            ordered=ordered,
            skills=tuple(skills),
            no_call=no_call,
            reply=dict(reply),
        )


def _check_reply(reply: Any, *, where: str) -> None:
    if not isinstance(reply, dict):
        raise EpisodeError("reply constraints must be an object", field=where)
    unknown = set(reply) - _REPLY_KEYS
    if unknown:
        raise EpisodeError(
            f"unknown keys {sorted(unknown)}; allowed: {sorted(_REPLY_KEYS)}", field=where
        )
    for key in ("contains", "not_contains"):
        value = reply.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise EpisodeError("must be a list of strings", field=f"{where}.{key}")
    language = reply.get("language")
    if "language" in reply and not (isinstance(language, str) and language in REPLY_LANGUAGES):
        raise EpisodeError(
            f"language must be the ISO 639-1 code of a language the scorer judges by its "
            f"script, one of {', '.join(sorted(REPLY_LANGUAGES))}; got {language!r}",
            field=f"{where}.language",
        )
    if "max_chars" in reply and (not isinstance(reply["max_chars"], int) or reply["max_chars"] < 1):
        raise EpisodeError("max_chars must be a positive integer", field=f"{where}.max_chars")


@dataclass(frozen=True, slots=True)
class Gold:
    """All judged turns of an episode, in message order."""

    turns: tuple[TurnGold, ...]

    @property
    def skills(self) -> tuple[str, ...]:
        """Every skill the episode needs loaded, in first-use order."""
        return tuple(dict.fromkeys(s for t in self.turns for s in t.skills))

    @property
    def calls(self) -> tuple[GoldCall, ...]:
        return tuple(c for t in self.turns for c in t.calls)

    def turn(self, at: int | None = None) -> TurnGold:
        """The turn judged at message index ``at``; the first turn when ``at`` is None."""
        if at is None:
            return self.turns[0]
        for t in self.turns:
            if t.at == at:
                return t
        raise KeyError(at)

    def to_dict(self) -> dict:
        if len(self.turns) == 1:
            return self.turns[0].to_dict()
        return {"turns": [t.to_dict() for t in self.turns]}

    @classmethod
    def from_dict(cls, data: Any, *, n_messages: int, where: str = "gold") -> Gold:
        """Parse the flat single-turn form or ``{"turns": [...]}``; ``at`` defaults to the end."""
        if not isinstance(data, dict):
            raise EpisodeError("expected an object", field=where)
        if "turns" in data:
            if set(data) != {"turns"}:
                raise EpisodeError("with 'turns', put every other key inside a turn", field=where)
            raw = data["turns"]
            if not isinstance(raw, list) or not raw:
                raise EpisodeError("turns must be a non-empty list", field=f"{where}.turns")
            turns = tuple(
                TurnGold.from_dict(t, where=f"{where}.turns[{i}]", default_at=n_messages)
                for i, t in enumerate(raw)
            )
        else:
            turns = (TurnGold.from_dict(data, where=where, default_at=n_messages),)
        ats = [t.at for t in turns]
        if ats != sorted(set(ats)):
            raise EpisodeError(f"turn indices {ats} must be strictly increasing", field=where)
        return cls(turns=turns)


def is_pattern(value: Any) -> bool:
    """A dict acceptable value is a BFCL pattern: ``{key: [acceptable values]}``."""
    return isinstance(value, dict) and all(isinstance(v, list) for v in value.values())


def exact_value(value: Any) -> Any:
    """The acceptable value that accepts ``value`` alone, for gold taken from a recorded call.
    An object is written as the pattern of its own keys (a literal object whose values are all
    lists, ``{"tags": ["red", "blue"]}``, would read as a pattern: tags "red" or "blue"), and
    so is every object inside a list; anything else is itself."""
    if isinstance(value, dict):
        return {k: [exact_value(v)] for k, v in value.items()}
    if isinstance(value, list):
        return [exact_value(v) for v in value]
    return value


def exact_arguments(arguments: dict) -> dict:
    """A recorded call's arguments as gold: each one's acceptable values are exactly it."""
    return {k: [exact_value(v)] for k, v in arguments.items()}


def value_fits(value: Any, schema: Any, root: Any = None) -> bool:
    """Whether an acceptable gold value validates against a parameter's JSON Schema, a
    sub-schema of ``root`` (the tool's parameters: references resolve against it).

    Patterns (also as items of a list) are checked key by key: one acceptable value of a key
    the schema defines must fit that key's schema (``""``, "may be left out", always does), and
    the keys must be ones an object of the schema may have (:func:`_keys_problem`). A
    pattern meets a schema that names its object by reference, or offers it among ``anyOf`` or
    ``oneOf`` branches, through that object's schema: a branch it fits; and an object made of
    ``allOf`` branches through each of them."""
    return _fit(value, schema, root, explain=False) is None


def fit_problem(value: Any, schema: Any, root: Any = None) -> str | None:
    """Why an acceptable gold value does not fit its schema, read as :func:`value_fits` reads
    it (a pattern key by key, where the key's values are what the schema judges, never the
    pattern's lists of acceptable values), or None when it fits."""
    return _fit(value, schema, root, explain=True)


def _fit(value: Any, schema: Any, root: Any, *, explain: bool, hops: int = 0) -> str | None:
    """The one walk of :func:`value_fits` and :func:`fit_problem`: None when ``value`` fits;
    else why (``explain``), or a bare mark: most values that do not fit are BFCL variables
    that loading and verification ask about by the thousand, and no one reads why. ``hops``
    counts the references and branches followed without going into the value (a schema may
    refer to itself)."""
    root = schema if root is None else root
    if isinstance(schema, dict) and hops < _MAX_HOPS:
        if is_pattern(value):
            target = referenced(schema, root)
            if target is not None:
                return _fit(value, target, root, explain=explain, hops=hops + 1)
            if _describes_object(schema):
                properties = schema.get("properties") or {}
                if problem := _keys_problem(value, schema, properties, root, explain):
                    return problem
                for key, options in value.items():
                    # "" (the key may be left out) always fits
                    if (
                        key in properties
                        and "" not in options
                        and (problem := _none_fits(options, properties[key], root, explain))
                    ):
                        return f"{key}: {problem}"
                # what the object must also be, in the schemas it is all of
                for branch in schema.get("allOf") or ():
                    if problem := _fit(value, branch, root, explain=explain, hops=hops + 1):
                        return problem
                return None
            branches = [b for key in ("anyOf", "oneOf") for b in schema.get(key) or ()]
            if branches:
                problems = []
                for branch in branches:
                    problem = _fit(value, branch, root, explain=explain, hops=hops + 1)
                    if problem is None:
                        return None
                    problems.append(problem)
                return f"fits none of its {len(branches)} branches (first: {problems[0]})"
            return _problem(value, schema, root, explain)
        items = schema.get("items")
        if isinstance(value, list) and isinstance(items, dict) and any(map(is_pattern, value)):
            shell = {k: v for k, v in schema.items() if k != "items"}
            problem = _problem(value, shell, root, explain)
            if problem is not None:
                return problem
            for i, item in enumerate(value):
                if (problem := _fit(item, items, root, explain=explain)) is not None:
                    return f"[{i}]: {problem}"
            return None
    return _problem(value, schema, root, explain)


def _keys_problem(
    pattern: dict, schema: dict, properties: dict, root: Any, explain: bool
) -> str | None:
    """Why no object that matches ``pattern`` (BFCL's matching: only its keys, each left out
    only where ``""`` is acceptable) fits ``schema``'s keys, or None: a required key the pattern
    never gives, a key the schema does not allow (``additionalProperties: false``) or whose
    every value breaks the schema additional keys must fit. A branch of ``oneOf`` whose
    properties the pattern never names (a payout by bank account, given a check address) is
    no fit for it."""
    missing = [
        k
        for k in schema.get("required") or ()
        if isinstance(k, str) and (k not in pattern or pattern[k] in ([""], []))
    ]
    if missing:
        return f"requires {missing[0]!r}, which no acceptable value gives" if explain else _UNFIT
    if "patternProperties" in schema:
        return None  # which keys those allow is a validator's to say
    additional = schema.get("additionalProperties", True)
    for key, options in pattern.items():
        if key in properties or "" in options:
            continue
        if additional is False:
            return f"{key}: a key the schema does not allow" if explain else _UNFIT
        if isinstance(additional, dict) and (
            problem := _none_fits(options, additional, root, explain)
        ):
            return f"{key}: {problem}"
    return None


def _none_fits(options: list, schema: Any, root: Any, explain: bool) -> str | None:
    """The problem of the first of a key's acceptable ``options`` when none fits ``schema``,
    else None: one value that fits is enough, as for a parameter (a value of another type is a
    BFCL variable, which fits no schema)."""
    problems = [_fit(v, schema, root, explain=explain) for v in options]
    return problems[0] if problems and all(problems) else None


def _describes_object(schema: dict) -> bool:
    """Whether ``schema`` says its value is an object: its type (``"object"``, or a list
    holding it, as an optional object's ``["object", "null"]``), or, with no type, properties
    or ``allOf`` branches (Pydantic v1 writes a reference with siblings as
    ``{"allOf": [{"$ref": ...}]}``), which a pattern meets branch by branch."""
    kind = schema.get("type")
    if kind is None:
        return "properties" in schema or bool(schema.get("allOf"))
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


# What _fit says of a value that does not fit when no one asks why.
_UNFIT = "does not fit"

# References and branches a pattern may follow before it is checked as a plain value.
_MAX_HOPS = 16


def _problem(value: Any, schema: Any, root: Any, explain: bool) -> str | None:
    try:
        validator = validator_within(root, schema)
        if not explain:
            return None if validator.is_valid(value) else _UNFIT
        return validation_problem(value, validator)
    except Unresolvable as exc:  # a reference only a validation reaches (an anchor, an $id)
        raise HsaError(f"a $ref of the schema does not resolve: {exc}") from None
