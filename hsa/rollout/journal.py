"""The resume journal of a rollout: one line per finished trajectory, so a killed run loses at
most the trajectories in flight.

Each entry is one JSON line, written with a single ``write`` to a file opened for appending and
then ``fsync``-ed. A reader keeps every complete line (one that ends with a newline and parses)
and cuts a torn last line (a kill during the write) off before appending. The first line is a
header naming the version; the journal of another version is refused. An exclusive lock keeps a
second run of the same version out while one runs (on a machine where both see the lock).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import orjson

from hsa.errors import HsaError

JOURNAL_VERSION = 1


class Journal:
    """Finished trajectories by id, read back on open and appended one at a time."""

    def __init__(self, path: Path, header: dict):
        self.path = path
        self.header = {"journal": JOURNAL_VERSION, **header}
        self.fd: int | None = None

    def open(self) -> dict[str, dict]:
        """Lock the journal and return its entries by id (empty for a new journal)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise HsaError(
                "another run of this rollout holds its journal; wait for it or stop it",
                file=str(self.path),
            ) from None
        self.fd = fd
        data = self.path.read_bytes()
        entries, good = [], 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                entries.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                break
            good += len(line)
        if good < len(data):  # a torn or damaged tail: everything after the last good line
            os.ftruncate(fd, good)
        if not entries:
            if good:
                os.ftruncate(fd, 0)
            self._write(self.header)
            return {}
        if entries[0] != self.header:
            self.close()
            raise HsaError(
                f"this journal belongs to another rollout ({entries[0]}); remove it to start over",
                file=str(self.path),
            )
        return {entry["id"]: entry for entry in entries[1:]}

    def append(self, entry: dict) -> None:
        self._write(entry)

    def _write(self, value: dict) -> None:
        data = orjson.dumps(value) + b"\n"
        view = memoryview(data)
        while view:  # one write in practice; a short write continues where it stopped
            view = view[os.write(self.fd, view) :]
        os.fsync(self.fd)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
            self.fd = None

    def remove(self) -> None:
        """Delete the journal (its version is published) and release the lock."""
        self.path.unlink(missing_ok=True)
        self.close()
