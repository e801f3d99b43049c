"""Import Berkeley Function Calling Leaderboard (BFCL v4) question and possible-answer files.

Questions are JSON Lines ``{"id", "question": [[messages...]], "function": [schemas]}``; answers
are ``{"id", "ground_truth": [{func_name: {param: [acceptable values]}}]}``. What changes on import:

* BFCL's schema dialect becomes JSON Schema: ``dict`` -> ``object``, ``float`` -> ``number``,
  ``tuple`` -> ``array``, ``any`` -> untyped, Java and JavaScript type names (``String``,
  ``Boolean``, ``HashMap``, ``ArrayList``, ``long``, ``double``...) -> their JSON types, and an
  ``enum`` on an array moves to its items.
* ``""`` in a parameter's acceptable values ("may be omitted") becomes the gold call's
  ``omittable`` list. BFCL's checker also accepts the parameter written empty: ``""`` (and what
  its string normalisation makes ``""``, such as ``" "``) for a string or ``any`` parameter, and
  ``[]`` for an array (its list checker normalises a ``""`` answer item by item, and it has
  none); that empty value becomes one of the acceptable values (of a parameter whose only
  answer is ``""``, where it fits the schema: a gold parameter needs one value that does).
  Inside dict-valued answers ``""`` keeps BFCL's meaning (see hsa.model.scorer).
* Dotted function names (``math.factorial``) are kept as they are, end to end.
* Irrelevance files have no answers: their gold is ``no_call``.
* Relevance files (``live_relevance``) have no answers either: BFCL judges any function call
  correct there, which no hsa gold (it names the calls) can say, so each line is rejected.
* An answer id given twice in the possible-answer file rejects that question, naming both lines:
  which of the two answers was meant is not for the importer to guess.
* A gold parameter that the function's schema does not define is dropped when the answer lets it
  be omitted (BFCL's checker still judges such items: a model can only pass by leaving it out),
  with a notice in the import summary; one that must be given stays, and the line is rejected.

The episode id is the BFCL id; ``meta`` records the category and the source file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hsa.errors import EpisodeError, HsaError, Notice, Reject
from hsa.files.jsonl import read_lines
from hsa.importers import ImportResult
from hsa.model.episode import Episode
from hsa.model.gold import value_fits
from hsa.model.schema import edit_schema, pointer, schema_nodes

_TYPE_MAP = {
    "dict": "object",
    "float": "number",
    "tuple": "array",
    "int": "integer",
    "str": "string",
    "bool": "boolean",
    "list": "array",
    # simple_java and simple_javascript name their types in those languages; their answers are
    # JSON values of these types (BFCL's checker converts them so)
    "String": "string",
    "char": "string",
    "Boolean": "boolean",
    "HashMap": "object",
    "Map": "object",
    "ArrayList": "array",
    "List": "array",
    "Array": "array",
    "long": "integer",
    "short": "integer",
    "byte": "integer",
    "double": "number",
    "Bigint": "integer",
}
_CATEGORY = re.compile(r"^(.*?)_\d+(?:-\d+)*$")
NO_ANSWER_CATEGORIES = ("irrelevance", "live_irrelevance")
RELEVANCE_REASON = (
    "relevance category: BFCL judges any function call correct here; hsa golds name the calls, "
    "so these rows are not imported"
)


def bfcl_category(bfcl_id: str) -> str:
    """``simple_python_12`` -> ``simple_python``; ``live_simple_0-0-0`` -> ``live_simple``."""
    match = _CATEGORY.match(bfcl_id)
    return match.group(1) if match else bfcl_id


def is_relevance(category: str) -> bool:
    """BFCL's own test (``is_relevance_or_irrelevance`` less irrelevance): its checker passes any
    function call in such a category, and BFCL ships no possible answers for it."""
    return "relevance" in category and "irrelevance" not in category


def normalize_schema(schema: Any) -> Any:
    """BFCL's schema dialect -> valid JSON Schema, in every sub-schema (see the module
    docstring): the walk is hsa.model.schema's, so anyOf branches, tuple items and definitions
    are normalised as well as properties and items."""
    if not isinstance(schema, dict):
        return schema
    edits: dict[str, Callable[[dict], dict]] = {
        pointer(parts): _normalize_node for parts, _ in schema_nodes(schema)
    }
    return edit_schema(schema, edits, "")


def _normalize_node(node: dict) -> dict:
    """One sub-schema in BFCL's dialect -> JSON Schema (its own sub-schemas are done already)."""
    out = dict(node)
    kind = out.get("type")
    if kind == "any":
        del out["type"]
    elif isinstance(kind, str) and kind in _TYPE_MAP:
        out["type"] = _TYPE_MAP[kind]
    if out.get("type") == "array" and "enum" in out:
        # BFCL means "each item is one of these", not "the whole array equals one of these".
        items = dict(out.get("items") or {})
        items.setdefault("enum", out.pop("enum"))
        out["items"] = items
    return out


def normalize_tool(function: Any) -> dict:
    if not isinstance(function, dict):
        raise EpisodeError("each function must be an object", field="function")
    out = dict(function)
    if "parameters" in out:
        out["parameters"] = normalize_schema(out["parameters"])
    return {"type": "function", "function": out}


def gold_from_ground_truth(ground_truth: Any) -> dict:
    """BFCL ground truth -> hsa gold (calls in any order; ``""`` -> omittable)."""
    if not isinstance(ground_truth, list) or not ground_truth:
        raise EpisodeError("ground_truth must be a non-empty list of calls", field="ground_truth")
    calls = []
    for i, entry in enumerate(ground_truth):
        if not isinstance(entry, dict) or len(entry) != 1:
            raise EpisodeError(
                "each call must be {function_name: {param: [values]}}", field=f"ground_truth[{i}]"
            )
        ((name, params),) = entry.items()
        if not isinstance(params, dict):
            raise EpisodeError("parameters must be an object", field=f"ground_truth[{i}].{name}")
        arguments, omittable = {}, []
        for param, values in params.items():
            if not isinstance(values, list):
                raise EpisodeError(
                    "acceptable values must be a list", field=f"ground_truth[{i}].{name}.{param}"
                )
            kept = [v for v in values if v != ""]
            if len(kept) < len(values):
                omittable.append(param)
            if kept:
                arguments[param] = kept
        call = {"name": name, "arguments": arguments}
        if omittable:
            call["omittable"] = omittable
        calls.append(call)
    return {"calls": calls, "ordered": False}


def accept_empty_values(gold: dict, tools: list[dict]) -> None:
    """Add, in place, the empty value BFCL's checker accepts for each omittable parameter
    (see the module docstring) to its acceptable values; a parameter whose only answer was
    ``""`` gets it as its one acceptable value where it fits the parameter's schema."""
    by_name = {t["function"].get("name"): t["function"].get("parameters") or {} for t in tools}
    for call in gold.get("calls", ()):
        parameters = by_name.get(call["name"])
        if parameters is None:
            continue  # an unknown function is validation's to report
        properties = parameters.get("properties") or {}
        for param in call.get("omittable", ()):
            schema = properties.get(param)
            kind = schema.get("type", "string") if isinstance(schema, dict) else None
            if kind not in ("string", "array"):  # BFCL's "any" is untyped here, a str there
                continue
            empty: Any = "" if kind == "string" else []
            values = call["arguments"].setdefault(param, [])
            # BFCL accepts it even outside an enum; a parameter whose only answer is "" takes
            # it only where it fits, since a gold parameter needs one value that does.
            if empty not in values and (values or value_fits(empty, schema, parameters)):
                values.append(empty)
            if not values:
                del call["arguments"][param]


def drop_undefined_omittable(gold: dict, tools: list[dict]) -> list[tuple[str, str]]:
    """Remove, in place, omittable gold parameters that the called function's schema lacks;
    ``(field, reason)`` for each one removed. Non-omittable ones are left for validation."""
    properties = {
        t["function"].get("name"): (t["function"].get("parameters") or {}).get("properties") or {}
        for t in tools
    }
    dropped = []
    for i, call in enumerate(gold.get("calls", ())):
        known = properties.get(call["name"])
        if known is None:
            continue  # an unknown function is validation's to report
        for param in [p for p in call.get("omittable", ()) if p not in known]:
            call["arguments"].pop(param, None)
            call["omittable"].remove(param)
            dropped.append(
                (
                    f"gold.calls[{i}].arguments.{param}",
                    f"dropped: {call['name']!r} does not define {param!r}; the answer "
                    f"lets it be omitted, so only answers without it can pass",
                )
            )
        if not call.get("omittable", True):
            del call["omittable"]
    return dropped


def _read_answers(path: Path) -> tuple[dict[str, Any], dict[str, str], dict[str, list[int]]]:
    """id -> ground_truth; ``file:line`` -> why that answer line is unusable; and id -> its
    answer lines."""
    answers: dict[str, Any] = {}
    broken: dict[str, str] = {}
    lines_of: dict[str, list[int]] = {}
    for line in read_lines(path):
        value = line.value
        if line.error is not None or not isinstance(value, dict) or "id" not in value:
            # An unreadable answer line cannot be tied to a question; it is reported by line.
            broken[f"{path}:{line.number}"] = line.error or "expected {id, ground_truth}"
            continue
        answer_id = str(value["id"])
        answers[answer_id] = value.get("ground_truth")
        lines_of.setdefault(answer_id, []).append(line.number)
    return answers, broken, lines_of


def default_answers_path(questions: Path) -> Path | None:
    candidate = questions.parent / "possible_answer" / questions.name
    return candidate if candidate.is_file() else None


def import_bfcl(
    questions: str | os.PathLike,
    answers: str | os.PathLike | None = None,
    *,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> ImportResult:
    """Import a BFCL questions file; answers default to ``possible_answer/<same name>`` beside it."""
    questions = Path(questions)
    answers_path = Path(answers) if answers is not None else default_answers_path(questions)
    answers_by_id, broken, lines_of = _read_answers(answers_path) if answers_path else ({}, {}, {})
    # A later answer would silently replace an earlier one: the question is rejected instead.
    repeated = {i: numbers for i, numbers in lines_of.items() if len(numbers) > 1}
    asked: set[str] = set()
    result = ImportResult(source=str(questions))
    lines = read_lines(questions)
    for line in progress(lines) if progress else lines:
        result.lines += 1
        if line.error is not None:
            result.rejects.append(Reject(str(questions), line.number, None, None, line.error))
            continue
        row_id = line.value.get("id") if isinstance(line.value, dict) else None
        asked.add(str(row_id))
        # BFCL's answers are matched by id too: a repeat would get the first one's answer.
        if isinstance(row_id, str) and result.repeats_id(row_id, line.number, what="question id"):
            continue
        try:
            row = _episode_row(line.value, answers_by_id, answers_path, broken, repeated)
            dropped = drop_undefined_omittable(row["gold"], row["harness"]["tools"])
            accept_empty_values(row["gold"], row["harness"]["tools"])
            result.keep(Episode.from_dict(row), line.number)
            result.notices.extend(
                Notice(str(questions), line.number, row["id"], field, reason)
                for field, reason in dropped
            )
        except HsaError as exc:
            result.rejects.append(
                Reject.from_error(
                    exc,
                    source=str(questions),
                    line=line.number,
                    id=None if row_id is None else str(row_id),
                )
            )
    # An answer no question asks for is no episode, and not lost without a word: a questions
    # file cut short, or the answers of another category.
    result.notices.extend(
        Notice(str(answers_path), numbers[0], answer_id, None, "no question has this id: unused")
        for answer_id, numbers in lines_of.items()
        if answer_id not in asked
    )
    result.check_counts()
    return result


def _episode_row(
    value: Any, answers: dict, answers_path: Path | None, broken: dict, repeated: dict
) -> dict:
    if not isinstance(value, dict):
        raise EpisodeError("expected a JSON object {id, question, function}")
    bfcl_id = value.get("id")
    if not isinstance(bfcl_id, str) or not bfcl_id:
        raise EpisodeError("id must be a non-empty string", field="id")
    category = bfcl_category(bfcl_id)
    if is_relevance(category):
        # Checked first: nothing else about the line could make it importable.
        raise EpisodeError(RELEVANCE_REASON, row=bfcl_id, field="ground_truth")
    question = value.get("question")
    if not isinstance(question, list) or not question or not isinstance(question[0], list):
        raise EpisodeError(
            "question must be a list of turns, each a list of messages",
            row=bfcl_id,
            field="question",
        )
    if len(question) != 1:
        raise EpisodeError(
            f"multi-turn entries ({len(question)} turns) need BFCL's execution "
            f"environment and are not imported",
            row=bfcl_id,
            field="question",
        )
    functions = value.get("function")
    if not isinstance(functions, list):
        raise EpisodeError(
            "function must be a list of function schemas", row=bfcl_id, field="function"
        )
    if category in NO_ANSWER_CATEGORIES:
        gold = {"no_call": True}
    elif bfcl_id in repeated:
        *earlier, last = repeated[bfcl_id]
        raise EpisodeError(
            f"possible answer given {len(earlier) + 1} times for this id (lines "
            f"{', '.join(map(str, earlier))} and {last} of {answers_path}); "
            f"which one is meant is unknown",
            row=bfcl_id,
            field="ground_truth",
        )
    elif bfcl_id in answers:
        try:
            gold = gold_from_ground_truth(answers[bfcl_id])
        except HsaError as exc:
            raise EpisodeError(
                exc.reason, file=str(answers_path), row=bfcl_id, field=exc.field
            ) from None
    else:
        where = f"in {answers_path}" if answers_path else "(no answers file: pass --answers)"
        extra = ""
        if broken:
            where_first, why = next(iter(broken.items()))
            extra = (
                f"; {len(broken)} answer line(s) there are unreadable (the first, {where_first}: "
                f"{why})"
            )
        raise EpisodeError(
            f"no possible answer for this id {where}{extra}", row=bfcl_id, field="ground_truth"
        )
    tools = []
    for i, fn in enumerate(functions):
        try:
            tools.append(normalize_tool(fn))
        except HsaError as exc:
            raise EpisodeError(exc.reason, row=bfcl_id, field=f"function[{i}]") from None
    return {
        "id": bfcl_id,
        "harness": {"name": f"bfcl-{category}", "tools": tools},
        "messages": question[0],
        "gold": gold,
        "meta": {"source": "bfcl", "category": category},
    }
