"""``hsa rollout``: a teacher model solves episodes under their original harness and under the
variants of a recipe; judged trajectories are kept as training rows, the others rejected with why.

    <out>/<name>/<version>/
      data/<split>-00000-of-000NN.parquet   kept trajectories, rows of hsa.dataset.rows.ROW_SCHEMA
      rejects.parquet                       input lines, variants and trajectories that are not rows
      rollouts.parquet                      every trajectory: status, reason, steps, requests, timings
      harness_variants.parquet              with a pool: each harness variant the rows take, its lineage
      manifest.json                         source, recipe, endpoint, model, sampling, counts, latency
      README.md                             the Hugging Face dataset card

A kept row is the variant's row (hsa.dataset.rows.variant_row) whose conversation is the teacher's: the
system prompt rendered from the variant's harness, the replayed user messages, the teacher's
steps, the tool results and hook feedback it got, and gold re-indexed to the steps it judged. So
``hsa train sft`` reads rollout versions and generated versions alike. A trajectory is kept when
every gold turn's step (see hsa.rollout.script) passes the scorer; the conversation stops at the
first failing judged step, and after the last judged one.

The version hashes what decides the rows: the canonical recipe less its row-neutral options, the
input fingerprint, the hsa and transform versions, the shipped templates, the split, the model
name and sampling, the step limit, the fault plan, the tool code and the rows' own version
(ROLLOUT_ROWS: what a rollout row holds); not the endpoint's URL, the
concurrency or the retry policy. Finished trajectories are
journaled as they end (hsa.rollout.journal); a rerun of a killed run does not redo them, and
writes the same rows as an uninterrupted run would (rows are ordered by input line and variant,
never by completion; tool-call ids are renumbered by the runtime). Latencies differ between runs:
they live in rollouts.parquet and the manifest, never in the rows.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa

from hsa import __version__
from hsa.augment.lineage import fired_steps
from hsa.augment.mapping import EMPTY
from hsa.augment.recipe import Recipe
from hsa.augment.variant import Variant, VariantReject
from hsa.dataset.fingerprint import output_fingerprint, version_id
from hsa.dataset.generate import stage_version
from hsa.dataset.harness_variants import (
    HarnessVariantListing,
    HarnessVariantTally,
    pool_of,
    variant_lineage_end,
)
from hsa.dataset.licenses import card_license_id
from hsa.dataset.pipeline import augment_episode
from hsa.dataset.row_shape import RowShape
from hsa.dataset.rows import JSON, REJECT_SCHEMA, ROW_SCHEMA, row_id, variant_row
from hsa.dataset.writer import (
    ShardWriter,
    finalize_shards,
    read_manifest,
    record_inputs,
    sealed,
    sha256,
    version_problems,
)
from hsa.errors import HooksNotTrustedError, HsaError, Reject
from hsa.files.jsonl import atomic_path, input_file, read_lines
from hsa.model.episode import (
    Episode,
    check_gold,
    check_recorded_calls,
    duplicate_id,
    parse_messages,
)
from hsa.model.gold import Gold
from hsa.model.harness import Harness, load_harness
from hsa.model.message import message_text
from hsa.model.scorer import judge
from hsa.rollout.journal import Journal
from hsa.rollout.script import Script, ScriptError, script_of
from hsa.runtime import (
    DEFAULT_MAX_STEPS,
    ChatClient,
    CodeTools,
    Conversation,
    End,
    Endpoint,
    EndpointError,
    FaultInjector,
    FaultPlan,
    HookRunner,
    ReplayTools,
    RequestRecord,
    Step,
    ToolBelt,
    UserTurn,
    summarize_requests,
)
from hsa.runtime.endpoint import refused_settings
from hsa.runtime.records import DONE

MANIFEST_VERSION = 1
# What the rows of a rollout hold, by the code that writes them (it enters the version): 2 since
# the rows of a pooled recipe name their harness variant and the version lists the variants, so
# a version written before is made again, not found without them.
ROLLOUT_ROWS = 2

TRAJECTORY_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("hsa_source_id", pa.string()),
        ("hsa_variant", pa.int32()),
        ("kept", pa.bool_()),
        ("stage", pa.string()),  # null when kept
        ("reason", pa.string()),
        ("status", pa.string()),  # how the conversation ended (hsa.runtime.records)
        ("requests", pa.int32()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("trajectory", JSON),  # messages, turns, steps, tool outcomes, requests with timings
    ]
)


@dataclass(frozen=True)
class RolloutSettings:
    """How trajectories are made: the endpoint and model, the step limit, faults, tool code."""

    endpoint: Endpoint
    concurrency: int = 4
    max_steps: int = DEFAULT_MAX_STEPS
    faults: FaultPlan | None = None
    tool_code: str | None = None  # a tools.py run before the replay simulator

    def identity(self) -> dict:
        """What decides the rows (it enters the version)."""
        code = None
        if self.tool_code is not None:
            code = hashlib.sha256(Path(self.tool_code).read_bytes()).hexdigest()
        return {
            "model": self.endpoint.model,
            "sampling": self.endpoint.sampling.to_dict(),
            "max_steps": self.max_steps,
            "faults": None if self.faults is None else self.faults.to_dict(),
            "tool_code_sha256": code,
        }

    def describe(self) -> dict:
        return {
            **self.identity(),
            "endpoint": self.endpoint.describe(),
            "concurrency": self.concurrency,
            "tool_code": self.tool_code,
        }


@dataclass
class Result:
    path: Path
    manifest: dict
    reused: bool = False
    resumed: int = 0  # trajectories found done in the journal
    repaired: list[str] = field(default_factory=list)  # what was wrong with a version replaced


@dataclass(frozen=True)
class _Work:
    """One trajectory to run: a variant of the episode on input line ``line``."""

    line: int
    variant: Variant
    script: Script
    harness: Harness  # the source episode's: the names tool code knows

    @property
    def id(self) -> str:
        return row_id(self.variant.source_id, self.variant.index)


@dataclass
class _Plan:
    """Everything read from the input before any request: work, and rejects by sort key."""

    input_lines: int = 0
    work: list[_Work] = field(default_factory=list)
    rejects: list[tuple[tuple[int, int], dict]] = field(default_factory=list)
    load_rejects: int = 0
    sources: dict[int, str] = field(default_factory=dict)  # line -> source id, loaded episodes


def _reject(
    source: str,
    line: int,
    source_id: str | None,
    variant: int | None,
    stage: str,
    reason: str,
    field_: str | None = None,
    lineage=(),
) -> dict:
    return {
        "source": source,
        "line": line,
        "id": source_id,
        "variant": variant,
        "stage": stage,
        "field": field_,
        "reason": reason,
        "lineage": None
        if variant is None
        else orjson.dumps([s.to_dict() for s in lineage]).decode(),
    }


def _plan(
    recipe: Recipe | None,
    episodes: Path,
    harness_dir: Path | None,
    trust_hooks: bool,
    harness_roots: tuple[str, ...],
) -> _Plan:
    plan = _Plan()
    source = episodes.name  # rejects name the input, not where it lies (they are published)
    default = load_harness(harness_dir, trust_hooks=trust_hooks) if harness_dir else None
    cache: dict = {}
    seen: set[str] = set()
    for line in read_lines(episodes):
        plan.input_lines += 1
        number = line.number
        if line.error is not None:
            plan.rejects.append(
                ((number, -1), _reject(source, number, None, None, "load", line.error))
            )
            plan.load_rejects += 1
            continue
        try:
            episode = Episode.from_dict(
                line.value,
                harness=default,
                base_dir=episodes.parent,
                trust_hooks=trust_hooks,
                harness_cache=cache,
                harness_roots=harness_roots,
            )
        except HsaError as exc:
            raw = line.value.get("id") if isinstance(line.value, dict) else None
            reject = Reject.from_error(
                exc, source=source, line=number, id=None if raw is None else str(raw)
            )
            plan.rejects.append(
                (
                    (number, -1),
                    _reject(
                        reject.source,
                        number,
                        reject.id,
                        None,
                        reject.stage,
                        reject.reason,
                        reject.field,
                    ),
                )
            )
            plan.load_rejects += 1
            continue
        if episode.id in seen:
            plan.rejects.append(
                (
                    (number, -1),
                    _reject(
                        source,
                        number,
                        episode.id,
                        None,
                        "load",
                        duplicate_id(None, "they name each trajectory"),
                        "id",
                    ),
                )
            )
            plan.load_rejects += 1
            continue
        seen.add(episode.id)
        plan.sources[number] = episode.id
        variants = (
            augment_episode(recipe, episode)
            if recipe is not None
            else [Variant(episode.id, 0, episode, (), EMPTY)]
        )
        for item in variants:
            if isinstance(item, VariantReject):
                plan.rejects.append(
                    (
                        (number, item.index),
                        _reject(
                            source,
                            number,
                            item.source_id,
                            item.index,
                            item.stage,
                            item.reason,
                            lineage=item.lineage,
                        ),
                    )
                )
                continue
            try:
                plan.work.append(_Work(number, item, script_of(item.episode), episode.harness))
            except ScriptError as exc:
                plan.rejects.append(
                    (
                        (number, item.index),
                        _reject(
                            source,
                            number,
                            item.source_id,
                            item.index,
                            "rollout:script",
                            exc.reason,
                            exc.field,
                            item.lineage,
                        ),
                    )
                )
    return plan


def rollout_recipe(recipe: Recipe, variants: int | None = None) -> Recipe:
    """The recipe a rollout runs: the original (variant 0) always, and ``variants`` variants
    when given instead of the recipe's own count."""
    changes: dict = {"keep_original": True}
    if variants is not None:
        changes["variants_per_episode"] = variants
    return dataclasses.replace(recipe, **changes)


def rollout(
    recipe: Recipe | None,
    episodes: str | os.PathLike,
    out: str | os.PathLike,
    *,
    settings: RolloutSettings,
    harness: str | os.PathLike | None = None,
    name: str | None = None,
    split: str = "train",
    trust_hooks: bool = False,
    license: str = "other",
    harness_roots: tuple[str | os.PathLike, ...] = (),
    on_progress: Callable[[int, int, int], None] | None = None,
) -> Result:
    """Roll the teacher out over ``episodes`` (originals, plus the variants of ``recipe``) and
    write the version; return its folder. ``on_progress(done, total, kept)`` after each
    trajectory. A rerun finds the version (rebuilt if its files are damaged), or resumes from
    the journal. Harness folders that episodes reference must lie beside the episodes file or
    under ``harness_roots``."""
    card_license_id(license)  # before the work: the card is written last
    episodes, out = input_file(episodes, "episodes file"), Path(out)
    if out.exists() and not out.is_dir():
        raise HsaError("output path exists and is a file, expected a directory", file=str(out))
    harness_dir = Path(harness) if harness is not None else None
    if harness_dir is not None and not harness_dir.is_dir():
        raise HsaError("harness folder does not exist or is not a directory", file=str(harness))
    if settings.concurrency < 1 or settings.max_steps < 1:
        raise HsaError("concurrency and max_steps must be at least 1")
    if recipe is not None:
        recipe = rollout_recipe(recipe)
    canonical = None if recipe is None else recipe.to_dict()
    transforms = {} if recipe is None else recipe.transform_versions()
    harness_roots = tuple(str(Path(r).resolve()) for r in harness_roots)
    fingerprint = output_fingerprint(out, episodes, harness_dir, harness_roots)
    # Row-neutral options (a paraphrase cache folder, a timeout) stay out of the version.
    identity = None if recipe is None else recipe.version_dict()
    version = version_id(
        {"recipe": identity, "rollout": settings.identity(), "rows": ROLLOUT_ROWS},
        fingerprint,
        __version__,
        transforms,
        split,
    )
    name = name or (f"rollout-{recipe.name}" if recipe is not None else "rollout")
    final = out / name / version
    repaired: list[str] = []
    if (final / "manifest.json").is_file():
        try:
            manifest = read_manifest(final)
            repaired = version_problems(final, manifest)
        except HsaError as exc:
            repaired = [exc.reason]
        if not repaired:
            record_inputs(final, episodes, harness_dir)
            return Result(final, manifest, reused=True)

    code = (
        CodeTools.load(settings.tool_code, trust=trust_hooks)
        if settings.tool_code is not None
        else None
    )
    plan = _plan(recipe, episodes, harness_dir, trust_hooks, harness_roots)
    if not trust_hooks and any(w.variant.episode.harness.hooks for w in plan.work):
        raise HooksNotTrustedError(
            "these episodes' harness has hooks, which a rollout runs: "
            "pass --trust-hooks (hooks.py is code: read it first)"
        )
    journal = Journal(out / name / f".{version}.journal.jsonl", {"version": version, "name": name})
    done = journal.open()
    try:
        runner = _Runner(
            settings, code, version, episodes.name, len(plan.work), done, journal, on_progress
        )
        asyncio.run(runner.run([w for w in plan.work if w.id not in done]))
        entries = {**done, **runner.finished}
        refused = [e["reject"] for e in entries.values() if _refused(e)]
        if entries and len(refused) == len(entries):
            # One request refused is that trajectory's (a context too long); every one refused
            # is the server's set-up, and a version of it would be reused when the server is
            # fixed. Nothing is published and the journal goes, so a rerun asks again.
            journal.remove()
            raise HsaError(
                f"the endpoint refused every trajectory's request ({len(refused)} of "
                f"{len(entries)}), first: {refused[0]['reason']}. Is the server set up for "
                f"tool calls (vLLM: --enable-auto-tool-choice --tool-call-parser ...)? "
                f"Nothing was published"
            )
        manifest, published = stage_version(
            final,
            lambda staging: _write(
                staging,
                plan,
                entries,
                name=name,
                version=version,
                split=split,
                recipe=canonical,
                transforms=transforms,
                fingerprint=fingerprint,
                episodes=episodes,
                harness_dir=harness_dir,
                settings=settings,
            ),
            license=license,
            replace=bool(repaired),
            out=out,
            kept=" (the journal is kept)",
        )
        journal.remove()
    finally:
        journal.close()
    record_inputs(final, episodes, harness_dir)
    if not published:  # an identical version appeared meanwhile: report what it holds
        manifest = read_manifest(final)
    return Result(final, manifest, reused=not published, resumed=len(done), repaired=repaired)


class _Runner:
    """Runs trajectories with bounded concurrency and journals each one as it ends."""

    def __init__(
        self,
        settings: RolloutSettings,
        code: CodeTools | None,
        version: str,
        source: str,
        total: int,
        done: dict,
        journal: Journal,
        on_progress,
    ):
        self.settings, self.code, self.version, self.source = settings, code, version, source
        self.total, self.journal, self.on_progress = total, journal, on_progress
        self.finished: dict[str, dict] = {}
        self.count, self.kept = len(done), sum(1 for e in done.values() if e["kept"])
        self.failure: EndpointError | None = None

    async def run(self, work: list[_Work]) -> None:
        if self.on_progress:
            self.on_progress(self.count, self.total, self.kept)
        if not work:
            return
        queue = list(reversed(work))
        async with ChatClient(self.settings.endpoint) as client:
            await client.check_model()

            async def worker() -> None:
                # An endpoint that fails after its retries stops new work: the trajectories in
                # flight finish and are journaled, and a rerun resumes.
                while queue and self.failure is None:
                    item = queue.pop()
                    try:
                        entry = await self.trajectory(item, client)
                    except EndpointError as exc:  # retryable, or a setup error: stop the run
                        self.failure = self.failure or exc
                        return
                    self.journal.append(entry)
                    self.finished[entry["id"]] = entry
                    self.count += 1
                    self.kept += entry["kept"]
                    if self.on_progress:
                        self.on_progress(self.count, self.total, self.kept)

            await asyncio.gather(
                *(worker() for _ in range(min(self.settings.concurrency, len(work))))
            )
        if self.failure is not None:
            done = f"{self.count} of {self.total} trajectories are done and journaled"
            if self.failure.setup:  # the same command would fail the same way
                raise HsaError(
                    f"{refused_settings(self.failure)}. {done}: fix the setting and rerun"
                )
            raise HsaError(
                f"the endpoint failed: {self.failure}. {done}; rerun the same command to "
                f"finish the rest"
            )

    def _tools(self, work: _Work):
        mapping = work.variant.mapping
        executors = [] if self.code is None else [self.code.for_variant(mapping, work.harness)]
        belt = ToolBelt(*executors, ReplayTools.from_episodes([work.variant.episode]))
        faults = self.settings.faults
        return belt if faults is None else FaultInjector(belt, faults, mapping=mapping)

    async def trajectory(self, work: _Work, client: ChatClient) -> dict:
        """Run, judge and settle one trajectory; raises only a retryable EndpointError."""
        variant, script = work.variant, work.script
        harness = variant.episode.harness
        conversation = Conversation(
            harness,
            client,
            self._tools(work),
            hooks=HookRunner(harness),
            conversation_id=work.id,
            max_steps=self.settings.max_steps,
            prefix=script.prefix,
        )
        judged: dict[int, Step] = {}
        seen: set = set()
        failed: tuple[str, str, str | None] | None = None  # stage, reason, field
        records = conversation.run(script.users)
        try:
            async for record in records:
                if isinstance(record, UserTurn):
                    missing = script.unvisited(seen, before_turn=record.turn)
                    if missing:
                        failed = _missing(script, missing[0])
                        break
                elif isinstance(record, Step) and record.accepted:
                    place = (record.turn, record.position)
                    seen.add(place)
                    if place not in script.judged:
                        continue
                    k, turn = script.judged[place]
                    verdict = judge(record.message, turn, harness).verdict
                    if not verdict.correct:
                        failed = (
                            f"judge:{verdict.rule}",
                            f"step {record.index} (gold turn at={turn.at}): {verdict.reason}",
                            f"gold.turns[{k}]",
                        )
                        break
                    judged[k] = record
                    if place == script.last:
                        break
                elif isinstance(record, End):
                    if record.status != DONE:
                        failed = (f"rollout:{record.status}", record.reason, None)
                    else:
                        failed = _missing(script, script.unvisited(seen)[0])
        except EndpointError as exc:
            # A server that is down, busy or slow (503, 429, no connection, a timeout) stops the
            # run, which a rerun resumes; one that answers this request with an error (a 400, or
            # a 500 it gives again after the retries: transformers serve's answer to a tool call
            # it cannot parse) fails this trajectory, and the run goes on.
            if exc.setup or (exc.retryable and exc.status != 500):
                raise
            failed = ("rollout:endpoint", str(exc), None)
        except HsaError as exc:  # the variant cannot run (e.g. its layout does not render)
            failed = ("rollout:error", str(exc), exc.field)
        finally:
            await records.aclose()
        trajectory = conversation.trajectory
        row, fired = None, []
        if failed is None:
            try:
                row, fired = self._row(work, trajectory.messages, judged)
            except HsaError as exc:
                failed = (
                    "rollout:row",
                    f"the trajectory is not a valid episode: {exc.reason}",
                    exc.field,
                )
        entry = {
            "id": work.id,
            "line": work.line,
            "variant": variant.index,
            "source_id": variant.source_id,
            "kept": failed is None,
            "row": row,
            "fired": fired,
            "harness_lineage_end": variant_lineage_end(variant),
            "reject": None
            if failed is None
            else _reject(
                self.source,
                work.line,
                variant.source_id,
                variant.index,
                failed[0],
                failed[1],
                failed[2],
                variant.lineage,
            ),
            "trajectory": trajectory.to_dict(),
        }
        return entry

    def _row(self, work: _Work, messages: list[dict], judged: dict[int, Step]):
        variant = work.variant
        harness = variant.episode.harness
        turns = variant.episode.gold.turns
        gold = Gold(
            tuple(dataclasses.replace(turns[k], at=judged[k].at) for k in range(len(turns)))
        )
        parsed = parse_messages(messages, harness)
        for i, message in enumerate(parsed):
            if (
                message.get("role") == "assistant"
                and not message.get("tool_calls")
                and not message_text(message).strip()
            ):
                raise HsaError(
                    f"the teacher's message {i} says nothing (no text, no call): no training "
                    f"target",
                    field=f"messages[{i}]",
                )
        check_gold(gold, parsed, harness)
        # The rules of a source episode: a call on the way to a judged step (which no gold
        # judges) still fits its tool, unless a hook blocked it.
        check_recorded_calls(parsed, harness)
        episode = Episode(variant.source_id, harness, parsed, gold, variant.episode.meta)
        # The families that changed what the model reads are the harness variant's (its trail).
        teacher = Variant(
            variant.source_id,
            variant.index,
            episode,
            variant.lineage,
            variant.mapping,
            trail=variant.trail,
            harness_variant=variant.harness_variant,
            stage_steps=variant.stage_steps,
        )
        return (
            variant_row(teacher, self.version),
            [s.transform for s in fired_steps(variant.lineage)],
        )


def _refused(entry: dict) -> bool:
    """Whether a journaled trajectory ended in a request the endpoint refused or failed on (a
    400, a 500 after the retries)."""
    return not entry["kept"] and (entry.get("reject") or {}).get("stage") == "rollout:endpoint"


def _missing(script: Script, place) -> tuple[str, str, str]:
    k, turn = script.judged[place]
    return (
        "rollout:missing_step",
        f"gold turn at={turn.at} judges accepted step {place[1] + 1} of user turn "
        f"{place[0] + 1}, but the model ended that turn after fewer steps",
        f"gold.turns[{k}]",
    )


def _write(
    staging: Path,
    plan: _Plan,
    entries: dict[str, dict],
    *,
    name: str,
    version: str,
    split: str,
    recipe: dict | None,
    transforms: dict,
    fingerprint: dict,
    episodes: Path,
    harness_dir: Path | None,
    settings: RolloutSettings,
) -> tuple[dict, RowShape]:
    ordered = sorted(entries.values(), key=lambda e: (e["line"], e["variant"]))
    (staging / "data").mkdir()
    rows = ShardWriter(staging / "data", split, ROW_SCHEMA)
    kept = [e for e in ordered if e["kept"]]
    # A pooled recipe's rows name their harness variant; the version lists each variant with
    # its lineage, as a generated version does (hsa.dataset.harness_variants).
    listing = HarnessVariantListing(staging) if pool_of(recipe) is not None else None
    served = HarnessVariantTally()
    shape = RowShape()
    if kept:
        table = pa.Table.from_pylist([e["row"] for e in kept], schema=ROW_SCHEMA)
        rows.add(table)
        shape.add(table)
        served.add(table.column("hsa_harness_variant").drop_null().to_pylist())
        if listing is not None:
            ends = pa.chunked_array(
                [pa.array([e["harness_lineage_end"] for e in kept], pa.int32())]
            )
            listing.add(table.column("hsa_harness_variant"), ends, table.column("hsa_lineage"))
    shards = finalize_shards(rows.close(), split)

    rejects = list(plan.rejects)
    for e in ordered:
        if not e["kept"]:
            rejects.append(((e["line"], e["variant"]), e["reject"]))
    rejects.sort(key=lambda r: r[0])
    reject_writer = ShardWriter(staging, "rejects", REJECT_SCHEMA, shard_rows=sys.maxsize)
    if rejects:
        reject_writer.add(pa.Table.from_pylist([r for _, r in rejects], schema=REJECT_SCHEMA))
    ((reject_path, _),) = reject_writer.close()
    reject_path.rename(staging / "rejects.parquet")

    requests = [
        RequestRecord(**{k: v for k, v in r.items() if k != "tpot_s"})
        for e in ordered
        for r in e["trajectory"]["requests"]
    ]
    trajectories = ShardWriter(staging, "rollouts", TRAJECTORY_SCHEMA, shard_rows=sys.maxsize)
    if ordered:
        trajectories.add(
            pa.Table.from_pylist([_trajectory_row(e) for e in ordered], schema=TRAJECTORY_SCHEMA)
        )
    ((trajectory_path, _),) = trajectories.close()
    trajectory_path.rename(staging / "rollouts.parquet")

    by_family, by_transform, by_stage = Counter(), Counter(), Counter()
    for e in kept:
        by_family.update(e["row"]["hsa_families"])
        by_transform.update(e["fired"])
    for _, r in rejects:
        by_stage[r["stage"]] += 1
    sources_out = len({e["line"] for e in kept})
    discarded = len(ordered) - len(kept)
    counts = {
        "input_lines": plan.input_lines,
        "sources_out": sources_out,
        "sources_all_rejected": len(plan.sources) - sources_out,
        "load_rejects": plan.load_rejects,
        "rows": len(kept),
        "variant_rejects": len(rejects) - plan.load_rejects,
    }
    if (
        counts["sources_out"] + counts["sources_all_rejected"] + counts["load_rejects"]
        != counts["input_lines"]
    ):
        raise HsaError(
            "internal error: input lines are not all accounted for; nothing was published"
        )
    if len(plan.work) != len(ordered):
        raise HsaError(
            f"internal error: {len(plan.work)} trajectories planned, {len(ordered)} "
            f"finished; nothing was published"
        )
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "kind": "rollout",
        "name": name,
        "version": version,
        "split": split,
        "recipe": recipe,
        "seed": None if recipe is None else recipe["seed"],
        # Names, not paths: a manifest is published with the version (see hsa.dataset.writer.inputs_path).
        "input": {
            "episodes": episodes.name,
            **fingerprint,
            "harness": None if harness_dir is None else harness_dir.resolve().name,
        },
        "hsa_version": __version__,
        "transform_versions": transforms,
        "counts": counts,
        "rollout": {
            **settings.describe(),
            "trajectories": len(ordered),
            "kept": len(kept),
            "discarded": discarded,
            "discarded_by_stage": dict(
                sorted(Counter(e["reject"]["stage"] for e in ordered if not e["kept"]).items())
            ),
            "requests": summarize_requests(requests),
            "rollouts": {
                "path": "rollouts.parquet",
                "sha256": sha256(staging / "rollouts.parquet"),
            },
        },
        "statistics": {
            "rows_by_family": dict(sorted(by_family.items())),
            "rows_by_transform": dict(sorted(by_transform.items())),
            "rejects_by_stage": dict(sorted(by_stage.items())),
        },
        "shards": shards,
        "rejects": {
            "path": "rejects.parquet",
            "rows": len(rejects),
            "sha256": sha256(staging / "rejects.parquet"),
        },
    }
    if served.rows:
        manifest["statistics"]["harness_variants"] = served.summary()
    if listing is not None:
        manifest["harness_variants"] = listing.close()
    manifest = sealed(manifest)
    with atomic_path(staging / "manifest.json") as tmp:
        tmp.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    return manifest, shape


def _trajectory_row(entry: dict) -> dict:
    trajectory = entry["trajectory"]
    requests = trajectory["requests"]
    reject = entry["reject"] or {}
    return {
        "id": entry["id"],
        "hsa_source_id": entry["source_id"],
        "hsa_variant": entry["variant"],
        "kept": entry["kept"],
        "stage": reject.get("stage"),
        "reason": reject.get("reason"),
        "status": trajectory["status"],
        "requests": len(requests),
        "prompt_tokens": sum(r["prompt_tokens"] or 0 for r in requests),
        "completion_tokens": sum(r["completion_tokens"] or 0 for r in requests),
        "trajectory": orjson.dumps(trajectory).decode(),
    }
