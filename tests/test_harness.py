"""Harness folders: loading, validation errors that name file and field, round trips, hook trust."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hsa.errors import HarnessError, HooksNotTrustedError
from hsa.model.harness import Harness, load_harness, save_harness
from hsa.model.tool import Tool
from hsa.render import render_system_prompt
from tests.conftest import HARNESS_YAML, PRICE_TOOL, SKILL_MD, write_harness


def test_loads_every_part(harness_dir):
    harness = load_harness(harness_dir)
    assert harness.name == "tiny-shop" and harness.version == "2"
    assert harness.tool_names == ("get_price", "get_price_history")
    skill = harness.skill("price-reply")
    assert skill.kind == "reply" and skill.allowed_tools == ("get_price",)
    assert skill.content.startswith("# Price reply\n")
    assert [h.name for h in harness.hooks] == ["reply_length"]
    # The skill loader is offered as a tool, restricted to the harness's skill ids.
    loader = harness.all_tools()[-1]
    assert loader.name == "load_skill"
    assert loader.parameters["properties"]["name"]["enum"] == ["price-reply"]


def test_folder_round_trip_is_lossless(harness_dir, tmp_path):
    harness = load_harness(harness_dir)
    again = load_harness(save_harness(harness, tmp_path / "copy"))
    assert again == harness
    # And a second save writes the same bytes: the folder form is canonical.
    third = save_harness(again, tmp_path / "copy2")
    for path in sorted(p for p in (tmp_path / "copy").rglob("*") if p.is_file()):
        twin = third / path.relative_to(tmp_path / "copy")
        assert twin.read_bytes() == path.read_bytes(), path


def test_dict_round_trip_is_lossless(harness_dir):
    harness = load_harness(harness_dir)
    assert Harness.from_dict(json.loads(json.dumps(harness.to_dict()))) == harness


def test_skill_order_survives_round_trip(tmp_path):
    skills = {
        name: SKILL_MD.replace("name: price-reply", f"name: {name}")
        for name in ("b-skill", "a-skill")
    }
    root = write_harness(
        tmp_path / "h",
        skills=skills,
        hooks=None,
        harness_yaml="name: h\nskills: [b-skill, a-skill]\n",
    )
    harness = load_harness(root)
    assert harness.skill_ids == ("b-skill", "a-skill")
    assert load_harness(save_harness(harness, tmp_path / "out")).skill_ids == ("b-skill", "a-skill")


@pytest.mark.parametrize("skill_id", ["refund_policy", "RefundPolicy", "shop.refund-policy"])
def test_a_harness_whose_skill_ids_are_no_skill_md_names_is_not_written_as_a_folder(
    tmp_path, skill_id
):
    """A variant's skill ids in another convention (skill_id_case, skill_id_namespace) were
    written into SKILL.md files that load_harness then refused: the folder is refused before
    anything is written, naming the skill."""
    harness = Harness.from_dict(
        {"name": "h", "skills": [{"id": skill_id, "description": "d", "content": "c"}]}
    )
    with pytest.raises(HarnessError) as caught:
        save_harness(harness, tmp_path / "out")
    assert caught.value.field == f"skills.{skill_id}"
    assert "is no SKILL.md name" in caught.value.reason
    assert not (tmp_path / "out").exists()


def test_mcp_tool_is_normalised(tmp_path):
    mcp = {
        "name": "get_price",
        "description": "d",
        "annotations": {"readOnlyHint": True},
        "inputSchema": PRICE_TOOL["function"]["parameters"],
    }
    root = write_harness(
        tmp_path / "h", tools={"p.json": mcp}, hooks=None, harness_yaml="name: h\n"
    )
    tool = load_harness(root).tool("get_price")
    assert tool.parameters == PRICE_TOOL["function"]["parameters"]
    assert tool.to_openai()["function"]["annotations"] == {"readOnlyHint": True}
    assert Tool.from_dict(tool.to_openai()) == tool


def test_hooks_need_explicit_trust(harness_dir):
    untrusted = load_harness(harness_dir)
    with pytest.raises(HooksNotTrustedError, match="--trust-hooks.*trust_hooks=True"):
        untrusted.hook_functions()
    trusted = load_harness(harness_dir, trust_hooks=True)
    check = trusted.hook_functions()["reply_length"]
    assert check({"reply": "x" * 60}, {"max_chars": 50}) == {"ok": False, "feedback": "too long"}
    assert check({"reply": "fine"}, {"max_chars": 50}) == {"ok": True}


def test_untrusted_hooks_are_parsed_not_run(tmp_path):
    # A hooks.py with a side effect at import time: loading without trust must not run it.
    marker = tmp_path / "ran"
    hooks = f"open({str(marker)!r}, 'w').write('x')\n\ndef short_reply(payload, config):\n    return {{'ok': True}}\n"
    load_harness(write_harness(tmp_path / "h", hooks=hooks))
    assert not marker.exists()


def test_a_hook_function_rebound_to_no_function_is_a_harness_error(tmp_path):
    """hooks.py defines the hook's function, then binds its name to something else: parsed, it
    looks defined; imported, there is nothing to call. Said as the harness's error, not as
    hsa's own bug (a KeyError)."""
    hooks = "def short_reply(payload, config):\n    return {'ok': True}\n\nshort_reply = 5\n"
    root = write_harness(tmp_path / "h", hooks=hooks)
    load_harness(root)  # untrusted, hooks.py is parsed, never run
    with pytest.raises(HarnessError, match="'short_reply'.*no function once imported") as raised:
        load_harness(root, trust_hooks=True)  # trusted, it is imported where it is read
    assert raised.value.file == str(root / "hooks.py")


def test_a_tool_file_that_is_not_utf8_says_which_byte(tmp_path):
    """A Latin-1 byte in a tool file was said as orjson says it ("str is not valid UTF-8:
    surrogates not allowed: line 1 column 1"), wherever the byte stood."""
    root = write_harness(tmp_path / "h")
    (root / "tools" / "latin.json").write_bytes(b'{"name": "f", "description": "caf\xe9"}')
    with pytest.raises(HarnessError, match="not UTF-8 text: .* at byte 33") as caught:
        load_harness(root)
    assert caught.value.file.endswith("latin.json")


def test_a_hook_feedback_format_no_format_has_is_refused_at_load(tmp_path):
    """``feedback_format: markdown`` loaded as ok; then every variant a hook transform made was
    rejected with a reason that named neither the hook nor harness.yaml, and the runtime failed
    at the hook's first failing verdict."""
    hooks = "def short_reply(payload, config):\n    return {'ok': True}\n"
    root = write_harness(tmp_path / "h", hooks=hooks)
    manifest = root / "harness.yaml"
    text = manifest.read_text(encoding="utf-8")
    assert "config: {max_chars: 50}" in text
    manifest.write_text(
        text.replace("{max_chars: 50}", "{max_chars: 50, feedback_format: markdown}"),
        encoding="utf-8",
    )
    with pytest.raises(HarnessError, match="unknown hook feedback format 'markdown'") as caught:
        load_harness(root)
    assert caught.value.field.endswith("config.feedback_format")


@pytest.mark.parametrize(
    ("edit", "message", "field"),
    [
        # YAML reads 1.10 as the number 1.1: the version would not be what the file says
        (('version: "2"', "version: 2.10"), "version 2.1 is a YAML number", "version"),
        # a section listed twice would render twice
        (
            (
                "sections: [persona, skills, tools, hooks]",
                "sections: [persona, skills, tools, persona]",
            ),
            "lists 'persona' twice",
            "prompt.sections",
        ),
        # text for a section the prompt does not list is never shown
        (
            ("persona: You are a shop assistant.", "persona: x\n    rules: Never argue."),
            "text for 'rules', which prompt.sections does not list",
            "prompt.text",
        ),
        # a harness with no name is no harness anyone can name (it was called 'inline')
        (("name: tiny-shop\n", ""), "harness.yaml needs a name", "name"),
    ],
)
def test_harness_yaml_says_what_it_means_or_is_refused(tmp_path, edit, message, field):
    root = write_harness(tmp_path / "h")
    manifest = root / "harness.yaml"
    text = manifest.read_text(encoding="utf-8")
    assert edit[0] in text, text
    manifest.write_text(text.replace(edit[0], edit[1], 1), encoding="utf-8")
    with pytest.raises(HarnessError, match=message) as caught:
        load_harness(root)
    assert caught.value.field.endswith(field), caught.value.field


def test_a_skill_file_with_windows_line_endings_loads_with_plain_ones(tmp_path):
    """A SKILL.md saved on Windows (CRLF) kept "\r" in the skill's body: rows showed "# Title\r"
    and the content rewrite took lines of "\r" alone for text, merging paragraphs."""
    root = write_harness(tmp_path / "h")
    skill_file = next((root / "skills").iterdir()) / "SKILL.md"
    text = skill_file.read_text(encoding="utf-8")
    skill_file.write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    harness = load_harness(root)
    skill = harness.skill(skill_file.parent.name)
    assert "\r" not in skill.content and "\r" not in skill.description
    assert skill == load_harness(write_harness(tmp_path / "plain")).skill(skill.id)


@pytest.mark.parametrize("name", ["..", ".", "/etc/x", "a\\b", "get\u0007price"])
def test_a_tool_name_that_is_a_path_or_holds_a_control_character_is_refused(name):
    """MCP names may hold "/" (``billing/refund``, kept); a name that is a path of its own
    (``..``, ``/etc/x``, a backslash) or holds a control character names no function."""
    with pytest.raises(HarnessError, match="tool name"):
        Tool.from_dict({"name": name, "parameters": {"type": "object", "properties": {}}})


def test_tool_names_that_differ_only_in_their_unicode_form_are_one_name():
    """ "café" in NFC and in NFD look the same to the model and to a reader: two tools."""
    import unicodedata

    tools = [
        {"name": unicodedata.normalize(form, "café"), "parameters": {"type": "object"}}
        for form in ("NFC", "NFD")
    ]
    with pytest.raises(HarnessError, match="differ only in their Unicode form"):
        Harness.from_dict({"name": "h", "tools": tools})


def test_hooks_code_that_never_finishes_importing_is_stopped(tmp_path, monkeypatch):
    """A hooks.py whose top level loops for ever hung `hsa harness validate --trust-hooks` (and
    every run that imports it) with no word; it is stopped after IMPORT_SECONDS, named."""
    import hsa.model.hook as hook_module

    monkeypatch.setattr(hook_module, "IMPORT_SECONDS", 1)
    hooks = "def short_reply(payload, config):\n    return {'ok': True}\n\nwhile True:\n    pass\n"
    with pytest.raises(HarnessError, match="did not finish importing in 1 s"):
        load_harness(write_harness(tmp_path / "h", hooks=hooks), trust_hooks=True)


def test_a_tool_file_in_capitals_is_named_not_ignored(tmp_path):
    root = write_harness(tmp_path / "h")
    (root / "tools" / "a_price.json").rename(root / "tools" / "a_price.JSON")
    with pytest.raises(HarnessError, match="ends in .json, lowercase") as info:
        load_harness(root)
    assert info.value.file.endswith("a_price.JSON")


def test_a_skill_listed_twice_is_named(tmp_path):
    """harness.yaml's ``skills`` fixes the skills' order, each once: a list naming one twice
    was refused as "without a folder: [], not listed: []", which names nothing."""
    root = write_harness(tmp_path / "h")
    skill = next(p.name for p in (root / "skills").iterdir())
    manifest = root / "harness.yaml"
    folders = sorted(p.name for p in (root / "skills").iterdir())
    manifest.write_text(
        manifest.read_text() + "skills: " + str([*folders, skill]).replace("'", '"') + "\n",
        encoding="utf-8",
    )
    with pytest.raises(HarnessError, match=f"listed twice: \\['{skill}'\\]"):
        load_harness(root)


def test_a_harness_key_written_twice_is_refused(tmp_path):
    root = write_harness(tmp_path / "h")
    manifest = root / "harness.yaml"
    manifest.write_text(manifest.read_text() + "name: other\n", encoding="utf-8")
    with pytest.raises(HarnessError, match="key 'name' is written twice"):
        load_harness(root)


def test_a_harness_integer_beyond_64_bits_is_refused_with_its_line(tmp_path):
    """It would be written as JSON (hook configs, fingerprints), which holds no such integer:
    a crash in the middle of a run before this was refused at load."""
    root = write_harness(tmp_path / "h")
    manifest = root / "harness.yaml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text + "meta:\n  budget: 99999999999999999999\n", encoding="utf-8")
    line = len(text.splitlines()) + 2
    with pytest.raises(HarnessError, match="integer 99999999999999999999 does not fit") as info:
        load_harness(root)
    assert info.value.file.endswith("harness.yaml") and info.value.line == line


@pytest.mark.parametrize(
    "added, message",
    [
        ("{1: hot, 2: new}", "key 1 is not a string"),
        ("!!set {red, blue}", "set is no JSON value"),
    ],
)
def test_yaml_that_is_no_json_is_refused_with_its_line(tmp_path, added, message):
    """What a harness.yaml says is written as JSON (fingerprints, rows): an integer key or a
    set in a hook's config crashed every command far from its line ("Dict key must be str",
    a bug in hsa)."""
    text = HARNESS_YAML.replace("config: {max_chars: 50}", f"config:\n      labels: {added}")
    root = write_harness(tmp_path / "h", harness_yaml=text)
    with pytest.raises(HarnessError, match=message) as info:
        load_harness(root)
    assert info.value.line == text.splitlines().index(f"      labels: {added}") + 1


def test_a_yaml_date_stays_the_text_it_is(tmp_path):
    since = HARNESS_YAML.replace(
        "config: {max_chars: 50}", "config: {max_chars: 50, since: 2024-05-01}"
    )
    harness = load_harness(write_harness(tmp_path / "h", harness_yaml=since))
    assert harness.hooks[0].config == {"max_chars": 50, "since": "2024-05-01"}


def test_hook_code_that_exits_at_import_is_a_harness_error(tmp_path):
    hooks = (
        "import sys\nsys.exit(0)\n\ndef short_reply(payload, config):\n    return {'ok': True}\n"
    )
    root = write_harness(tmp_path / "h", hooks=hooks)
    with pytest.raises(HarnessError, match="hooks.py failed to import: SystemExit") as raised:
        load_harness(root, trust_hooks=True)
    assert raised.value.line == 2  # where the code stopped, as a syntax error says its line
    # the folder's hooks.py, not the harness's name (a path that does not exist)
    assert raised.value.file == str(root / "hooks.py")


def test_system_prompt_renders_sections_in_order(harness_dir):
    prompt = render_system_prompt(load_harness(harness_dir))
    assert (
        prompt.index("You are a shop assistant.")
        < prompt.index("`price-reply`")
        < prompt.index("`get_price`")
        < prompt.index("`reply_length`")
    )


@pytest.mark.parametrize(
    ("change", "file_part", "message"),
    [
        (
            dict(
                tools={
                    "bad.json": {
                        "name": "f",
                        "parameters": {"type": "object", "properties": {"x": {"type": "nope"}}},
                    }
                }
            ),
            "bad.json",
            r"parameters\.properties\.x.*not a valid JSON Schema",
        ),
        (
            dict(tools={"bad.json": {"name": "f", "parameters": {"type": "string"}}}),
            "bad.json",
            "must describe an object",
        ),
        (
            # a typo or a property left out: no call could give it and be correct
            dict(
                tools={
                    "uncallable.json": {
                        "name": "f",
                        "parameters": {
                            "type": "object",
                            "properties": {"currency": {"type": "string"}},
                            "required": ["curency"],
                        },
                    }
                }
            ),
            "uncallable.json",
            r"parameters\.required: required \['curency'\] names no parameter of properties",
        ),
        (
            # nested, where the object takes no other key: no value of it is valid
            dict(
                tools={
                    "closed.json": {
                        "name": "f",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "filter": {
                                    "type": "object",
                                    "properties": {"end": {"type": "string"}},
                                    "required": ["start"],
                                    "additionalProperties": False,
                                }
                            },
                        },
                    }
                }
            ),
            "closed.json",
            r"filter\.required: not a valid JSON Schema: required \['start'\] names no property",
        ),
        (
            # an enum that lets no value through: every call that gives it would be refused
            dict(
                tools={
                    "empty.json": {
                        "name": "f",
                        "parameters": {
                            "type": "object",
                            "properties": {"reason": {"type": "string", "enum": []}},
                        },
                    }
                }
            ),
            "empty.json",
            r"properties\.reason\.enum: not a valid JSON Schema: enum is empty",
        ),
        (
            dict(
                tools={
                    "numbers.json": {
                        "name": "f",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "size": {
                                    "type": "array",
                                    "items": {"type": "string", "enum": [1, 2, 3]},
                                }
                            },
                        },
                    }
                }
            ),
            "numbers.json",
            r"size\.items\.enum: not a valid JSON Schema: enum \[1, 2, 3\] has no value of type "
            "string",
        ),
        (
            # a misspelt key: the tool would load with no parameters (or no description)
            dict(
                tools={
                    "typo.json": {
                        "name": "f",
                        "paramters": {"type": "object", "properties": {"n": {"type": "string"}}},
                    }
                }
            ),
            "typo.json",
            r"tool\.paramters: .*did you mean 'parameters'",
        ),
        (
            dict(tools={"typo.json": {"name": "f", "descripton": "Finds things."}}),
            "typo.json",
            r"tool\.descripton: .*did you mean 'description'",
        ),
        (
            # the whole object by reference: hsa reads a tool's parameters from its top-level
            # properties, and every gold argument would be "a parameter the tool does not define"
            dict(
                tools={
                    "byref.json": {
                        "name": "f",
                        "parameters": {
                            "$ref": "#/$defs/p",
                            "$defs": {
                                "p": {"type": "object", "properties": {"a": {"type": "string"}}}
                            },
                        },
                    }
                }
            ),
            "byref.json",
            r"tool\.parameters\.\$ref: the parameters are a reference",
        ),
        (dict(tools={"bad.json": "{not json"}), "bad.json", "not valid JSON"),
        (
            # an OpenAI tool of another type (the Assistants API's retrieval) calls nothing
            dict(tools={"kind.json": {"type": "retrieval"}}),
            "kind.json",
            r"tool\.type: a tool's type must be 'function', got 'retrieval'",
        ),
        (
            # JSON readers take it for a float: the tools column would show another bound
            dict(
                tools={
                    "big.json": '{"name": "f", "parameters": {"type": "object", "properties": '
                    '{"n": {"type": "integer", "maximum": 99999999999999999999}}}}'
                }
            ),
            "big.json",
            "integer 99999999999999999999 does not fit in 64 bits",
        ),
        (
            # named in the file that defines the name again, with the one that has it first
            dict(tools={"a.json": PRICE_TOOL, "b.json": PRICE_TOOL}),
            "tools/b.json",
            "duplicate tool name 'get_price', which a.json defines too",
        ),
        (
            dict(skills={"price-reply": "# no front matter\n"}),
            "SKILL.md",
            "must start with YAML front matter",
        ),
        (dict(skills={"other-name": SKILL_MD}), "SKILL.md", "differs from its folder 'other-name'"),
        (
            dict(skills={"price-reply": SKILL_MD.replace("name: price-reply\n", "")}),
            "SKILL.md",
            "front matter has no name .the skill's id: its folder's name, 'price-reply'.",
        ),
        (
            dict(skills={"Bad_Name": SKILL_MD.replace("price-reply", "Bad_Name")}),
            "SKILL.md",
            "lowercase letters",
        ),
        (
            dict(
                skills={
                    "price-reply": SKILL_MD.replace("How to answer a price question.", "x" * 1025)
                }
            ),
            "SKILL.md",
            "at most 1024",
        ),
        (
            dict(
                skills={
                    "price-reply": SKILL_MD.replace(
                        "allowed-tools: get_price", "allowed-tools: get_cost"
                    )
                }
            ),
            "price-reply/SKILL.md",
            "allows unknown tool 'get_cost'",
        ),
        (
            dict(
                skills={
                    "price-reply": SKILL_MD.replace(
                        "allowed-tools: get_price", "allowed-tools: Read, Bash(python:*)"
                    )
                }
            ),
            "price-reply/SKILL.md",
            r"unknown tool 'Read'.*runtime_tools: \[Read\]",
        ),
        (
            dict(hooks="def other(payload, config):\n    return {'ok': True}\n"),
            "harness.yaml",
            "names function 'short_reply', which hooks.py does not define",
        ),
        (dict(hooks=None), "harness.yaml", "needs hooks.py"),
        (
            dict(harness_yaml=HARNESS_YAML.replace("event: reply", "event: sometimes")),
            "harness.yaml",
            "unknown event 'sometimes'",
        ),
        (
            dict(harness_yaml=HARNESS_YAML.replace("persona, skills", "persona, rules, skills")),
            "harness.yaml",
            "section 'rules' has no text",
        ),
        (
            dict(
                harness_yaml=HARNESS_YAML.replace(
                    "skill_kinds: [reply, strategy]", "skill_kinds: [strategy]"
                )
            ),
            "price-reply/SKILL.md",
            "kind 'reply', not one of",
        ),
        (
            dict(harness_yaml=HARNESS_YAML + "runtime_tools: [get_price]\n"),
            "harness.yaml",
            "runtime tool 'get_price' is already a tool",
        ),
        (dict(harness_yaml="name: [unclosed\n"), "harness.yaml", "not valid YAML"),
        # hooks.py is named where it is, beside harness.yaml (not inside it), with its line
        (
            dict(hooks="def short_reply(payload, config)\n    pass\n"),
            "h/hooks.py",
            "does not parse",
        ),
    ],
)
def test_bad_harness_names_file_and_problem(tmp_path, change, file_part, message):
    root = write_harness(tmp_path / "h", **change)
    with pytest.raises(HarnessError, match=message) as info:
        load_harness(root)
    assert file_part in str(info.value.file)
    assert Path(info.value.file).parent.exists()  # a path that is there to open


def test_unknown_layout_is_reported(harness_dir):
    harness = load_harness(harness_dir)
    broken = Harness.from_dict(
        {**harness.to_dict(), "prompt": {"layout": "nope", "sections": ["tools"]}}
    )
    with pytest.raises(HarnessError, match="unknown prompt layout 'nope'; available: .*markdown"):
        render_system_prompt(broken)


def test_layout_cannot_reach_python_internals(harness_dir):
    harness = load_harness(harness_dir)
    evil = "{{ tools.__class__.__mro__[1].__subclasses__() }}"
    sneaky = Harness.from_dict(
        {
            **harness.to_dict(),
            "layouts": {"evil": evil},
            "prompt": {"layout": "evil", "sections": ["tools"]},
        }
    )
    with pytest.raises(HarnessError, match="unsafe"):
        render_system_prompt(sneaky)


def test_sections_can_move_to_the_first_user_turn(harness_dir):
    from dataclasses import replace

    from hsa.model.episode import Episode
    from hsa.render import render_messages

    harness = load_harness(harness_dir)
    moved = replace(
        harness, prompt=replace(harness.prompt, options={"placement": {"skills": "first_user"}})
    )
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": [
                {"role": "system", "content": "Row's own system text."},
                {"role": "user", "content": "hi"},
            ],
            "gold": {"no_call": True},
        },
        harness=moved,
    )
    system, user = render_messages(episode)
    assert "`price-reply`" not in system["content"] and "`get_price`" in system["content"]
    assert system["content"].endswith("Row's own system text.")
    assert user["content"].startswith("## Skills") and user["content"].endswith("\n\nhi")
    bad = replace(
        harness, prompt=replace(harness.prompt, options={"placement": {"skills": "footer"}})
    )
    with pytest.raises(HarnessError, match="placement of 'skills' must be one of"):
        render_messages(replace(episode, harness=bad))


def test_skill_text_is_data_not_template(harness_dir):
    from dataclasses import replace

    harness = load_harness(harness_dir)
    skill = replace(harness.skills[0], description="{{ ''.__class__.__mro__ }}")
    prompt = render_system_prompt(replace(harness, skills=(skill,)))
    assert "{{ ''.__class__.__mro__ }}" in prompt


def test_fast_replace_matches_dataclasses_replace(harness_dir):
    """hsa.model.frozen.replace copies fields only: same value as dataclasses.replace, the old object
    untouched, no cached property carried over, unknown fields refused."""
    import dataclasses

    from hsa.model.frozen import replace
    from hsa.model.gold import GoldCall, TurnGold

    harness = load_harness(harness_dir)
    assert harness.tool_names  # fills any cached property on the old object
    renamed = (Tool(name="renamed_" + harness.tools[0].name),) + harness.tools[1:]
    new = replace(harness, tools=renamed)
    assert new == dataclasses.replace(harness, tools=renamed)
    assert new.tool_names[0] == "renamed_" + harness.tools[0].name
    assert harness.tools[0].name != new.tools[0].name
    turn = TurnGold(at=1, calls=(GoldCall(name="a", arguments={"x": [1]}),))  # slotted
    assert replace(turn, at=3) == dataclasses.replace(turn, at=3) and turn.at == 1
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        replace(harness, nope=1)


@pytest.mark.parametrize(
    "layout", ["{{ range(200000) | list | length }}", "{% include '/etc/passwd' %}", "{{ 1 / 0 }}"]
)
def test_a_layout_that_fails_to_render_is_a_harness_error(harness_dir, layout):
    """The sandbox refuses, or the template itself fails: either way the harness is at fault,
    and the user gets one message naming the layout (no traceback from `harness validate`)."""
    harness = load_harness(harness_dir)
    broken = Harness.from_dict(
        {
            **harness.to_dict(),
            "layouts": {"mine": layout},
            "prompt": {"layout": "mine", "sections": ["tools"]},
        }
    )
    with pytest.raises(HarnessError, match=r"layout 'mine' \(layouts/mine.j2\) does not render"):
        render_system_prompt(broken)


@pytest.mark.parametrize(
    "part",
    [
        "skills/price-reply/SKILL.md",
        "tools/a_price.json",
        "hooks.py",
        "harness.yaml",
        "skills/price-reply",
    ],
)
def test_symlinks_out_of_the_harness_are_refused(tmp_path, part):
    """A harness's text becomes training data: a link to a file elsewhere on disk must not pull
    that file into every row."""
    root = write_harness(tmp_path / "h")
    outside = tmp_path / "outside"
    (root / part).rename(outside)
    (root / part).symlink_to(outside, target_is_directory=outside.is_dir())
    with pytest.raises(HarnessError, match="symbolic link that leads outside the harness") as info:
        load_harness(root)
    assert str(root) in info.value.file


@pytest.mark.parametrize("where", ["tools/loop.json", "hooks.py", "skills/price-reply/SKILL.md"])
def test_a_loop_of_symlinks_is_named(tmp_path, where):
    root = write_harness(tmp_path / "h")
    (root / where).unlink(missing_ok=True)
    (root / where).symlink_to(root / "other")
    (root / "other").symlink_to(root / where)
    with pytest.raises(HarnessError, match="is a loop of symbolic links") as info:
        load_harness(root)
    assert info.value.file.endswith((where, "other"))


@pytest.mark.parametrize(
    "folder, file", [("tools", "loop.json"), ("skills/price-reply", "SKILL.md")]
)
def test_a_loop_behind_a_linked_folder_is_named(tmp_path, folder, file):
    root = write_harness(tmp_path / "h")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / file).symlink_to(outside / file)  # a link to itself
    shutil.rmtree(root / folder)
    (root / folder).symlink_to(outside, target_is_directory=True)
    with pytest.raises(HarnessError, match="is a loop of symbolic links"):
        load_harness(root)


def test_symlinks_inside_the_harness_are_followed(tmp_path):
    root = write_harness(tmp_path / "h")
    (root / "shared.md").write_text(SKILL_MD, encoding="utf-8")
    skill = root / "skills" / "price-reply" / "SKILL.md"
    skill.unlink()
    skill.symlink_to(root / "shared.md")
    assert load_harness(root).skill("price-reply").content.startswith("# Price reply")


def test_a_byte_order_mark_is_accepted_in_every_harness_file(tmp_path, harness_dir):
    root = write_harness(tmp_path / "h")
    (root / "layouts").mkdir()
    (root / "layouts" / "plain.j2").write_text("{% for s in sections %}{{ s.text }}{% endfor %}")
    for path in [
        root / "harness.yaml",
        root / "skills" / "price-reply" / "SKILL.md",
        root / "tools" / "a_price.json",
        root / "hooks.py",
        root / "layouts" / "plain.j2",
    ]:
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    loaded = load_harness(root)
    assert loaded.tools == load_harness(harness_dir).tools
    assert loaded.skills == load_harness(harness_dir).skills
    assert not loaded.layouts["plain"].startswith("\ufeff")
    assert not loaded.hooks_source.startswith("\ufeff")


CLAUDE_CODE_SKILL = SKILL_MD.replace(
    "allowed-tools: get_price", "allowed-tools: Read, Grep, Bash(git add:*), get_price"
)


def test_claude_code_allowed_tools_with_runtime_tools(tmp_path):
    """Claude Code's comma-separated allowed-tools, with restricted entries, loads when the
    runtime's tools are declared; entries are kept as written and survive a round trip."""
    root = write_harness(
        tmp_path / "h",
        harness_yaml=HARNESS_YAML + "runtime_tools: [Read, Grep, Bash]\n",
        skills={"price-reply": CLAUDE_CODE_SKILL},
    )
    harness = load_harness(root)
    skill = harness.skill("price-reply")
    assert skill.allowed_tools == ("Read", "Grep", "Bash(git add:*)", "get_price")
    assert harness.runtime_tools == ("Read", "Grep", "Bash")
    assert {"Read", "Bash"} <= harness.names  # a renamed tool may not take their names
    assert "allowed-tools: Read, Grep, Bash(git add:*), get_price" in skill.to_markdown()
    save_harness(harness, tmp_path / "copy")
    assert load_harness(tmp_path / "copy") == harness
    assert Harness.from_dict(harness.to_dict()) == harness
    # the runtime's tools are not the model's: the tools list and the prompt hold the harness's
    assert [t["function"]["name"] for t in harness.openai_tools()] == [
        "get_price",
        "get_price_history",
        "load_skill",
    ]


def test_renaming_a_tool_keeps_an_allowed_entrys_restriction(tmp_path):
    from hsa.augment.mapping import Mapping
    from hsa.augment.rename import rename_harness

    skill_md = SKILL_MD.replace("allowed-tools: get_price", "allowed-tools: get_price(*), Bash")
    root = write_harness(
        tmp_path / "h",
        harness_yaml=HARNESS_YAML + "runtime_tools: [Bash]\n",
        skills={"price-reply": skill_md},
    )
    renamed = rename_harness(load_harness(root), Mapping(tools={"get_price": "fetch_price"}))
    assert renamed.skill("price-reply").allowed_tools == ("fetch_price(*)", "Bash")
    renamed.validate()


def test_identifiers_are_the_names_and_every_parameter_name_at_any_depth(harness_dir):
    """What a rewording of the harness's texts must keep: a nested field is as much a name as a
    top-level parameter, in objects, array items, anyOf branches and shared definitions."""
    from hsa.model.frozen import replace

    nested = Tool(
        "book",
        "Book a trip.",
        {
            "type": "object",
            "properties": {
                "trip": {"type": "object", "properties": {"city": {"type": "string"}}},
                "travellers": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"age": {"type": "integer"}}},
                },
                "pay": {
                    "anyOf": [
                        {"type": "object", "properties": {"card_token": {"type": "string"}}},
                        {"$ref": "#/$defs/voucher"},
                    ]
                },
            },
            "$defs": {"voucher": {"type": "object", "properties": {"code": {"type": "string"}}}},
        },
    )
    harness = load_harness(harness_dir)
    harness = replace(harness, tools=harness.tools + (nested,))
    assert harness.identifiers == harness.names | {
        "link",
        "currency",
        "days",
        "trip",
        "city",
        "travellers",
        "age",
        "pay",
        "card_token",
        "code",
    }
    # keywords and definition names are not parameters
    assert not {"properties", "items", "anyOf", "voucher", "$defs"} & harness.identifiers


def test_a_prompt_text_with_no_sections_listed_is_shown_first():
    """`prompt: {text: {persona: ...}}` with no `sections`: the default list (skills, tools,
    hooks) left the persona out, and it was never shown. The texts come first, in their order."""
    from hsa.render import render_system_prompt

    harness = Harness.from_dict(
        {"name": "shop", "prompt": {"text": {"persona": "You sell.", "rules": "Be brief."}}}
    )
    assert harness.prompt.sections == ("persona", "rules", "skills", "tools", "hooks")
    prompt = render_system_prompt(harness)
    assert prompt.index("You sell.") < prompt.index("Be brief.")


def test_the_skill_loader_speaks_the_harness_language(tmp_path):
    """The loader's description and its argument's were English in every prompt and tools list,
    in a French or Japanese harness too: `skill_loader_text` words them; the default stays."""
    root = write_harness(tmp_path / "h")
    manifest = root / "harness.yaml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8")
        + "skill_loader_text:\n  description: Charge les instructions d'une compétence.\n"
        + "  argument: L'identifiant de la compétence.\n",
        encoding="utf-8",
    )
    harness = load_harness(root)
    loader = harness.loader_tool()
    assert loader.description == "Charge les instructions d'une compétence."
    assert loader.parameters["properties"]["name"]["description"] == (
        "L'identifiant de la compétence."
    )
    assert load_harness(save_harness(harness, tmp_path / "again")) == harness
    plain = load_harness(write_harness(tmp_path / "plain")).loader_tool()
    assert plain.description.startswith("Load a skill's full instructions")
    with pytest.raises(HarnessError, match="unknown keys \\['title'\\]"):
        Harness.from_dict({"name": "x", "skill_loader_text": {"title": "t"}})
