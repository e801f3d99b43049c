"""Allocator settings for generation (hsa.dataset.allocator): applied once per process, left
alone when the user says so, and never a cause of different bytes. Each case runs in a fresh
interpreter: the settings are per process and last."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from hsa.augment.recipe import load_recipe
from hsa.dataset.allocator import tune_allocators
from hsa.dataset.generate import generate
from hsa.example import EPISODES_PATH

GLIBC = platform.libc_ver()[0] == "glibc"
PROBE = """
import json
from hsa.dataset.allocator import tune_allocators
import pyarrow as pa
print(json.dumps({"tuned": tune_allocators(), "pool": pa.default_memory_pool().backend_name}))
"""


def probe(**env: str) -> dict:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HSA_ALLOCATOR", "ARROW_DEFAULT_MEMORY_POOL")
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_arrow_allocates_through_the_tuned_glibc():
    seen = probe()
    assert seen["tuned"] == {"glibc": True, "arrow_pool": True}
    assert seen["pool"] == "system"


def test_the_user_can_keep_the_allocators_as_they_are():
    seen = probe(HSA_ALLOCATOR="default")
    assert seen["tuned"] == {"glibc": False, "arrow_pool": False}
    assert seen["pool"] != "system"
    # A pool the user chose for Arrow stays theirs.
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("this pyarrow has no jemalloc")
    chosen = probe(ARROW_DEFAULT_MEMORY_POOL="jemalloc")
    assert chosen["tuned"]["arrow_pool"] is False
    assert chosen["pool"] == "jemalloc"


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_the_bytes_do_not_depend_on_the_allocators(tmp_path, monkeypatch):
    """This process is tuned (generate does it); a fresh one left as it is writes the same."""
    monkeypatch.delenv("HSA_ALLOCATOR", raising=False)
    run = dict(trust_hooks=True, workers=2, batch_size=16)
    tuned = generate(load_recipe("tools-basic"), EPISODES_PATH, tmp_path / "tuned", **run)
    assert tune_allocators() == {"glibc": True, "arrow_pool": True}
    script = (
        "import sys; from hsa.augment.recipe import load_recipe; "
        "from hsa.dataset.allocator import tune_allocators; "
        "from hsa.dataset.generate import generate; from hsa.example import EPISODES_PATH; "
        f"r = generate(load_recipe('tools-basic'), EPISODES_PATH, sys.argv[1], **{run!r}); "
        "assert tune_allocators() == {'glibc': False, 'arrow_pool': False}; print(r.path)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "default")],
        env={**os.environ, "HSA_ALLOCATOR": "default"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    untuned = Path(done.stdout.strip().splitlines()[-1])
    assert untuned.name == tuned.path.name
    for shard in sorted(tuned.path.glob("data/*.parquet")):
        assert (untuned / "data" / shard.name).read_bytes() == shard.read_bytes()
    for name in ("rejects.parquet", "manifest.json"):
        assert (untuned / name).read_bytes() == (tuned.path / name).read_bytes()
