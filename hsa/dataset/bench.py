"""``hsa bench``: how fast is generation, next to a floor and a naive baseline, on this machine.

Synthetic agent episodes (deterministic; about 4 KB each: an instructions prompt, three tool-call
rounds, a final reply, 8 tools) are written once as JSONL and as Parquet, then measured side by
side, each in a fresh process so that peak memory is its own:

* ``floor``: read the Parquet file, parse and re-serialise each row's JSON (orjson), write Parquet
  — the least any tool that touches every row must do;
* ``naive``: ``datasets.map`` with the ``json`` module renaming one tool per row, then Parquet;
* ``generate``: ``hsa generate`` with the given recipe (``hat-train`` by default) and full
  per-variant verification, with 1 worker and with ``--workers``.

Rates are rows per second of *output rows*; generate also reports episodes per second.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import resource
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

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
    tools = [
        {
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
        for name in names
    ]
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
                        "arguments": {k: [v] for k, v in args.items()},
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


def write_inputs(folder: Path, rows: int) -> tuple[Path, Path]:
    jsonl, parquet = folder / "episodes.jsonl", folder / "episodes.parquet"
    schema = pa.schema([("episode", pa.string())])
    with open(jsonl, "wb") as out, pq.ParquetWriter(parquet, schema) as writer:
        for start in range(0, rows, 10_000):
            lines = [
                orjson.dumps(synthetic_episode(i)) for i in range(start, min(rows, start + 10_000))
            ]
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


def _naive(parquet: Path, out: Path) -> int:
    import datasets

    datasets.disable_progress_bars()
    ds = datasets.load_dataset(
        "parquet", data_files=str(parquet), split="train", cache_dir=str(out / "hf-cache")
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


def _generate(jsonl: Path, out: Path, recipe: str, workers: int) -> int:
    from hsa.augment.recipe import load_recipe
    from hsa.dataset.generate import generate

    result = generate(load_recipe(recipe), jsonl, out / f"gen-{workers}", workers=workers)
    return result.manifest["counts"]["rows"]


def _child(kind: str, args: tuple, queue) -> None:
    start = time.perf_counter()
    rows = {"floor": _floor, "naive": _naive, "generate": _generate}[kind](*args)
    seconds = time.perf_counter() - start
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    queue.put(
        {"rows": rows, "seconds": seconds, "peak_rss_mb": round(max(own, children) / 1024, 1)}
    )


def _measure(kind: str, *args) -> dict:
    context = multiprocessing.get_context("spawn")  # a fresh process: its peak memory is its own
    queue = context.Queue()
    process = context.Process(target=_child, args=(kind, args, queue))
    process.start()
    result = queue.get()
    process.join()
    result["rows_per_s"] = round(result["rows"] / result["seconds"], 1)
    return result


@dataclass
class BenchReport:
    rows: int
    workers: int
    recipe: str
    results: dict

    def ratios(self) -> dict:
        r = {k: v["rows_per_s"] for k, v in self.results.items()}
        gen1 = r["generate_1"]
        out = {"generate_1_vs_floor": gen1 / r["floor"], "generate_1_vs_naive": gen1 / r["naive"]}
        if f"generate_{self.workers}" in r and self.workers > 1:
            out[f"generate_{self.workers}_vs_1"] = r[f"generate_{self.workers}"] / gen1
        return {k: round(v, 3) for k, v in out.items()}

    def to_dict(self) -> dict:
        return {
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
    folder: str | os.PathLike | None = None,
    only: tuple[str, ...] = (),
) -> BenchReport:
    tmp = Path(folder or tempfile.mkdtemp(prefix="hsa-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        jsonl, parquet = write_inputs(tmp, rows)
        results = {}
        plan = [
            ("floor", (parquet, tmp)),
            ("naive", (parquet, tmp)),
            ("generate_1", (jsonl, tmp, recipe, 1)),
        ]
        if workers > 1:
            plan.append((f"generate_{workers}", (jsonl, tmp, recipe, workers)))
        for name, args in plan:
            if only and name.split("_")[0] not in only:
                continue
            results[name] = _measure(name.split("_")[0], *args)
            results[name]["input_bytes"] = jsonl.stat().st_size
        return BenchReport(rows, workers, recipe, results)
    finally:
        if folder is None:
            shutil.rmtree(tmp, ignore_errors=True)
