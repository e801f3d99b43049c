"""Measure each transform family alone on each harness: the issue-level targets, per harness.

For every harness (the shipped example and the test harnesses of other domains) and every family,
with its train and its held-out options:

* kept: the share of variants that pass verification (the rest are rejects with a reason);
* changed: the share of rows, among those where the family's objects are visible, whose messages
  or tools the family changed (:func:`hsa.dataset.rows.visible_families`, the card's statistic);
* meaning: renames that give an identifier the meaning of another of its kind, counted twice:
  variants rejected for it (``verify:meaning_taken``) and an independent recount over kept rows;
* conventions: kept rows where the names of a kind the variant renamed do not share one naming
  convention, or the renamed names of all kinds do not share one.

``python -m tests.family_report`` prints the table and a few renamed tool lists; the tests in
tests/test_family_coverage.py assert the targets from the same numbers.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field
from pathlib import Path

from hsa.augment.recipe import Recipe
from hsa.augment.registry import registered
from hsa.augment.variant import Variant
from hsa.dataset.pipeline import augment
from hsa.dataset.rows import visible_families
from hsa.example import EPISODES_PATH
from hsa.model.episode import Episode, read_episodes
from hsa.text.names import meaning, shared_conventions
from hsa.verify import identifiers_by_kind

HERE = Path(__file__).resolve().parent
HARNESSES = {
    "example (live commerce)": EPISODES_PATH,
    "airline": HERE / "harnesses" / "airline" / "episodes.jsonl",
    "coding": HERE / "harnesses" / "coding" / "episodes.jsonl",
    "finance": HERE / "harnesses" / "finance" / "episodes.jsonl",
}
FAMILIES = ("skill_ids", "skill_content", "tool_schema", "prompt_structure", "hooks")
SPLITS = ("train", "heldout")
# Transforms that need a service this machine does not run (an LLM endpoint) are covered by
# their own tests; the family recipe uses the rule-based members.
NEEDS_SERVICE = {"skill_content_llm_paraphrase"}


def family_recipe(family: str, split: str, variants: int = 1, seed: int = 11) -> Recipe:
    """Every transform of ``family`` (but those that need a service), in registry order."""
    steps = []
    for name, cls in registered().items():
        if cls.family != family or name in NEEDS_SERVICE:
            continue
        steps.append({name: {"split": split} if "split" in cls.options() else {}})
    return Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": f"{family}-{split}",
            "seed": seed,
            "variants_per_episode": variants,
            "keep_original": False,
            "pipeline": steps,
        }
    )


def visible(family: str, episode: Episode) -> bool:
    """Whether the family's objects are in what the model reads of this episode."""
    harness = episode.harness
    if family == "skill_ids":
        return bool(harness.skills)  # listed in the prompt and in the loader's enum
    if family == "skill_content":  # a body is read only where a message loads it
        return any(
            call["function"]["name"] == harness.skill_loader
            for m in episode.messages
            for call in m.get("tool_calls") or ()
        )
    if family == "tool_schema":
        return bool(harness.tools)
    if family == "hooks":
        return bool(harness.hooks) and (
            "hooks" in harness.prompt.sections
            or any(str(m.get("name", "")).startswith("hook.") for m in episode.messages)
        )
    return True


def meaning_taken(original: Episode, variant: Variant) -> list[str]:
    """Renames of ``variant`` whose new name says what another identifier of its kind says (an
    identifier that already said the same, as ``item`` and ``items``, takes nothing)."""
    found = []
    for kind, identifiers in identifiers_by_kind(original.harness, variant.mapping).items():
        for old, news in identifiers.items():
            for new in news - {old}:
                if meaning(new) == meaning(old):
                    continue
                others = {
                    n
                    for other, names in identifiers.items()
                    if meaning(other) != meaning(old)
                    for n in names | {other}
                }
                if meaning(new) in {meaning(n) for n in others}:
                    found.append(f"{kind} {old} -> {new}")
    return found


def conventions_broken(variant: Variant) -> list[str]:
    """Kinds whose names do not share one convention after a rename, and renamed names of all
    kinds that do not share one (empty: the variant uses one convention)."""
    harness = variant.episode.harness
    renamed = variant.mapping.renamed()
    names = {
        "skills": harness.skill_ids,
        "tools": harness.tool_names,
        "hooks": [h.name for h in harness.hooks],
        "parameters": [p for t in harness.tools for p in t.properties],
    }
    broken = [
        kind
        for kind, kind_names in names.items()
        if renamed[kind] and not shared_conventions(kind_names)
    ]
    all_new = [new for kind in renamed.values() for new in kind.values()]
    if all_new and not shared_conventions(all_new):
        broken.append("across kinds")
    return broken


@dataclass
class Measure:
    rows: int = 0
    kept: int = 0
    applicable: int = 0
    changed: int = 0
    meaning_rejects: int = 0
    meaning_kept: int = 0
    convention_breaks: int = 0
    # Conversations refused because they ask for what a drawn distractor tool does: the draw is
    # the harness variant's, so such a row has no task-preserving variant (not a failed check).
    refused: int = 0
    rejects: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def kept_share(self) -> float:
        """Kept among the variants that were not refused (see ``refused``)."""
        judged = self.rows - self.refused
        return self.kept / judged if judged else 1.0

    @property
    def refused_share(self) -> float:
        return self.refused / self.rows if self.rows else 0.0

    @property
    def changed_share(self) -> float | None:
        return self.changed / self.applicable if self.applicable else None


def measure(episodes: list[Episode], family: str, split: str, variants: int = 1) -> Measure:
    """Run ``family`` alone over ``episodes`` and count (see the module docstring)."""
    out = Measure()
    originals = {e.id: e for e in episodes}
    for item in augment(family_recipe(family, split, variants), episodes):
        out.rows += 1
        if not isinstance(item, Variant):
            if "is about what the request asks" in getattr(item, "reason", ""):
                out.refused += 1
                continue
            out.rejects.append(str(item))
            out.meaning_rejects += getattr(item, "stage", "") == "verify:meaning_taken"
            continue
        out.kept += 1
        original = originals[item.source_id]
        out.meaning_kept += len(meaning_taken(original, item))
        out.convention_breaks += bool(conventions_broken(item))
        if visible(family, original):
            out.applicable += 1
            if family in visible_families(item):
                out.changed += 1
            else:
                out.unchanged.append(f"{item.source_id}#{item.index}")
    return out


def harness_episodes(path: Path) -> list[Episode]:
    return [e for e in read_episodes(path, trust_hooks=True) if isinstance(e, Episode)]


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", type=int, default=4, help="variants per episode")
    parser.add_argument(
        "--samples", type=int, default=2, help="renamed tool lists shown per harness and split"
    )
    args = parser.parse_args(argv)
    print(
        "| harness | family | split | rows | kept | changed (visible) | meaning taken "
        "(rejected / kept) | rows with >1 convention |"
    )
    print("|---|---|---|---|---|---|---|---|")
    samples: dict[str, list[tuple[Episode, Variant, str]]] = {}
    for harness, path in HARNESSES.items():
        episodes = harness_episodes(path)
        for family in FAMILIES:
            for split in SPLITS:
                m = measure(episodes, family, split, args.variants)
                changed = (
                    f"{m.changed}/{m.applicable} = {_share(m.changed_share)}"
                    if m.applicable
                    else "n/a (not visible)"
                )
                print(
                    f"| {harness} | {family} | {split} | {m.rows} | {_share(m.kept_share)} | "
                    f"{changed} | {m.meaning_rejects} / {m.meaning_kept} | "
                    f"{m.convention_breaks} |"
                )
        for split in SPLITS:  # renamed tool lists, as tool_name_paraphrase alone writes them
            alone = Recipe.from_dict(
                {
                    "recipe_version": 1,
                    "name": "tools",
                    "seed": 11,
                    "variants_per_episode": 1,
                    "keep_original": False,
                    "pipeline": [{"tool_name_paraphrase": {"split": split}}],
                }
            )
            variants = [v for v in augment(alone, episodes) if isinstance(v, Variant)]
            originals = {e.id: e for e in episodes}
            samples.setdefault(harness, []).extend(
                (originals[v.source_id], v, split)
                for v in random.Random(0).sample(variants, min(args.samples, len(variants)))
            )
    print()
    for harness, chosen in samples.items():
        print(f"{harness}:")
        for original, variant, split in chosen:
            before = list(original.harness.tool_names)
            after = [variant.mapping.tool(name) for name in before]
            print(
                f"  [{split}, {variant.episode.harness.prompt.options['naming']}] "
                + ", ".join(f"{a} -> {b}" for a, b in zip(before, after))
            )


if __name__ == "__main__":
    main()
