"""Verification catches variants that changed the task, and only those."""

from __future__ import annotations

import re
from dataclasses import replace

import orjson
import pytest

from hsa.augment.mapping import Mapping
from hsa.augment.rename import rename_episode
from hsa.model.episode import Episode
from hsa.model.gold import Gold
from hsa.text.mentions import find_mentions, parameter_mentions, replace_mentions
from hsa.verify import VerificationFailed, verify_variant
from tests.conftest import HISTORY_TOOL, PRICE_TOOL, assistant, call


def original() -> Episode:
    return Episode.from_dict(
        {
            "id": "e",
            "harness": {
                "name": "h",
                "tools": [PRICE_TOOL, HISTORY_TOOL],
                "skills": [
                    {
                        "id": "price-reply",
                        "description": "d",
                        "content": "Call get_price first; get_price_history only for trends. See `price-reply-v2`.",
                    }
                ],
            },
            "messages": [
                {"role": "user", "content": "What does link 2 cost? Please search."},
                assistant(
                    call("load_skill", {"name": "price-reply"}, "s"), call("get_price", {"link": 2})
                ),
                {"role": "tool", "tool_call_id": "s", "content": "..."},
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "content": '{"tool": "get_price", "price": 5}',
                },
                assistant(content="get_price says 5."),
            ],
            "gold": {
                "turns": [
                    {
                        "at": 1,
                        "skills": ["price-reply"],
                        "calls": [{"name": "get_price", "arguments": {"link": [2]}}],
                    },
                    {"at": 4, "no_call": True},
                ]
            },
        }
    )


RENAME = Mapping(
    tools={"get_price": "fetch_cost"},
    parameters={"get_price": {"link": "item"}},
    skills={"price-reply": "answer-price"},
)


def test_mentions_respect_identifier_boundaries():
    text = "get_price, get_price_history, get_price., `get_price`, shop.get_price, get_price-x"
    assert find_mentions(text, ["get_price"]) == ["get_price"] * 3
    assert (
        replace_mentions(text, {"get_price": "f"})
        == "f, get_price_history, f., `f`, shop.get_price, get_price-x"
    )


def test_rename_moves_every_mention_and_verifies():
    source = original()
    variant = rename_episode(source, RENAME)
    verify_variant(source, variant, RENAME)
    skill = variant.harness.skills[0]
    assert skill.id == "answer-price"
    assert "fetch_cost first; get_price_history only" in skill.content  # prefix name untouched
    assert variant.harness.tool("fetch_cost").required == ["item"]
    calls = variant.messages[1]["tool_calls"]
    assert calls[0]["function"]["arguments"] == '{"name":"answer-price"}'
    assert calls[1]["function"] == {"name": "fetch_cost", "arguments": '{"item":2}'}
    assert variant.messages[3]["content"] == '{"tool": "fetch_cost", "price": 5}'
    assert variant.messages[4]["content"] == "fetch_cost says 5."
    assert variant.gold.turns[0].calls[0].arguments == {"item": [2]}
    assert variant.messages[0] == source.messages[0]  # the user's words are the user's


def test_a_mention_left_behind_is_caught():
    source = original()
    variant = rename_episode(source, RENAME)
    stale = replace(
        variant, messages=variant.messages[:4] + (assistant(content="I used get_price."),)
    )
    with pytest.raises(VerificationFailed, match="renamed 'get_price' survives in messages"):
        verify_variant(source, stale, RENAME)


def test_a_json_result_is_renamed_and_checked_in_its_decoded_strings():
    """A backend writing JSON with Python's defaults escapes non-ASCII (``\\u00bf``) and line
    breaks (``\\n``): read as raw text, a name right after an escape is glued to its letters and
    was never moved (nor seen stale), and ``https:\\/\\/`` is no web address, so a name in it
    moved. Keys are the backend's fields and stay."""
    import json

    source = original()
    result = json.dumps(
        {
            "nota": "\u00bfPrecio? get_price lo da.\nget_price no da tendencias.",
            "link": "https://shop.example/get_price?link=2",
            "get_price": 5,
        }
    ).replace("/", "\\/")
    assert "\\u00bf" in result and "\\nget_price" in result and "https:\\/\\/" in result
    messages = list(source.messages)
    messages[3] = {**messages[3], "content": result}
    source = replace(source, messages=tuple(messages))
    variant = rename_episode(source, RENAME)
    verify_variant(source, variant, RENAME)
    renamed = variant.messages[3]["content"]
    assert json.loads(renamed) == {
        "nota": "\u00bfPrecio? fetch_cost lo da.\nfetch_cost no da tendencias.",
        "link": "https://shop.example/get_price?link=2",
        "get_price": 5,
    }
    assert "\\u00bf" in renamed and "https:\\/\\/" in renamed  # written as the backend writes
    # the same name left after an escape is stale, and found
    stale = list(variant.messages)
    stale[3] = {**stale[3], "content": renamed.replace("\\nfetch_cost", "\\nget_price")}
    with pytest.raises(VerificationFailed, match="renamed 'get_price' survives in messages.3."):
        verify_variant(source, replace(variant, messages=tuple(stale)), RENAME)


def test_a_renamed_name_left_in_the_harness_is_caught_after_a_clean_variant_of_the_same_renames():
    # What the check finds in a harness is remembered per (harness, mapping): a clean variant
    # verified first must not vouch for another harness under the same renames.
    source = original()
    variant = rename_episode(source, RENAME)
    verify_variant(source, variant, RENAME)
    skill = variant.harness.skills[0]
    in_prose = variant.with_harness(
        replace(
            variant.harness,
            skills=(replace(skill, content=skill.content + "\nOr call get_price."),),
        )
    )
    with pytest.raises(VerificationFailed, match="renamed 'get_price' survives in skill"):
        verify_variant(source, in_prose, RENAME)
    old_tool = replace(variant.harness.tools[0], name="get_price")
    as_a_name = variant.with_harness(
        replace(variant.harness, tools=variant.harness.tools + (old_tool,))
    )
    with pytest.raises(
        VerificationFailed, match="renamed 'get_price' is still a name in the variant's harness"
    ):
        verify_variant(source, as_a_name, RENAME)


def test_a_changed_gold_value_is_caught():
    source = original()
    variant = rename_episode(source, RENAME)
    turns = variant.gold.turns
    bad_call = replace(turns[0].calls[0], arguments={"item": [3]})
    changed = replace(
        variant, gold=replace(variant.gold, turns=(replace(turns[0], calls=(bad_call,)), turns[1]))
    )
    with pytest.raises(VerificationFailed) as info:
        verify_variant(source, changed, RENAME)
    assert info.value.check == "gold_preserved"


def verify_with_property(name: str, schema: dict) -> VerificationFailed:
    """What verification says of the renamed original whose `fetch_cost` tool has property
    ``name`` set to ``schema`` (a variant's schema gone wrong)."""
    source = original()
    variant = rename_episode(source, RENAME)
    tool = variant.harness.tool("fetch_cost")
    changed = replace(
        tool, parameters={**tool.parameters, "properties": {**tool.properties, name: schema}}
    )
    harness = replace(variant.harness, tools=(changed,) + variant.harness.tools[1:])
    with pytest.raises(VerificationFailed) as info:
        verify_variant(source, variant.with_harness(harness), RENAME)
    return info.value


def test_a_schema_that_no_longer_admits_the_gold_is_caught():
    failed = verify_with_property("item", {"type": "integer", "maximum": 1})
    assert failed.check == "gold_schema"


def test_a_reference_the_variant_left_dangling_is_caught():
    """A ``$ref`` that names nothing in the variant's schema (a property renamed under it) is
    a schema no validator can use, whether or not the gold reaches it."""
    failed = verify_with_property("again", {"$ref": "#/properties/link"})
    assert failed.check == "schema_refs"
    assert "fetch_cost" in str(failed) and "#/properties/link" in str(failed)


def test_a_missing_skill_is_caught():
    source = original()
    variant = rename_episode(source, RENAME)
    without = variant.with_harness(replace(variant.harness, skills=()))
    with pytest.raises(VerificationFailed) as info:
        verify_variant(source, without, RENAME)
    assert info.value.check == "gold_consistent"


def test_plain_word_names_count_only_as_code_in_prose():
    source = Episode.from_dict(
        {
            "id": "w",
            "harness": {
                "name": "h",
                "tools": [
                    {
                        "name": "search",
                        "description": "Find items. Prefer `search` over browsing: "
                        'search(q="shoes"), not the search(es) of old.',
                        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                    }
                ],
            },
            "messages": [{"role": "user", "content": "Please search for shoes."}],
            "gold": {"calls": [{"name": "search", "arguments": {"q": ["shoes"]}}]},
        }
    )
    mapping = Mapping(tools={"search": "lookup"})
    variant = rename_episode(source, mapping)
    verify_variant(source, variant, mapping)
    # a call written out is code wherever it stands; "search(es)" and plain words are prose
    assert variant.harness.tools[0].description == (
        'Find items. Prefer `lookup` over browsing: lookup(q="shoes"), not the search(es) of old.'
    )
    assert variant.messages[0]["content"] == "Please search for shoes."
    stale = variant.with_harness(
        replace(
            variant.harness,
            tools=(replace(variant.harness.tools[0], description='Call search(q="x").'),),
        )
    )
    with pytest.raises(VerificationFailed, match="renamed 'search' survives in tool lookup"):
        verify_variant(source, stale, mapping)


def test_a_user_value_that_is_also_a_harness_name_must_survive_in_the_users_words():
    """The user asks for the note "get_price" (data that happens to be a tool's name): were the
    mention in the user's words renamed, the gold, which is data, would keep "get_price", so
    the variant would ask for one note and expect another. The rename goes around it; a variant
    that moved it is rejected, naming the value."""
    note_tool = {
        "type": "function",
        "function": {
            "name": "add_note",
            "description": "Attach a note.",
            "parameters": {
                "type": "object",
                "properties": {"note": {"type": "string"}},
                "required": ["note"],
            },
        },
    }
    source = Episode.from_dict(
        {
            "id": "n",
            "harness": {"name": "h", "tools": [PRICE_TOOL, note_tool]},
            "messages": [
                {"role": "user", "content": 'Add the note "get_price" please.'},
                assistant(call("add_note", {"note": "get_price"})),
            ],
            "gold": {"calls": [{"name": "add_note", "arguments": {"note": ["get_price"]}}]},
        }
    )
    mapping = Mapping(tools={"get_price": "fetch_cost"})
    variant = rename_episode(source, mapping)
    # the rename goes around the user's own data (hsa.augment.user_data), and the variant passes
    assert variant.messages[0]["content"] == 'Add the note "get_price" please.'
    verify_variant(source, variant, mapping)

    def said(episode, text):
        return replace(episode, messages=({"role": "user", "content": text}, *episode.messages[1:]))

    # a rename that took the value for a mention would ask for another note
    moved = said(variant, 'Add the note "fetch_cost" please.')
    with pytest.raises(VerificationFailed, match="the user's 'get_price', a gold value") as info:
        verify_variant(source, moved, mapping)
    assert info.value.check == "user_data"
    # A value the user states that no rename touches is no concern.
    plain = rename_episode(source, Mapping(tools={"add_note": "attach_note"}))
    verify_variant(source, plain, Mapping(tools={"add_note": "attach_note"}))
    # Counted, not found: "get_price" inside "get_price_history" does not stand in for it.
    longer = replace(
        source,
        messages=(
            {
                "role": "user",
                "content": 'Add the note "get_price" to the get_price_history ticket.',
            },
            *source.messages[1:],
        ),
    )
    kept = rename_episode(longer, mapping)
    assert kept.messages[0]["content"] == longer.messages[0]["content"]
    verify_variant(longer, kept, mapping)
    moved = said(kept, 'Add the note "fetch_cost" to the get_price_history ticket.')
    with pytest.raises(VerificationFailed, match="the user's 'get_price'"):
        verify_variant(longer, moved, mapping)
    # A value inside another word the rename moves is not the user's value: "price" in
    # "get_price" stays "price" for the note, and the variant keeps it.
    inside = replace(
        source,
        messages=(
            {"role": "user", "content": 'get_price gave nothing. Add the note "price" please.'},
            assistant(call("add_note", {"note": "price"})),
        ),
        gold=Gold.from_dict(
            {"calls": [{"name": "add_note", "arguments": {"note": ["price"]}}]}, n_messages=2
        ),
    )
    verify_variant(inside, rename_episode(inside, mapping), mapping)
    # Hook feedback is the harness's words, not the user's: a retry policy may cut it.
    from hsa.verify import _user_data_kept

    feedback = {"role": "user", "name": "hook.check", "content": "note must be get_price"}
    with_feedback = replace(plain, messages=(*plain.messages, feedback))
    _user_data_kept(replace(source, messages=(*source.messages, feedback)), plain)
    _user_data_kept(source, with_feedback)


def test_mentions_glued_to_chinese_text_are_found():
    text = "请调用get_price查询，不要用get_price_history。"
    assert find_mentions(text, ["get_price"]) == ["get_price"]
    assert replace_mentions(text, {"get_price": "f"}) == "请调用f查询，不要用get_price_history。"


def test_a_hyphen_glues_a_name_only_to_an_identifier():
    # "Если calculate_debt-запрос вернул ошибку" (a Russian billing desk): a Cyrillic suffix
    # after a hyphen is prose's own, and the name moved nowhere while verify found it nowhere
    text = "Если calculate_debt-запрос не прошёл, не зовите calculate_debt-history или order-id-x."
    assert find_mentions(text, ["calculate_debt", "order-id"]) == ["calculate_debt"]
    assert replace_mentions(text, {"calculate_debt": "f", "order-id": "o"}) == text.replace(
        "calculate_debt-запрос", "f-запрос"
    )


def test_a_path_without_a_scheme_is_no_mention():
    # a log's request line kept its path only by luck: "GET /api/v1/deploy_status/api" became
    # ".../deploy_current_status/api" (a DevOps audit); alternatives and slash commands still move
    text = "GET /api/v1/deploy_status/api?x=1 (see /var/log/get_logs.log); get_logs/deploy_status"
    assert find_mentions(text, ["deploy_status", "get_logs"]) == ["get_logs", "deploy_status"]
    assert replace_mentions(text, {"deploy_status": "d", "get_logs": "g"}) == text.replace(
        "; get_logs/deploy_status", "; g/d"
    )
    assert replace_mentions("Type /deploy_status.", {"deploy_status": "d"}) == "Type /d."


@pytest.mark.parametrize(
    ("text", "renamed"),
    [
        ("Передайте числом в amount, срок — в months.", "Передайте числом в A, срок — в M."),
        ("`plan`: amount — итог, (months — не больше 12)", "`plan`: A — итог, (M — не больше 12)"),
        ("يبحث في amount دون تغيير", "يبحث في A دون تغيير"),
        # an English phrase in the prose: its words are its own
        ("оператор customer amount центра", "оператор customer amount центра"),
        ("«I pay in six months»", "«I pay in six months»"),
        ("«amount due»", "«amount due»"),
        # a compound of the prose ("email-рассылка")
        ("подписаться на amount-рассылку", "подписаться на amount-рассылку"),
    ],
)
def test_a_plain_word_alone_among_another_scripts_words_is_the_parameter(text, renamed):
    assert parameter_mentions({"amount": "A", "months": "M"})(text) == renamed


def test_web_addresses_are_no_mentions():
    """A web address names a page on a server; a renamed address would lead nowhere, so names in
    it are neither rewritten nor stale (found on harnesses whose help links end in tool names)."""
    text = (
        "See https://bank.example/help/get_price?ref=price-reply or "
        "(https://x.example/get_price), then call get_price."
    )
    assert find_mentions(text, ["get_price", "price-reply"]) == ["get_price"]
    assert replace_mentions(text, {"get_price": "f", "price-reply": "p"}) == text.replace(
        "call get_price", "call f"
    )
    rewrite = parameter_mentions({"name": "label", "link": "item"})
    code = "`https://x.example/a?name=1&link=2` and `lookup(name=1)`"
    assert rewrite(code) == "`https://x.example/a?name=1&link=2` and `lookup(label=1)`"
    source = original()
    skill = source.harness.skills[0]
    linked = source.with_harness(
        replace(
            source.harness,
            skills=(
                replace(skill, content=skill.content + " Help: https://shop.example/get_price"),
            ),
        )
    )
    variant = rename_episode(linked, RENAME)
    assert variant.harness.skills[0].content.endswith(
        "Help: https://shop.example/get_price"
    ) and variant.harness.skills[0].content.startswith("Call fetch_cost first")
    verify_variant(linked, variant, RENAME)


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = st.sampled_from(
    [
        "get_price",
        "get_price_history",
        "math.factorial",
        "item-qa",
        "a",
        ".",
        "-",
        "_",
        " ",
        "`",
        "调用",
        "x.",
        "shop.",
        "2",
    ]
)


@given(
    text=st.lists(_PIECES, max_size=12).map("".join),
    names=st.sets(
        st.sampled_from(["get_price", "math.factorial", "item-qa", "a", "x"]), min_size=1
    ),
)
def test_tokenized_mentions_equal_the_explicit_pattern(text, names):
    """The fast path (one tokenizer + lookup) finds exactly what the explicit alternation finds."""
    from hsa.text.mentions import _pattern

    assert find_mentions(text, names) == _pattern(tuple(sorted(names))).findall(text)
    mapping = {n: f"<{n}>" for n in names}
    assert replace_mentions(text, mapping) == _pattern(tuple(sorted(names))).sub(
        lambda m: mapping[m.group(0)], text
    )


def _with_recorded_arguments(episode: Episode, arguments: str) -> Episode:
    messages = [dict(m) for m in episode.messages]
    calls = [dict(c) for c in messages[1]["tool_calls"]]
    calls[1] = {**calls[1], "function": {**calls[1]["function"], "arguments": arguments}}
    messages[1]["tool_calls"] = calls
    return replace(episode, messages=tuple(messages))


@pytest.mark.parametrize(
    ("arguments", "check"),
    [
        ('{"link": "two"}', "call_schema"),  # a type the schema refuses, gold untouched
        ('{"link": 2, "colour": 1}', "call_schema"),  # a parameter the schema does not define
        ('{"link": 3}', "recorded_turn"),  # valid for the schema, not what the gold expects
    ],
)
def test_a_variant_whose_recorded_answer_went_wrong_is_refused(arguments, check):
    """The gold and the names all survive, but the recorded call, the row's training target,
    no longer fits: the variant would teach a wrong answer."""
    source = original()
    broken = _with_recorded_arguments(source, arguments)
    with pytest.raises(VerificationFailed) as caught:
        verify_variant(source, broken, Mapping())
    assert caught.value.check == check
    assert caught.value.reason.startswith(
        "messages[1].tool_calls[1]" if check == "call_schema" else "gold.turns[0]"
    )


@given(
    text=st.lists(_PIECES, max_size=12).map("".join),
    names=st.sets(
        st.sampled_from(
            [
                "get_price",
                "get_price_history",
                "get",
                "g",
                "math.factorial",
                "item-qa",
                "调用",
                "x.",
            ]
        ),
        min_size=1,
    ),
)
def test_the_any_name_search_finds_a_text_exactly_when_it_writes_a_name(text, names):
    # Searched by substrings at first and by a trie once compiled, it must say yes exactly when
    # some name is a substring, with names that are prefixes of others among them.
    from hsa.text.mentions import NameSearch, written_anywhere

    search = written_anywhere(names)
    assert search is not None
    expected = any(name in text for name in names)
    assert search.search(text) == expected
    for _ in range(NameSearch.COMPILE_AFTER):
        search.search(text)
    assert search._regex is not None  # compiled by now
    assert search.search(text) == expected


def test_the_any_name_search_takes_names_that_are_prefixes_of_prefixes_a_thousand_deep():
    # Each name a prefix of the next nests one more optional group; past what the regex
    # parser takes, the compiled search is a plain alternation, with the same answers.
    from hsa.text.mentions import NameSearch, written_anywhere

    names = ["x" * n + "y" for n in range(1000)] + ["z" * n for n in range(1, 1000)]
    search = written_anywhere(names)
    assert search is not None
    for _ in range(NameSearch.COMPILE_AFTER + 1):
        search.search("")
    assert search._regex is not None
    assert search.search("a" + "x" * 500 + "y") and search.search("zz")
    assert not search.search("x" * 2000)


def test_a_rename_keeps_the_messages_it_does_not_touch_as_they_are():
    # Untouched messages stay the same objects, and an untouched conversation the same tuple:
    # later steps and the row statistics compare conversations by identity first.
    source = original()
    elsewhere = rename_episode(source, Mapping(tools={"not_called": "never_called"}))
    assert elsewhere.messages is source.messages
    renamed = rename_episode(source, RENAME)
    kept = [m for m in source.messages if m["role"] == "user"]
    assert kept and all(any(m is n for n in renamed.messages) for m in kept)


def _with_thinking_and_named_result(source: Episode) -> Episode:
    """``source`` with the call's written thinking and its result named by the tool, as
    OpenAI-style exports and reasoning models' transcripts carry them."""
    messages = list(source.messages)
    messages[1] = {**messages[1], "reasoning_content": "get_price, then price-reply's rules."}
    messages[3] = {**messages[3], "name": "get_price"}
    return replace(source, messages=tuple(messages))


def test_a_rename_moves_names_in_an_assistants_thinking_and_a_results_name():
    """A model reads its own ``reasoning_content`` (chat templates write it as the thinking
    before the reply) and a tool result's ``name``: an old name left there teaches the variant's
    model to think with names its harness no longer has."""
    source = _with_thinking_and_named_result(original())
    variant = rename_episode(source, RENAME)
    verify_variant(source, variant, RENAME)
    assert variant.messages[1]["reasoning_content"] == "fetch_cost, then answer-price's rules."
    assert variant.messages[3]["name"] == "fetch_cost"


@pytest.mark.parametrize(
    ("index", "key", "value", "where"),
    [
        (1, "reasoning_content", "I will use get_price.", "messages[1].reasoning_content"),
        (3, "name", "get_price", "messages[3].name"),
    ],
)
def test_an_old_name_left_in_thinking_or_a_results_name_is_caught(index, key, value, where):
    source = _with_thinking_and_named_result(original())
    variant = rename_episode(source, RENAME)
    messages = list(variant.messages)
    messages[index] = {**messages[index], key: value}
    stale = replace(variant, messages=tuple(messages))
    expected = re.escape(f"renamed 'get_price' survives in {where}")
    with pytest.raises(VerificationFailed, match=expected):
        verify_variant(source, stale, RENAME)


def test_a_parameter_rename_moves_its_mentions_in_an_assistants_thinking():
    from hsa.transforms.tool_schema.parameters import rename_parameters

    source = original()
    messages = list(source.messages)
    messages[1] = {**messages[1], "reasoning_content": "Call it with `link` set to 2."}
    source = replace(source, messages=tuple(messages))
    variant = rename_parameters(source, {"link": "item"})
    assert variant.messages[1]["reasoning_content"] == "Call it with `item` set to 2."


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"mode": "sea", "container": "40HC", "quote_id": "Q-1"}\n```',
        'Send `{"mode": "sea", "quote_id": "Q-1"}`.',
    ],
)
def test_an_example_of_arguments_mixing_identifiers_and_plain_words_is_renamed_whole(text):
    """The identifier-like ``quote_id`` is renamed first; then whether the example's keys are
    all tool properties was asked of ``quoteIdentifier``, which none was, and its plain words
    (``mode``, ``container``) were left as another system's data: half renamed."""
    renames = {
        "mode": "operatingMode",
        "container": "containerValue",
        "quote_id": "quoteIdentifier",
    }
    arguments = {"book_shipment": frozenset({"mode", "container", "quote_id", "items"})}
    out = parameter_mentions(renames, arguments=arguments)(text)
    assert '"operatingMode": "sea"' in out and '"quoteIdentifier": "Q-1"' in out, out
    assert '"mode"' not in out and '"quote_id"' not in out, out


LAYOUT = (
    "{# the house layout #}Golden rule: call get_price before anything, and load price-reply.\n"
    "{% for s in sections %}## {{ s.heading }}\n{{ s.text }}{% for e in s.entries %}\n"
    "- {{ e.name }}: {{ e.description }}{% endfor %}\n{% endfor %}"
)


def _with_house_layout(source: Episode) -> Episode:
    harness = replace(
        source.harness,
        layouts={"house": LAYOUT},
        prompt=replace(source.harness.prompt, layout="house"),
    )
    return replace(source, harness=harness)


def test_names_a_harnesss_own_layout_writes_move_and_its_code_stays():
    """A layout of the harness's own may write names into its text ("call get_price before
    anything"), which every prompt shows: they stayed through every rename, beside a tool list
    that no longer had them, and verification passed."""
    from hsa.render import render_system_prompt

    source = _with_house_layout(original())
    variant = rename_episode(source, RENAME)
    verify_variant(source, variant, RENAME)
    layout = variant.harness.layouts["house"]
    assert layout.startswith(
        "{# the house layout #}Golden rule: call fetch_cost before anything, and load answer-price."
    )
    assert layout.split("\n", 1)[1] == LAYOUT.split("\n", 1)[1]  # the Jinja code as written
    prompt = render_system_prompt(variant.harness)
    assert "call fetch_cost before anything" in prompt and "get_price " not in prompt


def test_a_name_left_in_a_harnesss_own_layout_is_caught():
    source = _with_house_layout(original())
    variant = rename_episode(source, RENAME)
    stale = replace(variant, harness=replace(variant.harness, layouts={"house": LAYOUT}))
    with pytest.raises(VerificationFailed, match="survives in layout house"):
        verify_variant(source, stale, RENAME)


GUARDED_LAYOUT = (
    "{% for s in sections %}## {{ s.heading }}\n{{ s.text }}{% for e in s.entries %}\n"
    "- {{ e.name }}: {{ e.description }}"
    '{% if e.name == "get_price" %} (ask for the link first){% endif %}'
    "{% if e.name == 'price-reply' %} (load before quoting){% endif %}"
    "{% endfor %}\n{% endfor %}"
)


@pytest.mark.parametrize(
    ("transform", "name"),
    [
        ("tool_name_paraphrase", "get_price"),
        ("tool_name_mask", "get_price"),
        ("skill_id_mask", "price-reply"),
        ("skill_id_case", "price-reply"),
    ],
)
def test_a_name_a_layouts_code_compares_keeps_it(transform, name):
    """A DevOps harness's layout wrote `{% if item.name == "get_logs_tail" %} (preferred first
    look at logs){% endif %}`; renamed, the tool no longer matched and 117 of 117 rows lost the
    note, silently. A name the layout's code writes is kept, as one hooks.py writes is."""
    from hsa.render import render_system_prompt
    from tests.conftest import variant_of

    source = original()
    harness = replace(
        source.harness,
        layouts={"guarded": GUARDED_LAYOUT},
        prompt=replace(source.harness.prompt, layout="guarded"),
    )
    source = replace(source, harness=harness)
    assert source.harness.written_in_code(["get_price", "price-reply", "get_price_history"]) == {
        "get_price",
        "price-reply",
    }
    for seed in range(4):
        variant = variant_of(transform, source, seed=seed)
        kept = variant.mapping.tools if transform.startswith("tool") else variant.mapping.skills
        assert name not in kept
        prompt = render_system_prompt(variant.episode.harness)
        assert "(ask for the link first)" in prompt and "(load before quoting)" in prompt


# A claims harness (an audit): a reply hook requires a word after a tool ran, configured as
# {tool: word}; the word is spelled like a parameter of another tool.
CLAIM_HOOKS = """
def mention_required(payload, config):
    for tool, word in config["after"].items():
        if tool in payload["tools_called"] and word not in payload["reply"]:
            return {"ok": False, "feedback": f"After {tool}, mention the {word}."}
    return {"ok": True}
"""


def claim_episode(trust: bool) -> Episode:
    return Episode.from_dict(
        {
            "id": "claim",
            "harness": {
                "name": "claims",
                "tools": [
                    {
                        "name": "compute_payout",
                        "description": "Computes a claim's payout.",
                        "parameters": {
                            "type": "object",
                            "properties": {"claim_id": {"type": "string"}},
                        },
                    },
                    {
                        "name": "set_excess",
                        "description": "Sets a policy's excess.",
                        "parameters": {
                            "type": "object",
                            "properties": {"franquicia": {"type": "number"}},
                        },
                    },
                ],
                "hooks": [
                    {
                        "name": "mention",
                        "event": "reply",
                        "function": "mention_required",
                        "config": {"after": {"compute_payout": "franquicia"}},
                    }
                ],
                "hooks_source": CLAIM_HOOKS,
            },
            "messages": [
                {"role": "user", "content": "How much is paid on claim C-7?"},
                assistant(call("compute_payout", {"claim_id": "C-7"})),
                {"role": "tool", "tool_call_id": "c1", "content": '{"net": 1050}'},
                {"role": "assistant", "content": "After the franquicia of 150, 1050 is paid."},
            ],
            "gold": {
                "turns": [
                    {
                        "at": 1,
                        "calls": [{"name": "compute_payout", "arguments": {"claim_id": ["C-7"]}}],
                    },
                    {"at": 3, "no_call": True},
                ]
            },
        },
        trust_hooks=trust,
    )


@pytest.mark.parametrize("name", ["parameter_name_mask", "parameter_name_paraphrase"])
def test_a_variant_whose_hooks_refuse_its_recorded_answer_is_rejected(name):
    """The rename of the parameter `franquicia` reached the hook's setting, a word the reply
    must say, so the variant's own hook refused the reply the row teaches as correct. Where the
    hooks are trusted, verification runs them on each judged turn of the variant and of its
    source: a message the source's hooks accept must pass the variant's. Without trust the
    hooks (code) are not run."""
    from hsa.augment.variant import Variant
    from hsa.dataset.pipeline import augment_episode
    from hsa.model.hook_runner import HookRunner, complies
    from tests.conftest import one_transform_recipe

    refused = 0
    for seed in range(8):
        recipe = one_transform_recipe(name, seed, fraction=1.0)
        out = augment_episode(recipe, claim_episode(trust=True))[0]
        if isinstance(out, Variant):
            episode = out.episode
            runner = HookRunner(episode.harness)
            assert complies(runner, episode.messages[:3], episode.messages[3]) is not False
        else:
            assert out.stage == "verify:hooks_accept", out.reason
            # the reason names the hook and what it says, for the operator to find its setting
            assert "hook 'mention' refuses" in out.reason, out.reason
            assert "After compute_payout, mention the " in out.reason, out.reason
            refused += 1
        untrusted = augment_episode(recipe, claim_episode(trust=False))[0]
        assert isinstance(untrusted, Variant)
    assert refused


PARTY_LIMIT = """
def check_party(payload, config):
    for param, limit in config.items():
        value = payload["arguments"].get(param)
        if isinstance(value, int) and value > limit:
            return {"ok": False, "feedback": f"{param}={value} is above the maximum of {limit}."}
    return {"ok": True}
"""


def party_episode() -> Episode:
    tool = {
        "name": "book_trip",
        "description": "Books a trip.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "guests": {"type": "integer"}},
        },
    }
    return Episode.from_dict(
        {
            "id": "party",
            "harness": {
                "name": "travel",
                "tools": [tool],
                "hooks": [
                    {
                        "name": "party_size",
                        "event": "tool_call",
                        "function": "check_party",
                        "config": {"guests": 8},
                    }
                ],
                "hooks_source": PARTY_LIMIT,
            },
            "messages": [
                {"role": "user", "content": "Book Lisbon for twelve of us."},
                assistant(call("book_trip", {"city": "Lisbon", "guests": 12}, "c1")),
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "name": "hook.party_size",
                    "content": "guests=12 is above the maximum of 8.",
                },
                assistant(call("book_trip", {"city": "Lisbon", "guests": 8}, "c2")),
                {"role": "tool", "tool_call_id": "c2", "content": '{"booked": true}'},
                {"role": "assistant", "content": "Booked for eight; a second booking is needed."},
            ],
            "gold": {
                "turns": [
                    {
                        "at": 3,
                        "calls": [
                            {
                                "name": "book_trip",
                                "arguments": {"city": ["Lisbon"], "guests": [8]},
                            }
                        ],
                    }
                ]
            },
        },
        trust_hooks=True,
    )


@pytest.mark.parametrize("name", ["parameter_name_mask", "parameter_name_paraphrase"])
def test_a_variant_whose_hooks_no_longer_refuse_what_its_feedback_says_is_rejected(name):
    """A travel desk's limits per parameter (an audit): `{guests: 8}` keeps its key when the
    parameter is renamed (an option's own name stays), so the variant's hook no longer refused
    12 guests, yet the row taught its feedback "above the maximum of 8". Where the source's own
    hooks decide every recorded step as recorded, so must the variant's."""
    from hsa.augment.variant import Variant
    from hsa.dataset.pipeline import augment_episode
    from tests.conftest import one_transform_recipe

    rejected = 0
    for seed in range(6):
        out = augment_episode(one_transform_recipe(name, seed, fraction=1.0), party_episode())[0]
        if isinstance(out, Variant):
            assert out.mapping.parameter("book_trip", "guests") == "guests"
        else:
            assert out.stage == "verify:hooks_accept", out.reason
            assert "accept a step its recorded hook feedback refused" in out.reason
            rejected += 1
    assert rejected


def test_a_source_whose_hooks_refuse_its_judged_turn_is_rejected_where_they_are_trusted():
    """An ATS harness (an audit): a Saturday interview its business-days hook blocks, recorded
    as done and judged by the gold, made ten variants and no reject: the source's hooks only
    decided whether its variants were checked. Where the hooks are trusted, such a source is a
    reject of its own (``check:hooks``) naming the hook and what it says."""
    from hsa.dataset.pipeline import augment
    from hsa.errors import Reject
    from tests.conftest import one_transform_recipe

    def refusing(trust: bool) -> Episode:
        episode = claim_episode(trust=trust)
        reply = {"role": "assistant", "content": "1050 is paid."}  # no word the hook requires
        return replace(episode, messages=(*episode.messages[:3], reply))

    recipe = one_transform_recipe("parameter_name_mask", 1, fraction=1.0)
    (reject,) = augment(recipe, [refusing(trust=True)])
    assert isinstance(reject, Reject) and reject.stage == "check:hooks", reject
    assert "hook 'mention' refuses" in reject.reason and "mention the franquicia" in reject.reason
    assert reject.field == "messages[3]", reject  # the message refused, as a load reject names
    assert all(not isinstance(out, Reject) for out in augment(recipe, [refusing(trust=False)]))


def test_hsa_augment_names_the_file_and_line_of_a_source_its_hooks_refuse(tmp_path):
    """Two audits: `hsa augment` wrote a check:hooks reject as `source: episodes, line: None,
    field: None`, where every other reject names the file, line and field."""
    from hsa.cli import main

    good = claim_episode(trust=True)
    refusing = replace(
        good, id="refused", messages=(*good.messages[:3], {"role": "assistant", "content": "ok"})
    )
    episodes = tmp_path / "claims.jsonl"
    episodes.write_text(
        "\n".join(orjson.dumps(e.to_dict()).decode() for e in (good, refusing)) + "\n"
    )
    out = tmp_path / "variants.jsonl"
    args = ["augment", "--recipe", "tools-basic", "--episodes", str(episodes), "--out", str(out)]
    assert main([*args, "--trust-hooks"]) == 0
    (reject,) = [orjson.loads(line) for line in out.with_suffix(".rejects.jsonl").open()]
    assert reject["stage"] == "check:hooks", reject
    assert (reject["source"], reject["line"], reject["field"]) == (
        str(episodes),
        2,
        "messages[3]",
    ), reject
