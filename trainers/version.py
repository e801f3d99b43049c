"""A dataset version as trainers read it: provenance checked, rows loaded, judged turns listed,
and each row's harness variant rebuilt from its lineage when a reward needs it.

* :func:`check_provenance` refuses a version whose shards are missing or whose sha256 differs
  from its manifest (the check ``hsa verify`` starts with; the full row rebuild is left to it).
* :func:`load_rows` gives a ``datasets.Dataset`` of exactly the manifest's shards; ``messages``,
  ``tools``, ``hsa_gold`` and ``hsa_lineage`` are decoded to Python objects (the Arrow JSON columns
  load as ``datasets.Json``), which is what TRL's ``SFTTrainer`` needs: a JSON-string ``messages``
  column is not a conversation to TRL.
* :class:`JudgedTurns` lists every judged turn (a row and the index of the assistant message its
  gold judges) with its prompt (``messages[:at]`` of the rendered row) and tools, and rebuilds the
  row's harness variant by replaying its lineage on the source episode, as ``hsa replay`` does,
  only for the rows a reward actually scores.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

from hsa.augment.lineage import Step, replay
from hsa.dataset.audit import checked_input
from hsa.dataset.writer import read_manifest, sha256
from hsa.errors import HsaError
from hsa.eval.items import load_sources
from hsa.files.jsonl import read_lines
from hsa.model.episode import Episode
from hsa.model.gold import Gold, TurnGold
from hsa.model.harness import Harness

_LEADING = ("system", "developer")


def check_provenance(version_dir: str | os.PathLike) -> dict:
    """The version's manifest, after checking every shard exists with the sha256 it records."""
    root = Path(version_dir)
    if root.is_file():
        # A shard or manifest given instead of its folder: say which folder holds the version.
        holder = next(
            (p for p in root.parents if (p / "manifest.json").is_file() and (p / "data").is_dir()),
            None,
        )
        raise HsaError(
            "this is a file; a dataset version is the folder holding manifest.json and its "
            "shards"
            + ("" if holder is None else f" (this file is in version folder {str(holder)!r})"),
            file=str(root),
        )
    if not root.is_dir():
        raise HsaError("no such dataset version folder", file=str(root))
    manifest = read_manifest(root)
    shards = manifest.get("shards")
    if not isinstance(shards, list) or not shards:
        raise HsaError("manifest.json lists no shards: not a dataset version", file=str(root))
    for shard in shards:
        path = root / shard["path"]
        if not path.is_file():
            raise HsaError(
                "a shard the manifest lists is missing; the version is incomplete", file=str(path)
            )
        if sha256(path) != shard["sha256"]:
            raise HsaError(
                "sha256 differs from manifest.json: this shard changed after the "
                "version was written, so it is not the data its manifest describes; "
                "regenerate the version (hsa generate) or check it with hsa verify",
                file=str(path),
            )
    return manifest


def load_rows(version_dir: str | os.PathLike, manifest: dict):
    """Every row of the manifest's shards, in order, with the JSON columns decoded."""
    import datasets

    root = Path(version_dir)
    if not manifest["counts"].get("rows"):
        # datasets cannot even build a split from empty shards ("DatasetGenerationError").
        raise HsaError(
            f"version {manifest.get('version')} has no rows to train on: every input was "
            f"rejected (see its rejects.parquet and README.md)",
            file=str(root),
        )
    files = [str(root / shard["path"]) for shard in manifest["shards"]]
    rows = datasets.load_dataset("parquet", data_files={"train": files}, split="train")
    if len(rows) and not isinstance(rows[0]["messages"], list):
        raise HsaError(
            "messages are not decoded to a list of messages (expected the Arrow JSON "
            "column hsa writes); was this version written by another tool?",
            file=str(root),
        )
    return rows


def sample_indices(n: int, count: int | None, seed: int) -> list[int]:
    """``count`` indices of ``n`` drawn with ``seed`` (all of them, in order, when count is None)."""
    if count is None or count >= n:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), count))


@dataclass(frozen=True)
class JudgedTurn:
    """One judged turn of one row: what the model sees (``prompt``, ``tools``) and its gold."""

    row_id: str
    source_id: str
    at: int  # index in the source episode's messages, as the gold says
    prompt: list[dict]  # the rendered row's messages before the judged one
    tools: list[dict]
    gold: TurnGold


class JudgedTurns:
    """The judged turns of a version's rows, and their harness variants rebuilt on demand.

    ``episodes`` overrides the source episodes file the manifest names (as ``hsa verify
    --episodes`` does; either must still have the sha256 the manifest recorded, as must the
    harness folders); ``trust_hooks`` lets the rebuilt harnesses import their ``hooks.py``,
    which the hooks reward needs."""

    def __init__(
        self,
        version_dir: str | os.PathLike,
        manifest: dict,
        rows,
        *,
        episodes: str | os.PathLike | None = None,
        trust_hooks: bool = False,
    ):
        self.root = Path(version_dir)
        self.manifest = manifest
        self.trust_hooks = trust_hooks
        # The source episodes and default harness, checked against the manifest's fingerprint.
        self.episodes_path, self._default = checked_input(manifest, episodes, trust_hooks)
        self._rows = {row["id"]: row for row in rows}
        self._sources: dict[str, Episode] | None = None
        self._harnesses: dict[str, Harness] = {}
        self._leading = _leading_system_counts(self.episodes_path)
        self.turns: list[JudgedTurn] = []
        for row in self._rows.values():
            self.turns.extend(_row_turns(row, self._leading, self.episodes_path))
        self._by_key = {(t.row_id, t.at): t for t in self.turns}

    def get(self, row_id: str, at: int) -> JudgedTurn:
        return self._by_key[(row_id, at)]

    def harness(self, row_id: str) -> Harness:
        """The row's harness variant: its lineage replayed on its source episode (cached).

        The rebuilt harness must give the row's stored tools and gold, or the source is not the
        one the version was made from and no reward computed with it could be trusted."""
        if row_id in self._harnesses:
            return self._harnesses[row_id]
        row = self._rows[row_id]
        source = self._source(row["hsa_source_id"])
        lineage = tuple(Step.from_dict(s) for s in row["hsa_lineage"])
        episode, _ = replay(source, lineage)
        leading = next(
            (i for i, m in enumerate(episode.messages) if m.get("role") not in _LEADING),
            len(episode.messages),
        )
        if (
            episode.harness.openai_tools() != row["tools"]
            or episode.gold.to_dict() != row["hsa_gold"]
            or leading != self._leading[row["hsa_source_id"]]
        ):
            raise HsaError(
                f"row {row_id}: rebuilding its harness from the source episode gives "
                f"other tools or gold than the stored row; the episodes file is not "
                f"the one this version was made from (check with hsa verify)",
                file=str(self.episodes_path),
            )
        self._harnesses[row_id] = episode.harness
        return episode.harness

    def _source(self, source_id: str) -> Episode:
        if self._sources is None:
            self._sources = load_sources(
                self.episodes_path, harness=self._default, trust_hooks=self.trust_hooks
            ).episodes
        if source_id not in self._sources:
            raise HsaError(
                f"source episode {source_id!r} is not in the episodes file",
                file=str(self.episodes_path),
            )
        return self._sources[source_id]


def _leading_system_counts(path: Path) -> dict[str, int]:
    """Source id -> how many system/developer messages open its conversation.

    Rendering merges them into the one system message of the row, so a gold ``at`` (an index in
    the episode's messages) maps to ``at - k + 1`` in a row with a rendered system message. No
    transform adds or removes them; :meth:`JudgedTurns.harness` rechecks the rebuilt episode."""
    counts: dict[str, int] = {}
    for line in read_lines(path):
        value = line.value
        if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
            continue
        key = str(value.get("id"))
        if key in counts:
            continue
        k = 0
        for message in value["messages"]:
            if not isinstance(message, dict) or message.get("role") not in _LEADING:
                break
            k += 1
        counts[key] = k
    return counts


def _row_turns(row: dict, leading: dict[str, int], episodes_path: Path) -> list[JudgedTurn]:
    messages = row["messages"]
    if row["hsa_source_id"] not in leading:
        raise HsaError(
            f"row {row['id']}: source episode {row['hsa_source_id']!r} is not in the episodes file",
            file=str(episodes_path),
        )
    rendered = 1 if messages and messages[0].get("role") == "system" else 0
    shift = rendered - leading[row["hsa_source_id"]]
    n_episode = len(messages) - shift
    gold = Gold.from_dict(row["hsa_gold"], n_messages=n_episode)
    out = []
    for turn in gold.turns:
        index = turn.at + shift
        if not 0 < index <= len(messages) or (
            index < len(messages) and messages[index].get("role") != "assistant"
        ):
            raise HsaError(
                f"row {row['id']}: gold turn at={turn.at} does not point at an "
                f"assistant message of the rendered row",
                field="hsa_gold",
            )
        out.append(
            JudgedTurn(
                row_id=row["id"],
                source_id=row["hsa_source_id"],
                at=turn.at,
                prompt=messages[:index],
                tools=row["tools"],
                gold=turn,
            )
        )
    return out
