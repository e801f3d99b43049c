"""The BFCL AST rules, one by one, and the scoring of a predictions file."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hsa.cli import main
from hsa.errors import EpisodeError
from hsa.model.episode import Episode
from hsa.model.gold import REPLY_LANGUAGES, Gold, TurnGold
from hsa.model.harness import Harness
from hsa.model.scorer import (
    Prediction,
    normalize_string,
    read_predictions,
    score_predictions,
    score_turn,
    values_equal,
)
from hsa.model.scorer import judge as judge_full
from tests.conftest import PRICE_TOOL, assistant, call

TOOLS = [
    PRICE_TOOL,
    {
        "type": "function",
        "function": {
            "name": "math.hypot",
            "description": "",
            "parameters": {
                "type": "object",
                "properties": {
                    "x": {"type": "number"},
                    "y": {"type": "number"},
                    "z": {"type": "integer"},
                },
                "required": ["x", "y"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "plan",
            "description": "",
            "parameters": {
                "type": "object",
                "properties": {
                    "stops": {"type": "array", "items": {"type": "string"}},
                    "options": {"type": "object"},
                    "fast": {"type": "boolean"},
                    "anything": {},
                },
                "required": ["stops"],
            },
        },
    },
]
HARNESS = Harness.from_dict(
    {
        "name": "t",
        "tools": TOOLS,
        "skills": [{"id": "price-reply", "description": "d", "content": "c"}],
    }
)


def turn(**kw) -> TurnGold:
    return TurnGold.from_dict(kw, where="gold", default_at=1)


def judge(message, **gold):
    return score_turn(message, turn(**gold), HARNESS)


HYPOT = {"name": "math.hypot", "arguments": {"x": [4], "y": [5], "z": [0]}, "omittable": ["z"]}


@pytest.mark.parametrize(
    ("args", "rule"),
    [
        ({"x": 4, "y": 5}, None),  # z may be omitted
        ({"x": 4.0, "y": 5, "z": 0}, None),  # int -> float is allowed
        ({"x": 4}, "missing_required"),
        ({"x": 4, "y": 5, "w": 1}, "unexpected_param"),  # not in the schema
        ({"x": 4, "y": 6}, "value_mismatch"),
        ({"x": 4, "y": 5, "z": 0.0}, "type_mismatch"),  # float for integer: no coercion
        ({"x": True, "y": 5}, "type_mismatch"),  # a bool is never a number
        ({"x": "4", "y": 5}, "type_mismatch"),
    ],
)
def test_simple_call_rules(args, rule):
    verdict = judge(assistant(call("math.hypot", args)), calls=[HYPOT])
    assert verdict.rule == rule, verdict.reason
    assert verdict.correct == (rule is None)


def test_exact_name_match_keeps_dots():
    assert (
        judge(assistant(call("math_hypot", {"x": 4, "y": 5})), calls=[HYPOT]).rule == "wrong_name"
    )


def test_param_in_schema_but_not_in_gold_is_unexpected():
    gold = {"name": "math.hypot", "arguments": {"x": [4], "y": [5]}}
    verdict = judge(assistant(call("math.hypot", {"x": 4, "y": 5, "z": 0})), calls=[gold])
    assert verdict.rule == "unexpected_param" and "not expected by the gold" in verdict.detail


def test_non_omittable_gold_param_must_be_given():
    gold = {"name": "get_price", "arguments": {"link": [3], "currency": ["CNY"]}}
    assert judge(assistant(call("get_price", {"link": 3})), calls=[gold]).rule == "missing_param"


@pytest.mark.parametrize(
    ("value", "acceptable", "equal"),
    [
        ("New York, NY", "new york ny", True),
        ("San-Francisco_CA", "san francisco ca", True),
        ("Paris", "London", False),
        (["a", "b"], ["a", "b"], True),
        (["b", "a"], ["a", "b"], False),  # lists keep their order
        ({"k": "v", "n": 1}, {"k": ["v", "w"], "n": [1]}, True),
        ({"k": "v"}, {"k": ["v"], "n": ["", 1]}, True),  # "" inside a dict pattern: may be left out
        ({"k": "v"}, {"k": ["v"], "n": [1]}, False),
        # ... or written empty, as in BFCL's dict checker ("" normalised, " " too)
        ({"k": "v", "n": ""}, {"k": ["v"], "n": ["", "sea"]}, True),
        ({"k": "v", "n": " "}, {"k": ["v"], "n": ["", "sea"]}, True),
        ({"k": "v", "n": ""}, {"k": ["v"], "n": ["sea"]}, False),
        ({"k": "v", "extra": 1}, {"k": ["v"]}, False),
        (True, 1, False),
        (1, True, False),
        (2, 2.0, True),
        (None, None, True),
    ],
)
def test_value_equality(value, acceptable, equal):
    assert values_equal(value, acceptable) is equal


def test_string_normalisation():
    assert normalize_string(" A,b./-_*^C ") == "abc"


def test_array_items_are_type_checked():
    gold = {"name": "plan", "arguments": {"stops": [["a", "b"]]}}
    assert judge(assistant(call("plan", {"stops": ["a", 2]})), calls=[gold]).rule == "type_mismatch"
    assert judge(assistant(call("plan", {"stops": ["A", "b"]})), calls=[gold]).correct


def test_untyped_parameter_accepts_any_type():
    gold = {"name": "plan", "arguments": {"stops": [["a"]], "anything": [[1, 2]]}}
    assert judge(
        assistant(call("plan", {"stops": ["a"], "anything": [1, 2]})), calls=[gold]
    ).correct


def test_parallel_calls_match_in_any_order_unless_ordered():
    gold = [
        {"name": "get_price", "arguments": {"link": [1]}},
        {"name": "get_price", "arguments": {"link": [2]}},
    ]
    swapped = assistant(call("get_price", {"link": 2}, "a"), call("get_price", {"link": 1}, "b"))
    assert judge(swapped, calls=gold).correct
    assert judge(swapped, calls=gold, ordered=True).rule == "value_mismatch"
    doubled = assistant(call("get_price", {"link": 1}, "a"), call("get_price", {"link": 1}, "b"))
    verdict = judge(doubled, calls=gold)
    assert verdict.rule == "value_mismatch" and "gold call 1" in verdict.detail


def test_call_count_must_match():
    gold = [{"name": "get_price", "arguments": {"link": [1]}}]
    two = assistant(call("get_price", {"link": 1}, "a"), call("get_price", {"link": 1}, "b"))
    assert judge(two, calls=gold).rule == "wrong_call_count"
    assert judge(assistant(content="It costs 1."), calls=gold).rule == "wrong_call_count"


def test_irrelevance_passes_only_without_a_call():
    assert judge(assistant(content="I can't help with that."), no_call=True).correct
    verdict = judge(assistant(call("get_price", {"link": 1})), no_call=True)
    assert verdict.rule == "unexpected_call"


def test_arguments_must_be_json():
    bad = assistant(
        {"id": "x", "type": "function", "function": {"name": "get_price", "arguments": "{link: 1"}}
    )
    gold = [{"name": "get_price", "arguments": {"link": [1]}}]
    assert judge(bad, calls=gold).rule == "arguments_not_json"


def test_skills_are_judged_through_the_loader():
    load = call("load_skill", {"name": "price-reply"}, "s")
    price = call("get_price", {"link": 1}, "p")
    gold = [{"name": "get_price", "arguments": {"link": [1]}}]
    assert judge(assistant(load, price), skills=["price-reply"], calls=gold).correct
    assert judge(assistant(price), skills=["price-reply"], calls=gold).rule == "wrong_skills"
    assert judge(assistant(load), skills=["price-reply"]).correct
    assert judge(assistant(load, price), calls=gold).rule == "wrong_skills"
    # The loader takes one skill id, as its schema says: an extra or a missing key is wrong.
    for args in ({"name": "price-reply", "extra": 1}, {}, {"name": 3}):
        verdict = judge(
            assistant(call("load_skill", args, "s"), price), skills=["price-reply"], calls=gold
        )
        assert verdict.rule == "wrong_skills" and "exactly a skill id" in verdict.detail


@pytest.mark.parametrize(
    ("text", "reply", "ok"),
    [
        ("Link 3 is 199 yuan.", {"contains": ["199"], "language": "en"}, True),
        ("Link 3 is cheap.", {"contains": ["199"]}, False),
        ("三号链接 199 元", {"language": "zh"}, True),
        ("Link 3 is 199.", {"language": "zh"}, False),
        ("三号链接 199 元", {"language": "en"}, False),
        # a language is judged by the script it is written in: Japanese by its kana (a reply in
        # kana alone too; Chinese without kana is not Japanese), Korean by Hangul, Russian by
        # Cyrillic; French (as every language of Latin letters) by no other script
        ("3番リンクは199円です。", {"language": "ja"}, True),
        ("ありがとうございます", {"language": "ja"}, True),
        ("三号链接 199 元", {"language": "ja"}, False),
        ("3番リンクは199円です。", {"language": "zh"}, False),
        ("3번 링크는 199위안입니다.", {"language": "ko"}, True),
        ("三号链接 199 元", {"language": "ko"}, False),
        ("Le vol part à 9 h.", {"language": "fr"}, True),
        ("Пожалуйста! Хорошей поездки.", {"language": "fr"}, False),
        ("Пожалуйста! Хорошей поездки.", {"language": "ru"}, True),
        ("Have a good trip.", {"language": "ru"}, False),
        ("3番リンクは199円です。", {"language": "en"}, False),
        ("The cheapest ever!", {"not_contains": ["cheapest"]}, False),
        ("x" * 11, {"max_chars": 10}, False),
    ],
)
def test_reply_constraints(text, reply, ok):
    assert judge(assistant(content=text), no_call=True, reply=reply).correct is ok


def test_a_reply_language_is_an_iso_code_the_scorer_can_judge():
    for code in ("zh", "en", "ja", "ko", "fr", "de", "es", "ru", "ar"):
        assert code in REPLY_LANGUAGES
    for odd in ("klingon", ["en"]):
        with pytest.raises(EpisodeError, match="language must be the ISO 639-1 code .* ja,"):
            Gold.from_dict({"no_call": True, "reply": {"language": odd}}, n_messages=2)


def test_score_predictions_counts_missing_and_unknown_ids():
    episodes = [
        Episode.from_dict(
            {
                "id": f"e{i}",
                "harness": HARNESS.to_dict(),
                "messages": [{"role": "user", "content": "price of 1?"}],
                "gold": {"calls": [{"name": "get_price", "arguments": {"link": [1]}}]},
                "meta": {"category": "single" if i < 2 else "other"},
            }
        )
        for i in range(3)
    ]
    predictions = {
        "e0": {"message": assistant(call("get_price", {"link": 1}))},
        "e1": {"message": assistant(call("get_price", {"link": 2}))},
        "zz": {"message": assistant(content="hi")},
    }
    report = score_predictions(episodes, predictions)
    data = report.to_dict()
    assert (data["correct"], data["total"], data["accuracy"]) == (1, 3, 1 / 3)
    assert data["missing"] == ["e2"] and data["unknown_ids"] == ["zz"]
    assert data["categories"]["single"] == {"correct": 1, "total": 2, "accuracy": 0.5}
    assert [i["reason"].split(":")[0] for i in data["items"]] == [
        "ok",
        "value_mismatch",
        "missing_prediction",
    ]


def test_a_predictions_file_keeps_every_prediction_line_and_names_the_lines_it_cannot_use(tmp_path):
    path = tmp_path / "preds.jsonl"
    first = {"id": 7, "message": assistant(content="first"), "at": 1}
    path.write_text(
        "\n".join(
            [
                json.dumps(first),
                "{broken",
                json.dumps({"id": "x"}),
                "[1]",
                json.dumps({"id": "7", "message": assistant(content="again")}),
                json.dumps({"id": "y", "message": None}),
            ]
        )
        + "\n"
    )
    predictions, bad_lines = read_predictions(path)
    assert predictions == [  # ids are compared as text; a second line of an id is kept
        Prediction("7", first["message"], 1, str(path), 1),
        Prediction("7", assistant(content="again"), None, str(path), 5),
        Prediction("y", None, None, str(path), 6),
    ]
    assert [line.split(": ", 1)[0] for line in bad_lines] == [f"{path}:{n}" for n in (2, 3, 4)]
    assert "not valid JSON" in bad_lines[0]
    assert bad_lines[1].endswith("expected {id, message}: no 'message'")
    assert bad_lines[2].endswith("expected {id, message}, not a JSON array")


# ---- hsa score on files: every prediction judged, nothing scored is an error ------------------

TWO_TURNS = {
    "harness": HARNESS.to_dict(),
    "messages": [
        {"role": "user", "content": "price of 1?"},
        assistant(call("get_price", {"link": 1})),
        {"role": "tool", "tool_call_id": "c1", "content": "100"},
        assistant(content="It is 100."),
    ],
    "gold": {
        "turns": [
            {"at": 1, "calls": [{"name": "get_price", "arguments": {"link": [1]}}]},
            {"at": 3, "no_call": True},
        ]
    },
}


def score_files(tmp_path, capsys, predictions: list, *extra: str) -> tuple[int, str, str]:
    """``hsa score`` on two two-turn episodes (e0, e1) and these prediction lines (dicts written
    as JSON, strings as they are): exit status, stdout, stderr."""
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text("".join(json.dumps({"id": f"e{i}", **TWO_TURNS}) + "\n" for i in range(2)))
    path = tmp_path / "preds.jsonl"
    path.write_text(
        "".join((p if isinstance(p, str) else json.dumps(p)) + "\n" for p in predictions)
    )
    code = main(["score", "--episodes", str(episodes), "--predictions", str(path), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


RIGHT_CALL = assistant(call("get_price", {"link": 1}))
WRONG_CALL = assistant(call("get_price", {"link": 2}))
REPLY = assistant(content="It is 100.")


def test_each_prediction_is_judged_at_the_gold_turn_it_names(tmp_path, capsys):
    """A file that answers every turn is judged on every turn: keeping the first line of each
    id judged only the (right) first turns and read 100%."""
    predictions = [
        {"id": "e0", "at": 1, "message": RIGHT_CALL},
        {"id": "e0", "at": 3, "message": RIGHT_CALL},  # a call where the turn wants a reply
        {"id": "e1", "at": 1, "message": RIGHT_CALL},
        {"id": "e1", "at": 3, "message": REPLY},
    ]
    code, printed, _ = score_files(tmp_path, capsys, predictions, "--json")
    report = json.loads(printed)
    assert code == 0 and (report["correct"], report["total"]) == (3, 4)
    assert [(i["id"], i["at"], i["correct"]) for i in report["items"]] == [
        ("e0", 1, True),
        ("e0", 3, False),
        ("e1", 1, True),
        ("e1", 3, True),
    ]
    assert report["items"][1]["reason"].startswith("unexpected_call")
    code, printed, _ = score_files(tmp_path, capsys, predictions)
    assert "accuracy 75.00% (3/4)" in printed


def test_a_second_prediction_for_a_turn_is_named_and_not_judged(tmp_path, capsys):
    """Two answers to one turn (a line without ``at`` answers the first turn): which one counts
    would be a guess, so the second is named like an unreadable line and the first is judged."""
    predictions = [
        {"id": "e0", "at": 1, "message": RIGHT_CALL},
        {"id": "e0", "message": WRONG_CALL},
        {"id": "e1", "at": 3, "message": REPLY},
        {"id": "e1", "at": 3, "message": WRONG_CALL},
    ]
    code, printed, _ = score_files(tmp_path, capsys, predictions, "--json")
    report = json.loads(printed)
    path = tmp_path / "preds.jsonl"
    assert report["bad_prediction_lines"] == [
        f"{path}:2 id=e0 at: a second prediction for the gold turn at message 1 (the first is on "
        "line 1): not judged",
        f"{path}:4 id=e1 at: a second prediction for the gold turn at message 3 (the first is on "
        "line 3): not judged",
    ]
    assert code == 0 and (report["correct"], report["total"]) == (2, 2)
    code, _, errors = score_files(tmp_path, capsys, predictions)
    assert f"prediction line not judged: {path}:2 id=e0 at: a second prediction" in errors


@pytest.mark.parametrize("as_json", [[], ["--json"]])
@pytest.mark.parametrize(
    ("lines", "why"),
    [
        ([], "preds.jsonl: the file holds no prediction line: nothing scored"),
        (
            [{"id": "E0", "message": RIGHT_CALL}, {"id": "e9", "message": RIGHT_CALL}],
            "preds.jsonl: no prediction line matched an episode id (first unmatched id: 'E0' on "
            "line 1; ids are compared exactly, as text): nothing scored",
        ),
        (
            [json.dumps([{"id": "e0", "message": RIGHT_CALL}]), "{broken"],
            "preds.jsonl: no line is a prediction (2 unusable; the first: {path}:1: expected "
            "{{id, message}}, not a JSON array): nothing scored",
        ),
    ],
    ids=["empty", "no-id-matches", "no-line-readable"],
)
def test_a_predictions_file_that_judges_nothing_is_an_error(tmp_path, capsys, lines, why, as_json):
    """Every episode counted missing is no 0% score but a wrong file: exit 2, naming it and why,
    with --json too (where a report of zeros would read as a model's score)."""
    code, printed, errors = score_files(tmp_path, capsys, lines, *as_json)
    path = tmp_path / "preds.jsonl"
    assert code == 2 and printed == ""
    assert errors.strip() == f"error: {tmp_path}/" + why.format(path=path)


def test_one_judged_prediction_is_a_score(tmp_path, capsys):
    """Episodes without a prediction count wrong, as documented, once one prediction matched."""
    code, printed, _ = score_files(tmp_path, capsys, [{"id": "e1", "message": RIGHT_CALL}])
    assert code == 0 and "accuracy 50.00% (1/2)" in printed
    assert "1 id(s) without a prediction (counted wrong): e0" in printed


# ---- BFCL parity: acceptable values of another type ("variables") -----------------------------

VARIABLE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "book",
            "description": "",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "nights": {"type": "integer"},
                    "budget": {"type": "number"},
                    "note": {"type": "string"},
                    "rooms": {"type": "array", "items": {"type": "integer"}},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["city"],
            },
        },
    }
]
VARIABLE_HARNESS = Harness.from_dict({"name": "v", "tools": VARIABLE_TOOLS})


def judge_book(args: dict, gold_args: dict, omittable=()) -> object:
    gold = {
        "name": "book",
        "arguments": {"city": ["Rome"], **gold_args},
        "omittable": list(omittable),
    }
    return score_turn(
        assistant(call("book", {"city": "Rome", **args})), turn(calls=[gold]), VARIABLE_HARNESS
    )


@pytest.mark.parametrize(
    ("args", "gold_args", "rule"),
    [
        # null listed for an optional string whose default is null: null passes, as in BFCL
        ({"note": None}, {"note": [None]}, None),
        ({}, {"note": [None]}, "missing_param"),  # listed without "" -> must be given
        ({"note": "hi"}, {"note": [None]}, "value_mismatch"),
        ({"note": None}, {"note": ["hi"]}, "type_mismatch"),  # gold of the schema's type: strict
        ({"budget": None}, {"budget": [None]}, None),
        # a string "variable" for a number: a string equal to it passes, compared exactly
        ({"budget": "max_budget"}, {"budget": ["max_budget"]}, None),
        ({"budget": "MAX_budget"}, {"budget": ["max_budget"]}, "value_mismatch"),
        ({"budget": 3}, {"budget": ["max_budget"]}, "value_mismatch"),
        ({"budget": [3]}, {"budget": ["max_budget"]}, "type_mismatch"),
        # a float gold for an integer: 5 and 5.0 both pass (the float is the gold's own type)
        ({"nights": 5}, {"nights": [5.0]}, None),
        ({"nights": 5.0}, {"nights": [5.0]}, None),
        ({"nights": 5.0}, {"nights": [5]}, "type_mismatch"),
        # array items one level deep: items of the gold list's type pass for an integer array
        ({"rooms": ["a", "b"]}, {"rooms": [["a", "b"]]}, None),
        ({"rooms": ["A", "b"]}, {"rooms": [["a", "b"]]}, None),  # not a variable: normalised
        ({"rooms": ["a", True]}, {"rooms": [["a", "b"]]}, "type_mismatch"),
        ({"rooms": [1, "b"]}, {"rooms": [["a", "b"]]}, "value_mismatch"),
        ({"rooms": [1, 2]}, {"rooms": [[1, 2]]}, None),
        ({"rooms": [1, "x"]}, {"rooms": [[1, 2]]}, "type_mismatch"),
        # a non-list gold stands for the whole array (BFCL: a variable name)
        ({"tags": "my_tags"}, {"tags": ["my_tags"]}, None),
        ({"tags": [1]}, {"tags": ["my_tags"]}, "value_mismatch"),
    ],
)
def test_gold_of_another_type_is_a_variable(args, gold_args, rule):
    verdict = judge_book(args, gold_args)
    assert verdict.rule == rule, verdict.reason


def test_string_normalisation_reads_single_quotes_as_double():
    assert normalize_string("McDonald's") == normalize_string('McDonald"s')
    assert judge_book({"note": 'It"s fine'}, {"note": ["It's fine"]}).correct


# ---- parallel calls: one-to-one matching in any order -------------------------------------------


PARALLEL_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": "",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "required": ["a"],
            },
        },
    }
    for name in ("f", "g")
]
PARALLEL_HARNESS = Harness.from_dict({"name": "p", "tools": PARALLEL_TOOLS})


@st.composite
def parallel_turns(draw):
    """2-5 gold calls (mostly the same function), each with its own a and b values."""
    n = draw(st.integers(2, 5))
    names = draw(st.lists(st.sampled_from(["f", "f", "g"]), min_size=n, max_size=n))
    a_values = draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n, unique=True))
    b_values = draw(
        st.lists(st.text("xyz", min_size=1, max_size=4), min_size=n, max_size=n, unique=True)
    )
    return list(zip(names, a_values, b_values))


def parallel_gold(calls):
    return turn(calls=[{"name": n, "arguments": {"a": [a], "b": [b]}} for n, a, b in calls])


@given(parallel_turns(), st.randoms(use_true_random=False))
def test_any_permutation_of_correct_parallel_calls_passes(calls, rng):
    order = list(range(len(calls)))
    rng.shuffle(order)
    message = assistant(
        *(call(calls[k][0], {"a": calls[k][1], "b": calls[k][2]}, f"c{k}") for k in order)
    )
    judgement = judge_full(message, parallel_gold(calls), PARALLEL_HARNESS)
    assert judgement.correct, judgement.verdict.reason
    assert judgement.partial == {
        "name": 1.0,
        "arguments": 1.0,
        "count": 1.0,
        "skills": None,
        "reply": None,
    }


@given(parallel_turns(), st.data())
def test_swapping_an_argument_between_same_named_calls_fails(calls, data):
    pairs = [
        (i, j)
        for i in range(len(calls))
        for j in range(i + 1, len(calls))
        if calls[i][0] == calls[j][0]
    ]
    if not pairs:
        calls = [("f", a, b) for _, a, b in calls]
        pairs = [(0, 1)]
    i, j = data.draw(st.sampled_from(pairs))
    args = [{"a": a, "b": b} for _, a, b in calls]
    args[i]["a"], args[j]["a"] = args[j]["a"], args[i]["a"]  # a values differ (drawn unique)
    message = assistant(*(call(n, args[k], f"c{k}") for k, (n, _, _) in enumerate(calls)))
    judgement = judge_full(message, parallel_gold(calls), PARALLEL_HARNESS)
    assert judgement.verdict.rule == "value_mismatch", judgement.verdict.reason
    assert "no call matches gold call" in judgement.verdict.detail
    assert judgement.partial["name"] == 1.0 and judgement.partial["count"] == 1.0
    assert judgement.partial["arguments"] == (len(calls) - 2) / len(calls)


def test_unmatched_parallel_call_reports_its_closest_miss():
    gold = parallel_gold([("f", 1, "x"), ("f", 2, "y")])
    # Both model calls fit gold call 0 only; gold call 1 is explained by the leftover call's miss.
    message = assistant(call("f", {"a": 1, "b": "x"}, "c0"), call("f", {"a": 1, "b": "x"}, "c1"))
    verdict = score_turn(message, gold, PARALLEL_HARNESS)
    assert verdict.rule == "value_mismatch"
    assert verdict.detail.startswith("no call matches gold call 1 (f)")
    # A leftover call of another type is reported by the type rule, not as a generic mismatch.
    message = assistant(call("f", {"a": 1, "b": "x"}, "c0"), call("f", {"a": "2", "b": "y"}, "c1"))
    assert score_turn(message, gold, PARALLEL_HARNESS).rule == "type_mismatch"


# ---- judge: the verdict with partial credit --------------------------------------------------


def test_judge_partial_credit_breakdown():
    gold = parallel_gold([("f", 1, "x"), ("g", 2, "y")])
    one_right = assistant(call("f", {"a": 1, "b": "x"}, "c0"), call("g", {"a": 3, "b": "y"}, "c1"))
    j = judge_full(one_right, gold, PARALLEL_HARNESS)
    assert j.verdict.rule == "value_mismatch"
    assert j.partial == {"name": 1.0, "arguments": 0.5, "count": 1.0, "skills": None, "reply": None}
    extra = assistant(
        call("f", {"a": 1, "b": "x"}, "c0"),
        call("g", {"a": 2, "b": "y"}, "c1"),
        call("g", {"a": 2, "b": "y"}, "c2"),
    )
    j = judge_full(extra, gold, PARALLEL_HARNESS)
    assert j.verdict.rule == "wrong_call_count"
    assert (j.partial["name"], j.partial["arguments"], j.partial["count"]) == (1.0, 1.0, 0.0)
    assert judge_full(assistant(content="no idea"), gold, PARALLEL_HARNESS).partial["name"] == 0.0
    broken = assistant(
        {"id": "c0", "type": "function", "function": {"name": "f", "arguments": "{"}}
    )
    j = judge_full(broken, parallel_gold([("f", 1, "x"), ("g", 2, "y")]), PARALLEL_HARNESS)
    assert j.verdict.rule == "arguments_not_json"
    assert (j.partial["name"], j.partial["arguments"]) == (0.5, 0.0)


def test_judge_accepts_parsed_calls_and_reports_skills_and_reply():
    gold = parallel_gold([("f", 1, "x"), ("g", 2, "y")])
    parsed = [("g", {"a": 2, "b": "y"}), ("f", {"a": 1, "b": "x"})]
    assert judge_full(parsed, gold, PARALLEL_HARNESS).correct
    load, price = call("load_skill", {"name": "price-reply"}, "s"), call("get_price", {"link": 1})
    skills_turn = turn(
        skills=["price-reply"], calls=[{"name": "get_price", "arguments": {"link": [1]}}]
    )
    assert judge_full(assistant(load, price), skills_turn, HARNESS).partial["skills"] == 1.0
    j = judge_full(assistant(price), skills_turn, HARNESS)
    assert j.verdict.rule == "wrong_skills" and j.partial["skills"] == 0.0
    assert j.partial["arguments"] == 1.0
    reply_turn = turn(no_call=True, reply={"contains": ["199"]})
    assert judge_full(assistant(content="199 yuan"), reply_turn, HARNESS).partial == {
        "name": 1.0,
        "arguments": 1.0,
        "count": 1.0,
        "skills": None,
        "reply": 1.0,
    }
    j = judge_full(assistant(price, content="199"), reply_turn, HARNESS)
    assert j.verdict.rule == "unexpected_call" and j.partial["count"] == 0.0
