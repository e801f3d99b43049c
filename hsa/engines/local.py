"""The local engine: the batch function in this process (1 worker) or in a process pool.

At most ``2 * workers`` batches are in flight, so memory stays bounded by the batch size, not the
dataset size. A worker that dies (killed, out of memory) stops the run with a clear error; the
version being written is left incomplete and never appears (see hsa.writer).
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pyarrow as pa

from hsa.batch import BatchFunction, BatchJob
from hsa.errors import HsaError

_function: BatchFunction | None = None


def _init(job: BatchJob) -> None:
    global _function
    _function = BatchFunction(job)


def _work(batch: pa.RecordBatch) -> pa.RecordBatch:
    assert _function is not None
    return _function(batch)


def run_local(job: BatchJob, batches: Iterator[pa.RecordBatch], *, workers: int
              ) -> Iterator[pa.RecordBatch]:
    if workers <= 1:
        function = BatchFunction(job)
        for batch in batches:
            yield function(batch)
        return
    context = multiprocessing.get_context("fork")
    pending: deque = deque()
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_init,
                             initargs=(job,)) as pool:
        try:
            for batch in batches:
                pending.append(pool.submit(_work, batch))
                if len(pending) >= 2 * workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BrokenProcessPool as exc:
            raise HsaError("a worker process died (killed, or out of memory) before finishing "
                           "its batch; nothing was published: rerun to complete the "
                           "version") from exc
