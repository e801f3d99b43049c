"""`hsa experiment miniature`, shortened: the whole pipeline (task -> hsa generate -> tokenizer
and model -> hsa train sft twice -> hsa eval at checkpoints and at the end -> compare -> results)
runs through the CLI for a few dozen steps on one seed, and the report has its shape. The
accuracy target needs the full run (minutes, a command, not a test): here the models are barely
trained, so only what the pipeline promises whatever the accuracy is checked.

The task generator is checked without torch: valid hsa episodes, deterministic from the seed,
tool names that say nothing about what a tool does.
"""

from __future__ import annotations

import random
import re

import orjson
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsa.errors import HsaError
from hsa.model.episode import Episode, read_episodes
from hsa.model.harness import load_harness
from hsa.text.names import name_words
from hsa.trainers.experiments.miniature.task import KINDS, make_episode, make_harness, write_task

# The pipeline trains with torch: in the one process every torch test shares (make test runs
# pytest -n 2 --dist loadgroup).
pytestmark = pytest.mark.xdist_group("torch")

STEPS, CHECKPOINTS, TRAIN_EPISODES, EPISODES, TURNS, VARIANTS, TOOLS = 20, 2, 8, 3, 3, 1, 4


def _rows(version_dir):
    return [
        row
        for shard in sorted((version_dir / "data").glob("*.parquet"))
        for row in pq.read_table(shard).to_pylist()
    ]


def _version(recipe_dir):
    """The one version folder a recipe's folder holds (beside it: the note of its inputs)."""
    (version,) = (p for p in recipe_dir.iterdir() if p.is_dir())
    return version


def _tools(row) -> list[dict]:
    return [t["function"] for t in orjson.loads(row["tools"])]


@pytest.fixture(scope="session")
def miniature_run(tmp_path_factory):
    pytest.importorskip("trl")
    import torch

    from hsa.cli import main

    out = tmp_path_factory.mktemp("miniature") / "run"
    threads = torch.get_num_threads()
    code = main(
        [
            "experiment",
            "miniature",
            "--out",
            str(out),
            "--steps",
            str(STEPS),
            "--checkpoints",
            str(CHECKPOINTS),
            "--warmup-steps",
            "5",
            "--decay-share",
            "0.25",
            "--batch-size",
            "2",
            "--tools",
            str(TOOLS),
            "--train-episodes",
            str(TRAIN_EPISODES),
            "--eval-episodes",
            str(EPISODES),
            "--curve-episodes",
            "2",
            "--turns",
            str(TURNS),
            "--heldout-variants",
            str(VARIANTS),
            "--vocab-size",
            "600",
            # Two threads: the two models train side by side in child processes, as on any
            # CPU by default.
            "--threads",
            "2",
            "--max-new-tokens",
            "20",
        ]
    )
    assert code == 0
    assert torch.get_num_threads() == threads  # the run gives the process its threads back
    return out


def test_results_have_their_shape(miniature_run):
    results = orjson.loads((miniature_run / "results.json").read_bytes())
    (seed,) = results["seeds"]
    assert seed["seed"] == 0
    assert seed["rows"]["fixed"] == seed["rows"]["hsa"] == TRAIN_EPISODES * 8
    for condition in ("fixed", "hsa"):
        accuracy = seed["accuracy"][condition]
        assert accuracy["turns_original"] == EPISODES * TURNS
        assert accuracy["turns_held_out"] == EPISODES * TURNS * VARIANTS
        assert 0 <= accuracy["original"] <= 1 and 0 <= accuracy["held_out"] <= 1
        assert seed["training"][condition]["steps"] == STEPS
        assert [p["step"] for p in seed["curve"][condition]] == [STEPS // 2, STEPS]
    gain = seed["accuracy"]["hsa"]["held_out"] - seed["accuracy"]["fixed"]["held_out"]
    assert seed["verdict"]["held_out_gain"] == pytest.approx(gain)
    assert results["target_met"] == {"0": seed["verdict"]["met"]}

    table = (miniature_run / "results.md").read_text(encoding="utf-8")
    assert "| seed | fixed: original | fixed: held-out | HSA: original | HSA: held-out |" in table
    assert re.search(r"^\| 0 \| [\d.]+% \| [\d.]+% \| [\d.]+% \| [\d.]+% \|", table, re.M)
    assert (miniature_run / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # Loss on the answers and on the second copy of each tool name (the template's generation
    # marks), never on the rest of the prompt or on a name's first copy.
    for condition in ("fixed", "hsa"):
        mask = miniature_run / "seed-0" / condition / "model" / "loss_mask.txt"
        shown = mask.read_text(encoding="utf-8").split("\n\n", 1)[1]
        assert shown.startswith("<|im_start|>system") and "⟦<tool_call>" in shown
        assert len(re.findall(r'=> "[^"⟦]+" "⟦', shown)) == TOOLS

    # Warm-up, a steady rate, then a fall over the last quarter of the steps (--decay-share).
    state = orjson.loads(
        (
            miniature_run
            / "seed-0"
            / "hsa"
            / "model"
            / f"checkpoint-{STEPS}"
            / "trainer_state.json"
        ).read_bytes()
    )
    rates = {e["step"]: e["learning_rate"] for e in state["log_history"] if "learning_rate" in e}
    assert rates[STEPS // 2] == pytest.approx(max(rates.values()))
    assert rates[STEPS] < 0.5 * max(rates.values())

    compare = (miniature_run / "seed-0" / "compare.md").read_text(encoding="utf-8")
    assert "accuracy fixed" in compare and "accuracy hsa" in compare
    assert re.search(rf"^\| original \| {EPISODES * TURNS} \|", compare, re.M)
    assert re.search(rf"^\| all \| {EPISODES * TURNS * VARIANTS} \|", compare, re.M)


def test_versions_differ_only_in_the_harness(miniature_run):
    """Both versions hold the same conversations; the fixed one always under the original
    harness, the HSA one under variants with other tool names (the original row kept)."""
    versions = miniature_run / "seed-0" / "versions"
    fixed = _rows(_version(versions / "miniature-fixed"))
    hsa = _rows(_version(versions / "miniature-hsa"))
    assert sorted(r["id"] for r in fixed) == sorted(r["id"] for r in hsa)
    harness = load_harness(miniature_run / "seed-0" / "task" / "harness")
    original = [t.name for t in harness.tools]
    assert all([t["name"] for t in _tools(r)] == original for r in fixed)
    renamed = [r for r in hsa if r["hsa_variant"] > 0]
    assert renamed and all(not {t["name"] for t in _tools(r)} & set(original) for r in renamed)
    assert all([t["name"] for t in _tools(r)] == original for r in hsa if r["hsa_variant"] == 0)


def test_held_out_names_and_wordings_were_never_trained_on(miniature_run):
    seed_dir = miniature_run / "seed-0"
    trained_names, trained_descriptions = set(), set()
    for recipe_dir in (seed_dir / "versions").iterdir():
        for row in _rows(_version(recipe_dir)):
            for tool in _tools(row):
                trained_names.add(tool["name"])
                trained_descriptions.add(tool["description"])
    heldout = _rows(_version(seed_dir / "eval-datasets" / "miniature-heldout"))
    assert len(heldout) == EPISODES * VARIANTS
    for row in heldout:
        tools = _tools(row)
        assert not {t["name"] for t in tools} & trained_names
        assert not {t["description"] for t in tools} & trained_descriptions


def test_each_tool_line_holds_its_name_twice_after_its_description(miniature_run):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(miniature_run / "seed-0" / "base-model")
    hsa_dir = _version(miniature_run / "seed-0" / "versions" / "miniature-hsa")
    row = next(r for r in _rows(hsa_dir) if r["hsa_variant"] > 0)
    tools = orjson.loads(row["tools"])
    messages = orjson.loads(row["messages"])
    text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
    for tool in (t["function"] for t in tools):
        line = next(x for x in text.splitlines() if f'"{tool["name"]}"(' in x)
        # The name to copy stands after the description it belongs to, twice.
        assert line.startswith(tool["description"] + " => ")
        assert line.index(f'=> "{tool["name"]}" "{tool["name"]}"(') > len(tool["description"])
    # Assistant-only loss trains each name's second copy and the answers, never the first copy
    # (a random string no model can predict).
    rendered = tokenizer.apply_chat_template(
        messages, tools=tools, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    assert offsets["input_ids"] == rendered["input_ids"]

    def trained(start: int, end: int) -> set[bool]:
        return {
            bool(m)
            for (a, b), m in zip(offsets["offset_mapping"], rendered["assistant_masks"])
            if start <= a and b <= end and b > a
        }

    for tool in (t["function"] for t in tools):
        first = text.index(f'=> "{tool["name"]}" "') + len('=> "')
        second = first + len(tool["name"]) + len('" "')
        assert trained(first, first + len(tool["name"])) == {False}
        assert trained(second, second + len(tool["name"])) == {True}
    calls = [m.start() for m in re.finditer(re.escape("<tool_call>"), text)]
    assert len(calls) == TURNS and all(trained(c, c + len("<tool_call>")) == {True} for c in calls)
    # Each name splits into the same tokens in both places of its tool line and in a call to
    # it, so copying it is copying tokens.
    for tool in (t["function"] for t in tools):
        messages = [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"type": "function", "function": {"name": tool["name"], "arguments": {}}}
                ],
            },
        ]
        ids = tokenizer.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=True)[
            "input_ids"
        ]
        pieces = tokenizer(tool["name"], add_special_tokens=False)["input_ids"]
        found = [i for i in range(len(ids)) if ids[i : i + len(pieces)] == pieces]
        assert len(found) == 3, tool["name"]


def test_the_tokenizer_keeps_words_whole_and_what_is_copied_in_pieces(miniature_run):
    """The words a tool is found by (its description, the requests) are one token each, so
    a small model can match them; names and argument values, which it copies, are several
    (its tokenizer never saw them)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(miniature_run / "seed-0" / "base-model")
    seed_dir = miniature_run / "seed-0"

    def tokens(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    harness = load_harness(seed_dir / "task" / "harness")
    words = {w for t in harness.tools for w in re.findall(r"[A-Za-z]+", t.description)}
    assert words and all(tokens(w) == 1 for w in words), {w: tokens(w) for w in words}
    episodes = (seed_dir / "task" / "train-episodes.jsonl").read_text(encoding="utf-8")
    values = {
        value
        for line in episodes.splitlines()
        for turn in orjson.loads(line)["gold"]["turns"]
        for call in turn["calls"]
        for options in call["arguments"].values()
        for value in options
        if isinstance(value, str) and len(value) >= 4
    }
    names = {t.name for t in harness.tools if len(t.name) >= 4}
    assert values and all(tokens(v) > 1 for v in values | names)


def test_copied_strings_are_taken_out_of_the_tokenizer_text():
    from hsa.trainers.experiments.miniature.model import without_copied_strings

    tools = [
        {
            "type": "function",
            "function": {"name": "fetch_data", "description": "Gets the weather for a city."},
        }
    ]
    messages = [
        {"role": "system", "content": "Call the tool whose description fits."},
        {"role": "user", "content": "Weather in Paris? Parisian rain in Paris."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "fetch_data", "arguments": '{"city": "Paris", "n": 2}'},
                }
            ],
        },
    ]
    before = orjson.dumps([messages, tools])
    stripped, unnamed = without_copied_strings(messages, tools)
    assert orjson.dumps([messages, tools]) == before  # the row itself is left as it was
    assert unnamed == [
        {
            "type": "function",
            "function": {"name": "", "description": "Gets the weather for a city."},
        }
    ]
    assert stripped[0] == messages[0]
    # Whole words only: "Parisian" is another word and stays.
    assert stripped[1]["content"] == "Weather in ? Parisian rain in ."
    (call,) = stripped[2]["tool_calls"]
    assert call["function"] == {"name": "", "arguments": {"city": "", "n": 2}}
    assert call["id"] == "call_1"


def test_a_run_resumes_only_with_its_own_settings(miniature_run):
    from hsa.trainers.experiments.miniature.run import Settings, run_miniature

    with pytest.raises(HsaError, match="steps"):
        run_miniature(miniature_run, Settings(steps=STEPS + 1))


# ---- the task, without torch ----------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=2, max_value=len(KINDS)))
def test_tool_names_say_nothing_about_the_tool(seed, tools):
    harness = make_harness(seed, tools)
    assert len(harness.tools) == tools
    assert {t.description for t in harness.tools} <= {k.description for k in KINDS}
    assert len({t.description for t in harness.tools}) == tools
    for tool in harness.tools:
        words = {w.lower() for w in name_words(tool.name)}
        described = set(re.findall(r"[a-z]+", tool.description.lower()))
        assert not words & described, tool


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=1, max_value=6))
def test_every_request_wants_the_tool_of_its_kind(seed, turns):
    harness = make_harness(seed)
    data = make_episode(harness, "e", random.Random(seed), turns)
    assert data.pop("harness") == "harness"  # the folder write_task saves beside the episodes
    episode = Episode.from_dict(data, harness=harness)
    assert len(episode.gold.turns) == turns
    for turn in episode.gold.turns:
        request = episode.messages[turn.at - 1]["content"]
        (call,) = turn.calls
        kind = next(k for k in KINDS if k.description == harness.tool(call.name).description)
        # The request is one of the kind's phrasings, with the gold's values filled in.
        values = {p: v[0] for p, v in call.arguments.items()}
        assert request in {r.format(**values) for r in kind.requests}


def test_the_task_is_made_from_its_seed(tmp_path):
    def task(folder, seed):
        return write_task(
            tmp_path / folder, seed=seed, tools=4, train_episodes=5, eval_episodes=2, turns=3
        )

    first, again, other = task("a", 3), task("b", 3), task("c", 4)
    assert first.train.read_bytes() == again.train.read_bytes()
    assert first.eval.read_bytes() == again.eval.read_bytes()
    assert first.train.read_bytes() != other.train.read_bytes()
    loaded = list(read_episodes(first.train))
    assert len(loaded) == 5 and all(isinstance(e, Episode) for e in loaded)
    train_ids = {e.id for e in loaded}
    assert not train_ids & {e.id for e in read_episodes(first.eval)}
