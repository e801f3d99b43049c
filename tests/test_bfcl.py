"""BFCL import on the real dev files: counts conserved, quirks normalised, own answers score 100%."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from hsa.cli import main
from hsa.importers.bfcl import bfcl_category, import_bfcl, normalize_schema
from hsa.model.episode import read_episodes
from hsa.model.scorer import score_predictions, score_turn
from tests.conftest import BFCL_DIR, BFCL_FILES

pytestmark = pytest.mark.usefixtures("bfcl_data")

# Two live_simple answers give a required parameter no acceptable value at all ([]), so no
# answer can pass BFCL's own checker; hsa rejects them at import (see the README).
UNSATISFIABLE = {"live_simple_106-63-0", "live_simple_112-68-0"}


def raw_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def first_answer_message(ground_truth, functions):
    """An assistant message built from BFCL's first acceptable answer of every parameter.

    ``""`` first means "omit it", except for a required parameter, which takes its first real
    value (simple_python_200 lists ``""`` first for a required parameter)."""
    required = {f["name"]: set(f["parameters"].get("required", [])) for f in functions}

    def first(value):
        if isinstance(value, dict):  # a dict pattern: each key's first acceptable value
            return {k: first(v[0]) for k, v in value.items() if v and v[0] != ""}
        if isinstance(value, list):
            return [first(v) for v in value]
        return value

    calls = []
    for i, entry in enumerate(ground_truth):
        ((name, params),) = entry.items()
        args = {}
        for param, values in params.items():
            real = [v for v in values if v != ""]
            if values and values[0] != "":
                args[param] = first(values[0])
            elif param in required[name] and real:
                args[param] = first(real[0])
        calls.append(
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        )
    return {"role": "assistant", "content": None, "tool_calls": calls}


@pytest.mark.parametrize("name", BFCL_FILES)
def test_import_conserves_every_line(name, tmp_path):
    source = BFCL_DIR / name
    result = import_bfcl(source)
    ids = [row["id"] for row in raw_lines(source)]
    assert result.lines == len(ids)
    assert len(result.episodes) + len(result.rejects) == len(ids)
    assert {r.id for r in result.rejects} == (UNSATISFIABLE if "live_simple" in name else set())
    # The episode id is the BFCL id, in file order.
    assert [e.id for e in result.episodes] == [i for i in ids if i not in UNSATISFIABLE]
    # Written episodes read back unchanged.
    out, rejects = result.write(tmp_path / "episodes.jsonl")
    back = list(read_episodes(out))
    assert back == result.episodes
    assert len(rejects.read_text().splitlines()) == len(result.rejects)


@pytest.mark.parametrize("name", [f for f in BFCL_FILES if "irrelevance" not in f])
def test_first_acceptable_answers_score_100_percent(name):
    source = BFCL_DIR / name
    answers = {
        row["id"]: row["ground_truth"] for row in raw_lines(BFCL_DIR / "possible_answer" / name)
    }
    questions = {row["id"]: row for row in raw_lines(source)}
    episodes = import_bfcl(source).episodes
    predictions = {
        e.id: {"message": first_answer_message(answers[e.id], questions[e.id]["function"])}
        for e in episodes
    }
    report = score_predictions(episodes, predictions)
    failures = [i for i in report.items if not i["correct"]]
    assert failures == [] and report.accuracy == 1.0


def test_irrelevance_gold_is_no_call():
    episodes = import_bfcl(BFCL_DIR / "BFCL_v4_irrelevance.json").episodes
    silent = {
        e.id: {"message": {"role": "assistant", "content": "I cannot do that."}} for e in episodes
    }
    assert score_predictions(episodes, silent).accuracy == 1.0
    calling = {
        e.id: {
            "message": first_answer_message(
                [{e.harness.tools[0].name: {}}],
                [{"name": e.harness.tools[0].name, "parameters": {"required": []}}],
            )
        }
        for e in episodes
    }
    assert score_predictions(episodes, calling).accuracy == 0.0


def test_schema_quirks_become_json_schema():
    quirky = {
        "type": "dict",
        "properties": {
            "rate": {"type": "float"},
            "point": {"type": "tuple", "items": {"type": "integer"}},
            "payload": {"type": "any"},
            "days": {"type": "array", "items": {"type": "string"}, "enum": ["mon", "tue"]},
            "nested": {"type": "dict", "properties": {"x": {"type": "float"}}},
        },
    }
    assert normalize_schema(quirky) == {
        "type": "object",
        "properties": {
            "rate": {"type": "number"},
            "point": {"type": "array", "items": {"type": "integer"}},
            "payload": {},
            "days": {"type": "array", "items": {"type": "string", "enum": ["mon", "tue"]}},
            "nested": {"type": "object", "properties": {"x": {"type": "number"}}},
        },
    }


def test_java_and_javascript_type_names_become_json_schema():
    """BFCL's simple_java and simple_javascript functions name their parameters' types in those
    languages (`String`, `Boolean`, `HashMap`, `ArrayList`, `long`, `double`...); their answers
    are JSON values of the matching JSON types (BFCL's own checker converts them so). Left as
    written, the schema was no JSON Schema and 11 of 11 JavaScript items were rejected."""
    java = {
        "type": "dict",
        "properties": {
            "name": {"type": "String"},
            "flag": {"type": "Boolean"},
            "small": {"type": "boolean"},
            "params": {"type": "HashMap"},
            "paths": {"type": "ArrayList", "items": {"type": "String"}},
            "values": {"type": "Array"},
            "count": {"type": "long"},
            "ratio": {"type": "double"},
            "letter": {"type": "char"},
            "anything": {"type": "any"},
        },
    }
    normal = normalize_schema(java)
    assert {k: v.get("type") for k, v in normal["properties"].items()} == {
        "name": "string",
        "flag": "boolean",
        "small": "boolean",
        "params": "object",
        "paths": "array",
        "values": "array",
        "count": "integer",
        "ratio": "number",
        "letter": "string",
        "anything": None,
    }
    assert normal["properties"]["paths"]["items"] == {"type": "string"}
    Draft202012Validator.check_schema(normal)


def test_schema_quirks_are_normalised_in_every_sub_schema():
    """Branches, tuple items and definitions are sub-schemas a model reads too: the dialect is
    translated there as in properties (the walk is hsa.model.schema's, the one every reader uses),
    and the input is left as it was."""
    quirky = {
        "type": "dict",
        "properties": {
            "amount": {"anyOf": [{"type": "float"}, {"type": "str"}]},
            "pair": {"type": "tuple", "items": [{"type": "int"}, {"type": "bool"}]},
            "ref": {"$ref": "#/$defs/box"},
        },
        "$defs": {"box": {"type": "dict", "properties": {"w": {"type": "float"}}}},
    }
    before = json.dumps(quirky, sort_keys=True)
    assert normalize_schema(quirky) == {
        "type": "object",
        "properties": {
            "amount": {"anyOf": [{"type": "number"}, {"type": "string"}]},
            "pair": {"type": "array", "items": [{"type": "integer"}, {"type": "boolean"}]},
            "ref": {"$ref": "#/$defs/box"},
        },
        "$defs": {"box": {"type": "object", "properties": {"w": {"type": "number"}}}},
    }
    assert json.dumps(quirky, sort_keys=True) == before


def test_every_imported_schema_is_valid_and_dotted_names_survive():
    episodes = [e for name in BFCL_FILES for e in import_bfcl(BFCL_DIR / name).episodes]
    dotted = [t.name for e in episodes for t in e.harness.tools if "." in t.name]
    assert "math.factorial" in dotted
    json_types = {"object", "array", "string", "integer", "number", "boolean", "null"}

    def types(schema):
        if isinstance(schema, dict):
            if "type" in schema and isinstance(schema["type"], str):
                yield schema["type"]
            for key in ("items", "additionalProperties"):
                yield from types(schema.get(key))
            for sub in (schema.get("properties") or {}).values():
                yield from types(sub)

    for e in episodes:  # Tool.from_dict ran the meta-schema check; types are JSON Schema's
        for t in e.harness.tools:
            assert t.parameters["type"] == "object"
            assert set(types(t.parameters)) <= json_types, t.name


def test_omission_marker_becomes_omittable():
    episode = next(
        e
        for e in import_bfcl(BFCL_DIR / "BFCL_v4_simple_python.json").episodes
        if e.id == "simple_python_0"
    )
    (gold_call,) = episode.gold.turn().calls
    # "" also stays an acceptable value: BFCL's checker accepts the parameter written empty
    assert gold_call.arguments == {"base": [10], "height": [5], "unit": ["units", ""]}
    assert gold_call.omittable == ("unit",)


# An optional enum parameter whose only answer is "": "" does not fit the enum, and a gold
# parameter needs one value that does, so hsa accepts it only left out (see the README).
EMPTY_OUTSIDE_ENUM = {("multiple_182", "genre")}


@pytest.mark.parametrize("name", [f for f in BFCL_FILES if "irrelevance" not in f])
def test_an_optional_parameter_written_empty_passes_as_in_bfcl(name):
    """BFCL's checker accepts a parameter whose answers hold "" written empty: "" (or what its
    string normalisation makes "", such as " ") for a string or any-typed one, [] for an array
    (its list checker turns a "" answer into []); not for numbers or objects. Every such
    parameter of the dev files, written empty into the first-answer prediction, must pass; the
    same prediction with a wrong non-empty value must not."""
    source = BFCL_DIR / name
    answers = {
        row["id"]: row["ground_truth"] for row in raw_lines(BFCL_DIR / "possible_answer" / name)
    }
    questions = {row["id"]: row for row in raw_lines(source)}
    checked = 0
    for episode in import_bfcl(source).episodes:
        functions = questions[episode.id]["function"]
        message = first_answer_message(answers[episode.id], functions)
        for call, entry in zip(message["tool_calls"], answers[episode.id], strict=True):
            ((fn, params),) = entry.items()
            (schema,) = [f["parameters"]["properties"] for f in functions if f["name"] == fn]
            for param, values in params.items():
                kind = schema.get(param, {}).get("type")
                if "" not in values or kind not in ("string", "any", "array", "tuple"):
                    continue
                if (episode.id, param) in EMPTY_OUTSIDE_ENUM:
                    continue
                real = [v for v in values if v != ""]
                # A "variable" (the first real answer is no string) is compared as written.
                variable = bool(real) and not isinstance(real[0], str)
                if kind in ("array", "tuple"):
                    cases = [([], ["zz-wrong"])]
                else:
                    cases = [("", "zz-wrong")] + ([] if variable else [(" ", "zz-wrong")])
                for empty, wrong in cases:
                    for written, passes in ((empty, True), (wrong, False)):
                        args = {**json.loads(call["function"]["arguments"]), param: written}
                        probe = {
                            **call,
                            "function": {**call["function"], "arguments": json.dumps(args)},
                        }
                        others = [c for c in message["tool_calls"] if c is not call]
                        verdict = score_turn(
                            {**message, "tool_calls": [probe, *others]},
                            episode.gold.turn(),
                            episode.harness,
                        )
                        assert verdict.correct is passes, (episode.id, param, written, verdict)
                        checked += 1
    assert checked > 0


def test_category_from_id():
    assert bfcl_category("simple_python_12") == "simple_python"
    assert bfcl_category("live_simple_0-0-0") == "live_simple"


def test_cli_import_and_score_json(tmp_path, capsys):
    name = "BFCL_v4_parallel.json"
    out = tmp_path / "parallel.jsonl"
    assert main(["import", "bfcl", str(BFCL_DIR / name), "--out", str(out)]) == 0
    assert "200 lines -> 200 episodes, 0 rejected" in capsys.readouterr().out
    answers = {r["id"]: r["ground_truth"] for r in raw_lines(BFCL_DIR / "possible_answer" / name)}
    functions = {r["id"]: r["function"] for r in raw_lines(BFCL_DIR / name)}
    ids = list(answers)
    preds = tmp_path / "preds.jsonl"
    # Drop one prediction and break another: both must count as wrong.
    lines = [
        json.dumps({"id": i, "message": first_answer_message(answers[i], functions[i])})
        for i in ids[2:]
    ] + ["{not json"]
    preds.write_text("\n".join(lines) + "\n")
    assert main(["score", "--episodes", str(out), "--predictions", str(preds), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["correct"], report["total"]) == (198, 200)
    assert report["accuracy"] == pytest.approx(0.99)
    assert report["missing"] == ids[:2]
    assert len(report["bad_prediction_lines"]) == 1
    assert {i["id"] for i in report["items"] if not i["correct"]} == set(ids[:2])


def test_gold_parameter_the_schema_lacks_is_dropped_only_when_omittable(tmp_path, capsys):
    """BFCL's checker still judges an item whose answer names a parameter the function does not
    define, when it may be omitted: the import keeps it without that parameter, with a notice."""
    function = {
        "name": "weather.get",
        "description": "Weather for a city.",
        "parameters": {
            "type": "dict",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
    questions = tmp_path / "BFCL_v4_simple_python.json"
    answers = tmp_path / "possible_answer" / questions.name
    answers.parent.mkdir()
    rows = [
        ("simple_python_1", {"city": ["Rome"], "units": ["", "metric"]}),  # omittable: kept
        ("simple_python_2", {"city": ["Oslo"], "units": ["metric"]}),
    ]  # required: rejected
    questions.write_text(
        "".join(
            json.dumps(
                {
                    "id": i,
                    "question": [[{"role": "user", "content": "weather?"}]],
                    "function": [function],
                }
            )
            + "\n"
            for i, _ in rows
        )
    )
    answers.write_text(
        "".join(
            json.dumps({"id": i, "ground_truth": [{"weather.get": gt}]}) + "\n" for i, gt in rows
        )
    )
    result = import_bfcl(questions)
    (kept,), (rejected,) = result.episodes, result.rejects
    assert kept.id == "simple_python_1"
    (gold_call,) = kept.gold.turn().calls
    assert gold_call.arguments == {"city": ["Rome"]} and gold_call.omittable == ()
    (notice,) = result.notices
    assert (notice.line, notice.id, notice.field) == (
        1,
        "simple_python_1",
        "gold.calls[0].arguments.units",
    )
    assert rejected.id == "simple_python_2" and "'units'" in rejected.reason
    assert "does not define" in rejected.reason
    # The kept item is judged as BFCL judges it: only an answer without the parameter passes.
    assert (
        score_predictions(
            [kept],
            {
                kept.id: {
                    "message": first_answer_message(
                        [{"weather.get": {"city": ["Rome"]}}], [function]
                    )
                }
            },
        ).accuracy
        == 1.0
    )
    # The CLI summary shows the notice.
    assert main(["import", "bfcl", str(questions), "--out", str(tmp_path / "e.jsonl")]) == 0
    captured = capsys.readouterr()
    assert "2 lines -> 1 episodes, 1 rejected" in captured.out
    assert "1 episode(s) kept with a change" in captured.err
    assert "simple_python_1 gold.calls[0].arguments.units: dropped" in captured.err


def test_a_repeated_question_id_is_rejected_with_the_line_that_has_it(tmp_path):
    """Answers are matched by id and variants drawn by it: the second question of an id is a
    reject naming the first, never an episode scored against another question's answer."""
    source = BFCL_DIR / "BFCL_v4_simple_python.json"
    first, second = source.read_text().splitlines()[:2]
    questions = tmp_path / "BFCL_v4_simple_python.json"
    questions.write_text("\n".join([first, second, first]) + "\n")
    (tmp_path / "possible_answer").mkdir()
    answers = (BFCL_DIR / "possible_answer" / source.name).read_text().splitlines()[:2]
    (tmp_path / "possible_answer" / source.name).write_text("\n".join(answers) + "\n")
    result = import_bfcl(questions)
    assert [e.id for e in result.episodes] == [json.loads(first)["id"], json.loads(second)["id"]]
    (reject,) = result.rejects
    assert (reject.line, reject.id, reject.field) == (3, json.loads(first)["id"], "id")
    assert "duplicate question id (line 1 has it)" in reject.reason


def test_an_answer_id_given_twice_rejects_its_question_naming_both_lines(tmp_path):
    """A second answer of one id used to replace the first silently (the episode took whichever
    came last): which one is meant is unknown, so the question is a reject naming both answer
    lines, and the questions whose answer is given once are kept."""
    source = BFCL_DIR / "BFCL_v4_simple_python.json"
    questions = tmp_path / source.name
    questions.write_text("\n".join(source.read_text().splitlines()[:2]) + "\n")
    first, second = (BFCL_DIR / "possible_answer" / source.name).read_text().splitlines()[:2]
    other = json.loads(first)
    ((name, params),) = other["ground_truth"][0].items()
    other["ground_truth"] = [{name: {**params, "base": [99]}}]  # same id, another answer
    answers = tmp_path / "possible_answer" / source.name
    answers.parent.mkdir()
    answers.write_text("\n".join([first, second, json.dumps(other)]) + "\n")
    result = import_bfcl(questions)
    assert [e.id for e in result.episodes] == [json.loads(second)["id"]]
    (reject,) = result.rejects
    assert (reject.source, reject.line, reject.id, reject.field) == (
        str(questions),
        1,
        json.loads(first)["id"],
        "ground_truth",
    )
    assert f"lines 1 and 3 of {answers}" in reject.reason
    assert result.lines == len(result.episodes) + len(result.rejects) == 2


def test_answers_that_cannot_be_used_are_said_with_their_lines(tmp_path):
    """An unreadable answer line was reported only as "1 answer line(s) there are unreadable",
    and an answer whose id no question has was dropped without a word."""
    source = BFCL_DIR / "BFCL_v4_simple_python.json"
    questions = tmp_path / source.name
    questions.write_text("\n".join(source.read_text().splitlines()[:2]) + "\n")
    first, second, third = (BFCL_DIR / "possible_answer" / source.name).read_text().splitlines()[:3]
    answers = tmp_path / "possible_answer" / source.name
    answers.parent.mkdir()
    answers.write_text("\n".join([first, second[:40], third]) + "\n")
    result = import_bfcl(questions)
    assert [e.id for e in result.episodes] == [json.loads(first)["id"]]
    (reject,) = result.rejects
    assert f"1 answer line(s) there are unreadable (the first, {answers}:2: " in reject.reason
    (notice,) = result.notices
    assert (notice.source, notice.line, notice.id) == (str(answers), 3, json.loads(third)["id"])
    assert "no question has this id" in notice.reason


def test_relevance_rows_are_rejected_for_what_they_are_not_for_a_missing_answers_file(
    tmp_path, capsys
):
    """BFCL ships live_relevance without answers: any function call passes there, which no hsa
    gold says. Each row is rejected with that reason, not with advice to pass --answers (there
    is no such file), and the CLI summary says so; irrelevance rows still get no_call gold."""
    function = {
        "name": "generate_image",
        "description": "Make a picture.",
        "parameters": {"type": "dict", "properties": {"prompt": {"type": "string"}}},
    }

    def row(bfcl_id):
        question = [[{"role": "user", "content": "Generate a picture of a cat"}]]
        return json.dumps({"id": bfcl_id, "question": question, "function": [function]}) + "\n"

    relevance = tmp_path / "BFCL_v4_live_relevance.json"
    relevance.write_text(row("live_relevance_0-0-0") + row("live_relevance_1-1-0"))
    result = import_bfcl(relevance)
    assert result.episodes == [] and len(result.rejects) == result.lines == 2
    for line, reject in enumerate(result.rejects, 1):
        assert (reject.line, reject.field) == (line, "ground_truth")
        assert reject.reason.startswith("relevance category: BFCL judges any function call")
        assert "--answers" not in reject.reason
    mixed = tmp_path / "mixed.json"
    mixed.write_text(row("live_irrelevance_0-0-0") + row("live_relevance_0-0-0"))
    result = import_bfcl(mixed)
    (kept,), (rejected,) = result.episodes, result.rejects
    assert kept.id == "live_irrelevance_0-0-0" and kept.gold.turn().no_call
    assert rejected.id == "live_relevance_0-0-0"
    # Nothing is kept, so the import fails; its summary line names the cause.
    assert main(["import", "bfcl", str(relevance), "--out", str(tmp_path / "e.jsonl")]) == 1
    captured = capsys.readouterr()
    assert "2 lines -> 0 episodes, 2 rejected (2 in a relevance category" in captured.out
    assert "pass --answers" not in captured.out + captured.err
