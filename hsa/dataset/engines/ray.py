"""The Ray engine: Ray Data reads the staged input, ``map_batches`` runs the batch function in
tasks, and batches come back in input order for the same writer the local engine uses (so both
engines write byte-identical shards).

The staged input is read by our own datasource, one read task per input batch, in order:
``read_parquet`` bin-packs row groups into read tasks (128 MiB each) and can hand them out of
file order, which ``preserve_order`` does not undo (it keeps the order of the read tasks, not of
the rows in a file). At 100k bench episodes that wrote every row, but in another order.

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

from hsa.dataset.allocator import tune_allocators
from hsa.dataset.batch import INPUT_SCHEMA, BatchFunction, BatchJob
from hsa.dataset.writer import beside_staging
from hsa.errors import HsaError

_functions: dict[bytes, BatchFunction] = {}


def _staged_batches(path: Path):
    """A Ray datasource over the staged input: read task ``i`` reads row group ``i`` (one input
    batch), so blocks are in input order and ``preserve_order`` keeps them so."""
    from ray.data import Datasource, ReadTask
    from ray.data.block import BlockMetadata

    class StagedBatches(Datasource):
        def __init__(self, path: Path):
            super().__init__()
            self.path = str(path)
            meta = pq.ParquetFile(path).metadata
            self.groups = [
                (meta.row_group(i).num_rows, meta.row_group(i).total_byte_size)
                for i in range(meta.num_row_groups)
            ]

        def estimate_inmemory_data_size(self) -> int:
            return sum(size for _, size in self.groups)

        def get_read_tasks(
            self, parallelism: int, per_task_row_limit: int | None = None, data_context=None
        ) -> list[ReadTask]:
            # One task per batch whatever the parallelism asked for: the order of read tasks is
            # the order of blocks, and a batch is the unit the batch function works on.
            return [
                ReadTask(
                    lambda i=i: [pq.ParquetFile(self.path).read_row_group(i)],
                    BlockMetadata(
                        num_rows=rows, size_bytes=size, exec_stats=None, input_files=(self.path,)
                    ),
                    schema=INPUT_SCHEMA,
                )
                for i, (rows, size) in enumerate(self.groups)
            ]

    return StagedBatches(path)


def _apply(batch: pa.Table, job: BatchJob) -> pa.Table:
    """Run as a Ray task; the batch function is built once per worker process and job."""
    key = orjson.dumps(dataclasses.asdict(job), option=orjson.OPT_SORT_KEYS)
    function = _functions.get(key)
    if function is None:
        tune_allocators()  # this worker's own process: no generate() ran here
        function = _functions[key] = BatchFunction(job)
    return pa.Table.from_batches([function(batch)])


def run_ray(
    job: BatchJob, batches: Iterator[pa.RecordBatch], *, workers: int, staging: Path
) -> Iterator[pa.RecordBatch]:
    try:
        import ray
    except ImportError:
        raise HsaError("the ray engine needs Ray: pip install 'hsa[ray]'") from None
    # Stage the input as Parquet so Ray reads it like any dataset (and keeps line numbers). It
    # lives beside the staging folder, not in it, and is deleted after the run: a version holds
    # the same files whatever the engine.
    staged = beside_staging(staging, "ray-input.parquet")
    batch_rows = None
    with pq.ParquetWriter(staged, INPUT_SCHEMA) as writer:
        for batch in batches:  # each write is its own row group: one batch, one read task
            batch_rows = batch_rows or batch.num_rows
            writer.write_batch(batch)
    if batch_rows is None:
        staged.unlink(missing_ok=True)
        return
    if not ray.is_initialized():
        ray.init(
            num_cpus=max(1, workers),
            include_dashboard=False,
            log_to_driver=False,
            ignore_reinit_error=True,
        )
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    # Tasks, not actors: actors would hold every CPU of a small cluster and starve the read tasks.
    dataset = ray.data.read_datasource(_staged_batches(staged)).map_batches(
        _apply, fn_kwargs={"job": job}, batch_size=batch_rows, batch_format="pyarrow"
    )
    try:
        for table in dataset.iter_batches(batch_format="pyarrow", batch_size=None):
            yield from table.to_batches()
    finally:
        staged.unlink(missing_ok=True)
