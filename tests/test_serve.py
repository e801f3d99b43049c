"""Serving: vLLM command lines per model family (vLLM needs a GPU: a real start is attempted only
where it is installed), and a real `transformers serve` on 127.0.0.1 with a tiny local model,
started once per session by `hsa serve` itself, that rollouts and chat run against end to end
through the openai client. The tiny random model never calls a tool: these tests prove the
plumbing (requests, timings, tokens, versions, transcripts), not the model."""

from __future__ import annotations

import importlib.util
import json
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import HARNESS_YAML, PRICE_TOOL, SKILL_MD, write_harness

from hsa.cli import main
from hsa.errors import HsaError
from hsa.example import EPISODES_PATH
from hsa.rollout import RolloutSettings, rollout
from hsa.runtime import Endpoint, Sampling
from hsa.runtime.serve import ServeSpec, command, tool_call_parser

# Everything that imports torch runs in one process (make test runs pytest -n 2 --dist loadgroup).
pytestmark = pytest.mark.xdist_group("torch")

# ---- vLLM command lines ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model, parser",
    [
        ("Qwen/Qwen2.5-7B-Instruct", "hermes"),
        ("Qwen/Qwen3-4B", "hermes"),
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3_coder"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3_json"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral"),
    ],
)
def test_vllm_gets_the_tool_call_parser_of_the_model_family(model, parser):
    argv = command(ServeSpec(model=model, port=8123), display=True)
    assert argv[:3] == ["vllm", "serve", model]
    assert "--enable-auto-tool-choice" in argv
    assert argv[argv.index("--tool-call-parser") + 1] == parser
    assert argv[argv.index("--port") + 1] == "8123"


def test_a_local_checkpoint_is_recognised_by_its_config(tmp_path):
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"]})
    )
    assert tool_call_parser(str(tmp_path)) == "hermes"
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt_bigcode"}))
    with pytest.raises(HsaError, match="--tool-call-parser"):
        tool_call_parser(str(tmp_path))


def test_lora_adapters_chat_template_and_extra_arguments(tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"r": 64}))
    template = tmp_path / "tools.jinja"
    template.write_text("{{ messages }}")
    spec = ServeSpec(
        model="Qwen/Qwen3-4B",
        lora=(("hsa-sft", str(adapter)),),
        chat_template=str(template),
        served_model_name="base",
        extra=("--max-model-len", "16384"),
    )
    argv = command(spec, display=True)
    assert argv[argv.index("--enable-lora") + 1 : argv.index("--enable-lora") + 3] == [
        "--lora-modules",
        f"hsa-sft={adapter}",
    ]
    assert argv[argv.index("--max-lora-rank") + 1] == "64"  # above vLLM's default of 16
    assert argv[argv.index("--chat-template") + 1] == str(template)
    assert argv[-2:] == ["--max-model-len", "16384"]
    assert spec.client_models == ["base", "hsa-sft"]


def test_transformers_serve_has_no_adapters_and_no_parser():
    with pytest.raises(HsaError, match="transformers serve has no such option"):
        command(ServeSpec(model="m", engine="transformers", lora=(("a", "b"),)))
    with pytest.raises(HsaError, match="unknown engine"):
        command(ServeSpec(model="m", engine="tgi"))


@pytest.mark.parametrize(
    "spec, says",
    [
        (dict(port=0), "--port must be from 1 to 65535"),
        (dict(port=70000), "--port must be from 1 to 65535"),
        (dict(host="bad host"), "--host must be a host name"),
        (dict(host="[::1"), "--host must be a host name"),
        (dict(host="..."), "--host must be a host name"),
        (dict(extra=("--served_model_name", "x")), "--served-model-name after --"),
        (dict(extra=("--port", "9000")), "--port after --: give it as hsa serve's own"),
        (dict(extra=("--served-model-name=x",)), "--served-model-name after --"),
        (dict(served_model_name=" "), "--served-model-name must not be empty"),
        (dict(lora=(("a", "x/y"), ("a", "x/z"))), "'a' names two models"),
        (dict(served_model_name="a", lora=(("a", "x/y"),)), "'a' names two models"),
        (dict(lora=(("a", "/no/such/adapter"),)), "the adapter folder does not exist"),
    ],
)
def test_what_would_serve_elsewhere_than_printed_is_refused(spec, says):
    """The printed base URL and model names are what clients use: nothing may change them
    behind hsa serve's back, and two models may not share a name."""
    with pytest.raises(HsaError, match=re.escape(says)):
        command(ServeSpec(model="Qwen/Qwen3-4B", **spec))
    # an adapter id that is not a local path may be the Hub's
    spec = ServeSpec(model="Qwen/Qwen3-4B", lora=(("a", "org/adapter"),))
    assert "a=org/adapter" in command(spec)
    # IPv6 addresses are bracketed in the URL, and the wildcard one is reached on the loopback
    assert ServeSpec(model="m", host="::").base_url == "http://[::1]:8000/v1"
    assert ServeSpec(model="m", host="fe80::1").base_url == "http://[fe80::1]:8000/v1"


def test_serve_dry_run_prints_the_command_and_what_clients_send(capsys):
    assert (
        main(
            [
                "serve",
                "Qwen/Qwen3-4B",
                "--lora",
                "hsa=out/adapter",
                "--port",
                "8200",
                "--dry-run",
                "--",
                "--gpu-memory-utilization",
                "0.9",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert printed.splitlines()[0] == (
        "vllm serve Qwen/Qwen3-4B --host 127.0.0.1 --port 8200 --enable-auto-tool-choice "
        "--tool-call-parser hermes --enable-lora --lora-modules hsa=out/adapter "
        "--gpu-memory-utilization 0.9"
    )
    assert "http://127.0.0.1:8200/v1" in printed and "'hsa'" in printed
    assert main(["serve", "m", "--lora", "no-path", "--dry-run"]) == 2


@pytest.mark.skipif(
    importlib.util.find_spec("vllm") is not None,
    reason="vllm is installed: the real start below runs instead",
)
def test_without_vllm_serve_says_how_to_get_it(capsys):
    assert main(["serve", "Qwen/Qwen3-4B", "--port", str(_free_port())]) == 2
    assert "vllm is not installed" in capsys.readouterr().err


@pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None,
    reason="vllm has no CPU wheel; it is installed only in GPU environments",
)
def test_vllm_starts_with_tool_calling_where_it_is_installed(tiny_model):
    from hsa.runtime.serve import ServerProcess

    spec = ServeSpec(model=str(tiny_model), port=_free_port(), tool_call_parser="hermes")
    with ServerProcess(spec) as server:
        server.wait_healthy(900)


# ---- a real transformers serve ---------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    from hsa.trainers.tiny import save_tiny_model

    corpus = EPISODES_PATH.read_text(encoding="utf-8").splitlines()[:60] + [SKILL_MD]
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus, vocab_size=1024)


@pytest.fixture(scope="session")
def served(tiny_model):
    """`hsa serve MODEL --engine transformers` in a subprocess, once per session; stopped with
    Ctrl-C (SIGINT) at the end, which must stop the server cleanly."""
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hsa.cli",
            "serve",
            str(tiny_model),
            "--engine",
            "transformers",
            "--port",
            str(port),
            "--timeout",
            "120",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("ready:") or process.poll() is not None:
            break
    assert lines and lines[-1].startswith("ready:"), "".join(lines)
    spec = ServeSpec(model=str(tiny_model), engine="transformers", port=port)
    assert f"base URL {spec.base_url}" in lines[-1] and repr(str(tiny_model)) in lines[-1]
    yield spec
    process.send_signal(signal.SIGINT)
    rest = process.communicate(timeout=60)[0]
    assert process.returncode == 0 and "stopped" in rest, rest
    from hsa.runtime.serve import healthy

    assert not healthy(spec.base_url)


@pytest.fixture
def shop(tmp_path) -> Path:
    """A small harness without hooks (the random model's replies end each turn), episodes
    beside it."""
    yaml_text = HARNESS_YAML.split("hooks:")[0]
    write_harness(
        tmp_path / "shop", harness_yaml=yaml_text, hooks=None, tools={"a_price.json": PRICE_TOOL}
    )
    rows = [
        {
            "id": f"q{n}",
            "harness": "shop",
            "messages": [{"role": "user", "content": f"How much is link {n}?"}],
            "gold": {
                "calls": [
                    {"name": "get_price", "arguments": {"link": [n]}, "omittable": ["currency"]}
                ]
            },
        }
        for n in (1, 2, 3)
    ]
    (tmp_path / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_a_rollout_against_transformers_serve_writes_a_version(served, shop):
    endpoint = Endpoint(
        served.base_url,
        served.model,
        stream=True,
        sampling=Sampling(temperature=0.0, max_tokens=12),
        max_retries=1,
    )
    result = rollout(
        None,
        shop / "episodes.jsonl",
        shop / "out",
        settings=RolloutSettings(endpoint, concurrency=2, max_steps=2),
    )
    summary = result.manifest["rollout"]
    assert summary["trajectories"] == 3 == summary["kept"] + summary["discarded"]
    assert result.manifest["counts"]["input_lines"] == 3
    requests = summary["requests"]
    assert requests["requests"] >= 3 and requests["prompt_tokens"] > 100
    assert 0 < requests["completion_tokens"] <= 12 * requests["requests"]
    assert requests["ttft_s"]["n"] == requests["requests"] and requests["e2e_s"]["p50"] > 0
    for entry in pq.read_table(result.path / "rollouts.parquet").to_pylist():
        trajectory = json.loads(entry["trajectory"])
        assert trajectory["messages"][0] == {
            "role": "user",
            "content": f"How much is link {entry['id'][1]}?",
        }
        assert all(r["ttft_s"] <= r["latency_s"] for r in trajectory["requests"])
    # the random model answers in text: the gold expects a call, so the scorer says why not
    rejects = pq.read_table(result.path / "rejects.parquet").to_pylist()
    assert len(rejects) == summary["discarded"]
    assert all(r["stage"].startswith(("judge:", "rollout:")) and r["reason"] for r in rejects)


def test_chat_against_transformers_serve_shows_the_turn_with_timings(served, shop, capsys):
    code = main(
        [
            "chat",
            "--harness",
            str(shop / "shop"),
            "--base-url",
            served.base_url,
            "--model",
            served.model,
            "--message",
            "How much is link 3?",
            "--max-tokens",
            "8",
            "--stream",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert printed.startswith("user: How much is link 3?")
    assert "assistant" in printed and "TTFT" in printed and "tokens]" in printed
    assert printed.rstrip().endswith("-- done")


def test_the_exact_model_string_is_required_and_said_so(served, shop, capsys):
    code = main(
        [
            "chat",
            "--harness",
            str(shop / "shop"),
            "--base-url",
            served.base_url,
            "--model",
            "tiny",
            "--message",
            "hi",
        ]
    )
    assert code == 2
    assert f"it serves: {served.model}" in capsys.readouterr().err
