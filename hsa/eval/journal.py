"""The run's journal: what makes ``hsa eval`` resumable.

``run.json`` holds what decides the answers (backend identity, sampling, seed, the hash of every
item); ``predictions.jsonl`` gets one line per answer as it arrives, and one per session with its
wall time. Answers are keyed by the item's fingerprint (prompt, tools, gold): items with the same
fingerprint are the same request (a skill-content variant before any skill is loaded shows the
model exactly the original's prompt), asked once. A killed run leaves at most a torn last line,
which the next run cuts before appending; answers already there are not asked again, except
errors (the server refused the prompt or failed it on every retry), which the next run asks again
and whose newer line wins. A run with other settings refuses the folder instead of mixing
answers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

import orjson

from hsa.errors import HsaError
from hsa.files.jsonl import atomic_path

RUN_FILE = "run.json"
PREDICTIONS_FILE = "predictions.jsonl"


def check_run(out: Path, identity: dict) -> None:
    """Write ``run.json`` for a new folder; refuse one holding a run with other settings."""
    path = out / RUN_FILE
    if path.is_file():
        then = orjson.loads(path.read_bytes())
        if then != identity:
            differ = sorted(k for k in set(then) | set(identity) if then.get(k) != identity.get(k))
            raise HsaError(
                f"this folder holds an evaluation with other settings ({', '.join(differ)} "
                f"differ); pass another --out, or remove the folder to start over",
                file=str(out),
            )
        return
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_bytes(orjson.dumps(identity, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))


class Journal:
    """Answers by item fingerprint, and the sessions that produced them; appends as it goes."""

    def __init__(self, path: Path):
        self.path = path
        self.answers: dict[str, dict] = {}
        self.sessions: list[dict] = []
        if path.is_file():
            self._read()
        self._handle: BinaryIO | None = None

    def _read(self) -> None:
        data = self.path.read_bytes()
        whole = data[: data.rfind(b"\n") + 1]
        if len(whole) != len(data):  # a torn last line from a killed run
            with open(self.path, "r+b") as handle:
                handle.truncate(len(whole))
        for number, line in enumerate(whole.splitlines(), start=1):
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise HsaError(
                    "the journal has a broken line; remove the folder to start over",
                    file=str(self.path),
                    line=number,
                ) from None
            if "session" in entry:
                self.sessions.append(entry["session"])
            else:
                self.answers[entry["fingerprint"]] = entry

    def _write(self, entry: dict) -> None:
        if self._handle is None:
            # Kept open across appends (one flush per answer); close() closes it.
            self._handle = open(self.path, "ab")  # noqa: SIM115
        self._handle.write(
            orjson.dumps(entry, option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)
        )
        self._handle.flush()

    def add(self, answer: dict) -> None:
        self.answers[answer["fingerprint"]] = answer
        self._write(answer)

    def end_session(self, wall_s: float, answered: int) -> None:
        session = {"wall_s": wall_s, "answered": answered}
        self.sessions.append(session)
        self._write({"session": session})

    def close(self) -> None:
        if self._handle is not None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
            self._handle = None

    @property
    def wall_s(self) -> float:
        return sum(s["wall_s"] for s in self.sessions)
