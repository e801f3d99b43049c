"""Audit a rollout version: what ``hsa verify`` checks on a row whose conversation is a teacher's.

A generated row is rebuilt from its source and lineage byte for byte; a rollout row cannot be
(the model wrote its steps), so each row is checked against everything that decides it:

* its harness: the lineage replays from the source episode and re-verifies, and the row's
  ``tools``, harness variant, lineage, mapping, families and version are the rebuilt variant's;
  a pooled recipe's version lists its harness variants (harness_variants.parquet) and each row's
  lineage is its listed variant's (as for a generated version);
* its conversation: the row's ``messages`` are the trajectory recorded in rollouts.parquet,
  rendered under that harness; the trajectory is a valid episode under it, and its user side is
  the variant's (the leading system messages and every user message, in order);
* its gold: the variant's gold turns, each re-indexed to a step in the same place (user turn,
  accepted position: see hsa.rollout.script), and each of those steps passes the scorer.

The files, hashes and counts are checked as for any version (hsa.dataset.audit).
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pyarrow.parquet as pq

from hsa.dataset.audit import AuditReport, audit_version, rebuilt_variant
from hsa.dataset.harness_variants import unlisted
from hsa.dataset.rows import chat_template_messages, variant_row
from hsa.dataset.writer import read_manifest
from hsa.errors import HsaError
from hsa.model.episode import Episode, check_recorded_calls, parse_messages
from hsa.model.gold import Gold
from hsa.model.hook import from_user
from hsa.model.scorer import judge
from hsa.render import render_conversation
from hsa.rollout.script import ScriptError, script_of
from hsa.verify import VerificationFailed

_HARNESS_COLUMNS = (
    "tools",
    "hsa_harness_variant",
    "hsa_lineage",
    "hsa_mapping",
    "hsa_families",
    "hsa_version",
)


def is_rollout(version_dir: str | os.PathLike) -> bool:
    """Was this version made by ``hsa rollout``?"""
    return read_manifest(Path(version_dir)).get("kind") == "rollout"


class RowCheck:
    """Checks one rollout row against its source episode (see the module docstring)."""

    def __init__(self, version_dir: Path, manifest: dict):
        self.root, self.version = version_dir, manifest["version"]
        self.recipe = manifest.get("recipe")
        # A version made before rollouts named their harness variants has a null in every row:
        # the missing listing is reported once (hsa.dataset.harness_variants.unlisted), not as
        # a differing column on every row.
        skipped = {"hsa_harness_variant"} if unlisted(manifest) else set()
        self.columns = tuple(c for c in _HARNESS_COLUMNS if c not in skipped)
        self._conversations: dict[str, list[dict]] | None = None

    @property
    def conversations(self) -> dict[str, list[dict]]:
        """Kept trajectories' messages by row id (read once the files have checked out)."""
        if self._conversations is None:
            table = pq.read_table(
                self.root / "rollouts.parquet", columns=["id", "kept", "trajectory"]
            )
            self._conversations = {
                row["id"]: orjson.loads(row["trajectory"])["messages"]
                for row in table.to_pylist()
                if row["kept"]
            }
        return self._conversations

    def __call__(self, original: Episode, row: dict) -> list[str]:
        name = row["id"]
        try:
            variant = rebuilt_variant(original, row, self.recipe)
        except VerificationFailed as exc:
            return [f"{name}: verify:{exc.check}: {exc.reason}"]
        except HsaError as exc:
            return [f"{name}: cannot rebuild its harness: {exc}"]
        episode = variant.episode
        expected = variant_row(variant, self.version)
        problems = [
            f"{name}: {column} differs from the variant its lineage rebuilds"
            for column in self.columns
            if row[column] != expected[column]
        ]
        conversation = self.conversations.get(name)
        if conversation is None:
            return problems + [f"{name}: rollouts.parquet has no kept trajectory for it"]
        harness = episode.harness
        if orjson.loads(row["messages"]) != chat_template_messages(
            render_conversation(harness, conversation)
        ):
            problems.append(f"{name}: messages are not its trajectory rendered under its harness")
        try:
            parsed = parse_messages(conversation, harness)
            gold = Gold.from_dict(orjson.loads(row["hsa_gold"]), n_messages=len(parsed))
            ours, theirs = script_of(episode), script_of(Episode(name, harness, parsed, gold))
        except (HsaError, ScriptError) as exc:
            return problems + [f"{name}: its trajectory is not a valid episode: {exc}"]
        if (ours.prefix, ours.users) != (
            theirs.prefix,
            tuple(m for m in parsed if from_user(m)),
        ):
            problems.append(f"{name}: its user messages are not the episode's")
        places = {k: place for place, (k, _) in theirs.judged.items()}
        for place, (k, turn) in ours.judged.items():
            stored = gold.turns[k] if k < len(gold.turns) else None
            if stored is None or {**stored.to_dict(), "at": turn.at} != turn.to_dict():
                problems.append(f"{name}: gold turn {k} is not the variant's")
            elif places.get(k) != place:
                problems.append(
                    f"{name}: gold turn {k} judges step {places.get(k)}, not the "
                    f"step in the place of the recorded one {place}"
                )
            elif not (verdict := judge(parsed[stored.at], stored, harness).verdict).correct:
                problems.append(f"{name}: gold turn {k} (at={stored.at}) fails: {verdict.reason}")
        try:  # as the rollout held the trajectory when it kept it (hsa.rollout.run)
            check_recorded_calls(parsed, harness)
        except HsaError as exc:
            problems.append(f"{name}: {exc.field}: {exc.reason}")
        if len(gold.turns) != len(ours.judged):
            problems.append(
                f"{name}: {len(gold.turns)} gold turns, the variant has {len(ours.judged)}"
            )
        return problems


def audit_rollout(version_dir: str | os.PathLike, **options) -> AuditReport:
    """:func:`hsa.dataset.audit.audit_version` with rollout rows checked by :class:`RowCheck`."""
    root = Path(version_dir)
    manifest = read_manifest(root)
    return audit_version(root, check_row=RowCheck(root, manifest), **options)
