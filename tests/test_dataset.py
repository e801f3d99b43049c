"""Dataset versions end to end: layout, determinism across workers and engines, atomicity,
rejects, audit, replay, card, Hub publishing (up to the HTTP boundary) and TRL training."""

from __future__ import annotations

import errno
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import hsa.dataset.engines.local
from hsa.augment.recipe import load_recipe
from hsa.augment.variant import Variant
from hsa.cli import main
from hsa.dataset.audit import audit_version, replay_row, replay_variant
from hsa.dataset.card import card_text
from hsa.dataset.generate import generate
from hsa.dataset.pipeline import augment, write_variants
from hsa.dataset.row_shape import RowShape
from hsa.dataset.rows import variant_row
from hsa.dataset.writer import sealed, sha256
from hsa.errors import HsaError
from hsa.example import EPISODES_PATH
from hsa.model.episode import read_episodes
from hsa.model.harness import load_harness

RECIPE = "tools-basic"


@pytest.fixture(scope="module")
def version(tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    return generate(load_recipe(RECIPE), EPISODES_PATH, out, trust_hooks=True)


def test_a_version_can_be_read_by_others_as_its_files(version):
    """The staging folder (mkdtemp: 0700) becomes the version folder: it gets the mode a plain
    mkdir would, as its files get a plain open()'s, so a datasets server or a colleague can read
    a published version."""
    import os
    import stat

    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(version.path.stat().st_mode) == 0o777 & ~umask
    assert stat.S_IMODE((version.path / "manifest.json").stat().st_mode) == 0o666 & ~umask


def shard_hashes(result) -> list[str]:
    return [s["sha256"] for s in result.manifest["shards"]] + [result.manifest["rejects"]["sha256"]]


def test_version_layout_and_counts(version):
    root = version.path
    assert root.parent.name == RECIPE and root.name == version.manifest["version"]
    assert sorted(p.name for p in root.iterdir()) == [
        "README.md",
        "data",
        "manifest.json",
        "rejects.parquet",
    ]
    assert [p.name for p in (root / "data").iterdir()] == ["train-00000-of-00001.parquet"]
    counts = version.manifest["counts"]
    assert counts == {
        "input_lines": 240,
        "sources_out": 240,
        "sources_all_rejected": 0,
        "load_rejects": 0,
        "rows": 960,
        "variant_rejects": 0,
    }
    assert not list(root.parent.glob(".*partial*"))  # no staging folder left behind


def test_rows_load_with_datasets_and_decode_to_what_was_written(version):
    import datasets

    ds = datasets.load_dataset(
        "parquet", data_files={"train": str(version.path / "data" / "train-*.parquet")}
    )["train"]
    assert len(ds) == 960
    expected = [
        variant_row(v, version.manifest["version"])
        for v in augment(load_recipe(RECIPE), read_episodes(EPISODES_PATH, trust_hooks=True))
        if isinstance(v, Variant)
    ]
    for row, want in zip(ds, expected, strict=True):
        assert row["id"] == want["id"]
        assert row["messages"] == json.loads(want["messages"])
        assert row["tools"] == json.loads(want["tools"])
        # Heterogeneous schemas stay exactly as written: no keys merged in from other rows.
        assert all(
            set(t["function"]) == {"name", "description", "parameters"} for t in row["tools"]
        )


def test_same_inputs_same_bytes_whatever_the_workers_or_batch_size(version, tmp_path):
    two = generate(
        load_recipe(RECIPE),
        EPISODES_PATH,
        tmp_path / "w2",
        workers=2,
        batch_size=7,
        trust_hooks=True,
    )
    assert two.path.name == version.path.name
    assert shard_hashes(two) == shard_hashes(version)
    again = generate(load_recipe(RECIPE), EPISODES_PATH, tmp_path / "w2", trust_hooks=True)
    assert again.reused and again.path == two.path


def test_a_pool_of_harness_variants_is_shared_and_the_same_bytes_whatever_the_workers(tmp_path):
    from hsa.augment.recipe import Recipe

    recipe = Recipe.from_dict({**load_recipe(RECIPE).to_dict(), "harness_variants": 2})
    one = generate(recipe, EPISODES_PATH, tmp_path / "w1", trust_hooks=True)
    two = generate(
        recipe, EPISODES_PATH, tmp_path / "w2", workers=2, batch_size=7, trust_hooks=True
    )
    assert two.path.name == one.path.name
    assert shard_hashes(two) == shard_hashes(one)
    report = audit_version(one.path, trust_hooks=True)
    assert report.ok, report.problems
    # tools-basic is harness-scoped throughout: the variant rows of the episodes under one
    # harness show at most two tool lists (the pool), where without a pool each has its own.
    harness_of = {
        e.id: e.harness.fingerprint for e in read_episodes(EPISODES_PATH, trust_hooks=True)
    }
    tools_by_harness: dict[str, set[str]] = {}
    for shard in sorted(one.path.glob("data/*.parquet")):
        for row in pq.read_table(shard).to_pylist():
            if row["hsa_variant"]:
                key = harness_of[row["hsa_source_id"]]
                tools_by_harness.setdefault(key, set()).add(row["tools"])
    assert tools_by_harness and all(len(t) <= 2 for t in tools_by_harness.values())
    assert max(len(t) for t in tools_by_harness.values()) == 2
    # Each row names its harness variant (the original none), and the manifest counts them.
    rows = [
        r
        for shard in sorted(one.path.glob("data/*.parquet"))
        for r in pq.read_table(shard).to_pylist()
    ]
    named = [r["hsa_harness_variant"] for r in rows if r["hsa_variant"]]
    assert all(r["hsa_harness_variant"] is None for r in rows if not r["hsa_variant"])
    assert all(key.split(":")[0] in harness_of.values() for key in named)
    served = sorted(named.count(key) for key in set(named))
    assert one.manifest["statistics"]["harness_variants"] == {
        "count": len(served),
        "rows_min": served[0],
        "rows_median": statistics.median(served),
        "rows_max": served[-1],
    }
    # A row that names another harness variant than its recipe gives it is found by verify.
    shard = sorted(one.path.glob("data/*.parquet"))[0]
    table = pq.read_table(shard)
    column = table.column("hsa_harness_variant").to_pylist()
    index = next(i for i, key in enumerate(column) if key)
    column[index] = column[index].rsplit(":", 1)[0] + ":7"
    tampered = table.set_column(
        table.schema.get_field_index("hsa_harness_variant"), "hsa_harness_variant", [column]
    )
    assert replay_row(one.path, table.column("id")[index].as_py(), trust_hooks=True)[1] == []
    pq.write_table(tampered, shard)
    assert replay_row(one.path, table.column("id")[index].as_py(), trust_hooks=True)[1] == [
        "hsa_harness_variant"
    ]


def test_ray_engine_writes_the_same_bytes(version, tmp_path, monkeypatch):
    pytest.importorskip("ray")
    # Ray's own Parquet reader packs row groups into read tasks of 128 MiB and may hand them out
    # of file order (seen at 100k bench episodes). A budget of a few batches makes it do so here
    # (this test failed with read_parquet), so the engine must keep input order by its own read
    # tasks. Set before ray.init: the workers inherit it.
    monkeypatch.setenv("RAY_DATA_PARQUET_BIN_PACKING_BYTES", "30000")
    ray_result = generate(
        load_recipe(RECIPE),
        EPISODES_PATH,
        tmp_path / "ray",
        engine="ray",
        workers=2,
        batch_size=7,
        trust_hooks=True,
    )
    assert shard_hashes(ray_result) == shard_hashes(version)
    files = sorted(str(p.relative_to(ray_result.path)) for p in ray_result.path.rglob("*"))
    assert files == sorted(str(p.relative_to(version.path)) for p in version.path.rglob("*"))
    # Nothing of Ray's staged input is left: only the version and the note of its inputs.
    assert sorted(p.name for p in (tmp_path / "ray" / RECIPE).iterdir()) == sorted(
        [ray_result.path.name, f".{ray_result.path.name}.inputs.json"]
    )


def test_version_changes_with_the_seed(version, tmp_path):
    recipe = load_recipe(RECIPE)
    recipe.seed += 1
    other = generate(recipe, EPISODES_PATH, tmp_path, trust_hooks=True)
    assert other.path.name != version.path.name


def test_a_version_verified_with_the_hooks_run_is_a_version_of_its_own(version, tmp_path):
    """A travel harness (an audit): generated without --trust-hooks, then with it into the same
    folder, the second run found the first run's version, said "nothing to do" and exited 0,
    though run with the hooks it rejects rows the first kept. Trust is part of the version: the
    manifest says so, and a re-verification recomputes the same id."""
    untrusted = generate(load_recipe(RECIPE), EPISODES_PATH, tmp_path / "v")
    assert untrusted.path.name != version.path.name
    assert version.manifest["input"]["hooks_trusted"] is True
    assert "hooks_trusted" not in untrusted.manifest["input"]
    assert audit_version(version.path, trust_hooks=True).problems == []


def test_bad_lines_become_rejects_and_every_line_is_accounted_for(tmp_path):
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines()[:10]
    broken = json.loads(lines[3])
    broken["messages"][0]["role"] = "robot"
    rows = lines[:3] + ["{not json"] + [json.dumps(broken)] + lines[4:] + [""]
    source = tmp_path / "episodes.jsonl"
    source.write_text("\n".join(rows), encoding="utf-8")
    shutil.copytree(EPISODES_PATH.parent / "harness", tmp_path / "harness")
    result = generate(load_recipe(RECIPE), source, tmp_path / "out", trust_hooks=True)
    counts = result.manifest["counts"]
    assert counts["input_lines"] == 11 and counts["load_rejects"] == 2
    assert counts["sources_out"] == 9 and counts["rows"] == 36
    rejects = pq.read_table(result.path / "rejects.parquet").to_pylist()
    assert [(r["line"], r["stage"]) for r in rejects] == [(4, "load"), (5, "load")]
    assert "not valid JSON" in rejects[0]["reason"]
    # where in its line (the parser's "line 1" is the line itself, which read as the file's)
    assert rejects[0]["reason"].endswith("at column 2 of the line"), rejects[0]["reason"]
    assert rejects[1]["field"] == "messages[0].role" and "unknown role" in rejects[1]["reason"]


def test_an_integer_beyond_64_bits_is_a_load_reject_not_a_float_in_the_rows(tmp_path):
    """A JSON reader takes such an integer for a float without a word; the rows would carry
    1.2345678901234568e+29 for the user's order number."""
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines()[:3]
    row = json.loads(lines[1])
    row["meta"]["order"] = 123456789012345678901234567890
    source = tmp_path / "episodes.jsonl"
    source.write_text("\n".join([lines[0], json.dumps(row), lines[2]]) + "\n", encoding="utf-8")
    shutil.copytree(EPISODES_PATH.parent / "harness", tmp_path / "harness")
    result = generate(load_recipe(RECIPE), source, tmp_path / "out", trust_hooks=True)
    assert result.manifest["counts"]["load_rejects"] == 1
    (reject,) = pq.read_table(result.path / "rejects.parquet").to_pylist()
    assert (reject["line"], reject["stage"]) == (2, "load")
    assert "integer 123456789012345678901234567890 does not fit in 64 bits" in reject["reason"]


def test_duplicate_ids_and_unusable_harness_paths_become_rejects(tmp_path):
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines()[:4]
    odd = json.loads(lines[2])
    odd["id"], odd["harness"] = "odd", "x\u0000y"
    long = json.loads(lines[2])
    long["id"], long["harness"] = "long", "a" * 5000
    source = tmp_path / "episodes.jsonl"
    source.write_text(
        "\n".join(lines + [lines[1], json.dumps(odd), json.dumps(long)]) + "\n", encoding="utf-8"
    )
    shutil.copytree(EPISODES_PATH.parent / "harness", tmp_path / "harness")
    result = generate(load_recipe(RECIPE), source, tmp_path / "out", trust_hooks=True)
    counts = result.manifest["counts"]
    assert (counts["input_lines"], counts["sources_out"], counts["load_rejects"]) == (7, 4, 3)
    rejects = pq.read_table(result.path / "rejects.parquet").to_pylist()
    assert [(r["line"], r["field"]) for r in rejects] == [(5, "id"), (6, "harness"), (7, "harness")]
    assert "duplicate episode id" in rejects[0]["reason"]
    assert audit_version(result.path, trust_hooks=True).ok


def test_a_harness_whose_prompt_does_not_render_is_one_load_reject_per_line(tmp_path):
    """A harness's own layout with a syntax error, or a placement naming no section, loaded
    fine and then rejected every variant of every episode at render, naming no harness (15
    rejects for 3 lines, `field: None`, the parse error wrapped twice). Each line is now one
    load reject that names the harness and what is wrong, in generate and augment alike."""
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines()[:2]
    harness = EPISODES_PATH.parent / "harness"
    for name, edit in (
        ("own-layout", lambda prompt: {**prompt, "layout": "own"}),
        ("misplaced", lambda prompt: {**prompt, "options": {"placement": {"faq": "first_user"}}}),
    ):
        shutil.copytree(harness, tmp_path / name)
        manifest = yaml.safe_load((tmp_path / name / "harness.yaml").read_text(encoding="utf-8"))
        manifest["prompt"] = edit(manifest.get("prompt") or {})
        (tmp_path / name / "harness.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")
    (tmp_path / "own-layout" / "layouts").mkdir()
    (tmp_path / "own-layout" / "layouts" / "own.j2").write_text("{{ persona }\n", encoding="utf-8")
    shutil.copytree(harness, tmp_path / "harness")
    broken = []
    for i, name in enumerate(("own-layout", "misplaced")):
        row = json.loads(lines[i])
        row["id"], row["harness"] = f"{name}-row", name
        broken.append(json.dumps(row))
    source = tmp_path / "episodes.jsonl"
    source.write_text("\n".join(lines + broken) + "\n", encoding="utf-8")
    result = generate(load_recipe(RECIPE), source, tmp_path / "out", trust_hooks=True)
    counts = result.manifest["counts"]
    assert (counts["load_rejects"], counts["variant_rejects"], counts["sources_out"]) == (2, 0, 2)
    rejects = pq.read_table(result.path / "rejects.parquet").to_pylist()
    assert [(r["line"], r["id"], r["field"]) for r in rejects] == [
        (3, "own-layout-row", "prompt.layout"),
        (4, "misplaced-row", "prompt.options.placement.faq"),
    ]
    assert rejects[0]["reason"] == (
        "the prompt of its harness 'own-layout' does not render (line 1 of layouts/own.j2): "
        "layout 'own' does not parse: unexpected '}'"
    )
    assert rejects[1]["reason"].startswith(
        "the prompt of its harness 'misplaced' does not render: placement names 'faq', which "
        "is no section of the prompt (sections: "
    )
    out = list(augment(load_recipe(RECIPE), read_episodes(source, trust_hooks=True)))
    assert [(r.id, r.field) for r in out if not isinstance(r, Variant)] == [
        ("own-layout-row", "prompt.layout"),
        ("misplaced-row", "prompt.options.placement.faq"),
    ]
    # No reference, under the run's harness (--harness DIR): named by its folder, not "inline"
    row = json.loads(lines[0])
    row.pop("harness")
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps(row) + "\n", encoding="utf-8")
    default = load_harness(tmp_path / "own-layout", trust_hooks=True)
    (reject,) = augment(
        load_recipe(RECIPE), read_episodes(plain, harness=default, trust_hooks=True)
    )
    assert reject.reason.startswith("the prompt of its harness 'own-layout' does not render")


def test_a_folder_in_the_way_is_not_mistaken_for_a_version(tmp_path):
    from hsa.dataset.writer import publish, staging_dir

    final = tmp_path / "r" / "v1"
    staging = staging_dir(final)
    final.mkdir()
    (final / "stray.txt").write_text("x")
    with pytest.raises(HsaError, match="not a complete version"):
        publish(staging, final)
    assert not staging.exists()


def test_output_path_that_is_a_file_is_refused(tmp_path):
    target = tmp_path / "out"
    target.write_text("x")
    with pytest.raises(HsaError, match="is a file"):
        generate(load_recipe(RECIPE), EPISODES_PATH, target, trust_hooks=True)


def test_output_inside_a_harness_folder_the_episodes_reference_is_refused(tmp_path):
    """A version written into a harness folder an episode names by reference changes the folder
    it is a hash of: generate exited 0 and verify then refused its own version (and each rerun
    made a new version id). Refused before any work, as --out in --harness is."""
    source = small_source(tmp_path / "src", 1)
    with pytest.raises(HsaError, match="lies inside the harness folder 'harness'"):
        generate(load_recipe(RECIPE), source, source.parent / "harness", trust_hooks=True)
    with pytest.raises(HsaError, match="lies inside"):
        generate(load_recipe(RECIPE), source, source.parent / "harness" / "out", trust_hooks=True)
    assert not (source.parent / "harness" / RECIPE).exists()


def test_unreadable_harness_is_refused(tmp_path):
    with pytest.raises(HsaError, match="harness folder does not exist"):
        generate(load_recipe(RECIPE), EPISODES_PATH, tmp_path, harness=tmp_path / "nope")


def test_a_terminated_run_cleans_up_and_says_so(tmp_path):
    """SIGTERM (a scheduler's kill, a container stop) is handled like Ctrl-C: the staging folder
    is removed and the exit status is 143. By default Python died at once and left it behind.
    A real process and a real signal, sent once the run is writing."""
    import signal
    import subprocess
    import time

    shutil.copytree(EPISODES_PATH.parent / "harness", tmp_path / "harness")
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines()
    many = []
    for copy in range(4):  # long enough to be caught while writing
        for line in lines:
            row = json.loads(line)
            row["id"] = f"{row['id']}-{copy}"
            many.append(json.dumps(row, ensure_ascii=False))
    (tmp_path / "episodes.jsonl").write_text("\n".join(many) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    run = subprocess.Popen(
        [sys.executable, "-m", "hsa.cli", "generate", "--recipe", "hat-train"]
        + ["--episodes", str(tmp_path / "episodes.jsonl"), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list((out / "hat-train").glob(".*.partial-*")):
        time.sleep(0.05)
    assert list((out / "hat-train").glob(".*.partial-*")), "the run never started writing"
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 143, err
    assert "terminated: nothing half-written is published" in err
    assert not (out / "hat-train").exists()  # nor any folder it made


def test_interrupted_run_leaves_nothing_and_a_rerun_completes(tmp_path, monkeypatch):
    import hsa.dataset.writer

    real_add = hsa.dataset.writer.ShardWriter.add
    calls = {"n": 0}

    def failing_add(self, table):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # as if the user pressed Ctrl-C mid-run
        return real_add(self, table)

    monkeypatch.setattr(hsa.dataset.writer.ShardWriter, "add", failing_add)
    with pytest.raises(KeyboardInterrupt):
        generate(load_recipe(RECIPE), EPISODES_PATH, tmp_path, trust_hooks=True, batch_size=32)
    assert not (tmp_path / RECIPE).exists()  # nor any folder it made
    monkeypatch.setattr(hsa.dataset.writer.ShardWriter, "add", real_add)
    # A run killed outright leaves its staging folder; the next run clears it and completes.
    stale = tmp_path / RECIPE / ".0000.partial-999999"
    stale.mkdir(parents=True)
    done = generate(load_recipe(RECIPE), EPISODES_PATH, tmp_path, trust_hooks=True)
    assert done.path.is_dir() and audit_version(done.path, trust_hooks=True).ok
    # What a killed run of this version left (pid 999999 is gone): its staging folder and the
    # folder its pool handed batches over in are swept up by the next run of the version.
    shutil.rmtree(done.path)
    left = [
        tmp_path / RECIPE / f".{done.path.name}.partial-999999-x{end}" for end in ("", ".handover")
    ]
    for folder in left:
        folder.mkdir()
        (folder / "0.arrows").write_bytes(b"a batch")
    ray_input = tmp_path / RECIPE / f".{done.path.name}.partial-999999-x.ray-input.parquet"
    ray_input.write_bytes(b"the Ray engine's staged input")  # a file, not a folder
    again = generate(load_recipe(RECIPE), EPISODES_PATH, tmp_path, trust_hooks=True, workers=2)
    assert again.path == done.path and not any(folder.exists() for folder in left)
    assert not ray_input.exists()


def test_full_disk_is_a_clear_error_and_leaves_no_version(tmp_path, monkeypatch):
    import hsa.dataset.writer

    def no_space(self, table):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(hsa.dataset.writer.ShardWriter, "add", no_space)
    with pytest.raises(HsaError, match="disk full"):
        generate(load_recipe(RECIPE), EPISODES_PATH, tmp_path, trust_hooks=True)
    assert not (tmp_path / RECIPE).exists()  # nor any folder it made


# Pool processes get their work by reference (pickled by name), so what a test has them run
# lives at module level; the forked processes see what the test set before the pool started.
_REAL_POOL_WORK = hsa.dataset.engines.local._work
_POOL_MARKS: Path | None = None
_POOL_BATCHES = 0  # in a pool process: the batches it has run


def _pool_dies_at_its_second_batch(batch, path):
    global _POOL_BATCHES
    _POOL_BATCHES += 1
    if _POOL_BATCHES == 2:
        os._exit(9)  # the pool process vanishes, as under the OOM killer
    return _REAL_POOL_WORK(batch, path)


def _slow_pool_work(batch, path):
    """A slow pool (its two batches are never done at once) that marks each batch it ran."""
    time.sleep(0.2)
    (_POOL_MARKS / Path(path).name).write_text(str(batch.num_rows))
    return _REAL_POOL_WORK(batch, path)


def test_a_killed_worker_stops_the_run_cleanly(tmp_path, monkeypatch):
    # The first two batches always go to the pool: its first comes back, the second kills it.
    monkeypatch.setattr(hsa.dataset.engines.local, "_work", _pool_dies_at_its_second_batch)
    with pytest.raises(HsaError, match="worker process died"):
        generate(
            load_recipe(RECIPE), EPISODES_PATH, tmp_path, workers=2, batch_size=16, trust_hooks=True
        )
    # No version, no staging folder, no batches handed over and left behind.
    assert not (tmp_path / RECIPE).exists()  # nor any folder it made


# Run in a fresh interpreter so that a collector stuck on the lock fails the test at its timeout
# instead of hanging the suite. A pool process takes the progress counter's lock and dies
# holding it (the OOM killer can strike anywhere); the run must still end with the clear error.
_DIES_HOLDING_THE_PROGRESS_LOCK = """
import os, sys
import hsa.dataset.engines.local as local
from hsa.augment.recipe import load_recipe
from hsa.dataset.generate import generate
from hsa.errors import HsaError
from hsa.example import EPISODES_PATH

collector = os.getpid()
real_line_done = local._line_done

def dies_holding_the_lock(done):
    if os.getpid() != collector:
        done.get_lock().acquire()
        os._exit(9)
    # The collector counts its own lines apart now; this keeps the test meaningful should it
    # ever count through the shared counter again.
    real_line_done(done)

local._line_done = dies_holding_the_lock
try:
    generate(load_recipe("tools-basic"), EPISODES_PATH, sys.argv[1], workers=2,
             batch_size=16, trust_hooks=True, on_progress=lambda lines, rows: None)
except HsaError as exc:
    print("error:", exc)
"""


def test_a_worker_killed_holding_the_progress_lock_stops_the_run(tmp_path):
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", _DIES_HOLDING_THE_PROGRESS_LOCK, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "worker process died" in done.stdout
    assert not (tmp_path / RECIPE).exists()  # nor any folder it made


def test_the_collecting_process_runs_batches_when_the_pool_is_full(version, tmp_path, monkeypatch):
    """With --workers 2 one pool process and the collecting process both run batches; the
    pool's are handed over in files, each gone once read, never more than the pool may queue;
    the bytes are those of 1 worker."""
    import hsa.dataset.batch

    real_call = hsa.dataset.batch.BatchFunction.__call__
    real_handed_over = hsa.dataset.engines.local._handed_over
    ran_here: list[int] = []
    waiting: list[int] = []  # handed-over files present at each read
    pool_marks = tmp_path / "pool"
    pool_marks.mkdir()
    monkeypatch.setattr(sys.modules[__name__], "_POOL_MARKS", pool_marks)

    def recorded_call(self, batch):
        if os.getpid() == parent:
            ran_here.append(batch.num_rows)
        return real_call(self, batch)

    def counted_handed_over(path):
        waiting.append(len(os.listdir(os.path.dirname(path))))
        out = real_handed_over(path)
        assert not os.path.exists(path)
        return out

    parent = os.getpid()
    monkeypatch.setattr(hsa.dataset.engines.local, "_work", _slow_pool_work)
    monkeypatch.setattr(hsa.dataset.engines.local, "_handed_over", counted_handed_over)
    monkeypatch.setattr(hsa.dataset.batch.BatchFunction, "__call__", recorded_call)
    two = generate(
        load_recipe(RECIPE),
        EPISODES_PATH,
        tmp_path / "w2",
        workers=2,
        batch_size=16,
        trust_hooks=True,
    )
    ran_in_pool = [int(mark.read_text()) for mark in pool_marks.iterdir()]
    assert ran_here and len(ran_in_pool) >= 2
    # Every line ran once, in one process or the other.
    assert sum(ran_here) + sum(ran_in_pool) == version.manifest["counts"]["input_lines"]
    assert len(waiting) == len(ran_in_pool) and 1 <= max(waiting) <= 2
    assert shard_hashes(two) == shard_hashes(version)
    assert sorted(p.name for p in (tmp_path / "w2" / RECIPE).iterdir()) == [
        f".{two.path.name}.inputs.json",
        two.path.name,
    ]


def test_an_error_in_the_collecting_process_stops_the_pool_and_leaves_nothing(
    tmp_path, monkeypatch
):
    import hsa.dataset.batch

    real_call = hsa.dataset.batch.BatchFunction.__call__
    parent = os.getpid()
    monkeypatch.setattr(sys.modules[__name__], "_POOL_MARKS", tmp_path)

    def fails_here(self, batch):
        if os.getpid() == parent:
            raise RuntimeError("a bug in a transform")
        return real_call(self, batch)

    monkeypatch.setattr(hsa.dataset.engines.local, "_work", _slow_pool_work)
    monkeypatch.setattr(hsa.dataset.batch.BatchFunction, "__call__", fails_here)
    with pytest.raises(RuntimeError, match="a bug in a transform"):
        generate(
            load_recipe(RECIPE),
            EPISODES_PATH,
            tmp_path / "out",
            workers=2,
            batch_size=16,
            trust_hooks=True,
        )
    assert not (tmp_path / "out" / RECIPE).exists()  # nor any folder it made
    # The pool ran at most the two batches it had been given (the second is dropped when it had
    # not started), and the run stopped there.
    assert 1 <= len(list(tmp_path.glob("*.arrows"))) <= 2


def test_a_batch_spaces_the_collector_and_gives_the_callers_thresholds_back(monkeypatch):
    import gc

    import pyarrow as pa

    import hsa.dataset.batch as batch_module

    seen = []

    def fails(recipe, episode):
        seen.append(gc.get_threshold())
        raise RuntimeError("a bug in a transform")

    monkeypatch.setattr(batch_module, "augment_episode", fails)
    job = batch_module.BatchJob(
        recipe=load_recipe(RECIPE).to_dict(),
        source=str(EPISODES_PATH),
        harness_dir=None,
        trust_hooks=True,
        version="v",
    )
    line = EPISODES_PATH.read_bytes().splitlines()[0]
    batch = pa.record_batch(
        [pa.array([1], pa.int64()), pa.array([line], pa.binary())], schema=batch_module.INPUT_SCHEMA
    )
    before = gc.get_threshold()
    gc.set_threshold(123, 7, 5)
    try:
        with pytest.raises(RuntimeError, match="a bug in a transform"):
            batch_module.BatchFunction(job)(batch)
        assert seen == [(batch_module.GC_YOUNG_THRESHOLD, 7, 5)]
        assert gc.get_threshold() == (123, 7, 5)
    finally:
        gc.set_threshold(*before)


def test_verify_passes_and_catches_tampering(version, tmp_path):
    assert main(["verify", str(version.path), "--trust-hooks"]) == 0
    copy = tmp_path / "copy"
    shutil.copytree(version.path, copy)
    shard = copy / "data" / "train-00000-of-00001.parquet"
    # 1. Change a row and rewrite the shard with a manifest that matches the new bytes: only
    #    rebuilding the row from its lineage can notice.
    table = pq.read_table(shard)
    rows = table.to_pylist()
    messages = json.loads(rows[5]["messages"])
    messages[-1]["content"] = (messages[-1]["content"] or "") + " (edited)"
    rows[5]["messages"] = json.dumps(messages)
    pq.write_table(type(table).from_pylist(rows, schema=table.schema), shard)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["shards"][0]["sha256"] = sha256(shard)
    (copy / "manifest.json").write_text(json.dumps(sealed(manifest)))  # a manifest that fits
    # A copy elsewhere has no note of where its inputs are: they are given.
    report = audit_version(copy, trust_hooks=True, episodes=EPISODES_PATH)
    assert [p.split(":")[0] for p in report.problems] == [rows[5]["id"]]
    assert "differs from its rebuild in messages" in report.problems[0]
    # 2. Bytes that no longer match the manifest.
    shard.write_bytes(shard.read_bytes()[:-10])
    assert main(["verify", str(copy), "--trust-hooks"]) == 1
    assert any("sha256 differs" in p for p in audit_version(copy, trust_hooks=True).problems)


@pytest.mark.parametrize(
    "lineage, reason",
    [
        ('"garbage"', "lineage: expected a list of steps, got str"),
        ("not json", "lineage: not valid JSON"),
        ("[7]", "lineage[0]: expected a step object, got int"),
        (None, "lineage[{fired}].params: expected the params object of a fired step"),
        ("params", "does not replay with its recorded params: KeyError"),
    ],
)
def test_verify_names_a_malformed_lineage_instead_of_failing_itself(
    version, tmp_path, lineage, reason
):
    """A row whose lineage was edited (its manifest hash updated, so only rebuilding reads it) is
    a problem of that row, named with its field: never an internal error of hsa."""
    copy = tmp_path / "copy"
    shutil.copytree(version.path, copy)
    shard = copy / "data" / "train-00000-of-00001.parquet"
    table = pq.read_table(shard)
    rows = table.to_pylist()
    row = next(r for r in rows if '"fired":true' in r["hsa_lineage"] and r["hsa_variant"] > 0)
    steps = json.loads(row["hsa_lineage"])
    fired = next(i for i, step in enumerate(steps) if step["fired"])
    if lineage is None:
        steps[fired]["params"] = None
        row["hsa_lineage"] = json.dumps(steps)
    elif lineage == "params":
        steps[fired]["params"] = {"unexpected": 1}
        row["hsa_lineage"] = json.dumps(steps)
    else:
        row["hsa_lineage"] = lineage
    pq.write_table(type(table).from_pylist(rows, schema=table.schema), shard)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["shards"][0]["sha256"] = sha256(shard)
    (copy / "manifest.json").write_text(json.dumps(sealed(manifest)))  # a manifest that fits
    report = audit_version(copy, trust_hooks=True, episodes=EPISODES_PATH)
    assert len(report.problems) == 1
    assert report.problems[0].startswith(f"{row['id']}: cannot rebuild: ")
    assert reason.format(fired=fired) in report.problems[0]


def test_verify_refuses_a_harness_that_changed_since_generation(tmp_path):
    """Rows are rebuilt from the episodes *and* their harness: an edited harness folder is named,
    not reported as hundreds of differing rows."""
    shutil.copytree(EPISODES_PATH.parent / "harness", tmp_path / "harness")
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines(keepends=True)[:6]
    (tmp_path / "episodes.jsonl").write_text("".join(lines), encoding="utf-8")
    made = generate(
        load_recipe(RECIPE), tmp_path / "episodes.jsonl", tmp_path / "out", trust_hooks=True
    )
    assert audit_version(made.path, trust_hooks=True).ok
    skill = next((tmp_path / "harness" / "skills").rglob("SKILL.md"))
    skill.write_text(skill.read_text(encoding="utf-8") + "\nOne more rule.\n", encoding="utf-8")
    with pytest.raises(
        HsaError, match="harness folder is not the one the version was made with"
    ) as caught:
        audit_version(made.path, trust_hooks=True)
    assert caught.value.file == str(tmp_path / "harness")


def _edit_seed(m):
    m["seed"] += 1


def _edit_seed_everywhere(m):
    m["seed"] += 1
    m["recipe"]["seed"] += 1


def _edit_recipe(m):
    m["recipe"]["pipeline"] = m["recipe"]["pipeline"][:2]


def _edit_transform_version(m):
    m["transform_versions"]["identity"] = "9"


def _edit_hsa_version(m):
    m["hsa_version"] = "9.9.9"


def _edit_statistics(m):
    family = next(iter(m["statistics"]["rows_by_family"]))
    m["statistics"]["rows_by_family"][family] -= 1


def _edit_licenses(m):
    m["skill_licenses"] = dict.fromkeys(m["skill_licenses"], "apache-2.0")


@pytest.mark.parametrize(
    "edit, problem",
    [
        (_edit_seed, "is not its recipe's"),
        (_edit_seed_everywhere, "(the manifest was edited)"),
        (_edit_recipe, "(the manifest was edited)"),
        (_edit_transform_version, "transform_versions differ"),
        (_edit_hsa_version, "(the manifest was edited)"),
        (_edit_statistics, "statistics.rows_by_family is not what the rows hold"),
        (_edit_licenses, "skill_licenses are not the licences the source skills state"),
    ],
)
def test_verify_checks_what_the_manifest_claims(tmp_path, edit, problem):
    """A card prints the manifest's statistics and push refuses restricted skill licences by
    it: an edited manifest (its hashes still right) must not pass as the version its recipe,
    inputs and rows make."""
    shutil.copytree(EPISODES_PATH.parent / "harness", tmp_path / "harness")
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines(keepends=True)[:4]
    (tmp_path / "episodes.jsonl").write_text("".join(lines), encoding="utf-8")
    made = generate(
        load_recipe("hat-train"), tmp_path / "episodes.jsonl", tmp_path / "out", trust_hooks=True
    )
    assert audit_version(made.path, trust_hooks=True).ok
    path = made.path / "manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(sealed(manifest)))  # resealed: the seal alone would tell
    problems = audit_version(made.path, trust_hooks=True).problems
    assert any(p.startswith("manifest: ") and problem in p for p in problems), problems


def test_an_edited_manifest_or_a_shard_of_other_columns_is_damage_everywhere(
    version, tmp_path, capsys
):
    """A manifest edited by hand (a count, the skills' licences) was trusted by generate's
    reuse, push and card (only verify rebuilt and caught it), and a shard rewritten with other
    columns, its sha256 made to fit, was pushed and crashed replay and card with an internal
    error. The manifest's seal tells an edit; the shards' columns are checked with the files."""
    edited = tmp_path / "edited"
    shutil.copytree(version.path, edited)
    manifest = json.loads((edited / "manifest.json").read_text())
    manifest["counts"]["input_lines"] += 1
    (edited / "manifest.json").write_text(json.dumps(manifest))
    seal = "manifest.json: edited since hsa wrote it"
    assert any(p.startswith(seal) for p in audit_version(edited, trust_hooks=True).problems)
    assert main(["card", str(edited)]) == 2
    assert "the version is damaged, so hsa will not write its card" in capsys.readouterr().err
    assert main(["push", str(edited), "--repo-id", "a/b", "--dry-run"]) != 0
    assert seal in capsys.readouterr().err

    columns = tmp_path / "columns"
    shutil.copytree(version.path, columns)
    shard = columns / "data" / "train-00000-of-00001.parquet"
    pq.write_table(pq.read_table(shard).select(["id"]), shard)
    manifest = json.loads((columns / "manifest.json").read_text())
    manifest["shards"][0]["sha256"] = sha256(shard)
    (columns / "manifest.json").write_text(json.dumps(sealed(manifest)))
    problems = audit_version(columns, trust_hooks=True).problems
    assert problems == [
        "data/train-00000-of-00001.parquet: lacks the column(s) messages, tools, hsa_source_id, "
        "hsa_variant, hsa_harness_variant, hsa_lineage, hsa_mapping, hsa_gold, hsa_families, "
        "hsa_version"
    ], problems
    row = pq.read_table(version.path / "data" / "train-00000-of-00001.parquet")["id"][1].as_py()
    assert main(["replay", str(columns), "--id", row, "--trust-hooks"]) == 2
    printed = capsys.readouterr().err
    assert "lacks the column(s)" in printed and "a bug in hsa" not in printed
    assert main(["card", str(columns)]) == 2
    assert main(["push", str(columns), "--repo-id", "a/b", "--dry-run"]) != 0


def test_a_license_that_is_no_hub_licence_id_is_refused_before_any_work(version, tmp_path, capsys):
    """The card's front matter takes a Hub licence id; any other text is refused, by generate
    before it reads a line and by card before it writes."""
    before = (version.path / "README.md").read_bytes()
    assert main(["card", str(version.path), "--license", "not a licence!"]) == 2
    assert "must be a Hub licence id" in capsys.readouterr().err
    assert (version.path / "README.md").read_bytes() == before
    args = ["generate", "--recipe", RECIPE, "--episodes", str(EPISODES_PATH)]
    args += ["--out", str(tmp_path / "out")]
    assert main([*args, "--license", "Apache 2.0"]) == 2
    assert "must be a Hub licence id" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m["shards"][0].pop("rows"),
        lambda m: m["input"].update(episodes=5),
        lambda m: m.update(transform_versions=[]),
    ],
)
def test_verify_names_a_malformed_manifest_instead_of_failing_itself(
    version, tmp_path, edit, capsys
):
    copy = tmp_path / "copy"
    shutil.copytree(version.path, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    edit(manifest)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert main(["verify", str(copy), "--trust-hooks"]) in (1, 2)
    assert "a bug in hsa" not in capsys.readouterr().err


def test_a_rerun_with_another_license_keeps_the_version_and_rewrites_its_card(tmp_path):
    from hsa.dataset.card import card_license

    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines(keepends=True)[:3]
    shutil.copytree(EPISODES_PATH.parent / "harness", tmp_path / "harness")
    (tmp_path / "episodes.jsonl").write_text("".join(lines), encoding="utf-8")
    first = generate(
        load_recipe(RECIPE), tmp_path / "episodes.jsonl", tmp_path / "out", trust_hooks=True
    )
    assert card_license(first.path) == "other"
    again = generate(
        load_recipe(RECIPE),
        tmp_path / "episodes.jsonl",
        tmp_path / "out",
        trust_hooks=True,
        license="apache-2.0",
    )
    assert again.reused and again.path == first.path
    assert card_license(first.path) == "apache-2.0"
    # a card that is not UTF-8 is no readable card: rewritten on reuse, not a crash
    (first.path / "README.md").write_bytes(b"---\nlicense: caf\xe9\n---\n")
    assert card_license(first.path) is None
    third = generate(
        load_recipe(RECIPE), tmp_path / "episodes.jsonl", tmp_path / "out", trust_hooks=True
    )
    assert third.path == first.path and card_license(first.path) == "other"


def test_replay_rebuilds_a_stored_row(version, capsys):
    row_id = (
        pq.read_table(version.path / "data" / "train-00000-of-00001.parquet", columns=["id"])
        .column("id")[7]
        .as_py()
    )
    stored, differing = replay_row(version.path, row_id, trust_hooks=True)
    assert stored["id"] == row_id and differing == []
    assert main(["replay", str(version.path), "--id", row_id, "--trust-hooks"]) == 0
    assert "identical to the stored row" in capsys.readouterr().out


def test_replay_finds_the_line_a_run_used_when_an_earlier_one_with_that_id_failed(tmp_path):
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines()[:3]
    broken = json.loads(lines[1])
    broken["messages"][0]["role"] = "robot"  # same id, rejected at load: the run uses the next
    source = tmp_path / "episodes.jsonl"
    source.write_text(
        "\n".join([lines[0], json.dumps(broken), lines[1], lines[2]]) + "\n", encoding="utf-8"
    )
    shutil.copytree(EPISODES_PATH.parent / "harness", tmp_path / "harness")
    result = generate(load_recipe(RECIPE), source, tmp_path / "out", trust_hooks=True)
    assert result.manifest["counts"]["load_rejects"] == 1
    row_id = f"{broken['id']}#2"
    stored, differing = replay_row(result.path, row_id, trust_hooks=True)
    assert stored["id"] == row_id and stored["hsa_variant"] == 2 and differing == []
    with pytest.raises(HsaError, match="no row 'nowhere#1'"):
        replay_row(result.path, "nowhere#1", trust_hooks=True)


def test_augment_files_account_for_every_line_and_each_variant_replays(tmp_path):
    """What `hsa augment` writes: every variant, and every input line that made none as a reject
    with its kind and stage; a variant rebuilt from its source and lineage equals the stored line,
    and a stored line changed afterwards (episode or mapping) is caught."""
    source = small_source(tmp_path / "src", 3, ("{not json",))
    variants, rejects = tmp_path / "v.jsonl", tmp_path / "v.rejects.jsonl"
    recipe = load_recipe(RECIPE)
    tally = write_variants(
        recipe, read_episodes(source, trust_hooks=True), variants, rejects, batch_size=2
    )
    lines = [json.loads(line) for line in variants.read_text().splitlines()]
    reject_lines = [json.loads(line) for line in rejects.read_text().splitlines()]
    per_episode = recipe.variants_per_episode + recipe.keep_original
    assert tally.kept == len(lines) == 3 * per_episode
    assert [(r["kind"], r["stage"], r["line"]) for r in reject_lines] == [("episode", "load", 4)]
    assert tally.rejects == [("load", reject_lines[0]["reason"])]
    assert tally.failure(what="variants") is None

    stored = next(line for line in lines if line["variant"] == 2)
    row = f"{stored['source_id']}#2"
    assert replay_variant(variants, row, episodes=source, trust_hooks=True) == (stored, [])
    stored["episode"]["messages"][0]["content"] += "!"
    stored["mapping"]["tampered"] = {"a": "b"}
    variants.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert replay_variant(variants, row, episodes=source, trust_hooks=True)[1] == [
        "episode",
        "mapping",
    ]
    with pytest.raises(HsaError, match="--id must look like SOURCE_ID#INDEX"):
        replay_variant(variants, stored["source_id"], episodes=source)
    with pytest.raises(HsaError, match=f"no variant {stored['source_id']}#99 in"):
        replay_variant(variants, f"{stored['source_id']}#99", episodes=source)
    lines[0]["source_id"] = "elsewhere"
    variants.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(HsaError, match="source episode 'elsewhere' not found"):
        replay_variant(
            variants, f"elsewhere#{lines[0]['variant']}", episodes=source, trust_hooks=True
        )
    # A damaged file: a line cut short is said when the variant is not found, and a line that
    # lacks what a rebuild reads is named with its line, not an internal KeyError.
    text = "".join(json.dumps(line) + "\n" for line in lines)
    variants.write_text(text[:500] + "\n" + text.split("\n", 1)[1])
    with pytest.raises(HsaError, match=r"1 line\(s\) are no variant object, first line 1"):
        replay_variant(variants, f"{stored['source_id']}#99", episodes=source)
    del lines[1]["lineage"]
    variants.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(HsaError, match=r"lacks lineage \(a line hsa augment writes") as caught:
        replay_variant(variants, f"{lines[1]['source_id']}#{lines[1]['variant']}", episodes=source)
    assert caught.value.line == 2


def test_card_has_front_matter_configs_and_statistics(version):
    text = (version.path / "README.md").read_text(encoding="utf-8")
    _, front, body = text.split("---\n", 2)
    meta = yaml.safe_load(front)
    assert meta["configs"][0]["data_files"][0] == {"split": "train", "path": "data/train-*.parquet"}
    assert "text-generation" in meta["task_categories"] and meta["license"] == "other"
    assert "Variants per source: min 4, median 4, mean 4.00, max 4." in body
    assert "| `tool_order_permutation` | 720 |" in body
    assert "Harness variants:" not in body  # tools-basic has no pool
    assert "load_dataset(" in body and "SFTTrainer" in body


def test_the_card_written_with_the_rows_is_the_card_of_the_written_shards(
    version, tmp_path, monkeypatch
):
    # generate tallies the rows' shape as it writes them and never reads the shards for it;
    # hsa card reads it from the shards, and says the same
    with monkeypatch.context() as patched:
        patched.setattr(RowShape, "read", pytest.fail)
        made = generate(load_recipe(RECIPE), EPISODES_PATH, tmp_path, trust_hooks=True)
    card = (made.path / "README.md").read_text(encoding="utf-8")
    assert card == (version.path / "README.md").read_text(encoding="utf-8")
    assert card_text(made.path, manifest=made.manifest) == card


class FakeHub:
    """Stands in for huggingface_hub.HfApi: the Hub's HTTP API cannot be reached from here.

    Keeps a commit list and refuses a commit whose parent is not the head, as the Hub does.
    ``failures`` are raised by create_commit, before it commits, or after it (``lost=True``:
    the commit landed but its response did not come back)."""

    def __init__(self, failures: list[Exception] | None = None, lost: bool = False):
        self.calls = []
        self.failures = list(failures or [])
        self.lost = lost
        self.commits = [SimpleNamespace(commit_id="c0", title="initial commit")]

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def repo_info(self, repo_id, **kwargs):
        return SimpleNamespace(sha=self.commits[0].commit_id)

    def list_repo_commits(self, repo_id, **kwargs):
        return list(self.commits)

    def create_commit(self, repo_id, operations, **kwargs):
        if self.failures and not self.lost:
            raise self.failures.pop(0)
        if kwargs.get("parent_commit") not in (None, self.commits[0].commit_id):
            raise _http_error(412)
        self.calls.append(
            ("create_commit", repo_id, [op.path_in_repo for op in operations], kwargs)
        )
        self.commits.insert(
            0, SimpleNamespace(commit_id=f"c{len(self.commits)}", title=kwargs["commit_message"])
        )
        if self.failures:
            raise self.failures.pop(0)


def _http_error(status: int):
    import httpx2 as httpx  # huggingface_hub 2 ships its HTTP client as httpx2
    from huggingface_hub.errors import HfHubHTTPError

    response = httpx.Response(status, request=httpx.Request("POST", "https://hub.invalid/x"))
    return HfHubHTTPError(f"{status} error", response=response)


def test_push_commits_once_and_retries_transient_errors(version, monkeypatch):
    from hsa.dataset.hub import push_version

    monkeypatch.setenv("HF_TOKEN", "hf_secret_token_value")
    hub = FakeHub(failures=[_http_error(503), _http_error(429)])
    sleeps = []
    push_version(version.path, "org/live-commerce-hsa", private=True, api=hub, sleep=sleeps.append)
    (_, repo, repo_kwargs), (_, _, paths, commit_kwargs) = hub.calls
    assert repo == "org/live-commerce-hsa"
    assert repo_kwargs == {"repo_type": "dataset", "private": True, "exist_ok": True}
    assert paths == [
        "README.md",
        "manifest.json",
        "rejects.parquet",
        "data/train-00000-of-00001.parquet",
    ]
    assert commit_kwargs["repo_type"] == "dataset" and sleeps == [1, 2]
    for path in version.path.rglob("*"):  # the token is never written anywhere
        if path.is_file():
            assert b"hf_secret_token_value" not in path.read_bytes()


def test_push_retry_after_a_lost_response_does_not_commit_twice(version):
    from hsa.dataset.hub import push_version

    hub = FakeHub(failures=[_http_error(503)], lost=True)
    push_version(version.path, "org/name", api=hub, sleep=lambda s: None)
    assert [c[0] for c in hub.calls].count("create_commit") == 1
    assert [c.title for c in hub.commits][1:] == ["initial commit"]


def test_push_stops_when_someone_else_pushes_meanwhile(version):
    from hsa.dataset.hub import push_version

    hub = FakeHub(failures=[_http_error(503)])
    original = hub.create_commit

    def other_push_then_fail(repo_id, operations, **kwargs):
        hub.commits.insert(0, SimpleNamespace(commit_id="theirs", title="someone else's push"))
        hub.create_commit = original
        raise _http_error(503)

    hub.create_commit = other_push_then_fail
    with pytest.raises(HsaError, match="changed while pushing .*someone else's push"):
        push_version(version.path, "org/name", api=hub, sleep=lambda s: None)
    assert "create_commit" not in [c[0] for c in hub.calls]


def test_push_gives_up_on_auth_errors_and_dry_run_sends_nothing(version, capsys):
    from hsa.dataset.hub import push_version

    hub = FakeHub(failures=[_http_error(401)])
    with pytest.raises(HsaError, match="upload commit failed after 1 attempt"):
        push_version(version.path, "org/name", api=hub, sleep=lambda s: None)
    assert main(["push", str(version.path), "--repo-id", "org/name", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "add data/train-00000-of-00001.parquet" in printed and "pushed" not in printed
    with pytest.raises(HsaError, match="ORG/NAME"):
        push_version(version.path, "not-a-repo-id", dry_run=True)


@pytest.mark.xdist_group("torch")  # with every other torch test, in one process
def test_two_sft_steps_on_a_generated_version(version, tmp_path):
    """The rows are TRL-ready: SFTTrainer trains on them with assistant-only loss."""
    pytest.importorskip("trl")
    import datasets
    from trl import SFTConfig, SFTTrainer

    from hsa.trainers.tiny import build_model, build_tokenizer

    ds = datasets.load_dataset(
        "parquet", data_files={"train": str(version.path / "data" / "train-*.parquet")}
    )["train"]
    ds = ds.select(range(0, 960, 60)).select_columns(["messages", "tools"])
    tokenizer = build_tokenizer(
        (json.dumps(r["messages"], ensure_ascii=False) + json.dumps(r["tools"]) for r in ds),
        vocab_size=4096,
    )
    model = build_model(tokenizer)
    args = SFTConfig(
        output_dir=str(tmp_path / "sft"),
        max_steps=2,
        per_device_train_batch_size=1,
        max_length=6144,
        assistant_only_loss=True,
        use_cpu=True,
        bf16=False,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        learning_rate=1e-3,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer)
    sample = trainer.train_dataset[0]
    trained = sum(label != -100 for label in sample["labels"])
    assert 0 < trained < len(sample["labels"]) / 2  # the loss sees the assistant's tokens only
    result = trainer.train()
    assert result.global_step == 2
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    assert len(losses) == 2 and all(loss == loss and loss > 0 for loss in losses)


# ---- honest outcomes, undamaged versions, nothing outside its folders ---------------------------


def small_source(folder: Path, lines: int = 3, extra: tuple[str, ...] = ()) -> Path:
    """The first ``lines`` example episodes (plus ``extra`` raw lines) beside a copy of the example
    harness, in ``folder``; returns the episodes file."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(EPISODES_PATH.parent / "harness", folder / "harness")
    rows = EPISODES_PATH.read_text(encoding="utf-8").splitlines()[:lines] + list(extra)
    path = folder / "episodes.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_a_run_that_makes_no_rows_or_mostly_rejects_exits_1(tmp_path, capsys):
    source = small_source(tmp_path / "none", 0, ("{not json", "[1, 2]", "{also not json"))
    assert (
        main(
            [
                "generate",
                "--recipe",
                RECIPE,
                "--episodes",
                str(source),
                "--out",
                str(tmp_path / "out"),
                "--trust-hooks",
            ]
        )
        == 1
    )
    printed = capsys.readouterr()
    assert "rejects by reason (3 in all):" in printed.err
    assert "2  load: not valid JSON" in printed.err
    assert "FAILED: no rows written; 3 reject(s)" in printed.err
    empty = Path(printed.out.strip().splitlines()[-1])
    assert empty.is_dir()  # the version is still there, to show its rejects
    # Its files are intact, but a version with no rows is no dataset: verify says so, exit 1.
    assert main(["verify", str(empty), "--trust-hooks"]) == 1
    assert "the version has no rows (3 rejects: see rejects.parquet)" in capsys.readouterr().err
    # One good episode (4 rows) and one broken line: 1 of 5 outputs, 1 of 2 lines rejected.
    mixed = small_source(tmp_path / "mixed", 1, ("{not json",))
    args = [
        "generate",
        "--recipe",
        RECIPE,
        "--episodes",
        str(mixed),
        "--out",
        str(tmp_path / "out"),
        "--trust-hooks",
    ]
    assert main(args) == 0
    # a run that succeeds with rejects says why, beside rejects.parquet
    printed = capsys.readouterr().err
    assert "rejects by reason (1 in all):" in printed and "1  load: not valid JSON" in printed
    assert "FAILED" not in printed
    assert main(args + ["--max-reject-share", "0.15"]) == 1  # reused: the same verdict
    assert (
        "20.0% of the run was rejected (1 rejects, 4 rows), more than --max-reject-share "
        "0.15" in capsys.readouterr().err
    )
    # Two broken lines of three: the rows outnumber the rejects, the lost lines do not.
    most = small_source(tmp_path / "most", 1, ("{not json", "{not json either"))
    args[args.index(str(mixed))] = str(most)
    assert main(args) == 1
    assert (
        "FAILED: 66.7% of the input lines were rejected on load (2 of 3), more than "
        "--max-reject-share 0.5" in capsys.readouterr().err
    )


def test_augment_and_import_that_keep_nothing_exit_1(tmp_path, capsys):
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    assert (
        main(
            [
                "augment",
                "--recipe",
                RECIPE,
                "--episodes",
                str(broken),
                "--out",
                str(tmp_path / "v.jsonl"),
            ]
        )
        == 1
    )
    assert "FAILED: no variants written" in capsys.readouterr().err
    assert main(["import", "openai", str(broken), "--out", str(tmp_path / "e.jsonl")]) == 1
    assert "FAILED: no episodes written" in capsys.readouterr().err
    # augment counts lines rejected on load against the lines, as generate does
    most = small_source(tmp_path / "most", 1, ("{not json", "{not json either"))
    args = ["augment", "--recipe", RECIPE, "--episodes", str(most), "--out", str(tmp_path / "m")]
    assert main([*args, "--trust-hooks"]) == 1
    assert "66.7% of the input lines were rejected on load (2 of 3)" in capsys.readouterr().err


def test_augment_that_keeps_nothing_leaves_the_earlier_variants_as_they_were(tmp_path, capsys):
    """A rerun whose every line is rejected replaced the variants of an earlier run with an empty
    file; now it fails, keeps them, writes its rejects and says where they are."""
    good = small_source(tmp_path / "good", 1)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    variants, rejects = tmp_path / "v.jsonl", tmp_path / "v.rejects.jsonl"
    args = ["augment", "--recipe", RECIPE, "--trust-hooks", "--episodes"]
    assert main([*args, str(good), "--out", str(variants)]) == 0
    before = variants.read_bytes()
    assert before and not rejects.read_bytes()
    capsys.readouterr()
    assert main([*args, str(broken), "--out", str(variants)]) == 1
    printed = capsys.readouterr()
    assert variants.read_bytes() == before
    assert f"FAILED: no variants written; 1 reject(s); see {rejects}" in printed.err
    assert f"{variants} is left as it was" in printed.out
    assert [(r["line"], r["stage"]) for r in map(json.loads, rejects.read_text().splitlines())] == [
        (1, "load")
    ]
    # Nor is an empty file left where there was none.
    fresh = tmp_path / "fresh.jsonl"
    assert main([*args, str(broken), "--out", str(fresh)]) == 1
    assert not fresh.exists() and (tmp_path / "fresh.rejects.jsonl").is_file()


def test_augment_names_the_line_of_a_repeated_episode_id(tmp_path):
    """The reject of a repeated id said line null and source 'episodes'; generate and eval name
    the line of the repeat."""
    source = small_source(tmp_path / "src", 2)
    first = source.read_text(encoding="utf-8").splitlines()[0]
    source.write_text(source.read_text(encoding="utf-8") + first + "\n", encoding="utf-8")
    rejects = tmp_path / "v.rejects.jsonl"
    args = ["augment", "--recipe", RECIPE, "--episodes", str(source), "--trust-hooks"]
    assert main([*args, "--out", str(tmp_path / "v.jsonl")]) == 0
    (reject,) = map(json.loads, rejects.read_text().splitlines())
    assert (reject["kind"], reject["source"], reject["line"], reject["id"], reject["field"]) == (
        "episode",
        str(source),
        3,
        json.loads(first)["id"],
        "id",
    )
    assert reject["stage"] == "load" and "line 1 has it" in reject["reason"]


def test_a_run_that_publishes_nothing_leaves_no_folder(tmp_path, capsys):
    gzipped = tmp_path / "episodes.jsonl.gz"
    gzipped.write_bytes(b"\x1f\x8b\x08\x00 not read")
    out = tmp_path / "out"
    deep = tmp_path / "new1" / "new2" / "out"
    for where in (out, deep):
        args = ["generate", "--recipe", RECIPE, "--episodes", str(gzipped), "--out", str(where)]
        assert main(args) == 2
        assert "gzip-compressed" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes.jsonl.gz"]
    (out / "other").mkdir(parents=True)  # a folder that was there stays
    assert (
        main(["generate", "--recipe", RECIPE, "--episodes", str(gzipped), "--out", str(out)]) == 2
    )
    assert sorted(p.name for p in out.iterdir()) == ["other"]


def test_a_damaged_version_is_rebuilt_instead_of_reused(tmp_path, capsys):
    source = small_source(tmp_path)
    first = generate(load_recipe(RECIPE), source, tmp_path / "out", trust_hooks=True)
    files = {
        p.relative_to(first.path): p.read_bytes() for p in first.path.rglob("*") if p.is_file()
    }
    shard = first.path / "data" / "train-00000-of-00001.parquet"
    shard.unlink()
    again = generate(load_recipe(RECIPE), source, tmp_path / "out", trust_hooks=True)
    assert not again.reused and again.repaired == ["data/train-00000-of-00001.parquet: missing"]
    assert {
        p.relative_to(again.path): p.read_bytes() for p in again.path.rglob("*") if p.is_file()
    } == files
    # An extra shard is damage too (the version's data/train-*.parquet pattern would load it).
    shutil.copy(shard, shard.with_name("train-00001-of-00001.parquet"))
    args = [
        "generate",
        "--recipe",
        RECIPE,
        "--episodes",
        str(source),
        "--out",
        str(tmp_path / "out"),
        "--trust-hooks",
    ]
    assert main(args) == 0
    printed = capsys.readouterr()
    assert (
        "existed but was damaged (data/train-00001-of-00001.parquet: not part of this version"
        in printed.err
        and "nothing to do" not in printed.out
    )
    assert sorted(p.name for p in (again.path / "data").iterdir()) == [shard.name]
    assert main(args) == 0
    assert (
        "already exists (same inputs, files checked against its manifest); nothing to do"
        in capsys.readouterr().out
    )
    assert not list((tmp_path / "out" / RECIPE).glob(".*damaged*"))


def test_verify_refuses_files_the_manifest_does_not_list(version, tmp_path):
    import datasets

    copy = tmp_path / "copy"
    shutil.copytree(version.path, copy)
    shard = copy / "data" / "train-00000-of-00001.parquet"
    shutil.copy(shard, shard.with_name("train-00001-of-00002.parquet"))
    (copy / "notes.txt").write_text("x")
    loaded = datasets.load_dataset(
        "parquet", data_files={"train": str(copy / "data" / "train-*.parquet")}
    )["train"]
    assert len(loaded) == 2 * version.manifest["counts"]["rows"]  # why an extra file matters
    problems = audit_version(copy, trust_hooks=True).problems
    assert problems == [
        "data/train-00001-of-00002.parquet: not part of this version (the "
        "manifest does not list it); remove it",
        "notes.txt: not part of this version (the manifest does not list it); remove it",
    ]
    # A manifest is read only within its version: a listed path may not lead out of it.
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["shards"][0]["path"] = "../../outside.parquet"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    problems = audit_version(copy, trust_hooks=True).problems
    assert (
        "manifest lists '../../outside.parquet', which is not a path inside the version" in problems
    )


def test_push_checks_the_version_before_sending_anything(version, tmp_path):
    from hsa.dataset.hub import push_version

    copy = tmp_path / "copy"
    shutil.copytree(version.path, copy)
    shard = copy / "data" / "train-00000-of-00001.parquet"
    shard.write_bytes(shard.read_bytes()[:-10])
    hub = FakeHub()
    for dry_run in (True, False):
        with pytest.raises(HsaError, match="sha256 differs from the manifest") as caught:
            push_version(copy, "org/name", api=hub, dry_run=dry_run, sleep=lambda s: None)
        assert "nothing pushed" in str(caught.value)
    assert hub.calls == []


@pytest.mark.parametrize("damaged", ["data/train-00000-of-00001.parquet", "rejects.parquet"])
def test_card_of_a_version_with_a_damaged_parquet_file_names_it(tmp_path, capsys, damaged):
    """`hsa card` on a truncated shard ended in pyarrow's ArrowInvalid, reported as a bug; it is
    a user error naming the file, as push and verify report the same version."""
    source = small_source(tmp_path / "src", 1)
    made = generate(load_recipe(RECIPE), source, tmp_path / "out", trust_hooks=True)
    path = made.path / damaged
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert main(["card", str(made.path)]) == 2
    printed = capsys.readouterr().err
    assert "the version is damaged, so hsa will not write its card" in printed
    assert f"{damaged}: not a readable Parquet file (" in printed
    assert "hsa verify lists what is wrong" in printed and "unexpected" not in printed
    assert main(["push", str(made.path), "--repo-id", "org/name", "--dry-run"]) == 2
    assert f"{damaged}: not a readable Parquet file" in capsys.readouterr().err
    assert main(["verify", str(made.path), "--trust-hooks"]) == 1
    assert f"{damaged}: not a readable Parquet file" in capsys.readouterr().err


def test_push_refuses_a_version_without_rows(tmp_path):
    """A run whose every input was rejected leaves a version only to show its rejects (generate
    exits 1): there is nothing to publish, dry run included."""
    from hsa.dataset.hub import push_version

    source = tmp_path / "bad.jsonl"
    source.write_text('{"id": "a"}\n')
    made = generate(load_recipe(RECIPE), source, tmp_path / "out")
    assert made.manifest["counts"]["rows"] == 0
    hub = FakeHub()
    for dry_run in (True, False):
        with pytest.raises(
            HsaError, match=r"no rows \(1 rejects: see rejects.parquet\); nothing pushed"
        ):
            push_version(made.path, "org/name", api=hub, dry_run=dry_run, sleep=lambda s: None)
    assert hub.calls == []


def test_manifest_and_rejects_hold_no_local_paths_and_verify_works_anywhere(tmp_path):
    """Inputs given by relative paths: the manifest names them without any path (it is published
    with the version), and hsa verify finds them from another directory all the same."""
    from tests.test_cli import run_hsa

    work = tmp_path / "work"
    small_source(work / "data", 2, ("{not json",))
    made = run_hsa(
        "generate",
        "--recipe",
        RECIPE,
        "--episodes",
        "data/episodes.jsonl",
        "--out",
        "out",
        "--trust-hooks",
        cwd=work,
    )
    assert made.returncode == 0, made.stderr
    version_dir = work / made.stdout.strip().splitlines()[-1]
    manifest = (version_dir / "manifest.json").read_text()
    assert str(tmp_path) not in manifest and "data/episodes" not in manifest
    assert json.loads(manifest)["input"]["episodes"] == "episodes.jsonl"
    rejects = pq.read_table(version_dir / "rejects.parquet").to_pylist()
    assert [r["source"] for r in rejects] == ["episodes.jsonl"]
    for path in version_dir.rglob("*"):
        if path.is_file():
            assert str(tmp_path).encode() not in path.read_bytes(), path
    checked = run_hsa("verify", str(version_dir), "--trust-hooks", cwd=tmp_path.parent)
    assert checked.returncode == 0, checked.stderr
    moved = tmp_path / "moved"
    shutil.copytree(version_dir, moved)  # a copy made elsewhere: its inputs must be given
    lost = run_hsa("verify", str(moved), "--trust-hooks", cwd=tmp_path)
    assert lost.returncode == 2 and "pass --episodes" in lost.stderr
    found = run_hsa(
        "verify",
        str(moved),
        "--trust-hooks",
        "--episodes",
        str(work / "data" / "episodes.jsonl"),
        cwd=tmp_path,
    )
    assert found.returncode == 0, found.stderr


def test_harness_folders_outside_the_episodes_folder_need_a_root(tmp_path):
    source = small_source(tmp_path / "data", 2)
    shutil.move(source.parent / "harness", tmp_path / "shared-harness")
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    source.write_text(
        "".join(json.dumps({**row, "harness": "../shared-harness"}) + "\n" for row in rows),
        encoding="utf-8",
    )
    refused = generate(load_recipe(RECIPE), source, tmp_path / "out", trust_hooks=True)
    assert refused.failure() == "no rows written; 2 reject(s)"
    reasons = pq.read_table(refused.path / "rejects.parquet").column("reason").to_pylist()
    assert all("leads outside the episodes file's folder" in r for r in reasons)
    allowed = generate(
        load_recipe(RECIPE),
        source,
        tmp_path / "out",
        trust_hooks=True,
        harness_roots=(tmp_path / "shared-harness",),
    )
    assert allowed.failure() is None and allowed.path != refused.path
    manifest = (allowed.path / "manifest.json").read_text()
    assert "shared-harness" not in manifest  # a path above the episodes is named by its hash
    with pytest.raises(HsaError, match="give the same here"):
        audit_version(allowed.path, trust_hooks=True)
    assert audit_version(
        allowed.path, trust_hooks=True, harness_roots=(tmp_path / "shared-harness",)
    ).ok


def test_run_sizes_and_names_have_limits(tmp_path):
    source = small_source(tmp_path, 1)
    recipe = load_recipe(RECIPE)
    for options, message in [
        ({"split": "../../escape"}, "split must be a name"),
        ({"workers": 0}, "workers must be from 1 to 256"),
        ({"workers": 10_000}, "workers must be from 1 to 256"),
        ({"batch_size": 10**9}, "batch size must be from 1 to 65536"),
    ]:
        with pytest.raises(HsaError, match=message):
            generate(recipe, source, tmp_path / "out", trust_hooks=True, **options)
    assert not (tmp_path / "out").exists() and not (tmp_path.parent / "escape").exists()


def test_many_variants_per_episode_cut_the_batch_not_the_bytes(tmp_path, monkeypatch):
    import hsa.dataset.generate

    source = small_source(tmp_path, 5)
    recipe = load_recipe(RECIPE)  # 3 variants and the original: 4 rows per episode
    whole = generate(recipe, source, tmp_path / "a", trust_hooks=True)
    seen = []
    real = hsa.dataset.generate.read_batches

    def recording(path, batch_size, counts):
        for batch in real(path, batch_size, counts):
            seen.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(hsa.dataset.generate, "read_batches", recording)
    monkeypatch.setattr(hsa.dataset.generate, "MAX_BATCH_VARIANTS", 8)
    cut = generate(recipe, source, tmp_path / "b", trust_hooks=True, batch_size=256)
    assert seen == [2, 2, 1]  # 8 variants at most in one batch
    assert shard_hashes(cut) == shard_hashes(whole)


def test_progress_moves_episode_by_episode_within_a_batch(tmp_path, monkeypatch):
    """One batch of 256 holds the whole demo: progress reported per batch sat at 0 until the
    end. It must move with every episode done."""
    source = small_source(tmp_path, 5)
    seen = []
    generate(
        load_recipe(RECIPE),
        source,
        tmp_path / "out",
        trust_hooks=True,
        on_progress=lambda done, rows: seen.append(done),
    )
    assert seen[:5] == [1, 2, 3, 4, 5] and seen == sorted(seen)
    # With a pool, what the engine reports (before generate's own count after each batch)
    # adds the lines the pool ran and those this process ran (a slowed pool, so that this
    # process runs batches too) up to every line.
    real_run_engine = hsa.dataset.generate.run_engine
    reported = []

    def recording(*args, on_lines, **kwargs):
        def record(n):
            reported.append(n)
            on_lines(n)

        return real_run_engine(*args, on_lines=record, **kwargs)

    monkeypatch.setattr(hsa.dataset.generate, "run_engine", recording)
    monkeypatch.setattr(sys.modules[__name__], "_POOL_MARKS", tmp_path)
    monkeypatch.setattr(hsa.dataset.engines.local, "_work", _slow_pool_work)
    generate(
        load_recipe(RECIPE),
        source,
        tmp_path / "pooled",
        trust_hooks=True,
        workers=2,
        batch_size=1,
        on_progress=lambda done, rows: None,
    )
    assert 1 <= len(list(tmp_path.glob("*.arrows"))) < 5  # the pool ran some, not all
    assert max(reported) == 5


def test_logs_get_progress_lines_and_a_byte_order_mark_costs_nothing(tmp_path):
    from tests.test_cli import run_hsa

    source = small_source(tmp_path, 3)
    source.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    env = {"HSA_PROGRESS_SECONDS": "0"}
    made = run_hsa(
        "generate",
        "--recipe",
        RECIPE,
        "--episodes",
        str(source),
        "--out",
        str(tmp_path / "out"),
        "--trust-hooks",
        env=env,
    )
    assert made.returncode == 0, made.stderr
    assert "3 input lines -> 12 rows from 3 sources; rejected: 0 on load" in made.stdout
    assert "generate: 1/3 episodes (33.3%)" in made.stderr
    assert "generate: 3/3 episodes (100.0%), 12 rows" in made.stderr
    checked = run_hsa("verify", made.stdout.strip().splitlines()[-1], "--trust-hooks", env=env)
    assert checked.returncode == 0, checked.stderr
    assert "verify: 1/12 rows" in checked.stderr and "verify: 12/12 rows" in checked.stderr


def test_killing_the_parent_kills_its_workers(tmp_path):
    """kill -9 runs no cleanup: workers must notice their parent is gone and end, not wait on
    their queue forever holding memory."""
    import signal
    import subprocess

    source = small_source(tmp_path, 240)
    command = [
        str(Path(sys.executable).with_name("hsa")),
        "generate",
        "--recipe",
        RECIPE,
        "--episodes",
        str(source),
        "--out",
        str(tmp_path / "out"),
        "--trust-hooks",
        "--workers",
        "3",  # two pool processes beside this one
        "--batch-size",
        "2",
    ]
    parent = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children_file = Path(f"/proc/{parent.pid}/task/{parent.pid}/children")

    def alive(pid: int) -> bool:  # a zombie has ended; only its exit status waits for a reaper
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"

    workers: list[int] = []
    deadline = time.monotonic() + 120
    while len(workers) < 2 and time.monotonic() < deadline and parent.poll() is None:
        workers = [int(pid) for pid in children_file.read_text().split()]
        time.sleep(0.1)
    assert len(workers) >= 2, "the workers never started"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 60
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = [pid for pid in workers if alive(pid)]
    for pid in survivors:  # leave nothing behind even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert survivors == []


@given(
    st.lists(st.sampled_from([f"h{i}:{slot}" for i in range(3) for slot in range(4)]), min_size=1)
)
def test_the_harness_variant_tally_counts_as_a_counter_of_the_names_would(names):
    from collections import Counter

    from hsa.dataset.harness_variants import HarnessVariantTally

    tally = HarnessVariantTally()
    for start in range(0, len(names), 5):  # as batches arrive
        tally.add(names[start : start + 5])
    served = sorted(Counter(names).values())
    assert tally.rows == len(names)
    assert tally.summary() == {
        "count": len(served),
        "rows_min": served[0],
        "rows_median": statistics.median(served),
        "rows_max": served[-1],
    }


# ---- licences under current SPDX ids -----------------------------------------------------------


@pytest.mark.parametrize(
    ("license", "expected"),
    [
        # a version range or an exception leaves the licence what it is
        ("GPL-3.0-or-later", True),
        ("GPL-3.0-only", True),
        ("LGPL-2.1-or-later", True),
        ("AGPL-3.0-only", True),
        ("LGPL-2.1+", True),
        ("GPLv3+", True),
        ("Apache-2.0 WITH LLVM-exception", True),
        ("GPL-2.0-or-later WITH Classpath-exception-2.0", True),
        ("GPL-2.0-with-classpath-exception", True),
        ("LicenseRef-Proprietary WITH LLVM-exception", False),  # judged by its licence
        ("Proprietary-or-later", False),
        # OR is open when any side is, AND when all are, parentheses first
        ("GPL-3.0-or-later OR LicenseRef-Proprietary", True),
        ("GPL-3.0-or-later AND LicenseRef-Proprietary", False),
        ("MIT AND (GPL-3.0-only OR LicenseRef-Proprietary)", True),
        ("(Apache-2.0 WITH LLVM-exception) OR LicenseRef-Proprietary", True),
        ("MIT AND (LicenseRef-Proprietary OR LicenseRef-Other)", False),
        ("LicenseRef-Proprietary OR (MIT AND BSD-3-Clause)", True),
        ("LicenseRef-Proprietary OR (MIT AND LicenseRef-Other)", False),
        ("(MIT", False),  # no expression: not an open licence
        ("MIT OR", False),
    ],
)
def test_current_spdx_ids_are_judged_by_their_licence(license, expected):
    from hsa.dataset.licenses import is_open

    assert is_open(license) is expected


def _licensed_version(tmp_path, licenses: dict[str, str]):
    """A version of four example episodes whose harness's skills state ``licenses``."""
    harness = tmp_path / "harness"
    shutil.copytree(EPISODES_PATH.parent / "harness", harness)
    for skill, license in licenses.items():
        path = harness / "skills" / skill / "SKILL.md"
        text = path.read_text(encoding="utf-8")
        path.write_text(
            text.replace(f"name: {skill}\n", f"name: {skill}\nlicense: {license}\n", 1),
            encoding="utf-8",
        )
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines(keepends=True)[:4]
    (tmp_path / "episodes.jsonl").write_text("".join(lines), encoding="utf-8")
    return generate(
        load_recipe(RECIPE), tmp_path / "episodes.jsonl", tmp_path / "out", trust_hooks=True
    )


def test_push_takes_skills_under_current_spdx_ids_as_open(tmp_path):
    from hsa.dataset.hub import push_version

    licenses = {
        "product-qa-reply": "GPL-3.0-or-later",
        "price-coupon-reply": "Apache-2.0 WITH LLVM-exception",
        "size-advice-reply": "LGPL-2.1-or-later",
    }
    made = _licensed_version(tmp_path / "open", licenses)
    assert {
        s: made.manifest["skill_licenses"][f"live-commerce-host/{s}"] for s in licenses
    } == licenses
    card = (made.path / "README.md").read_text(encoding="utf-8")
    for skill, license in licenses.items():  # the licence as the skill states it, and open
        assert f"| `live-commerce-host/{skill}` | {license} | yes |" in card
    lines = push_version(made.path, "org/name", dry_run=True)
    assert lines[0].startswith("create dataset repo org/name")
    assert main(["push", str(made.path), "--repo-id", "org/name", "--dry-run"]) == 0
    # a closed licence beside one is still refused
    closed = "GPL-3.0-or-later AND LicenseRef-Proprietary"
    made = _licensed_version(tmp_path / "closed", {"product-qa-reply": closed})
    card = (made.path / "README.md").read_text(encoding="utf-8")
    assert f"| `live-commerce-host/product-qa-reply` | {closed} | **no** |" in card
    with pytest.raises(HsaError, match="--allow-restricted-licences"):
        push_version(made.path, "org/name", dry_run=True)
