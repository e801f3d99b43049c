"""What a version records of the harness variants its rows took (a recipe with a pool,
``harness_variants: N``): the tally behind the manifest's summary and the listing file.

``harness_variants.parquet`` lists every harness variant the rows took, once, with the lineage
of its harness stage (the leading harness-scoped nodes: hsa.augment.stage), which every row of
the variant shares as the start of its own lineage: what an evaluation needs to report a model
per harness variant, and to say what each one is. Entries come in the order the rows first show
them, so the file is the same bytes whatever the batch size, workers or engine. A variant's
name is its source harness's fingerprint and slot; two source harnesses that differ only in key
order share the name but may draw differently, so such a name has one entry per lineage.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hsa.augment.variant import Variant
from hsa.dataset.row_shape import median, tally
from hsa.dataset.rows import JSON, lineage_json
from hsa.dataset.writer import ShardWriter, read_manifest, sha256

LISTING_FILE = "harness_variants.parquet"
LISTING_SCHEMA = pa.schema(
    [
        ("harness_variant", pa.string()),  # "<source harness fingerprint>:<slot>"
        ("lineage", JSON),  # the steps of its harness stage, as in the rows' hsa_lineage
    ]
)
DIGEST = 16  # bytes of the blake2b digests that stand for names (no two collide in practice)
RECENT_STARTS = 1024  # lineage starts the listing writer keeps to skip rows already listed


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=DIGEST).digest()


# A lineage's JSON starts with its first steps' JSON, less the "]" (see rows.lineage_json): so a
# row's harness lineage is cut from its hsa_lineage text at an end the worker knows, never
# parsed.
def lineage_end(harness_lineage_json: str) -> int:
    """Where a harness lineage (its JSON) ends in the lineage of a row that starts with it."""
    return len(harness_lineage_json) - 1


def variant_lineage_end(variant: Variant) -> int | None:
    """Where the lineage of ``variant``'s harness variant ends in its row's ``hsa_lineage``;
    None without a pool."""
    if variant.harness_variant is None:
        return None
    return lineage_end(lineage_json(variant.harness_lineage, variant.stage_steps))


def harness_lineage_of(row_lineage_json: str, end: int) -> str:
    """The harness lineage (JSON) that ends at ``end`` of a row's lineage (JSON)."""
    return row_lineage_json[:end] + "]"


def pool_of(recipe: dict | None) -> int | None:
    """The pool of harness variants per source harness of a manifest's recipe (its canonical
    dict), or None: no pool (one harness per variant), or no recipe (a rollout of originals)."""
    return None if not isinstance(recipe, dict) else recipe.get("harness_variants")


def unlisted(manifest: dict) -> str | None:
    """Why a version lacks the listing it should have (its recipe has a pool, its manifest
    lists no harness_variants.parquet: made by an hsa that did not write one), or None.
    Generated and rollout versions alike (a rollout of a pooled recipe lists its variants since
    hsa.rollout.run.ROLLOUT_ROWS 2)."""
    if pool_of(manifest.get("recipe")) is not None and "harness_variants" not in manifest:
        rollout = manifest.get("kind") == "rollout"
        command = (
            "hsa rollout makes a new version (it re-runs the teacher)"
            if rollout
            else "hsa generate rebuilds it"
        )
        return (
            f"{LISTING_FILE}: the manifest lists none, though the recipe has a pool of harness "
            f"variants (made by an older hsa: {command})"
        )
    return None


class HarnessVariantTally:
    """The rows each harness variant served, in 16 bytes a row.

    Where every episode has a harness of its own (BFCL), there is a harness variant per row: a
    counter of their names grew by about a hundred bytes a row, the one part of a run's memory
    that grew with its size. The names are kept as 16-byte digests instead (blake2b: no two
    names share one in practice) and counted once, at the end."""

    def __init__(self) -> None:
        self._digests = bytearray()

    @property
    def rows(self) -> int:
        return len(self._digests) // DIGEST

    def add(self, names: list[str]) -> None:
        for name in names:
            self._digests += _digest(name)

    def summary(self) -> dict:
        """How many harness variants the rows took and how many rows each served (least, median,
        most): the manifest's summary (the variants themselves are in the listing file)."""
        digests = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(DIGEST), self.rows, [None, pa.py_buffer(bytes(self._digests))]
        )
        per_variant = pc.value_counts(digests).field("counts")
        served = tally(per_variant)  # rows served -> how many variants served that many
        return {
            "count": len(per_variant),
            "rows_min": min(served),
            "rows_median": median(served),
            "rows_max": max(served),
        }


class HarnessVariantListing:
    """Writes ``harness_variants.parquet`` as the batches come back: each (harness variant,
    lineage) the first time a row shows it. Every row says where its variant's lineage ends in
    its own (``hsa_harness_lineage_end``: from the workers for generate, from the journal entry
    for a rollout), so each row stands on its own whatever else its batch keeps. What was listed
    is remembered as 16-byte digests, so that where every episode has a harness of its own (one
    variant a row) memory grows by a set entry, not a lineage, a row."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._writer = ShardWriter(
            folder, "harness_variants", LISTING_SCHEMA, shard_rows=sys.maxsize
        )
        self._listed: set[bytes] = set()
        # The start of a row lineage (its first ``end`` characters) last listed for (name,
        # end), for the most recent RECENT_STARTS of them: a row that starts with it is listed
        # already, found without cutting and hashing its lineage. Where many episodes share a
        # harness variant (the point of a pool) that was most of this writer's time, which
        # runs in the one process that collects the workers' batches. Bounded, as the digests
        # above are the listing's memory.
        self._recent: dict[tuple[str, int], str] = {}

    def add(self, names: pa.ChunkedArray, ends: pa.ChunkedArray, lineages: pa.ChunkedArray) -> None:
        """Rows' harness variants, where their lineages end, and the rows' lineages (JSON)."""
        pooled = pc.is_valid(names)
        new_names, new_lineages = [], []
        for name, end, text in zip(
            names.filter(pooled).to_pylist(),
            ends.filter(pooled).to_pylist(),
            lineages.filter(pooled).to_pylist(),
            strict=True,
        ):
            start = self._recent.get((name, end))
            if start is not None and text.startswith(start):
                continue  # its (name, lineage) is listed: the digest below would say so
            lineage = harness_lineage_of(text, end)
            self._remember(name, end, text[:end])
            digest = _digest(f"{name}\n{lineage}")
            if digest not in self._listed:
                self._listed.add(digest)
                new_names.append(name)
                new_lineages.append(lineage)
        if new_names:
            self._writer.add(
                pa.table(
                    [pa.array(new_names, pa.string()), pa.array(new_lineages, JSON)],
                    schema=LISTING_SCHEMA,
                )
            )

    def _remember(self, name: str, end: int, start: str) -> None:
        recent = self._recent
        recent.pop((name, end), None)
        recent[(name, end)] = start
        if len(recent) > RECENT_STARTS:
            del recent[next(iter(recent))]

    def close(self) -> dict:
        """Finish the file; its manifest entry (``path``, ``rows``, ``sha256``)."""
        ((path, _),) = self._writer.close()
        final = self.folder / LISTING_FILE
        path.rename(final)
        return {"path": LISTING_FILE, "rows": len(self._listed), "sha256": sha256(final)}


class ListedLineages:
    """A version's listing read back for checking rows against it (``hsa verify``): per harness
    variant, where each listed lineage ends and its digest, and which entries a row took."""

    def __init__(self, path: Path):
        self._by_name: dict[str, list[tuple[int, bytes]]] = {}
        self.problems: list[str] = []
        self._untaken: set[bytes] = set()
        for name, lineage in _entries(path):
            digest = _digest(f"{name}\n{lineage}")
            if digest in self._untaken:
                self.problems.append(f"{LISTING_FILE}: {name} is listed twice with one lineage")
                continue
            self._untaken.add(digest)
            self._by_name.setdefault(name, []).append((lineage_end(lineage), digest))
        for entries in self._by_name.values():
            # Longest first: where one listed lineage starts another, a row is the longer's
            # when it starts with it.
            entries.sort(key=lambda entry: -entry[0])

    def check(self, name: str, lineage: str) -> bool:
        """Whether a row of harness variant ``name`` whose lineage is ``lineage`` (its JSON)
        starts with a lineage listed for ``name`` (the longest such); marks that entry taken."""
        for end, digest in self._by_name.get(name, ()):
            if _digest(f"{name}\n{harness_lineage_of(lineage, end)}") == digest:
                self._untaken.discard(digest)
                return True
        return False

    def untaken(self) -> int:
        """How many listed entries no row took."""
        return len(self._untaken)


def listing_path(version_dir: Path, manifest: dict) -> Path | None:
    """The version's listing as its manifest names it, or None when it lists none."""
    entry = manifest.get("harness_variants")
    return version_dir / entry["path"] if isinstance(entry, dict) else None


def listed_lineages(version_dir: Path, names: set[str]) -> dict[str, list[list[dict]]]:
    """The listed lineages (their steps, as :meth:`Step.to_dict` writes them) of the harness
    variants ``names``, in the listing's order; nothing for a version without a listing."""
    path = listing_path(version_dir, read_manifest(version_dir)) if names else None
    if path is None:
        return {}
    out: dict[str, list[list[dict]]] = {}
    for name, lineage in _entries(path):
        if name in names:
            out.setdefault(name, []).append(orjson.loads(lineage))
    return out


def _entries(path: Path) -> Iterator[tuple[str, str]]:
    for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
        yield from zip(
            batch.column("harness_variant").to_pylist(),
            batch.column("lineage").to_pylist(),
            strict=True,
        )
