"""``hsa bench``'s inputs and floors: the scenarios are what they say, and the floors write the
rows generate writes, at the least cost (no timing is asserted: speed is the command's output)."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from hsa.augment.recipe import load_recipe
from hsa.cli import main
from hsa.dataset.bench import (
    FLOOR_RUNS,
    SCENARIOS,
    _generate,
    run_bench,
    untransformed,
    write_inputs,
)
from hsa.dataset.generate import generate
from hsa.errors import HsaError
from hsa.model.episode import Episode, read_episodes


def test_the_shared_scenario_puts_every_episode_under_one_realistic_harness(tmp_path):
    jsonl, _ = write_inputs(tmp_path, 40, "shared-harness")
    episodes = list(read_episodes(jsonl))
    assert all(isinstance(e, Episode) for e in episodes), episodes[:1]
    assert len({e.harness.fingerprint for e in episodes}) == 1
    harness = episodes[0].harness
    assert (len(harness.skills), len(harness.tools), len(harness.hooks)) == (12, 12, 3)
    # No inline harness: the rows name the folder.
    assert all(json.loads(line)["harness"] == "harness" for line in jsonl.open())
    # Each episode loads a skill and calls tools the skill names, and every variant survives.
    result = generate(load_recipe("tools-basic"), jsonl, tmp_path / "out")
    assert result.manifest["counts"]["rows"] == 40 * 4


def test_each_scenario_reports_its_floor_and_the_shared_floor_renders_the_prompt_once(tmp_path):
    reports = run_bench(100, 1, scenarios=SCENARIOS, folder=tmp_path, only=("floor",))
    assert [r.scenario for r in reports] == list(SCENARIOS)
    assert all(r.results["floor"]["rows"] == 100 for r in reports)
    # The floor is its fastest run, and every run is reported.
    for report in reports:
        floor = report.results["floor"]
        assert len(floor["runs"]) == FLOOR_RUNS and floor["rows_per_s"] == max(floor["runs"])
    rows = pq.read_table(tmp_path / "shared-harness" / "shared-floor.parquet").to_pylist()
    first = json.loads(rows[0]["messages"])[0]
    assert first["role"] == "system" and "load_skill" in rows[0]["tools"]
    assert len({r["tools"] for r in rows}) == 1


def test_an_unknown_scenario_is_refused(capsys):
    assert main(["bench", "--rows", "100", "--scenario", "shared"]) != 0
    assert "per-episode-tools, shared-harness" in capsys.readouterr().err


def test_a_bench_that_would_measure_nothing_is_refused(capsys, tmp_path):
    # A misspelt measurement, or one the scenario does not have, must not print an empty table
    # and exit 0.
    kept = tmp_path / "kept"
    assert main(["bench", "--rows", "100", "--only", "floors", "--folder", str(kept)]) != 0
    # The error box wraps its text: read it as one line.
    said = " ".join(capsys.readouterr().err.replace("│", " ").split())
    assert (
        "unknown measurement(s) floors; choose from floor, naive, generate, untransformed" in said
    )
    assert not kept.exists()  # refused before any input is written
    args = ["bench", "--rows", "100", "--scenario", "shared-harness", "--only", "naive"]
    assert main([*args, "--folder", str(kept)]) != 0
    assert "nothing to measure" in capsys.readouterr().err
    assert not kept.exists()
    # A scenario with nothing chosen is left out, its inputs unwritten.
    reports = run_bench(100, 1, folder=kept, only=("naive",))
    assert [r.scenario for r in reports] == ["per-episode-tools"]
    assert list(reports[0].results) == ["naive"] and not (kept / "shared-harness").exists()


def test_a_kept_folder_can_be_benched_again_and_a_found_version_is_no_measurement(tmp_path):
    # Run twice in one folder: the second run writes its inputs (and harness folder) afresh and
    # makes its versions again.
    for _ in range(2):
        (report,) = run_bench(12, 1, "tools-basic", scenarios=("shared-harness",), folder=tmp_path)
        assert report.results["generate_1"]["rows"] == 12 * 4
    # A version generate finds instead of making would time a lookup: refused.
    jsonl = tmp_path / "shared-harness" / "episodes.jsonl"
    _generate(jsonl, tmp_path / "again", "tools-basic", 1)
    with pytest.raises(HsaError, match="existed already"):
        _generate(jsonl, tmp_path / "again", "tools-basic", 1)


def test_repeated_measurements_each_make_their_rows_and_the_fastest_is_kept(tmp_path):
    # A second generate run must make its version again (a found one would time a lookup and is
    # refused), and a second naive run must convert again (datasets would read its own cache).
    reports = run_bench(6, 2, "tools-basic", folder=tmp_path, only=("generate", "naive"), repeats=2)
    measured = {r.scenario: r.results for r in reports}
    assert set(measured["per-episode-tools"]) == {"naive", "generate_1", "generate_2"}
    assert set(measured["shared-harness"]) == {"generate_1", "generate_2"}
    for results in measured.values():
        for result in results.values():
            assert len(result["runs"]) == 2
            assert result["rows_per_s"] == max(result["runs"])
    assert measured["per-episode-tools"]["naive"]["rows"] == 6
    with pytest.raises(HsaError, match="repeats must be at least 1"):
        run_bench(6, 1, folder=tmp_path, repeats=0)


def test_a_failed_measurement_stops_the_bench_with_its_error(tmp_path):
    # In a fresh interpreter with a timeout, so a regression (the bench waiting forever on a
    # child that never reported) fails here instead of hanging the suite.
    script = (
        "from hsa.dataset.bench import run_bench\n"
        f"run_bench(10, 1, 'no-such-recipe', scenarios=('shared-harness',), folder={str(tmp_path)!r},"
        " only=('generate',))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "the generate measurement failed" in done.stderr and "no-such-recipe" in done.stderr


def test_the_untransformed_run_writes_the_recipes_rows_with_no_transform(tmp_path):
    # The envelope is the recipe's (seed, variants, pool, original kept); only the pipeline is
    # one identity, so its rows are generate's rows less the transforms' work.
    recipe = load_recipe("hat-train")
    plain = untransformed(recipe)
    assert {k: v for k, v in plain.to_dict().items() if k not in ("name", "pipeline")} == {
        k: v for k, v in recipe.to_dict().items() if k not in ("name", "pipeline")
    }
    assert plain.transform_versions() == {"identity": "1"}
    (report,) = run_bench(
        8, 1, scenarios=("shared-harness",), folder=tmp_path, only=("generate", "untransformed")
    )
    generated, bare = report.results["generate_1"], report.results["untransformed_1"]
    assert bare["rows"] == generated["rows"] == 8 * (recipe.variants_per_episode + 1)
    assert set(report.ratios()) == {"generate_1_vs_untransformed_1"}
    made = tmp_path / "shared-harness" / "untransformed-1"
    (version,) = [p for p in made.glob("*/*") if p.is_dir()]
    rows = pq.read_table(version / "data").to_pylist()
    fired = {step["transform"] for r in rows for step in json.loads(r["hsa_lineage"])}
    assert fired == {"identity"} and len(rows) == bare["rows"]
    # The harness each row is rendered with is the source's: the system prompt is one text.
    assert len({json.loads(r["messages"])[0]["content"] for r in rows}) == 1
