"""The command line as a user meets it: help that teaches, one-line errors, the demo, packaging."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from hsa.cli import main
from tests.conftest import HOOKS_PY, PRICE_TOOL, write_harness

ROOT = Path(__file__).resolve().parents[1]


def run_hsa(
    *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    """The installed console script, as a user runs it (``env``: variables to add)."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("hsa")), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=None if env is None else {**os.environ, **env},
    )


def test_help_lists_every_command():
    result = run_hsa("--help")
    assert result.returncode == 0
    for command in ("demo", "import", "score", "harness", "transforms"):
        assert command in result.stdout


def test_user_error_is_one_line_without_traceback(tmp_path):
    result = run_hsa("harness", "validate", str(tmp_path / "missing"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().startswith("error: ") and "missing" in result.stderr


def test_bad_episode_file_names_line_and_field(tmp_path, capsys):
    harness = write_harness(tmp_path / "h")
    episodes = tmp_path / "e.jsonl"
    episodes.write_text(
        '{"id": "a", "messages": [{"role": "robot", "content": "x"}], "gold": {"no_call": true}}\n'
    )
    preds = tmp_path / "p.jsonl"
    preds.write_text("")
    assert (
        main(
            [
                "score",
                "--episodes",
                str(episodes),
                "--predictions",
                str(preds),
                "--harness",
                str(harness),
            ]
        )
        == 2
    )
    message = capsys.readouterr().err
    assert f"{episodes}:1 id=a messages[0].role: unknown role 'robot'" in message


def test_harness_validate_reports_and_trusts_only_on_request(tmp_path, capsys):
    harness = write_harness(tmp_path / "h")
    assert main(["harness", "validate", str(harness)]) == 0
    printed = capsys.readouterr().out
    assert "1 skills, 2 tools, 1 hooks" in printed and "--trust-hooks" in printed
    assert main(["harness", "validate", str(harness), "--trust-hooks"]) == 0
    assert "hooks.py imported" in capsys.readouterr().out


def test_harness_validate_warns_of_a_misspelt_schema_keyword(tmp_path, capsys):
    # "tpye" is legal JSON Schema and checks nothing: the harness is valid, its check is gone
    price = json.loads(json.dumps(PRICE_TOOL))
    price["function"]["parameters"]["properties"]["currency"] = {"tpye": "string"}
    harness = write_harness(tmp_path / "h", tools={"a_price.json": price})
    assert main(["harness", "validate", str(harness)]) == 0
    printed = capsys.readouterr().out
    assert "ok:" in printed
    assert (
        "tool 'get_price' parameters/properties/currency: 'tpye' is no JSON Schema keyword, so it "
        "checks nothing (did you mean 'type'?)"
    ) in printed
    assert main(["harness", "validate", str(write_harness(tmp_path / "fine"))]) == 0
    assert "warning" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "integer", "maximum": 60, "default": 99}, "99 is greater than the maximum of 60"),
        ({"type": "string", "enum": ["EUR", "USD"], "default": "N/A"}, "'N/A' is not one of"),
    ],
)
def test_harness_validate_warns_of_a_default_that_breaks_its_own_schema(
    tmp_path, capsys, schema, problem
):
    """`frist_tage: {maximum: 60, default: 99}` validated as ok, and gold expecting 99 loaded:
    a value equal to the default is "left at its default" (BFCL's rule), whatever it is. A
    default of another type (BFCL writes "false" for booleans) is no such mistake."""
    price = json.loads(json.dumps(PRICE_TOOL))
    price["function"]["parameters"]["properties"]["currency"] = schema
    harness = write_harness(tmp_path / "h", tools={"a_price.json": price})
    assert main(["harness", "validate", str(harness)]) == 0
    printed = capsys.readouterr().out
    assert "ok:" in printed
    assert (
        "warning: " in printed
        and "tool 'get_price' parameters/properties/currency: its default does not fit its own "
        "schema ("
        in printed
        and problem in printed
    ), printed
    price["function"]["parameters"]["properties"]["currency"] = {"type": "boolean", "default": "no"}
    harness = write_harness(tmp_path / "bfcl", tools={"a_price.json": price})
    assert main(["harness", "validate", str(harness)]) == 0
    assert "warning" not in capsys.readouterr().out


def test_harness_validate_never_says_ok_of_hooks_that_fail_to_import(tmp_path, capsys):
    hooks = (
        "raise RuntimeError('boom')\n\ndef short_reply(payload, config):\n    return {'ok': True}\n"
    )
    harness = write_harness(tmp_path / "h", hooks=hooks)
    assert main(["harness", "validate", str(harness)]) == 0  # parsed, not run: valid so far
    capsys.readouterr()
    assert main(["harness", "validate", str(harness), "--trust-hooks"]) == 2
    printed = capsys.readouterr()
    assert "ok:" not in printed.out and "boom" in printed.err


def test_harness_validate_warns_of_names_that_hook_code_hard_codes(capsys):
    """A hook that compares against a tool's name written in its code stops firing in a variant
    that renames the tool (renames never reach code): validate says where, and still passes."""
    coding = Path(__file__).parent / "harnesses" / "coding" / "harness"
    assert main(["harness", "validate", str(coding)]) == 0
    warnings = [line for line in capsys.readouterr().out.splitlines() if "warning" in line]
    assert len(warnings) == 1
    assert "hooks.py:8: hooks.py names tool 'applyPatch' as a string" in warnings[0]
    example = Path(__file__).parent.parent / "hsa" / "example" / "harness"  # reads its config
    assert main(["harness", "validate", str(example)]) == 0
    assert "warning" not in capsys.readouterr().out


def test_a_name_of_two_kinds_in_hook_code_is_named_with_both(tmp_path, capsys):
    """A hook named like a tool parameter (reply_length): code reading the parameter by that
    name is not necessarily about the hook, and the warning says it may be either."""
    from tests.conftest import PRICE_TOOL

    tool = json.loads(json.dumps(PRICE_TOOL))
    tool["function"]["parameters"]["properties"]["reply_length"] = {"type": "integer"}
    hooks = HOOKS_PY + '\n\ndef limit(payload, config):\n    return payload.get("reply_length")\n'
    harness = write_harness(tmp_path / "h", tools={"a_price.json": tool}, hooks=hooks)
    assert main(["harness", "validate", str(harness)]) == 0
    warnings = [line for line in capsys.readouterr().out.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "names hook or parameter 'reply_length'" in warnings[0]


def test_transforms_json_lists_each_transform_with_its_scope(capsys):
    assert main(["transforms", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["tool_name_mask"]["scope"] == "harness"
    assert rows["hook_retry_policy"]["scope"] == "episode"
    # piped (no terminal): one block per transform, whole names, not a table cut to 80 columns
    assert main(["transforms"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [line for line in lines if not line.startswith("  ")]
    assert [h.split()[0] for h in heads] == list(rows)
    assert (
        f"tool_name_mask {rows['tool_name_mask']['version']} (tool_schema, scope harness)" in heads
    )


def _shipped(folder: Path, prefix: str) -> set[str]:
    """The wheel paths of the files under ``folder`` (bytecode aside, which hatchling leaves out)."""
    return {
        prefix + path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def test_installed_wheel_runs_the_demo_outside_the_checkout(tmp_path):
    """The wheel installs one top-level package, hsa: transforms/ and trainers/ (their YAML tables,
    recipes and prompts included) ship as hsa.transforms and hsa.trainers, the templates under
    hsa/_assets. Installed into a fresh venv that cannot see the checkout, `hsa demo` run from
    another folder gives a verified version whose card is the committed example card, so a wheel
    and a checkout make the same version.

    To stay affordable the fresh venv reuses this venv's installed dependencies through a .pth line
    (a plain path line: the editable hook for the checkout in this venv is not run) and gets only
    the wheel, with --no-deps."""
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist.glob("hsa-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    dist_info = "-".join(wheel.name.split("-")[:2]) + ".dist-info"
    assert {name.split("/")[0] for name in names} == {"hsa", dist_info}
    expected = (
        _shipped(ROOT / "hsa", "hsa/")
        | _shipped(ROOT / "transforms", "hsa/transforms/")
        | _shipped(ROOT / "trainers", "hsa/trainers/")
        | _shipped(ROOT / "templates", "hsa/_assets/templates/")
    )
    assert expected - names == set()
    assert {
        "hsa/transforms/recipes/hat-train.yaml",
        "hsa/trainers/recipes/sft-tiny-cpu.yaml",
        "hsa/trainers/prompts/general-mini.jsonl",
        "hsa/_assets/templates/layouts/markdown.j2",
        "hsa/example/episodes.jsonl",
        "hsa/py.typed",
    } <= names

    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
    )
    ours = sysconfig.get_paths()
    (site / "_test_dependencies.pth").write_text(
        "".join(f"{path}\n" for path in sorted({ours["purelib"], ours["platlib"]}))
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }
    probe = (
        "import hsa, hsa.transforms, hsa.trainers.recipe as r, hsa.files.assets as a, "
        "importlib.util as u; print(hsa.__file__, hsa.transforms.__file__, r.RECIPES_DIR, "
        "a.templates_dir(), u.find_spec('transforms'), u.find_spec('trainers'))"
    )
    found = subprocess.run(
        [str(python), "-c", probe],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert found.returncode == 0, found.stderr
    *files, top_transforms, top_trainers = found.stdout.split()
    assert all(Path(file).is_relative_to(site / "hsa") for file in files), files
    assert top_transforms == top_trainers == "None"

    result = subprocess.run(
        [str(venv / "bin" / "hsa"), "demo", "--out", str(elsewhere / "out")],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    printed = result.stdout
    version_dir = Path(printed.strip().splitlines()[-1])
    assert version_dir.parent == elsewhere / "out" / "hat-train"
    assert "live-commerce-host (12 skills, 10 tools, 4 hooks), 240 episodes" in printed
    assert "1200 rows from 240 episodes, 0 rejected" in printed
    assert "1200 rows rebuilt from their lineage and re-verified" in printed
    assert sorted(p.name for p in version_dir.iterdir()) == [
        "README.md",
        "data",
        "harness_variants.parquet",  # hat-train has a pool of harness variants
        "manifest.json",
        "rejects.parquet",
    ]
    # The committed card of the example dataset is this version's card.
    shipped = ROOT / "data_cards" / "live-commerce-hat-train.md"
    assert shipped.read_text(encoding="utf-8") == (version_dir / "README.md").read_text(
        encoding="utf-8"
    ), (
        f"the demo made {version_dir.name}, whose card is not the committed one: "
        f"if a transform or template changed on purpose, copy its README.md "
        f"to {shipped.relative_to(ROOT)}"
    )


AUGMENT = ["augment", "--recipe", "tools-basic", "--episodes", "{in}"]


@pytest.mark.parametrize(
    "command",
    [
        AUGMENT + ["--out", "{v}", "--rejects", "{in}"],
        AUGMENT + ["--out", "{v}", "--rejects", "{v}"],
        AUGMENT + ["--out", "{alias}"],
        ["import", "openai", "{in}", "--out", "{in}"],
        ["import", "openai", "{in}", "--out", "{v}", "--rejects", "{alias}"],
    ],
)
def test_an_output_never_replaces_an_input_or_another_output(tmp_path, capsys, command):
    """Writes are atomic renames: an output path naming an input (or a hard link to it) would
    replace it once written. Refused before anything is read, and the input is untouched."""
    from hsa.example import EPISODES_PATH

    source = tmp_path / "in.jsonl"
    source.write_bytes(EPISODES_PATH.read_bytes()[:4000].rsplit(b"\n", 1)[0] + b"\n")
    os.link(source, tmp_path / "alias.jsonl")
    before = source.read_bytes()
    paths = {"in": source, "v": tmp_path / "v.jsonl", "alias": tmp_path / "alias.jsonl"}
    args = [part.format(**paths) if part.startswith("{") else part for part in command]
    assert main(args) == 2
    assert "are the same file" in capsys.readouterr().err
    assert source.read_bytes() == before
    assert not (tmp_path / "v.jsonl").exists()


@pytest.mark.parametrize(
    "command, option",
    [
        (["eval", "--max-retries", "-1"], "--max-retries"),
        (["eval", "--timeout", "-5"], "--timeout"),
        (["eval", "--top-p", "7"], "--top-p"),
        (["rollout", "--temperature", "-3"], "--temperature"),
        (["rollout", "--max-tokens", "-5"], "--max-tokens"),
        (["rollout", "--timeout", "-1"], "--timeout"),
    ],
)
def test_sampling_and_request_options_out_of_range_are_usage_errors(
    tmp_path, capsys, command, option
):
    """A negative retry count or timeout, or a top_p above 1, is refused with the option's name
    before any model is asked (it was an internal error, or sent to the endpoint as it was)."""
    rest = ["--episodes", str(tmp_path / "e.jsonl"), "--base-url", "http://127.0.0.1:9/v1"]
    rest += ["--model", "m", "--out", str(tmp_path / "o")]
    assert main(command + rest) == 2
    assert option in capsys.readouterr().err


def test_augment_then_replay_a_variant(tmp_path, capsys):
    from hsa.example import EPISODES_PATH

    variants = tmp_path / "v.jsonl"
    assert (
        main(
            [
                "augment",
                "--recipe",
                "tools-basic",
                "--episodes",
                str(EPISODES_PATH),
                "--out",
                str(variants),
                "--trust-hooks",
            ]
        )
        == 0
    )
    assert "960 variants written, 0 rejected" in capsys.readouterr().out
    first = next(
        json.loads(line)
        for line in variants.read_text().splitlines()
        if json.loads(line)["variant"] == 2
    )
    row = f"{first['source_id']}#2"
    assert (
        main(
            [
                "replay",
                str(variants),
                "--episodes",
                str(EPISODES_PATH),
                "--id",
                row,
                "--trust-hooks",
            ]
        )
        == 0
    )
    assert "identical to the stored row" in capsys.readouterr().out
    # Tamper with the stored variant: replay must notice.
    lines = [json.loads(line) for line in variants.read_text().splitlines()]
    for line in lines:
        if line["source_id"] == first["source_id"] and line["variant"] == 2:
            line["episode"]["messages"][0]["content"] += "!"
    variants.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert (
        main(
            [
                "replay",
                str(variants),
                "--episodes",
                str(EPISODES_PATH),
                "--id",
                row,
                "--trust-hooks",
            ]
        )
        == 1
    )
    assert "DIFFERS" in capsys.readouterr().err


@pytest.mark.parametrize("terminal", [False, True])
def test_progress_counts_a_files_lines_only_when_a_bar_is_drawn(terminal, monkeypatch):
    from hsa.cli import progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    asked: list[int] = []

    def total() -> int:
        asked.append(1)
        return 3

    assert list(progress.track(iter("abc"), "lines", total=total)) == ["a", "b", "c"]
    with progress.progress_bar("generate", total=total) as advance:
        advance(3, 15)
    assert len(asked) == (2 if terminal else 0)


def _commands(command, path=()):
    """Every command of the click tree, with its path of names."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_help_keeps_every_placeholder():
    """Help is rendered as Markdown, where a bare <row id> is an HTML tag that vanishes."""
    import re

    import typer

    from hsa.cli import app

    placeholder = re.compile(r"<[A-Za-z][^<>]*>")
    raw = typer.main.get_command(app)  # the texts as written in the source
    checked = 0
    for path, command in _commands(raw):
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        wanted = {m for text in texts for m in placeholder.findall(text)}
        if not wanted:
            continue
        shown = subprocess.run(
            [str(Path(sys.executable).with_name("hsa")), *path, "--help"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "400"},
        ).stdout
        for text in wanted:
            assert text in shown, f"hsa {' '.join(path)} --help lost {text}"
            checked += 1
    assert checked >= 5


def test_max_reject_share_help_states_the_rule_a_run_applies():
    """The help named only the share of the output; a run also fails when the lines rejected on
    load (a line that is no JSON among them) are more than the share of its input lines
    (hsa.dataset.outcome.failure)."""
    import typer

    from hsa.cli import app

    raw = typer.main.get_command(app)
    for name in ("augment", "generate"):
        (option,) = [p for p in raw.commands[name].params if p.name == "max_reject_share"]
        assert "rejects / (rows + rejects)" in option.help
        assert "lines rejected on load (not JSON," in option.help
        assert "of the input lines" in option.help


def test_a_layout_the_sandbox_refuses_is_one_error_line(tmp_path):
    harness = write_harness(
        tmp_path / "h",
        harness_yaml=("name: h\nprompt:\n  layout: mine\n  sections: [tools]\n"),
        hooks=None,
        skills={},
    )
    (harness / "layouts").mkdir()
    (harness / "layouts" / "mine.j2").write_text("{{ range(10 ** 6) | list | length }}")
    result = run_hsa("harness", "validate", str(harness))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "layout 'mine' (layouts/mine.j2) does not render: OverflowError" in result.stderr


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("Intro\n{% for %}\n", ":2 prompt.layout: layout 'mine' does not parse"),
        ("Intro\n\n{{ nope.x }}\n", ":3 prompt.layout: layout 'mine' uses an undefined value"),
    ],
)
def test_a_layout_error_names_the_layouts_file_and_line(tmp_path, source, said):
    """ "error: line 6 prompt.layout" read as line 6 of harness.yaml: the file is the layout's."""
    harness = write_harness(
        tmp_path / "h",
        harness_yaml="name: h\nprompt:\n  layout: mine\n  sections: [tools]\n",
        hooks=None,
        skills={},
    )
    (harness / "layouts").mkdir()
    (harness / "layouts" / "mine.j2").write_text(source)
    result = run_hsa("harness", "validate", str(harness))
    assert result.returncode == 2
    assert f"{harness / 'layouts' / 'mine.j2'}{said}" in result.stderr, result.stderr


def test_a_layout_that_shows_no_section_is_warned_of(tmp_path):
    """A layout of the harness's own that writes only its headings validated "ok", and its rows
    had no system prompt: the model was trained to call skills it was never shown."""
    harness = write_harness(
        tmp_path / "h",
        harness_yaml=(
            "name: h\nprompt:\n  layout: mine\n  sections: [persona, tools]\n"
            "  text: {persona: You sell shoes.}\n"
        ),
        hooks=None,
        skills={},
    )
    (harness / "layouts").mkdir()
    (harness / "layouts" / "mine.j2").write_text(
        "{% for s in sections %}# {{ s.heading }}\n{% endfor %}"
    )
    result = run_hsa("harness", "validate", str(harness))
    assert result.returncode == 0, result.stderr
    file = harness / "layouts" / "mine.j2"
    assert (
        f"warning: {file}: the layout does not show the text of section 'persona'" in result.stdout
    )
    assert f"warning: {file}: the layout does not list tools get_price" in result.stdout


def test_an_unexpected_failure_is_one_line_too(tmp_path, monkeypatch, capsys):
    """A bug still ends with one line (and how to get the traceback), never a dump."""
    import hsa.model.harness

    monkeypatch.setattr(hsa.model.harness, "load_harness", lambda *a, **k: 1 / 0)
    assert main(["harness", "validate", str(tmp_path)]) == 1
    printed = capsys.readouterr().err
    assert "unexpected ZeroDivisionError" in printed and "HSA_DEBUG=1" in printed
    monkeypatch.setenv("HSA_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["harness", "validate", str(tmp_path)])


def _tour() -> list[list[str]]:
    """The README tour's commands, as argument lists."""
    import shlex

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## A short tour of the CLI", 1)[1].split("```bash\n", 1)[1]
    block = block.split("```", 1)[0]
    return [shlex.split(line.split("  #", 1)[0]) for line in block.splitlines() if line.strip()]


def test_the_readme_tour_reads_only_what_exists_or_an_earlier_line_made(bfcl_data):
    made, checked = {"out"}, 0
    for args in _tour():
        assert args[0] == "hsa", args
        for i, arg in enumerate(args):
            if arg.startswith("-") or ("/" not in arg and not arg.endswith(".jsonl")):
                continue
            if args[i - 1] in ("--out", "--repo-id") or "<" in arg:
                made.add(arg)
                continue
            root = arg.split("/", 1)[0]
            if arg.startswith("../shared/data/bfcl/"):
                assert (bfcl_data / arg.rsplit("/", 1)[1]).is_file(), arg
            else:
                assert (ROOT / arg).exists() or arg in made or root in made, (
                    f"the tour reads {arg}, which is neither shipped nor made by an earlier line"
                )
            checked += 1
    assert checked >= 6


def test_the_tour_inputs_are_what_their_generator_makes():
    from hsa.example import CHATS_PATH
    from hsa.example.make_tour_inputs import main as make_tour_inputs
    from hsa.importers.openai_chat import import_openai

    assert make_tour_inputs(["--check"]) == 0
    # The README says one line of the chats is rejected on purpose: that one, and no other.
    rejected = import_openai(CHATS_PATH).rejects
    assert [r.id for r in rejected] == ["lc-single-call-001-without-its-tool"], rejected


def test_the_readme_tour_lines_on_shipped_inputs_run_as_written(tmp_path):
    """Run from a folder that holds the checkout's hsa/ (as the repository root does)."""
    (tmp_path / "hsa").symlink_to(ROOT / "hsa", target_is_directory=True)
    ran = []
    for args in _tour():
        reads = [a for a in args[2:] if a.startswith("hsa/")]
        if not reads or args[1] in ("generate", "demo"):
            continue
        result = run_hsa(*[a for a in args[1:] if a != "[--json]"], cwd=tmp_path)
        assert result.returncode == 0, (args, result.stderr)
        ran.append(args[1])
    assert ran == ["harness", "import", "score"]
