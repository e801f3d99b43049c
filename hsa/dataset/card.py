"""The Hugging Face dataset card (README.md) of a version, from a template in templates/cards.

Statistics come from the version's own files (the rejects, read with polars, and the manifest)
and the shape of its rows (:mod:`hsa.dataset.row_shape`: tallied while the rows are written, or
read from the shards; the languages its gold states among them), so ``hsa card DIR`` can
rebuild the card of any version.
"""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment

from hsa.dataset.harness_variants import listing_path
from hsa.dataset.licenses import card_license_id, is_open
from hsa.dataset.outcome import REASON_CHARS
from hsa.dataset.row_shape import RowShape, distribution
from hsa.dataset.writer import read_manifest, reading_parquet
from hsa.errors import HsaError
from hsa.files.assets import templates_dir
from hsa.files.jsonl import atomic_path
from hsa.files.textfile import read_text


def read_table(path: Path, columns: list[str] | None = None) -> pl.DataFrame:
    """A Parquet file as polars, with Arrow JSON columns read as their JSON text."""
    return _plain(pq.read_table(path, columns=columns))


def _plain(table: pa.Table) -> pl.DataFrame:
    """Arrow JSON columns as their JSON text, for polars."""
    plain = [
        pa.field(f.name, f.type.storage_type) if isinstance(f.type, pa.BaseExtensionType) else f
        for f in table.schema
    ]
    return pl.from_arrow(table.cast(pa.schema(plain)))


def _size_category(rows: int) -> str:
    for limit, name in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
    ):
        if rows < limit:
            return name
    return "10M<n<100M"


def _recipe_yaml(recipe: dict) -> str:
    """The recipe in its own key order (the manifest stores keys sorted)."""
    from hsa.augment.recipe import Recipe

    try:
        return Recipe.from_dict(recipe).to_yaml()
    except HsaError:  # a transform of this version is not installed here: show it as stored
        return yaml.safe_dump(recipe, sort_keys=False, allow_unicode=True)


def top_rejects(version_dir: str | os.PathLike, *, limit: int) -> list[tuple[str, str, int]]:
    """The most frequent (stage, reason, count) of a version's rejects, grouped and said as in
    every summary of rejects (:func:`hsa.dataset.outcome.top_reasons`: on their first
    :data:`~hsa.dataset.outcome.REASON_CHARS` characters, a group of one reason whole)."""
    path = Path(version_dir) / "rejects.parquet"
    with reading_parquet(path, Path(version_dir)):
        rejects = read_table(path, ["stage", "reason"])
    if not rejects.height:
        return []
    grouped = (
        rejects.with_columns(start=pl.col("reason").str.slice(0, REASON_CHARS))
        .group_by(["stage", "start"])
        .agg(
            pl.len().alias("count"),
            pl.col("reason").n_unique().alias("kinds"),
            pl.col("reason").min().alias("whole"),
        )
        .sort(["count", "stage", "start"], descending=[True, False, False])
        .head(limit)
    )
    return [
        (stage, whole if kinds == 1 else f"{start} …", count)
        for stage, start, count, kinds, whole in grouped.select(
            ["stage", "start", "count", "kinds", "whole"]
        ).rows()
    ]


def card_text(
    version_dir: str | os.PathLike,
    *,
    license: str = "other",
    manifest: dict | None = None,
    shape: RowShape | None = None,
) -> str:
    """The card of a version; ``manifest`` and the rows' ``shape`` when the caller holds them
    already (the writer tallies the shape as it writes; without it the shards are read)."""
    root = Path(version_dir)
    manifest = manifest if manifest is not None else read_manifest(root)
    split = manifest["split"]
    shape = shape if shape is not None else RowShape.read(root, manifest)
    listing = listing_path(root, manifest)
    recipe = manifest.get("recipe") or {}
    languages = sorted(shape.languages)
    front = {
        "license": license,
        "task_categories": ["text-generation"],
        # the Hub indexes a dataset by these: only what the data states, never a default
        **({"language": languages} if languages else {}),
        "pretty_name": f"{manifest['name']} ({manifest['version']})",
        "tags": [
            "tool-calling",
            "function-calling",
            "agents",
            "harness-state-augmentation",
            "hsa",
            "synthetic",
        ],
        "size_categories": [_size_category(manifest["counts"]["rows"])],
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": split, "path": f"data/{split}-*.parquet"}],
            }
        ],
    }
    env = ImmutableSandboxedEnvironment(
        loader=jinja2.FileSystemLoader(str(templates_dir() / "cards")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template("dataset_card.md.j2").render(
        front_matter=yaml.safe_dump(front, sort_keys=False, allow_unicode=True),
        pretty_name=front["pretty_name"],
        rows=manifest["counts"]["rows"],
        counts=manifest["counts"],
        name=manifest["name"],
        version=manifest["version"],
        split=split,
        recipe_yaml=_recipe_yaml(manifest["recipe"]),
        per_source=distribution(shape.per_source),
        messages_dist=distribution(shape.messages),
        tools_dist=distribution(shape.tools),
        by_family=sorted(manifest["statistics"]["rows_by_family"].items()),
        by_transform=sorted(manifest["statistics"]["rows_by_transform"].items()),
        skill_licenses=[
            (
                skill,
                "not stated" if license is None else license,
                "-" if license is None else "yes" if is_open(license) else "**no**",
            )
            for skill, license in manifest.get("skill_licenses", {}).items()
        ],
        rejects=top_rejects(root, limit=20),
        episodes=Path(manifest["input"]["episodes"]).name,
        example_id=f"{shape.first_id if shape.first_id is not None else 'SOURCE'}#1",
        hsa_version=manifest["hsa_version"],
        transform_versions=", ".join(f"{k} {v}" for k, v in manifest["transform_versions"].items()),
        rollout=manifest.get("rollout"),  # a teacher rollout's settings and counts (hsa.rollout)
        recipe_name=recipe.get("name"),
        recipe_variants=recipe.get("variants_per_episode"),
        # A recipe with a pool: how many harness variants the rows took, rows per variant, and
        # the listing that names each one with its lineage (hsa.dataset.harness_variants).
        pool=recipe.get("harness_variants"),
        harness_variants=manifest["statistics"].get("harness_variants"),
        harness_variant_listing=None if listing is None else listing.relative_to(root).as_posix(),
    )


def card_license(version_dir: str | os.PathLike) -> str | None:
    """The license in a version's card front matter, or None without a readable card."""
    try:
        text = read_text(Path(version_dir) / "README.md")
        _, front, _ = text.split("---\n", 2)
        meta = yaml.safe_load(front)
    except (OSError, ValueError, HsaError, yaml.YAMLError):  # HsaError: not UTF-8
        return None
    return meta.get("license") if isinstance(meta, dict) else None


def write_card(
    version_dir: str | os.PathLike,
    *,
    license: str = "other",
    manifest: dict | None = None,
    shape: RowShape | None = None,
) -> Path:
    path = Path(version_dir) / "README.md"
    text = card_text(version_dir, license=card_license_id(license), manifest=manifest, shape=shape)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
