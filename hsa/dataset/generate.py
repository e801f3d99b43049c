"""``hsa generate``: stream episodes through a recipe into a versioned, verified dataset.

    <out>/<recipe name>/<version>/
      data/<split>-00000-of-000NN.parquet   rendered rows (hsa.dataset.rows.ROW_SCHEMA)
      rejects.parquet                       every input line or variant that did not become a row
      harness_variants.parquet              with a pool: each harness variant the rows took, with
                                            its lineage (hsa.dataset.harness_variants)
      manifest.json                         recipe, input fingerprint, versions, counts, shard sha256
      README.md                             the Hugging Face dataset card

Every input line is accounted for: ``input_lines = sources_out + sources_all_rejected +
load_rejects``, and every variant is a row or a reject. A version that exists already is reused
only after its files check against its manifest; a damaged one is rebuilt. Nothing is written
outside ``<out>``: the recipe and split names are single safe path components, and the local
paths of the inputs are kept beside the version (``.<version>.inputs.json``), never in it.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from hsa import __version__
from hsa.augment.recipe import Recipe
from hsa.dataset.allocator import tune_allocators
from hsa.dataset.batch import INPUT_SCHEMA, BatchJob
from hsa.dataset.engines import ENGINES, run_engine
from hsa.dataset.fingerprint import output_fingerprint, shipped_assets, version_id, with_trust
from hsa.dataset.harness_variants import HarnessVariantListing, HarnessVariantTally, unlisted
from hsa.dataset.licenses import card_license_id
from hsa.dataset.outcome import DEFAULT_MAX_REJECT_SHARE, failure
from hsa.dataset.row_shape import RowShape, tally
from hsa.dataset.rows import REJECT_SCHEMA, ROW_SCHEMA
from hsa.dataset.writer import (
    ShardWriter,
    finalize_shards,
    publish,
    read_manifest,
    record_inputs,
    sealed,
    sha256,
    staging_dir,
    version_problems,
)
from hsa.errors import HsaError
from hsa.files.jsonl import atomic_path, input_file, raw_lines
from hsa.model.episode import duplicate_id

MANIFEST_VERSION = 1
DEFAULT_BATCH = 256
MAX_BATCH = 65_536
MAX_WORKERS = 256
# Variants held in memory for one batch: the batch is cut smaller when a recipe makes many
# variants per episode (output never depends on the batch size).
MAX_BATCH_VARIANTS = 16_384
_SPLIT = re.compile(r"\w+(\.\w+)*")  # Hugging Face's rule for split names


@dataclass
class Result:
    path: Path
    manifest: dict
    reused: bool = False
    repaired: list[str] = field(default_factory=list)  # what was wrong with the version replaced

    @property
    def rejected(self) -> int:
        counts = self.manifest["counts"]
        return counts["load_rejects"] + counts["variant_rejects"]

    @property
    def reject_share(self) -> float:
        """Rejects among everything the run made (rows + rejects)."""
        total = self.rejected + self.manifest["counts"]["rows"]
        return self.rejected / total if total else 0.0

    def failure(self, max_reject_share: float = DEFAULT_MAX_REJECT_SHARE) -> str | None:
        """Why the run does not count as a success (see hsa.dataset.outcome), or None."""
        counts = self.manifest["counts"]
        return failure(
            counts["rows"],
            self.rejected,
            what="rows",
            max_reject_share=max_reject_share,
            lines=(counts["load_rejects"], counts["input_lines"]),
        )


@dataclass
class _Counts:
    input_lines: int = 0
    lines_done: int = 0  # input lines whose outputs came back
    rows: int = 0
    load_rejects: int = 0
    variant_rejects: int = 0
    sources_out: int = 0
    sources_all_rejected: int = 0
    rejects_by_stage: Counter = field(default_factory=Counter)
    rows_by_family: Counter = field(default_factory=Counter)
    rows_by_transform: Counter = field(default_factory=Counter)
    rows_by_harness_variant: HarnessVariantTally = field(
        default_factory=lambda: HarnessVariantTally()
    )
    skill_licenses: dict = field(default_factory=dict)  # "<harness>/<skill id>" -> licence


def read_batches(path: Path, batch_size: int, counts: _Counts) -> Iterator[pa.RecordBatch]:
    """Non-blank lines of the episodes file with their 1-based numbers, ``batch_size`` a batch."""
    lines, texts = [], []
    for number, raw in raw_lines(path, what="episodes"):
        counts.input_lines += 1
        lines.append(number)
        texts.append(raw.rstrip(b"\r\n"))
        if len(lines) == batch_size:
            yield pa.RecordBatch.from_arrays(
                [pa.array(lines, pa.int64()), pa.array(texts, pa.binary())], schema=INPUT_SCHEMA
            )
            lines, texts = [], []
    if lines:
        yield pa.RecordBatch.from_arrays(
            [pa.array(lines, pa.int64()), pa.array(texts, pa.binary())], schema=INPUT_SCHEMA
        )


def generate(
    recipe: Recipe,
    episodes: str | os.PathLike,
    out: str | os.PathLike,
    *,
    harness: str | os.PathLike | None = None,
    engine: str = "local",
    workers: int = 1,
    batch_size: int = DEFAULT_BATCH,
    split: str = "train",
    trust_hooks: bool = False,
    license: str = "other",
    on_progress: Callable[[int, int], None] | None = None,
    harness_roots: tuple[str | os.PathLike, ...] = (),
) -> Result:
    """Make (or find) the version of ``recipe`` over ``episodes``; return its folder.

    ``on_progress(lines, rows)`` reports the input lines done and rows made so far, within
    batches too. Harness folders that episodes reference must lie beside the episodes file or
    under ``harness_roots``. Sets this process's allocators to keep freed buffers for reuse,
    for the rest of its life (hsa.dataset.allocator; ``HSA_ALLOCATOR=default`` opts out)."""
    if engine not in ENGINES:
        raise HsaError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if not 1 <= workers <= MAX_WORKERS:
        raise HsaError(f"workers must be from 1 to {MAX_WORKERS}, got {workers}")
    if not 1 <= batch_size <= MAX_BATCH:
        raise HsaError(f"batch size must be from 1 to {MAX_BATCH}, got {batch_size}")
    card_license_id(license)  # before the work: the card is written last
    if not _SPLIT.fullmatch(split):
        raise HsaError(
            f"split must be a name like train or validation (letters, digits, _ "
            f"and inner dots), got {split!r}"
        )
    per_episode = len(recipe.variant_indices)
    batch_size = max(1, min(batch_size, MAX_BATCH_VARIANTS // per_episode))
    harness_roots = tuple(str(Path(r).resolve()) for r in harness_roots)
    episodes = input_file(episodes, "episodes file")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise HsaError("output path exists and is a file, expected a directory", file=str(out))
    if harness is not None and not Path(harness).is_dir():
        raise HsaError("harness folder does not exist or is not a directory", file=str(harness))

    transforms = recipe.transform_versions()
    fingerprint = with_trust(output_fingerprint(out, episodes, harness, harness_roots), trust_hooks)
    version = version_id(recipe.version_dict(), fingerprint, __version__, transforms, split)
    final = out / recipe.name / version
    repaired: list[str] = []
    if (final / "manifest.json").is_file():
        try:
            manifest = read_manifest(final)
            repaired = version_problems(final, manifest)
        except HsaError as exc:
            repaired = [exc.reason]
        if not repaired and (why := unlisted(manifest)):
            repaired = [why]  # the same rows, a file short: rebuilt with it
        if not repaired:
            # The license is the card's, not the data's: same rows, same version, new card.
            from hsa.dataset.card import card_license, write_card

            if card_license(final) != license:
                write_card(final, license=license, manifest=manifest)
            record_inputs(final, episodes, None if harness is None else Path(harness))
            return Result(final, manifest, reused=True)

    tune_allocators()  # before the workers fork: they inherit it (hsa.dataset.allocator)
    manifest, published = stage_version(
        final,
        lambda staging: _write(
            recipe,
            episodes,
            harness,
            staging,
            engine=engine,
            workers=workers,
            batch_size=batch_size,
            split=split,
            trust_hooks=trust_hooks,
            version=version,
            fingerprint=fingerprint,
            transforms=transforms,
            on_progress=on_progress,
            harness_roots=harness_roots,
        ),
        license=license,
        replace=bool(repaired),
        out=out,
    )
    record_inputs(final, episodes, None if harness is None else Path(harness))
    if not published:  # an identical version appeared meanwhile: report what it holds
        manifest = read_manifest(final)
    return Result(final, manifest, reused=not published, repaired=repaired)


def stage_version(
    final: Path,
    write: Callable[[Path], tuple[dict, RowShape]],
    *,
    license: str,
    replace: bool,
    out: Path,
    kept: str = "",
) -> tuple[dict, bool]:
    """Write a version into a staging folder beside ``final`` (``write(staging)`` returns its
    manifest and the shape of the rows it wrote), add its card, and publish it: (manifest,
    published). Any failure removes the staging folder, and a full disk is one clear error
    (``kept`` says what survives it), so a version appears whole or not at all. Shared by
    ``hsa generate`` and rollouts."""
    from hsa.dataset.card import write_card  # the card reads the writer's files (rejects)

    # The folders above the version this run makes: a run that publishes nothing leaves none.
    made = [p for p in final.parents if not p.exists()]
    staging = None
    try:
        staging = staging_dir(final)
        manifest, shape = write(staging)
        write_card(staging, license=license, manifest=manifest, shape=shape)
        published = publish(staging, final, replace=replace)
    except OSError as exc:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        _remove_empty(made)
        if exc.errno == errno.ENOSPC:
            raise HsaError(
                f"disk full while writing version {final.name}; nothing was published{kept}",
                file=str(out),
            ) from None
        raise
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        _remove_empty(made)
        raise
    return manifest, published


def _remove_empty(folders: list[Path]) -> None:
    """Remove each of ``folders`` (innermost first) that is still empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (another run's version), or already gone
            return


def _write(
    recipe: Recipe,
    episodes: Path,
    harness,
    staging: Path,
    *,
    engine: str,
    workers: int,
    batch_size: int,
    split: str,
    trust_hooks: bool,
    version: str,
    fingerprint: dict,
    transforms: dict,
    on_progress,
    harness_roots: tuple[str, ...],
) -> tuple[dict, RowShape]:
    job = BatchJob(
        recipe=recipe.to_dict(),
        source=str(episodes),
        harness_dir=None if harness is None else str(harness),
        trust_hooks=trust_hooks,
        version=version,
        harness_roots=harness_roots,
    )
    (staging / "data").mkdir()
    rows = ShardWriter(staging / "data", split, ROW_SCHEMA)
    rejects = ShardWriter(staging, "rejects", REJECT_SCHEMA, shard_rows=sys.maxsize)
    listing = HarnessVariantListing(staging) if recipe.harness_variants is not None else None
    counts = _Counts()
    shape = RowShape()  # for the card, tallied here so that it never reads the shards again
    line_state: dict[int, str] = {}  # the last line seen: "row" once it has a row, else "reject"
    shown = 0  # the most lines reported done: workers' counts run ahead of the batches back

    def lines_done(n: int) -> None:
        nonlocal shown
        shown = max(shown, n)
        on_progress(shown, counts.rows)

    batches = run_engine(
        engine,
        job,
        read_batches(episodes, batch_size, counts),
        workers=workers,
        staging=staging,
        on_lines=lines_done if on_progress else None,
    )
    seen_ids: set[str] = set()
    # closing(): an error below must stop the engine (its process pool) at once, not at GC.
    for batch in closing_iterator(batches):
        table = _reject_duplicate_ids(pa.Table.from_batches([batch]), seen_ids, job.source_name)
        is_reject = pc.invert(pc.is_null(table.column("hsa_reject")))
        _count_sources(table, is_reject, line_state, counts)
        any_reject = bool(pc.any(is_reject).as_py())
        # Filtering copies every column (kilobytes of JSON a row): the parent's largest cost
        # beside writing, and it competes with the workers for the cores. Most batches have no
        # reject, and then the batch is what is kept.
        kept = table.filter(pc.invert(is_reject)) if any_reject else table
        rows.add(kept.select(ROW_SCHEMA.names))
        shape.add(kept)
        counts.rows += kept.num_rows
        counts.rows_by_family.update(tally(pc.list_flatten(kept.column("hsa_families"))))
        counts.rows_by_transform.update(tally(pc.list_flatten(kept.column("hsa_fired"))))
        counts.rows_by_harness_variant.add(
            kept.column("hsa_harness_variant").drop_null().to_pylist()
        )
        if listing is not None:
            listing.add(
                kept.column("hsa_harness_variant"),
                kept.column("hsa_harness_lineage_end"),
                kept.column("hsa_lineage"),
            )
        for licenses in kept.column("hsa_skill_licenses").drop_null().to_pylist():
            counts.skill_licenses.update(orjson.loads(licenses))
        records = (
            [orjson.loads(r) for r in table.filter(is_reject).column("hsa_reject").to_pylist()]
            if any_reject
            else []
        )
        for record in records:
            if record["variant"] is None:  # the input line never became a usable episode
                counts.load_rejects += 1
            else:
                counts.variant_rejects += 1
            counts.rejects_by_stage[record["stage"]] += 1
        if records:
            rejects.add(pa.Table.from_pylist(records, schema=REJECT_SCHEMA))
        if on_progress:
            lines_done(counts.lines_done)
    _close_sources(line_state, counts)
    shards = finalize_shards(rows.close(), split)
    ((reject_path, _),) = rejects.close()
    reject_path.rename(staging / "rejects.parquet")
    accounted = counts.sources_out + counts.sources_all_rejected + counts.load_rejects
    if accounted != counts.input_lines:
        raise HsaError(
            f"internal error: {counts.input_lines} input lines but {accounted} "
            f"accounted for; nothing was published"
        )
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "name": recipe.name,
        "version": version,
        "split": split,
        "recipe": recipe.to_dict(),
        "seed": recipe.seed,
        # Names, not paths: a manifest is published with the version (see hsa.dataset.writer.inputs_path).
        "input": {
            "episodes": episodes.name,
            **fingerprint,
            "harness": None if harness is None else Path(harness).resolve().name,
        },
        "hsa_version": __version__,
        "transform_versions": transforms,
        "assets": shipped_assets(),
        "counts": {
            "input_lines": counts.input_lines,
            "sources_out": counts.sources_out,
            "sources_all_rejected": counts.sources_all_rejected,
            "load_rejects": counts.load_rejects,
            "rows": counts.rows,
            "variant_rejects": counts.variant_rejects,
        },
        "statistics": {
            "rows_by_family": dict(sorted(counts.rows_by_family.items())),
            "rows_by_transform": dict(sorted(counts.rows_by_transform.items())),
            "rejects_by_stage": dict(sorted(counts.rejects_by_stage.items())),
        },
        # Every skill whose text the rows carry, with the licence its SKILL.md states (or null).
        "skill_licenses": dict(sorted(counts.skill_licenses.items())),
        "shards": shards,
        "rejects": {
            "path": "rejects.parquet",
            "rows": counts.load_rejects + counts.variant_rejects,
            "sha256": sha256(staging / "rejects.parquet"),
        },
    }
    if counts.rows_by_harness_variant.rows:  # a pooled recipe: how many rows the variants serve
        manifest["statistics"]["harness_variants"] = counts.rows_by_harness_variant.summary()
    if listing is not None:
        manifest["harness_variants"] = listing.close()
    manifest = sealed(manifest)
    with atomic_path(staging / "manifest.json") as tmp:
        tmp.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    return manifest, shape


def closing_iterator(iterator):
    """Iterate, and close the generator however the loop ends."""
    with closing(iterator):
        yield from iterator


def _reject_duplicate_ids(table: pa.Table, seen: set[str], source: str) -> pa.Table:
    """Outputs of a line whose episode id an earlier line already had become one load reject:
    variants are identified, and their randomness derived, by id."""
    lines = table.column("hsa_line").to_pylist()
    ids = table.column("hsa_source_id").to_pylist()
    keep, duplicates = [], {}
    current_line, duplicate = None, False
    for line, source_id, is_load_reject in zip(lines, ids, _load_rejects(table), strict=True):
        if line != current_line:
            current_line = line
            duplicate = source_id is not None and not is_load_reject and source_id in seen
            if source_id is not None and not is_load_reject:
                if duplicate:
                    duplicates[line] = source_id
                seen.add(source_id)
        keep.append(not duplicate)
    if not duplicates:
        return table
    kept = table.filter(pa.array(keep))
    records = [
        {
            **dict.fromkeys(table.schema.names),
            "hsa_source_id": source_id,
            "hsa_line": line,
            "hsa_reject": orjson.dumps(
                {
                    "source": source,
                    "line": line,
                    "id": source_id,
                    "variant": None,
                    "stage": "load",
                    "field": "id",
                    "lineage": None,
                    "reason": duplicate_id(None),
                }
            ).decode(),
        }
        for line, source_id in duplicates.items()
    ]
    extra = pa.Table.from_pylist(records, schema=table.schema)
    # Keep line order: the bookkeeping downstream reads lines in sequence.
    return pa.concat_tables([kept, extra]).sort_by("hsa_line")  # a stable sort


def _load_rejects(table: pa.Table) -> list[bool]:
    """Per output row: is it a load reject (its input line never became an episode)? Those are
    the rejects without a variant index."""
    return pc.and_(
        pc.is_valid(table.column("hsa_reject")), pc.is_null(table.column("hsa_variant"))
    ).to_pylist()


def _count_sources(
    table: pa.Table, is_reject: pa.ChunkedArray, state: dict, counts: _Counts
) -> None:
    """Each input line ends as a source with rows, a source whose variants were all rejected, or a
    load reject. Output is in line order, so only the current line needs remembering."""
    for line, rejected, load in zip(
        table.column("hsa_line").to_pylist(),
        is_reject.to_pylist(),
        _load_rejects(table),
        strict=True,
    ):
        if line not in state:
            _close_sources(state, counts)
            state[line] = "pending"
            counts.lines_done += 1
        if not rejected:
            state[line] = "row"
        elif load:
            state[line] = "load"


def _close_sources(state: dict, counts: _Counts) -> None:
    for status in state.values():
        if status == "row":
            counts.sources_out += 1
        elif status == "pending":
            counts.sources_all_rejected += 1
    state.clear()
