"""Issue-level promises of the five families on real data: each family alone, with its train and
its held-out options, over every BFCL dev file and the example's episodes.

* at least 99% of variants pass verification (the rest are rejects with a reason);
* at least 90% of variants differ from the original in the family's part of the harness,
  counted over the episodes where the family can apply (skills and hooks only exist in the
  example; BFCL harnesses have tools only).
"""

from __future__ import annotations

import json
from functools import lru_cache

import pytest

from hsa.example import load_example_episodes
from hsa.importers.bfcl import import_bfcl
from hsa.pipeline import augment
from hsa.recipe import Recipe
from hsa.registry import registered
from hsa.render import render_messages
from hsa.variant import Variant
from tests.conftest import BFCL_DIR, BFCL_FILES

pytestmark = pytest.mark.usefixtures("bfcl_data")

FAMILIES = ("skill_ids", "skill_content", "tool_schema", "prompt_structure", "hooks")
# Transforms that need a service this machine does not run (an LLM endpoint) are covered by
# their own tests; the family recipe uses the rule-based members.
NEEDS_SERVICE = {"skill_content_llm_paraphrase"}


@lru_cache(maxsize=None)
def datasets():
    out = {name.removeprefix("BFCL_v4_").removesuffix(".json"): import_bfcl(BFCL_DIR / name).episodes
           for name in BFCL_FILES}
    out["example"] = load_example_episodes()
    return out


def family_recipe(family: str, split: str) -> Recipe:
    steps = []
    for name, cls in registered().items():
        if cls.family != family or name in NEEDS_SERVICE:
            continue
        steps.append({name: {"split": split} if "split" in cls.options() else {}})
    return Recipe.from_dict({"recipe_version": 1, "name": f"{family}-{split}", "seed": 11,
                             "variants_per_episode": 1, "keep_original": False, "pipeline": steps})


def part(family: str, episode):
    """The family's part of what the model sees."""
    harness = episode.harness
    if family == "skill_ids":
        return harness.skill_ids
    if family == "skill_content":
        return tuple(s.content for s in harness.skills)
    if family == "tool_schema":
        return (json.dumps([t.to_openai() for t in harness.tools]),
                harness.prompt.options.get("tool_shape"))
    if family == "prompt_structure":
        return json.dumps(render_messages(episode)[:2], ensure_ascii=False)
    return (tuple(h.to_dict().__repr__() for h in harness.hooks),
            tuple(json.dumps(m) for m in episode.messages if str(m.get("name", "")).startswith("hook.")))


def applies(family: str, episode) -> bool:
    harness = episode.harness
    if family in ("skill_ids", "skill_content"):
        return bool(harness.skills)
    if family == "hooks":
        return bool(harness.hooks)
    if family == "tool_schema":
        return bool(harness.tools)
    return True


@pytest.mark.parametrize("split", ["train", "heldout"])
@pytest.mark.parametrize("family", FAMILIES)
def test_family_preserves_the_task_and_changes_its_part(family, split):
    recipe = family_recipe(family, split)
    assert recipe.pipeline.children, f"no transforms registered for family {family}"
    total = passed = applicable = differing = 0
    rejects = []
    for name, episodes in datasets().items():
        originals = {e.id: e for e in episodes}
        for item in augment(recipe, episodes):
            total += 1
            if not isinstance(item, Variant):
                rejects.append(f"{name}: {item}")
                continue
            passed += 1
            original = originals[item.source_id]
            if applies(family, original):
                applicable += 1
                differing += part(family, item.episode) != part(family, original)
    assert passed / total >= 0.99, rejects[:10]
    assert applicable > 0 and differing / applicable >= 0.90, (differing, applicable)
