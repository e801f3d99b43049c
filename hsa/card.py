"""The Hugging Face dataset card (README.md) of a version, from a template in templates/cards.

Statistics are computed with polars from the version's own files (shards, rejects, manifest), so
``hsa card DIR`` can rebuild the card of any version.
"""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment

from hsa.assets import templates_dir
from hsa.errors import HsaError
from hsa.jsonl import atomic_path


def read_table(path: Path, columns: list[str] | None = None) -> pl.DataFrame:
    """A Parquet file as polars, with Arrow JSON columns read as their JSON text."""
    table = pq.read_table(path, columns=columns)
    plain = [pa.field(f.name, f.type.storage_type) if isinstance(f.type, pa.BaseExtensionType) else f
             for f in table.schema]
    return pl.from_arrow(table.cast(pa.schema(plain)))


def _size_category(rows: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                        (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")):
        if rows < limit:
            return name
    return "10M<n<100M"


def _distribution(series: pl.Series) -> str:
    if series.len() == 0:
        return "none"
    return (f"min {series.min()}, median {series.median():g}, mean {series.mean():.2f}, "
            f"max {series.max()}")


def _recipe_yaml(recipe: dict) -> str:
    """The recipe in its own key order (the manifest stores keys sorted)."""
    from hsa.recipe import Recipe
    try:
        return Recipe.from_dict(recipe).to_yaml()
    except HsaError:  # a transform of this version is not installed here: show it as stored
        return yaml.safe_dump(recipe, sort_keys=False, allow_unicode=True)


def card_text(version_dir: str | os.PathLike, *, license: str = "other") -> str:
    root = Path(version_dir)
    try:
        manifest = orjson.loads((root / "manifest.json").read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise HsaError(f"not a dataset version (manifest.json unreadable: {exc})",
                       file=str(root)) from None
    split = manifest["split"]
    frames = [read_table(root / s["path"], ["hsa_source_id", "messages", "tools"])
              for s in manifest["shards"]]
    rows = pl.concat(frames) if frames else pl.DataFrame()
    per_source = rows.group_by("hsa_source_id").len()["len"] if rows.height else pl.Series([])
    messages = rows["messages"].str.count_matches('"role":') if rows.height else pl.Series([])
    tools = rows["tools"].str.count_matches('"type":"function"') if rows.height else pl.Series([])
    rejects = read_table(root / "rejects.parquet", ["stage", "reason"])
    top_rejects = (rejects.with_columns(pl.col("reason").str.slice(0, 120))
                   .group_by(["stage", "reason"]).len()
                   .sort(["len", "stage", "reason"], descending=[True, False, False]).head(20)
                   if rejects.height else None)
    front = {
        "license": license, "task_categories": ["text-generation"],
        "language": ["en", "zh"], "pretty_name": f"{manifest['name']} ({manifest['version']})",
        "tags": ["tool-calling", "function-calling", "agents", "harness-state-augmentation",
                 "hsa", "synthetic"],
        "size_categories": [_size_category(manifest["counts"]["rows"])],
        "configs": [{"config_name": "default",
                     "data_files": [{"split": split, "path": f"data/{split}-*.parquet"}]}],
    }
    first_id = rows["hsa_source_id"][0] if rows.height else "SOURCE"
    env = ImmutableSandboxedEnvironment(loader=jinja2.FileSystemLoader(str(templates_dir() / "cards")),
                                        undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template("dataset_card.md.j2").render(
        front_matter=yaml.safe_dump(front, sort_keys=False, allow_unicode=True),
        pretty_name=front["pretty_name"], rows=manifest["counts"]["rows"], counts=manifest["counts"],
        name=manifest["name"], version=manifest["version"], split=split,
        recipe_yaml=_recipe_yaml(manifest["recipe"]),
        per_source=_distribution(per_source), messages_dist=_distribution(messages),
        tools_dist=_distribution(tools),
        by_family=sorted(manifest["statistics"]["rows_by_family"].items()),
        by_transform=sorted(manifest["statistics"]["rows_by_transform"].items()),
        rejects=[] if top_rejects is None else top_rejects.rows(),
        episodes=Path(manifest["input"]["episodes"]).name, example_id=f"{first_id}#1",
        hsa_version=manifest["hsa_version"],
        transform_versions=", ".join(f"{k} {v}" for k, v in manifest["transform_versions"].items()))


def write_card(version_dir: str | os.PathLike, *, license: str = "other") -> Path:
    path = Path(version_dir) / "README.md"
    text = card_text(version_dir, license=license)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
