"""OpenAI / TRL conversational JSONL import: gold from the final tool calls, one reject per bad line."""

from __future__ import annotations

import json

import pytest

from hsa.cli import main
from hsa.importers.openai_chat import import_openai
from hsa.model.scorer import score_turn
from tests.conftest import HISTORY_TOOL, PRICE_TOOL, assistant, call


def chat(**over):
    row = {
        "messages": [
            {"role": "system", "content": "You are a shop assistant."},
            {"role": "user", "content": "Price of links 1 and 2, and link 1's history?"},
            assistant(call("get_price", {"link": 1}, "a")),
            {"role": "tool", "tool_call_id": "a", "content": "99"},
            # TRL writes arguments as objects; both forms are accepted.
            assistant(
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "get_price", "arguments": {"link": 2}},
                },
                call("get_price_history", {"link": 1, "days": 7}, "c"),
            ),
            {"role": "tool", "tool_call_id": "b", "content": "199"},
            {"role": "tool", "tool_call_id": "c", "content": "[99, 89]"},
            assistant(content="Link 1 is 99, link 2 is 199."),
        ],
        "tools": [PRICE_TOOL, HISTORY_TOOL],
    }
    row.update(over)
    return row


def write(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_gold_is_the_last_assistant_tool_calls(tmp_path):
    result = import_openai(write(tmp_path / "chats.jsonl", [chat(id="x1"), chat()]))
    first, second = result.episodes
    assert (first.id, second.id) == ("x1", "chats-2")
    gold = first.gold.turn()
    assert gold.at == 4 and not gold.ordered
    assert [(c.name, c.arguments) for c in gold.calls] == [
        ("get_price", {"link": [2]}),
        ("get_price_history", {"link": [1], "days": [7]}),
    ]
    # The conversation's own message passes its gold, in either call order.
    assert score_turn(first.messages[4], gold, first.harness).correct
    swapped = dict(first.messages[4], tool_calls=first.messages[4]["tool_calls"][::-1])
    assert score_turn(swapped, gold, first.harness).correct


SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the catalogue.",
        "parameters": {
            "type": "object",
            "properties": {
                "q": {"type": "string"},
                "filter": {"type": "object"},
                "items": {"type": "array", "items": {"type": "object"}},
            },
            "required": ["q"],
        },
    },
}


def test_object_arguments_are_gold_as_recorded_not_read_as_patterns(tmp_path):
    """An object whose values are all lists is also how a gold pattern is written (key: its
    acceptable values): a recorded ``{"tags": ["red", "blue"]}`` is that object, exactly."""
    recorded = {
        "q": "dress",
        "filter": {"tags": ["red", "blue"]},
        "items": [{"sku": "A1", "sizes": ["S"]}, {"sizes": ["M", "L"]}],
    }
    row = {
        "messages": [
            {"role": "user", "content": "Red or blue dresses, A1 in S and anything in M or L?"},
            assistant(call("search", recorded, "a")),
        ],
        "tools": [SEARCH_TOOL],
    }
    result = import_openai(write(tmp_path / "chats.jsonl", [row]))
    assert not result.rejects
    (episode,) = result.episodes
    gold = episode.gold.turn()

    def verdict(arguments: dict) -> bool:
        return score_turn(assistant(call("search", arguments, "b")), gold, episode.harness).correct

    assert verdict(recorded)
    assert not verdict({**recorded, "filter": {"tags": ["red"]}})
    assert not verdict({**recorded, "filter": {"tags": "red"}})
    assert not verdict({**recorded, "items": [{"sku": "A1", "sizes": ["S"]}, {"sizes": "M"}]})


def test_conversation_without_tool_calls_gets_no_call_gold(tmp_path):
    row = {
        "messages": [{"role": "user", "content": "hi"}, assistant(content="hello!")],
        "tools": [PRICE_TOOL],
    }
    (episode,) = import_openai(write(tmp_path / "c.jsonl", [row])).episodes
    assert episode.gold.turn().no_call and episode.gold.turn().at == 1


def test_bad_lines_are_rejected_and_counted(tmp_path):
    bad_schema = json.loads(json.dumps(PRICE_TOOL))
    bad_schema["function"]["parameters"]["properties"]["link"]["type"] = "int"
    bad_args = chat()
    bad_args["messages"][2]["tool_calls"][0]["function"]["arguments"] = "{oops"
    rows = [
        chat(),
        "{not json",
        chat(tools=[bad_schema, HISTORY_TOOL]),
        bad_args,
        {"messages": [{"role": "user", "content": "hi"}], "tools": []},
        chat(tools=[HISTORY_TOOL]),
        chat(),
        chat(meta="hello"),  # one line's meta is that line's reject, not the run's end
        chat(meta=[1, 2]),
        chat(meta={"split": "dev"}),
        chat(id={"a": 1}),  # an id must be a string or an integer
    ]
    path = write(tmp_path / "c.jsonl", rows)
    result = import_openai(path)
    assert (result.lines, len(result.episodes), len(result.rejects)) == (11, 3, 8)
    reasons = {r.line: (r.field, r.reason) for r in result.rejects}
    assert "not valid JSON" in reasons[2][1]
    assert reasons[3][0].startswith("tools[0].function.parameters")
    assert reasons[4][0] == "messages[2].tool_calls[0].function.arguments"
    assert "no assistant message" in reasons[5][1]
    assert "unknown tool 'get_price'" in reasons[6][1]
    assert reasons[8] == ("meta", "meta must be an object, got str")
    assert reasons[9] == ("meta", "meta must be an object, got list")
    assert result.episodes[-1].meta["split"] == "dev"
    assert reasons[11] == ("id", "id must be a string or an integer, got dict")


def test_messages_as_the_openai_sdk_dumps_them_are_read(tmp_path):
    """``ChatCompletionMessage.model_dump()`` writes refusal, annotations, audio, function_call
    and tool_calls even when they carry nothing; a refusal's text is still refused."""
    empty = {"refusal": None, "annotations": [], "audio": None, "function_call": None}
    dumped = chat(parallel_tool_calls=True)
    dumped["messages"] = [
        {**m, **empty, "tool_calls": m.get("tool_calls")} if m["role"] == "assistant" else m
        for m in dumped["messages"]
    ]
    refused = chat()
    refused["messages"][-1] = {**refused["messages"][-1], "refusal": "I can't help with that."}
    result = import_openai(write(tmp_path / "sdk.jsonl", [dumped, refused]))
    assert [e.messages for e in result.episodes] == [
        import_openai(write(tmp_path / "plain.jsonl", [chat()])).episodes[0].messages
    ]
    ((reject),) = result.rejects
    assert reject.line == 2 and "unknown keys ['refusal']" in reject.reason


def test_cli_writes_episodes_and_rejects(tmp_path, capsys):
    path = write(tmp_path / "c.jsonl", [chat(), "{broken"])
    out = tmp_path / "episodes.jsonl"
    assert main(["import", "openai", str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "2 lines -> 1 episodes, 1 rejected" in printed.out
    assert len(out.read_text().splitlines()) == 1
    # the tool's parameters in their own order (`link`, then `currency`), as the model reads
    # them: written with sorted keys, every imported schema listed them alphabetically
    (written,) = [json.loads(x) for x in out.read_text().splitlines()]
    price = next(t for t in written["harness"]["tools"] if t["function"]["name"] == "get_price")
    assert list(price["function"]["parameters"]["properties"]) == ["link", "currency"]
    (reject,) = [
        json.loads(x) for x in (tmp_path / "episodes.rejects.jsonl").read_text().splitlines()
    ]
    assert reject["line"] == 2 and reject["source"] == str(path)
    kept = (out.read_bytes(), (tmp_path / "episodes.rejects.jsonl").read_bytes())
    # an import that keeps nothing fails and leaves the earlier files as they were
    broken = write(tmp_path / "broken.jsonl", ["{broken"])
    assert main(["import", "openai", str(broken), "--out", str(out)]) == 1
    assert "wrote nothing: no episode was kept" in capsys.readouterr().out
    assert (out.read_bytes(), (tmp_path / "episodes.rejects.jsonl").read_bytes()) == kept
    # both paths are checked before either is written
    other = tmp_path / "other.jsonl"
    (tmp_path / "adir").mkdir()
    args = ["import", "openai", str(path), "--out", str(other), "--rejects", str(tmp_path / "adir")]
    assert main(args) == 2
    assert not other.exists()
    (tmp_path / "afile").write_text("x")
    args[-1] = str(tmp_path / "afile" / "r.jsonl")  # below a file
    assert main(args) == 2
    assert "it is a file" in capsys.readouterr().err and not other.exists()


def test_a_repeated_id_is_rejected_where_it_repeats(tmp_path):
    """Episodes are identified by id (variants drawn, predictions scored): the second line of an
    id, given or made from the file and line (chats-3), is a reject naming the first."""
    rows = [chat(id="g1"), chat(id="g1"), chat(id="chats-4"), chat()]
    result = import_openai(write(tmp_path / "chats.jsonl", rows))
    assert [e.id for e in result.episodes] == ["g1", "chats-4"]
    assert [(r.line, r.id, r.field) for r in result.rejects] == [
        (2, "g1", "id"),
        (4, "chats-4", "id"),
    ]
    assert "line 1 has it" in result.rejects[0].reason
    assert "line 3 has it" in result.rejects[1].reason


def test_a_rejected_line_does_not_take_its_id(tmp_path):
    """A line that became no episode stands for nothing: the next line of its id is imported."""
    rows = [chat(id="a", messages="not a list"), chat(id="a")]
    result = import_openai(write(tmp_path / "chats.jsonl", rows))
    assert [e.id for e in result.episodes] == ["a"]
    assert [(r.line, r.field) for r in result.rejects] == [(1, "messages")]


def legacy(row: dict) -> dict:
    """``row`` as the legacy function-calling API wrote it: ``functions``, an assistant's one
    ``function_call`` per message, ``role: function`` results named by the function."""
    messages, names = [], {}
    for message in row["messages"]:
        if message.get("tool_calls"):
            for c in message["tool_calls"]:
                arguments = c["function"]["arguments"]
                fn = {
                    "name": c["function"]["name"],
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                }
                messages.append({"role": "assistant", "content": None, "function_call": fn})
                names[c["id"]] = fn["name"]
        elif message["role"] == "tool":
            name = names[message["tool_call_id"]]
            messages.append({"role": "function", "name": name, "content": message["content"]})
        else:
            messages.append(message)
    return {"messages": messages, "functions": [t["function"] for t in row["tools"]]}


def test_legacy_function_calling_rows_are_read(tmp_path):
    """Datasets written for the legacy API (`functions`, `function_call`, `role: function`) are
    common: each call becomes a tool call with an id, each function result the tool result that
    answers the latest unanswered call of that name. One call per message, so the parallel calls
    of the modern row are consecutive messages, and the gold is the last one."""
    result = import_openai(write(tmp_path / "legacy.jsonl", [legacy(chat())]))
    assert not result.rejects, result.rejects
    (episode,) = result.episodes
    assert [t.name for t in episode.harness.tools] == ["get_price", "get_price_history"]
    roles = [m["role"] for m in episode.messages]
    assert roles == ["system", "user", "assistant", "tool"] + ["assistant"] * 2 + ["tool"] * 2 + [
        "assistant"
    ]
    ids = [m["tool_calls"][0]["id"] for m in episode.messages if m.get("tool_calls")]
    answers = [m["tool_call_id"] for m in episode.messages if m["role"] == "tool"]
    assert answers == ids  # each result answers its own call
    assert len(set(ids)) == 3
    assert [m["content"] for m in episode.messages if m["role"] == "tool"] == [
        "99",
        "199",
        "[99, 89]",
    ]
    (turn,) = episode.gold.turns
    assert [c.name for c in turn.calls] == ["get_price_history"]


def test_a_legacy_row_that_does_not_pair_up_is_rejected_by_field(tmp_path):
    orphan = legacy(chat())
    orphan["messages"].insert(2, {"role": "function", "name": "get_price", "content": "1"})
    both = {**legacy(chat()), "tools": chat()["tools"]}
    result = import_openai(write(tmp_path / "bad.jsonl", [orphan, both]))
    first, second = result.rejects
    assert first.field == "messages[2]" and "no call of get_price" in first.reason
    assert "both tools and functions" in second.reason


def test_trl_prompt_completion_rows_are_read_as_one_conversation(tmp_path):
    """TRL's conversational prompt-completion format splits a conversation in two lists; it was
    refused ("unknown keys ['completion', 'prompt']"). Read as its prompt then its completion,
    it is the conversation it was split from; a plain-text prompt is a reject naming the key."""
    row = chat()
    split = {
        "prompt": row["messages"][:2],
        "completion": row["messages"][2:],
        "tools": row["tools"],
    }
    text = {"prompt": "Price of link 1?", "completion": "99", "tools": row["tools"]}
    result = import_openai(write(tmp_path / "pc.jsonl", [split, text]))
    plain = import_openai(write(tmp_path / "plain.jsonl", [chat()])).episodes[0]
    (episode,) = result.episodes
    assert episode.messages == plain.messages and episode.gold == plain.gold
    (reject,) = result.rejects
    assert reject.line == 2 and reject.field == "prompt" and "list of messages" in reject.reason


def test_rows_as_hub_datasets_store_them_are_read(tmp_path):
    """A dataset on the Hub stores a row's tools as one JSON string (rows of any tools share a
    column) and carries columns of its own: read as the tools and as the episode's meta, with
    one notice per set of columns, not one per row."""
    rows = [
        chat(tools=json.dumps([PRICE_TOOL, HISTORY_TOOL]), category="pricing", source="shop-a"),
        chat(category="pricing", source="shop-b"),
        chat(tools="[{oops"),
        chat(category="x", meta={"category": "y"}),
    ]
    result = import_openai(write(tmp_path / "hub.jsonl", rows))
    assert (len(result.episodes), len(result.rejects)) == (2, 2)
    first, second = result.episodes
    assert [t.name for t in first.harness.tools] == ["get_price", "get_price_history"]
    assert (first.meta["category"], first.meta["source"]) == ("pricing", "shop-a")
    assert second.meta["source"] == "shop-b"
    assert [(n.line, n.reason) for n in result.notices] == [
        (
            1,
            "columns ['category', 'source'] kept under meta (this row and every later one with them)",
        )
    ]
    reasons = {r.line: (r.field, r.reason) for r in result.rejects}
    assert reasons[3][0] == "tools" and reasons[3][1].startswith(
        "tools is a string that is no JSON"
    )
    assert reasons[4] == ("meta.category", "column 'category' is also a key of meta: give it once")


@pytest.mark.parametrize(
    ("tools", "says"),
    [
        ('[{"type": "function", "type": "function"}]', "key 'type' is written twice"),
        ('[{"n": 123456789012345678901234567890}]', "64 bits"),
    ],
)
def test_tools_written_as_a_string_are_read_as_every_json_is(tmp_path, tools, says):
    """Tools given as a JSON string were read by the bare parser: a key written twice kept its
    last value (an enum narrowed to one choice) and a long integer became a float, silently,
    where the same tools given as a list are refused."""
    result = import_openai(write(tmp_path / "hub.jsonl", [chat(tools=tools)]))
    (reject,) = result.rejects
    assert reject.field == "tools" and says in reject.reason, reject.reason
    assert reject.reason.startswith("tools, written as a JSON string: ")


def test_rows_of_formats_that_are_not_read_are_refused_by_name(tmp_path):
    """A Hermes-style transcript writes its call into the assistant's text: read as it is, the
    call would be a reply whose gold is "no call", the opposite of the task. ShareGPT and xLAM
    rows are named, so that the user knows what to convert."""
    hermes = chat()
    hermes["messages"][2] = {
        "role": "assistant",
        "content": '<tool_call>\n{"name": "get_price", "arguments": {"link": 1}}\n</tool_call>',
    }
    del hermes["messages"][3]["tool_call_id"]
    rows = [
        hermes,
        {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]},
        {"query": "price of link 1", "tools": "[]", "answers": "[]"},
        {"mesages": []},
    ]
    result = import_openai(write(tmp_path / "other.jsonl", rows))
    assert result.episodes == []
    reasons = {r.line: (r.field, r.reason) for r in result.rejects}
    assert reasons[1][0] == "messages[2].content"
    assert "writes a tool call into its text" in reasons[1][1]
    assert reasons[2][0] == "conversations" and reasons[2][1].startswith("a ShareGPT row")
    assert reasons[3][0] == "answers" and reasons[3][1].startswith("an xLAM/APIGen row")
    assert reasons[4][1].startswith("unknown keys ['mesages']")


def test_fine_tuning_weights_of_one_are_read_and_others_refused(tmp_path):
    """OpenAI's fine-tuning format marks each assistant message ``weight: 1`` (train on it) or
    ``0`` (learn nothing from it): every line that had one was rejected for an unknown key. A
    weight of 1 is what a row does with every assistant message; 0 would be lost, and is said."""
    weighted = chat()
    weighted["messages"][2]["weight"] = 1
    weighted["messages"][-1]["weight"] = 1
    skipped = chat()
    skipped["messages"][2]["weight"] = 0
    result = import_openai(write(tmp_path / "ft.jsonl", [weighted, skipped]))
    assert len(result.episodes) == 1
    assert all("weight" not in m for m in result.episodes[0].messages)
    (reject,) = result.rejects
    assert (reject.line, reject.field) == (2, "messages[2].weight")
    assert reject.reason.startswith("weight 0: a fine-tuning weight other than 1")
