"""The batch function every engine runs: raw episode lines in, rendered rows and rejects out.

Input: an Arrow record batch with ``line`` (1-based line number in the episodes file) and
``text`` (the line's bytes). Output: a record batch with the row columns of
:data:`hsa.dataset.rows.ROW_SCHEMA` plus ``hsa_reject`` (JSON, set only on reject entries) and
``hsa_line`` (the input line it came from), in input order, variants in index order. Every input line yields rows, rejects, or both; nothing is
dropped. The function is pure given its :class:`BatchJob`, so any engine, any batch size and any
number of workers give the same rows in the same order.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson
import pyarrow as pa

from hsa.augment.lineage import fired_steps
from hsa.augment.recipe import Recipe
from hsa.augment.variant import VariantReject
from hsa.dataset.harness_variants import variant_lineage_end
from hsa.dataset.pipeline import augment_episode, check_source
from hsa.dataset.row_shape import shape_of
from hsa.dataset.rows import JSON, ROW_SCHEMA, reject_row, skill_licenses, variant_row
from hsa.errors import HsaError, Reject
from hsa.files.jsonl import line_error, loads
from hsa.model.episode import Episode
from hsa.model.harness import Harness, load_harness

INPUT_SCHEMA = pa.schema([("line", pa.int64()), ("text", pa.binary())])
# hsa_line (the input line), hsa_reject, hsa_fired (the transforms that fired, one entry per
# firing, counted in the workers so the writer never parses lineage), hsa_skill_licenses
# ({"<harness>/<skill id>": licence or null} of the source harness, on the first row of each
# source, for the card) and hsa_harness_lineage_end (how many characters of the row's
# hsa_lineage, closed by "]", are its harness variant's lineage: the writer lists each variant
# with it, cutting text, never parsing JSON) are for the writer's bookkeeping, not written.
OUTPUT_SCHEMA = (
    ROW_SCHEMA.append(pa.field("hsa_reject", JSON))
    .append(pa.field("hsa_line", pa.int64()))
    .append(pa.field("hsa_fired", pa.list_(pa.string())))
    .append(pa.field("hsa_skill_licenses", JSON))
    .append(pa.field("hsa_harness_lineage_end", pa.int32()))
    # the row's shape for the card (hsa.dataset.row_shape.SHAPE_COLUMNS), counted here so that
    # the writer tallies numbers instead of scanning every row's JSON
    .append(pa.field("hsa_message_count", pa.int32()))
    .append(pa.field("hsa_tool_count", pa.int32()))
    .append(pa.field("hsa_reply_languages", pa.list_(pa.string())))
)
_EMPTY_ROW = dict.fromkeys(ROW_SCHEMA.names)

# A batch makes and drops many small objects (episodes, harness variants, rows) while the memos
# keep a few hundred thousand alive, and at CPython's default (a young collection every 700
# allocations) the collector scanned the survivors over and over: 11% of a per-episode-tools
# batch's time (2,000 bench episodes, timed by gc.callbacks), 4% with 10,000. Nothing a batch
# makes depends on when the collector runs.
GC_YOUNG_THRESHOLD = 10_000


@contextmanager
def collections_spaced() -> Iterator[None]:
    """Young collections at most every :data:`GC_YOUNG_THRESHOLD` allocations while the block
    runs; the caller's thresholds are put back after, whatever happens."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], GC_YOUNG_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


@dataclass(frozen=True)
class BatchJob:
    """Everything a worker needs, as plain data (it crosses process and Ray boundaries)."""

    recipe: dict
    source: str  # the episodes file (relative harness references start there)
    harness_dir: str | None
    trust_hooks: bool
    version: str
    harness_roots: tuple[str, ...] = ()  # more folders harness references may lead into

    @property
    def source_name(self) -> str:
        """How reject records name the episodes file: its name, never a local path (rejects
        travel with the dataset)."""
        return Path(self.source).name


class BatchFunction:
    """Callable on input batches; builds its recipe and harness once per process. ``on_line``,
    when set, is called after each input line is done (progress within a batch)."""

    on_line: Callable[[], None] | None = None

    def __init__(self, job: BatchJob):
        self.job = job
        self.recipe = Recipe.from_dict(job.recipe)
        self.harness: Harness | None = (
            load_harness(job.harness_dir, trust_hooks=job.trust_hooks) if job.harness_dir else None
        )
        self.base_dir = Path(job.source).parent
        self.harness_cache: dict = {}

    def __call__(self, batch: pa.RecordBatch | pa.Table) -> pa.RecordBatch:
        with collections_spaced():
            return self._call(batch)

    def _call(self, batch: pa.RecordBatch | pa.Table) -> pa.RecordBatch:
        lines = batch.column("line").to_pylist()
        texts = batch.column("text").to_pylist()
        out: list[dict] = []
        for line, text in zip(lines, texts, strict=True):
            for row in self.rows_for(line, text):
                row["hsa_line"] = line
                out.append(row)
            if self.on_line is not None:
                self.on_line()
        # Column by column: RecordBatch.from_pylist spent twice as long on the same rows (it
        # converts each row's mapping, and rows carry kilobytes of JSON in several columns).
        return pa.RecordBatch.from_arrays(
            [pa.array([row.get(f.name) for row in out], f.type) for f in OUTPUT_SCHEMA],
            schema=OUTPUT_SCHEMA,
        )

    def rows_for(self, line: int, text: bytes) -> list[dict]:
        try:
            data = loads(text)
        except orjson.JSONDecodeError as exc:
            return [
                self._reject(
                    Reject(self.job.source_name, line, None, None, line_error(text, exc)), line
                )
            ]
        try:
            episode = Episode.from_dict(
                data,
                harness=self.harness,
                base_dir=self.base_dir,
                trust_hooks=self.job.trust_hooks,
                harness_cache=self.harness_cache,
                harness_roots=self.job.harness_roots,
            )
        except HsaError as exc:
            row = data.get("id") if isinstance(data, dict) else None
            return [
                self._reject(
                    Reject.from_error(
                        exc,
                        source=self.job.source_name,
                        line=line,
                        id=None if row is None else str(row),
                    ),
                    line,
                )
            ]
        try:
            check_source(episode)
        except HsaError as exc:
            return [
                self._reject(
                    Reject.from_error(
                        exc, source=self.job.source_name, line=line, id=str(episode.id)
                    ),
                    line,
                )
            ]
        out = []
        for item in augment_episode(self.recipe, episode):
            if isinstance(item, VariantReject):
                out.append(self._variant_reject(item, line))
                continue
            try:
                row = variant_row(item, self.job.version)
                out.append(
                    {
                        **row,
                        **shape_of(row["messages"], row["tools"], row["hsa_gold"]),
                        "hsa_reject": None,
                        "hsa_fired": [s.transform for s in fired_steps(item.lineage)],
                        "hsa_skill_licenses": None,
                        # the harness stage's lineage JSON is made once (rows.lineage_json)
                        "hsa_harness_lineage_end": variant_lineage_end(item),
                    }
                )
            except Exception as exc:  # e.g. a layout that does not render for this variant
                reason = str(exc) if isinstance(exc, HsaError) else f"{type(exc).__name__}: {exc}"
                out.append(
                    self._variant_reject(
                        VariantReject(item.source_id, item.index, "render", reason, item.lineage),
                        line,
                    )
                )
        first = next((row for row in out if row["hsa_reject"] is None), None)
        if first is not None and episode.harness.skills:
            first["hsa_skill_licenses"] = orjson.dumps(skill_licenses(episode.harness)).decode()
        return out

    def _reject(self, reject: Reject, line: int) -> dict:
        record = {
            "source": reject.source,
            "line": reject.line if reject.line else line,
            "id": reject.id,
            "variant": None,
            "stage": reject.stage,
            "field": reject.field,
            "reason": reject.reason,
            "lineage": None,
        }
        return {
            **_EMPTY_ROW,
            "hsa_source_id": reject.id,
            "hsa_reject": orjson.dumps(record).decode(),
        }

    def _variant_reject(self, reject: VariantReject, line: int) -> dict:
        record = reject_row(reject, source=self.job.source_name, line=line)
        return {
            **_EMPTY_ROW,
            "hsa_source_id": reject.source_id,
            "hsa_variant": reject.index,
            "hsa_reject": orjson.dumps(record).decode(),
        }
