"""The local engine: the batch function in this process and, with more workers, a process pool.

With ``workers`` N, N - 1 pool processes and this one run batches. This process collects the
results in input order and writes them, and runs a batch itself only when there is nothing to
collect and the pool has all it can queue. A pool of N processes beside a collector asks N + 1
processes of N cores, and every batch crosses between processes: on 2 cores with 20,000
shared-harness episodes, 2 pool processes came to 1.7x one worker, the collector's receiving,
joining and writing (59 us a row, 11% of all CPU) competing with both for the cores. Output does
not depend on which process ran a batch (the batch function is pure).

At most ``2 * workers`` batches are in flight, so memory stays bounded by the batch size, not the
dataset size. A worker that dies (killed, out of memory) stops the run with a clear error; the
version being written is left incomplete and never appears (see hsa.dataset.writer). Workers die with the
run: a parent killed outright (``kill -9`` runs no cleanup) takes its workers with it instead of
leaving them waiting on their queue forever.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import shutil
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from hsa.dataset.batch import BatchFunction, BatchJob
from hsa.dataset.writer import beside_staging
from hsa.errors import HsaError

_function: BatchFunction | None = None
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
POLL_SECONDS = 0.25  # how often a waiting run reads the workers' progress


def die_with_parent(parent: int) -> None:
    """End this process as soon as process ``parent`` is gone. Linux: the kernel sends SIGKILL
    (prctl PR_SET_PDEATHSIG); elsewhere a daemon thread watches the parent id."""
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:  # it died before we asked
        os._exit(1)
    if not armed:

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, name="hsa-parent-watch", daemon=True).start()


def _init(job: BatchJob, done, parent: int) -> None:
    global _function
    die_with_parent(parent)
    _function = BatchFunction(job)
    _function.on_line = lambda: _line_done(done)


def _line_done(done) -> None:
    """Count an input line done in the counter the pool processes share."""
    with done.get_lock():
        done.value += 1


def _work(batch: pa.RecordBatch, path: str) -> str:
    """Run a batch in a pool process and leave its output at ``path`` (Arrow IPC)."""
    assert _function is not None
    out = _function(batch)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, out.schema) as writer:
        writer.write_batch(out)
    return path


def _handed_over(path: str) -> pa.RecordBatch:
    """A pool process's output, read in one call and its file removed."""
    with pa.OSFile(path) as source:
        data = source.read_buffer()
    os.remove(path)
    return pa.ipc.open_stream(data).read_next_batch()


def run_local(
    job: BatchJob,
    batches: Iterator[pa.RecordBatch],
    *,
    workers: int,
    staging: Path,
    on_lines: Callable[[int], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Output batches in input order; ``on_lines(n)`` reports the input lines done so far, line
    by line in this process and every :data:`POLL_SECONDS` from a pool. A pool hands its
    batches over in a folder beside ``staging``, the version's staging folder
    (:func:`hsa.dataset.writer.beside_staging`)."""
    if workers <= 1:
        function = BatchFunction(job)
        if on_lines is not None:
            done = 0

            def tick() -> None:
                nonlocal done
                done += 1
                on_lines(done)

            function.on_line = tick
        for batch in batches:
            yield function(batch)
        return
    yield from _with_pool(job, batches, workers, on_lines, staging)


def _marking_the_last(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[pa.RecordBatch, bool]]:
    """Each batch, and whether it is the last (one batch read ahead)."""
    ahead = next(batches, None)
    while ahead is not None:
        batch, ahead = ahead, next(batches, None)
        yield batch, ahead is None


def _with_pool(
    job: BatchJob,
    batches: Iterator[pa.RecordBatch],
    workers: int,
    on_lines: Callable[[int], None] | None,
    staging: Path,
) -> Iterator[pa.RecordBatch]:
    context = multiprocessing.get_context("fork")
    done = context.Value("q", 0)  # lines the pool processes ran; each adds under its lock
    done_here = 0  # lines this process ran, counted apart: it never takes that lock
    pool_size = workers - 1
    queued_at_most = 2 * pool_size  # a batch running and one waiting, per pool process
    in_flight_at_most = 2 * workers
    # In input order: a pool's future (of its output's file), or a batch this process ran.
    pending: deque[Future | pa.RecordBatch] = deque()
    here: BatchFunction | None = None

    def report() -> None:
        if on_lines is not None:
            # Read without the lock: a pool process killed while holding it (the OOM killer
            # strikes anywhere) would leave this process waiting on it forever instead of
            # seeing the broken pool, whose other processes the executor then terminates. An
            # aligned 8-byte read is never torn.
            on_lines(done.get_obj().value + done_here)

    def tick() -> None:
        nonlocal done_here
        done_here += 1
        report()

    def collected(item: Future | pa.RecordBatch) -> pa.RecordBatch:
        if not isinstance(item, Future):
            return item
        while True:
            try:
                path = item.result(timeout=POLL_SECONDS)
            except TimeoutError:
                report()
                continue
            report()
            return _handed_over(path)

    def ready(item: Future | pa.RecordBatch) -> bool:
        return not isinstance(item, Future) or item.done()

    # Pool processes hand their output over in files, not through the pool's pipe: this
    # process reads that pipe in a thread that takes the GIL for each 64 KiB, and while this
    # process runs a batch the thread waits up to the GIL's switch interval (5 ms) each time,
    # so a pool process sits blocked on a full pipe. On 20,000 shared-harness episodes the pool
    # process was idle 14 s of 38; with a 0.5 ms switch interval the run took 29 s.
    with (
        _handover_folder(staging) as handover,
        ProcessPoolExecutor(
            pool_size, mp_context=context, initializer=_init, initargs=(job, done, os.getpid())
        ) as pool,
    ):
        try:
            for index, (batch, last) in enumerate(_marking_the_last(batches)):
                while pending and ready(pending[0]):
                    yield collected(pending.popleft())
                # The last batch never waits in the pool's queue: this process would sit idle
                # while the pool ran it after the one it has (on 2,000 per-episode episodes,
                # eight batches, the two took 1.63x one worker's time instead of 2x).
                room = pool_size if last else queued_at_most
                if sum(isinstance(item, Future) and not item.done() for item in pending) < room:
                    path = os.path.join(handover, f"{index}.arrows")
                    pending.append(pool.submit(_work, batch, path))
                else:  # the pool is full and nothing is ready: this process runs the batch
                    if here is None:
                        here = BatchFunction(job)
                        here.on_line = tick
                    pending.append(here(batch))
                if len(pending) >= in_flight_at_most:
                    yield collected(pending.popleft())
            while pending:
                yield collected(pending.popleft())
        except BrokenProcessPool as exc:
            raise HsaError(
                "a worker process died (killed, or out of memory) before finishing "
                "its batch; nothing was published: rerun to complete the "
                "version"
            ) from exc
        except BaseException:
            # An error here or in the writer, or the run closed early: drop the batches the
            # pool has not started instead of running them all before the error shows.
            pool.shutdown(wait=True, cancel_futures=True)
            raise


@contextmanager
def _handover_folder(staging: Path) -> Iterator[str]:
    folder = beside_staging(staging, "handover")
    folder.mkdir()
    try:
        yield str(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
