"""``hsa bench``: how fast is generation, next to a floor and a naive baseline, on this machine.

Two scenarios of synthetic episodes (deterministic), each written once as JSONL and as Parquet:

* ``per-episode-tools``: about 4 KB each, an instructions prompt, three tool-call rounds, a final
  reply, and 8 tools of the episode's own (an inline harness per episode);
* ``shared-harness``: every episode under one harness folder, as in a live room's agent: 12
  skills with Markdown bodies, 12 tools, 3 hooks and a five-section prompt; each episode loads a
  skill, calls two tools and replies.

Each is measured side by side, every measurement in a fresh process so that peak memory is its
own:

* ``floor``: the least any tool that writes these rows must do. Per-episode tools: read the
  Parquet file, parse and re-serialise each row's JSON (orjson), write Parquet. Shared harness:
  the same, with one system prompt, rendered once from the harness, put in front of each row's
  messages;
* ``naive``: ``datasets.map`` with the ``json`` module renaming one tool per row, then Parquet
  (per-episode tools only);
* ``generate``: ``hsa generate`` with the given recipe (``hat-train`` by default) and full
  per-variant verification, with 1 worker and with ``--workers``;
* ``untransformed``: ``hsa generate`` with 1 worker and the recipe's envelope (seed, variants,
  pool, original kept) around an ``identity``-only pipeline: every row loaded, verified, rendered
  and written as ``generate`` does, with no transform's work. It splits generate's cost into
  what every row costs (``untransformed_1_vs_floor``) and what the transforms add on top
  (``generate_1_vs_untransformed_1``).

Rates are rows per second of *output rows*. A floor takes a second or two, and on a small or
shared machine its runs in fresh processes were seen to vary by two times (first-touch memory,
the page cache), so each floor is run :data:`FLOOR_RUNS` times and its fastest run is the floor,
as ``timeit`` takes the least time: noise only ever slows a run, and the least cost is what a
floor stands for. Every run's rate is reported beside it (``runs``). The other measurements run
once by default; ``repeats`` runs each of them that many times, also keeping the fastest: on
this project's VM one process's CPU time for the same 10,000 rows varied from 5.0 to 8.2 s
between runs, so one run of each cannot tell a ratio of 1.6 from one of 1.9.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue as queue_module
import random
import resource
import shutil
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from hsa.errors import HsaError
from hsa.model.gold import exact_arguments

if TYPE_CHECKING:
    from hsa.augment.recipe import Recipe

VERBS = ["get", "check", "list", "create", "update", "search", "compute", "cancel"]
NOUNS = [
    "order",
    "product",
    "stock",
    "coupon",
    "shipment",
    "invoice",
    "refund",
    "ticket",
    "price",
    "account",
    "address",
    "review",
]


def synthetic_episode(i: int) -> dict:
    """Episode ``i``: its own 8 tools, three tool-call rounds and a reply (about 4 KB)."""
    rng = random.Random(i)
    names = rng.sample([f"{v}_{n}" for v in VERBS for n in NOUNS], 8)
    tools = [synthetic_tool(name) for name in names]
    messages = [
        {
            "role": "user",
            "content": f"Customer {i} asks about orders {i % 97} and "
            f"{i % 89}: where are they and what do they cost?",
        }
    ]
    turns = []
    for r, name in enumerate(rng.sample(names, 3)):
        args = {"id": rng.randint(1, 10_000), "region": rng.choice(["cn", "eu", "us"])}
        turns.append(
            {
                "at": len(messages),
                "calls": [
                    {
                        "name": name,
                        "arguments": exact_arguments(args),
                        "omittable": ["verbose"],
                    }
                ],
            }
        )
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{r}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        result = {
            "id": args["id"],
            "status": rng.choice(["shipped", "pending", "delivered"]),
            "amount": round(rng.uniform(5, 500), 2),
            "updated": f"2026-11-{r + 10}",
        }
        messages.append(
            {"role": "tool", "tool_call_id": f"call_{r}", "content": json.dumps(result)}
        )
    messages.append(
        {
            "role": "assistant",
            "content": "Both orders are on their way; the first "
            "arrives tomorrow morning and the second is delivered. Anything else?",
        }
    )
    turns.append({"at": len(messages) - 1, "no_call": True})
    prompt = {
        "layout": "markdown",
        "sections": ["instructions", "tools"],
        "text": {
            "instructions": "You are the support agent of an online shop. Answer from "
            "tool results only, call independent tools in parallel, never guess ids, "
            "and keep replies under three sentences. Escalate refunds above 200."
        },
    }
    return {
        "id": f"bench-{i:07d}",
        "harness": {"name": "bench", "tools": tools, "prompt": prompt},
        "messages": messages,
        "gold": {"turns": turns},
        "meta": {"category": "bench"},
    }


SCENARIOS = ("per-episode-tools", "shared-harness")
SHARED_HARNESS = "harness"  # the shared scenario's harness folder, beside its episodes

SHARED_HOOKS = '''"""Checks of the bench harness: pure functions of (payload, config)."""


def check_message(payload, config):
    text = str(payload.get("content") or "")
    if len(text) > config.get("max_chars", 500):
        return {"ok": False, "feedback": "The message is too long; ask for a shorter one."}
    return {"ok": True}


def check_arguments(payload, config):
    arguments = payload.get("arguments") or {}
    if "id" in arguments and not isinstance(arguments["id"], int):
        return {"ok": False, "feedback": "id must be an integer; call the tool again."}
    return {"ok": True}


def check_reply(payload, config):
    text = str(payload.get("content") or "")
    for word in config.get("banned", []):
        if word in text:
            return {"ok": False, "feedback": f"Do not say {word!r}; rewrite the reply."}
    return {"ok": True}
'''


def shared_harness() -> dict:
    """The shared scenario's harness: 12 tools, 12 skills (about 1 KB of Markdown each, naming
    the tools they use in inline code), 3 hooks and a five-section prompt."""
    names = [f"{VERBS[k % len(VERBS)]}_{noun}" for k, noun in enumerate(NOUNS)]
    tools = [synthetic_tool(name) for name in names]
    skills = []
    for k, noun in enumerate(NOUNS):
        used = [names[k], names[(k + 5) % len(names)]]
        steps = "\n".join(
            f"- Step {j + 1}: when the customer asks about the {noun}, call `{used[j % 2]}` "
            f"with the id they gave, read the status and the amount, and say both plainly; "
            f"never promise a date the result does not show."
            for j in range(6)
        )
        skills.append(
            {
                "id": f"{noun}-help",
                "description": f"How to answer questions about a {noun} with "
                f"{used[0]} and {used[1]}.",
                "content": f"# {noun.capitalize()} help\n\nUse this skill for {noun} "
                f"questions.\n\n## Steps\n\n{steps}\n",
            }
        )
    prompt = {
        "layout": "markdown",
        "sections": ["persona", "instructions", "skills", "tools", "hooks"],
        "text": {
            "persona": "You are the support agent of an online shop: calm, exact and brief.",
            "instructions": "Answer from tool results only, call independent tools in "
            "parallel, never guess ids, load the skill that fits before you answer, and keep "
            "replies under three sentences. Escalate refunds above 200.",
        },
    }
    hooks = [
        {
            "name": "message_length",
            "event": "user_message",
            "function": "check_message",
            "description": "Flags over-long customer messages.",
            "config": {"max_chars": 500},
        },
        {
            "name": "argument_types",
            "event": "tool_call",
            "function": "check_arguments",
            "description": "Blocks calls whose id is not an integer.",
            "config": {},
        },
        {
            "name": "reply_words",
            "event": "reply",
            "function": "check_reply",
            "description": "Blocks replies with promises the shop cannot keep.",
            "config": {"banned": ["guaranteed", "cheapest"]},
        },
    ]
    return {
        "name": "bench-shop",
        "version": "1",
        "prompt": prompt,
        "skills": skills,
        "tools": tools,
        "hooks": hooks,
        "hooks_source": SHARED_HOOKS,
    }


def synthetic_tool(name: str) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ').capitalize()} by id.",
            "parameters": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer", "minimum": 1, "description": "Record id."},
                    "region": {"type": "string", "enum": ["cn", "eu", "us"]},
                    "verbose": {"type": "boolean"},
                },
                "required": ["id"],
            },
        },
    }


def shared_episode(i: int, harness: dict) -> dict:
    """Episode ``i`` under the shared harness (by folder reference): it loads one skill, calls
    the skill's two tools in one message, and replies."""
    rng = random.Random(i)
    skill = rng.choice(harness["skills"])
    tool_names = [t["function"]["name"] for t in harness["tools"]]
    calls = [name for name in tool_names if f"`{name}`" in skill["content"]][:2]
    args = [{"id": rng.randint(1, 10_000)} for _ in calls]
    messages: list[dict] = [
        {"role": "user", "content": f"Customer {i}: what is happening with my order {i % 97}?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_s",
                    "type": "function",
                    "function": {
                        "name": "load_skill",
                        "arguments": json.dumps({"name": skill["id"]}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_s", "content": skill["content"]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{k}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(a)},
                }
                for k, (name, a) in enumerate(zip(calls, args, strict=True))
            ],
        },
    ]
    for k, a in enumerate(args):
        result = {"id": a["id"], "status": rng.choice(["shipped", "pending"]), "amount": 12.5}
        messages.append(
            {"role": "tool", "tool_call_id": f"call_{k}", "content": json.dumps(result)}
        )
    messages.append({"role": "assistant", "content": "It is on its way; anything else?"})
    turns = [
        {"at": 1, "skills": [skill["id"]]},
        {
            "at": 3,
            "calls": [
                {"name": name, "arguments": {"id": [a["id"]]}}
                for name, a in zip(calls, args, strict=True)
            ],
        },
        {"at": len(messages) - 1, "no_call": True},
    ]
    return {
        "id": f"shared-{i:07d}",
        "harness": SHARED_HARNESS,
        "messages": messages,
        "gold": {"turns": turns},
        "meta": {"category": "bench"},
    }


def write_inputs(folder: Path, rows: int, scenario: str = "per-episode-tools") -> tuple[Path, Path]:
    """The scenario's episodes as JSONL and Parquet in ``folder`` (and, for the shared harness,
    its harness folder beside them)."""
    folder.mkdir(parents=True, exist_ok=True)
    if scenario == "shared-harness":
        from hsa.model.harness import Harness, save_harness

        harness = shared_harness()
        save_harness(Harness.from_dict(harness), folder / SHARED_HARNESS)

        def make(i: int) -> dict:
            return shared_episode(i, harness)
    else:
        make = synthetic_episode
    jsonl, parquet = folder / "episodes.jsonl", folder / "episodes.parquet"
    schema = pa.schema([("episode", pa.string())])
    with open(jsonl, "wb") as out, pq.ParquetWriter(parquet, schema) as writer:
        for start in range(0, rows, 10_000):
            lines = [orjson.dumps(make(i)) for i in range(start, min(rows, start + 10_000))]
            out.write(b"\n".join(lines) + b"\n")
            writer.write_table(pa.table({"episode": [x.decode() for x in lines]}, schema=schema))
    return jsonl, parquet


def _floor(parquet: Path, out: Path) -> int:
    source = pq.ParquetFile(parquet)
    schema = pa.schema([("episode", pa.string())])
    rows = 0
    with pq.ParquetWriter(out / "floor.parquet", schema) as writer:
        for batch in source.iter_batches(batch_size=10_000):
            texts = [orjson.dumps(orjson.loads(t)).decode() for t in batch.column(0).to_pylist()]
            writer.write_table(pa.table({"episode": texts}, schema=schema))
            rows += len(texts)
    return rows


def _shared_floor(parquet: Path, out: Path) -> int:
    """The shared scenario's floor: each row's messages behind one system prompt and the one
    tool list, both rendered once, parsed and serialised per row, written as Parquet."""
    from hsa.model.harness import load_harness
    from hsa.render import render_system_prompt

    harness = load_harness(parquet.parent / SHARED_HARNESS)
    system = {"role": "system", "content": render_system_prompt(harness)}
    tools = orjson.dumps(harness.openai_tools()).decode()
    schema = pa.schema([("messages", pa.string()), ("tools", pa.string())])
    rows = 0
    with pq.ParquetWriter(out / "shared-floor.parquet", schema) as writer:
        for batch in pq.ParquetFile(parquet).iter_batches(batch_size=10_000):
            messages = [
                orjson.dumps([system, *orjson.loads(t)["messages"]]).decode()
                for t in batch.column(0).to_pylist()
            ]
            table = pa.table(
                {"messages": messages, "tools": [tools] * len(messages)}, schema=schema
            )
            writer.write_table(table)
            rows += len(messages)
    return rows


# Where the naive baseline's ``datasets`` keeps its converted input and its map's results: a
# second run that found them would read them instead of doing the work (see _made_by).
NAIVE_CACHE = "hf-cache"


def _naive(parquet: Path, out: Path) -> int:
    import datasets

    datasets.disable_progress_bars()
    ds = datasets.load_dataset(
        "parquet", data_files=str(parquet), split="train", cache_dir=str(out / NAIVE_CACHE)
    )

    def rename_first_tool(row):
        episode = json.loads(row["episode"])
        old = episode["harness"]["tools"][0]["function"]["name"]
        episode["harness"]["tools"][0]["function"]["name"] = f"renamed_{old}"
        for message in episode["messages"]:
            for call in message.get("tool_calls") or []:
                if call["function"]["name"] == old:
                    call["function"]["name"] = f"renamed_{old}"
        return {"episode": json.dumps(episode)}

    mapped = ds.map(rename_first_tool)
    mapped.to_parquet(str(out / "naive.parquet"))
    return len(mapped)


def untransformed(recipe: Recipe) -> Recipe:
    """``recipe``'s envelope (seed, variants per episode, pool, whether the original is kept)
    around a pipeline of one ``identity``: its rows are generate's rows with no transform's work."""
    # The name is kept (a longer one could pass the limit on names): the bench writes the
    # untransformed version in a folder of its own.
    return recipe.with_pipeline([{"identity": {}}], source=f"{recipe.name}, untransformed")


def _output(folder: Path, transformed: bool, workers: int) -> Path:
    """Where a generate (or untransformed) measurement with ``workers`` writes its versions."""
    return folder / (f"gen-{workers}" if transformed else f"untransformed-{workers}")


def _made_by(kind: str, folder: Path, workers: int) -> list[Path]:
    """What a run of measurement ``kind`` leaves in the scenario's ``folder`` that would change
    the next run: the version a second generate would find instead of making, the cache a
    second ``datasets`` load would read instead of converting. Removed between repeated runs."""
    if kind == "naive":
        return [folder / NAIVE_CACHE]
    if kind in ("generate", "untransformed"):
        return [_output(folder, kind == "generate", workers)]
    return []  # a floor writes one file over, and reads nothing it wrote


def _generate(
    jsonl: Path, out: Path, recipe: str, workers: int, *, transformed: bool = True
) -> int:
    from hsa.augment.recipe import load_recipe
    from hsa.dataset.generate import generate

    loaded = load_recipe(recipe)
    if not transformed:
        loaded = untransformed(loaded)
    result = generate(loaded, jsonl, _output(out, transformed, workers), workers=workers)
    if result.reused:  # found, not made: its time would be a lookup's
        raise HsaError(f"{result.path} existed already: the bench measures a run that makes it")
    return result.manifest["counts"]["rows"]


# Runs per floor (see the module docstring); the naive and generate runs take long enough for
# one run to average their noise out, and a second generate run would double the bench.
FLOOR_RUNS = 3

# The kinds of measurement (what ``--only`` names): a measurement's name starts with its kind
# (``floor``, ``generate_2``).
KINDS = ("floor", "naive", "generate", "untransformed")

# What each measurement runs: its args, the rows it wrote.
_MEASUREMENTS = {
    "floor": _floor,
    "shared-floor": _shared_floor,
    "naive": _naive,
    "generate": _generate,
    "untransformed": partial(_generate, transformed=False),
}


def _child(kind: str, args: tuple, queue) -> None:
    # generate sets its allocators itself (hsa.dataset.allocator); the floors and the naive
    # baseline run as a user's script would, with the defaults. A floor is the least cost, and
    # with generate's settings the shared-harness floor was slower (fastest of three runs,
    # twice each, same day: 37,099 and 39,799 rows/s against 59,408 and 64,904).
    # A failure is sent back, not raised here: the parent waits on the queue, and a child that
    # died with nothing on it would leave the bench waiting forever.
    try:
        start = time.perf_counter()
        rows = _MEASUREMENTS[kind](*args)
        seconds = time.perf_counter() - start
    except BaseException as error:  # every failure goes back to the parent
        queue.put({"error": f"{type(error).__name__}: {error}"})
        return
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    queue.put(
        {"rows": rows, "seconds": seconds, "peak_rss_mb": round(max(own, children) / 1024, 1)}
    )


def _measure(kind: str, args: tuple, runs: int = 1, leftovers: tuple[Path, ...] = ()) -> dict:
    """The fastest of ``runs`` runs of ``kind``, each in a fresh process (its peak memory is its
    own), ``leftovers`` removed before each run after the first; with more than one run, every
    run's rate too (``runs``)."""
    made = []
    for run in range(runs):
        if run:
            for path in leftovers:
                shutil.rmtree(path, ignore_errors=True)
        made.append(_run_once(kind, args))
    fastest = max(made, key=lambda run: run["rows_per_s"])
    if runs > 1:
        fastest["runs"] = [run["rows_per_s"] for run in made]
    return fastest


def _run_once(kind: str, args: tuple) -> dict:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_child, args=(kind, args, queue))
    process.start()
    # Poll, so a child killed before it could report (out of memory, a signal) stops the bench.
    # A child found dead before a wait has put all it ever will: a wait that finds nothing then
    # means it never reported.
    while True:
        exited = not process.is_alive()
        try:
            result = queue.get(timeout=1.0)
            break
        except queue_module.Empty:
            if exited:
                raise HsaError(
                    f"the {kind} measurement's process died (exit code {process.exitcode}) "
                    "before it reported"
                ) from None
    process.join()
    if "error" in result:
        raise HsaError(f"the {kind} measurement failed: {result['error']}")
    result["rows_per_s"] = round(result["rows"] / result["seconds"], 1)
    return result


@dataclass
class BenchReport:
    """One scenario's measurements (``floor``, ``naive``, ``generate_1``, ``untransformed_1``,
    ``generate_<workers>``)."""

    scenario: str
    rows: int
    workers: int
    recipe: str
    results: dict

    def ratios(self) -> dict:
        r = {k: v["rows_per_s"] for k, v in self.results.items()}
        out = {}
        if "generate_1" in r:
            gen1 = r["generate_1"]
            for base in ("floor", "naive", "untransformed_1"):
                if base in r:
                    out[f"generate_1_vs_{base}"] = gen1 / r[base]
            if f"generate_{self.workers}" in r and self.workers > 1:
                out[f"generate_{self.workers}_vs_1"] = r[f"generate_{self.workers}"] / gen1
        if "untransformed_1" in r and "floor" in r:
            out["untransformed_1_vs_floor"] = r["untransformed_1"] / r["floor"]
        return {k: round(v, 3) for k, v in out.items()}

    def to_dict(self) -> dict:
        return {
            "scenario": self.scenario,
            "rows": self.rows,
            "workers": self.workers,
            "recipe": self.recipe,
            "results": self.results,
            "ratios": self.ratios(),
        }


def run_bench(
    rows: int,
    workers: int,
    recipe: str = "hat-train",
    *,
    scenarios: tuple[str, ...] = SCENARIOS,
    folder: str | os.PathLike | None = None,
    only: tuple[str, ...] = (),
    repeats: int = 1,
) -> list[BenchReport]:
    """Each scenario's measurements, one after the other on the same machine (``only``: the
    kinds to run, from :data:`KINDS`; a scenario with none of them is left out; ``repeats``:
    runs of each measurement other than the floors, the fastest kept). A bench that would
    measure nothing is refused before any input is written."""
    if repeats < 1:
        raise HsaError(f"repeats must be at least 1, got {repeats}")
    unknown = sorted(set(only) - set(KINDS))
    if unknown:
        raise HsaError(
            f"unknown measurement(s) {', '.join(unknown)}; choose from {', '.join(KINDS)}"
        )
    plans = {s: plan for s in scenarios if (plan := _plan(s, workers, only, repeats))}
    if not plans:
        raise HsaError(
            f"nothing to measure: {', '.join(only)} is no measurement of "
            f"{', '.join(scenarios)} (naive runs on per-episode-tools only)"
        )
    tmp = Path(folder or tempfile.mkdtemp(prefix="hsa-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        return [_run_scenario(s, plan, rows, workers, recipe, tmp / s) for s, plan in plans.items()]
    finally:
        if folder is None:
            shutil.rmtree(tmp, ignore_errors=True)


def _plan(
    scenario: str, workers: int, only: tuple[str, ...], repeats: int = 1
) -> list[tuple[str, str, int, int]]:
    """A scenario's measurements, each as (name, measurement, workers, runs); workers 0 for the
    floors and the naive baseline, which read the Parquet input. ``only`` keeps those kinds;
    every measurement but the floors runs ``repeats`` times."""
    # The floor writes the scenario's rows at the least cost; the naive baseline renames a tool
    # in an inline harness, which the shared scenario does not have.
    plan = (
        [("floor", "shared-floor", 0, FLOOR_RUNS)]
        if scenario == "shared-harness"
        else [("floor", "floor", 0, FLOOR_RUNS), ("naive", "naive", 0, repeats)]
    )
    plan.append(("generate_1", "generate", 1, repeats))
    plan.append(("untransformed_1", "untransformed", 1, repeats))
    if workers > 1:
        plan.append((f"generate_{workers}", "generate", workers, repeats))
    return [entry for entry in plan if not only or entry[0].split("_")[0] in only]


def _run_scenario(
    scenario: str,
    plan: list[tuple[str, str, int, int]],
    rows: int,
    workers: int,
    recipe: str,
    folder: Path,
) -> BenchReport:
    # A fresh scenario folder: a version generate finds from an earlier run is not made again
    # (no measurement), and the harness folder is never written over.
    if folder.exists():
        shutil.rmtree(folder)
    jsonl, parquet = write_inputs(folder, rows, scenario)
    input_bytes = jsonl.stat().st_size
    results = {}
    for name, kind, run_workers, runs in plan:
        args = (jsonl, folder, recipe, run_workers) if run_workers else (parquet, folder)
        leftovers = tuple(_made_by(kind, folder, run_workers))
        results[name] = {**_measure(kind, args, runs, leftovers), "input_bytes": input_bytes}
    return BenchReport(scenario, rows, workers, recipe, results)
