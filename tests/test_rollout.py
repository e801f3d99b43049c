"""Teacher rollouts: judged trajectories written as dataset versions, resumable after a kill.

The teacher is tests/openai_stub.py's scripted server (a boundary stand-in: no model on this
machine solves these episodes). It replays each variant's recorded assistant messages, and plants a
wrong argument in some, so both kept and discarded trajectories are known in advance. The
real-model path is in test_serve.py.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import PRICE_TOOL, assistant, write_harness
from conftest import call as tool_call
from openai_stub import PerConversation, Reply, ScriptedServer, calls, replay_plans, status, text

from hsa.augment.recipe import load_recipe
from hsa.dataset.card import card_text
from hsa.dataset.generate import generate
from hsa.dataset.rows import ROW_SCHEMA
from hsa.errors import HooksNotTrustedError, HsaError
from hsa.example import EPISODES_PATH, HARNESS_DIR
from hsa.model.episode import Episode, read_episodes
from hsa.rollout import RolloutSettings, rollout, rollout_recipe, script_of
from hsa.rollout.journal import Journal
from hsa.runtime import Endpoint, FaultPlan

MODEL = "scripted-teacher"
RECIPE = rollout_recipe(load_recipe("hat-train"), variants=1)
PER_CATEGORY = 3


@pytest.fixture(scope="module")
def episodes(tmp_path_factory) -> Path:
    """A few demo episodes of each category, beside a copy of the example harness."""
    folder = tmp_path_factory.mktemp("episodes")
    shutil.copytree(HARNESS_DIR, folder / "harness")
    path = folder / "episodes.jsonl"
    taken: Counter = Counter()
    lines = []
    for line in EPISODES_PATH.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        category = row["meta"]["category"]
        if taken[category] < PER_CATEGORY:
            taken[category] += 1
            lines.append(json.dumps(row, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def plans(episodes):
    """(the teacher's plans, the ids where it makes a mistake)."""
    return replay_plans(str(episodes), RECIPE, mistake_every=4)


def settings(server, **kw) -> RolloutSettings:
    endpoint = Endpoint(server.base_url, MODEL, max_retries=kw.pop("retries", 0), backoff_s=0.01)
    return RolloutSettings(endpoint=endpoint, concurrency=kw.pop("concurrency", 4), **kw)


@pytest.fixture(scope="module")
def version(episodes, plans, tmp_path_factory):
    out = tmp_path_factory.mktemp("rollout")
    with ScriptedServer(PerConversation(plans[0]), model=MODEL) as server:
        result = rollout(RECIPE, episodes, out, settings=settings(server), trust_hooks=True)
        again = rollout(RECIPE, episodes, out, settings=settings(server), trust_hooks=True)
    assert again.reused and again.path == result.path
    return result


def read_rows(result) -> list[dict]:
    return pq.read_table(result.path / result.manifest["shards"][0]["path"]).to_pylist()


def test_a_rollout_writes_a_version_with_kept_and_discarded_trajectories(version, plans):
    manifest, summary = version.manifest, version.manifest["rollout"]
    planned, mistaken = plans
    assert summary["trajectories"] == len(planned) == 2 * 5 * PER_CATEGORY
    assert summary["discarded"] == len(mistaken) > 0
    assert summary["kept"] == manifest["counts"]["rows"] == len(planned) - len(mistaken)
    assert summary["discarded_by_stage"] == {"judge:value_mismatch": len(mistaken)}
    rejects = pq.read_table(version.path / "rejects.parquet").to_pylist()
    assert {f"{r['id']}#{r['variant']}" for r in rejects} == mistaken
    assert all("gold turn at=" in r["reason"] and r["lineage"] is not None for r in rejects)
    counts = manifest["counts"]
    assert (
        counts["sources_out"] + counts["sources_all_rejected"] + counts["load_rejects"]
        == counts["input_lines"]
        == 5 * PER_CATEGORY
    )
    assert manifest["kind"] == "rollout" and manifest["recipe"] == RECIPE.to_dict()
    assert summary["model"] == MODEL and summary["endpoint"]["base_url"].startswith("http://")
    assert summary["sampling"] == {
        "temperature": 0.0,
        "top_p": None,
        "max_tokens": None,
        "seed": None,
    }
    assert summary["requests"]["requests"] > summary["trajectories"]
    assert summary["requests"]["prompt_tokens"] > 0 and summary["requests"]["e2e_s"]["p95"] > 0
    # the card's row shape, tallied as the rows were written, is that of the written shards
    card = (version.path / "README.md").read_text(encoding="utf-8")
    assert card_text(version.path, manifest=manifest) == card
    assert "Variants per source: none" not in card


def test_kept_rows_are_the_rows_generate_makes_when_the_teacher_replays_the_recording(
    version, episodes, plans, tmp_path
):
    """Same columns, and the same conversation as `hsa generate` renders for that variant: the
    runtime rebuilt every skill body, tool result and hook message, and re-indexed the gold."""
    generated = generate(RECIPE, episodes, tmp_path, trust_hooks=True)
    by_id = {r["id"]: r for r in pq.read_table(generated.path / "data").to_pylist()}
    rows = read_rows(version)
    assert (
        pq.read_schema(version.path / version.manifest["shards"][0]["path"]).remove_metadata()
        == ROW_SCHEMA
    )
    assert len(rows) == version.manifest["counts"]["rows"]
    for row in rows:
        twin = by_id[row["id"]]
        for column in ("messages", "tools", "hsa_lineage", "hsa_mapping", "hsa_gold"):
            assert json.loads(row[column]) == json.loads(twin[column]), (row["id"], column)
        assert row["hsa_families"] == twin["hsa_families"]
        assert row["hsa_harness_variant"] == twin["hsa_harness_variant"]
        assert row["hsa_version"] == version.manifest["version"]
    assert [r["id"] for r in rows] == [i for i in by_id if i not in plans[1]]
    # The pool's harness variants are named (variants, not originals) and listed with their
    # lineage as generate lists them: the kept rows' variants, no more.
    taken = {r["hsa_harness_variant"] for r in rows if r["hsa_variant"] > 0}
    assert None not in taken and all(
        r["hsa_harness_variant"] is None for r in rows if r["hsa_variant"] == 0
    )
    listed = pq.read_table(version.path / version.manifest["harness_variants"]["path"]).to_pylist()
    generated_listing = pq.read_table(
        generated.path / generated.manifest["harness_variants"]["path"]
    ).to_pylist()
    assert {e["harness_variant"] for e in listed} == taken
    assert all(entry in generated_listing for entry in listed)
    assert version.manifest["statistics"]["harness_variants"]["count"] == len(taken)


def test_every_trajectory_is_recorded_with_its_requests(version):
    table = pq.read_table(version.path / "rollouts.parquet").to_pylist()
    assert len(table) == version.manifest["rollout"]["trajectories"]
    for entry in table:
        trajectory = json.loads(entry["trajectory"])
        assert entry["requests"] == len(trajectory["requests"]) > 0
        assert all(
            r["latency_s"] > 0 and r["completion_tokens"] > 0 for r in trajectory["requests"]
        )
        assert entry["kept"] == (entry["stage"] is None)
        # a discarded trajectory stopped at the step that failed
        if not entry["kept"]:
            assert trajectory["status"] == "stopped"


def test_kept_rows_load_as_conversations(version):
    from datasets import load_dataset

    ds = load_dataset("parquet", data_files=str(version.path / "data/*.parquet"))["train"]
    row = ds[0]
    assert row["messages"][0]["role"] == "system" and row["tools"][0]["type"] == "function"
    calls_ = [m for m in row["messages"] if m.get("tool_calls")]
    assert isinstance(calls_[0]["tool_calls"][0]["function"]["arguments"], dict)


def test_verify_checks_each_row_against_its_trajectory_harness_and_gold(version, episodes):
    from hsa.cli import main
    from hsa.rollout.audit import RowCheck

    assert main(["verify", str(version.path), "--episodes", str(episodes), "--trust-hooks"]) == 0
    check = RowCheck(version.path, version.manifest)
    sources = {e.id: e for e in read_episodes(episodes, trust_hooks=True) if isinstance(e, Episode)}
    row = next(r for r in read_rows(version) if r["hsa_variant"] == 1)
    source = sources[row["hsa_source_id"]]
    assert check(source, row) == []
    messages = json.loads(row["messages"])
    messages[-1] = {**messages[-1], "content": messages[-1]["content"] + " (edited)"}
    assert check(source, {**row, "messages": json.dumps(messages)}) == [
        f"{row['id']}: messages are not its trajectory rendered under its harness"
    ]
    assert "tools differs" in check(source, {**row, "tools": "[]"})[0]
    other = row["hsa_harness_variant"].rpartition(":")[0] + ":999"
    assert check(source, {**row, "hsa_harness_variant": other}) == [
        f"{row['id']}: hsa_harness_variant differs from the variant its lineage rebuilds"
    ]
    gold = json.loads(row["hsa_gold"])
    turns = gold["turns"]
    turns[0], turns[-1] = {**turns[0], "at": turns[-1]["at"]}, {**turns[-1], "at": turns[0]["at"]}
    assert check(source, {**row, "hsa_gold": json.dumps(gold)})  # turns judging other steps
    # A kept trajectory whose call does not fit its tool (as an older hsa could keep one): the
    # rollout's own rule, rechecked.
    tool = json.loads(row["tools"])[0]["function"]["name"]
    check.conversations[row["id"]] += [
        assistant(tool_call(tool, {"zzz": 1}, "unjudged")),
        {"role": "tool", "tool_call_id": "unjudged", "content": "{}"},
    ]
    problems = check(source, row)
    assert any("does not fit the tool's schema" in p for p in problems), problems


def test_replay_checks_a_rollout_row_instead_of_calling_it_different(version, episodes, capsys):
    """A rollout row's conversation is the teacher's, so it cannot be rebuilt from its source:
    replay checks it as verify does (harness from the lineage, messages from the trajectory,
    gold passing) and says which, instead of reporting every row as differing."""
    from hsa.cli import main

    row = next(r for r in read_rows(version) if r["hsa_variant"] == 1)["id"]
    args = ["replay", str(version.path), "--id", row, "--episodes", str(episodes), "--trust-hooks"]
    assert main(args) == 0
    assert "conversation is the teacher's trajectory" in capsys.readouterr().out
    shard = version.path / version.manifest["shards"][0]["path"]
    table = pq.read_table(shard)
    rows = table.to_pylist()
    for r in rows:
        if r["id"] == row:
            r["tools"] = "[]"
    edited = version.path.parent / "edited"
    shutil.copytree(version.path, edited)
    pq.write_table(
        pa.Table.from_pylist(rows, schema=table.schema), edited / shard.relative_to(version.path)
    )
    assert main([*args[:1], str(edited), *args[2:]]) == 1
    assert "does not check out" in capsys.readouterr().err


def test_verify_names_a_pooled_rollout_written_before_it_listed_its_harness_variants(
    version, episodes, tmp_path
):
    from hsa.rollout.audit import audit_rollout

    old = tmp_path / "old"
    shutil.copytree(version.path, old)
    manifest = json.loads((old / "manifest.json").read_text())
    (old / manifest.pop("harness_variants")["path"]).unlink()
    del manifest["seal"]  # as an hsa that sealed none wrote it
    (old / "manifest.json").write_text(json.dumps(manifest))
    report = audit_rollout(old, episodes=episodes, trust_hooks=True)
    assert (
        "harness_variants.parquet: the manifest lists none, though the recipe has a pool of "
        "harness variants (made by an older hsa: hsa rollout makes a new version (it re-runs the "
        "teacher))"
    ) in report.problems
    # Its rows carry no variant: named once above, not as a differing column on every row.
    from hsa.rollout.audit import RowCheck

    sources = {e.id: e for e in read_episodes(episodes, trust_hooks=True) if isinstance(e, Episode)}
    row = next(r for r in read_rows(version) if r["hsa_harness_variant"] is not None)
    old_row = {**row, "hsa_harness_variant": None}
    assert RowCheck(old, manifest)(sources[row["hsa_source_id"]], old_row) == []
    assert RowCheck(version.path, version.manifest)(sources[row["hsa_source_id"]], old_row) == [
        f"{row['id']}: hsa_harness_variant differs from the variant its lineage rebuilds"
    ]


# ---- resume ----------------------------------------------------------------------------------


def _cli(*args) -> list[str]:
    return [sys.executable, "-m", "hsa.cli", *args]


def rollout_args(episodes: Path, base_url: str, out: Path) -> list[str]:
    """``hsa rollout`` of ``episodes`` against the scripted teacher into ``out``, hooks trusted."""
    return [
        "rollout",
        "--episodes",
        str(episodes),
        "--base-url",
        base_url,
        "--model",
        MODEL,
        "--out",
        str(out),
        "--trust-hooks",
    ]


def test_a_rollout_killed_halfway_resumes_without_redoing_and_writes_the_same_rows(
    episodes, tmp_path
):
    plans, mistaken = replay_plans(str(episodes), mistake_every=3)  # the originals only
    slow = {k: [Reply(r.content, r.tool_calls, delay_s=0.01) for r in v] for k, v in plans.items()}
    killed = tmp_path / "killed"
    with ScriptedServer(PerConversation(slow), model=MODEL) as server:
        process = subprocess.Popen(
            _cli(
                *rollout_args(episodes, server.base_url, killed),
                "--concurrency",
                "2",
                "--retries",
                "0",
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        journals = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            journals = list(killed.glob("*/.*.journal.jsonl"))
            if journals and journals[0].read_bytes().count(b"\n") > len(slow) // 2:
                break
            time.sleep(0.02)
        assert process.poll() is None, process.stderr.read().decode()[-2000:]
        process.send_signal(signal.SIGKILL)
        process.wait()
    lines = journals[0].read_bytes().splitlines()
    done = {json.loads(line)["id"] for line in lines[1:] if line.strip()}
    assert len(slow) // 2 <= len(done) < len(slow)
    assert not list(killed.glob("*/[!.]*"))  # no version was published

    with ScriptedServer(PerConversation(plans), model=MODEL) as server:
        resumed = rollout(None, episodes, killed, settings=settings(server), trust_hooks=True)
        asked = server.conversations()
    assert resumed.resumed == len(done) and not resumed.reused
    assert asked.isdisjoint(done) and asked | done == set(plans)
    assert not journals[0].exists()  # removed once the version is published

    with ScriptedServer(PerConversation(plans), model=MODEL) as server:
        uninterrupted = rollout(
            None,
            episodes,
            tmp_path / "whole",
            trust_hooks=True,
            settings=settings(server, concurrency=5),
        )
    assert resumed.manifest["version"] == uninterrupted.manifest["version"]
    for key in ("shards", "rejects"):
        assert resumed.manifest[key] == uninterrupted.manifest[key]  # paths, rows, sha256
    assert resumed.manifest["counts"] == uninterrupted.manifest["counts"]
    assert resumed.manifest["rollout"]["discarded"] == len(mistaken) > 0


def test_the_journal_keeps_complete_lines_and_cuts_a_torn_one(tmp_path):
    path = tmp_path / ".v.journal.jsonl"
    journal = Journal(path, {"version": "v"})
    assert journal.open() == {}
    journal.append({"id": "a#0", "kept": True})
    journal.append({"id": "b#0", "kept": False})
    with pytest.raises(HsaError, match="another run"):
        Journal(path, {"version": "v"}).open()
    journal.close()
    with open(path, "ab") as handle:
        handle.write(b'{"id": "c#0", "ke')  # killed during a write
    again = Journal(path, {"version": "v"})
    assert set(again.open()) == {"a#0", "b#0"}
    again.append({"id": "c#0", "kept": True})
    again.close()
    assert [json.loads(line)["id"] for line in path.read_bytes().splitlines()[1:]] == [
        "a#0",
        "b#0",
        "c#0",
    ]
    with pytest.raises(HsaError, match="another rollout"):
        Journal(path, {"version": "w"}).open()


def test_an_endpoint_that_stays_down_stops_the_run_and_a_rerun_finishes(episodes, plans, tmp_path):
    down = {k: [status(503)] * 10 for k in plans[0]}
    with ScriptedServer(PerConversation(down), model=MODEL) as server:
        with pytest.raises(HsaError, match="rerun the same command"):
            rollout(
                RECIPE, episodes, tmp_path, settings=settings(server, retries=1), trust_hooks=True
            )
        assert len(server.conversations()) <= 4  # the run stopped instead of trying them all
    assert not [p for p in tmp_path.glob("*/*") if not p.name.startswith(".")]
    with ScriptedServer(PerConversation(plans[0]), model=MODEL) as server:
        result = rollout(RECIPE, episodes, tmp_path, settings=settings(server), trust_hooks=True)
    assert result.manifest["rollout"]["trajectories"] == len(plans[0])


def two_greetings(folder: Path) -> Path:
    """Two greetings (q1, q2: no call expected) under a one-tool harness in ``folder``."""
    write_harness(folder / "shop", tools={"a_price.json": PRICE_TOOL})
    rows = [
        {
            "id": f"q{n}",
            "harness": "shop",
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Hello!"},
            ],
            "gold": {"at": 1, "no_call": True},
        }
        for n in (1, 2)
    ]
    episodes = folder / "episodes.jsonl"
    episodes.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return episodes


def test_a_request_the_server_fails_on_is_that_trajectorys_and_the_run_goes_on(tmp_path):
    """`transformers serve` answers 500 to a tool call it cannot parse, every time: the run
    stopped at that request, and every rerun stopped there again, so no version was ever
    written. A 500 after the retries is that trajectory's (discarded, with the server's reason);
    a server that is down or busy (503, 429, no connection) still stops the run."""
    episodes = two_greetings(tmp_path)
    plans = {"q1#0": [status(500)] * 3, "q2#0": [text("Hello!")]}
    with ScriptedServer(PerConversation(plans), model=MODEL) as server:
        result = rollout(
            None, episodes, tmp_path / "out", settings=settings(server, retries=1), trust_hooks=True
        )
    assert (result.manifest["rollout"]["kept"], result.manifest["rollout"]["discarded"]) == (1, 1)
    rejects = pq.read_table(result.path / "rejects.parquet").to_pylist()
    assert [(r["id"], r["stage"]) for r in rejects] == [("q1", "rollout:endpoint")]


def test_a_base_url_without_its_api_root_is_said_as_the_setting_to_fix(episodes, plans, tmp_path):
    """A base URL without "/v1" gets a 404 for every request: the run said "rerun the same
    command to finish the rest", which would fail the same way; it says what to fix."""
    with ScriptedServer(PerConversation(plans[0]), model=MODEL) as server:
        root = server.base_url.removesuffix("/v1")
        endpoint = Endpoint(root, MODEL, max_retries=0)
        with pytest.raises(HsaError, match=r"ends in /v1") as caught:
            rollout(
                RECIPE,
                episodes,
                tmp_path,
                settings=RolloutSettings(endpoint=endpoint),
                trust_hooks=True,
            )
    assert "rerun the same command" not in str(caught.value)


def test_an_endpoint_that_refuses_every_request_publishes_nothing(episodes, plans, tmp_path):
    """A server not set up for tool calls answers every request with a 400: no version of that
    is written (a rerun would reuse it once the server is fixed), and the rerun asks again."""
    refusing = {k: [status(400)] * 10 for k in plans[0]}
    with (
        ScriptedServer(PerConversation(refusing), model=MODEL) as server,
        pytest.raises(HsaError, match="refused every trajectory's request"),
    ):
        rollout(RECIPE, episodes, tmp_path, settings=settings(server), trust_hooks=True)
    assert not list(tmp_path.glob("*/*"))  # no version, and no journal to resume from
    with ScriptedServer(PerConversation(plans[0]), model=MODEL) as server:
        result = rollout(RECIPE, episodes, tmp_path, settings=settings(server), trust_hooks=True)
    assert not result.reused and result.manifest["rollout"]["kept"] > 0


def test_setup_errors_stop_before_any_trajectory(episodes, plans, tmp_path):
    with ScriptedServer(PerConversation(plans[0]), model=MODEL) as server:
        wrong = RolloutSettings(Endpoint(server.base_url, "other-model", max_retries=0))
        with pytest.raises(HsaError, match="does not serve model 'other-model'"):
            rollout(None, episodes, tmp_path, settings=wrong, trust_hooks=True)
        with pytest.raises(HooksNotTrustedError):
            rollout(None, episodes, tmp_path, settings=settings(server))
        assert server.conversations() == set()


# ---- where gold judges a trajectory ------------------------------------------------------------


def test_gold_turns_judge_steps_by_user_turn_and_accepted_position():
    by_id = {
        e.id: e for e in read_episodes(EPISODES_PATH, trust_hooks=True) if isinstance(e, Episode)
    }
    # at=1 call, at=3 reply sent back by a hook, at=5 skill load, at=7 reply
    script = script_of(by_id["lc-hook-retry-002"])
    assert {place: turn.at for place, (_, turn) in script.judged.items()} == {
        (0, 0): 1,
        (0, 1): 5,
        (0, 2): 7,
    }
    assert script.last == (0, 2) and len(script.users) == 1
    # a blocked call (answered by hook.tool_arguments) is not a position either
    script = script_of(by_id["lc-hook-retry-001"])
    assert {place: turn.at for place, (_, turn) in script.judged.items()} == {
        (0, 0): 1,
        (0, 1): 5,
        (0, 2): 8,
    }


# ---- other domains: BFCL, a harness with tool code, faults -------------------------------------


def test_bfcl_episodes_roll_out_to_their_judged_call(bfcl_data, tmp_path):
    from hsa.importers.bfcl import import_bfcl

    imported = import_bfcl(bfcl_data / "BFCL_v4_parallel.json")
    chosen = imported.episodes[:12]
    path = tmp_path / "parallel.jsonl"
    path.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in chosen))

    def answer(episode, wrong: bool) -> Reply:
        pairs = []
        for call in episode.gold.turns[0].calls:
            args = {
                k: next(v for v in values if v != "")
                for k, values in call.arguments.items()
                if any(v != "" for v in values)
            }
            pairs.append((call.name, args))
        if wrong:
            pairs = pairs[:-1]
        return calls(*pairs)

    plans = {f"{e.id}#0": [answer(e, i % 4 == 3)] for i, e in enumerate(chosen)}
    with ScriptedServer(PerConversation(plans), model=MODEL) as server:
        result = rollout(None, path, tmp_path / "out", settings=settings(server))
    summary = result.manifest["rollout"]
    assert (summary["kept"], summary["discarded"]) == (9, 3)
    assert summary["discarded_by_stage"] == {"judge:wrong_call_count": 3}
    for row in read_rows(result):
        messages = json.loads(row["messages"])
        gold = json.loads(row["hsa_gold"])
        # the conversation ends with the judged call: nothing was made up after it
        assert messages[-1]["role"] == "assistant" and messages[-1]["tool_calls"]
        # gold indexes the conversation (the system prompt is rendered in front of it)
        assert messages[0]["role"] == "system" and gold["at"] == len(messages) - 2


TOOLS_PY = """
def get_price(link, currency="CNY"):
    return {"link": link, "price": 100 + link, "currency": currency}
"""


def test_a_harness_with_tool_code_and_injected_faults(tmp_path):
    write_harness(tmp_path / "shop", tools={"a_price.json": PRICE_TOOL})
    code = tmp_path / "tools.py"
    code.write_text(TOOLS_PY)
    episodes = tmp_path / "episodes.jsonl"
    # recorded with a stale price: the tool code answers first, the replay only what it lacks
    rows = [
        {
            "id": f"q{n}",
            "harness": "shop",
            "messages": [
                {"role": "user", "content": f"price of {n}?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_price", "arguments": json.dumps({"link": n})},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": '{"price": 1}'},
                {"role": "assistant", "content": f"It is {100 + n}."},
            ],
            "gold": {
                "turns": [
                    {
                        "at": 1,
                        "calls": [
                            {
                                "name": "get_price",
                                "arguments": {"link": [n]},
                                "omittable": ["currency"],
                            }
                        ],
                    },
                    {"at": 3, "no_call": True, "reply": {"contains": [str(100 + n)]}},
                ]
            },
        }
        for n in range(1, 7)
    ]
    episodes.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plans = {
        f"q{n}#0": [calls(("get_price", {"link": n})), text(f"It is {100 + n}.")]
        for n in range(1, 7)
    }
    with ScriptedServer(PerConversation(plans), model=MODEL) as server:
        plain = rollout(
            None,
            episodes,
            tmp_path / "out",
            trust_hooks=True,
            settings=settings(server, tool_code=str(code)),
        )
    results = [json.loads(r["messages"])[3]["content"] for r in read_rows(plain)]
    assert results == [
        json.dumps({"link": n, "price": 100 + n, "currency": "CNY"}, separators=(",", ":"))
        for n in range(1, 7)
    ]
    assert plain.manifest["rollout"]["kept"] == 6

    with ScriptedServer(PerConversation(plans), model=MODEL) as server:
        faulted = rollout(
            None,
            episodes,
            tmp_path / "out",
            trust_hooks=True,
            settings=settings(
                server, tool_code=str(code), faults=FaultPlan.parse("permission_denied=0.5", seed=1)
            ),
        )
    assert faulted.manifest["version"] != plain.manifest["version"]
    trajectories = [
        json.loads(r["trajectory"])
        for r in pq.read_table(faulted.path / "rollouts.parquet").to_pylist()
    ]
    sources = Counter(t["source"] for tr in trajectories for t in tr["tools"])
    assert sources["fault:permission_denied"] > 0 and sources["code"] > 0
    assert faulted.manifest["rollout"]["faults"] == {
        "rates": {"permission_denied": 0.5},
        "tools": [],
        "seed": 1,
    }


def test_a_kept_trajectory_holds_only_calls_that_fit_their_tools(tmp_path):
    """The gold judged only the final reply, and the teacher's call on the way passed a string
    for an integer and a parameter the tool does not have: the row was kept (and verified),
    though generate refuses the same conversation as a source (check:call_schema). A teacher's
    row is held to the rules of a source episode."""
    write_harness(tmp_path / "shop", tools={"a_price.json": PRICE_TOOL})
    episodes = tmp_path / "episodes.jsonl"
    row = {
        "id": "q1",
        "harness": "shop",
        "messages": [
            {"role": "user", "content": "price of 3?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_price", "arguments": json.dumps({"link": 3})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"price": 159}'},
            {"role": "assistant", "content": "It is 159."},
        ],
        "gold": {"turns": [{"at": 3, "no_call": True, "reply": {"contains": ["159"]}}]},
    }
    good = {**row, "id": "q2"}
    episodes.write_text(json.dumps(row) + "\n" + json.dumps(good) + "\n")
    plans = {
        "q1#0": [calls(("get_price", {"link": "3", "pin": "1234"})), text("It is 159.")],
        "q2#0": [calls(("get_price", {"link": 3})), text("It is 159.")],
    }
    with ScriptedServer(PerConversation(plans), model=MODEL) as server:
        result = rollout(
            None, episodes, tmp_path / "out", settings=settings(server), trust_hooks=True
        )
    summary = result.manifest["rollout"]
    assert (summary["kept"], summary["discarded"]) == (1, 1)
    rejects = pq.read_table(result.path / "rejects.parquet").to_pylist()
    assert [(r["id"], r["stage"]) for r in rejects] == [("q1", "rollout:row")]
    assert "does not fit the tool's schema" in rejects[0]["reason"]


def test_a_rollout_whose_lines_mostly_fail_to_load_exits_1_and_says_why(tmp_path, capsys):
    """9 of 10 lines failed to load and the one left was kept: rollout said "9 lines rejected on
    load", gave no reason, and exited 0, where generate on the same file exits 1 with the
    reasons. The share of lines rejected on load counts, as generate counts it."""
    from hsa.cli import main

    write_harness(tmp_path / "shop", tools={"a_price.json": PRICE_TOOL})
    good = {
        "id": "q1",
        "harness": "shop",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hi!"}],
        "gold": {"at": 1, "no_call": True},
    }
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text(json.dumps(good) + "\n{not json\n" + '{"id": "q2", "harness": "nowhere"}\n')
    with ScriptedServer(PerConversation({"q1#0": [text("Hi!")]}), model=MODEL) as server:
        code = main(rollout_args(episodes, server.base_url, tmp_path / "out"))
    printed = capsys.readouterr()
    assert code == 1
    assert "66.7% of the input lines were rejected on load (2 of 3)" in printed.err
    assert "rejects by reason (2 in all):" in printed.err and "not valid JSON" in printed.err


def test_an_empty_reply_is_no_training_target(tmp_path):
    """A teacher that answered nothing (no text, no call) passed a no_call gold turn without
    reply constraints, and the row taught the model to say nothing."""
    episodes = two_greetings(tmp_path)
    plans = {"q1#0": [text("")], "q2#0": [text("Hello!")]}
    with ScriptedServer(PerConversation(plans), model=MODEL) as server:
        result = rollout(
            None, episodes, tmp_path / "out", settings=settings(server), trust_hooks=True
        )
    rejects = pq.read_table(result.path / "rejects.parquet").to_pylist()
    assert [(r["id"], r["stage"]) for r in rejects] == [("q1", "rollout:row")]
    assert "says nothing" in rejects[0]["reason"]
