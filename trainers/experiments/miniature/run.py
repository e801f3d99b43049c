"""One run of the miniature experiment: per seed, the task, two training versions, one model
trained from scratch on each, and their evaluation on the original harness and on held-out
harness variants, through hsa's own generate, train and eval.

Per seed ``s`` (everything below ``OUT/seed-s/``):

1. ``task/``: the harness and the train and eval episodes (:mod:`.task`), made from ``s``;
2. ``versions/``: ``hsa generate`` of the train episodes with ``miniature-fixed`` (the original
   harness, repeated by the identity transform) and ``miniature-hsa`` (harness variants from the
   train splits): the same number of rows;
3. ``base-model/``: the tokenizer (trained on both versions' rows) and the model's random
   weights, shared by both runs;
4. ``fixed/model``, ``hsa/model``: ``hsa train sft`` with the same recipe, steps and seed; the
   checkpoints it saves give the learning curve;
5. ``fixed/report``, ``hsa/report``: ``hsa eval`` in-process on the eval episodes' original
   harness and on ``miniature-heldout`` variants (held-out names and wordings);
   ``fixed/curve/checkpoint-N`` etc.: the same on a subset of the episodes at each checkpoint;
6. ``compare.md``: ``hsa eval compare`` of the two reports.

A run that stops resumes with the same command: versions are found again, finished trainings
are kept, and evaluations resume from their journals. ``OUT/settings.json`` must match.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path

import orjson

from hsa.errors import HsaError
from hsa.files.jsonl import atomic_path
from hsa.trainers.experiments.miniature.model import ModelShape
from hsa.trainers.experiments.miniature.recipes import (
    CONDITIONS,
    FIXED,
    HELDOUT,
    HSA,
    generate_recipe,
    sft_recipe,
)
from hsa.trainers.experiments.miniature.task import KINDS

SETTINGS_FILE = "settings.json"

Log = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    """What a run does; the defaults are the CPU run the experiment is sized for."""

    seeds: int = 1
    steps: int = 5000
    checkpoints: int = 5  # evaluated along the way for the learning curve
    batch_size: int = 4
    # Seen on seed 0 with the tokenizer of whole words: 5e-4 copied held-out names in 63% of
    # turns, 1e-3 in 50%; 2e-3 and 3e-3 (the old tokenizer) never copied one.
    learning_rate: float = 5e-4
    warmup_steps: int = 50
    # The last share of the steps, in which the learning rate falls (cosine) to a tenth, so the
    # model settles after the copying formed at the steady rate (seen at a constant rate to the
    # end: original-harness accuracy swinging 93 -> 67% between checkpoints). 0: constant.
    decay_share: float = 0.2
    shape: ModelShape = field(default_factory=ModelShape)
    vocab_size: int = 1024  # a cap: without copied strings the words of the rows need ~550
    tools: int = 5  # tools of the harness
    train_episodes: int = 300
    eval_episodes: int = 20
    curve_episodes: int = 5  # episodes of the eval set judged at each checkpoint
    turns: int = 3  # requests (judged turns) per episode
    heldout_variants: int = 2  # held-out harness variants per eval episode
    device: str = "cpu"
    threads: int = 2
    parallel: bool = True  # on a CPU, train the two models side by side
    eval_batch_size: int = 32
    max_new_tokens: int = 40

    def to_dict(self) -> dict:
        return asdict(self)

    def check(self) -> None:
        for name in (
            "seeds",
            "steps",
            "checkpoints",
            "batch_size",
            "vocab_size",
            "tools",
            "train_episodes",
            "eval_episodes",
            "curve_episodes",
            "turns",
            "heldout_variants",
            "threads",
            "eval_batch_size",
            "max_new_tokens",
        ):
            if getattr(self, name) < 1:
                raise HsaError(
                    f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}"
                )
        if not 0 <= self.decay_share < 1:
            raise HsaError(f"--decay-share must be in [0, 1), got {self.decay_share}")
        if self.checkpoints > self.steps:
            raise HsaError(
                f"--checkpoints ({self.checkpoints}) cannot exceed --steps ({self.steps})"
            )
        if self.tools > len(KINDS):
            raise HsaError(
                f"--tools must be at most {len(KINDS)} (the kinds of tool the task "
                f"knows), got {self.tools}"
            )
        if self.device not in ("cpu", "cuda"):
            raise HsaError(f"--device must be cpu or cuda, got {self.device!r}")

    @property
    def save_steps(self) -> int:
        """Checkpoint spacing; the last checkpoint is the final model."""
        return max(1, self.steps // self.checkpoints)


def _write_json(path: Path, value) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(
            orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
        )


def _claim(out: Path, settings: Settings) -> None:
    """Use ``out`` for this run: new or empty, or an earlier run with the same settings."""
    path = out / SETTINGS_FILE
    if path.is_file():
        earlier = orjson.loads(path.read_bytes())
        if earlier != orjson.loads(orjson.dumps(settings.to_dict())):
            changed = sorted(
                k
                for k in set(earlier) | set(settings.to_dict())
                if earlier.get(k) != orjson.loads(orjson.dumps(settings.to_dict().get(k)))
            )
            raise HsaError(
                f"this folder holds a run with other settings ({', '.join(changed)} "
                f"differ); choose a new --out or repeat its settings to resume",
                file=str(out),
            )
        return
    if out.exists() and any(out.iterdir()):
        raise HsaError(
            "output folder exists, is not empty and holds no miniature run; choose a new --out",
            file=str(out),
        )
    out.mkdir(parents=True, exist_ok=True)
    _write_json(path, settings.to_dict())


def _tokenizer_corpus(version_dir: Path, renderer, every: int) -> list[str]:
    """Every ``every``-th row of a version as the model will read it, with the strings the
    model copies (names, argument values) taken out: the tokenizer's training text."""
    from hsa.trainers.experiments.miniature.model import without_copied_strings
    from hsa.trainers.version import check_provenance, load_rows

    rows = load_rows(version_dir, check_provenance(version_dir)).select_columns(
        ["messages", "tools"]
    )
    texts = []
    for i in range(0, len(rows), every):
        messages, tools = without_copied_strings(rows[i]["messages"], rows[i]["tools"])
        texts.append(renderer.apply_chat_template(messages, tools=tools, tokenize=False))
    return texts


def build_base_model(folder: Path, versions: list[Path], settings: Settings, seed: int) -> Path:
    """The tokenizer, trained on the rendered rows of both versions without the strings the
    model copies, and random weights."""
    from hsa.trainers.experiments.miniature.model import build_tokenizer, save_model

    if (folder / "config.json").is_file():
        return folder
    # The template renders rows before the tokenizer exists: a throwaway one renders them.
    renderer = build_tokenizer(["render"], 300)
    corpus = [text for v in versions for text in _tokenizer_corpus(v, renderer, every=4)]
    tokenizer = build_tokenizer(corpus, settings.vocab_size)
    staging = folder.with_name(folder.name + ".partial")
    if staging.exists():
        import shutil

        shutil.rmtree(staging)
    save_model(staging, tokenizer, settings.shape, seed=seed)
    os.rename(staging, folder)
    return folder


def train(version: Path, base: Path, out: Path, settings: Settings, seed: int, log: Log) -> dict:
    """``hsa train sft`` (kept if it finished before); the training record."""
    from hsa.trainers.output import read_record
    from hsa.trainers.sft import run_sft

    record = read_record(out)
    if record is None:
        recipe = sft_recipe(
            seed=seed,
            steps=settings.steps,
            batch_size=settings.batch_size,
            learning_rate=settings.learning_rate,
            warmup_steps=settings.warmup_steps,
            decay_steps=round(settings.decay_share * settings.steps),
            save_steps=settings.save_steps,
            device=settings.device,
        )
        record = run_sft(version, str(base), recipe, out, log=log)
    return record


def checkpoints(model_dir: Path) -> list[tuple[int, Path]]:
    found = [
        (int(p.name.split("-")[1]), p)
        for p in model_dir.glob("checkpoint-*")
        if p.name.split("-")[1].isdigit()
    ]
    return sorted(found)


def evaluate(plan, model_dir: Path, out: Path, settings: Settings) -> dict:
    """``hsa eval`` of one model on a plan's items, in-process; the report."""
    from hsa.eval.backends import InProcessBackend
    from hsa.eval.run import Settings as EvalSettings
    from hsa.eval.run import run_eval

    backend = InProcessBackend(
        model_dir,
        max_tokens=settings.max_new_tokens,
        batch_size=settings.eval_batch_size,
        device=None if settings.device == "cpu" else settings.device,
    )
    return run_eval(plan.itemset, plan.sets, backend, out, EvalSettings(inputs=plan.inputs))


def curve_point(report: dict, sources: set[str]) -> dict:
    """Accuracy on the original harness and on held-out variants over the judged turns of
    ``sources`` (the curve's episodes), from a report's per-item results."""

    def accuracy(set_name: str) -> float | None:
        verdicts = [
            r["correct"]
            for r in report["results"]
            if r["set"] == set_name and r["source_id"] in sources
        ]
        return sum(verdicts) / len(verdicts) if verdicts else None

    return {"original": accuracy("original"), "held_out": accuracy("all")}


def held_out(report: dict) -> float:
    return report["sets"]["all"]["accuracy"]


def original(report: dict) -> float:
    return report["original"]["accuracy"]


@dataclass(frozen=True)
class ConditionJob:
    """What training and evaluating one condition needs (sent to a child process as is)."""

    condition: str
    version: Path
    base: Path
    folder: Path
    settings: Settings
    seed: int
    plan: object
    curve_plan: object  # the plan's first episodes, judged at every checkpoint


def _print(line: str) -> None:
    print(line, flush=True)


def run_condition(job: ConditionJob, threads: int, log: Log = _print) -> dict:
    """``hsa train sft`` of one condition, then ``hsa eval`` of the model and of each
    checkpoint (the learning curve); in the calling process or in a child of its own."""
    import torch

    torch.set_num_threads(threads)
    condition, settings, seed = job.condition, job.settings, job.seed
    log(f"seed {seed}: training {condition} ({settings.steps} steps, {threads} thread(s))")
    model_dir = job.folder / "model"
    record = train(
        job.version,
        job.base,
        model_dir,
        settings,
        seed,
        log=lambda line: log(f"seed {seed} {condition}: {line}"),
    )
    began = time.monotonic()
    report = evaluate(job.plan, model_dir, job.folder / "report", settings)
    curve_sources = {item.source_id for item in job.curve_plan.itemset.items}
    curve = []
    for step, checkpoint in checkpoints(model_dir):
        # The last checkpoint is the final model: its point comes from the full report.
        point_report = (
            report
            if step == record["global_step"]
            else evaluate(
                job.curve_plan, checkpoint, job.folder / "curve" / checkpoint.name, settings
            )
        )
        curve.append({"step": step, **curve_point(point_report, curve_sources)})
        log(
            f"seed {seed}: {condition} at step {step}: original "
            f"{100 * curve[-1]['original']:.1f}%, held-out {100 * curve[-1]['held_out']:.1f}% "
            f"({len(curve_sources)} episodes)"
        )
    log(
        f"seed {seed}: {condition}: original {100 * original(report):.1f}%, "
        f"held-out {100 * held_out(report):.1f}%"
    )
    return {
        "condition": condition,
        "record": record,
        "report": report,
        "curve": curve,
        # The training's own record: a resumed run that kept the model still reports its time.
        "seconds": {
            f"train_{condition}": record["seconds"]["total"],
            f"eval_{condition}": time.monotonic() - began,
        },
    }


def run_seed(out: Path, settings: Settings, seed: int, log: Log) -> dict:
    from hsa.dataset.generate import generate
    from hsa.eval.compare import compare_reports, comparison_markdown
    from hsa.eval.items import plan_from_episodes
    from hsa.trainers.experiments.miniature.task import write_task

    folder = out / f"seed-{seed}"
    clock: dict[str, float] = {}
    began = time.monotonic()
    task = write_task(
        folder / "task",
        seed=seed,
        tools=settings.tools,
        train_episodes=settings.train_episodes,
        eval_episodes=settings.eval_episodes,
        turns=settings.turns,
    )
    versions = {}
    for condition, name in CONDITIONS.items():
        result = generate(generate_recipe(name, seed), task.train, folder / "versions")
        versions[condition] = result.path
        log(
            f"seed {seed}: {condition} version {result.manifest['version']} "
            f"({result.manifest['counts']['rows']} rows)"
        )
        if (failure := result.failure()) is not None:
            raise HsaError(f"hsa generate made no usable {condition} version: {failure}")
    rows = {
        c: orjson.loads((v / "manifest.json").read_bytes())["counts"]["rows"]
        for c, v in versions.items()
    }
    if rows[FIXED] != rows[HSA]:
        raise HsaError(
            f"the training versions must hold as many rows each, got {rows}: a "
            f"variant of the HSA recipe was rejected (see its rejects.parquet)",
            file=str(versions[HSA]),
        )
    clock["generate"] = time.monotonic() - began

    began = time.monotonic()
    base = build_base_model(folder / "base-model", list(versions.values()), settings, seed)
    clock["base_model"] = time.monotonic() - began

    heldout = generate_recipe(HELDOUT, seed)
    datasets = folder / "eval-datasets"
    plan = plan_from_episodes(
        task.eval,
        heldout,
        datasets,
        variants=settings.heldout_variants,
        families=[],
        limit=None,
        seed=seed,
        harness=None,
        trust_hooks=False,
    )
    curve_plan = plan_from_episodes(
        task.eval,
        heldout,
        datasets,
        variants=settings.heldout_variants,
        families=[],
        limit=settings.curve_episodes,
        seed=seed,
        harness=None,
        trust_hooks=False,
    )
    jobs = [
        ConditionJob(
            condition=c,
            version=versions[c],
            base=base,
            folder=folder / c,
            settings=settings,
            seed=seed,
            plan=plan,
            curve_plan=curve_plan,
        )
        for c in (HSA, FIXED)
    ]
    if settings.parallel and settings.device == "cpu" and settings.threads >= 2:
        # Two small models on a CPU train faster side by side, one half of the threads each,
        # than one after the other on all of them: a model this small cannot keep two
        # threads busy (measured: 1.8 steps/s each at one thread, 3.1 at two).
        log(f"seed {seed}: training {HSA} and {FIXED} side by side ({settings.steps} steps)")
        with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
            done = list(pool.map(run_condition, jobs, [settings.threads // 2] * len(jobs)))
    else:
        # HSA first: its curve shows whether the model has learned to read the harness, so
        # whoever watches a long run sees it first.
        done = [run_condition(job, settings.threads, log) for job in jobs]
    records = {d["condition"]: d["record"] for d in done}
    reports = {d["condition"]: d["report"] for d in done}
    curves = {d["condition"]: d["curve"] for d in done}
    for d in done:
        clock.update(d["seconds"])

    comparison = compare_reports([reports[FIXED], reports[HSA]], [FIXED, HSA])
    with atomic_path(folder / "compare.md") as tmp:
        tmp.write_text(comparison_markdown(comparison), encoding="utf-8")
    _write_json(folder / "compare.json", comparison)

    return {
        "seed": seed,
        "accuracy": {
            c: {
                "original": original(r),
                "held_out": held_out(r),
                "turns_original": r["original"]["turns"],
                "turns_held_out": r["sets"]["all"]["turns"],
            }
            for c, r in reports.items()
        },
        "curve": curves,
        "training": {
            c: {
                "steps": r.get("global_step"),
                "train_seconds": r["seconds"]["train"],
                "steps_per_second": (r.get("global_step") or 0) / r["seconds"]["train"],
                "final_loss": (r.get("losses") or [{}])[-1].get("loss"),
                "token_lengths": r.get("token_lengths"),
            }
            for c, r in records.items()
        },
        "rows": rows,
        "seconds": {k: round(v, 1) for k, v in clock.items()},
        "paths": {
            "compare": str(folder / "compare.md"),
            **{f"report_{c}": str(folder / c / "report") for c in reports},
        },
    }


def run_miniature(out: str | os.PathLike, settings: Settings, *, log: Log = print) -> dict:
    """Run every seed, then write ``results.json``, ``results.md`` and ``curve.png``."""
    import torch

    from hsa.trainers.experiments.miniature.report import write_results

    settings.check()
    out = Path(out)
    _claim(out, settings)
    threads = torch.get_num_threads()
    torch.set_num_threads(settings.threads)
    began = time.monotonic()
    try:
        seeds = [run_seed(out, settings, seed, log) for seed in range(settings.seeds)]
    finally:
        torch.set_num_threads(threads)
    results = {
        "settings": settings.to_dict(),
        "seeds": seeds,
        "wall_seconds": round(time.monotonic() - began, 1),
        "load_average": list(os.getloadavg()),
        "cpus": os.cpu_count(),
    }
    return write_results(out, results)
