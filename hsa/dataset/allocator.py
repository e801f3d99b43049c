"""Allocator settings for generation: large buffers freed by one batch are reused by the next.

A generation run makes and frees buffers of megabytes, batch after batch: a batch's rows as JSON
strings and Arrow arrays, the batch a pool process hands over, the row group the writer joins
into one chunk per column. By default glibc's malloc hands such blocks back to the kernel when
they are freed (a block above its mmap threshold is unmapped, and although the threshold rises
after such a free, to at most 32 MiB, free space at the top of the heap above twice it is
trimmed), and Arrow's default pool, mimalloc, purges freed pages after about 10 ms; the next
batch then touches fresh pages, one page fault per 4 KiB. On 20,000 shared-harness
episodes (100,000 rows) with 2 pool processes that was 1.8 million page faults and 7.9 s of
system time out of 59 s of CPU, in the pool processes and in the one that collects and writes.

:func:`tune_allocators` keeps freed memory for reuse instead: glibc serves blocks up to
:data:`MMAP_THRESHOLD` from its heap and keeps up to :data:`TRIM_THRESHOLD` free at its top, and
Arrow allocates through glibc (the system pool), so one setting covers both. The cost is memory
kept for reuse, in each process (the trim threshold bounds only the top of the main heap; freed
blocks below it stay too): one worker's peak went from 821 to 931 MB on 20,000 shared-harness
episodes. What a run writes does not change. Where the C library is not glibc nothing changes,
Arrow's pool included.

The settings are per process and last: :func:`generate` applies them in the process that calls
it (forked pool processes inherit them), and a Ray worker in its own, so a program that calls
``generate`` keeps them afterwards. ``HSA_ALLOCATOR=default`` in a
process's environment leaves its allocators as they are (on a Ray cluster, set it in the
workers' environment too), and a user's own ``ARROW_DEFAULT_MEMORY_POOL`` keeps Arrow's pool.
"""

from __future__ import annotations

import ctypes
import os
import sys

import pyarrow as pa

# MMAP_THRESHOLD is glibc's own ceiling for its moving threshold: blocks above it are few (a row
# group's largest column) and stay mapped. On 20,000 shared-harness episodes, one run each,
# 32/256 MiB (mmap/trim) was the fastest of three with 1 worker and with 2 (2,176 and 3,710
# rows/s), against 64/128 (2,065, 3,550; 185 MB more peak memory) and 32/64 (2,125, 3,447).
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 256 << 20
TOP_PAD = 32 << 20  # the heap grows in steps of this, not glibc's 128 KiB
# mallopt(3) parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
OPT_OUT = "HSA_ALLOCATOR"  # set to "default" to leave the allocators alone

_tuned: dict[str, bool] | None = None


def tune_allocators() -> dict[str, bool]:
    """Apply the settings in this process, once; what was applied: ``glibc`` (the malloc
    thresholds) and ``arrow_pool`` (Arrow through the system allocator)."""
    global _tuned
    if _tuned is None:
        if os.environ.get(OPT_OUT, "").strip().lower() == "default":
            _tuned = {"glibc": False, "arrow_pool": False}
        else:
            glibc = _tune_glibc()
            _tuned = {"glibc": glibc, "arrow_pool": glibc and _use_system_pool()}
    return dict(_tuned)


def _tune_glibc() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only: musl's mallopt does nothing
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settings = (
        (_M_MMAP_THRESHOLD, MMAP_THRESHOLD),
        (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
        (_M_TOP_PAD, TOP_PAD),
    )
    applied = [mallopt(parameter, value) == 1 for parameter, value in settings]  # each one
    return all(applied)


def _use_system_pool() -> bool:
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return False  # the user chose Arrow's pool
    pa.set_memory_pool(pa.system_memory_pool())
    return True
