"""Write a dataset version: Parquet shards, rejects, manifest and card, appearing atomically.

Everything is written into a hidden staging folder beside the version (``.<version>.partial-<pid>``)
and renamed into place only when complete, so a version directory either exists whole or not at
all; an interrupted run leaves only a staging folder, which the next run removes. Row groups and
shards are cut by row count alone, never by incoming batch, so the bytes do not depend on batch
size, worker count or engine.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from hsa.errors import HsaError

ROW_GROUP_ROWS = 10_000
SHARD_ROWS = 100_000
PARQUET_OPTIONS = {"compression": "zstd", "write_statistics": True}


class ShardWriter:
    """Buffer rows and write them as fixed-size row groups into fixed-size shards."""

    def __init__(self, folder: Path, stem: str, schema: pa.Schema, *,
                 shard_rows: int = SHARD_ROWS, row_group_rows: int = ROW_GROUP_ROWS):
        self.folder, self.stem, self.schema = folder, stem, schema
        self.shard_rows, self.row_group_rows = shard_rows, min(row_group_rows, shard_rows)
        self.buffer: list[pa.Table] = []
        self.buffered = 0
        self.writer: pq.ParquetWriter | None = None
        self.in_shard = 0
        self.shards: list[tuple[Path, int]] = []

    def add(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        self.buffer.append(table)
        self.buffered += table.num_rows
        while self.buffered >= self.row_group_rows:
            self._flush(self.row_group_rows)

    def _flush(self, rows: int) -> None:
        table = pa.concat_tables(self.buffer)
        group, rest = table.slice(0, rows), table.slice(rows)
        self.buffer, self.buffered = ([rest] if rest.num_rows else []), rest.num_rows
        while group.num_rows:
            if self.writer is None:
                path = self.folder / f"{self.stem}-{len(self.shards):05d}.parquet.partial"
                self.writer = pq.ParquetWriter(path, self.schema, **PARQUET_OPTIONS)
                self.shards.append((path, 0))
            room = self.shard_rows - self.in_shard
            part, group = group.slice(0, room), group.slice(room)
            # One chunk per column: Parquet pages follow Arrow chunks, and chunking depends on
            # how rows arrived (batch size, workers), which must not show in the bytes.
            self.writer.write_table(part.combine_chunks(), row_group_size=self.row_group_rows)
            self.in_shard += part.num_rows
            path, count = self.shards[-1]
            self.shards[-1] = (path, count + part.num_rows)
            if self.in_shard == self.shard_rows:
                self.writer.close()
                self.writer, self.in_shard = None, 0

    def close(self) -> list[tuple[Path, int]]:
        if self.buffered:
            self._flush(self.buffered)
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if not self.shards:  # an empty split still gets one (empty) shard with the schema
            path = self.folder / f"{self.stem}-00000.parquet.partial"
            pq.write_table(self.schema.empty_table(), path, **PARQUET_OPTIONS)
            self.shards.append((path, 0))
        return self.shards


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def finalize_shards(shards: list[tuple[Path, int]], split: str) -> list[dict]:
    """Rename ``<split>-00000.parquet.partial`` to ``<split>-00000-of-000NN.parquet``."""
    out = []
    for i, (path, rows) in enumerate(shards):
        final = path.with_name(f"{split}-{i:05d}-of-{len(shards):05d}.parquet")
        path.rename(final)
        out.append({"path": final.relative_to(final.parent.parent).as_posix(), "rows": rows,
                    "sha256": sha256(final)})
    return out


def staging_dir(final: Path) -> Path:
    """A fresh staging folder beside ``final``; stale ones of earlier runs are removed."""
    parent = final.parent
    if parent.exists() and not parent.is_dir():
        raise HsaError("output path exists and is not a directory", file=str(parent))
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(f".{final.name}.partial-*"):
        pid = stale.name[len(f".{final.name}.partial-"):].split("-", 1)[0]
        if not pid.isdigit() or not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    # Unique even for two runs of one process (threads); the pid lets a later run tell a dead
    # run's leftovers from a live one's.
    return Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-{os.getpid()}-", dir=parent))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid != os.getpid()


def publish(staging: Path, final: Path) -> bool:
    """Rename the complete staging folder to ``final``; False if an identical version won a race
    (the staging folder is then removed)."""
    try:
        os.rename(staging, final)
        return True
    except OSError:
        if (final / "manifest.json").is_file():
            shutil.rmtree(staging, ignore_errors=True)
            return False
        shutil.rmtree(staging, ignore_errors=True)
        raise HsaError("a folder that is not a complete version is in the way; remove it and "
                       "rerun", file=str(final)) from None


def read_manifest(version_dir: Path) -> dict:
    """A published version's manifest.json; HsaError when there is none to read."""
    try:
        return orjson.loads((version_dir / "manifest.json").read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise HsaError(f"not a dataset version: manifest.json unreadable ({exc})",
                       file=str(version_dir)) from None
