"""The BFCL AST rules, one by one, and the scoring of a predictions file."""

from __future__ import annotations

import pytest

from hsa.episode import Episode
from hsa.gold import TurnGold
from hsa.harness import Harness
from hsa.scorer import normalize_string, score_predictions, score_turn, values_equal
from tests.conftest import PRICE_TOOL, assistant, call

TOOLS = [
    PRICE_TOOL,
    {"type": "function", "function": {"name": "math.hypot", "description": "", "parameters": {
        "type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"},
                                         "z": {"type": "integer"}},
        "required": ["x", "y"]}}},
    {"type": "function", "function": {"name": "plan", "description": "", "parameters": {
        "type": "object", "properties": {
            "stops": {"type": "array", "items": {"type": "string"}},
            "options": {"type": "object"}, "fast": {"type": "boolean"}, "anything": {}},
        "required": ["stops"]}}},
]
HARNESS = Harness.from_dict({"name": "t", "tools": TOOLS, "skills": [
    {"id": "price-reply", "description": "d", "content": "c"}]})


def turn(**kw) -> TurnGold:
    return TurnGold.from_dict(kw, where="gold", default_at=1)


def judge(message, **gold):
    return score_turn(message, turn(**gold), HARNESS)


HYPOT = {"name": "math.hypot", "arguments": {"x": [4], "y": [5], "z": [0]}, "omittable": ["z"]}


@pytest.mark.parametrize(("args", "rule"), [
    ({"x": 4, "y": 5}, None),                       # z may be omitted
    ({"x": 4.0, "y": 5, "z": 0}, None),             # int -> float is allowed
    ({"x": 4}, "missing_required"),
    ({"x": 4, "y": 5, "w": 1}, "unexpected_param"),  # not in the schema
    ({"x": 4, "y": 6}, "value_mismatch"),
    ({"x": 4, "y": 5, "z": 0.0}, "type_mismatch"),   # float for integer: no coercion
    ({"x": True, "y": 5}, "type_mismatch"),          # a bool is never a number
    ({"x": "4", "y": 5}, "type_mismatch"),
])
def test_simple_call_rules(args, rule):
    verdict = judge(assistant(call("math.hypot", args)), calls=[HYPOT])
    assert verdict.rule == rule, verdict.reason
    assert verdict.correct == (rule is None)


def test_exact_name_match_keeps_dots():
    assert judge(assistant(call("math_hypot", {"x": 4, "y": 5})), calls=[HYPOT]).rule == "wrong_name"


def test_param_in_schema_but_not_in_gold_is_unexpected():
    gold = {"name": "math.hypot", "arguments": {"x": [4], "y": [5]}}
    verdict = judge(assistant(call("math.hypot", {"x": 4, "y": 5, "z": 0})), calls=[gold])
    assert verdict.rule == "unexpected_param" and "not expected by the gold" in verdict.detail


def test_non_omittable_gold_param_must_be_given():
    gold = {"name": "get_price", "arguments": {"link": [3], "currency": ["CNY"]}}
    assert judge(assistant(call("get_price", {"link": 3})), calls=[gold]).rule == "missing_param"


@pytest.mark.parametrize(("value", "acceptable", "equal"), [
    ("New York, NY", "new york ny", True),
    ("San-Francisco_CA", "san francisco ca", True),
    ("Paris", "London", False),
    (["a", "b"], ["a", "b"], True),
    (["b", "a"], ["a", "b"], False),                  # lists keep their order
    ({"k": "v", "n": 1}, {"k": ["v", "w"], "n": [1]}, True),
    ({"k": "v"}, {"k": ["v"], "n": ["", 1]}, True),   # "" inside a dict pattern: may be left out
    ({"k": "v"}, {"k": ["v"], "n": [1]}, False),
    ({"k": "v", "extra": 1}, {"k": ["v"]}, False),
    (True, 1, False),
    (1, True, False),
    (2, 2.0, True),
    (None, None, True),
])
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
    assert judge(assistant(call("plan", {"stops": ["a"], "anything": [1, 2]})), calls=[gold]).correct


def test_parallel_calls_match_in_any_order_unless_ordered():
    gold = [{"name": "get_price", "arguments": {"link": [1]}},
            {"name": "get_price", "arguments": {"link": [2]}}]
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
    bad = assistant({"id": "x", "type": "function",
                     "function": {"name": "get_price", "arguments": "{link: 1"}})
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


@pytest.mark.parametrize(("text", "reply", "ok"), [
    ("Link 3 is 199 yuan.", {"contains": ["199"], "language": "en"}, True),
    ("Link 3 is cheap.", {"contains": ["199"]}, False),
    ("三号链接 199 元", {"language": "zh"}, True),
    ("Link 3 is 199.", {"language": "zh"}, False),
    ("三号链接 199 元", {"language": "en"}, False),
    ("The cheapest ever!", {"not_contains": ["cheapest"]}, False),
    ("x" * 11, {"max_chars": 10}, False),
])
def test_reply_constraints(text, reply, ok):
    assert judge(assistant(content=text), no_call=True, reply=reply).correct is ok


def test_score_predictions_counts_missing_and_unknown_ids():
    episodes = [Episode.from_dict({"id": f"e{i}", "harness": HARNESS.to_dict(),
                                   "messages": [{"role": "user", "content": "price of 1?"}],
                                   "gold": {"calls": [{"name": "get_price",
                                                       "arguments": {"link": [1]}}]},
                                   "meta": {"category": "single" if i < 2 else "other"}})
                for i in range(3)]
    predictions = {"e0": {"message": assistant(call("get_price", {"link": 1}))},
                   "e1": {"message": assistant(call("get_price", {"link": 2}))},
                   "zz": {"message": assistant(content="hi")}}
    report = score_predictions(episodes, predictions)
    data = report.to_dict()
    assert (data["correct"], data["total"], data["accuracy"]) == (1, 3, 1 / 3)
    assert data["missing"] == ["e2"] and data["unknown_ids"] == ["zz"]
    assert data["categories"]["single"] == {"correct": 1, "total": 2, "accuracy": 0.5}
    assert [i["reason"].split(":")[0] for i in data["items"]] == [
        "ok", "value_mismatch", "missing_prediction"]
