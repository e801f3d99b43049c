"""Engines: run the one batch function (hsa.batch) over input batches, returning output batches
in input order. ``local`` (default) streams through a pool of processes on this machine; ``ray``
runs the same function under Ray Data for clusters. Both give byte-identical versions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from hsa.batch import BatchJob
from hsa.errors import HsaError

ENGINES = ("local", "ray")


def run_engine(name: str, job: BatchJob, batches: Iterator[pa.RecordBatch], *, workers: int,
               staging: Path) -> Iterator[pa.RecordBatch]:
    """Output batches for ``batches``, in order. ``staging`` is a scratch folder the engine may
    use (Ray reads its input from there)."""
    if name == "local":
        from hsa.engines.local import run_local
        return run_local(job, batches, workers=workers)
    if name == "ray":
        from hsa.engines.ray import run_ray
        return run_ray(job, batches, workers=workers, staging=staging)
    raise HsaError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
