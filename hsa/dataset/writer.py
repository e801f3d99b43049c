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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from hsa.errors import HsaError
from hsa.files.jsonl import plain_permissions
from hsa.files.textfile import read_bytes

ROW_GROUP_ROWS = 10_000
SHARD_ROWS = 100_000
PARQUET_OPTIONS = {"compression": "zstd", "write_statistics": True}


class ShardWriter:
    """Buffer rows and write them as fixed-size row groups into fixed-size shards."""

    def __init__(
        self,
        folder: Path,
        stem: str,
        schema: pa.Schema,
        *,
        shard_rows: int = SHARD_ROWS,
        row_group_rows: int = ROW_GROUP_ROWS,
    ):
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
        out.append(
            {
                "path": final.relative_to(final.parent.parent).as_posix(),
                "rows": rows,
                "sha256": sha256(final),
            }
        )
    return out


def staging_dir(final: Path) -> Path:
    """A fresh staging folder beside ``final``; stale ones of earlier runs are removed."""
    parent = final.parent
    if parent.exists() and not parent.is_dir():
        raise HsaError("output path exists and is not a directory", file=str(parent))
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(f".{final.name}.partial-*"):
        pid = stale.name[len(f".{final.name}.partial-") :].split("-", 1)[0]
        if not pid.isdigit() or not _alive(int(pid)):
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
            else:  # a file beside a staging folder (beside_staging): the Ray engine's input
                stale.unlink(missing_ok=True)
    # Unique even for two runs of one process (threads); the pid lets a later run tell a dead
    # run's leftovers from a live one's.
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-{os.getpid()}-", dir=parent))
    plain_permissions(staging, folder=True)  # it becomes the version folder
    return staging


def beside_staging(staging: Path, suffix: str) -> Path:
    """A scratch path next to the staging folder ``staging`` (an engine's input or handover):
    not in the version, on the output's disk, and named so that :func:`staging_dir` sweeps it
    up with its staging folder when the run that made it died."""
    return staging.parent / f"{staging.name}.{suffix}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid != os.getpid()


def publish(staging: Path, final: Path, *, replace: bool = False) -> bool:
    """Rename the complete staging folder to ``final``; False if an identical version won a race
    (the staging folder is then removed). With ``replace``, a damaged ``final`` is moved aside
    first and removed once the new one is in place."""
    if replace and final.exists():
        damaged = Path(
            tempfile.mkdtemp(prefix=f".{final.name}.damaged-{os.getpid()}-", dir=final.parent)
        )
        os.rename(final, damaged / final.name)
        try:
            os.rename(staging, final)
        except OSError:
            os.rename(damaged / final.name, final)
            raise
        finally:
            shutil.rmtree(damaged, ignore_errors=True)
        return True
    try:
        os.rename(staging, final)
        return True
    except OSError:
        if (final / "manifest.json").is_file():
            shutil.rmtree(staging, ignore_errors=True)
            return False
        shutil.rmtree(staging, ignore_errors=True)
        raise HsaError(
            "a folder that is not a complete version is in the way; remove it and rerun",
            file=str(final),
        ) from None


def listed_files(manifest: dict) -> list[dict]:
    """Every file a manifest lists with its sha256 (``{"path", "sha256", "rows"?}``): the
    rejects, the shards, and any other (a rollout's trajectories), in that order."""
    found: list[dict] = []

    def walk(value) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("path"), str) and "sha256" in value:
                found.append(value)
                return
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(manifest.get("rejects"))
    walk(manifest.get("shards"))
    walk({k: v for k, v in manifest.items() if k not in ("rejects", "shards")})
    return found


# The key of a manifest's seal (see :func:`sealed`).
SEAL = "seal"


def sealed(manifest: dict) -> dict:
    """``manifest`` with its seal: the sha256 of its canonical JSON (sorted keys, no whitespace)
    without the seal. A manifest edited by hand (a count, a skill's licence, a shard's sha256
    made to fit a rewritten shard) no longer matches it: :func:`version_problems` says so, and
    reusing, pushing, carding and replaying the version are refused as for a damaged file. The
    seal guards against edits, not against forgery (anyone can compute it)."""
    return {**manifest, SEAL: _seal_of(manifest)}


def _seal_of(manifest: dict) -> str:
    body = {key: value for key, value in manifest.items() if key != SEAL}
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _manifest_problem(version_dir: Path) -> str | None:
    """Why manifest.json as written on disk breaks its seal, or None (a manifest without one
    was written by an hsa that did not seal them)."""
    try:
        written = orjson.loads(read_bytes(version_dir / "manifest.json"))
    except (OSError, orjson.JSONDecodeError, HsaError):
        return None  # read_manifest says why it cannot be read
    if isinstance(written, dict) and SEAL in written and written[SEAL] != _seal_of(written):
        return (
            "manifest.json: edited since hsa wrote it (its seal is not the sha256 of its "
            "content); hsa generate rebuilds the version"
        )
    return None


def version_problems(version_dir: Path, manifest: dict, *, with_card: bool = True) -> list[str]:
    """What is wrong with a version's files, by the manifest: the manifest edited (its seal), a
    listed file missing, its sha256, row count or columns differing, a listed path leaving the
    version, or a file the version does not list (an extra shard would be loaded by the
    version's ``data/<split>-*.parquet`` pattern). Empty when the files are exactly the ones
    written. ``with_card=False``: the card (README.md) is about to be written, so its absence
    is no damage."""
    from hsa.dataset.rows import REJECT_SCHEMA, ROW_SCHEMA

    problems = []
    edited = _manifest_problem(version_dir)
    if edited is not None:
        problems.append(edited)
    rejects = manifest.get("rejects")
    columns = {
        **{shard.get("path"): ROW_SCHEMA for shard in manifest.get("shards") or ()},
        **({rejects.get("path"): REJECT_SCHEMA} if isinstance(rejects, dict) else {}),
    }
    expected = {"README.md", "manifest.json"}
    for entry in listed_files(manifest):
        rel = entry.get("path") if isinstance(entry, dict) else None
        parts = Path(rel).parts if isinstance(rel, str) else ()
        if not parts or Path(rel).is_absolute() or ".." in parts:
            problems.append(f"manifest lists {rel!r}, which is not a path inside the version")
            continue
        expected.add(Path(rel).as_posix())
        path = version_dir / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
            continue
        if sha256(path) != entry.get("sha256"):
            problems.append(f"{rel}: sha256 differs from the manifest")
        try:
            file = pq.ParquetFile(path)
            rows = file.metadata.num_rows
        except Exception as exc:  # a truncated or foreign file: report it, keep checking others
            problems.append(f"{rel}: not a readable Parquet file ({exc})")
            continue
        if "rows" in entry and rows != entry["rows"]:
            problems.append(f"{rel}: {rows} rows, manifest says {entry.get('rows')}")
        schema = columns.get(rel)
        lacking = (
            [] if schema is None else [n for n in schema.names if n not in file.schema_arrow.names]
        )
        if lacking:
            problems.append(f"{rel}: lacks the column(s) {', '.join(lacking)}")
    if with_card and not (version_dir / "README.md").is_file():
        problems.append("README.md: missing")
    for path in sorted(version_dir.rglob("*")):
        rel = path.relative_to(version_dir).as_posix()
        if (
            path.is_dir()
            and not path.is_symlink()
            and any(e.startswith(rel + "/") for e in expected)
        ):
            continue
        if rel not in expected or path.is_symlink():
            problems.append(
                f"{rel}: not part of this version (the manifest does not list it); remove it"
            )
    return problems


@contextmanager
def reading_parquet(path: Path, version_dir: Path) -> Iterator[None]:
    """Read one of a version's Parquet files in the block: one that is damaged (truncated,
    overwritten) is an HsaError naming it and what to run, not pyarrow's error."""
    try:
        yield
    except (pa.ArrowException, OSError) as exc:  # pyarrow raises OSError for corrupt pages
        why = " ".join(str(exc).split())  # pyarrow's text may span lines
        raise HsaError(
            f"not a readable Parquet file ({why}); hsa verify {version_dir} lists what is "
            f"wrong with the version, and hsa generate rebuilds a damaged one",
            file=str(path),
        ) from None


def inputs_path(version_dir: Path) -> Path:
    """Where this machine keeps the location of a version's inputs: beside the version, never in
    it (a version's files may be published; local paths must not travel with them)."""
    return version_dir.parent / f".{version_dir.name}.inputs.json"


def record_inputs(version_dir: Path, episodes: Path, harness: Path | None) -> None:
    """Note the absolute paths of a version's episodes file and default harness folder, so that
    ``hsa verify`` and ``hsa replay`` find them from any directory."""
    data = {
        "episodes": str(Path(episodes).resolve()),
        "harness": None if harness is None else str(Path(harness).resolve()),
    }
    from hsa.files.jsonl import atomic_path

    with atomic_path(inputs_path(version_dir)) as tmp:
        tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))


def recorded_inputs(version_dir: Path) -> dict:
    """The locations :func:`record_inputs` noted; empty when there are none (a version made
    elsewhere, downloaded or moved)."""
    try:
        data = orjson.loads(read_bytes(inputs_path(version_dir)))
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


# What every version's manifest holds (hsa.dataset.generate writes more), and of which JSON type.
_MANIFEST_KEYS = {
    "name": str,
    "version": str,
    "split": str,
    "input": dict,
    "counts": dict,
    "statistics": dict,
    "shards": list,
    "rejects": dict,
}


def read_manifest(version_dir: Path) -> dict:
    """A published version's manifest.json; HsaError when there is none to read.

    On disk, ``input.episodes`` and ``input.harness`` are names (the manifest is published);
    where a run on this machine noted the inputs' locations (:func:`record_inputs`), they are
    returned as those absolute paths, so readers find the inputs from any directory."""
    try:
        manifest = orjson.loads(read_bytes(version_dir / "manifest.json"))
    except (OSError, orjson.JSONDecodeError) as exc:
        raise HsaError(
            f"not a dataset version: manifest.json unreadable ({exc})", file=str(version_dir)
        ) from None
    lacking = (
        []
        if not isinstance(manifest, dict)
        else [
            key for key, kind in _MANIFEST_KEYS.items() if not isinstance(manifest.get(key), kind)
        ]
    )
    if not isinstance(manifest, dict) or lacking:
        raise HsaError(
            f"not a dataset version: manifest.json lacks "
            f"{', '.join(lacking) or 'everything (it is not a JSON object)'}",
            file=str(version_dir),
        )
    noted = recorded_inputs(version_dir)
    if isinstance(manifest.get("input"), dict) and noted.get("episodes"):
        manifest["input"] = {
            **manifest["input"],
            "episodes": noted["episodes"],
            "harness": noted.get("harness"),
        }
    return manifest
