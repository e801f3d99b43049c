"""A transform's output on fixed inputs changes only with its version (golden files, see
tests/golden/__init__.py; regenerate with ``python -m tests.golden --update``)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import tests.golden as golden_module
from hsa.augment.registry import registered
from tests.golden import INPUTS, NO_OP, UPDATE, Golden, compute, golden_files, load_inputs, update

ROOT = Path(__file__).resolve().parent.parent
TRANSFORMS = sorted(registered())


@pytest.fixture(scope="module")
def inputs():
    return load_inputs()


@pytest.mark.parametrize("name", TRANSFORMS)
def test_output_matches_the_golden_file_of_its_version(name, inputs):
    cls = registered()[name]
    golden = compute(name, inputs)
    assert not golden.rejects, f"{name} fails on golden inputs: {golden.rejects}"
    if name in NO_OP:
        assert not any(golden.changed.values()), f"{name} promises to change nothing"
    else:
        assert any(golden.changed.values()), (
            f"{name} changed none of the golden inputs ({', '.join(INPUTS)}), so its golden file "
            f"would guard nothing: add an input that exercises it (INPUTS in tests/golden/"
            f"__init__.py), then run `{UPDATE}`"
        )
    where = Path(inspect.getfile(cls)).resolve()
    where = where.relative_to(ROOT) if where.is_relative_to(ROOT) else where
    if not golden.path.is_file():
        pytest.fail(
            f"{name} version {cls.version} has no golden file "
            f"tests/golden/{golden.path.name}: run `{UPDATE}` and commit the file"
        )
    recorded = Golden.read(golden.path)
    if recorded.digest == golden.digest:
        return
    if recorded.inputs != golden.inputs:
        pytest.fail(
            f"the golden inputs changed (an episode or harness under tests/harnesses, or "
            f"the example), so every golden file is out of date: run `{UPDATE}`"
        )
    differing = [
        label for label, digest in golden.outputs.items() if recorded.outputs.get(label) != digest
    ]
    pytest.fail(
        f"the output of {name} changed (on the {', '.join(differing)} input) but its "
        f"version is still {cls.version!r}. If the change is intended, bump `version` of "
        f"{cls.__name__} in {where} and run `{UPDATE}` (and commit the new golden file); "
        f"if not, the change broke the transform's output."
    )


def test_every_golden_file_belongs_to_a_registered_transform_version():
    current = {f"{name}@{cls.version}" for name, cls in registered().items()}
    stale = sorted(set(golden_files()) - current)
    assert not stale, (
        f"golden files of versions no transform has: {', '.join(stale)}; run "
        f"`{UPDATE}`, which removes them"
    )


def test_update_writes_missing_removes_stale_and_refuses_an_unbumped_change(tmp_path, monkeypatch):
    """The regenerate command itself, on a private folder and one transform (identity)."""
    monkeypatch.setattr(golden_module, "GOLDEN_DIR", tmp_path)
    monkeypatch.setattr(golden_module, "registered", lambda: {"identity": registered()["identity"]})
    (tmp_path / "identity@0").write_text("digest: old\n")
    (tmp_path / "notes.txt").write_text("not a golden file\n")
    assert update() == ["wrote identity@1", "removed stale identity@0"]
    path = tmp_path / "identity@1"
    assert Golden.read(path).digest == compute("identity").digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["identity@1", "notes.txt"]
    assert update() == []

    text = path.read_text()
    changed = text.replace(Golden.read(path).digest, "0" * 64)
    path.write_text(changed)
    with pytest.raises(SystemExit, match="identity@1 changed but the version did not"):
        update()
    assert path.read_text() == changed  # left as it was
    assert update(force=True) == ["wrote identity@1"] and path.read_text() == text

    # Other inputs (a harness edited): the golden file is simply out of date.
    path.write_text(changed.replace(Golden.read(path).inputs, "1" * 64))
    assert update() == ["wrote identity@1"] and path.read_text() == text
