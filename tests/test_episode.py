"""Episodes: parsing, validation against the harness, and rejects that name line, id and field."""

from __future__ import annotations

import json

import pytest

from hsa.episode import Episode, read_episodes
from hsa.errors import EpisodeError, Reject
from hsa.harness import load_harness
from tests.conftest import assistant, call


def good_row(row_id="e1", **over):
    row = {"id": row_id,
           "messages": [{"role": "user", "content": "How much is link 3?"},
                        assistant(call("load_skill", {"name": "price-reply"}, "c0"),
                                  call("get_price", {"link": 3}, "c1")),
                        {"role": "tool", "tool_call_id": "c0", "content": "# Price reply"},
                        {"role": "tool", "tool_call_id": "c1", "content": "{\"price\": 199}"},
                        assistant(content="Link 3 is 199 yuan.")],
           "gold": {"turns": [
               {"at": 1, "skills": ["price-reply"],
                "calls": [{"name": "get_price", "arguments": {"link": [3]},
                           "omittable": ["currency"]}]},
               {"at": 4, "no_call": True, "reply": {"contains": ["199"], "language": "en"}}]},
           "meta": {"category": "single_call"}}
    row.update(over)
    return row


def test_good_episode_parses_and_round_trips(harness_dir):
    harness = load_harness(harness_dir)
    episode = Episode.from_dict(good_row(), harness=harness)
    assert episode.gold.skills == ("price-reply",)
    assert [t.at for t in episode.gold.turns] == [1, 4]
    again = Episode.from_dict(json.loads(json.dumps(episode.to_dict())), harness=harness)
    assert again == episode


def test_object_arguments_become_json_strings(harness_dir):
    row = good_row()
    row["messages"][1]["tool_calls"][1]["function"]["arguments"] = {"link": 3}
    episode = Episode.from_dict(row, harness=load_harness(harness_dir))
    assert episode.messages[1]["tool_calls"][1]["function"]["arguments"] == '{"link":3}'


def test_harness_by_reference_resolves_relative_to_the_file(harness_dir, tmp_path):
    path = tmp_path / "episodes.jsonl"
    rows = [good_row("a", harness="tiny-shop"), good_row("b", harness="tiny-shop")]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    episodes = list(read_episodes(path))
    assert [e.id for e in episodes] == ["a", "b"]
    assert episodes[0].harness is episodes[1].harness  # loaded once, shared
    assert episodes[0].to_dict()["harness"] == "tiny-shop"


def test_inline_harness(harness_dir):
    inline = load_harness(harness_dir).to_dict()
    episode = Episode.from_dict(good_row(harness=inline))
    assert episode.harness.tool_names == ("get_price", "get_price_history")
    assert episode.to_dict()["harness"] == inline


def _mutations():
    def role(row):
        row["messages"][0]["role"] = "narrator"
    def args_not_json(row):
        row["messages"][1]["tool_calls"][1]["function"]["arguments"] = "{link: 3"
    def args_not_object(row):
        row["messages"][1]["tool_calls"][1]["function"]["arguments"] = "[3]"
    def unknown_tool(row):
        row["messages"][1]["tool_calls"][1]["function"]["name"] = "get_cost"
    def unknown_skill(row):
        row["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"name": "nope"}'
    def orphan_result(row):
        row["messages"][3]["tool_call_id"] = "c9"
    def gold_unknown_tool(row):
        row["gold"]["turns"][0]["calls"][0]["name"] = "get_cost"
    def gold_unknown_param(row):
        row["gold"]["turns"][0]["calls"][0]["arguments"]["colour"] = ["red"]
    def gold_unknown_skill(row):
        row["gold"]["turns"][0]["skills"] = ["nope"]
    def gold_unsatisfiable(row):
        row["gold"]["turns"][0]["calls"][0]["arguments"] = {}
    def gold_at_user(row):
        row["gold"]["turns"][0]["at"] = 0
    def gold_empty_turn(row):
        row["gold"]["turns"][1] = {"at": 4}
    def gold_missing(row):
        del row["gold"]
    def tool_calls_on_user(row):
        row["messages"][0]["tool_calls"] = row["messages"][1]["tool_calls"]
    return [
        (role, "messages[0].role", "unknown role 'narrator'"),
        (args_not_json, "messages[1].tool_calls[1].function.arguments", "not JSON"),
        (args_not_object, "messages[1].tool_calls[1].function.arguments", "must be a JSON object"),
        (unknown_tool, "messages[1].tool_calls[1].function.name", "unknown tool 'get_cost'"),
        (unknown_skill, "messages[1].tool_calls[0].function.arguments.name", "skill 'nope'"),
        (orphan_result, "messages[3].tool_call_id", "answers no earlier tool call"),
        (gold_unknown_tool, "gold.turns[0].calls[0].name", "unknown tool 'get_cost'"),
        (gold_unknown_param, "gold.turns[0].calls[0].arguments", "parameter 'colour'"),
        (gold_unknown_skill, "gold.turns[0].skills", "skill 'nope'"),
        (gold_unsatisfiable, "gold.turns[0].calls[0].arguments.link", "cannot be satisfied"),
        (gold_at_user, "gold.turns[0].at", "points at a 'user' message"),
        (gold_empty_turn, "gold.turns[1]", "must expect calls, skills, or no_call"),
        (gold_missing, "gold", "gold is required"),
        (tool_calls_on_user, "messages[0].tool_calls", "only assistant messages"),
    ]


@pytest.mark.parametrize(("mutate", "field", "message"), _mutations(),
                         ids=[m[0].__name__ for m in _mutations()])
def test_bad_row_is_rejected_with_line_id_and_field(harness_dir, tmp_path, mutate, field, message):
    bad = good_row("bad")
    mutate(bad)
    path = tmp_path / "episodes.jsonl"
    lines = [json.dumps(good_row("before")), "{broken json", json.dumps(bad),
             json.dumps(good_row("after"))]
    path.write_text("\n".join(lines) + "\n")
    out = list(read_episodes(path, harness=load_harness(harness_dir)))
    assert [o.id for o in out if isinstance(o, Episode)] == ["before", "after"]
    broken, reject = [o for o in out if isinstance(o, Reject)]
    assert broken.line == 2 and "not valid JSON" in broken.reason
    assert (reject.line, reject.id, reject.field) == (3, "bad", field)
    assert message in reject.reason
    assert str(path) in str(reject)


def test_missing_harness_is_an_error():
    with pytest.raises(EpisodeError, match="no harness"):
        Episode.from_dict(good_row())


def test_written_files_get_ordinary_permissions(tmp_path):
    import os
    import stat

    from hsa.jsonl import write_jsonl
    path = tmp_path / "x.jsonl"
    write_jsonl(path, [{"a": 1}])
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
