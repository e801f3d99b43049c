"""The local engine: the batch function in this process (1 worker) or in a process pool.

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
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pyarrow as pa

from hsa.dataset.batch import BatchFunction, BatchJob
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

    def tick() -> None:
        with done.get_lock():
            done.value += 1

    _function.on_line = tick


def _work(batch: pa.RecordBatch) -> pa.RecordBatch:
    assert _function is not None
    return _function(batch)


def run_local(
    job: BatchJob,
    batches: Iterator[pa.RecordBatch],
    *,
    workers: int,
    on_lines: Callable[[int], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Output batches in input order; ``on_lines(n)`` reports the input lines done so far, line
    by line in this process and every :data:`POLL_SECONDS` from a pool."""
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
    context = multiprocessing.get_context("fork")
    done = context.Value("q", 0)
    pending: deque = deque()

    def result(future: Future) -> pa.RecordBatch:
        while True:
            try:
                out = future.result(timeout=POLL_SECONDS)
            except TimeoutError:
                if on_lines is not None:
                    on_lines(done.value)
                continue
            if on_lines is not None:
                on_lines(done.value)
            return out

    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_init, initargs=(job, done, os.getpid())
    ) as pool:
        try:
            for batch in batches:
                pending.append(pool.submit(_work, batch))
                if len(pending) >= 2 * workers:
                    yield result(pending.popleft())
            while pending:
                yield result(pending.popleft())
        except BrokenProcessPool as exc:
            raise HsaError(
                "a worker process died (killed, or out of memory) before finishing "
                "its batch; nothing was published: rerun to complete the "
                "version"
            ) from exc
