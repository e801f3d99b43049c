"""Audit a dataset version: shard hashes, counts, and every row rebuilt and re-verified.

``audit_version`` is what ``hsa verify DIR`` runs; ``replay_row`` is ``hsa replay DIR --id ROW``
and ``replay_variant`` is ``hsa replay VARIANTS.jsonl --id ROW`` (``hsa augment``'s output).
Rows are rebuilt from their source episode and lineage (no sampling), verified again, rendered
again, and compared with what is stored, so a version that passes is exactly what its recipe,
seed and inputs make. Nothing may be missing either: every line of the episodes is a source
whose every variant is a row or a reject, or a load reject (the same pass, see _Accounting).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from hsa.augment.lineage import fired_steps, replay
from hsa.augment.recipe import Recipe
from hsa.augment.step import steps_from
from hsa.augment.variant import Variant
from hsa.dataset.fingerprint import input_fingerprint, shipped_assets, version_id
from hsa.dataset.harness_variants import (
    LISTING_FILE,
    HarnessVariantTally,
    ListedLineages,
    listing_path,
    pool_of,
    unlisted,
)
from hsa.dataset.pipeline import harness_variant
from hsa.dataset.rows import ROW_SCHEMA, parse_row_id, row_id, skill_licenses, variant_row
from hsa.dataset.writer import read_manifest, reading_parquet, version_problems
from hsa.errors import HsaError, Reject
from hsa.files.jsonl import dumps, read_lines
from hsa.model.episode import Episode, find_episode, read_episodes
from hsa.model.harness import Harness, load_harness
from hsa.verify import VerificationFailed, verify_variant

_COUNTS = (
    "input_lines",
    "sources_out",
    "sources_all_rejected",
    "load_rejects",
    "rows",
    "variant_rejects",
)
_COMPARED = (
    "id",
    "hsa_source_id",
    "hsa_variant",
    "hsa_harness_variant",
    "messages",
    "tools",
    "hsa_lineage",
    "hsa_mapping",
    "hsa_gold",
    "hsa_families",
    "hsa_version",
)


@dataclass
class AuditReport:
    version_dir: Path
    rows_checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _located(given: str | os.PathLike | None, noted: str | None, option: str, what: str) -> Path:
    """An input given by the user, else where the run that made the version noted it (an
    absolute path: see hsa.dataset.writer.read_manifest); a bare name means nothing was noted here."""
    if given is not None:
        return Path(given)
    if not isinstance(noted, str) or not Path(noted).is_absolute():
        raise HsaError(
            f"{what} ({noted}) are needed, and no run on this machine noted where "
            f"they are (the version was made elsewhere or moved); pass {option}"
        )
    return Path(noted)


def checked_input(
    manifest: dict,
    episodes: str | os.PathLike | None,
    trust_hooks: bool,
    *,
    harness: str | os.PathLike | None = None,
    harness_roots: tuple[str | os.PathLike, ...] = (),
) -> tuple[Path, Harness | None]:
    """The episodes file and default harness a version was made from, after checking both are
    still the ones its manifest fingerprinted. Harness folders that episodes reference are
    looked up as the run did: beside the episodes or under ``harness_roots``."""
    path = _located(episodes, manifest["input"]["episodes"], "--episodes", "the source episodes")
    if not path.is_file():
        raise HsaError(
            "the source episodes are needed to re-verify rows; pass --episodes", file=str(path)
        )
    then = manifest["input"].get("harnesses", {})
    harness_dir = (
        _located(
            harness,
            manifest["input"].get("harness"),
            "--harness",
            "the default harness folder the version was made with",
        )
        if "--harness" in then or harness is not None
        else None
    )
    if harness_dir is not None and not harness_dir.is_dir():
        raise HsaError(
            "the harness folder the version was made with is gone", file=str(harness_dir)
        )
    now = input_fingerprint(path, harness_dir, harness_roots)
    if now["episodes_sha256"] != manifest["input"]["episodes_sha256"]:
        raise HsaError(
            "these episodes are not the ones the version was made from (sha256 differs)",
            file=str(path),
        )
    for name in sorted(set(then) | set(now["harnesses"])):
        if then.get(name) != now["harnesses"].get(name):
            folder = str(harness_dir) if name == "--harness" else str(path.parent / name)
            hint = (
                "; if the run was given --harness-root, give the same here"
                if name not in now["harnesses"] and name != "--harness"
                else ""
            )
            raise HsaError(
                f"this harness folder is not the one the version was made with "
                f"(its files' sha256 differs, or it is new or gone){hint}",
                file=folder,
            )
    return path, load_harness(harness_dir, trust_hooks=trust_hooks) if harness_dir else None


def _source_items(
    manifest: dict, episodes: str | os.PathLike | None, trust_hooks: bool, harness, harness_roots
) -> Iterator[Episode | Reject]:
    """Every line of the episodes as read_episodes reads it: an Episode, or a Reject."""
    path, default = checked_input(
        manifest, episodes, trust_hooks, harness=harness, harness_roots=harness_roots
    )
    return read_episodes(
        path, harness=default, trust_hooks=trust_hooks, harness_roots=harness_roots
    )


def _rows(version_dir: Path, manifest: dict) -> Iterator[dict]:
    for shard in manifest["shards"]:
        for batch in pq.ParquetFile(version_dir / shard["path"]).iter_batches(batch_size=1024):
            yield from batch.to_pylist()


def _stored_row(version_dir: Path, manifest: dict, row_id: str) -> dict | None:
    """One row by id, decoding only the row groups whose id statistics can hold it."""
    for shard in manifest["shards"]:
        path = version_dir / shard["path"]
        with reading_parquet(path, version_dir):
            rows = pq.read_table(path, filters=[("id", "==", row_id)])
        if rows.num_rows:
            return rows.to_pylist()[0]
    return None


def rebuild(original: Episode, row: dict, version: str, recipe: dict) -> dict:
    """The row rebuilt from its source episode and lineage (and its harness variant from the
    ``recipe`` of the manifest); raises VerificationFailed."""
    return variant_row(rebuilt_variant(original, row, recipe), version)


def rebuilt_variant(original: Episode, row: dict, recipe: dict | None) -> Variant:
    """The variant a row's lineage rebuilds from its source episode, verified, with the harness
    variant the manifest's ``recipe`` gives it (None: a rollout of originals alone); raises
    VerificationFailed."""
    lineage = steps_from(row["hsa_lineage"])
    trail: list = []
    episode, mapping = replay(original, lineage, trail=trail)
    verify_variant(original, episode, mapping)
    index = row["hsa_variant"]
    pool = pool_of(recipe)
    return Variant(
        original.id,
        index,
        episode,
        lineage,
        mapping,
        trail=tuple(trail),
        harness_variant=None  # no pool, or no recipe to draw the seed from
        if pool is None
        else harness_variant(recipe["seed"], pool, original, index),
    )


def _differences(stored: dict, rebuilt: dict) -> list[str]:
    return [column for column in _COMPARED if stored[column] != rebuilt[column]]


def _wrong_id(row: dict) -> str | None:
    """The problem of a row whose id is not the one its source id and variant index make (the
    id generate gives it: hsa.dataset.rows.row_id), or None."""
    expected = row_id(row["hsa_source_id"], row["hsa_variant"])
    if row["id"] == expected:
        return None
    return (
        f"{row['id']}: id is not {expected!r}, the id of variant {row['hsa_variant']} of "
        f"source {row['hsa_source_id']!r}"
    )


def audit_version(
    version_dir: str | os.PathLike,
    *,
    episodes: str | os.PathLike | None = None,
    trust_hooks: bool = False,
    harness: str | os.PathLike | None = None,
    harness_roots: tuple[str | os.PathLike, ...] = (),
    on_progress: Callable[[int], None] | None = None,
    check_row: Callable[[Episode, dict], list[str]] | None = None,
) -> AuditReport:
    """Check a version: its files are exactly the manifest's (hashes, row counts, nothing
    extra), its counts add up, every row rebuilds from its source and lineage to the stored
    bytes (its id included), and every line of the episodes is accounted for: a source whose
    every variant is a row or a variant reject, or a load reject. ``on_progress(rows)`` reports
    the rows checked so far. ``check_row(source, row)`` replaces the rebuild for rows that are
    not rebuilt byte for byte (a rollout's: see hsa.rollout.audit) and returns the row's
    problems."""
    root = Path(version_dir)
    manifest = read_manifest(root)
    report = AuditReport(root)
    problems = report.problems
    problems.extend(version_problems(root, manifest))
    counts = manifest["counts"]
    lacking = [key for key in _COUNTS if not isinstance(counts.get(key), int)]
    if lacking:
        problems.append(f"counts: the manifest lacks {', '.join(lacking)}")
        return report
    accounted = counts["sources_out"] + counts["sources_all_rejected"] + counts["load_rejects"]
    if accounted != counts["input_lines"]:
        problems.append(
            f"counts: {counts['input_lines']} input lines but {accounted} accounted for"
        )
    shards = manifest["shards"]
    if not all(isinstance(s, dict) and isinstance(s.get("rows"), int) for s in shards):
        problems.append("manifest: a shard entry lacks its row count (rows)")
        return report
    if sum(s["rows"] for s in shards) != counts["rows"]:
        problems.append("counts: shard rows do not add up to the manifest's rows")
    if manifest["rejects"]["rows"] != counts["load_rejects"] + counts["variant_rejects"]:
        problems.append("counts: rejects.parquet rows differ from load + variant rejects")
    if problems:
        return report  # do not re-verify rows of files that are already known to be wrong
    listed = _listing(root, manifest, problems)

    accounting = _Accounting(root, manifest, problems)
    sources = accounting.sources(
        _source_items(manifest, episodes, trust_hooks, harness, harness_roots)
    )
    # What the manifest says of the rows (its version, statistics, licences) is checked too: a
    # card and push read them. A rollout's version and statistics are made otherwise (by its
    # endpoint settings and trajectories), so only generated versions are held to this.
    claims = None if check_row is not None else _Claims(manifest, problems)
    current: Episode | None = None
    seen_ids: set[str] = set()
    for row in _rows(root, manifest):
        if len(problems) > 50:
            problems.append("... stopping after 50 problems")
            break
        report.rows_checked += 1
        if on_progress is not None:
            on_progress(report.rows_checked)
        if row["id"] in seen_ids:
            problems.append(f"{row['id']}: duplicate row id")
        seen_ids.add(row["id"])
        if wrong_id := _wrong_id(row):
            problems.append(wrong_id)
        while current is None or current.id != row["hsa_source_id"]:
            current = next(sources, None)  # rows follow the input order; skip sources without rows
            if current is None:
                problems.append(
                    f"{row['id']}: source {row['hsa_source_id']!r} not found in order "
                    f"in the episodes"
                )
                return report
        accounting.add(row)
        if claims is not None:
            claims.add(row, current)
        name = row["hsa_harness_variant"]
        if listed is not None and name is not None and not listed.check(name, row["hsa_lineage"]):
            problems.append(
                f"{row['id']}: harness variant {name} is not listed in {LISTING_FILE} "
                f"with the start of this row's lineage"
            )
        if check_row is not None:
            problems.extend(check_row(current, row))
            continue
        try:
            rebuilt = rebuild(current, row, manifest["version"], manifest["recipe"])
        except VerificationFailed as exc:
            problems.append(f"{row['id']}: verify:{exc.check}: {exc.reason}")
            continue
        except HsaError as exc:
            problems.append(f"{row['id']}: cannot rebuild: {exc}")
            continue
        # the id was checked above: the rebuild's is the one its source id and variant make
        differing = [column for column in _differences(row, rebuilt) if column != "id"]
        if differing:
            problems.append(
                f"{row['id']}: stored row differs from its rebuild in {', '.join(differing)}"
            )
    if listed is not None and report.rows_checked == counts["rows"] and listed.untaken():
        problems.append(
            f"{LISTING_FILE}: {listed.untaken()} listed harness variant(s) no row takes"
        )
    if report.rows_checked == counts["rows"]:
        accounting.close(sources)
        if claims is not None:
            claims.close(accounting.stages)
    return report


def _variant_indices(recipe: dict | None) -> range:
    """The variant indices a recipe makes of every source (:attr:`Recipe.variant_indices`); a
    rollout without a recipe makes the original alone. Raises HsaError when the recipe does not
    load."""
    return range(1) if recipe is None else Recipe.from_dict(recipe).variant_indices


def _spans(indices: range) -> str:
    return f"variant {indices[0]}" if len(indices) == 1 else f"variants {indices[0]}-{indices[-1]}"


class _Accounting:
    """Checks that nothing of the input is missing from a version, in the pass that rebuilds its
    rows: each line of the episodes is a source whose every variant the recipe makes is a row
    or a variant reject (never both), or a load reject (a line that does not load, or repeats
    an earlier episode's id), and the manifest's counts are what the lines, rows and
    rejects.parquet hold. Rows and rejects follow the input order, as generate and rollout write
    them; rejects.parquet (one record per reject, no more) is read whole."""

    MAX_NAMED = 10  # the first problems named one by one; the others counted

    def __init__(self, root: Path, manifest: dict, problems: list[str]):
        self.manifest, self.problems = manifest, problems
        records = pq.read_table(
            root / manifest["rejects"]["path"], columns=["line", "id", "variant", "stage"]
        ).to_pylist()
        self.stages = [r["stage"] for r in records]
        self.load_records = [r for r in records if r["variant"] is None]
        # by id (None: a line that is no JSON object with one): each line that is no source
        # takes one, whatever their order
        self.unclaimed_loads = Counter(r["id"] for r in self.load_records)
        self.variant_records: dict[str | None, list[int]] = {}
        for record in records:
            if record["variant"] is not None:
                self.variant_records.setdefault(record["id"], []).append(record["variant"])
        try:
            self.indices: range | None = _variant_indices(manifest["recipe"])
        except HsaError as exc:
            self.indices = None  # the variants of a source cannot be told; all else is checked
            if manifest.get("kind") == "rollout":  # a generated version's _Claims names it
                problems.append(f"manifest: its recipe does not load: {exc}")
        self.lines = 0
        self.load_items = 0  # lines that are load rejects: not loading, or a repeated id
        self.sources_out = self.sources_all_rejected = 0
        self.seen: set[str] = set()
        self.source: str | None = None  # the source whose rows come now
        self.rows: list[int] = []  # its rows' variant indices
        # what is missing or extra, by line, named on close (the rows' own problems come first)
        self.gaps: list[str] = []
        self.more_gaps = 0

    def _gap(self, problem: str) -> None:
        if len(self.gaps) < self.MAX_NAMED:
            self.gaps.append(problem)
        else:
            self.more_gaps += 1

    def sources(self, items: Iterator[Episode | Reject]) -> Iterator[Episode]:
        """The episodes of ``items`` whose rows may come (each id's first line), in order; every
        item is accounted for as the iteration passes it."""
        for item in items:
            self._close_source()
            self.lines += 1
            if isinstance(item, Episode) and item.id not in self.seen:
                self.seen.add(item.id)
                self.source, self.rows = item.id, []
                yield item
            else:
                self._load_reject(item)
        self._close_source()

    def add(self, row: dict) -> None:
        """A row of the current source (the one :meth:`sources` yielded last)."""
        self.rows.append(row["hsa_variant"])

    def _load_reject(self, item: Episode | Reject) -> None:
        """A line that is no source: a load reject of rejects.parquet with its id must be its."""
        self.load_items += 1
        if self.unclaimed_loads[item.id] > 0:
            self.unclaimed_loads[item.id] -= 1
        elif isinstance(item, Episode):  # read_episodes has no line number for an episode
            self._gap(
                f"a line of the episodes repeats episode id {item.id!r} (ids must be unique), "
                f"but rejects.parquet has no load reject for it"
            )
        else:
            self._gap(
                f"line {item.line} of the episodes does not load ({item.reason[:80]}), but "
                f"rejects.parquet has no load reject for it"
                + (f" (id {item.id!r})" if item.id is not None else "")
            )

    def _close_source(self) -> None:
        """Check the variants of the source whose rows have all come."""
        if self.source is None:
            return
        source, rows = self.source, self.rows
        self.source, self.rows = None, []
        if rows:
            self.sources_out += 1
        else:
            self.sources_all_rejected += 1
        rejected = self.variant_records.pop(source, [])
        if self.indices is None:
            return
        made = self.indices
        for kind, indices in (("a row", rows), ("a variant reject", rejected)):
            for index in sorted({i for i in indices if i not in made}, key=str):
                self._gap(
                    f"source {source!r}: variant {index} ({row_id(source, index)}) is {kind}, "
                    f"but the recipe makes {_spans(made)} of every source"
                )
        if len(rejected) != len(set(rejected)):
            self._gap(f"source {source!r}: rejects.parquet rejects a variant of it twice")
        for index in sorted(set(rows) & set(rejected)):
            self._gap(
                f"source {source!r}: variant {index} ({row_id(source, index)}) is both a row and "
                f"a variant reject"
            )
        missing = [i for i in made if i not in rows and i not in rejected]
        if missing:
            self._gap(
                f"source {source!r}: variant {missing[0]} ({row_id(source, missing[0])}) is "
                f"neither a row nor a variant reject in rejects.parquet"
                + (f" (nor are {len(missing) - 1} more)" if len(missing) > 1 else "")
                + f"; the recipe makes {_spans(made)} of every source"
            )

    def close(self, sources: Iterator[Episode]) -> None:
        """Account for the lines after the last row's source, then check the counts."""
        for _ in sources:
            pass
        problems = self.problems
        problems.extend(self.gaps)
        if self.more_gaps:
            problems.append(f"... and {self.more_gaps} more lines or variants unaccounted for")
        if extra := sum(self.unclaimed_loads.values()):
            record = next(r for r in self.load_records if self.unclaimed_loads[r["id"]])
            problems.append(
                f"rejects.parquet: {extra} load reject(s) match no line of the episodes that "
                f"fails to load or repeats an id, e.g. line {record['line']} "
                f"(id {record['id']!r})"
            )
        if self.variant_records:
            source, indices = next(iter(self.variant_records.items()))
            problems.append(
                f"rejects.parquet: variant rejects of {len(self.variant_records)} source(s) that "
                f"are not a source of the episodes, the first {row_id(str(source), indices[0])}"
            )
        counts = self.manifest["counts"]
        found = {
            "input_lines": self.lines,
            "sources_out": self.sources_out,
            "sources_all_rejected": self.sources_all_rejected,
            "load_rejects": self.load_items,
            "variant_rejects": len(self.stages) - len(self.load_records),
        }
        for key, value in found.items():
            if counts[key] != value:
                problems.append(
                    f"counts: {key} is {counts[key]} in the manifest, {value} counted from the "
                    f"episodes, rows and rejects.parquet"
                )


class _Claims:
    """Checks what a generated version's manifest claims against what makes and fills it: the
    version id against its recipe, inputs, hsa version, transform versions and split (so none
    of them was edited), and the statistics and skill licences against the rows (as
    hsa.dataset.generate counts them)."""

    def __init__(self, manifest: dict, problems: list[str]):
        self.manifest, self.problems = manifest, problems
        self.by_family: Counter = Counter()
        self.by_transform: Counter = Counter()
        self.harness_variants = HarnessVariantTally()
        self.licenses: dict = {}
        self._source: Episode | None = None
        self.unreadable = False  # a row whose lineage does not parse
        self._version(manifest)

    def _version(self, manifest: dict) -> None:
        # read_manifest has checked the keys every version has (split and input among them)
        kinds = {"transform_versions": dict, "hsa_version": str}
        wrong = [key for key, kind in kinds.items() if not isinstance(manifest.get(key), kind)]
        if wrong:
            self.problems.append(f"manifest: {', '.join(wrong)} missing or of the wrong type")
            return
        try:
            recipe = Recipe.from_dict(manifest["recipe"])
        except HsaError as exc:
            self.problems.append(f"manifest: its recipe does not load: {exc}")
            return
        if manifest.get("seed") != recipe.seed:
            self.problems.append(
                f"manifest: seed {manifest.get('seed')!r} is not its recipe's ({recipe.seed!r})"
            )
        installed = recipe.transform_versions()
        if manifest["transform_versions"] != installed:
            differ = sorted(
                k
                for k in set(installed) | set(manifest["transform_versions"])
                if installed.get(k) != manifest["transform_versions"].get(k)
            )
            self.problems.append(
                f"manifest: transform_versions differ from the installed versions of its "
                f"recipe's transforms ({', '.join(differ)})"
            )
        if manifest.get("assets") != shipped_assets():
            self.problems.append("manifest: assets differ from this installation's templates")
        # The input's fingerprint is the manifest's own: _source_episodes checked it is today's.
        fingerprint = {
            k: v for k, v in manifest["input"].items() if k not in ("episodes", "harness")
        }
        made = version_id(
            recipe.version_dict(),
            fingerprint,
            manifest["hsa_version"],
            manifest["transform_versions"],
            manifest["split"],
        )
        if made != manifest["version"]:
            self.problems.append(
                f"manifest: its recipe, inputs, hsa version, transform versions and split make "
                f"version {made}, not {manifest['version']} (the manifest was edited)"
            )

    def add(self, row: dict, source: Episode) -> None:
        try:
            steps = steps_from(row["hsa_lineage"])
        except HsaError:  # the row's own check names it; the counts are then not comparable
            self.unreadable = True
            return
        self.by_family.update(row["hsa_families"])
        self.by_transform.update(s.transform for s in fired_steps(steps))
        if row["hsa_harness_variant"] is not None:
            self.harness_variants.add([row["hsa_harness_variant"]])
        if source is not self._source:  # the first row of a source: its skills' licences
            self._source = source
            self.licenses.update(skill_licenses(source.harness))

    def close(self, stages: list[str]) -> None:
        """Compare the statistics with the rows and the ``stages`` of rejects.parquet."""
        if self.unreadable:
            return
        statistics = {
            "rows_by_family": dict(sorted(self.by_family.items())),
            "rows_by_transform": dict(sorted(self.by_transform.items())),
            "rejects_by_stage": dict(sorted(Counter(stages).items())),
        }
        if self.harness_variants.rows:
            statistics["harness_variants"] = self.harness_variants.summary()
        claimed = self.manifest.get("statistics")
        claimed = claimed if isinstance(claimed, dict) else {}
        for key in sorted(set(statistics) | set(claimed)):
            if claimed.get(key) != statistics.get(key):
                self.problems.append(
                    f"manifest: statistics.{key} is not what the rows hold: "
                    f"{_first_difference(claimed.get(key), statistics.get(key))}"
                )
        licenses = dict(sorted(self.licenses.items()))
        if self.manifest.get("skill_licenses") != licenses:
            self.problems.append(
                f"manifest: skill_licenses are not the licences the source skills state: "
                f"{_first_difference(self.manifest.get('skill_licenses'), licenses)}"
            )


def _first_difference(claimed, counted) -> str:
    """Where a claimed mapping first differs from the counted one, as a short phrase."""
    if isinstance(claimed, dict) and isinstance(counted, dict):
        for key in sorted(set(claimed) | set(counted), key=str):
            if claimed.get(key) != counted.get(key):
                return (
                    f"{key!r} claimed {claimed.get(key, 'absent')!r}, "
                    f"counted {counted.get(key, 'absent')!r}"
                )
    return f"claimed {str(claimed)[:60]}, counted {str(counted)[:60]}"


def _listing(root: Path, manifest: dict, problems: list[str]) -> ListedLineages | None:
    """The version's listing of harness variants to check rows against, or None without one
    (a recipe without a pool); a pooled version lacking it is a problem."""
    path = listing_path(root, manifest)
    if path is not None:
        listed = ListedLineages(path)
        problems.extend(listed.problems)
        return listed
    if why := unlisted(manifest):
        problems.append(why)
    return None


def refuse_damaged(
    version_dir: Path, manifest: dict, doing: str, *, with_card: bool = True
) -> None:
    """Raise an HsaError naming what is wrong when the version's files are not the ones its
    manifest lists (:func:`version_problems`, ``with_card`` passed on), before anything reads
    them."""
    problems = version_problems(version_dir, manifest, with_card=with_card)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise HsaError(
            f"the version is damaged, so hsa will not {doing}: {'; '.join(problems[:3])}{more}; "
            f"hsa verify lists what is wrong, hsa generate rebuilds it",
            file=str(version_dir),
        )


def replay_row(
    version_dir: str | os.PathLike,
    row_id: str,
    *,
    episodes: str | os.PathLike | None = None,
    trust_hooks: bool = False,
    harness: str | os.PathLike | None = None,
    harness_roots: tuple[str | os.PathLike, ...] = (),
    check: Callable[[Episode, dict], list[str]] | None = None,
) -> tuple[dict, list[str]]:
    """The stored row and the columns where its rebuild differs (empty: identical). ``check``,
    when given, says instead what is wrong with the row given its source episode: a row whose
    conversation a teacher wrote cannot be rebuilt (hsa.rollout.audit.RowCheck)."""
    root = Path(version_dir)
    manifest = read_manifest(root)
    stored = _stored_row(root, manifest, row_id)
    if stored is None:
        raise HsaError(f"no row {row_id!r} in this version", file=str(root))
    lacking = [name for name in ROW_SCHEMA.names if name not in stored]
    if lacking:  # a shard rewritten with other columns: nothing to rebuild it against
        raise HsaError(
            f"row {row_id!r} lacks the column(s) {', '.join(lacking)}: the version is damaged "
            f"(hsa verify lists what is wrong, hsa generate rebuilds it)",
            file=str(root),
        )
    path, default = checked_input(
        manifest, episodes, trust_hooks, harness=harness, harness_roots=harness_roots
    )
    source = find_episode(
        path,
        stored["hsa_source_id"],
        harness=default,
        trust_hooks=trust_hooks,
        harness_roots=harness_roots,
    )
    if source is None:
        raise HsaError(f"source episode {stored['hsa_source_id']!r} not in the episodes")
    if check is not None:
        wrong_id = _wrong_id(stored)
        return stored, ([wrong_id] if wrong_id else []) + check(source, stored)
    rebuilt = rebuild(source, stored, manifest["version"], manifest["recipe"])
    return stored, _differences(stored, rebuilt)


def replay_variant(
    variants: str | os.PathLike,
    row_id: str,
    *,
    episodes: str | os.PathLike,
    trust_hooks: bool = False,
    harness: str | os.PathLike | None = None,
    harness_roots: tuple[str | os.PathLike, ...] = (),
) -> tuple[dict, list[str]]:
    """The stored line of variant ``row_id`` (SOURCE_ID#INDEX) in a variants JSONL, and the parts
    (``episode``, ``mapping``) where the variant rebuilt from its source episode in ``episodes``
    and its lineage differs from it (empty: identical)."""
    parsed = parse_row_id(row_id)
    if parsed is None:
        raise HsaError(f"--id must look like SOURCE_ID#INDEX, got {row_id!r}")
    source_id, index = parsed
    stored, unreadable = None, []
    for line in read_lines(variants):
        if line.error is not None or not isinstance(line.value, dict):
            unreadable.append(line.number)
        elif line.value.get("source_id") == source_id and line.value.get("variant") == index:
            stored = line.value
            where = line.number
            break
    if stored is None:
        damaged = (
            f" ({len(unreadable)} line(s) are no variant object, first line {unreadable[0]}: "
            f"the file is damaged)"
            if unreadable
            else ""
        )
        raise HsaError(f"no variant {row_id} in {variants}{damaged}")
    lacking = [key for key in ("lineage", "episode", "mapping") if key not in stored]
    if lacking:
        raise HsaError(
            f"variant {row_id} lacks {', '.join(lacking)} (a line hsa augment writes has "
            f"source_id, variant, episode, lineage and mapping)",
            file=str(variants),
            line=where,
        )
    default = load_harness(harness, trust_hooks=trust_hooks) if harness else None
    original = find_episode(
        episodes, source_id, harness=default, trust_hooks=trust_hooks, harness_roots=harness_roots
    )
    if original is None:
        raise HsaError(f"source episode {source_id!r} not found (or not valid) in {episodes}")
    rebuilt, mapping = replay(original, steps_from(stored["lineage"]))
    return stored, [
        name
        for name, a, b in (
            ("episode", rebuilt.to_dict(), stored["episode"]),
            ("mapping", mapping.to_dict(), stored["mapping"]),
        )
        if dumps(a) != dumps(b)
    ]
