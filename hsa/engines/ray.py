"""The Ray engine: Ray Data reads the staged input, ``map_batches`` runs the batch function on
actors, and batches come back in input order for the same writer the local engine uses (so both
engines write byte-identical shards).

Ray is an extra (``pip install 'hsa[ray]'``); ``ray.init`` joins the cluster in ``RAY_ADDRESS``
when set, else starts a local one with ``workers`` CPUs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from hsa.batch import INPUT_SCHEMA, BatchFunction, BatchJob
from hsa.errors import HsaError


_functions: dict[bytes, BatchFunction] = {}


def _apply(batch: pa.Table, job: BatchJob) -> pa.Table:
    """Run as a Ray task; the batch function is built once per worker process and job."""
    key = orjson.dumps(dataclasses.asdict(job), option=orjson.OPT_SORT_KEYS)
    function = _functions.get(key)
    if function is None:
        function = _functions[key] = BatchFunction(job)
    return pa.Table.from_batches([function(batch)])


def run_ray(job: BatchJob, batches: Iterator[pa.RecordBatch], *, workers: int, staging: Path
            ) -> Iterator[pa.RecordBatch]:
    try:
        import ray
    except ImportError:
        raise HsaError("the ray engine needs Ray: pip install 'hsa[ray]'") from None
    # Stage the input as Parquet so Ray reads it like any dataset (and keeps line numbers). It
    # lives beside the staging folder, not in it, and is deleted after the run: a version holds
    # the same files whatever the engine.
    staged = staging.parent / f"{staging.name}.ray-input.parquet"
    batch_rows = None
    with pq.ParquetWriter(staged, INPUT_SCHEMA) as writer:
        for batch in batches:
            batch_rows = batch_rows or batch.num_rows
            writer.write_batch(batch)
    if batch_rows is None:
        staged.unlink(missing_ok=True)
        return
    if not ray.is_initialized():
        ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False,
                 ignore_reinit_error=True)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    # Tasks, not actors: actors would hold every CPU of a small cluster and starve the read tasks.
    dataset = ray.data.read_parquet(str(staged)).map_batches(
        _apply, fn_kwargs={"job": job}, batch_size=batch_rows, batch_format="pyarrow")
    try:
        for table in dataset.iter_batches(batch_format="pyarrow", batch_size=None):
            yield from table.to_batches()
    finally:
        staged.unlink(missing_ok=True)
