"""Engines: run the one batch function (hsa.dataset.batch) over input batches, returning output batches
in input order. ``local`` (default) streams through a pool of processes on this machine; ``ray``
runs the same function under Ray Data for clusters. Both give byte-identical versions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa

from hsa.dataset.batch import BatchJob
from hsa.errors import HsaError

ENGINES = ("local", "ray")


def run_engine(
    name: str,
    job: BatchJob,
    batches: Iterator[pa.RecordBatch],
    *,
    workers: int,
    staging: Path,
    on_lines: Callable[[int], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Output batches for ``batches``, in order. ``staging`` is a scratch folder the engine may
    use (Ray reads its input from there). ``on_lines(n)``, where the engine can tell, reports
    the input lines done so far while a batch is still in work."""
    if name == "local":
        from hsa.dataset.engines.local import run_local

        return run_local(job, batches, workers=workers, on_lines=on_lines, staging=staging)
    if name == "ray":
        from hsa.dataset.engines.ray import run_ray

        return run_ray(job, batches, workers=workers, staging=staging)
    raise HsaError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
