"""Versions that mean what they say: a dataset version changes with everything that can change
its bytes (the shipped templates, a harness's own layouts, options that change rows) and with
nothing else (options declared row-neutral); the package version is written once."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

import hsa
import hsa.files.assets as assets
from hsa.augment.recipe import Recipe, load_recipe
from hsa.augment.registry import registered
from hsa.dataset.fingerprint import input_fingerprint, shipped_assets, version_id, with_trust
from hsa.dataset.generate import generate
from hsa.example import EPISODES_PATH
from hsa.files.assets import templates_dir

ROOT = Path(__file__).resolve().parent.parent
LLM = "skill_content_llm_paraphrase"


def _recipe(**options) -> Recipe:
    return Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": "versions",
            "seed": 5,
            "variants_per_episode": 1,
            "keep_original": False,
            "pipeline": [{"tool_order_permutation": {}}, {LLM: options}],
        }
    )


@pytest.fixture
def small_example(tmp_path) -> tuple[Path, Path]:
    """Two episodes of the example beside a copy of its harness: (episodes, harness)."""
    harness = shutil.copytree(EPISODES_PATH.parent / "harness", tmp_path / "harness")
    episodes = tmp_path / "episodes.jsonl"
    lines = EPISODES_PATH.read_text(encoding="utf-8").splitlines(keepends=True)[:2]
    episodes.write_text("".join(lines), encoding="utf-8")
    return episodes, harness


def _version(recipe: Recipe, episodes: Path, harness: Path, trust_hooks: bool = True) -> str:
    """The version id exactly as generate computes it (checked against generate below)."""
    return version_id(
        recipe.version_dict(),
        with_trust(input_fingerprint(episodes, harness), trust_hooks),
        hsa.__version__,
        recipe.transform_versions(),
        "train",
    )


SHIPPED_TEMPLATES = sorted(
    p.relative_to(templates_dir()).as_posix() for p in templates_dir().rglob("*") if p.is_file()
)


def test_the_templates_shipped_are_the_layouts_and_the_card():
    assert {"layouts/markdown.j2", "cards/dataset_card.md.j2"} <= set(SHIPPED_TEMPLATES)


@pytest.mark.parametrize("template", SHIPPED_TEMPLATES)
def test_changing_a_shipped_template_changes_the_version(
    template, small_example, tmp_path, monkeypatch
):
    episodes, harness = small_example
    recipe = load_recipe("hat-train")
    original = _version(recipe, episodes, harness)
    # The templates copied to where an installed wheel keeps them, and found there: the same
    # bytes in another place give the same version (content counts, not where it lives).
    package = tmp_path / "site" / "hsa"
    shutil.copytree(templates_dir(), package / "_assets" / "templates")
    monkeypatch.setattr(assets, "_PACKAGE", package)
    assert templates_dir() == package / "_assets" / "templates"
    assert _version(recipe, episodes, harness) == original
    path = templates_dir() / template
    path.write_bytes(path.read_bytes() + b"\n")
    assert _version(recipe, episodes, harness) != original


def test_a_harness_own_layout_changes_the_version(small_example):
    episodes, harness = small_example
    recipe = load_recipe("hat-train")
    (harness / "layouts").mkdir()
    layout = harness / "layouts" / "mine.j2"
    layout.write_text("{% for s in sections %}{{ s.title }}\n{% endfor %}", encoding="utf-8")
    before = _version(recipe, episodes, harness)
    layout.write_text("{% for s in sections %}## {{ s.title }}\n{% endfor %}", encoding="utf-8")
    assert _version(recipe, episodes, harness) != before


@pytest.mark.parametrize(
    "break_it",
    [
        lambda h: (h / "skills" / "new-skill").mkdir(),  # a skill folder with no SKILL.md
        lambda h: (h / "tools" / "gone.json").symlink_to(h / "no-such.json"),  # leads nowhere
        lambda h: (
            (h / "tools" / "a.json").symlink_to(h / "tools" / "b.json"),
            (h / "tools" / "b.json").symlink_to(h / "tools" / "a.json"),
        ),
    ],
    ids=["empty-skill-folder", "dangling-link", "link-loop"],
)
def test_a_harness_that_no_longer_loads_is_another_version(small_example, break_it):
    """Only files were hashed: a harness broken by an empty folder or a bad link kept the id of
    the version made before, so generate reported that version as already made."""
    episodes, harness = small_example
    recipe = load_recipe("hat-train")
    before = _version(recipe, episodes, harness)
    break_it(harness)
    assert _version(recipe, episodes, harness) != before


def test_generate_names_its_version_by_the_same_rule_and_records_the_assets(
    small_example, tmp_path
):
    episodes, harness = small_example
    recipe = _recipe()
    made = generate(recipe, episodes, tmp_path / "out", harness=harness, trust_hooks=True)
    assert made.path.name == _version(recipe, episodes, harness)
    assert made.manifest["assets"] == shipped_assets()
    # The manifest keeps the recipe as it ran, row-neutral options included.
    assert made.manifest["recipe"] == recipe.to_dict()


def test_the_llm_paraphrase_declares_how_it_reaches_the_endpoint_row_neutral():
    cls = registered()[LLM]
    assert set(cls.row_neutral) == {"api_key_env", "timeout_s", "cache_dir"}


@pytest.mark.parametrize(
    "option, value",
    [
        ("cache_dir", "/elsewhere/cache"),
        ("timeout_s", 5.0),
        ("api_key_env", "MY_KEY"),
        ("cache_dir", ""),
    ],
)
def test_a_row_neutral_option_keeps_the_version_and_its_rows(
    option, value, small_example, tmp_path
):
    episodes, harness = small_example
    first = generate(_recipe(), episodes, tmp_path / "out", harness=harness, trust_hooks=True)
    again = generate(
        _recipe(**{option: value}), episodes, tmp_path / "out", harness=harness, trust_hooks=True
    )
    assert again.reused and again.path == first.path


@pytest.mark.parametrize(
    "option, value",
    [
        ("temperature", 0.2),
        ("samples", 2),
        ("model", "m"),
        ("base_url", "http://127.0.0.1:9/v1"),
        ("split", "heldout"),
        ("fraction", 0.5),
        ("p", 0.5),
    ],
)
def test_an_option_that_can_change_rows_changes_the_version(option, value, small_example):
    episodes, harness = small_example
    assert _version(_recipe(**{option: value}), episodes, harness) != _version(
        _recipe(), episodes, harness
    )


def test_version_dict_leaves_out_exactly_the_declared_options():
    for name, cls in registered().items():
        transform = cls()
        kept = set(transform.version_options())
        assert kept == set(cls.options()) - set(cls.row_neutral), name


def test_the_package_version_is_written_once():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "hsa/__init__.py"
    from hatchling.metadata.core import ProjectMetadata
    from hatchling.plugin.manager import PluginManager

    assert ProjectMetadata(str(ROOT), PluginManager()).version == hsa.__version__


def test_hidden_entries_of_a_harness_folder_are_no_part_of_its_version(small_example, tmp_path):
    """A git tag, a .DS_Store or an editor's swap file is no harness content: it made another
    version on a rerun, and `hsa verify` called the unchanged harness another one."""
    from hsa.dataset.audit import audit_version
    from hsa.errors import HsaError

    episodes, harness = small_example
    recipe = load_recipe("tools-basic")
    first = generate(recipe, episodes, tmp_path / "out", harness=harness)
    (harness / ".git" / "refs").mkdir(parents=True)
    (harness / ".git" / "refs" / "v1").write_text("0123abcd\n")
    (harness / "tools" / ".DS_Store").write_bytes(b"\0\1")
    (harness / "skills" / ".cache").mkdir()  # a hidden folder is no skill without SKILL.md
    assert audit_version(first.path, trust_hooks=True).ok
    again = generate(recipe, episodes, tmp_path / "out", harness=harness)
    assert again.reused and again.path == first.path
    skill = sorted((harness / "skills").glob("*/SKILL.md"))[0]
    skill.write_text(skill.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    assert generate(recipe, episodes, tmp_path / "out", harness=harness).path != first.path
    with pytest.raises(HsaError, match="--out lies inside --harness"):
        generate(recipe, episodes, harness / "out", harness=harness)
