"""Episodes: parsing, validation against the harness, and rejects that name line, id and field."""

from __future__ import annotations

import copy
import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hsa.errors import EpisodeError, HsaError, Reject
from hsa.files.jsonl import DuplicateKey, LongInteger, loads
from hsa.model.episode import Episode, read_all_episodes, read_episodes
from hsa.model.harness import Harness, load_harness
from tests.conftest import PRICE_TOOL, assistant, call, write_harness


def good_row(row_id="e1", **over):
    row = {
        "id": row_id,
        "messages": [
            {"role": "user", "content": "How much is link 3?"},
            assistant(
                call("load_skill", {"name": "price-reply"}, "c0"),
                call("get_price", {"link": 3}, "c1"),
            ),
            {"role": "tool", "tool_call_id": "c0", "content": "# Price reply"},
            {"role": "tool", "tool_call_id": "c1", "content": '{"price": 199}'},
            assistant(content="Link 3 is 199 yuan."),
        ],
        "gold": {
            "turns": [
                {
                    "at": 1,
                    "skills": ["price-reply"],
                    "calls": [
                        {"name": "get_price", "arguments": {"link": [3]}, "omittable": ["currency"]}
                    ],
                },
                {"at": 4, "no_call": True, "reply": {"contains": ["199"], "language": "en"}},
            ]
        },
        "meta": {"category": "single_call"},
    }
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


@pytest.mark.parametrize(
    ("key", "value", "field", "message"),
    [
        ("hooks_source", 5, "harness.hooks_source", "expected a string, got int"),
        ("layouts", [1, 2], "harness.layouts", "expected a mapping, got list"),
        ("layouts", {"mine.j2": 3}, "harness.layouts.mine.j2", "expected a string, got int"),
        ("skill_kinds", [{"a": 1}], "harness.skill_kinds[0]", "expected a string, got dict"),
        ("skills.license", 5, "harness.skills[0].license", "'license' must be a string"),
        ("hooks.description", 5, "harness.hooks[0].description", "must be a string"),
    ],
)
def test_an_inline_harness_field_of_the_wrong_type_rejects_its_line(
    harness_dir, tmp_path, key, value, field, message
):
    """One line's inline harness with a field of the wrong type crashed the whole run (a
    TypeError in compile(), dict(), str.strip: every line lost)."""
    inline = load_harness(harness_dir).to_dict()
    bad = copy.deepcopy(inline)
    if "." in key:
        part, name = key.split(".")
        bad[part][0][name] = value
    else:
        bad[key] = value
    path = tmp_path / "episodes.jsonl"
    rows = [
        good_row("a", harness=inline),
        good_row("b", harness=bad),
        good_row("c", harness=inline),
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = list(read_episodes(path))
    assert [o.id for o in out if isinstance(o, Episode)] == ["a", "c"]
    (reject,) = [o for o in out if isinstance(o, Reject)]
    assert (reject.line, reject.field) == (2, field) and message in reject.reason


def test_a_hook_description_left_empty_is_no_description(harness_dir):
    inline = load_harness(harness_dir).to_dict()
    inline["hooks"][0]["description"] = None  # what ``description:`` with nothing after reads as
    assert Episode.from_dict(good_row(harness=inline)).harness.hooks[0].description == ""


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

    def second_result(row):
        row["messages"][3]["tool_call_id"] = "c0"

    def unhashable_result(row):
        row["messages"][3]["tool_call_id"] = ["c1"]

    def duplicate_open_call_id(row):
        # two open calls under one id: a result could answer either
        row["messages"][1]["tool_calls"][1]["id"] = row["messages"][1]["tool_calls"][0]["id"]

    def gold_unknown_tool(row):
        row["gold"]["turns"][0]["calls"][0]["name"] = "get_cost"

    def gold_unknown_param(row):
        row["gold"]["turns"][0]["calls"][0]["arguments"]["colour"] = ["red"]

    def gold_unknown_omittable(row):
        row["gold"]["turns"][0]["calls"][0]["omittable"] = ["colour"]

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
        (
            args_not_json,
            "messages[1].tool_calls[1].function.arguments",
            "arguments: not valid JSON",
        ),
        (args_not_object, "messages[1].tool_calls[1].function.arguments", "must be a JSON object"),
        (unknown_tool, "messages[1].tool_calls[1].function.name", "unknown tool 'get_cost'"),
        (unknown_skill, "messages[1].tool_calls[0].function.arguments.name", "skill 'nope'"),
        (orphan_result, "messages[3].tool_call_id", "answers no earlier tool call"),
        (second_result, "messages[3].tool_call_id", "answers a call messages[2] already answered"),
        (unhashable_result, "messages[3].tool_call_id", "must be a string, got list"),
        (
            duplicate_open_call_id,
            "messages[1].tool_calls[1].id",
            "is already the id of messages[1].tool_calls[0], which no result has answered yet",
        ),
        (gold_unknown_tool, "gold.turns[0].calls[0].name", "unknown tool 'get_cost'"),
        (gold_unknown_param, "gold.turns[0].calls[0].arguments", "parameter 'colour'"),
        (gold_unknown_omittable, "gold.turns[0].calls[0].omittable", "parameter 'colour'"),
        (gold_unknown_skill, "gold.turns[0].skills", "skill 'nope'"),
        (gold_unsatisfiable, "gold.turns[0].calls[0].arguments.link", "cannot be satisfied"),
        (gold_at_user, "gold.turns[0].at", "points at a 'user' message"),
        (gold_empty_turn, "gold.turns[1]", "must expect calls, skills, or no_call"),
        (gold_missing, "gold", "gold is required"),
        (tool_calls_on_user, "messages[0].tool_calls", "only assistant messages"),
    ]


@pytest.mark.parametrize(
    ("mutate", "field", "message"), _mutations(), ids=[m[0].__name__ for m in _mutations()]
)
def test_bad_row_is_rejected_with_line_id_and_field(harness_dir, tmp_path, mutate, field, message):
    bad = good_row("bad")
    mutate(bad)
    path = tmp_path / "episodes.jsonl"
    lines = [
        json.dumps(good_row("before")),
        "{broken json",
        json.dumps(bad),
        json.dumps(good_row("after")),
    ]
    path.write_text("\n".join(lines) + "\n")
    out = list(read_episodes(path, harness=load_harness(harness_dir)))
    assert [o.id for o in out if isinstance(o, Episode)] == ["before", "after"]
    broken, reject = [o for o in out if isinstance(o, Reject)]
    assert broken.line == 2 and "not valid JSON" in broken.reason
    assert (reject.line, reject.id, reject.field) == (3, "bad", field)
    assert message in reject.reason
    assert str(path) in str(reject)


@pytest.mark.parametrize("row_id", ["   ", "a\nb", "tab\there", "bell\x07", "a\x85b", "a\u2028b"])
def test_a_blank_id_or_one_with_control_characters_is_rejected(harness_dir, row_id):
    """Row ids are printed one per line and typed back (hsa replay --id): a blank one, or one
    holding a line break or a tab, could not be."""
    row = good_row("x")
    row["id"] = row_id
    with pytest.raises(EpisodeError, match="id must") as caught:
        Episode.from_dict(row, harness=load_harness(harness_dir))
    assert caught.value.field == "id"


def test_reading_all_episodes_refuses_a_file_with_any_bad_line(harness_dir, tmp_path):
    path = tmp_path / "episodes.jsonl"
    good = [json.dumps(good_row("a")), json.dumps(good_row("b"))]
    path.write_text("\n".join(good) + "\n")
    assert [e.id for e in read_all_episodes(path, harness=load_harness(harness_dir))] == ["a", "b"]
    path.write_text("\n".join([good[0], "{broken json", json.dumps(good_row("")), good[1]]) + "\n")
    with pytest.raises(
        HsaError,
        match=r"^2 episode line\(s\) do not load; first: .*:2: .*not valid "
        r"JSON",
    ):
        read_all_episodes(path, harness=load_harness(harness_dir))


def test_json_nested_too_deep_is_a_reject_naming_its_line_and_field(tmp_path):
    """Arguments nested 300 levels deep crashed every command that read them (orjson writes
    at most 254 levels, the scorer's comparison recursed past Python's limit); the line
    is rejected instead, as is a line whose own values nest too deep."""
    tool = copy.deepcopy(PRICE_TOOL)
    tool["function"]["parameters"]["properties"]["filter"] = {"type": "object"}
    harness = load_harness(write_harness(tmp_path / "h", tools={"a_price.json": tool}))
    deep = '{"a": ' * 300 + "{}" + "}" * 300
    in_arguments = good_row("deep-call")
    in_arguments["messages"][1]["tool_calls"][1]["function"]["arguments"] = (
        '{"link": 3, "filter": ' + deep + "}"
    )
    in_arguments["gold"]["turns"][0]["calls"][0]["arguments"]["filter"] = [{}]
    in_meta = good_row("deep-meta", meta={"x": "@"})
    path = tmp_path / "episodes.jsonl"
    lines = [good_row("before"), in_arguments, good_row("after"), in_meta]
    path.write_text("".join(json.dumps(r).replace('"@"', deep) + "\n" for r in lines))
    out = list(read_episodes(path, harness=harness))
    assert [o.id for o in out if isinstance(o, Episode)] == ["before", "after"]
    in_call, in_line = [o for o in out if isinstance(o, Reject)]
    assert (in_call.line, in_call.id, in_call.field) == (
        2,
        "deep-call",
        "messages[1].tool_calls[1].function.arguments",
    )
    assert in_call.reason.startswith(
        "arguments: JSON nested deeper than 128 levels of objects and lists (in filter.a.a.a.a.a..."
    )
    assert (in_line.line, in_line.id, in_line.field) == (4, None, None)
    assert in_line.reason.startswith(
        "JSON nested deeper than 128 levels of objects and lists (in meta.x.a"
    )
    with pytest.raises(HsaError, match=r"^2 episode line\(s\) do not load; first: .*:2 id="):
        read_all_episodes(path, harness=harness)
    assert loads("[" * 128 + "]" * 128) and loads(b'{"a": "' + b"[" * 500 + b'"}')
    with pytest.raises(orjson.JSONDecodeError, match="nested deeper than 128 levels"):
        loads(b"[" * 129 + b"]" * 129)


def test_missing_harness_is_an_error():
    with pytest.raises(EpisodeError, match="no harness"):
        Episode.from_dict(good_row())


@pytest.mark.parametrize(
    "start, says",
    [
        (b"\x1f\x8b\x08\x00", "gzip-compressed"),
        ("{}".encode("utf-16"), "UTF-16 text"),
        (b"PAR1\x15\x04", "a Parquet file"),
    ],
)
def test_a_file_in_another_format_is_one_error_not_a_reject_per_line(tmp_path, start, says):
    """Read as JSON Lines, each line of a gzip, UTF-16 or Parquet file would be a reject with a
    parse error that hides the cause: the file is refused once, saying what it is."""
    path = tmp_path / "episodes.jsonl"
    path.write_bytes(start + b"\n{}\n")
    with pytest.raises(HsaError, match=f"not UTF-8 JSON Lines: the file is {says}"):
        list(read_episodes(path))


@pytest.mark.parametrize(
    "text",
    [
        '[\n  {"id": "a"},\n  {"id": "b"}\n]\n',
        '{\n  "id": "a"\n}\n',
        '\n\n[\n  {"id": "a"}\n]\n',
        '[{"id": "a"},\n {"id": "b"}]\n',
    ],
)
def test_a_json_document_over_many_lines_is_one_error_not_a_reject_per_line(tmp_path, text):
    path = tmp_path / "episodes.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(HsaError, match="one JSON value written over many lines.*jq -c"):
        list(read_episodes(path))


def test_a_line_that_is_not_utf8_says_so_and_where(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_bytes(b'{"id": "caf\xe9"}\n')
    (reject,) = list(read_episodes(path))
    assert reject.reason.startswith("not valid UTF-8 at byte 11 of the line")


def test_a_line_that_ends_before_its_json_says_so_not_another_line(tmp_path):
    """A food-delivery run's reject read "line 7 ... not valid JSON: unexpected end of data:
    line 2 column 1": the parser's line 2 is past the end of the file's line 7, not the file's
    second line."""
    path = tmp_path / "episodes.jsonl"
    path.write_text('{"id": "a",\n', encoding="utf-8")
    (reject,) = list(read_episodes(path))
    assert "line 2" not in reject.reason, reject.reason
    assert reject.reason.endswith("at the end of the line (a record is written on one line)")


def test_an_episodes_path_that_is_no_regular_file_is_named_as_such(tmp_path):
    from hsa.files.jsonl import input_file

    with pytest.raises(HsaError, match="episodes file does not exist"):
        input_file(tmp_path / "missing.jsonl", "episodes file")
    with pytest.raises(HsaError, match="episodes file is a folder; give the file itself"):
        input_file(tmp_path, "episodes file")
    with pytest.raises(HsaError, match="not a regular file"):
        input_file("/dev/null", "episodes file")


def test_written_files_get_ordinary_permissions(tmp_path):
    import os
    import stat

    from hsa.files.jsonl import write_jsonl

    path = tmp_path / "x.jsonl"
    write_jsonl(path, [{"a": 1}])
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


# ---- trustworthy training targets: recorded calls, gold values, recorded turns ------------------


def _check_failure(harness_dir, row) -> EpisodeError:
    with pytest.raises(EpisodeError) as caught:
        Episode.from_dict(row, harness=load_harness(harness_dir))
    return caught.value


def test_a_recorded_call_that_breaks_its_schema_is_rejected(harness_dir):
    """A wrong type and a parameter the schema does not define: the call must never become a
    training target, even before its gold is looked at."""
    row = good_row()
    row["messages"][1]["tool_calls"][1]["function"]["arguments"] = json.dumps(
        {"link": "four", "colour": "red"}
    )
    error = _check_failure(harness_dir, row)
    assert error.stage == "check:call_schema"
    assert error.field == "messages[1].tool_calls[1].function.arguments"
    assert "'four' is not of type 'integer'" in error.reason and "'colour'" in error.reason


def _with_blocked_call(hook: str) -> tuple[dict, dict]:
    """A good row whose first call ``get_price(link="three")`` a hook's feedback (named
    ``hook.<hook>``) answered before the recovery; (row, feedback message)."""
    row = good_row()
    blocked = assistant(call("get_price", {"link": "three"}, "bad"))
    feedback = {
        "role": "tool",
        "tool_call_id": "bad",
        "name": f"hook.{hook}",
        "content": "link must be a number",
    }
    row["messages"][1:1] = [blocked, feedback]
    row["gold"]["turns"][0]["at"] = 3
    row["gold"]["turns"][1]["at"] = 6
    return row, feedback


def test_a_call_that_a_hook_blocked_may_be_wrong(harness_dir):
    """fail -> hook feedback -> recover: the blocked call is the recorded mistake the lesson is
    about, so it is not held to the schema; the recovery is."""
    row, feedback = _with_blocked_call("reply_length")
    episode = Episode.from_dict(row, harness=load_harness(harness_dir))
    assert episode.messages[1]["tool_calls"][0]["id"] == "bad"
    feedback["name"] = "get_price"  # the tool's own result, no hook's: the call is unexcused
    assert _check_failure(harness_dir, row).stage == "check:call_schema"


@pytest.mark.parametrize("role", ["tool", "user"])
def test_gold_on_a_step_a_hook_sent_back_is_rejected_at_load(harness_dir, role):
    """The gold expected the very call (or reply) a hook of the harness sent back: SFT leaves
    that step out of the loss, but RL and evaluation score judged turns by the gold, and would
    reward the step the harness refuses. The judged step is the recovery after the feedback."""
    row = good_row()
    if role == "tool":
        blocked = assistant(call("get_price", {"link": 4}, "bad"))
        feedback = {"role": "tool", "tool_call_id": "bad", "name": "hook.reply_length"}
    else:
        blocked = assistant(content="Link 3 is 199 yuan, the cheapest anywhere!")
        feedback = {"role": "user", "name": "hook.reply_length"}
    row["messages"][1:1] = [blocked, {**feedback, "content": "not that way"}]
    row["gold"]["turns"][0]["at"] = 3
    row["gold"]["turns"][1]["at"] = 6
    Episode.from_dict(row, harness=load_harness(harness_dir))  # the recovery is judged: fine
    if role == "tool":
        row["gold"]["turns"][0] = {
            "at": 1,
            "calls": [{"name": "get_price", "arguments": {"link": [4]}}],
        }
    else:
        row["gold"]["turns"][0] = {"at": 1, "no_call": True, "reply": {"contains": ["199"]}}
    error = _check_failure(harness_dir, row)
    assert error.stage == "check:recorded_turn"
    assert error.field == "gold.turns[0]"
    assert "messages[1], which hook.reply_length sent back" in error.reason


def test_parallel_calls_are_answered_all_or_none(harness_dir):
    """Of two parallel calls only the first had a result, and the reply stated both: the row
    taught the model to make up a result. Every call of a message is answered, or none is (a
    dataset may leave results out on purpose, as hsa's miniature task does)."""
    row = good_row()
    row["messages"][1]["tool_calls"].append(call("get_price", {"link": 4}, "c2"))
    row["gold"]["turns"][0]["calls"].append(
        {"name": "get_price", "arguments": {"link": [4]}, "omittable": ["currency"]}
    )
    row["gold"]["turns"][0]["ordered"] = False
    error = _check_failure(harness_dir, row)
    assert error.field == "messages[4]"
    assert "messages[1].tool_calls[2] (id 'c2') has no tool result, though its message's call" in (
        error.reason
    )
    row["messages"].insert(4, {"role": "tool", "tool_call_id": "c2", "content": '{"price": 5}'})
    row["gold"]["turns"][1]["at"] = 5
    Episode.from_dict(row, harness=load_harness(harness_dir))
    # none answered, to the end: results left out on purpose
    unanswered = good_row()
    unanswered["messages"] = unanswered["messages"][:2]
    unanswered["gold"]["turns"] = unanswered["gold"]["turns"][:1]
    Episode.from_dict(unanswered, harness=load_harness(harness_dir))


def test_a_tool_result_with_no_call_left_to_answer_is_rejected(harness_dir):
    row = good_row()
    row["messages"].insert(0, {"role": "tool", "content": "{}"})
    for turn in row["gold"]["turns"]:
        turn["at"] += 1
    error = _check_failure(harness_dir, row)
    assert (error.field, error.reason) == (
        "messages[0].tool_call_id",
        "a tool result with no earlier tool call left to answer",
    )
    # a second answer to a call is said as such, by its id
    row = good_row()
    row["messages"].insert(4, {"role": "tool", "tool_call_id": "c1", "content": "{}"})
    row["gold"]["turns"][1]["at"] = 5
    error = _check_failure(harness_dir, row)
    assert error.reason == "tool_call_id 'c1' answers a call messages[3] already answered"


def test_hook_feedback_from_a_hook_the_harness_does_not_define_is_rejected_at_load(harness_dir):
    """A typo in a feedback message's hook name ("hook.replylength") was loaded and its row
    written, then every variant failed in the hook transforms with the same reason: the episode
    is wrong, and says so once, where it is read."""
    row, _ = _with_blocked_call("replylength")
    error = _check_failure(harness_dir, row)
    assert error.field == "messages[2].name"
    assert "the harness defines no hook 'replylength' (hooks: " in error.reason
    assert "reply_length" in error.reason


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        (  # an export that named the result by the wrong tool
            lambda m: m[3].update(name="load_skill"),
            "messages[3].name",
            "a tool result named 'load_skill' answers a call of 'get_price' (its tool_call_id)",
        ),
        (  # no id to pair it by: its name must at least be a tool the harness has
            lambda m: m[3].update(name="get_cost", tool_call_id=None),
            "messages[3].name",
            "a tool result named 'get_cost', which is no tool of the harness",
        ),
        (
            lambda m: m[3].update(name=7),
            "messages[3].name",
            "a tool result's name must be a string, got int",
        ),
        (
            lambda m: m[1].update(reasoning_content=["think"]),
            "messages[1].reasoning_content",
            "reasoning_content must be a string or null, got list",
        ),
    ],
)
def test_a_results_name_and_an_assistants_thinking_are_checked_at_load(
    harness_dir, change, field, reason
):
    """The renames move a result's ``name`` with its tool and rewrite ``reasoning_content`` as
    prose: a name that is not the answering tool's would be left stale (or tell the model
    another tool answered), and thinking that is no text cannot be rewritten."""
    row = good_row()
    change(row["messages"])
    if row["messages"][3].get("tool_call_id", "") is None:
        del row["messages"][3]["tool_call_id"]
    error = _check_failure(harness_dir, row)
    assert (error.field, error.reason[: len(reason)]) == (field, reason)


def test_a_result_named_by_the_tool_that_answers_loads(harness_dir):
    row = good_row()
    row["messages"][2]["name"] = "load_skill"
    row["messages"][3]["name"] = "get_price"
    row["messages"][1]["reasoning_content"] = "Load the skill, then ask get_price."
    episode = Episode.from_dict(row, harness=load_harness(harness_dir))
    assert episode.messages[3]["name"] == "get_price"


@pytest.mark.parametrize(
    ("values", "param", "accepted"),
    [
        ([500], "link", True),  # an integer >= 1: fits
        ([0], "link", False),  # below the minimum of 1
        ([0, -3], "link", False),
        ([0, 7], "link", True),  # one acceptable value fits: enough
        (["four"], "link", True),  # every value of another type: a BFCL variable
        ([0, "four"], "link", False),  # an integer that breaks the range has no excuse
        (["EUR"], "currency", False),  # a string outside the enum
        ([None], "currency", True),  # null for a parameter that is not required
        ([None], "link", True),  # null is another type than integer: a variable
        (["EUR", "CNY"], "currency", True),
    ],
)
def test_gold_values_must_fit_their_schema(harness_dir, values, param, accepted):
    row = good_row()
    arguments = row["gold"]["turns"][0]["calls"][0]["arguments"]
    arguments[param] = values
    if param == "currency":  # the recorded call gives the first valid currency, if any
        given = next(({"currency": v} for v in values if v in ("CNY", "USD")), {})
        row["messages"][1]["tool_calls"][1]["function"]["arguments"] = json.dumps(
            {"link": 3, **given}
        )
    else:
        row["gold"]["turns"][0]["calls"][0]["omittable"] = ["currency"]
        row["messages"] = row["messages"][:1]  # a prompt awaiting its answer (as BFCL)
        row["gold"] = {"calls": row["gold"]["turns"][0]["calls"]}
    if accepted:
        Episode.from_dict(row, harness=load_harness(harness_dir))
        return
    error = _check_failure(harness_dir, row)
    assert error.stage == "check:gold_schema"
    assert error.field.endswith(f"calls[0].arguments.{param}")
    assert "fits its schema" in error.reason


def test_the_schema_default_is_an_acceptable_gold_value(tmp_path):
    """BFCL lists a parameter's default ('N/A') among its answers even where the enum lacks it."""
    tool = {
        "type": "function",
        "function": {
            "name": "run",
            "parameters": {
                "type": "object",
                "required": ["command"],
                "properties": {
                    "command": {"type": "string"},
                    "unit": {
                        "type": "string",
                        "enum": ["seconds", "milliseconds"],
                        "default": "N/A",
                    },
                },
            },
        },
    }
    row = {
        "id": "b",
        "harness": {"name": "h", "tools": [tool]},
        "messages": [{"role": "user", "content": "docker version?"}],
        "gold": {
            "calls": [
                {
                    "name": "run",
                    "arguments": {"command": ["docker --version"], "unit": ["N/A"]},
                    "omittable": ["unit"],
                }
            ]
        },
    }
    Episode.from_dict(row)
    row["gold"]["calls"][0]["arguments"]["unit"] = ["hours"]
    with pytest.raises(EpisodeError, match="fits its schema") as caught:
        Episode.from_dict(row)
    assert caught.value.stage == "check:gold_schema"


def test_patterns_inside_lists_are_checked_key_by_key():
    """BFCL writes an array of objects as a list of {key: [acceptable]} patterns."""
    people = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
        },
    }
    tool = {
        "type": "function",
        "function": {
            "name": "save",
            "parameters": {"type": "object", "required": ["data"], "properties": {"data": people}},
        },
    }
    row = {
        "id": "p",
        "harness": {"name": "h", "tools": [tool]},
        "messages": [{"role": "user", "content": "Chester 42, Jane 43"}],
        "gold": {
            "calls": [
                {
                    "name": "save",
                    "arguments": {
                        "data": [
                            [{"name": ["Chester"], "age": [42]}, {"name": ["Jane"], "age": [43]}]
                        ]
                    },
                }
            ]
        },
    }
    Episode.from_dict(row)
    row["gold"]["calls"][0]["arguments"]["data"][0][1]["age"] = [-43]
    # The reason names the key and the value the schema refused, not the pattern's lists of
    # acceptable values ("[42] is not of type 'integer'", which no one wrote).
    with pytest.raises(EpisodeError, match=r"fits its schema: .*: \[1\]: age: -43 is less than"):
        Episode.from_dict(row)
    row["gold"]["calls"][0]["arguments"]["data"][0][1]["age"] = [43]
    row["gold"]["calls"][0]["arguments"]["data"][0][1]["name"] = [7]
    with pytest.raises(EpisodeError) as caught:
        Episode.from_dict(row)
    assert caught.value.reason.endswith("[1]: name: 7 is not of type 'string'")


WINDOW = {
    "type": "object",
    "properties": {"start": {"type": "string"}, "hours": {"type": "integer", "minimum": 1}},
    "required": ["start"],
}


def _one_call_row(parameters: dict, arguments: dict, recorded: dict | None = None) -> dict:
    """An episode of one tool ``plan`` with these parameters and one gold call; the recorded
    assistant turn makes ``recorded`` (when given), which must pass its own gold."""
    row = {
        "id": "r",
        "harness": {
            "name": "h",
            "tools": [{"type": "function", "function": {"name": "plan", "parameters": parameters}}],
        },
        "messages": [{"role": "user", "content": "plan it"}],
        "gold": {"calls": [{"name": "plan", "arguments": arguments}]},
    }
    if recorded is not None:
        row["messages"].append(assistant(call("plan", recorded)))
        row["gold"]["at"] = 1
    return row


@pytest.mark.parametrize("definitions", ["$defs", "definitions"])
def test_gold_values_are_checked_through_references_to_definitions(definitions):
    """A parameter that names its schema by reference (``$ref``) is checked against what it
    names, as a whole value and as a pattern, and an episode never stops the run on it."""
    parameters = {
        "type": "object",
        definitions: {"window": WINDOW},
        "properties": {"window": {"$ref": f"#/{definitions}/window"}},
        "required": ["window"],
    }
    exact = {"start": "09:00", "hours": 2}
    Episode.from_dict(_one_call_row(parameters, {"window": [exact]}, {"window": exact}))
    Episode.from_dict(_one_call_row(parameters, {"window": [{"start": ["09:00"], "hours": [2]}]}))
    for bad in ({"start": "09:00", "hours": 0}, {"start": ["09:00"], "hours": [0]}):
        with pytest.raises(EpisodeError, match="fits its schema") as caught:
            Episode.from_dict(_one_call_row(parameters, {"window": [bad]}))
        assert caught.value.stage == "check:gold_schema"
        assert caught.value.field == "gold.calls[0].arguments.window"


def test_references_resolve_against_the_whole_parameters_as_validation_does():
    """A reference names a place in the tool's parameters, wherever it stands: a sibling
    property, the root itself (a recursive filter), a percent-encoded name, an anchor."""
    ship = {"type": "object", "properties": {"city": {"type": "string"}}}
    recursive = {
        "type": "object",
        "properties": {
            "field": {"type": "string"},
            "and": {"type": "array", "items": {"$ref": "#"}},
        },
    }
    cases = [
        ({"ship": ship, "bill": {"$ref": "#/properties/ship"}}, {"city": "Rome"}, {"city": 3}),
        (recursive["properties"], [{"field": "a"}], [{"field": 1}]),
        (
            {"w": {"$ref": "#/$defs/my%20window"}},
            {"start": "9"},
            {"start": 9},
        ),
        ({"w": {"$ref": "#win"}}, {"start": "9"}, {"start": 9}),
    ]
    for properties, good, bad in cases:
        param = next(iter(properties)) if "ship" not in properties else "bill"
        param = "and" if "and" in properties else param
        parameters = {
            "type": "object",
            "properties": properties,
            "$defs": {"my window": WINDOW, "anchored": {**WINDOW, "$anchor": "win"}},
        }
        Episode.from_dict(_one_call_row(parameters, {param: [good]}, {param: good}))
        with pytest.raises(EpisodeError, match="fits its schema"):
            Episode.from_dict(_one_call_row(parameters, {param: [bad]}))
    # a pattern through a reference to the root itself: checked, not followed for ever
    parameters = {"type": "object", "properties": recursive["properties"]}
    Episode.from_dict(_one_call_row(parameters, {"and": [[{"field": ["a"]}]]}))


def test_a_pattern_is_checked_against_the_object_branch_of_any_of():
    """An object offered among anyOf/oneOf branches takes a BFCL pattern too: it fits when it
    fits a branch."""
    for key in ("anyOf", "oneOf"):
        parameters = {
            "type": "object",
            "properties": {"window": {key: [{"type": "string"}, WINDOW]}},
        }
        Episode.from_dict(_one_call_row(parameters, {"window": [{"start": ["9"], "hours": [3]}]}))
        with pytest.raises(EpisodeError, match="fits its schema"):
            Episode.from_dict(_one_call_row(parameters, {"window": [{"start": [9]}]}))


@pytest.mark.parametrize(
    "schema",
    [
        {"allOf": [{"$ref": "#/$defs/window"}]},  # Pydantic v1's reference with siblings
        {**WINDOW, "type": ["object", "null"]},  # an optional object
        {k: v for k, v in WINDOW.items() if k != "type"},  # properties, no type
    ],
    ids=["allOf-ref", "nullable-type", "untyped"],
)
def test_a_pattern_is_checked_key_by_key_whatever_says_its_schema_is_an_object(schema):
    """A BFCL pattern meets an object schema key by key however the schema says it is an
    object: through ``allOf``, a type list, or properties alone; never as a value itself (its
    lists of options would fail every enum)."""
    parameters = {"type": "object", "$defs": {"window": WINDOW}, "properties": {"window": schema}}
    Episode.from_dict(_one_call_row(parameters, {"window": [{"start": ["9"], "hours": [3]}]}))
    with pytest.raises(EpisodeError, match="fits its schema"):
        Episode.from_dict(_one_call_row(parameters, {"window": [{"start": [9]}]}))


def test_an_exact_object_holding_a_list_passes_its_own_recorded_call():
    """A gold dict with a value that is not a list of options is one exact value: its lists
    are lists (the scorer reads it as the loader does), and a pattern still offers options."""
    parameters = {
        "type": "object",
        "properties": {
            "filter": {
                "type": "object",
                "properties": {"site": {"type": "string"}, "tags": {"type": "array"}},
            }
        },
    }
    exact = {"site": "ber", "tags": ["a", "b"]}
    Episode.from_dict(_one_call_row(parameters, {"filter": [exact]}, {"filter": exact}))
    nested = {"site": "ber", "tags": ["a"], "opts": {"mode": ["a", "b"]}}  # a dict in the value
    parameters["properties"]["filter"]["properties"]["opts"] = {"type": "object"}
    Episode.from_dict(_one_call_row(parameters, {"filter": [nested]}, {"filter": nested}))
    pattern = {"site": ["ber"], "tags": [["a", "b"]]}
    Episode.from_dict(_one_call_row(parameters, {"filter": [pattern]}, {"filter": exact}))
    for recorded in ({"site": "ber", "tags": ["b", "a"]}, {"site": "ber", "tags": ["a"]}):
        with pytest.raises(EpisodeError, match="fails its own gold") as caught:
            Episode.from_dict(_one_call_row(parameters, {"filter": [exact]}, {"filter": recorded}))
        assert caught.value.stage == "check:recorded_turn"


@pytest.mark.parametrize(
    "ref, field",
    [
        ("#/$defs/missing", "harness.tools[0].function.parameters.properties.window.$ref"),
        (
            "https://example.com/window.json",
            "harness.tools[0].function.parameters.properties.window.$ref",
        ),
    ],
)
def test_a_reference_that_resolves_nowhere_is_a_harness_error(ref, field):
    parameters = {
        "type": "object",
        "$defs": {"window": WINDOW},
        "properties": {"window": {"$ref": ref}},
    }
    with pytest.raises(HsaError, match=r"names no sub-schema") as caught:
        Episode.from_dict(_one_call_row(parameters, {"window": [{"start": "9"}]}))
    assert caught.value.field == field


def test_a_recorded_turn_that_fails_its_own_gold_is_rejected(harness_dir):
    """The recorded call is valid for the schema but is not what the gold expects: copied into
    every variant it would teach the wrong answer."""
    row = good_row()
    row["messages"][1]["tool_calls"][1]["function"]["arguments"] = json.dumps({"link": 4})
    error = _check_failure(harness_dir, row)
    assert (error.stage, error.field) == ("check:recorded_turn", "gold.turns[0]")
    assert "messages[1] fails its own gold: value_mismatch" in error.reason
    row = good_row()
    row["messages"][4]["content"] = "Link 3 costs a lot."  # the reply must contain 199
    error = _check_failure(harness_dir, row)
    assert (error.stage, error.field) == ("check:recorded_turn", "gold.turns[1]")
    assert "reply_constraint" in error.reason


def test_check_failures_are_rejects_with_their_own_stage(harness_dir, tmp_path):
    bad = good_row("bad")
    bad["messages"][1]["tool_calls"][1]["function"]["arguments"] = json.dumps({"link": 0})
    path = tmp_path / "episodes.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (good_row("ok"), bad)) + "\n")
    ok, reject = read_episodes(path, harness=load_harness(harness_dir))
    assert ok.id == "ok"
    assert (reject.line, reject.id, reject.stage) == (2, "bad", "check:call_schema")
    assert "minimum of 1" in reject.reason


def test_a_byte_order_mark_does_not_cost_the_first_episode(harness_dir, tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(json.dumps(good_row(i)) for i in "ab").encode())
    assert [e.id for e in read_episodes(path, harness=load_harness(harness_dir))] == ["a", "b"]


# ---- harness references stay in their folders ---------------------------------------------------


def test_harness_references_stay_beside_the_episodes(harness_dir, tmp_path):
    """An episodes file may name harness folders beside it, not any folder on disk: the folder's
    text becomes training data that push may publish."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "linked").symlink_to(harness_dir, target_is_directory=True)
    path = data / "episodes.jsonl"
    rows = [
        good_row("up", harness="../tiny-shop"),
        good_row("abs", harness=str(harness_dir)),
        good_row("link", harness="linked"),
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rejects = list(read_episodes(path))
    assert all(isinstance(r, Reject) and r.field == "harness" for r in rejects)
    assert all(
        "leads outside the episodes file's folder" in r.reason and "--harness-root" in r.reason
        for r in rejects
    )
    allowed = list(read_episodes(path, harness_roots=(tmp_path,)))
    assert [e.id for e in allowed] == ["up", "abs", "link"]


def test_a_harness_that_does_not_load_is_named_relative_to_the_episodes(tmp_path):
    """Reject reasons travel with a dataset: they name files relative to the episodes' folder."""
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "harness.yaml").write_text("name: [unclosed\n")
    path = tmp_path / "episodes.jsonl"
    path.write_text(json.dumps(good_row("x", harness="h")) + "\n")
    (reject,) = read_episodes(path)
    assert "h/harness.yaml:" in reject.reason and str(tmp_path) not in reject.reason


LONG = 123456789012345678901234567890  # an order number beyond 64 bits


def _with_long_integer(where: str) -> str:
    """A good row's JSON line with ``LONG`` written as a JSON integer at ``where``."""
    row = good_row("long")
    if where == "gold":
        row["gold"]["turns"][0]["calls"][0]["arguments"]["link"] = [LONG]
    elif where == "arguments":
        row["messages"][1]["tool_calls"][1]["function"]["arguments"] = f'{{"link": {LONG}}}'
    else:
        row["meta"]["order"] = LONG
    return json.dumps(row)


@pytest.mark.parametrize(
    ("where", "field"),
    [
        ("gold", None),
        ("meta", None),
        ("arguments", "messages[1].tool_calls[1].function.arguments"),
    ],
)
def test_an_integer_beyond_64_bits_is_a_reject_not_a_float(harness_dir, tmp_path, where, field):
    """orjson reads such an integer as a float without a word (1.2345678901234568e+29): the
    rows, gold and scores made from it would carry another number than the user's."""
    path = tmp_path / "episodes.jsonl"
    path.write_text(json.dumps(good_row("ok")) + "\n" + _with_long_integer(where) + "\n")
    out = list(read_episodes(path, harness=load_harness(harness_dir)))
    assert isinstance(out[0], Episode)
    reject = out[1]
    assert isinstance(reject, Reject) and (reject.line, reject.field) == (2, field)
    assert f"integer {LONG} does not fit in 64 bits" in reject.reason
    assert "1.2345678901234568e+29" in reject.reason and "write it as a string" in reject.reason


def test_long_digit_runs_in_text_and_64_bit_integers_load_as_written(harness_dir):
    row = good_row("fits")
    row["messages"][0]["content"] = f"Order {LONG}: how much is link 3?"
    row["messages"][3]["content"] = json.dumps({"price": 199, "order": str(LONG)})
    row["meta"]["limits"] = [2**64 - 1, -(2**63)]
    episode = Episode.from_dict(loads(json.dumps(row)), harness=load_harness(harness_dir))
    assert episode.meta["limits"] == [2**64 - 1, -(2**63)]
    assert str(LONG) in episode.messages[0]["content"]


@given(
    st.recursive(
        st.integers()
        | st.text(alphabet='0123456789"\\ é', max_size=30)
        | st.floats(allow_nan=False, allow_infinity=False),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.text(alphabet='ab"\\1', max_size=4), inner, max_size=4)
        ),
        max_leaves=12,
    )
)
def test_json_loads_refuses_exactly_the_integers_it_cannot_keep(value):
    text = json.dumps(value)
    exact = json.loads(text)  # the json module keeps integers of any size

    def integers(v):
        if isinstance(v, bool):
            return
        if isinstance(v, int):
            yield v
        elif isinstance(v, list):
            for item in v:
                yield from integers(item)
        elif isinstance(v, dict):
            for item in v.values():
                yield from integers(item)

    too_long = [i for i in integers(exact) if not -(2**63) <= i < 2**64]
    for document in (text, text.encode()):
        if too_long:
            with pytest.raises(LongInteger, match=f"integer {too_long[0]} does not fit"):
                loads(document)
        else:
            assert loads(document) == exact


# JSON text written by hand, key by key, so that an object may name a key twice: objects are
# lists of (key, value) pairs. Keys and strings hold quotes, backslashes and colons (what the
# quick count of key ends reads), and the separators vary (pretty-printed schema files, JSON
# Lines).
_AWKWARD = 'ab"\\: {}'
_PAIRS_JSON = st.recursive(
    st.integers(-5, 5).map(str)
    | st.text(alphabet=_AWKWARD, max_size=6).map(lambda t: json.dumps(t, ensure_ascii=False)),
    lambda inner: (
        st.lists(inner, max_size=4).map(lambda items: ("list", items))
        | st.lists(st.tuples(st.text(alphabet=_AWKWARD, max_size=3), inner), max_size=4).map(
            lambda pairs: ("object", pairs)
        )
    ),
    max_leaves=12,
)


def _written(node, colon: str, comma: str) -> str:
    if isinstance(node, str):
        return node
    kind, items = node
    if kind == "list":
        return "[" + comma.join(_written(item, colon, comma) for item in items) + "]"
    return (
        "{"
        + comma.join(
            json.dumps(key, ensure_ascii=False) + colon + _written(value, colon, comma)
            for key, value in items
        )
        + "}"
    )


def _names_a_key_twice(node) -> bool:
    if isinstance(node, str):
        return False
    kind, items = node
    if kind == "list":
        return any(map(_names_a_key_twice, items))
    keys = [key for key, _ in items]
    return len(set(keys)) < len(keys) or any(_names_a_key_twice(v) for _, v in items)


@given(
    _PAIRS_JSON.filter(lambda node: not isinstance(node, str)),
    st.sampled_from([":", ": ", " : ", ":\n  "]),
    st.sampled_from([",", ", ", ",\n"]),
)
def test_json_loads_refuses_exactly_the_objects_that_name_a_key_twice(node, colon, comma):
    """orjson (as json) keeps the last of two values under one key and drops the first,
    silently: a tool's property written twice, a message with two contents. loads refuses
    such text, as harness YAML is refused, and nothing else."""
    text = _written(node, colon, comma)
    for document in (text, text.encode()):
        if _names_a_key_twice(node):
            with pytest.raises(DuplicateKey, match="is written twice in one object"):
                loads(document)
        else:
            assert loads(document) == json.loads(text)


def test_a_key_written_twice_is_a_reject_naming_its_line_field_and_key(harness_dir, tmp_path):
    harness = load_harness(harness_dir)
    row = good_row("twice")
    text = json.dumps(row).replace('"content": "Link 3', '"content": "Hi", "content": "Link 3', 1)
    assert text != json.dumps(row)
    in_arguments = json.dumps(good_row("args")).replace(
        '"arguments": "{\\"link\\": 3}"', '"arguments": "{\\"link\\": 3, \\"link\\": 4}"', 1
    )
    assert "4}" in in_arguments
    path = tmp_path / "episodes.jsonl"
    path.write_text("\n".join([json.dumps(good_row("a")), text, in_arguments]) + "\n")
    good, line, call_args = list(read_episodes(path, harness=harness))
    assert isinstance(good, Episode)
    assert (line.line, line.field) == (2, None)
    assert line.reason.startswith(
        "key 'content' is written twice in one object (at messages[4].content)"
    )
    assert (call_args.line, call_args.id, call_args.field) == (
        3,
        "args",
        "messages[1].tool_calls[1].function.arguments",
    )
    assert "key 'link' is written twice in one object (at link)" in call_args.reason


def test_a_tool_file_that_names_a_property_twice_does_not_load(tmp_path):
    tool = json.dumps(PRICE_TOOL, indent=2)
    twice = tool.replace('"properties": {', '"properties": {\n "link": {"type": "string"},', 1)
    assert twice != tool
    folder = write_harness(tmp_path / "h", tools={"a_price.json": twice})
    with pytest.raises(HsaError, match="key 'link' is written twice") as caught:
        load_harness(folder)
    assert "a_price.json" in str(caught.value)


def test_a_call_id_may_come_back_once_its_call_is_answered():
    # Many logs number calls per turn (call_0 in every turn): an answered id is free again.
    harness = Harness.from_dict(
        {
            "name": "h",
            "tools": [
                {
                    "name": "ping",
                    "description": "Pings.",
                    "parameters": {"type": "object", "properties": {}},
                }
            ],
        }
    )
    call = {"id": "call_0", "type": "function", "function": {"name": "ping", "arguments": "{}"}}
    turn = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0", "content": "pong"},
    ]
    messages = [{"role": "user", "content": "ping twice"}, *turn, *turn]
    messages.append({"role": "assistant", "content": "Done."})
    episode = Episode.from_dict(
        {"id": "e", "messages": messages, "gold": {"at": 5, "no_call": True}}, harness=harness
    )
    assert len(episode.messages) == 6


def test_a_missing_harness_reference_says_where_it_was_looked_for(tmp_path):
    """A reference is read beside the episodes file, not in the working directory: a run from
    the folder above (``bad/reqnested`` in ``bad/episodes.jsonl``) must be told so, with the
    place it looked, not "bad/reqnested: harness folder does not exist" beside a folder
    ``./bad/reqnested`` that exists."""
    (tmp_path / "bad").mkdir()
    row = {"id": "e", "harness": "bad/reqnested", "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(EpisodeError) as caught:
        Episode.from_dict(row, base_dir=tmp_path / "bad")
    reason = caught.value.reason
    assert "relative to the episodes file's folder" in reason, reason
    assert "bad/reqnested" in reason and str(tmp_path) not in reason  # rejects travel
    assert caught.value.field == "harness"


def test_a_tool_call_of_another_type_than_function_is_refused():
    """A call is ``{"type": "function", ...}``: chat templates and the OpenAI API know no other
    type, and a row carrying ``"type": "retrieval"`` would be written as it is."""
    from tests.conftest import assistant, call

    odd = {**call("get_price", {"link": 2}), "type": "retrieval"}
    row = {
        "id": "e",
        "harness": {"name": "h", "tools": [PRICE_TOOL]},
        "messages": [{"role": "user", "content": "cost?"}, assistant(odd)],
    }
    with pytest.raises(EpisodeError, match="type must be 'function'") as caught:
        Episode.from_dict(row)
    assert caught.value.field == "messages[1].tool_calls[0].type"


_CLAIMANT = {
    "type": "object",
    "required": ["name", "address"],
    "properties": {"name": {"type": "string"}, "address": {"type": "string"}},
    "additionalProperties": False,
}
_PAYOUT = {
    "oneOf": [
        {
            "type": "object",
            "required": ["bank_account"],
            "properties": {"bank_account": {"type": "string", "pattern": "^[0-9]{4,17}$"}},
            "additionalProperties": False,
        },
        {
            "type": "object",
            "required": ["check_address"],
            "properties": {"check_address": {"type": "string"}},
            "additionalProperties": False,
        },
    ]
}
_TAGS = {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}}


@pytest.mark.parametrize(
    ("schema", "pattern", "problem"),
    [
        (_CLAIMANT, {"name": ["Kim"], "address": ["1 Main St"]}, None),
        (_CLAIMANT, {"name": ["Kim"]}, "requires 'address'"),
        (_CLAIMANT, {"name": ["Kim"], "address": ["x"], "nick": ["K"]}, "nick: a key"),
        (_CLAIMANT, {"name": ["Kim"], "address": ["x"], "nick": ["", "K"]}, None),
        (_PAYOUT, {"check_address": ["1 Main St"]}, None),
        (_PAYOUT, {"bank_account": ["123456"]}, None),
        (_PAYOUT, {"bank_account": ["12"]}, "fits none of its 2 branches"),
        (_PAYOUT, {"iban": ["DE89"]}, "fits none of its 2 branches"),
        # one acceptable value that fits is enough, as for a parameter (a recheck: ["x", "z"]
        # against an enum of x and y was refused, though a call with "x" is correct)
        (_CLAIMANT, {"name": ["Kim", 7], "address": ["1 Main St"]}, None),
        (_CLAIMANT, {"name": ["Kim"], "address": [""]}, "requires 'address'"),
        (_TAGS, {"kind": ["vip"]}, None),
        (_TAGS, {"kind": ["platinum"]}, "kind:"),
    ],
)
def test_a_nested_gold_pattern_must_allow_a_call_that_fits_its_schema(schema, pattern, problem):
    """An insurance audit's gold loaded with nested patterns no valid call could match (a
    required key never given, a key `additionalProperties: false` refuses, a `oneOf` value that
    fits no branch), and `hsa score` then passed schema-invalid calls as correct."""
    from hsa.model.gold import fit_problem

    found = fit_problem(pattern, schema)
    if problem is None:
        assert found is None, found
    else:
        assert found is not None and problem in found, found
