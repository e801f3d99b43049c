"""A pooled version's listing of harness variants (``harness_variants.parquet``): each variant the
rows took, once, with the lineage of its harness stage, which every row of the variant starts
with; the same bytes whatever the workers; checked by ``hsa verify``; rebuilt into versions made
before it existed."""

from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import patch

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from hsa.augment.compose import COMPOSITIONS
from hsa.augment.recipe import load_recipe
from hsa.augment.registry import registered
from hsa.dataset import harness_variants
from hsa.dataset.audit import audit_version
from hsa.dataset.bench import write_inputs
from hsa.dataset.generate import generate
from hsa.dataset.harness_variants import (
    LISTING_FILE,
    HarnessVariantListing,
    ListedLineages,
)
from hsa.dataset.writer import sealed, sha256
from hsa.importers.bfcl import import_bfcl


def _rows(version: Path) -> list[dict]:
    return [
        r
        for shard in sorted(version.glob("data/*.parquet"))
        for r in pq.read_table(shard).to_pylist()
    ]


def _listing(version: Path) -> list[dict]:
    return pq.read_table(version / LISTING_FILE).to_pylist()


def _check_against_rows(version: Path, manifest: dict) -> list[dict]:
    """The listing holds exactly the (variant, stage) pairs the rows show; returns it."""
    listing = _listing(version)
    assert manifest["harness_variants"] == {
        "path": LISTING_FILE,
        "rows": len(listing),
        "sha256": sha256(version / LISTING_FILE),
    }
    stages = [(e["harness_variant"], json.loads(e["lineage"])) for e in listing]
    assert len({(n, json.dumps(s)) for n, s in stages}) == len(stages)  # each listed once
    taken = set()
    for row in _rows(version):
        name = row["hsa_harness_variant"]
        if name is None:
            assert row["hsa_variant"] == 0  # only the original takes no harness variant
            continue
        lineage = json.loads(row["hsa_lineage"])
        matches = [i for i, (n, s) in enumerate(stages) if n == name and lineage[: len(s)] == s]
        assert matches, f"{row['id']}: its harness variant is not listed"
        taken.update(matches)
    assert taken == set(range(len(stages)))  # and nothing is listed that no row takes
    return listing


def test_the_listing_names_each_variant_once_with_the_harness_scoped_start_of_its_rows(
    tmp_path,
):
    jsonl, _ = write_inputs(tmp_path / "in", 30, "shared-harness")
    recipe = load_recipe("hat-train")
    one = generate(recipe, jsonl, tmp_path / "w1")
    listing = _check_against_rows(one.path, one.manifest)
    taken = one.manifest["statistics"]["harness_variants"]
    assert len(listing) == taken["count"]
    # The card says how many the rows took, how many rows each serves, and where the listing is.
    card = " ".join((one.path / "README.md").read_text(encoding="utf-8").split())
    assert "a pool of 64 per source harness (`harness_variants`)." in card
    assert (
        f"The rows took {taken['count']}; rows per harness variant: min {taken['rows_min']}, "
        f"median {taken['rows_median']}, max {taken['rows_max']}." in card
    )
    assert f"`{LISTING_FILE}` lists each one once with the lineage of its harness stage" in card
    # The listed lineage is the harness stage: harness-scoped transforms (and the compositions
    # choosing among them) only, and shorter than the rows' lineages, which go on with the
    # episode-scoped nodes of hat-train (prompt placement, the hook retry policy).
    known = registered()
    for entry in listing:
        steps = json.loads(entry["lineage"])
        assert steps
        fired = [s["transform"] for s in steps if s["transform"] not in COMPOSITIONS]
        assert all(known[name].scope == "harness" for name in fired), fired
    longest = max(len(json.loads(e["lineage"])) for e in listing)
    assert all(
        len(json.loads(r["hsa_lineage"])) > longest for r in _rows(one.path) if r["hsa_variant"]
    )
    two = generate(recipe, jsonl, tmp_path / "w2", workers=2, batch_size=3)
    assert (two.path / LISTING_FILE).read_bytes() == (one.path / LISTING_FILE).read_bytes()
    report = audit_version(one.path)
    assert report.ok, report.problems


def test_on_bfcl_every_episode_has_harness_variants_of_its_own(tmp_path, bfcl_data):
    result = import_bfcl(bfcl_data / "BFCL_v4_multiple.json")
    episodes = tmp_path / "multiple.jsonl"
    episodes.write_bytes(b"".join(orjson.dumps(e.to_dict()) + b"\n" for e in result.episodes[:12]))
    version = generate(load_recipe("hat-train"), episodes, tmp_path / "out")
    listing = _check_against_rows(version.path, version.manifest)
    variant_rows = [r for r in _rows(version.path) if r["hsa_variant"]]
    harnesses = {r["hsa_harness_variant"].split(":")[0] for r in variant_rows}
    assert len(harnesses) > 1
    # With a pool larger than an episode's variants, each variant row is a harness variant of
    # its own where the episode's harness is its own.
    assert len(listing) == len({r["hsa_harness_variant"] for r in variant_rows})
    report = audit_version(version.path)
    assert report.ok, report.problems


def _rewrite_listing(version: Path, entries: list[dict]) -> None:
    """Replace the listing and keep the manifest's hash and count in step, so that only the
    check against the rows can tell."""
    pq.write_table(
        pa.table(
            {
                "harness_variant": [e["harness_variant"] for e in entries],
                "lineage": pa.array([e["lineage"] for e in entries], pa.json_()),
            }
        ),
        version / LISTING_FILE,
    )
    manifest = json.loads((version / "manifest.json").read_text())
    manifest["harness_variants"].update(rows=len(entries), sha256=sha256(version / LISTING_FILE))
    (version / "manifest.json").write_text(json.dumps(sealed(manifest)))


def test_verify_finds_a_listing_that_does_not_match_the_rows(tmp_path):
    jsonl, _ = write_inputs(tmp_path / "in", 12, "shared-harness")
    version = generate(load_recipe("hat-train"), jsonl, tmp_path / "out").path
    entries = _listing(version)
    wrong = json.loads(entries[0]["lineage"])[:-1]  # one step short: the rows start otherwise
    wrong.append({**json.loads(entries[0]["lineage"])[-1], "fired": "maybe"})
    _rewrite_listing(version, [{**entries[0], "lineage": json.dumps(wrong)}, *entries[1:]])
    problems = audit_version(version).problems
    name = entries[0]["harness_variant"]
    assert any(f"harness variant {name} is not listed" in p for p in problems), problems
    assert any("1 listed harness variant(s) no row takes" in p for p in problems), problems
    # Listed twice: refused as such.
    _rewrite_listing(version, [entries[0], *entries])
    assert any("listed twice" in p for p in audit_version(version).problems)


def test_a_pooled_version_made_before_the_listing_is_found_and_rebuilt_with_it(tmp_path):
    jsonl, _ = write_inputs(tmp_path / "in", 12, "shared-harness")
    recipe = load_recipe("hat-train")
    made = generate(recipe, jsonl, tmp_path / "out")
    listing = (made.path / LISTING_FILE).read_bytes()
    shards = [s["sha256"] for s in made.manifest["shards"]]
    manifest = json.loads((made.path / "manifest.json").read_text())
    del manifest["harness_variants"], manifest["seal"]  # as an hsa that sealed none wrote it
    (made.path / "manifest.json").write_text(json.dumps(manifest))
    (made.path / LISTING_FILE).unlink()
    assert any("lists none" in p for p in audit_version(made.path).problems)
    again = generate(recipe, jsonl, tmp_path / "out")
    assert again.repaired and not again.reused and again.path == made.path
    assert (again.path / LISTING_FILE).read_bytes() == listing
    assert [s["sha256"] for s in again.manifest["shards"]] == shards


# Rows as they come back: a harness variant (or none: the original), the steps of its harness
# stage, and the row's own later steps. Few names, and stages that start one another.
_STEPS = st.sampled_from([{"t": "x"}, {"t": "y"}, {"t": "z", "p": 1.5}])
_ROWS = st.lists(
    st.tuples(
        st.sampled_from(["a:0", "a:1", "b:0", None]),
        st.lists(_STEPS, max_size=3),
        st.lists(st.sampled_from([{"t": "episode", "p": "é"}, {"t": "hooks"}]), max_size=2),
    ),
    max_size=40,
)


@given(_ROWS, st.lists(st.integers(1, 7), min_size=1, max_size=10), st.sampled_from([0, 1, 1024]))
def test_the_listing_is_the_first_sight_of_each_variant_whatever_the_batches(
    tmp_path_factory, rows, cuts, recent
):
    folder = tmp_path_factory.mktemp("listing")
    # How many lineage starts the writer keeps to skip listed rows (none, one, the default)
    # changes how fast, never what.
    with patch.object(harness_variants, "RECENT_STARTS", recent):
        listing = HarnessVariantListing(folder)
        start, i = 0, 0
        while start < len(rows):
            batch = rows[start : start + cuts[i % len(cuts)]]
            listing.add(
                pa.chunked_array([pa.array([name for name, _, _ in batch], pa.string())]),
                pa.chunked_array(
                    [
                        pa.array(
                            [
                                None if n is None else len(orjson.dumps(s).decode()) - 1
                                for n, s, _ in batch
                            ],
                            pa.int32(),
                        )
                    ]
                ),
                pa.chunked_array(
                    [pa.array([orjson.dumps(s + e).decode() for _, s, e in batch], pa.json_())]
                ),
            )
            start += len(batch)
            i += 1
    entry = listing.close()
    expected = list(dict.fromkeys((n, orjson.dumps(s).decode()) for n, s, _ in rows if n))
    written = pq.read_table(folder / LISTING_FILE).to_pylist()
    assert [(e["harness_variant"], e["lineage"]) for e in written] == expected
    assert entry["rows"] == len(expected)
    # Read back, a row is listed exactly when its lineage starts with one listed for its name.
    listed = ListedLineages(folder / LISTING_FILE)
    assert listed.problems == []
    for name, stage, later in rows:
        if name is None:
            continue
        lineage = orjson.dumps([*stage, *later]).decode()
        assert listed.check(name, lineage)
        assert not listed.check("c:0", lineage)
    assert listed.untaken() == 0


def test_one_name_with_two_lineages_of_one_length_lists_both(tmp_path):
    """Two source harnesses that differ only in key order share a variant's name; their stages
    may differ in content but not in length: the writer's shortcut for rows already listed must
    not take one for the other."""
    x, y = '[{"t":"x"}', '[{"t":"y"}'
    rows = [("a:0", x), ("a:0", y), ("a:0", x), ("b:0", x), ("a:0", y)]
    listing = HarnessVariantListing(tmp_path)
    for name, stage in rows:  # one row a batch, each with a later step of its own
        listing.add(
            pa.chunked_array([pa.array([name], pa.string())]),
            pa.chunked_array([pa.array([len(stage)], pa.int32())]),
            pa.chunked_array([pa.array([stage + ',{"t":"episode"}]'], pa.json_())]),
        )
    assert listing.close()["rows"] == 3
    written = pq.read_table(tmp_path / LISTING_FILE).to_pylist()
    assert [(e["harness_variant"], e["lineage"]) for e in written] == [
        ("a:0", x + "]"),
        ("a:0", y + "]"),
        ("b:0", x + "]"),
    ]
