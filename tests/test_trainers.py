"""The trainers, end to end on versions made by `hsa generate`, with a tiny Qwen2 model built
locally (no downloads). Everything that imports torch lives in this one module, with module-scoped
fixtures, so the suite pays for torch, the tokenizer and the versions once.

Versions: a handful of the embedded example's episodes under a recipe that renames skills, tools
and hooks (long rows with hook feedback: loss mask, lengths, hooks reward); a small shop harness
written here (short rows: the sft -> opd -> rl chain); BFCL questions (rewards on real data,
under a harness whose tool names are masked)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

pytest.importorskip("trl")

from hsa.augment.recipe import load_recipe as load_generation_recipe
from hsa.augment.recipe import recipes_dir
from hsa.cli import main
from hsa.dataset.generate import generate
from hsa.errors import HsaError
from hsa.example import EPISODES_PATH, HARNESS_DIR
from hsa.importers.bfcl import import_bfcl
from hsa.trainers.chat import (
    check_chat_template,
    check_vocabulary,
    ensure_response_parser,
    render_prompt,
)
from hsa.trainers.lengths import choose_max_length, measure, render_loss_mask, trained_spans
from hsa.trainers.prompts import SHIPPED_PROMPTS, read_prompts
from hsa.trainers.recipe import load_recipe
from hsa.trainers.rewards import RewardSet
from hsa.trainers.rl import check_generation_batch
from hsa.trainers.tiny import build_model, save_tiny_model
from hsa.trainers.version import JudgedTurns, check_provenance, load_rows
from tests.conftest import write_harness

# Everything that imports torch runs in one process (make test runs pytest -n 2 --dist loadgroup).
pytestmark = pytest.mark.xdist_group("torch")

RENAMING_RECIPE = """recipe_version: 1
name: rename-all
seed: 7
variants_per_episode: 2
keep_original: true
pipeline:
  - skill_id_synonym: {split: train}
  - tool_name_paraphrase: {split: train}
  - parameter_name_paraphrase: {split: train, fraction: 1.0}
  - hook_implementation_swap: {split: train}
"""
MASKING_RECIPE = """recipe_version: 1
name: mask-tools
seed: 3
variants_per_episode: 1
keep_original: true
pipeline:
  - tool_name_mask: {fraction: 1.0}
"""


def _version(tmp: Path, recipe_text: str, episodes: Path):
    recipe = tmp / "recipe.yaml"
    recipe.write_text(recipe_text, encoding="utf-8")
    return generate(load_generation_recipe(recipe), episodes, tmp / "out", trust_hooks=True).path


@pytest.fixture(scope="module")
def example_version(tmp_path_factory) -> Path:
    """Example episodes with a call, a blocked tool call and a rejected reply (hook feedback in
    the conversation), every skill, tool, parameter and hook renamed in the variants."""
    tmp = tmp_path_factory.mktemp("example")
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines()
    wanted = {"lc-single-call-001", "lc-hook-retry-001", "lc-hook-retry-004"}
    picked = [line for line in lines if json.loads(line)["id"] in wanted]
    assert len(picked) == len(wanted)
    shutil.copytree(HARNESS_DIR, tmp / "harness")  # episodes name it relative to their file
    (tmp / "episodes.jsonl").write_text("\n".join(picked) + "\n", encoding="utf-8")
    return _version(tmp, RENAMING_RECIPE, tmp / "episodes.jsonl")


def _shop_episode(n: int, price: int, *, retry: bool = False) -> dict:
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "load_skill", "arguments": json.dumps({"name": "price-reply"})},
        },
        {
            "id": "c2",
            "type": "function",
            "function": {"name": "get_price", "arguments": json.dumps({"link": n})},
        },
    ]
    messages = [
        {"role": "user", "content": f"How much is link {n}?"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c1", "content": "Quote the price from get_price."},
        {"role": "tool", "tool_call_id": "c2", "content": json.dumps({"price": price})},
    ]
    if retry:
        messages += [
            {
                "role": "assistant",
                "content": f"Link {n} is a lovely product and today it "
                f"costs only {price} yuan, come and buy!",
            },
            {"role": "user", "name": "hook.reply_length", "content": "too long"},
        ]
    at = len(messages)
    messages.append({"role": "assistant", "content": f"Link {n}: {price} yuan."})
    return {
        "id": f"shop-{n}",
        "harness": "tiny-shop",
        "messages": messages,
        "gold": {
            "turns": [
                {
                    "at": 1,
                    "skills": ["price-reply"],
                    "calls": [
                        {"name": "get_price", "arguments": {"link": [n]}, "omittable": ["currency"]}
                    ],
                },
                {"at": at, "no_call": True, "reply": {"contains": [str(price)], "language": "en"}},
            ]
        },
    }


@pytest.fixture(scope="module")
def shop_version(tmp_path_factory) -> Path:
    """A small shop harness of our own (not the example): short rows for the training chain."""
    tmp = tmp_path_factory.mktemp("shop")
    write_harness(tmp / "tiny-shop")
    episodes = [_shop_episode(n, 10 * n + 9, retry=n == 3) for n in range(1, 7)]
    path = tmp / "episodes.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in episodes), encoding="utf-8")
    return _version(tmp, (recipes_dir() / "tools-basic.yaml").read_text(encoding="utf-8"), path)


@pytest.fixture(scope="module")
def bfcl_version(tmp_path_factory, bfcl_data) -> Path:
    """BFCL questions (a call each, and irrelevant requests) with every tool name masked in the
    variant: the same calls must now use the new names."""
    tmp = tmp_path_factory.mktemp("bfcl")
    episodes = (
        import_bfcl(bfcl_data / "BFCL_v4_simple_python.json").episodes[:4]
        + import_bfcl(bfcl_data / "BFCL_v4_irrelevance.json").episodes[:2]
    )
    path = tmp / "episodes.jsonl"
    path.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in episodes), encoding="utf-8")
    return _version(tmp, MASKING_RECIPE, path)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory, example_version, shop_version) -> Path:
    """A tiny Qwen2 model and a tokenizer trained on the rows it will see (built, never
    downloaded): the base model of every stage below."""
    corpus = []
    for version in (example_version, shop_version):
        rows = load_rows(version, check_provenance(version))
        corpus += [
            json.dumps(r["messages"], ensure_ascii=False) + json.dumps(r["tools"]) for r in rows
        ]
    corpus += [json.dumps(p.messages, ensure_ascii=False) for p in read_prompts(SHIPPED_PROMPTS)]
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "base", corpus, vocab_size=4096)


@pytest.fixture(scope="module")
def tokenizer(tiny_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_dir)
    ensure_response_parser(tok)
    return tok


def _turns(version: Path, *, trust_hooks: bool = True) -> JudgedTurns:
    manifest = check_provenance(version)
    return JudgedTurns(version, manifest, load_rows(version, manifest), trust_hooks=trust_hooks)


# ---- loading and provenance --------------------------------------------------------------------


def test_rows_load_as_conversations_and_judged_turns_point_at_assistant_messages(example_version):
    manifest = check_provenance(example_version)
    rows = load_rows(example_version, manifest)
    assert len(rows) == manifest["counts"]["rows"] == 9
    row = rows[0]
    assert isinstance(row["messages"], list) and row["messages"][0]["role"] == "system"
    assert isinstance(row["tools"], list) and row["tools"][0]["type"] == "function"
    turns = _turns(example_version)
    assert len(turns.turns) == sum(len(r["hsa_gold"].get("turns", [r["hsa_gold"]])) for r in rows)
    for turn in turns.turns:
        row = next(r for r in rows if r["id"] == turn.row_id)
        judged = row["messages"][len(turn.prompt)]
        assert judged["role"] == "assistant" and turn.prompt[-1]["role"] != "assistant"


def test_a_shard_given_for_its_version_names_the_folder(example_version):
    shard = next((example_version / "data").glob("*.parquet"))
    with pytest.raises(HsaError, match="this is a file; a dataset version is the folder") as err:
        check_provenance(shard)
    assert f"(this file is in version folder {str(example_version)!r})" in str(err.value)
    assert shard.parent != example_version  # data/: the folder named is the version's


def test_a_tampered_version_is_refused(example_version, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(example_version, copy)
    shard = next((copy / "data").glob("*.parquet"))
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(HsaError, match="sha256 differs from manifest.json"):
        check_provenance(copy)
    code = main(
        [
            "train",
            "sft",
            "--dataset",
            str(copy),
            "--model",
            "unused",
            "--recipe",
            "sft-tiny-cpu",
            "--out",
            str(tmp_path / "never"),
        ]
    )
    assert code == 2 and "sha256 differs" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()  # nothing written for a refused run


def test_an_output_inside_the_dataset_version_is_refused(example_version, tmp_path, capsys):
    """A model written into a version becomes files its manifest does not list: the version
    would no longer verify. Refused before anything is read or written."""
    before = sorted(p.relative_to(example_version) for p in example_version.rglob("*"))
    inside = example_version / "data" / "model"
    args = ["train", "sft", "--dataset", str(example_version), "--model", "unused"]
    assert main([*args, "--recipe", "sft-tiny-cpu", "--out", str(inside)]) == 2
    assert "--out lies inside --dataset" in capsys.readouterr().err
    args = ["train", "tiny-model", "--dataset", str(example_version), "--out", str(inside)]
    assert main(args) == 2
    assert "lies inside --dataset" in capsys.readouterr().err
    assert sorted(p.relative_to(example_version) for p in example_version.rglob("*")) == before
    assert main(["train", "tiny-model", "--out", str(tmp_path / "t"), "--vocab-size", "10"]) == 2
    capsys.readouterr()
    args = ["train", "sft", "--dataset", str(example_version), "--model", "/no/such/model"]
    assert main([*args, "--recipe", "sft-tiny-cpu", "--out", str(tmp_path / "m")]) == 2
    assert "model folder does not exist" in capsys.readouterr().err


def test_a_version_without_rows_is_refused_with_what_to_read(tmp_path, capsys):
    """A run whose every input was rejected keeps its version folder (to show the rejects); a
    trainer given it says so instead of failing inside datasets."""
    write_harness(tmp_path / "tiny-shop")
    bad = {**_shop_episode(1, 19), "gold": {"calls": [{"name": "no_such_tool"}]}}
    (tmp_path / "episodes.jsonl").write_text(json.dumps(bad) + "\n", encoding="utf-8")
    recipe = (recipes_dir() / "tools-basic.yaml").read_text(encoding="utf-8")
    (tmp_path / "recipe.yaml").write_text(recipe, encoding="utf-8")
    made = generate(
        load_generation_recipe(tmp_path / "recipe.yaml"),
        tmp_path / "episodes.jsonl",
        tmp_path / "out",
        trust_hooks=True,
    )
    assert made.manifest["counts"]["rows"] == 0
    for stage in ("sft", "rl"):
        args = ["train", stage, "--dataset", str(made.path), "--model", "unused"]
        args += ["--recipe", f"{stage}-tiny-cpu", "--out", str(tmp_path / stage)]
        assert main(args) == 2
        assert "has no rows to train on" in capsys.readouterr().err
        assert not (tmp_path / stage).exists()


def test_a_later_stage_evaluates_on_what_the_earlier_one_held_out(shop_version):
    """Whatever a later stage's seed and eval_turns, it holds out and evaluates the episodes the
    stage that trained its model held out; with no such record it draws its own split."""
    from hsa.trainers.stage import split_eval

    turns = _turns(shop_version)
    sources = sorted({t.source_id for t in turns.turns})
    for seed in range(4):
        recipe = load_recipe("rl-tiny-cpu", stage="rl", overrides=[f"seed={seed}", "eval_turns=3"])
        notes: list[str] = []
        earlier = {"stage": "sft", "held_out_sources": sources[:1]}
        picked, held_out = split_eval(turns, recipe, earlier, notes.append)
        assert held_out == set(sources[:1]) and {t.source_id for t in picked} == held_out
        assert "the 1 source episode(s) of this version the sft run held out" in notes[0]
    fresh, held_out = split_eval(turns, recipe, {"stage": "sft"}, notes.append)
    assert len(fresh) == 3 and held_out == {t.source_id for t in fresh}
    assert "drawn afresh" in notes[-1]
    # A stage that evaluates nothing still keeps out what the earlier one held out.
    quiet = load_recipe("rl-tiny-cpu", stage="rl", overrides=["eval_turns=0"])
    assert split_eval(None, quiet, {"stage": "sft", "held_out_sources": sources[:2]}) == (
        [],
        set(sources[:2]),
    )


# ---- tokenizer, vocabulary and recipe checks ---------------------------------------------------


def test_a_tokenizer_whose_template_ignores_tools_is_refused(tokenizer):
    check_chat_template(tokenizer)  # the tiny tokenizer's Qwen2.5 template renders tools
    plain = tokenizer.__class__.from_pretrained(tokenizer.name_or_path)
    plain.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
        "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}"
        "<|im_start|>assistant\n{% endif %}"
    )
    with pytest.raises(HsaError, match="does not render the tools"):
        check_chat_template(plain)
    plain.chat_template = None
    with pytest.raises(HsaError, match="no chat template"):
        check_chat_template(plain)


def test_student_and_teacher_must_share_a_vocabulary(tiny_dir, tokenizer):
    from hsa.trainers.tiny import build_tokenizer

    base = build_model(tokenizer)
    check_vocabulary(tokenizer, tokenizer, base, build_model(tokenizer, seed=1))
    other = build_tokenizer(["a different corpus entirely"] * 5, vocab_size=300)
    with pytest.raises(HsaError, match="vocab_size"):
        check_vocabulary(tokenizer, other, base, build_model(other))
    resized = build_model(tokenizer)
    resized.resize_token_embeddings(len(tokenizer) + 8)
    with pytest.raises(HsaError, match="do not share a vocabulary"):
        check_vocabulary(tokenizer, tokenizer, base, resized)


def test_num_generations_must_be_two_or_more_and_divide_the_generation_batch():
    assert check_generation_batch(load_recipe("rl-tiny-cpu", stage="rl")) == (2, 4)
    with pytest.raises(HsaError, match="at least 2"):
        check_generation_batch(
            load_recipe("rl-tiny-cpu", stage="rl", overrides=["trl.num_generations=1"])
        )
    with pytest.raises(HsaError, match="does not divide the generation batch 4"):
        check_generation_batch(
            load_recipe("rl-tiny-cpu", stage="rl", overrides=["trl.num_generations=3"])
        )
    assert check_generation_batch(
        load_recipe(
            "rl-tiny-cpu",
            stage="rl",
            overrides=["trl.num_generations=3", "trl.gradient_accumulation_steps=3"],
        )
    ) == (3, 12)


@pytest.mark.parametrize(
    "override, message",
    [
        ("trl.max_steps=ten", "does not fit the type int"),
        ("trl.no_such_field=1", "not a field of GRPOConfig"),
        ("trl.output_dir=/tmp/x", "set by --out"),
        ("trl.data_seed=123", "set by the recipe's top-level seed"),  # it was overwritten
        ("rewards.speed=1", "unknown reward"),
        ("rewards.exact=-1", "a reward weight is a number >= 0"),
        ("lora.r=8", "trains without LoRA"),
        ("max_length=4096", "unknown key for a rl recipe"),
        ("stage", "--set expects key=value"),
    ],
)
def test_recipe_overrides_are_type_checked_with_clear_errors(override, message):
    with pytest.raises(HsaError, match=message):
        load_recipe("rl-tiny-cpu", stage="rl", overrides=[override])


def test_the_sft_loss_is_on_assistant_turns_unless_the_recipe_says_all():
    assistant = load_recipe("sft-tiny-cpu", stage="sft")
    every = load_recipe("sft-tiny-cpu", stage="sft", overrides=["loss=all"])
    assert assistant.get("loss") == "assistant" and every.get("loss") == "all"
    with pytest.raises(HsaError, match="loss must be one of assistant, all"):
        load_recipe("sft-tiny-cpu", stage="sft", overrides=["loss=prompt"])
    with pytest.raises(HsaError, match="unknown key for a rl recipe"):
        load_recipe("rl-tiny-cpu", stage="rl", overrides=["loss=all"])
    with pytest.raises(HsaError, match="top-level loss"):
        load_recipe("sft-tiny-cpu", stage="sft", overrides=["trl.assistant_only_loss=false"])


def test_every_shipped_recipe_loads_and_overrides_keep_types():
    from hsa.trainers.recipe import shipped_recipes

    for name in shipped_recipes():
        stage = name.split("-")[0]
        assert load_recipe(name, stage=stage).stage == stage
    recipe = load_recipe(
        "sft-tiny-cpu",
        stage="sft",
        overrides=["trl.learning_rate=1", "max_length=512", "rows=null"],
    )
    assert recipe.trl["learning_rate"] == 1.0 and isinstance(recipe.trl["learning_rate"], float)
    assert recipe.get("max_length") == 512 and recipe.get("rows") is None
    with pytest.raises(HsaError, match="needs a 'rl' recipe"):
        load_recipe("sft-tiny-cpu", stage="rl")


# ---- SFT: lengths and the loss mask ------------------------------------------------------------


def test_token_lengths_are_measured_and_a_max_length_that_drops_every_turn_is_refused(
    example_version, tokenizer
):
    rows = load_rows(example_version, check_provenance(example_version))
    report = measure(tokenizer, rows)
    longest = max(r.tokens for r in report.lengths)
    first = min(r.first_trained for r in report.lengths)
    assert 0 < first < longest
    whole = choose_max_length(measure(tokenizer, rows), "auto", None)
    assert whole.max_length == longest and whole.truncated == whole.emptied == 0
    cut = choose_max_length(measure(tokenizer, rows), longest - 50, None)
    assert cut.truncated >= 1 and cut.trained_tokens_lost > 0 and cut.emptied == 0
    capped = choose_max_length(measure(tokenizer, rows), "auto", longest - 1)
    assert capped.max_length == longest - 1 and capped.notes
    with pytest.raises(HsaError, match=f"drops every assistant turn.*above {first}"):
        choose_max_length(measure(tokenizer, rows), first, None)
    prompts = rows.map(lambda row: {"messages": row["messages"][:2]})  # system + user only
    with pytest.raises(HsaError, match="no row has an assistant message to learn"):
        choose_max_length(measure(tokenizer, prompts), "auto", None)


def _sft_trainer(tokenizer, rows, out: Path, *, max_length: int | None = None, **options):
    """TRL's SFTTrainer on ``rows`` (conversations, or rows already tokenized with labels) with
    the assistant-only loss, on the CPU, as hsa runs it."""
    from trl import SFTConfig, SFTTrainer

    tokenized = "input_ids" in rows.column_names  # labels built already, assistant-only
    args = SFTConfig(
        output_dir=str(out),
        max_length=max_length,
        assistant_only_loss=not tokenized,
        use_cpu=True,
        bf16=False,
        report_to="none",
        **options,
    )
    if not tokenized:
        rows = rows.select_columns(["messages", "tools"])
    return SFTTrainer(
        model=build_model(tokenizer),
        args=args,
        processing_class=tokenizer,
        train_dataset=rows,
    )


def test_the_loss_mask_covers_exactly_the_assistant_turns_of_a_variant_row(
    example_version, tokenizer, tmp_path
):
    """SFTTrainer's own labels on a variant row with hook feedback: the trained text is exactly
    each assistant message as the template writes it, and nothing of the system prompt, user,
    tool or hook messages."""

    rows = load_rows(example_version, check_provenance(example_version))
    index = next(
        i
        for i, r in enumerate(rows)
        if r["hsa_variant"] > 0
        and any(str(m.get("name") or "").startswith("hook.") for m in r["messages"])
    )
    row = rows[index]
    trainer = _sft_trainer(tokenizer, rows.select([index]), tmp_path)
    example = trainer.train_dataset[0]
    rendering = render_loss_mask(tokenizer, example["input_ids"], example["labels"])
    print(f"\nloss mask of row {row['id']} (trained text in ⟦...⟧):\n{rendering}\n")

    spans = [s.split("⟧", 1)[0] for s in rendering.split("⟦")[1:]]
    messages = row["messages"]
    template = trainer.chat_template
    expected = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        before = tokenizer.apply_chat_template(
            messages[:i],
            tools=row["tools"],
            tokenize=False,
            add_generation_prompt=True,
            chat_template=template,
        )
        through = tokenizer.apply_chat_template(
            messages[: i + 1], tools=row["tools"], tokenize=False, chat_template=template
        )
        expected.append(through[len(before) :])
    assert [s.strip() for s in spans] == [e.strip() for e in expected]
    trained_text = "".join(spans)
    for message in messages:
        if message["role"] != "assistant" and message.get("content"):
            content = (
                message["content"]
                if isinstance(message["content"], str)
                else "".join(p["text"] for p in message["content"])
            )
            for line in content.splitlines():
                if len(line.strip()) > 12:  # a distinctive line of non-assistant text
                    assert line.strip() not in trained_text, (message["role"], line)
    hook = next(m for m in messages if str(m.get("name") or "").startswith("hook."))
    original = {
        "hook.viewer_input",
        "hook.tool_arguments",
        "hook.reply_skill_loaded",
        "hook.reply_compliance",
    }
    assert hook["name"] not in original  # the variant renamed its hooks


@pytest.mark.parametrize(
    "trl_options", [{}, {"shuffle_dataset": True}, {"truncation_mode": "keep_end", "cut": 3}]
)
def test_turns_a_hook_rejected_are_seen_but_not_learned(
    example_version, tokenizer, tmp_path, trl_options
):
    """A blocked tool call and a rejected reply are the mistakes of fail -> hook -> recover
    lessons. The labels hsa builds are TRL's own (same tokens, same trained tokens) except that
    no token of a rejected message is trained; and they stay each row's own whatever TRL does
    after: shuffle, or cut rows from the end."""
    from hsa.model.hook import hook_rejected
    from hsa.trainers.recipe import load_recipe as load_trainer_recipe
    from hsa.trainers.sft import hook_rejections_masked

    rows = load_rows(example_version, check_provenance(example_version))
    assert sum(bool(hook_rejected(r["messages"])) for r in rows) >= 4  # both hook episodes
    recipe = load_trainer_recipe("sft-tiny-cpu", stage="sft")
    prepared, rejected = hook_rejections_masked(rows, tokenizer, recipe)
    masked = sum(map(len, rejected))
    assert masked == sum(len(hook_rejected(r["messages"])) for r in rows) >= 4
    options = dict(trl_options)
    cut = options.pop("cut", 0)
    longest = max(len(ids) for ids in prepared["input_ids"])
    ours = _sft_trainer(
        tokenizer, prepared, tmp_path / "ours", max_length=longest - cut, **options
    ).train_dataset
    theirs = _sft_trainer(tokenizer, rows, tmp_path / "trl", max_length=longest - cut)
    own = {i: (e["input_ids"], e["labels"]) for i, e in enumerate(theirs.train_dataset)}
    assert sorted(ours["hsa_row"]) == list(range(len(rows)))
    for example in ours:
        i = example["hsa_row"]
        ids, labels = own[i]
        messages = rows[i]["messages"]
        rejected = set(hook_rejected(messages))
        if options.get("truncation_mode") == "keep_end":
            # TRL's own example i was cut from the start: compare with ours cut the same way
            assert example["input_ids"] == prepared[i]["input_ids"][-(longest - cut) :]
            continue
        assert example["input_ids"] == ids  # the tokenization TRL itself makes
        spans = trained_spans([t != -100 for t in labels])
        turns = [j for j, m in enumerate(messages) if m["role"] == "assistant"]
        for (start, end), j in zip(spans, turns, strict=True):
            trained = [t != -100 for t in example["labels"][start:end]]
            assert not any(trained) if j in rejected else all(trained), (rows[i]["id"], j)
        outside = [k for k in range(len(ids)) if not any(a <= k < b for a, b in spans)]
        assert all(example["labels"][k] == -100 for k in outside)


def test_which_assistant_messages_a_hook_rejected():
    from hsa.model.hook import hook_rejected

    call = {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},  # blocked
        {"role": "tool", "tool_call_id": "a", "name": "hook.args", "content": "no"},
        {"role": "assistant", "content": "too long a reply"},  # rejected reply
        {"role": "user", "name": "hook.length", "content": "shorter"},
        {"role": "assistant", "content": "ok", "tool_calls": [{**call, "id": "b"}]},
        {"role": "tool", "tool_call_id": "b", "content": "42"},  # a result, not feedback
        {"role": "user", "name": "hook.result_check", "content": "about the tool result"},
        {"role": "assistant", "content": "42"},
    ]
    assert hook_rejected(messages) == [1, 3]


# ---- rewards on hand-written completions -------------------------------------------------------


def _ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text + "<|im_end|>", add_special_tokens=False)["input_ids"]


def _call(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def _gold_arguments(call) -> dict:
    """The gold's first acceptable value for each parameter that must be given."""
    return {
        p: next(v for v in values if v != "")
        for p, values in call.arguments.items()
        if p not in call.omittable and any(v != "" for v in values)
    }


def _rewards(rewards: RewardSet, turn, text: str, names=("exact", "partial", "format")) -> dict:
    prompt = render_prompt(rewards.tokenizer, turn.prompt, turn.tools)
    out = {}
    for function in rewards.functions(list(names)):
        out[function.__name__] = function(
            prompts=[prompt],
            completions=[None],
            completion_ids=[_ids(rewards.tokenizer, text)],
            hsa_row=[turn.row_id],
            hsa_at=[turn.at],
        )[0]
    return out


def test_rewards_on_hand_written_completions_for_bfcl_questions(bfcl_version, tokenizer):
    turns = _turns(bfcl_version, trust_hooks=False)
    rewards = RewardSet(turns, tokenizer)
    by_row = {t.row_id: t for t in turns.turns}
    call_turn = next(t for t in turns.turns if t.row_id.endswith("#0") and t.gold.calls)
    gold = call_turn.gold.calls[0]
    right = _gold_arguments(gold)
    assert _rewards(rewards, call_turn, _call(gold.name, right)) == {
        "exact": 1.0,
        "partial": 1.0,
        "format": 1.0,
    }

    param, value = next(
        (p, v)
        for p, v in right.items()
        if isinstance(v, int | float | str) and not isinstance(v, bool)
    )
    wrong = {**right, param: value + 1 if isinstance(value, int | float) else value + " nowhere"}
    got = _rewards(rewards, call_turn, _call(gold.name, wrong))
    assert got["exact"] == 0.0 and got["partial"] == pytest.approx(2 / 3) and got["format"] == 1.0

    malformed = f'<tool_call>\n{{"name": "{gold.name}", "arguments": {{"{param}": </tool_call>'
    got = _rewards(rewards, call_turn, malformed)
    assert got == {"exact": 0.0, "partial": 0.0, "format": 0.0}

    extra = _call(gold.name, right) + "\n" + _call(gold.name, right)
    got = _rewards(rewards, call_turn, extra)
    assert got["exact"] == 0.0 and got["partial"] == pytest.approx(2 / 3) and got["format"] == 1.0

    irrelevant = next(t for t in turns.turns if t.gold.no_call and t.row_id.endswith("#0"))
    assert _rewards(rewards, irrelevant, "I cannot help with that: no tool fits.") == {
        "exact": 1.0,
        "partial": 1.0,
        "format": None,
    }
    some_tool = irrelevant.tools[0]["function"]["name"]
    got = _rewards(rewards, irrelevant, _call(some_tool, {}))
    assert got["exact"] == 0.0 and got["partial"] == 0.0

    # The same question under the variant whose tool names are masked: only the new name counts.
    renamed = by_row[call_turn.row_id.replace("#0", "#1")]
    new = renamed.gold.calls[0]
    assert new.name != gold.name
    assert _rewards(rewards, renamed, _call(new.name, _gold_arguments(new))) == {
        "exact": 1.0,
        "partial": 1.0,
        "format": 1.0,
    }
    got = _rewards(rewards, renamed, _call(gold.name, _gold_arguments(new)))
    assert got == {"exact": 0.0, "partial": pytest.approx(1 / 3), "format": 0.0}


def test_skills_reply_and_hooks_rewards_under_renamed_hooks(example_version, tokenizer):
    turns = _turns(example_version)
    with pytest.raises(HsaError, match="--trust-hooks"):
        RewardSet(turns, tokenizer, trust_hooks=False).functions(["hooks"])
    rewards = RewardSet(turns, tokenizer, trust_hooks=True)
    reply_turn = next(
        t for t in turns.turns if t.gold.no_call and t.gold.reply and not t.row_id.endswith("#0")
    )
    names = ("exact", "skills", "reply", "hooks")
    words = " ".join(reply_turn.gold.reply.get("contains", []))
    good = _rewards(rewards, reply_turn, f"宝子们，{words}～", names)
    assert good == {"exact": 1.0, "skills": None, "reply": 1.0, "hooks": 1.0}
    boastful = _rewards(rewards, reply_turn, f"宝子们，{words}，全网最低价！", names)
    assert boastful["hooks"] < 1.0 and boastful["exact"] == 1.0  # gold allows it; a hook does not
    skill_turn = next(t for t in turns.turns if t.gold.skills and not t.row_id.endswith("#0"))
    loader = rewards.turns.harness(skill_turn.row_id).skill_loader
    loads = "\n".join(_call(loader, {"name": s}) for s in skill_turn.gold.skills)
    got = _rewards(rewards, skill_turn, loads, ("skills", "format"))
    assert got == {"skills": 1.0, "format": 1.0}
    got = _rewards(
        rewards, skill_turn, _call(loader, {"name": "no-such-skill"}), ("skills", "format")
    )
    assert got == {"skills": 0.0, "format": 0.0}


# ---- the chain: sft -> opd -> rl ---------------------------------------------------------------


def _finite(record: dict) -> list[float]:
    values = [entry["loss"] for entry in record["losses"]]
    assert values and all(math.isfinite(v) for v in values)
    return values


def _reloads(folder: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder)
    tok = AutoTokenizer.from_pretrained(folder)
    assert model.get_input_embeddings().weight.shape[0] == len(tok)


def test_sft_then_opd_then_rl_on_a_generated_version(shop_version, tiny_dir, tmp_path):
    from hsa.trainers.opd import run_opd
    from hsa.trainers.output import RECORD
    from hsa.trainers.rl import run_rl

    sft_out = tmp_path / "sft"
    code = main(
        [
            "train",
            "sft",
            "--dataset",
            str(shop_version),
            "--model",
            str(tiny_dir),
            "--recipe",
            "sft-tiny-cpu",
            "--out",
            str(sft_out),
            "--trust-hooks",
            "--set",
            "trl.max_steps=60",
            "--set",
            "trl.per_device_train_batch_size=4",
            "--set",
            "trl.learning_rate=3e-3",
            "--set",
            "trl.logging_steps=20",
            "--set",
            "rows=null",
            "--set",
            "eval_turns=2",
        ]
    )
    assert code == 0
    sft = json.loads((sft_out / RECORD).read_text())
    losses = _finite(sft)
    assert losses[-1] < losses[0]
    assert sft["token_lengths"]["rows_truncated"] == 0 and sft["global_step"] == 60
    assert sft["datasets"][0]["version"] == check_provenance(shop_version)["version"]
    assert set(sft["evaluation"]) == {"before", "after"}
    assert sft["libraries"]["trl"] and sft["seed"] == 0
    card = (sft_out / "README.md").read_text()
    assert card.startswith("---\nbase_model: ") and "hsa_version" in card
    assert "⟦" in (sft_out / "loss_mask.txt").read_text()
    # shop-3's rejected reply (and its variant's) is seen but not learned; the loss mask shows it
    assert sft["hook_rejected_turns_masked"] >= 1
    shown = (sft_out / "loss_mask.txt").read_text()
    assert shown.startswith("row shop-3#") and "too long" in shown  # the hook's feedback
    trained = [part.split("⟧", 1)[0] for part in shown.split("⟦")[1:]]
    assert any("Link 3: 39 yuan." in t for t in trained)  # the recovery is learned
    assert not any("buy!" in t for t in trained)  # the rejected reply is not
    _reloads(sft_out)

    opd_out = tmp_path / "opd"
    opd = run_opd(
        SHIPPED_PROMPTS,
        str(sft_out),
        load_recipe("opd-tiny-cpu", stage="opd", overrides=["trl.max_steps=2", "rows=8"]),
        opd_out,
        log=lambda _: None,
    )
    assert opd["teacher"] == str(tiny_dir)  # the base model, from the SFT record
    assert sft["held_out_sources"] and opd["held_out_sources"] == sft["held_out_sources"]
    _finite(opd)
    _reloads(opd_out)

    rl_out = tmp_path / "rl"
    # Four completions a prompt, two prompts a step: after the warm start, replies differ in the
    # price they quote, so some group's rewards differ.
    recipe = load_recipe(
        "rl-tiny-cpu",
        stage="rl",
        overrides=[
            "trl.max_steps=6",
            "trl.per_device_train_batch_size=8",
            "trl.num_generations=4",
            "trl.max_completion_length=40",
            "eval_turns=2",
            "rows=null",
        ],
    )
    notes: list[str] = []
    rl = run_rl(shop_version, str(opd_out), recipe, rl_out, trust_hooks=True, log=notes.append)
    _finite(rl)
    fractions = [step["frac_groups_all_equal"] for step in rl["zero_gradient_groups"]]
    assert len(fractions) == 6
    assert min(fractions) < 1.0, notes  # some group had different rewards: a real gradient
    assert (
        rl["evaluation"]["before"]["turns"] == 2 and "exact" in rl["evaluation"]["after"]["means"]
    )
    assert {"rewards/exact/mean", "rewards/partial/mean"} <= set(rl["reward_history"][0])
    assert rl["held_out_sources"] == sft["held_out_sources"]  # never trained on by any stage
    _reloads(rl_out)


def test_distillation_prompts_render_tool_calls_as_dataset_rows_do(tokenizer, tmp_path):
    """A prompt in OpenAI's format writes a call's arguments as a JSON string; the template's
    ``tojson`` would encode it again, a context no dataset row or model ever shows."""
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    call = {"id": "c", "type": "function"}
    call["function"] = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": "sunny"},
        {"role": "user", "content": "And tomorrow?"},
    ]
    path = tmp_path / "prompts.jsonl"
    bad = dict(call, function={"name": "get_weather", "arguments": "{city"})
    path.write_text(json.dumps({"messages": messages, "tools": [weather]}) + "\n")
    (prompt,) = read_prompts(path)
    text = render_prompt(tokenizer, prompt.messages, prompt.tools)
    assert '"arguments": {"city": "Paris"}' in text
    bad_messages = [messages[0], {**messages[1], "tool_calls": [bad]}, *messages[2:]]
    path.write_text(json.dumps({"messages": bad_messages}) + "\n")
    with pytest.raises(HsaError, match=r"messages\[1\]\.tool_calls\[0\]\.function\.arguments"):
        read_prompts(path)


def test_a_failed_run_keeps_its_checkpoints_and_resumes_from_one(
    shop_version, tiny_dir, tmp_path, monkeypatch
):
    """Hours into a GPU run, a crash or a Ctrl-C must not take the checkpoints with the staging
    folder, and resume_from_checkpoint must reach trainer.train() (TRL's config does not read
    it), or the rerun starts from step 0."""
    import hsa.trainers.sft as sft
    from hsa.trainers.stage import trained

    def crash_after_training(trainer, what):
        trained(trainer, what)
        raise KeyboardInterrupt

    said: list[str] = []
    overrides = ["trl.max_steps=2", "trl.save_strategy=steps", "trl.save_steps=1"]
    overrides += ["trl.logging_steps=1", "eval_turns=0", "rows=4"]
    recipe = load_recipe("sft-tiny-cpu", stage="sft", overrides=overrides)
    monkeypatch.setattr(sft, "trained", crash_after_training)
    with pytest.raises(KeyboardInterrupt):
        sft.run_sft(shop_version, str(tiny_dir), recipe, tmp_path / "out", log=said.append)
    (kept,) = tmp_path.glob(".out.partial-*")
    assert sorted(p.name for p in kept.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    assert f"--set trl.resume_from_checkpoint={kept / 'checkpoint-2'}" in said[-1]
    assert not (tmp_path / "out").exists()

    state = json.loads((kept / "checkpoint-2" / "trainer_state.json").read_text())
    before = [(e["step"], e["loss"]) for e in state["log_history"] if "loss" in e]
    assert [step for step, _ in before] == [1, 2]

    # Resumed with another learning rate: steps 1 and 2 retrained would give step 2 another loss.
    monkeypatch.setattr(sft, "trained", trained)
    resume = f"trl.resume_from_checkpoint={kept / 'checkpoint-2'}"
    again = [*overrides, "trl.max_steps=3", "trl.learning_rate=0.5", resume]
    resumed = load_recipe("sft-tiny-cpu", stage="sft", overrides=again)
    record = sft.run_sft(shop_version, str(tiny_dir), resumed, tmp_path / "out", log=said.append)
    assert record["global_step"] == 3
    assert [(e["step"], e["loss"]) for e in record["losses"]][:2] == before


def test_a_stage_that_takes_no_training_step_saves_nothing_and_fails(
    shop_version, tiny_dir, tmp_path, capsys
):
    """GRPO drops a generation batch its prompts cannot fill: one prompt where a batch takes
    two trains for no step, and the untouched model must not be published as the output."""
    out = tmp_path / "rl"
    args = ["train", "rl", "--dataset", str(shop_version), "--model", str(tiny_dir)]
    args += ["--recipe", "rl-tiny-cpu", "--out", str(out), "--set", "rows=1"]
    assert main(args + ["--set", "eval_turns=0"]) == 2
    assert "rl took no training step: one generation batch takes 2 prompts and there are 1" in (
        capsys.readouterr().err
    )
    assert not out.exists()


def _with_lora(folder: Path, shipped: str) -> Path:
    """A copy of a shipped tiny recipe that trains a small LoRA adapter."""
    recipe = folder / f"{shipped}-lora.yaml"
    text = (Path(__file__).parents[1] / "trainers" / "recipes" / f"{shipped}.yaml").read_text()
    recipe.write_text(text.replace("lora: null", "lora: {r: 4, alpha: 8, dropout: 0.0}"))
    return recipe


def test_a_lora_recipe_trains_an_adapter_that_transformers_reloads(
    shop_version, tiny_dir, tmp_path
):
    from hsa.trainers.sft import run_sft

    recipe = _with_lora(tmp_path, "sft-tiny-cpu")
    record = run_sft(
        shop_version,
        str(tiny_dir),
        load_recipe(
            str(recipe),
            stage="sft",
            overrides=["trl.max_steps=2", "trl.logging_steps=1", "eval_turns=0", "rows=4"],
        ),
        tmp_path / "out",
        log=lambda _: None,
    )
    _finite(record)
    assert (tmp_path / "out" / "adapter_config.json").is_file()
    assert not (tmp_path / "out" / "model.safetensors").exists()  # an adapter, not a full copy
    _reloads(tmp_path / "out")

    # The next stage starts from what SFT learned: the adapter merged into its base, every
    # weight trainable (loaded as transformers loads an adapter, all were frozen, and a LoRA
    # stage trained a fresh adapter of the same name over the base). Its LoRA output is saved
    # merged: its own adapter would name the base model as its base, losing SFT.
    import torch
    from transformers import AutoModelForCausalLM

    from hsa.trainers.rl import run_rl
    from hsa.trainers.stage import load_model

    merged = load_model(str(tmp_path / "out"), load_recipe("rl-tiny-cpu", stage="rl"))
    assert all(p.requires_grad for p in merged.parameters())
    rl_recipe = _with_lora(tmp_path, "rl-tiny-cpu")
    run_rl(
        shop_version,
        str(tmp_path / "out"),
        load_recipe(
            str(rl_recipe),
            stage="rl",
            overrides=["trl.max_steps=1", "eval_turns=0", "rows=4", "trl.learning_rate=1e-9"],
        ),
        tmp_path / "rl",
        log=lambda _: None,
    )
    assert not (tmp_path / "rl" / "adapter_config.json").exists()
    ids = torch.tensor([[5, 17, 99, 250, 33]])

    def logits(model):
        with torch.no_grad():
            return model.eval()(ids).logits

    after_rl = logits(
        AutoModelForCausalLM.from_pretrained(str(tmp_path / "rl"), dtype=torch.float32)
    )
    base = logits(AutoModelForCausalLM.from_pretrained(str(tiny_dir), dtype=torch.float32))
    assert torch.allclose(after_rl, logits(merged.float()), atol=1e-4)  # a 1e-9 step: SFT's model
    assert not torch.allclose(after_rl, base, atol=1e-4)
