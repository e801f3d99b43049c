"""Judge an assistant message against gold with the Berkeley Function Calling Leaderboard's AST rules.

Rules, in the order they are checked (the first that fails is the verdict's reason):

* ``arguments_not_json`` — every tool call's arguments parse to a JSON object;
* ``unexpected_call`` — a ``no_call`` turn (irrelevance, final reply) passes only with no call;
* ``wrong_skills`` — the skills loaded through the harness's skill loader are exactly the gold's,
  each loader call passing exactly a skill id as ``name``;
* ``wrong_call_count`` — as many (non-loader) calls as gold expects;
* per call (parallel calls matched in any order unless gold is ``ordered``):
  ``wrong_name`` (exact match), ``missing_required`` (schema's required present),
  ``unexpected_param`` (no parameter outside the schema and the gold), ``type_mismatch`` (strict
  JSON types: int -> float is the only coercion, a bool is never a number; array items checked
  one level deep; a value of the *gold's* type passes when the gold's type differs from the
  schema's, see :func:`type_check`), ``value_mismatch`` (strings compared after removing
  `` ,./-_*^``, lower-casing and reading ``'`` as ``"``; lists in order; dicts matched one level
  deep against ``{key: [acceptable values]}`` patterns in which ``""`` marks a key that may be left
  out, and a dict that is no such pattern compared key by key as one value; a gold "variable"
  compared exactly), ``missing_param`` (a gold parameter that is not
  omittable was left out);
* ``reply_constraint`` — the text contains what it must, avoids what it must not, is in the
  right language and not too long.

This module is the one scorer: evaluation and RL rewards call it too. :func:`judge` is its library
entry: the verdict plus a partial-credit breakdown; :func:`score_turn` is the verdict alone.

Where it deliberately differs from BFCL's checker (``ast_checker.py``): parallel calls are matched
one to one whenever such a matching exists, while BFCL's greedy pass can miss one when two gold
calls accept the same value (so any order of a correct set of calls passes here).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from hsa.errors import locate
from hsa.files.jsonl import read_lines
from hsa.model.gold import REPLY_LANGUAGES, GoldCall, TurnGold, is_pattern
from hsa.model.harness import Harness, loaded_skill
from hsa.model.message import message_text
from hsa.model.tool import Tool

if TYPE_CHECKING:  # episodes are read here, never built: the model's Episode imports this module
    from hsa.model.episode import Episode

_STRIP = re.compile(r"[ ,./\-_*^]")
OMIT_IN_DICT = ""  # BFCL's marker, inside dict patterns, for a key that may be left out


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome for one message: correct, or the first rule that failed and why."""

    correct: bool
    rule: str | None = None
    detail: str = ""

    @property
    def reason(self) -> str:
        return "ok" if self.correct else f"{self.rule}: {self.detail}"


OK = Verdict(True)


def _fail(rule: str, detail: str) -> Verdict:
    return Verdict(False, rule, detail)


def normalize_string(value: str) -> str:
    """BFCL's string normalisation: drop `` ,./-_*^``, lower-case, read ``'`` as ``"``."""
    return _STRIP.sub("", value).lower().replace("'", '"')


def message_calls(message: dict) -> list[tuple[Any, Any]]:
    """(name, arguments) for each tool call; both stay raw (a model may write any JSON there)."""
    out = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        fn = fn if isinstance(fn, dict) else {}
        out.append((fn.get("name"), fn.get("arguments", "{}")))
    return out


def _decode(arguments: Any) -> dict | None:
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str | bytes):
        return None
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class Judgement:
    """BFCL's verdict on one message, and partial credit for rewards that need a gradient.

    ``partial`` holds shares in [0, 1], or None where the turn does not ask for that part:

    * ``name``: gold calls matched one to one by a call of the right name;
    * ``arguments``: gold calls matched one to one by a fully correct call;
    * ``count``: 1.0 when the message makes as many (non-loader) calls as the gold, else 0.0;
    * ``skills``: 1.0 when exactly the gold's skills are loaded (None: the turn names none);
    * ``reply``: 1.0 when the text meets the reply constraints (None: the turn has none).

    On a turn that expects no call (or only skills), ``name``, ``arguments`` and ``count`` are 1.0
    for a message without calls and 0.0 otherwise."""

    verdict: Verdict
    partial: dict[str, float | None]

    @property
    def correct(self) -> bool:
        return self.verdict.correct


Calls = list[tuple[Any, Any]]  # (name, arguments) pairs; arguments raw or decoded


def judge(message: dict | Calls, turn: TurnGold, harness: Harness) -> Judgement:
    """Judge one assistant message (an OpenAI message dict, or already-parsed ``(name, arguments)``
    calls) against one gold turn under ``harness``'s tool schemas."""
    read = _read(message, harness)
    if read is None:
        return Judgement(_bad_message(message), _partial_none(turn))
    verdict = _verdict(*read, turn, harness)
    _, _, loaded, calls, text = read
    return Judgement(verdict, _partial(calls, loaded, text, turn, harness))


def score_turn(message: Any, turn: TurnGold, harness: Harness) -> Verdict:
    """Judge one assistant message against one gold turn, under the harness's tool schemas: the
    verdict of :func:`judge` without its partial credit (verification asks this of every
    judged turn of every variant)."""
    read = _read(message, harness)
    if read is None:
        return _bad_message(message)
    return _verdict(*read, turn, harness)


def _read(message: Any, harness: Harness) -> tuple[Calls, Calls, list, Calls, str] | None:
    """(raw calls, decoded calls, skills loaded, other calls, text) of a message, or None when
    it is neither a message object nor a list of calls."""
    if isinstance(message, dict):
        raw, text = message_calls(message), message_text(message)
    elif isinstance(message, list | tuple):
        raw, text = list(message), ""
    else:
        return None
    decoded = [(name, _decode(args)) for name, args in raw]
    loader = harness.skill_loader if harness.skills else None
    loaded = [args.get("name") if args else None for name, args in decoded if name == loader]
    calls = [(name, args) for name, args in decoded if name != loader]
    return raw, decoded, loaded, calls, text


def _bad_message(message: Any) -> Verdict:
    return _fail(
        "bad_message", f"expected an assistant message object, got {type(message).__name__}"
    )


def _verdict(
    raw: Calls,
    decoded: Calls,
    loaded: list,
    calls: Calls,
    text: str,
    turn: TurnGold,
    harness: Harness,
) -> Verdict:
    for i, ((name, args), (_, original)) in enumerate(zip(decoded, raw, strict=True)):
        if args is None or not isinstance(name, str):
            return _fail(
                "arguments_not_json",
                f"call {i} ({name!r}) has arguments that are not a "
                f"JSON object: {str(original)[:80]!r}",
            )
    loader = harness.skill_loader if harness.skills else None
    for i, (name, args) in enumerate(decoded):
        # The loader's schema has one parameter, a skill id: an extra or missing key is wrong
        # as it would be for any tool (BFCL's unexpected and missing parameters).
        if name == loader and loaded_skill(args) is None:
            return _fail(
                "wrong_skills",
                f"call {i} to the skill loader {loader!r} must pass exactly a skill id as "
                f"'name', got {orjson.dumps(args).decode()[:80]}",
            )
    if turn.no_call:
        if decoded:
            return _fail(
                "unexpected_call", f"expected no tool call, got {', '.join(n for n, _ in decoded)}"
            )
        return check_reply(text, turn.reply)
    # (Counted only when there is something to count: most turns load and expect no skill.)
    if (loaded or turn.skills) and Counter(map(str, loaded)) != Counter(turn.skills):
        return _fail(
            "wrong_skills",
            f"expected to load {sorted(turn.skills)}, loaded {sorted(map(str, loaded))}",
        )
    if len(calls) != len(turn.calls):
        return _fail(
            "wrong_call_count",
            f"expected {len(turn.calls)} call(s), got {len(calls)}"
            + (f" ({', '.join(n for n, _ in calls)})" if calls else ""),
        )
    verdict = match_calls(calls, turn.calls, harness, ordered=turn.ordered)
    if not verdict.correct or not turn.reply:
        return verdict
    return check_reply(text, turn.reply)


def _partial_none(turn: TurnGold) -> dict[str, float | None]:
    return {
        "name": 0.0,
        "arguments": 0.0,
        "count": 0.0,
        "skills": 0.0 if turn.skills else None,
        "reply": 0.0 if turn.reply else None,
    }


def _partial(
    calls: Calls, loaded: list, text: str, turn: TurnGold, harness: Harness
) -> dict[str, float | None]:
    gold = () if turn.no_call else turn.calls
    if not gold:
        name = arguments = float(not calls)
    else:
        by_name = [[n == g.name for n, _ in calls] for g in gold]
        correct = [
            [
                n == g.name and a is not None and check_call(n, a, g, harness.tool(g.name)).correct
                for n, a in calls
            ]
            for g in gold
        ]
        if turn.ordered:  # position k answers gold call k
            name = sum(row[k] for k, row in enumerate(by_name) if k < len(calls)) / len(gold)
            arguments = sum(row[k] for k, row in enumerate(correct) if k < len(calls)) / len(gold)
        else:
            name = _matching_size(by_name) / len(gold)
            arguments = _matching_size(correct) / len(gold)
    return {
        "name": name,
        "arguments": arguments,
        "count": float(len(calls) == len(gold)),
        "skills": float(Counter(map(str, loaded)) == Counter(turn.skills)) if turn.skills else None,
        "reply": float(check_reply(text, turn.reply).correct) if turn.reply else None,
    }


def _max_matching(fits: list[list[bool]]) -> list[int | None]:
    """A maximum one-to-one matching of gold calls (rows) to model calls (columns): for each gold
    call, the index of its model call or None (augmenting paths; n is small)."""
    owner: dict[int, int] = {}  # model call -> gold call

    def augment(k: int, seen: set[int]) -> bool:
        for j, fits_kj in enumerate(fits[k]):
            if fits_kj and j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = k
                    return True
        return False

    for k in range(len(fits)):
        augment(k, set())
    match: list[int | None] = [None] * len(fits)
    for j, k in owner.items():
        match[k] = j
    return match


def _matching_size(fits: list[list[bool]]) -> int:
    return sum(j is not None for j in _max_matching(fits))


# How far a call got through the per-call rules before failing: the closest miss explains best.
_DEPTH = {
    "wrong_name": 0,
    "missing_required": 1,
    "unexpected_param": 2,
    "type_mismatch": 3,
    "value_mismatch": 4,
    "missing_param": 5,
}


def match_calls(
    calls: list[tuple[str, dict]], gold: tuple[GoldCall, ...], harness: Harness, *, ordered: bool
) -> Verdict:
    """Match model calls to gold calls one to one: in order, or as any permutation.

    In any order, a call set passes when some one-to-one matching makes every pair correct. When
    none does, the verdict explains the first gold call a maximum matching leaves unmatched, by
    its closest miss among the model calls left over."""
    if ordered or len(gold) == 1:
        for (name, args), expected in zip(calls, gold, strict=False):
            verdict = check_call(name, args, expected, harness.tool(expected.name))
            if not verdict.correct:
                return verdict
        return OK
    fits = [[check_call(n, a, g, harness.tool(g.name)) for n, a in calls] for g in gold]
    match = _max_matching([[v.correct for v in row] for row in fits])
    if all(j is not None for j in match):
        return OK
    left = set(range(len(calls))) - {j for j in match if j is not None}
    k = match.index(None)
    best = max((fits[k][j] for j in sorted(left)), key=lambda v: _DEPTH.get(v.rule or "", -1))
    # The matching is maximum, so no call left over fits gold call k: ``best`` failed a rule.
    assert best.rule is not None
    alone = [j for j, v in enumerate(fits[k]) if v.correct]
    why = (
        f"the call(s) that fit it ({', '.join(map(str, alone))}) are needed by other gold calls; "
        f"closest remaining: "
        if alone
        else ""
    )
    return _fail(best.rule, f"no call matches gold call {k} ({gold[k].name}): {why}{best.detail}")


def check_call(name: str, args: dict, gold: GoldCall, tool: Tool | None) -> Verdict:
    """One model call against one gold call (BFCL's simple-function checker)."""
    if name != gold.name:
        return _fail("wrong_name", f"expected {gold.name!r}, got {name!r}")
    properties = tool.properties if tool else {}
    for param in tool.required if tool else ():
        if param not in args:
            return _fail("missing_required", f"{name}: required parameter {param!r} is missing")
    for param, value in args.items():
        if param not in properties:
            return _fail("unexpected_param", f"{name}: {param!r} is not in the tool's schema")
        if param not in gold.arguments:
            return _fail("unexpected_param", f"{name}: {param!r} is not expected by the gold")
        acceptable = gold.arguments[param]
        problem, variable = type_check(value, properties[param], acceptable)
        if problem:
            return _fail("type_mismatch", f"{name}.{param}: {problem}")
        # A gold "variable" is compared as it is written (BFCL skips normalisation for it).
        equal = _exactly_equal if variable else values_equal
        if not any(equal(value, ok) for ok in acceptable):
            return _fail(
                "value_mismatch", f"{name}.{param}={_show(value)} is not one of {_show(acceptable)}"
            )
    for param in gold.arguments:
        if param not in args and param not in gold.omittable:
            return _fail("missing_param", f"{name}: {param!r} must be given")
    return OK


_JSON_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _schema_types(schema: Any) -> list[str] | None:
    """The JSON types a schema declares; None for an untyped ("any") schema."""
    expected = schema.get("type") if isinstance(schema, dict) else None
    if expected is None:
        return None
    return expected if isinstance(expected, list) else [expected]


def _fits(value: Any, types: list[str]) -> bool:
    return any(_JSON_TYPES.get(t, _any_type)(value) for t in types)


def _any_type(value: Any) -> bool:  # a type name JSON Schema does not define: anything fits it
    return True


def gold_type(acceptable: list) -> str | None:
    """The JSON type of the gold's first acceptable value (BFCL's "possible answer type")."""
    return _json_type(acceptable[0]) if acceptable else None


def type_check(value: Any, schema: Any, acceptable: list) -> tuple[str | None, bool]:
    """BFCL's type rule: ``(why value has the wrong type or None, whether the gold is a variable)``.

    The gold is a *variable* when its first acceptable value does not fit the schema's type (BFCL
    lists ``null`` for an optional string whose default is null, or names a variable for a number):
    then a value of the gold's own type passes the type check too, and is compared exactly. Array
    items are checked one level deep, against the schema's ``items`` type or, item by item, the
    type of an acceptable list's first element."""
    types = _schema_types(schema)
    if types is None:
        return None, False
    variable = bool(acceptable) and not _fits(acceptable[0], types)
    if _fits(value, types):
        item_types = _schema_types(schema.get("items")) if isinstance(value, list) else None
        if item_types is None or all(_fits(item, item_types) for item in value):
            return None, variable
        for ok in acceptable:
            if not isinstance(ok, list):
                return None, variable  # a variable stands for the whole array
            if all(
                _fits(item, item_types) or (ok and _json_type(item) == _json_type(ok[0]))
                for item in value
            ):
                return None, variable
        bad = next(i for i, item in enumerate(value) if not _fits(item, item_types))
        return (
            f"item {bad}: expected {'/'.join(item_types)}, got {_json_type(value[bad])}",
            variable,
        )
    first_type = gold_type(acceptable)
    if first_type is not None and _json_type(value) == first_type:
        return None, True
    return f"expected {'/'.join(types)}, got {_json_type(value)}", variable


def type_problem(value: Any, schema: Any) -> str | None:
    """Why ``value`` has the wrong JSON type for ``schema`` alone (None if it fits)."""
    return type_check(value, schema, [])[0]


def _json_type(value: Any) -> str:
    for name in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _JSON_TYPES[name](value):
            return name
    return type(value).__name__


def _exactly_equal(value: Any, acceptable: Any) -> bool:
    return value == acceptable


def values_equal(value: Any, acceptable: Any, *, exact: bool = False) -> bool:
    """BFCL value equality: normalised strings, strict bools, lists in order, dict patterns.
    ``exact``: inside a dict that is one value (no pattern), where a dict is a dict, never a
    pattern again."""
    if isinstance(acceptable, bool) or isinstance(value, bool):
        return isinstance(acceptable, bool) and isinstance(value, bool) and value == acceptable
    if isinstance(acceptable, str):
        return isinstance(value, str) and normalize_string(value) == normalize_string(acceptable)
    if isinstance(acceptable, int | float):
        return isinstance(value, int | float) and value == acceptable
    if isinstance(acceptable, list):
        return (
            isinstance(value, list)
            and len(value) == len(acceptable)
            and all(values_equal(v, a, exact=exact) for v, a in zip(value, acceptable, strict=True))
        )
    if isinstance(acceptable, dict):
        if not isinstance(value, dict):
            return False
        if not exact and is_pattern(acceptable):
            return _dict_matches(value, acceptable)
        # A dict that is no pattern (a value of a key is not a list of options) is the one
        # acceptable value, key by key, as the loader reads it: ``{"tags": ["a", "b"]}`` inside
        # it is a list, not two options, and a dict inside it is a dict.
        return value.keys() == acceptable.keys() and all(
            values_equal(value[k], ok, exact=True) for k, ok in acceptable.items()
        )
    return value is None and acceptable is None


def _dict_matches(value: dict, pattern: dict) -> bool:
    """One level of dict matching: each key's value is one of the pattern's acceptable values."""
    for key, item in value.items():
        if key not in pattern:
            return False
        options = pattern[key] if isinstance(pattern[key], list) else [pattern[key]]
        # "" among the options also matches a value written empty, as in BFCL's dict checker
        if not any(values_equal(item, ok) for ok in options):
            return False
    for key, options in pattern.items():
        if key not in value and not (isinstance(options, list) and OMIT_IN_DICT in options):
            return False
    return True


def check_reply(text: str, reply: dict) -> Verdict:
    """Reply constraints on an assistant message's text."""
    if not reply:
        return OK
    lowered = text.lower()
    for needle in reply.get("contains", ()):
        if needle.lower() not in lowered:
            return _fail("reply_constraint", f"reply must contain {needle!r}")
    for needle in reply.get("not_contains", ()):
        if needle.lower() in lowered:
            return _fail("reply_constraint", f"reply must not contain {needle!r}")
    language = reply.get("language")
    if language is not None and not in_language(text, language):
        return _fail(
            "reply_constraint", f"reply must be in {_LANGUAGE_NAMES.get(language, language)}"
        )
    if "max_chars" in reply and len(text) > reply["max_chars"]:
        return _fail(
            "reply_constraint",
            f"reply has {len(text)} characters, at most {reply['max_chars']} allowed",
        )
    return OK


# The letters of each script a reply language is written in (hsa.model.gold.REPLY_LANGUAGES).
# Latin letters stand in any language (a brand, a code, "OK"), so no script but Latin needs them.
_SCRIPTS = {
    "han": re.compile(r"[\u3400-\u9fff\uf900-\ufaff]"),
    "kana": re.compile(r"[\u3041-\u30ff\u31f0-\u31ff\uff66-\uff9f]"),
    "hangul": re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]"),
    "cyrillic": re.compile(r"[\u0400-\u04ff]"),
    "greek": re.compile(r"[\u0370-\u03ff]"),
    "arabic": re.compile(r"[\u0600-\u06ff\u0750-\u077f]"),
    "hebrew": re.compile(r"[\u0590-\u05ff]"),
    "devanagari": re.compile(r"[\u0900-\u097f]"),
    "thai": re.compile(r"[\u0e00-\u0e7f]"),
}
# Per reply script: the letters a reply in it must hold, and the other scripts it may hold
# beside Latin letters (Japanese writes Han with its kana).
_NEEDS = {
    "han": ("han", ()),
    "japanese": ("kana", ("han",)),
    "hangul": ("hangul", ("han",)),
    "latin": (None, ()),
    **{s: (s, ()) for s in ("cyrillic", "greek", "arabic", "hebrew", "devanagari", "thai")},
}
_LANGUAGE_NAMES = {
    "zh": "Chinese", "en": "English", "ja": "Japanese", "ko": "Korean", "fr": "French",
    "de": "German", "es": "Spanish", "it": "Italian", "pt": "Portuguese", "ru": "Russian",
    "ar": "Arabic", "he": "Hebrew", "hi": "Hindi", "th": "Thai", "el": "Greek",
}  # fmt: skip


def in_language(text: str, language: str) -> bool:
    """Whether ``text`` is written in the script of ``language`` (an ISO 639-1 code of
    :data:`hsa.model.gold.REPLY_LANGUAGES`): it holds that script's letters, and no letters of a
    script the language is not written in. Two languages of one script are not told apart."""
    script = REPLY_LANGUAGES[language]
    needs, also = _NEEDS[script]
    if needs is not None and not _SCRIPTS[needs].search(text):
        return False
    return not any(
        pattern.search(text)
        for name, pattern in _SCRIPTS.items()
        if name != needs and name not in also
    )


def _show(value: Any) -> str:
    text = orjson.dumps(value).decode() if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ---- scoring a predictions file -------------------------------------------------------------


@dataclass
class ScoreReport:
    """Accuracy over judged turns, per category: one item per prediction judged and one (wrong)
    per episode without a prediction."""

    items: list[dict] = field(default_factory=list)
    unknown_ids: list[str] = field(default_factory=list)
    bad_lines: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.items)

    @property
    def correct(self) -> int:
        return sum(1 for item in self.items if item["correct"])

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    @property
    def missing(self) -> list[str]:
        return [i["id"] for i in self.items if i["reason"].startswith("missing_prediction")]

    def by_category(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for item in self.items:
            row = out.setdefault(item["category"], {"correct": 0, "total": 0})
            row["total"] += 1
            row["correct"] += bool(item["correct"])
        for row in out.values():
            row["accuracy"] = row["correct"] / row["total"]
        return dict(sorted(out.items()))

    def by_rule(self) -> dict[str, int]:
        return dict(
            Counter(
                i["reason"].split(":", 1)[0] for i in self.items if not i["correct"]
            ).most_common()
        )

    def to_dict(self) -> dict:
        return {
            "accuracy": self.accuracy,
            "correct": self.correct,
            "total": self.total,
            "categories": self.by_category(),
            "failures_by_rule": self.by_rule(),
            "missing": self.missing,
            "unknown_ids": self.unknown_ids,
            "bad_prediction_lines": self.bad_lines,
            "items": self.items,
        }


def episode_category(episode: Episode) -> str:
    category = episode.meta.get("category")
    return str(category) if category else "uncategorized"


@dataclass(frozen=True, slots=True)
class Prediction:
    """One prediction: ``message`` answers episode ``id`` at its gold turn at message index ``at``
    (the first judged turn when None); ``file`` and ``line`` say where it was read, for errors."""

    id: str
    message: Any
    at: Any = None
    file: str | None = None
    line: int | None = None


def _not_a_prediction(value: Any) -> str:
    if not isinstance(value, dict):
        return f"expected {{id, message}}, not a JSON {_json_type(value)}"
    absent = [key for key in ("id", "message") if key not in value]
    return "expected {id, message}: no " + " and no ".join(repr(key) for key in absent)


def read_predictions(path: str | os.PathLike) -> tuple[list[Prediction], list[str]]:
    """Every prediction of a predictions JSONL (``{"id", "message", "at"?}`` per line), in file
    order; and each line that is no prediction, as ``PATH:LINE: why``."""
    predictions: list[Prediction] = []
    bad_lines: list[str] = []
    for line in read_lines(path):
        value = line.value
        if line.error or not isinstance(value, dict) or "id" not in value or "message" not in value:
            bad_lines.append(f"{path}:{line.number}: {line.error or _not_a_prediction(value)}")
            continue
        predictions.append(
            Prediction(str(value["id"]), value["message"], value.get("at"), str(path), line.number)
        )
    return predictions, bad_lines


def score_predictions(
    episodes: list[Episode], predictions: Mapping[str, dict] | Iterable[Prediction]
) -> ScoreReport:
    """Score ``predictions`` against the episodes' gold: one item per prediction, judged at the
    gold turn at its ``at`` (the episode's first judged turn when absent), and one wrong item per
    episode without any prediction.

    ``predictions`` is :func:`read_predictions`' list, or id -> ``{"message", "at"?}`` for one
    prediction per episode. A second prediction for a turn already judged is not judged: a
    predictions file answers each turn once, and keeping either answer silently would report an
    accuracy the file does not have. It is named in ``bad_lines`` instead."""
    if isinstance(predictions, Mapping):
        predictions = [
            Prediction(str(pid), value.get("message"), value.get("at"))
            for pid, value in predictions.items()
        ]
    by_id: dict[str, list[Prediction]] = {}
    for prediction in predictions:
        by_id.setdefault(prediction.id, []).append(prediction)
    report = ScoreReport()
    for episode in episodes:
        item: dict[str, Any] = {"id": episode.id, "category": episode_category(episode)}
        answered = by_id.get(episode.id)
        if not answered:
            verdict = _fail("missing_prediction", "no prediction for this id")
            report.items.append(item | {"at": None, "correct": False, "reason": verdict.reason})
            continue
        judged: dict[int, Prediction] = {}  # gold turn (its message index) -> its prediction
        for prediction in answered:
            try:
                turn = episode.gold.turn(prediction.at)
            except KeyError:
                verdict = _fail("bad_prediction", f"no gold turn at message {prediction.at}")
                at = prediction.at
            else:
                first = judged.setdefault(turn.at, prediction)
                if first is not prediction:
                    where = locate(prediction.file, prediction.line, episode.id, "at")
                    report.bad_lines.append(
                        f"{where}: a second prediction for the gold turn at message {turn.at} "
                        f"(the first is on line {first.line}): not judged"
                    )
                    continue
                verdict = score_turn(prediction.message, turn, episode.harness)
                at = turn.at
            report.items.append(
                item | {"at": at, "correct": verdict.correct, "reason": verdict.reason}
            )
    report.unknown_ids = sorted(set(by_id) - {episode.id for episode in episodes})
    return report
