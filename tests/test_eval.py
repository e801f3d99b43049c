"""hsa eval end to end: a real `transformers serve` on 127.0.0.1 with a tiny local model (built
and briefly trained here, no downloads), resumption after a real kill, the in-process backend giving
the server's verdicts for greedy decoding, and `hsa eval compare` on two such reports.

The episodes are eight price questions to the tiny-shop harness of conftest.py; the tiny model
writes one fixed tool call whatever it is asked (see tool_calling_model): right on one original
turn, and on that turn's variants only where no transform renamed what it calls.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from itertools import pairwise
from pathlib import Path

import orjson
import pytest
from conftest import HARNESS_YAML, HOOKS_PY, assistant, call, write_harness

from hsa.cli import main
from hsa.eval.items import episode_items, load_sources
from hsa.eval.journal import PREDICTIONS_FILE
from hsa.eval.report import read_report
from hsa.model.scorer import judge

# Everything that imports torch runs in one process (make test runs pytest -n 2 --dist loadgroup).
pytestmark = pytest.mark.xdist_group("torch")

FAMILIES = ["hooks", "prompt_structure", "skill_content", "skill_ids", "tool_schema"]


# conftest's tiny shop, with its tools shown only in the chat template's tool block (a shorter
# prompt) and a tool_call hook as well as the reply hook, so hook compliance has calls to judge
# (its range holds every link the episodes call: a source whose own hooks refuse its judged
# call is a check:hooks reject, with no variants).
LEAN_HARNESS = (
    HARNESS_YAML.replace(
        "sections: [persona, skills, tools, hooks]", "sections: [persona, skills, hooks]"
    )
    + """\
  - name: link_range
    event: tool_call
    function: check_link
    description: Links on sale run from 1 to 8.
    config: {max_link: 8}
"""
)
LEAN_HOOKS = (
    HOOKS_PY
    + """

def check_link(payload, config):
    link = (payload.get("arguments") or {}).get("link")
    if isinstance(link, int) and not 1 <= link <= config["max_link"]:
        return {"ok": False, "feedback": "no such link"}
    return {"ok": True}
"""
)


def shop_episodes(root: Path) -> Path:
    """Eight price questions: odd links call get_price; links 2 and 6 load the price skill and
    ask in USD; links 4 and 8 ask for the price history. Each ends with a reply turn."""
    assert LEAN_HARNESS.count("[persona, skills, hooks]") == 1
    write_harness(root / "shop", harness_yaml=LEAN_HARNESS, hooks=LEAN_HOOKS)
    lines = []
    for link in range(1, 9):
        price = 100 + 7 * link
        if link % 4 == 0:
            question, calls = (
                f"Price history of link {link} over 30 days?",
                [call("get_price_history", {"link": link, "days": 30}, "c1")],
            )
            turn = {
                "calls": [
                    {"name": "get_price_history", "arguments": {"link": [link], "days": [30]}}
                ]
            }
        elif link % 2 == 0:
            question, calls = (
                f"What does link {link} cost in USD?",
                [
                    call("load_skill", {"name": "price-reply"}, "c1"),
                    call("get_price", {"link": link, "currency": "USD"}, "c2"),
                ],
            )
            turn = {
                "skills": ["price-reply"],
                "calls": [
                    {"name": "get_price", "arguments": {"link": [link], "currency": ["USD"]}}
                ],
            }
        else:
            question, calls = (
                f"How much is link {link}?",
                [call("get_price", {"link": link}, "c1")],
            )
            turn = {
                "calls": [
                    {"name": "get_price", "arguments": {"link": [link]}, "omittable": ["currency"]}
                ]
            }
        results = [
            {"role": "tool", "tool_call_id": c["id"], "content": json.dumps({"price": price})}
            for c in calls
        ]
        messages = [
            {"role": "user", "content": question},
            assistant(*calls),
            *results,
            {"role": "assistant", "content": f"Link {link}: {price}."},
        ]
        gold = {
            "turns": [
                {"at": 1, **turn},
                {"at": len(messages) - 1, "no_call": True, "reply": {"contains": [str(price)]}},
            ]
        }
        lines.append(
            json.dumps(
                {
                    "id": f"shop-{link}",
                    "harness": "shop",
                    "messages": messages,
                    "gold": gold,
                    "meta": {"category": "history" if link % 4 == 0 else "price"},
                }
            )
        )
    path = root / "episodes.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# What the tiny model writes, whatever it is asked: right for link 3 under the original harness,
# wrong wherever a variant renamed get_price or its parameter, and wrong on every other turn.
ANSWER = '<tool_call>{"name":"get_price","arguments":{"link":3}}</tool_call>'


def tool_calling_model(out: Path, episodes: Path, answer: str = ANSWER) -> Path:
    """A real Qwen2 checkpoint (1 layer, hidden size 64) whose greedy decoding writes ``answer``
    (ANSWER unless told) after any chat prompt. A random tiny model never writes a tool call and training one takes minutes
    on a CPU, so the weights are set: the layer adds nothing to the residual stream, so the
    logits depend on the last token alone, and the output head maps each token of ANSWER (and
    the generation prompt's last token) to the next with a wide margin. The tokenizer is
    hsa.trainers.tiny's, trained on the prompts and ANSWER (so ANSWER has no repeated token)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from hsa.trainers.tiny import build_tokenizer

    sources = load_sources(episodes, harness=None, trust_hooks=True).episodes
    items = [i for e in sources.values() for i in episode_items(e, "original")]
    tokenizer = build_tokenizer(
        [json.dumps([list(i.messages), list(i.tools)]) for i in items] + [answer] * 100,
        vocab_size=1000,
    )
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    opener = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}],
        tokenize=True,
        add_generation_prompt=True,
        return_dict=True,
    )["input_ids"][-1]
    chain = [opener, *tokenizer.encode(answer, add_special_tokens=False), tokenizer.eos_token_id]
    following = dict(pairwise(chain))
    assert len(following) == len(chain) - 1, "a token repeats in the answer: pick another"
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embeddings, head = model.model.embed_tokens.weight, model.lm_head.weight
        head.zero_()
        for token, successor in following.items():
            head[successor] += 10 * embeddings[token] / embeddings[token].norm()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> Path:
    return shop_episodes(tmp_path_factory.mktemp("shop"))


@pytest.fixture(scope="module")
def model_dir(shop, tmp_path_factory) -> Path:
    return tool_calling_model(tmp_path_factory.mktemp("tiny") / "model", shop)


@pytest.fixture(scope="module")
def server(model_dir, tmp_path_factory):
    """`transformers serve` on 127.0.0.1 with the tiny model: the base URL."""
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    binary = Path(sys.executable).parent / "transformers"
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            [str(binary), "serve", str(model_dir), "--host", "127.0.0.1", "--port", str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if json.loads(r.read()).get("status") == "ok":
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"transformers serve did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def eval_args(shop: Path, out: Path, datasets: Path, *extra: str) -> list[str]:
    return [
        "eval",
        "--episodes",
        str(shop),
        "--recipe",
        "hat-heldout",
        "--variants",
        "1",
        "--out",
        str(out),
        "--datasets-dir",
        str(datasets),
        "--trust-hooks",
        "--max-tokens",
        "24",
        *extra,
    ]


def served_args(server: str, model_dir: Path) -> list[str]:
    return [
        "--base-url",
        server,
        "--model",
        str(model_dir),
        "--max-retries",
        "0",
        "--concurrency",
        "2",
    ]


def journal_lines(folder: Path) -> list[dict]:
    return [orjson.loads(line) for line in (folder / PREDICTIONS_FILE).read_bytes().splitlines()]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("variants")


@pytest.fixture(scope="module")
def served(shop, server, model_dir, datasets, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("served") / "report"
    assert main(eval_args(shop, out, datasets, *served_args(server, model_dir))) == 0
    return out


def test_eval_against_transformers_serve_writes_the_report_and_plots(served, shop):
    report = read_report(served)
    assert list(report["sets"]) == ["all"] + FAMILIES
    assert report["original"]["turns"] == 16 and report["original"]["episodes"] == 8
    for name, s in report["sets"].items():
        assert s["episodes"] + s["episodes_without_variants"] == 8
        assert s["turns"] == sum(r["set"] == name for r in report["results"])
        assert s["family"] == (None if name == "all" else name)
    assert report["run"]["items"] == len(report["results"])
    # Every verdict is the scorer's on the journaled message, under the item's own harness.
    answers = {a["fingerprint"]: a for a in journal_lines(served) if "key" in a}
    sources = load_sources(shop, harness=None, trust_hooks=True).episodes
    for episode in sources.values():
        for item in episode_items(episode, "original"):
            result = next(r for r in report["results"] if r["key"] == item.key)
            assert (
                result["correct"]
                == judge(answers[item.fingerprint]["message"], item.gold, item.harness).correct
            )
    # The tiny model writes tool calls, and some are right.
    assert any(a["message"] and a["message"].get("tool_calls") for a in answers.values())
    assert 0 < report["original"]["accuracy"] < 1
    assert report["latency"]["e2e_s"]["n"] == report["requests"] == len(answers)
    assert report["latency"]["e2e_s"]["p99"] >= report["latency"]["e2e_s"]["p50"] > 0
    assert report["latency"]["output_tokens_per_s"] > 0
    assert report["run"]["hooks_checked"] and report["original"]["hook_compliance"]["n"] > 0
    text = (served / "report.md").read_text(encoding="utf-8")
    assert "| set | episodes | turns | accuracy |" in text and "| tool_schema (alone) |" in text
    # Harness variants that several episodes took are ranked, each with its listed lineage.
    ranked = {name: s["by_harness_variant"]["variants"] for name, s in report["sets"].items()}
    assert any(ranked.values()) and "## Harness variants" in text
    for name, variants in ranked.items():
        for variant, entry in variants.items():
            mine = [
                r for r in report["results"] if r["set"] == name and r["harness_variant"] == variant
            ]
            assert entry["turns"] == len(mine) and entry["episodes"] >= 2
            assert entry["lineages"] and f"`{variant}`" in text
    for png in ("accuracy_by_family.png", "failures_by_rule.png", "latency.png"):
        assert (served / png).read_bytes().startswith(b"\x89PNG") and f"({png})" in text


def test_a_rerun_asks_nothing_and_rewrites_the_same_report(
    served, shop, server, model_dir, datasets
):
    before = {
        name: (served / name).read_bytes()
        for name in ("report.json", "report.md", "accuracy_by_family.png", PREDICTIONS_FILE)
    }
    assert main(eval_args(shop, served, datasets, *served_args(server, model_dir))) == 0
    assert {name: (served / name).read_bytes() for name in before} == before


def test_other_settings_in_the_same_folder_are_refused(
    served, shop, server, model_dir, datasets, capsys
):
    args = eval_args(shop, served, datasets, *served_args(server, model_dir), "--limit", "3")
    assert main(args) == 2
    assert "other settings" in capsys.readouterr().err


def test_a_killed_run_resumes_without_asking_again(
    served, shop, server, model_dir, datasets, tmp_path
):
    out = tmp_path / "killed"
    # Streamed this time: time to first token is measured, and the verdicts must not change.
    args = eval_args(
        shop,
        out,
        datasets,
        *served_args(server, model_dir),
        "--concurrency",
        "1",
        "--families",
        "tool_schema",
        "--stream",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "hsa.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": ""},
    )
    journal = out / PREDICTIONS_FILE
    deadline = time.monotonic() + 300
    while not (journal.is_file() and journal.read_bytes().count(b"\n") >= 5):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done_before = {a["fingerprint"] for a in journal_lines(out) if "key" in a}
    assert not (out / "report.json").exists()
    assert main(args) == 0
    asked = [a["fingerprint"] for a in journal_lines(out) if "key" in a]
    assert len(asked) == len(set(asked))  # nothing asked twice
    assert done_before < set(asked)
    resumed, whole = read_report(out), read_report(served)
    assert list(resumed["sets"]) == ["all", "tool_schema"]
    # Greedy decoding: the verdicts of the uninterrupted run on the same items.
    assert resumed["results"] == [
        r for r in whole["results"] if r["set"] in ("original", "all", "tool_schema")
    ]
    ttft = resumed["latency"]["ttft_s"]
    assert ttft["n"] > 0 and ttft["p50"] <= resumed["latency"]["e2e_s"]["p50"]
    assert whole["latency"]["ttft_s"]["n"] == 0


@pytest.fixture(scope="module")
def in_process(shop, model_dir, datasets, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("inproc") / "report"
    assert (
        main(eval_args(shop, out, datasets, "--model-path", str(model_dir), "--batch-size", "16"))
        == 0
    )
    return out


def test_in_process_backend_gives_the_server_verdicts(served, in_process):
    """Same items, greedy: the same messages (text and tool calls) and so the same verdicts."""
    server_report, local_report = read_report(served), read_report(in_process)
    assert local_report["run"]["items_sha256"] == server_report["run"]["items_sha256"]
    assert local_report["results"] == server_report["results"]

    def comparable(message):
        if message is None:
            return None
        return (
            (message.get("content") or "").strip(),
            [
                (c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in message.get("tool_calls") or []
            ],
        )

    served_answers = {a["fingerprint"]: a for a in journal_lines(served) if "key" in a}
    local_answers = {a["fingerprint"]: a for a in journal_lines(in_process) if "key" in a}
    assert served_answers.keys() == local_answers.keys()
    for fingerprint, answer in served_answers.items():
        assert comparable(local_answers[fingerprint]["message"]) == comparable(answer["message"])


def test_compare_prints_the_paired_table_and_refuses_other_items(
    served, in_process, shop, model_dir, datasets, tmp_path, capsys
):
    capsys.readouterr()
    assert main(["eval", "compare", str(served), str(in_process), "--json"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    assert [r["set"] for r in comparison["rows"]] == ["original", "all"] + FAMILIES
    for row in comparison["rows"]:
        versus = row["versus_first"][0]
        assert versus["only_first"] == versus["only_this"] == 0 and versus["mcnemar_p"] == 1.0
        assert versus["diff"] == (0 if row["turns"] else None)  # a set may have no variant
    # The same verdicts under every harness variant both reports ranked, in the same order.
    ranked = {
        name: list(s["by_harness_variant"]["variants"])
        for name, s in read_report(served)["sets"].items()
        if s["by_harness_variant"]["variants"]
    }
    compared = comparison["harness_variants"]
    assert ranked and {name: list(h["variants"]) for name, h in compared.items()} == ranked
    for h in compared.values():
        assert h["median_drop"][0] == h["median_drop"][1] and (h["higher"], h["lower"]) == (
            [0],
            [0],
        )
        assert all(v["versus_first"][0]["diff"] == 0 for v in h["variants"].values())
        assert all(v["lineages"] for v in h["variants"].values())
    assert main(["eval", "compare", str(served), str(in_process)]) == 0
    printed = capsys.readouterr().out
    assert "McNemar p (b/c)" in printed and "| original | 16 |" in printed
    assert "Harness variants taken by 2+ episodes" in printed
    fewer = tmp_path / "fewer"
    assert (
        main(
            eval_args(
                shop,
                fewer,
                datasets,
                "--model-path",
                str(model_dir),
                "--limit",
                "3",
                "--families",
                "none",
            )
        )
        == 0
    )
    assert main(["eval", "compare", str(served), str(fewer)]) == 2
    assert "different items" in capsys.readouterr().err


def test_a_dataset_version_is_evaluated_as_it_is(served, model_dir, tmp_path):
    """--dataset: the version's rows as one set named after its recipe, the originals from the
    episodes its manifest names; the same verdicts as that family's set of the full run."""
    whole = read_report(served)
    version = Path(whole["sets"]["tool_schema"]["dataset"]["version_dir"])
    out = tmp_path / "dataset"
    assert (
        main(
            [
                "eval",
                "--dataset",
                str(version),
                "--model-path",
                str(model_dir),
                "--out",
                str(out),
                "--max-tokens",
                "24",
                "--trust-hooks",
            ]
        )
        == 0
    )
    report = read_report(out)
    assert list(report["sets"]) == ["hat-heldout.tool_schema"]

    def verdicts(results, set_name):
        return sorted(
            (r["source_id"], r["variant"], r["at"], r["correct"], r["rule"])
            for r in results
            if r["set"] == set_name
        )

    assert verdicts(report["results"], "original") == verdicts(whole["results"], "original")
    assert verdicts(report["results"], "hat-heldout.tool_schema") == verdicts(
        whole["results"], "tool_schema"
    )


@pytest.mark.parametrize(
    "answer, reason",
    [
        ('<tool_call>{"arguments":{"link":3}}</tool_call>', "a tool call without 'name'"),
        ('<tool_call>{"name":"get_price","arguments":{"link":3}</tool_call>', ""),
    ],
)
def test_an_unparsable_tool_call_is_an_item_without_answer_not_a_stopped_run(
    shop, tmp_path, answer, reason
):
    """A barely trained model writes tool calls the response parser refuses: one without "name"
    (transformers' parser raises KeyError) or JSON that does not close (ValueError), where
    transformers serve answers HTTP 500. Every item still gets its Answer, with no message and
    the reason, and the run goes on to the next batch."""
    from hsa.eval.backends import InProcessBackend

    model = tool_calling_model(tmp_path / "model", shop, answer=answer)
    episodes = load_sources(shop, harness=None, trust_hooks=True).episodes
    items = [i for e in episodes.values() for i in episode_items(e, "original")][:5]
    answers = []
    InProcessBackend(model, max_tokens=40, batch_size=2).answer(items, answers.append)
    assert sorted(a.key for a in answers) == sorted(i.key for i in items)
    for answer_ in answers:
        assert answer_.message is None and answer_.record is None
        assert answer_.error.startswith("the completion cannot be parsed: " + reason)
