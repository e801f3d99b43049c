"""Importers: turn other formats into hsa episodes, one episode or one reject per input line.

Every importer returns an :class:`ImportResult` whose counts always add up:
``len(episodes) + len(rejects) == lines``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from hsa.errors import Notice, Reject
from hsa.files.jsonl import check_output_file, write_jsonl
from hsa.model.episode import Episode


@dataclass
class ImportResult:
    """What an import produced, with every input line accounted for."""

    source: str
    lines: int = 0
    episodes: list[Episode] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    # Lines that became episodes with something of theirs dropped, and what (shown in the summary).
    notices: list[Notice] = field(default_factory=list)
    # episode id -> the line it came from (keep, repeats_id)
    first_lines: dict[str, int] = field(default_factory=dict, repr=False)

    def keep(self, episode: Episode, line: int) -> None:
        """Add the episode of input line ``line``."""
        self.episodes.append(episode)
        self.first_lines.setdefault(episode.id, line)

    def repeats_id(self, row_id: str, line: int, *, what: str = "episode id") -> bool:
        """Whether an earlier line became an episode of id ``row_id``; then this line is rejected
        here. Episodes are identified (their variants drawn, their answers matched, their
        predictions scored) by id, so a second line of one id would stand for the first; a line
        that was rejected stands for nothing."""
        first = self.first_lines.get(row_id)
        if first is None:
            return False
        self.rejects.append(
            Reject(
                self.source,
                line,
                row_id,
                "id",
                f"duplicate {what} (line {first} has it); ids must be unique in a file",
            )
        )
        return True

    def check_counts(self) -> None:
        assert len(self.episodes) + len(self.rejects) == self.lines, (
            f"import lost rows: {len(self.episodes)} episodes + {len(self.rejects)} rejects "
            f"!= {self.lines} lines"
        )

    def write(
        self, out: str | os.PathLike, rejects_out: str | os.PathLike | None = None
    ) -> tuple[Path, Path]:
        """Write episodes to ``out`` and rejects beside it (``<out>.rejects.jsonl``), atomically;
        both paths are checked before either is written. An import that kept no episode writes
        nothing: it fails, and an earlier import's files there stay as they were."""
        self.check_counts()
        out = Path(out)
        rejects_path = Path(rejects_out) if rejects_out else rejects_path_for(out)
        for path in (out, rejects_path):
            check_output_file(path)
        if self.episodes:
            write_jsonl(out, (e.to_dict() for e in self.episodes))
            write_jsonl(rejects_path, (r.to_dict() for r in self.rejects))
        return out, rejects_path


def rejects_path_for(out: str | os.PathLike) -> Path:
    out = Path(out)
    stem = out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return out.with_name(f"{stem}.rejects.jsonl")
