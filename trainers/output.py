"""A training run's output folder: written aside, completed with its model card and training
record, then renamed into place, so ``--out`` holds a whole run or nothing.

* ``README.md``: a Hugging Face model card, YAML front matter (base model, datasets, hsa version,
  library, tags) and what was trained on what;
* ``hsa_training.json``: the record a run can be checked and repeated from: stage, dataset
  version (id, path, shard sha256s), prompts file (sha256), recipe as run (overrides applied),
  seeds, models, library versions, the token-length report, losses, evaluation before and after,
  wall time.
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

import orjson
import yaml

from hsa import __version__ as hsa_version
from hsa.errors import HsaError

RECORD = "hsa_training.json"
_LIBRARIES = (
    "trl",
    "transformers",
    "torch",
    "datasets",
    "accelerate",
    "tokenizers",
    "peft",
    "vllm",
)


def rank() -> tuple[int, int]:
    """(this process's rank, number of processes) under ``accelerate launch`` / torchrun."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def staging_dir(out: str | os.PathLike) -> tuple[Path, Path]:
    """(final, staging): refuse an ``out`` that already holds something. Processes of one launch
    share one staging folder (named by the launch's port); only rank 0 publishes it."""
    final = Path(out)
    if final.exists() and (not final.is_dir() or any(final.iterdir())):
        raise HsaError(
            "output folder exists and is not empty; choose a new --out (a run never "
            "overwrites another)",
            file=str(final),
        )
    final.parent.mkdir(parents=True, exist_ok=True)
    if rank()[1] > 1:
        staging = final.parent / f".{final.name}.partial-launch-{os.environ.get('MASTER_PORT', 0)}"
        staging.mkdir(exist_ok=True)
        return final, staging
    staging = Path(
        tempfile.mkdtemp(prefix=f".{final.name}.partial-{os.getpid()}-", dir=final.parent)
    )
    return final, staging


def publish(staging: Path, final: Path) -> Path:
    if final.is_dir():
        final.rmdir()  # empty (checked by staging_dir)
    os.rename(staging, final)
    return final


def discard(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)


def library_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"hsa": hsa_version, "python": platform.python_version()}
    for name in _LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def dataset_entry(version_dir: str | os.PathLike, manifest: dict) -> dict:
    return {
        "version": manifest["version"],
        "name": manifest.get("name"),
        "path": str(Path(version_dir).resolve()),
        "shards": [
            {"path": s["path"], "sha256": s["sha256"], "rows": s["rows"]}
            for s in manifest["shards"]
        ],
    }


def write_record(folder: Path, record: dict) -> None:
    record = {"hsa_training_record": 1, **record, "libraries": library_versions()}
    (folder / RECORD).write_bytes(
        orjson.dumps(record, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    )


def read_record(model_dir: str | os.PathLike) -> dict | None:
    """The training record saved with a model by an earlier stage, if any."""
    path = Path(model_dir) / RECORD
    if not path.is_file():
        return None
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:
        raise HsaError("training record is not valid JSON", file=str(path)) from None


def write_card(folder: Path, record: dict) -> None:
    stage = record["stage"]
    datasets = [
        d["name"] + "@" + d["version"] if d.get("name") else d["version"]
        for d in record.get("datasets", [])
    ]
    front = {
        "base_model": record.get("base_model"),
        "library_name": "transformers",
        "tags": ["hsa", "harness-state-augmentation", "trl", stage, "tool-calling"],
        "hsa_version": hsa_version,
    }
    if datasets:
        front["datasets"] = datasets
    what = {
        "sft": "supervised fine-tuning on trajectories under harness variants",
        "opd": "on-policy distillation from the base model on general prompts",
        "rl": "GRPO on judged turns with rewards computed from gold",
    }[stage]
    lines = [
        "---",
        yaml.safe_dump(front, sort_keys=False, allow_unicode=True).rstrip(),
        "---",
        "",
        f"# {Path(record['out']).name}",
        "",
        f"Trained by `hsa train {stage}` ({what}) with recipe `{record['recipe']['name']}`.",
        "",
        f"- model trained: `{record['model']}`",
    ]
    if record.get("teacher"):
        lines.append(f"- teacher: `{record['teacher']}`")
    for d in record.get("datasets", []):
        lines.append(f"- dataset version: `{d['version']}` ({d['path']})")
    if record.get("prompts"):
        lines.append(
            f"- prompts: `{record['prompts']['path']}` ({record['prompts']['rows']} "
            f"prompts, sha256 {record['prompts']['sha256'][:12]})"
        )
    losses = record.get("losses") or []
    if losses:
        lines.append(
            f"- loss: first {losses[0]['loss']:.4g}, last {losses[-1]['loss']:.4g} "
            f"over {record.get('global_step')} steps"
        )
    for when in ("before", "after"):
        ev = (record.get("evaluation") or {}).get(when)
        if ev:
            means = ", ".join(f"{k} {v:.3f}" for k, v in ev["means"].items() if v is not None)
            lines.append(f"- rewards {when} ({ev['turns']} judged turns, greedy): {means}")
    lines += ["", f"Everything needed to check or repeat the run is in `{RECORD}`.", ""]
    (folder / "README.md").write_text("\n".join(lines), encoding="utf-8")


def file_sha256(path: str | os.PathLike) -> str:
    from hsa.dataset.writer import sha256

    return sha256(Path(path))
