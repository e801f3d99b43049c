"""Harness parts in the formats harnesses come in: an MCP tools/list listing, Agent Skills and
Claude Code skill folders; skill licences carried into the card and guarding `hsa push`."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import orjson
import pytest

from hsa.augment.recipe import Recipe
from hsa.cli import main
from hsa.dataset.card import card_text
from hsa.dataset.generate import generate
from hsa.dataset.hub import push_version
from hsa.dataset.licenses import is_open
from hsa.errors import HsaError
from hsa.model.harness import load_harness
from hsa.render import render_system_prompt

SEARCH = {
    "name": "search_orders",
    "title": "Search orders",
    "description": "Find a customer's orders.",
    "inputSchema": {
        "type": "object",
        "properties": {"customer_id": {"type": "string"}, "status": {"type": "string"}},
        "required": ["customer_id"],
    },
    "annotations": {"readOnlyHint": True},
}
REFUND = {
    "name": "billing/refund",
    "description": "Refund an order.",
    "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
}
BAD_SCHEMA = {"name": "broken", "inputSchema": {"type": "string"}}


def write_json(path: Path, value) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


# ---- MCP ---------------------------------------------------------------------------------------


def test_a_tools_list_result_and_its_jsonrpc_response_become_tool_files(tmp_path, capsys):
    page1 = write_json(
        tmp_path / "page1.json",
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": [SEARCH, BAD_SCHEMA], "nextCursor": "p2"}},
    )
    page2 = write_json(tmp_path / "page2.json", {"tools": [REFUND, dict(SEARCH)]})
    page2.write_bytes(b"\xef\xbb\xbf" + page2.read_bytes())  # a byte order mark is ignored
    tools = tmp_path / "h" / "tools"
    assert main(["import", "mcp", str(page1), str(page2), "--out", str(tools)]) == 0
    assert sorted(p.name for p in tools.iterdir()) == ["billing_refund.json", "search_orders.json"]
    # the server's object, as it sent it (title and annotations kept)
    assert orjson.loads((tools / "search_orders.json").read_bytes()) == SEARCH
    rejects = [
        json.loads(line)
        for line in (tmp_path / "h" / "tools.rejects.jsonl").read_text().splitlines()
    ]
    assert [(r["source"], r["field"], r["id"]) for r in rejects] == [
        # as the file writes it: a JSON-RPC response's result, the tool's inputSchema
        (str(page1), "result.tools[1].inputSchema", "broken"),
        (str(page2), "tools[1].name", "search_orders"),
    ]
    printed = capsys.readouterr()
    assert "4 tools listed -> 2 files, 2 rejected" in printed.out
    assert "nextCursor" not in printed.err  # the last page given is the listing's last
    # Only the first page: its nextCursor says the listing goes on, which the import says too.
    assert main(["import", "mcp", str(page1), "--out", str(tmp_path / "p1" / "tools")]) == 0
    assert "the listing goes on (nextCursor 'p2')" in capsys.readouterr().err
    (tmp_path / "h" / "harness.yaml").write_text("name: shop\n", encoding="utf-8")
    harness = load_harness(tmp_path / "h")
    assert harness.tool_names == ("billing/refund", "search_orders")
    assert harness.tool("search_orders").required == ["customer_id"]
    # Nothing is overwritten: a second import stops before writing.
    before = (tools / "search_orders.json").read_bytes()
    assert main(["import", "mcp", str(page2), "--out", str(tools)]) == 2
    assert "already there" in capsys.readouterr().err
    assert (tools / "search_orders.json").read_bytes() == before


def test_a_clean_import_writes_no_rejects_file_and_a_tool_without_input_schema_is_noticed(
    tmp_path, capsys
):
    """A warehouse's MCP listing (an audit): an import that rejected nothing left an empty
    rejects file in the harness folder, and a tool without `inputSchema` (which MCP requires)
    was imported as taking no arguments without a word."""
    bare = {"name": "ping_dock", "description": "Pings the dock."}
    listing = write_json(tmp_path / "l.json", {"tools": [SEARCH, bare]})
    tools = tmp_path / "h" / "tools"
    assert main(["import", "mcp", str(listing), "--out", str(tools)]) == 0
    assert sorted(p.name for p in (tmp_path / "h").iterdir()) == ["tools"]
    printed = capsys.readouterr()
    assert "tools[1].inputSchema" in printed.err and "takes no arguments" in printed.err
    assert "rejects" not in printed.out


def test_tools_with_names_too_long_for_a_file_are_imported_apart(tmp_path):
    """A name of any length becomes a file name a file system takes; two long names that share
    their first hundred characters stay two files, and the harness reads both back."""
    long_a, long_b = "a" * 300, "a" * 299 + "b"
    listing = {"tools": [dict(SEARCH, name=long_a), dict(SEARCH, name=long_b)]}
    tools = tmp_path / "h" / "tools"
    assert (
        main(["import", "mcp", str(write_json(tmp_path / "l.json", listing)), "--out", str(tools)])
        == 0
    )
    files = sorted(p.name for p in tools.iterdir())
    assert len(files) == 2 and all(len(f) <= 110 for f in files)
    (tmp_path / "h" / "harness.yaml").write_text("name: shop\n", encoding="utf-8")
    assert set(load_harness(tmp_path / "h").tool_names) == {long_a, long_b}


def test_an_error_response_or_another_shape_is_refused_with_one_message(tmp_path, capsys):
    error = write_json(
        tmp_path / "e.json",
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no method"}},
    )
    assert main(["import", "mcp", str(error), "--out", str(tmp_path / "tools")]) == 2
    assert "JSON-RPC error (-32601: no method)" in capsys.readouterr().err
    other = write_json(tmp_path / "o.json", [SEARCH])
    assert main(["import", "mcp", str(other), "--out", str(tmp_path / "tools")]) == 2
    assert "expected a tools/list result" in capsys.readouterr().err
    none = write_json(tmp_path / "n.json", {"tools": [BAD_SCHEMA]})
    # the job ran and kept nothing: 1, as every import that keeps nothing
    assert main(["import", "mcp", str(none), "--out", str(tmp_path / "tools")]) == 1
    assert "FAILED: no tool could be imported; nothing was written" in capsys.readouterr().err
    # nothing written: no folder, no rejects file that reads as a run that made something
    assert not (tmp_path / "tools").exists() and not (tmp_path / "tools.rejects.jsonl").exists()


def test_a_second_server_imported_into_the_same_folder_keeps_the_first_ones_rejects(tmp_path):
    """Two MCP servers imported into one harness's tools folder, one run each (the way the
    skills import asks tools to be added): the second run wrote its rejects over the first's."""
    tools = tmp_path / "h" / "tools"
    first = write_json(tmp_path / "a.json", {"tools": [SEARCH, BAD_SCHEMA]})
    other = {**SEARCH, "name": "lookup"}
    second = write_json(tmp_path / "b.json", {"tools": [other, {**BAD_SCHEMA, "name": "bad2"}]})
    assert main(["import", "mcp", str(first), "--out", str(tools)]) == 0
    assert main(["import", "mcp", str(second), "--out", str(tools)]) == 0
    rejects = (tmp_path / "h" / "tools.rejects.jsonl").read_text().splitlines()
    assert [json.loads(r)["source"] for r in rejects] == [str(first), str(second)]


# ---- skills ------------------------------------------------------------------------------------

CLAUDE_SKILL = """---
name: pdf-forms
description: Fill in PDF forms with the form's own field names.
license: Proprietary. LICENSE.txt has complete terms
allowed-tools: Read, Grep, Bash(python:*)
---

# PDF forms

Read the form with `Read`, find its fields with `Grep`, then fill them in with a script.
"""
OPEN_SKILL = """---
name: order-lookup
description: How to look up an order before answering.
license: Apache-2.0
metadata:
  kind: policy
allowed-tools: search_orders Read
---

Call `search_orders` with the customer's id first.
"""
MISNAMED = OPEN_SKILL.replace("name: order-lookup", "name: other-name")


def skills_folder(root: Path) -> Path:
    for name, text in (
        ("pdf-forms", CLAUDE_SKILL),
        ("order-lookup", OPEN_SKILL),
        ("misnamed", MISNAMED),
    ):
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(text, encoding="utf-8")
    (root / "pdf-forms" / "scripts").mkdir()
    (root / "pdf-forms" / "scripts" / "fill.py").write_text("print('fill')\n")
    (root / "pdf-forms" / "LICENSE.txt").write_text("All rights reserved.\n")
    (root / "pdf-forms" / "outside").symlink_to(root.parent)
    (root / "latin-1").mkdir()
    (root / "latin-1" / "SKILL.md").write_bytes(
        OPEN_SKILL.replace("order", "caf\xe9").encode("latin-1")
    )
    return root


def test_skill_folders_become_a_harness_skeleton(tmp_path, capsys):
    source = skills_folder(tmp_path / "skills")
    out = tmp_path / "support-desk"
    assert main(["import", "skills", str(source), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "4 skill folders -> 2 skills, 2 rejected" in printed.out
    assert f"{source / 'latin-1' / 'SKILL.md'} id=latin-1: not UTF-8 text" in printed.err
    assert (
        f"{source / 'misnamed' / 'SKILL.md'} id=misnamed name: name 'other-name' differs"
        in printed.err
    )
    assert "symbolic link not copied" in printed.err
    assert "Proprietary. LICENSE.txt has complete terms" in printed.out
    harness = load_harness(out)
    assert harness.name == "support-desk" and harness.skill_ids == ("order-lookup", "pdf-forms")
    # allowed tools no tools/*.json defines yet are the runtime's
    assert harness.runtime_tools == ("Bash", "Grep", "Read", "search_orders")
    assert harness.skill("pdf-forms").allowed_tools == ("Read", "Grep", "Bash(python:*)")
    assert harness.skill("order-lookup").kind == "policy" and harness.skill_kinds == ("policy",)
    assert (out / "skills" / "pdf-forms" / "scripts" / "fill.py").read_text() == "print('fill')\n"
    assert (out / "skills" / "pdf-forms" / "SKILL.md").read_text() == CLAUDE_SKILL  # as it was
    assert not (out / "skills" / "pdf-forms" / "outside").exists()
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~umask  # not mkdtemp's 0700
    # an existing harness is never written into
    assert main(["import", "skills", str(source), "--out", str(out)]) == 2
    assert "non-empty" in capsys.readouterr().err


def test_claude_code_front_matter_keys_are_kept_under_metadata(tmp_path, capsys):
    """Claude Code skills write `model`, `context`, `argument-hint`, `disable-model-invocation`
    in their front matter, keys the Agent Skills format does not define: the import refused every
    such skill. They are kept under `metadata` (which holds any key), with a notice; the body and
    the skill's own metadata are as they were."""
    source = tmp_path / "cc"
    (source / "deploy").mkdir(parents=True)
    (source / "deploy" / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Deploy the app.\nmodel: haiku\ncontext: fork\n"
        "metadata:\n  owner: ops\n---\nRun `make deploy`, then check the logs.\n"
    )
    (source / "review").mkdir()
    (source / "review" / "SKILL.md").write_text(
        "---\nname: review\ndescription: Review a PR.\ndisable-model-invocation: true\n"
        'argument-hint: "[pr]"\n---\nReview $ARGUMENTS\n'
    )
    out = tmp_path / "h"
    assert main(["import", "skills", str(source), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "2 skill folders -> 2 skills, 0 rejected" in printed.out
    assert "['model', 'context'] are no Agent Skills keys: kept under metadata" in printed.err
    harness = load_harness(out)
    deploy, review = harness.skill("deploy"), harness.skill("review")
    assert deploy.metadata == {"owner": "ops", "model": "haiku", "context": "fork"}
    assert deploy.content == "Run `make deploy`, then check the logs.\n"
    assert review.metadata == {"disable-model-invocation": True, "argument-hint": "[pr]"}
    assert review.content == "Review $ARGUMENTS\n"


# ---- licences ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("license", "expected"),
    [
        ("MIT", True),
        ("Apache-2.0", True),
        ("Apache License 2.0", True),
        ("CC-BY-4.0", True),
        ("MIT OR Proprietary", True),
        ("(MIT OR Apache-2.0)", True),
        ("GPL-3.0 AND Proprietary", False),
        ("Proprietary. LICENSE.txt has complete terms", False),
        ("Complete terms in LICENSE.txt", False),
    ],
)
def test_open_licences(license, expected):
    assert is_open(license) == expected


def test_skill_licences_reach_the_card_and_guard_push(tmp_path):
    harness = tmp_path / "harness"
    skills_root = skills_folder(tmp_path / "skills")
    assert (
        main(
            [
                "import",
                "skills",
                str(skills_root / "pdf-forms"),
                str(skills_root / "order-lookup"),
                "--out",
                str(harness),
            ]
        )
        == 0
    )
    (harness / "tools").mkdir()
    write_json(harness / "tools" / "search_orders.json", SEARCH)
    yaml_text = (harness / "harness.yaml").read_text()  # search_orders is a tool now
    (harness / "harness.yaml").write_text(yaml_text.replace("- search_orders\n", ""))
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text(
        json.dumps(
            {
                "id": "e1",
                "harness": "harness",
                "messages": [
                    {"role": "user", "content": "Where is my order?"},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {
                                    "name": "load_skill",
                                    "arguments": '{"name": "pdf-forms"}',
                                },
                            }
                        ],
                    },
                ],
                "gold": {"at": 1, "skills": ["pdf-forms"]},
            }
        )
        + "\n"
    )
    recipe = Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": "lic",
            "seed": 1,
            "variants_per_episode": 1,
            "keep_original": True,
            "pipeline": [{"skill_id_mask": {}}],
        }
    )
    version = generate(recipe, episodes, tmp_path / "out")
    assert version.manifest["skill_licenses"] == {
        "harness/order-lookup": "Apache-2.0",
        "harness/pdf-forms": "Proprietary. LICENSE.txt has complete terms",
    }
    card = card_text(version.path, manifest=version.manifest)
    assert "| `harness/pdf-forms` | Proprietary. LICENSE.txt has complete terms | **no** |" in card
    assert "| `harness/order-lookup` | Apache-2.0 | yes |" in card
    with pytest.raises(HsaError, match="--allow-restricted-licences") as refused:
        push_version(version.path, "org/name", dry_run=True)
    assert "harness/pdf-forms" in str(refused.value)
    assert main(["push", str(version.path), "--repo-id", "org/name", "--dry-run"]) == 2
    lines = push_version(version.path, "org/name", dry_run=True, allow_restricted_licenses=True)
    assert lines[0].startswith("create dataset repo org/name")
    assert (
        main(
            [
                "push",
                str(version.path),
                "--repo-id",
                "org/name",
                "--dry-run",
                "--allow-restricted-licences",
            ]
        )
        == 0
    )


def test_a_skill_file_named_in_another_case_is_a_reject_not_skipped(tmp_path, capsys):
    """A folder whose skill file is `skill.md` (Agent Skills names it SKILL.md) was skipped
    without a word: "1 skill folders -> 1 skills, 0 rejected". It is a reject naming the file."""
    source = tmp_path / "skills"
    (source / "ok").mkdir(parents=True)
    (source / "ok" / "SKILL.md").write_text("---\nname: ok\ndescription: Fine.\n---\nBody\n")
    (source / "lower").mkdir()
    (source / "lower" / "skill.md").write_text("---\nname: lower\ndescription: Lower.\n---\nB\n")
    assert main(["import", "skills", str(source), "--out", str(tmp_path / "h")]) == 0
    printed = capsys.readouterr()
    assert "2 skill folders -> 1 skills, 1 rejected" in printed.out
    assert f"{source / 'lower' / 'skill.md'} id=lower: the skill file must be named SKILL.md" in (
        printed.err
    )


def _skill_md(folder: Path, front: str, body: str = "Do the thing.\n") -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"{front}\n{body}", encoding="utf-8")


def test_skill_files_as_editors_write_them_import_and_a_bad_kind_rejects_its_skill_alone(
    tmp_path, capsys
):
    """A folded description keeps YAML's closing line break (a blank line in every layout's list
    of skills), an opening ``--- `` with a trailing space is still front matter, and a kind that
    is no string is one skill's reject: the import crashed on it, comparing kinds to sort them."""
    source = tmp_path / "skills"
    _skill_md(
        source / "folded",
        "--- \nname: folded\ndescription: >\n  Answers in\n  two lines.\nlicense: MIT\n---",
    )
    _skill_md(source / "numbered", "---\nname: numbered\ndescription: d\nmetadata:\n  kind: 5\n---")
    _skill_md(
        source / "listed", "---\nname: listed\ndescription: d\nmetadata:\n  kind: [a, b]\n---"
    )
    _skill_md(source / "plain", "---\nname: plain\ndescription: d\nmetadata:\n  kind: reply\n---")
    out = tmp_path / "desk"
    assert main(["import", "skills", str(source), "--out", str(out)]) == 0
    harness = load_harness(out)
    assert harness.skill_ids == ("folded", "plain")
    assert harness.skill("folded").description == "Answers in two lines.\n"  # as written
    listed = render_system_prompt(harness)
    assert "Answers in two lines.\n\n" not in listed and "Answers in two lines." in listed
    printed = capsys.readouterr()
    assert "4 skill folders -> 2 skills, 2 rejected" in printed.out
    for folder, kind in (("listed", "list"), ("numbered", "int")):
        assert (
            f"{source / folder / 'SKILL.md'} id={folder} metadata.kind: metadata.kind must be a "
            f"string (the skill's kind, e.g. reply), got {kind}"
        ) in printed.err
