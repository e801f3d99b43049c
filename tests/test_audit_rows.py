"""hsa verify accounts for every row and every input line, not only for the rows it finds.

A forger who edits a version and makes its manifest match (shard hashes and row counts, the
counts of rows and rejects, the statistics: :func:`tampered`) must still be caught: a row whose
id or variant index was rewritten, and a row, a source or a reject that was dropped. Every source
episode's variants (0..variants_per_episode, 0 the kept original) are rows or variant rejects,
and every line that is no source is a load reject.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from openai_stub import PerConversation, ScriptedServer, replay_plans

from hsa.augment.lineage import fired_steps
from hsa.augment.recipe import load_recipe
from hsa.augment.step import steps_from
from hsa.cli import main
from hsa.dataset.audit import audit_version, replay_row
from hsa.dataset.generate import Result, generate
from hsa.dataset.harness_variants import HarnessVariantTally
from hsa.dataset.writer import sealed, sha256
from hsa.example import EPISODES_PATH, HARNESS_DIR
from hsa.importers.bfcl import import_bfcl
from hsa.rollout import RolloutSettings, rollout, rollout_recipe
from hsa.rollout.audit import RowCheck, audit_rollout
from hsa.runtime import Endpoint

Rows = Callable[[list[dict]], list[dict]]


def tampered(
    result: Result,
    dest: Path,
    *,
    rows: Rows | None = None,
    rejects: Rows | None = None,
    manifest: Callable[[dict], None] | None = None,
) -> Path:
    """A copy of a version with its rows and rejects edited, and everything verify read before
    made to match: each file's sha256 and rows, the counts of rows and rejects, the statistics
    (then ``manifest`` edits the manifest further). The note of where its inputs lie is copied."""
    shutil.copytree(result.path, dest)
    note = f".{result.path.name}.inputs.json"
    shutil.copy(result.path.parent / note, dest.parent / f".{dest.name}.inputs.json")
    m = json.loads((dest / "manifest.json").read_text())
    kept_rows: list[dict] = []
    for shard in m["shards"]:
        path = dest / shard["path"]
        table = pq.read_table(path)
        kept = rows(table.to_pylist()) if rows else table.to_pylist()
        pq.write_table(pa.Table.from_pylist(kept, schema=table.schema), path)
        shard.update(rows=len(kept), sha256=sha256(path))
        kept_rows += kept
    path = dest / m["rejects"]["path"]
    table = pq.read_table(path)
    records = rejects(table.to_pylist()) if rejects else table.to_pylist()
    pq.write_table(pa.Table.from_pylist(records, schema=table.schema), path)
    m["rejects"].update(rows=len(records), sha256=sha256(path))
    loads = sum(r["variant"] is None for r in records)
    m["counts"].update(
        rows=len(kept_rows), load_rejects=loads, variant_rejects=len(records) - loads
    )
    statistics = m["statistics"]
    statistics["rows_by_family"] = dict(
        sorted(Counter(f for r in kept_rows for f in r["hsa_families"]).items())
    )
    statistics["rows_by_transform"] = dict(
        sorted(
            Counter(
                s.transform for r in kept_rows for s in fired_steps(steps_from(r["hsa_lineage"]))
            ).items()
        )
    )
    statistics["rejects_by_stage"] = dict(sorted(Counter(r["stage"] for r in records).items()))
    if "harness_variants" in statistics:
        tally = HarnessVariantTally()
        tally.add([r["hsa_harness_variant"] for r in kept_rows if r["hsa_harness_variant"]])
        statistics["harness_variants"] = tally.summary()
    if manifest is not None:
        manifest(m)
    # resealed: the rows were made as the tests want them, not edited after
    (dest / "manifest.json").write_text(json.dumps(sealed(m), indent=2))
    return dest


def problems_of(path: Path) -> list[str]:
    return audit_version(path, trust_hooks=True).problems


def stored_rows(result: Result) -> list[dict]:
    return [
        r
        for s in result.manifest["shards"]
        for r in pq.read_table(result.path / s["path"]).to_pylist()
    ]


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Result:
    """tools-basic (variants 0-3, the original kept) over the first four example episodes."""
    folder = tmp_path_factory.mktemp("example")
    shutil.copytree(HARNESS_DIR, folder / "harness")
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines(keepends=True)[:4]
    (folder / "episodes.jsonl").write_text("".join(lines), encoding="utf-8")
    made = generate(
        load_recipe("tools-basic"), folder / "episodes.jsonl", folder / "out", trust_hooks=True
    )
    assert made.manifest["counts"]["rows"] == 16
    return made


# BFCL questions that hat-train's distractor_tools rejects in some variants (a distractor about
# what the request asks), and one that it does not.
WITH_VARIANT_REJECTS = ("live_simple_166-99-0", "live_simple_79-40-0")
CLEAN = "live_simple_0-0-0"


@pytest.fixture(scope="module")
def with_rejects(tmp_path_factory, bfcl_data) -> Result:
    """hat-train (a pool of harness variants; variants 0-4) over BFCL questions with variant
    rejects, a line that is no JSON (line 2) and a repeated id (line 5): rejects of both kinds."""
    folder = tmp_path_factory.mktemp("bfcl")
    written, _ = import_bfcl(bfcl_data / "BFCL_v4_live_simple.json").write(folder / "all.jsonl")
    by_id = {json.loads(line)["id"]: line for line in written.read_text().splitlines()}
    lines = [
        by_id[CLEAN],
        "{not json",
        by_id[WITH_VARIANT_REJECTS[0]],
        by_id[WITH_VARIANT_REJECTS[1]],
        by_id[CLEAN],
    ]
    (folder / "episodes.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    made = generate(load_recipe("hat-train"), folder / "episodes.jsonl", folder / "out")
    counts = made.manifest["counts"]
    assert (counts["input_lines"], counts["sources_out"], counts["load_rejects"]) == (5, 3, 2)
    assert counts["variant_rejects"] > 0, "these questions no longer make variant rejects"
    return made


def test_untampered_versions_account_for_every_line(example, with_rejects):
    assert problems_of(example.path) == []
    assert problems_of(with_rejects.path) == []


# ---- a row's id and variant index ----------------------------------------------------------


def test_verify_and_replay_name_a_row_whose_id_was_rewritten(example, tmp_path, capsys):
    row = stored_rows(example)[1]
    source, index = row["hsa_source_id"], row["hsa_variant"]

    def rename(rows):
        return [{**r, "id": "totally-different-id"} if r["id"] == row["id"] else r for r in rows]

    copy = tampered(example, tmp_path / "t-id", rows=rename)
    assert problems_of(copy) == [
        f"totally-different-id: id is not '{source}#{index}', the id of variant {index} of "
        f"source '{source}'"
    ]
    assert replay_row(copy, "totally-different-id", trust_hooks=True)[1] == ["id"]
    assert main(["replay", str(copy), "--id", "totally-different-id", "--trust-hooks"]) == 1
    assert "DIFFERS from the stored one in id" in capsys.readouterr().err
    assert main(["verify", str(copy), "--trust-hooks"]) == 1


def test_verify_names_a_variant_index_the_recipe_does_not_make(example, tmp_path):
    row = stored_rows(example)[1]
    source, index = row["hsa_source_id"], row["hsa_variant"]

    def renumber(rows):
        return [{**r, "hsa_variant": 9} if r["id"] == row["id"] else r for r in rows]

    copy = tampered(example, tmp_path / "t-variant", rows=renumber)
    assert problems_of(copy) == [
        f"{row['id']}: id is not '{source}#9', the id of variant 9 of source '{source}'",
        f"source '{source}': variant 9 ({source}#9) is a row, but the recipe makes variants 0-3 "
        f"of every source",
        f"source '{source}': variant {index} ({row['id']}) is neither a row nor a variant reject "
        f"in rejects.parquet; the recipe makes variants 0-3 of every source",
    ]


def test_verify_names_two_rows_whose_ids_were_swapped(example, tmp_path):
    first, second = stored_rows(example)[1:3]
    swap = {first["id"]: second["id"], second["id"]: first["id"]}
    copy = tampered(
        example,
        tmp_path / "t-swap",
        rows=lambda rows: [{**r, "id": swap.get(r["id"], r["id"])} for r in rows],
    )
    assert [p.split(": ")[0] for p in problems_of(copy)] == [second["id"], first["id"]]


# ---- rows, sources and rejects dropped ----------------------------------------------------------


def test_verify_names_a_row_dropped_with_the_counts_made_to_match(example, tmp_path, capsys):
    dropped = stored_rows(example)[6]
    source, index = dropped["hsa_source_id"], dropped["hsa_variant"]
    copy = tampered(
        example, tmp_path / "t-drop", rows=lambda rows: [r for r in rows if r != dropped]
    )
    missing = (
        f"source '{source}': variant {index} ({source}#{index}) is neither a row nor a variant "
        f"reject in rejects.parquet; the recipe makes variants 0-3 of every source"
    )
    assert problems_of(copy) == [missing]
    assert main(["verify", str(copy), "--trust-hooks"]) == 1
    assert missing in capsys.readouterr().err


@pytest.mark.parametrize("counts_too", [False, True])
def test_verify_names_the_last_source_dropped_whole(example, tmp_path, counts_too):
    """The last source's rows gone: the episodes after the last row are read to the end."""
    last = stored_rows(example)[-1]["hsa_source_id"]

    def all_rejected(m):  # as if its variants had all been rejected
        m["counts"]["sources_out"] -= 1
        m["counts"]["sources_all_rejected"] += 1

    copy = tampered(
        example,
        tmp_path / "t-source",
        rows=lambda rows: [r for r in rows if r["hsa_source_id"] != last],
        manifest=all_rejected if counts_too else None,
    )
    missing = (
        f"source '{last}': variant 0 ({last}#0) is neither a row nor a variant reject in "
        f"rejects.parquet (nor are 3 more); the recipe makes variants 0-3 of every source"
    )
    assert problems_of(copy) == [missing] + (
        []
        if counts_too
        else [
            "counts: sources_out is 4 in the manifest, 3 counted from the episodes, rows and "
            "rejects.parquet",
            "counts: sources_all_rejected is 0 in the manifest, 1 counted from the episodes, "
            "rows and rejects.parquet",
        ]
    )


def _one_fewer_line(m):
    m["counts"]["input_lines"] -= 1


def test_verify_names_a_variant_reject_dropped(with_rejects, tmp_path):
    records = pq.read_table(with_rejects.path / "rejects.parquet").to_pylist()
    dropped = next(r for r in records if r["variant"] is not None)
    source, index = dropped["id"], dropped["variant"]
    copy = tampered(
        with_rejects, tmp_path / "t", rejects=lambda rs: [r for r in rs if r != dropped]
    )
    assert problems_of(copy) == [
        f"source '{source}': variant {index} ({source}#{index}) is neither a row nor a variant "
        f"reject in rejects.parquet; the recipe makes variants 0-4 of every source"
    ]


def test_verify_names_a_variant_both_a_row_and_a_reject(with_rejects, tmp_path):
    row = stored_rows(with_rejects)[0]
    source, index = row["hsa_source_id"], row["hsa_variant"]
    records = pq.read_table(with_rejects.path / "rejects.parquet").to_pylist()
    extra = {**next(r for r in records if r["variant"] is not None), "id": source, "variant": index}
    copy = tampered(with_rejects, tmp_path / "t", rejects=lambda rs: [extra, *rs])
    assert problems_of(copy) == [
        f"source '{source}': variant {index} ({source}#{index}) is both a row and a variant reject"
    ]


@pytest.mark.parametrize(
    "line, problem",
    [
        (2, "line 2 of the episodes does not load (not valid JSON"),
        (5, f"a line of the episodes repeats episode id '{CLEAN}' (ids must be unique)"),
    ],
)
def test_verify_names_a_line_whose_load_reject_was_dropped(with_rejects, tmp_path, line, problem):
    copy = tampered(
        with_rejects,
        tmp_path / "t",
        rejects=lambda rs: [r for r in rs if r["line"] != line or r["variant"] is not None],
        manifest=_one_fewer_line,  # the line "never was": the counts add up again
    )
    problems = problems_of(copy)
    assert problems[0].startswith(problem)
    assert problems[0].endswith(", but rejects.parquet has no load reject for it")
    assert problems[1:] == [
        "counts: input_lines is 4 in the manifest, 5 counted from the episodes, rows and "
        "rejects.parquet",
        "counts: load_rejects is 1 in the manifest, 2 counted from the episodes, rows and "
        "rejects.parquet",
    ]


def test_verify_names_a_load_reject_for_no_line(with_rejects, tmp_path):
    records = pq.read_table(with_rejects.path / "rejects.parquet").to_pylist()
    extra = {**next(r for r in records if r["variant"] is None), "line": 9, "id": "nowhere"}

    def one_more_line(m):
        m["counts"]["input_lines"] += 1

    copy = tampered(
        with_rejects, tmp_path / "t", rejects=lambda rs: [*rs, extra], manifest=one_more_line
    )
    assert problems_of(copy) == [
        "rejects.parquet: 1 load reject(s) match no line of the episodes that fails to load "
        "or repeats an id, e.g. line 9 (id 'nowhere')",
        "counts: input_lines is 6 in the manifest, 5 counted from the episodes, rows and "
        "rejects.parquet",
        "counts: load_rejects is 3 in the manifest, 2 counted from the episodes, rows and "
        "rejects.parquet",
    ]


def test_the_statistics_of_a_tampered_copy_are_what_generate_writes(with_rejects, tmp_path):
    """The forger's arithmetic (:func:`tampered`) is generate's: a copy edited by nothing is
    byte for byte the manifest's claims, so the tests above see only what they dropped."""
    copy = tampered(with_rejects, tmp_path / "t")
    written = json.loads((copy / "manifest.json").read_text())
    for key in ("counts", "statistics"):
        assert written[key] == with_rejects.manifest[key]
    assert problems_of(copy) == []


# ---- rollouts --------------------------------------------------------------------------------


def test_verify_names_a_rollout_row_dropped(tmp_path):
    """A rollout's rows are checked, not rebuilt; what it lacks is found all the same."""
    shutil.copytree(HARNESS_DIR, tmp_path / "harness")
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines(keepends=True)[:3]
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text("".join(lines), encoding="utf-8")
    recipe = rollout_recipe(load_recipe("hat-train"), variants=1)
    plans, _ = replay_plans(str(episodes), recipe)
    with ScriptedServer(PerConversation(plans), model="teacher") as server:
        settings = RolloutSettings(
            endpoint=Endpoint(server.base_url, "teacher", max_retries=0, backoff_s=0.01)
        )
        made = rollout(recipe, episodes, tmp_path / "out", settings=settings, trust_hooks=True)
    assert made.manifest["counts"]["rows"] == 6
    assert audit_rollout(made.path, trust_hooks=True).problems == []
    # an original: a pooled variant's row may be the only one its listed harness variant has
    dropped = next(r for r in stored_rows(made)[1:] if r["hsa_variant"] == 0)
    source, index = dropped["hsa_source_id"], dropped["hsa_variant"]
    copy = tampered(made, tmp_path / "t", rows=lambda rows: [r for r in rows if r != dropped])
    assert audit_rollout(copy, trust_hooks=True).problems == [
        f"source '{source}': variant {index} ({source}#{index}) is neither a row nor a variant "
        f"reject in rejects.parquet; the recipe makes variants 0-1 of every source"
    ]
    # A rewritten id is named by verify and by replay (which checks a rollout row, not rebuilds).
    row = stored_rows(made)[1]

    def rename(rows):
        return [{**r, "id": "totally-different-id"} if r == row else r for r in rows]

    copy = tampered(made, tmp_path / "t-id", rows=rename)
    wrong = (
        f"totally-different-id: id is not '{row['id']}', the id of variant {row['hsa_variant']} "
        f"of source '{row['hsa_source_id']}'"
    )
    assert wrong in audit_rollout(copy, trust_hooks=True).problems
    check = RowCheck(copy, json.loads((copy / "manifest.json").read_text()))
    assert replay_row(copy, "totally-different-id", trust_hooks=True, check=check)[1][0] == wrong
