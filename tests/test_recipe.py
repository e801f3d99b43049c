"""Recipes: errors before any work, compositions, seeded randomness, plugins, failing transforms."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from hsa.augment.compose import Sequence, TransformNode
from hsa.augment.lineage import Step, replay
from hsa.augment.recipe import Recipe, RecipeError, load_recipe, shipped_recipes
from hsa.augment.rng import derive_seed
from hsa.augment.transform import Transform
from hsa.augment.variant import Variant, VariantReject
from hsa.dataset.pipeline import augment
from hsa.errors import HsaError
from hsa.model.episode import Episode
from tests.conftest import HISTORY_TOOL, PRICE_TOOL

ENVELOPE = {
    "recipe_version": 1,
    "name": "r",
    "seed": 1,
    "variants_per_episode": 2,
    "keep_original": True,
}


def episode(row_id="e1") -> Episode:
    return Episode.from_dict(
        {
            "id": row_id,
            "harness": {"name": "h", "tools": [PRICE_TOOL, HISTORY_TOOL]},
            "messages": [
                {"role": "user", "content": "Use get_price for link 1, not get_price_history."}
            ],
            "gold": {"calls": [{"name": "get_price", "arguments": {"link": [1]}}]},
        }
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"pipeline": [{"no_such": {}}]},
            r"pipeline\[0\]\.no_such: unknown transform 'no_such'; "
            r"registered: .*identity",
        ),
        (
            {"pipeline": [{"tool_name_mask": {"fraction": "all"}}]},
            "option 'fraction' must be float",
        ),
        (
            {"pipeline": [{"tool_name_mask": {"colour": 1}}]},
            r"unknown option\(s\) \['colour'\]; tool_name_mask takes: p \(default 1.0\), fraction",
        ),
        ({"pipeline": [{"identity": {"p": 1.5}}]}, r"p must be in \[0, 1\]"),
        (
            {"pipeline": [{"one_of": {"pipeline": []}}]},
            r"pipeline\[0\]\.one_of\.pipeline: must be a non-empty",
        ),
        (
            {
                "pipeline": [
                    {"one_of": {"weights": [1], "pipeline": [{"identity": {}}, {"identity": {}}]}}
                ]
            },
            "weights must be 2 non-negative numbers",
        ),
        (
            {"pipeline": [{"some_of": {"n": 3, "pipeline": [{"identity": {}}]}}]},
            "n must be an integer from 0 to 1",
        ),
        (
            {"pipeline": [{"maybe": {"p": -0.1, "pipeline": [{"identity": {}}]}}]},
            r"p must be a probability",
        ),
        ({"seed": "42"}, "seed must be an integer, got '42'"),
        ({"seed": True}, "seed must be an integer"),
        ({"recipe_version": 2}, "recipe_version must be 1"),
        ({"variants_per_episode": 0}, "variants_per_episode must be an integer from 1 to 1000"),
        # Every variant of an episode is held in memory at once: a run size with a ceiling.
        ({"variants_per_episode": 1_000_000_000}, "variants_per_episode must be an integer from 1"),
        # The name is the output folder: one safe path component, so nothing lands outside --out.
        ({"name": "../../escape"}, "name must be 1-100 letters, digits"),
        ({"name": "a/b"}, "name must be 1-100 letters"),
        ({"name": ".hidden"}, "name must be 1-100 letters"),
        ({"name": "x" * 101}, "name must be 1-100 letters"),
        ({"pipeline": [{"identity": {}, "tool_name_mask": {}}]}, "one-key mapping"),
        ({"extra": 1}, r"unknown keys \['extra'\]"),
        ({"seed": 2**64}, r"seed must fit in 64 bits"),
    ],
)
def test_bad_recipe_is_refused_before_work(change, message):
    data = {**ENVELOPE, "pipeline": [{"identity": {}}], **change}
    with pytest.raises(RecipeError, match=message):
        Recipe.from_dict(data)


def test_a_key_written_twice_is_refused_not_overwritten(tmp_path):
    """PyYAML keeps the last of two equal keys in silence: a recipe's seed would be its second."""
    path = tmp_path / "r.yaml"
    text = load_recipe("tools-basic").to_yaml()
    path.write_text(text.replace("seed:", "seed: 1\nseed:", 1), encoding="utf-8")
    line = text[: text.index("seed:")].count("\n") + 2
    with pytest.raises(RecipeError, match="key 'seed' is written twice") as info:
        load_recipe(path)
    assert info.value.line == line
    # a merge key is no key written twice, and a key over a merged one overrides it
    from hsa.files.textfile import load_yaml

    merged = load_yaml("base: &b {seed: 1, x: 2}\nother:\n  <<: *b\n  seed: 3\n")
    assert merged["other"] == {"seed": 3, "x": 2}
    with pytest.raises(Exception, match="key '<<' is written twice"):
        load_yaml("base: &b {seed: 1}\nother:\n  <<: *b\n  <<: *b\n")


def test_a_recipe_file_may_start_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + load_recipe("tools-basic").to_yaml().encode())
    assert load_recipe(path) == load_recipe("tools-basic")
    path.write_bytes(b"name: caf\xe9\n")  # Latin-1, not UTF-8: a clear error, not a traceback
    with pytest.raises(
        RecipeError,
        match="cannot read the recipe: not UTF-8 text: invalid continuation byte at byte 9",
    ):
        load_recipe(path)


def test_recipe_yaml_round_trip_and_shipped_names(tmp_path):
    assert "tools-basic" in shipped_recipes()
    recipe = load_recipe("tools-basic")
    path = tmp_path / "r.yaml"
    path.write_text(recipe.to_yaml())
    assert load_recipe(path) == recipe
    with pytest.raises(RecipeError, match="shipped: .*tools-basic"):
        load_recipe("no-such-recipe")


def test_compositions_record_their_choices_and_replay():
    recipe = Recipe.from_dict(
        {
            **ENVELOPE,
            "variants_per_episode": 40,
            "pipeline": [
                {
                    "one_of": {
                        "weights": [1, 3],
                        "pipeline": [{"identity": {}}, {"tool_name_mask": {}}],
                    }
                },
                {
                    "some_of": {
                        "n": 1,
                        "pipeline": [{"tool_order_permutation": {}}, {"identity": {}}],
                    }
                },
                {"maybe": {"p": 0.5, "pipeline": [{"tool_order_permutation": {}}]}},
            ],
        }
    )
    original = episode()
    variants = [v for v in augment(recipe, [original]) if v.index > 0]
    assert all(isinstance(v, Variant) for v in variants)
    chosen = [
        next(s.params["chosen"] for s in v.lineage if s.transform == "one_of") for v in variants
    ]
    assert 0 < chosen.count(0) < chosen.count(1)  # weights 1:3, over 40 draws
    for v in variants:
        paths = [s.path for s in v.lineage]
        assert paths[0] == "0" and "1" in paths and "2" in paths
        assert replay(original, v.lineage) == (v.episode, v.mapping)


def test_rng_is_keyed_by_seed_episode_variant_and_path():
    base = derive_seed(1, "e", 1, "0")
    assert (
        len(
            {
                base,
                derive_seed(2, "e", 1, "0"),
                derive_seed(1, "f", 1, "0"),
                derive_seed(1, "e", 2, "0"),
                derive_seed(1, "e", 1, "1"),
            }
        )
        == 5
    )
    assert derive_seed(1, "e", 1, "0") == base


def test_replay_refuses_another_version():
    step = Step("tool_order_permutation", "0-old", "0", True, {"order": [1, 0]})
    with pytest.raises(HsaError, match="version 0-old; the installed version is 1"):
        replay(episode(), [step])


@dataclass(frozen=True)
class Explodes(Transform):
    """Fails on episodes whose id ends in 'x' (not registered: used directly)."""

    name = "explodes"
    version = "1"
    family = "test"

    def apply(self, ep, params):
        if ep.id.endswith("x"):
            raise ValueError("cannot handle this one")
        return ep


def test_a_failing_transform_rejects_one_episode_and_the_run_goes_on():
    recipe = Recipe(
        name="boom",
        seed=1,
        variants_per_episode=1,
        pipeline=Sequence([TransformNode(Explodes(), path="0")]),
    )
    out = list(augment(recipe, [episode("a"), episode("bx"), episode("c")]))
    assert [type(o).__name__ for o in out] == ["Variant", "VariantReject", "Variant"]
    reject = out[1]
    assert isinstance(reject, VariantReject) and reject.stage == "transform:explodes"
    assert "ValueError: cannot handle this one" in reject.reason


def test_duplicate_episode_ids_are_rejected():
    recipe = load_recipe("tools-basic")
    out = list(augment(recipe, [episode("a"), episode("a")]))
    assert sum(isinstance(o, Variant) for o in out) == 4
    assert out[-1].reason.startswith("duplicate episode id")


def test_third_party_transform_is_discovered_by_entry_point(tmp_path):
    """A package declaring an `hsa.transforms` entry point shows up in `hsa transforms`."""
    (tmp_path / "hsa_plugin_demo.py").write_text(
        textwrap.dedent('''
        from dataclasses import dataclass
        from hsa.augment.registry import register
        from hsa.augment.transform import Transform

        @register
        @dataclass(frozen=True)
        class Shout(Transform):
            """Upper-cases nothing; proves plugins load."""
            name = "plugin_shout"
            version = "3"
            family = "plugin"
            def apply(self, episode, params):
                return episode
    ''')
    )
    dist = tmp_path / "hsa_plugin_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hsa-plugin-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[hsa.transforms]\nshout = hsa_plugin_demo\n")
    hsa = Path(sys.executable).with_name("hsa")
    result = subprocess.run(
        [str(hsa), "transforms", "--json"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["plugin_shout"]["version"] == "3" and rows["plugin_shout"]["family"] == "plugin"
    assert rows["plugin_shout"]["options"] == {"p": 1.0}
    assert rows["plugin_shout"]["scope"] == "episode"  # undeclared: the safe default


def test_every_listed_transform_works_from_an_empty_recipe_entry(capsys):
    from hsa.cli import main

    assert main(["transforms", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    recipe = Recipe.from_dict({**ENVELOPE, "pipeline": [{r["name"]: {}} for r in rows]})
    assert yaml.safe_load(recipe.to_yaml())["pipeline"][0] == {rows[0]["name"]: rows[0]["options"]}


def test_a_family_that_fails_to_import_fails_every_lookup(monkeypatch):
    """A broken family module must not leave a silently partial registry behind."""
    import hsa.augment.registry as registry

    monkeypatch.setattr(registry, "_plugins_loaded", False)

    class BrokenFamily:
        name, value = "builtin", "hsa.transforms"

        def load(self):
            raise SyntaxError("a family module does not parse")

    monkeypatch.setattr(registry, "entry_points", lambda group: [BrokenFamily()])
    for _ in range(2):
        with pytest.raises(HsaError, match="does not parse"):
            registry.registered()
    monkeypatch.undo()
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    assert "identity" in registry.registered()
