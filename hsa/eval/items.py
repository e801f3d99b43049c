"""Evaluation items: every judged turn of the original episodes and of their held-out variants.

An item is one gold turn of one episode under one harness: the prompt the model reads
(``messages[:at]`` rendered with that harness by the one renderer, as the datasets and the runtime
render it), the tools on offer (the harness's tools and its skill loader), the gold turn, and the
harness the scorer judges it under. Items come in *sets*:

* ``original``: the source episodes, untouched;
* one set per dataset version of variants. From ``--episodes`` and a recipe, ``all`` is the recipe
  with every family, and each family gets the recipe restricted to its own nodes
  (:func:`family_recipe`), so the report shows each family alone and all together. From
  ``--dataset`` the set is named after the version's recipe.

Variants are made by ``hsa generate`` (the same pipeline, verification and writer) and rebuilt
from each row's lineage (:func:`hsa.augment.lineage.replay`): the scorer needs the variant's harness, not
only its rendered rows. A variant that no transform changed (every node of a family set can miss
its ``p``) would count the original twice; it is left out and counted as ``unchanged``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow.parquet as pq

from hsa.augment.lineage import fired_steps, replay
from hsa.augment.recipe import Recipe
from hsa.augment.registry import families as transform_families
from hsa.augment.rng import derive_seed
from hsa.augment.step import steps_from
from hsa.dataset.audit import checked_input
from hsa.dataset.writer import read_manifest, version_problems
from hsa.errors import HsaError
from hsa.files.jsonl import input_file
from hsa.model.episode import Episode, distinct_episodes
from hsa.model.gold import TurnGold
from hsa.model.harness import Harness, load_harness
from hsa.model.scorer import episode_category
from hsa.render import render_conversation

ORIGINAL = "original"
ALL = "all"
CORE = "core"  # the family of identity and the compositions' no-ops: never a harness change


@dataclass(frozen=True, slots=True)
class Item:
    """One judged turn under one harness, and what identifies it across reports."""

    key: str  # "<set>/<source id>[#<variant>]@<at>", unique in a run
    set: str
    source_id: str
    variant: int | None  # None for the original
    at: int
    category: str
    families: tuple[str, ...]  # families whose transforms changed this variant
    messages: tuple[dict, ...]  # the prompt, OpenAI chat format, system prompt first
    tools: tuple[dict, ...]
    gold: TurnGold
    harness: Harness = field(repr=False)
    conversation: tuple[dict, ...] = field(repr=False, default=())  # messages[:at], unrendered
    fingerprint: str = ""  # sha256 of (prompt, tools, gold): the same item in any report
    # "<source harness fingerprint>:<slot>" of the recipe's pool (the row's hsa_harness_variant);
    # None for the originals and for rows made without a pool
    harness_variant: str | None = None


def fingerprint(messages: Iterable[dict], tools: Iterable[dict], gold: TurnGold) -> str:
    data = {"messages": list(messages), "tools": list(tools), "gold": gold.to_dict()}
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()


def item_key(set_name: str, source_id: str, variant: int | None, at: int) -> str:
    row = source_id if variant is None else f"{source_id}#{variant}"
    return f"{set_name}/{row}@{at}"


def episode_items(
    episode: Episode,
    set_name: str,
    *,
    source_id: str | None = None,
    variant: int | None = None,
    families: tuple[str, ...] = (),
    harness_variant: str | None = None,
) -> list[Item]:
    """The items of every gold turn of ``episode`` (an original, or a variant of ``source_id``)."""
    source_id = episode.id if source_id is None else source_id
    tools = tuple(episode.harness.openai_tools())
    out = []
    for turn in episode.gold.turns:
        conversation = tuple(episode.messages[: turn.at])
        messages = tuple(render_conversation(episode.harness, list(conversation)))
        out.append(
            Item(
                key=item_key(set_name, source_id, variant, turn.at),
                set=set_name,
                source_id=source_id,
                variant=variant,
                at=turn.at,
                category=episode_category(episode),
                families=families,
                messages=messages,
                tools=tools,
                gold=turn,
                harness=episode.harness,
                conversation=conversation,
                fingerprint=fingerprint(messages, tools, turn),
                harness_variant=harness_variant,
            )
        )
    return out


# ---- variant sets ---------------------------------------------------------------------------


@dataclass(frozen=True)
class VariantSet:
    """A dataset version whose rows are evaluated as one set; ``family`` is the family it
    isolates (None: rows may change several)."""

    name: str
    version_dir: Path
    family: str | None = None

    def to_dict(self) -> dict:
        manifest = read_manifest(self.version_dir)
        return {
            "name": self.name,
            "family": self.family,
            "version_dir": str(self.version_dir),
            "recipe": manifest["name"],
            "version": manifest["version"],
            "rows": manifest["counts"]["rows"],
        }


def _node_families(node, known: dict[str, str]) -> set[str]:
    return {known.get(t.transform.name, "?") for t in node.transforms()} - {CORE}


def changing_transforms(lineage: Iterable[dict]) -> list[str]:
    """The transforms of a lineage (its steps as dicts) that fired and are not of the core
    family (identity): what changed the harness."""
    known = transform_families()
    fired = fired_steps(steps_from(lineage))
    return [s.transform for s in fired if known.get(s.transform) != CORE]


def recipe_families(recipe: Recipe) -> list[str]:
    """The transform families a recipe's nodes use, sorted."""
    known = transform_families()
    return sorted(set().union(*(_node_families(n, known) for n in recipe.pipeline.children)))


def family_recipe(recipe: Recipe, family: str) -> Recipe:
    """``recipe`` keeping only its top-level nodes whose transforms all belong to ``family``
    (same options, seed and variant count): the family alone, with the recipe's own held-out
    options. A node that mixes families is left out of every family recipe."""
    known = transform_families()
    kept = [n.to_dict() for n in recipe.pipeline.children if _node_families(n, known) == {family}]
    if not kept:
        raise HsaError(
            f"recipe {recipe.name!r} has no node of family {family!r}; its families: "
            f"{', '.join(recipe_families(recipe)) or 'none'}"
        )
    return recipe.with_pipeline(
        kept, name=f"{recipe.name}.{family}", source=f"{recipe.name} restricted to {family}"
    )


def with_variants(recipe: Recipe, variants: int | None) -> Recipe:
    """``recipe`` making ``variants`` variants per episode (its own count when None), never the
    untouched original (the original set is evaluated from the source episodes)."""
    data = recipe.to_dict()
    if variants is not None:
        if variants < 1:
            raise HsaError(f"--variants must be at least 1, got {variants}")
        data["variants_per_episode"] = variants
    data["keep_original"] = False
    return Recipe.from_dict(data, source=recipe.name)


def make_variant_sets(
    recipe: Recipe,
    episodes: str | os.PathLike,
    datasets_dir: Path,
    *,
    families: Iterable[str] | None,
    harness: str | os.PathLike | None,
    trust_hooks: bool,
    workers: int = 1,
    on_version: Callable[[str, object], None] | None = None,
) -> list[VariantSet]:
    """Generate (or find: same inputs, same version) ``all`` and each family's dataset version
    with ``hsa generate``; ``families`` None means every family of the recipe."""
    from hsa.dataset.generate import generate

    chosen = recipe_families(recipe) if families is None else list(families)
    plans = [(ALL, recipe, None)] + [(f, family_recipe(recipe, f), f) for f in chosen]
    sets = []
    for name, plan, family in plans:
        result = generate(
            plan, episodes, datasets_dir, harness=harness, trust_hooks=trust_hooks, workers=workers
        )
        if on_version:
            on_version(name, result)
        sets.append(VariantSet(name, result.path, family))
    return sets


def dataset_sets(version_dirs: Iterable[str | os.PathLike]) -> list[VariantSet]:
    """Variant sets for ``--dataset`` versions, named after their recipes."""
    sets, names = [], set()
    for folder in version_dirs:
        manifest = read_manifest(Path(folder))
        # Its rows are rebuilt from their lineage, but a version whose files are not the ones
        # its manifest lists is damaged: say so rather than report on it.
        damaged = version_problems(Path(folder), manifest)
        if damaged:
            raise HsaError(
                f"this version's files do not match its manifest ({damaged[0]}); run hsa verify",
                file=str(folder),
            )
        name = manifest["name"]
        if name in names or name == ORIGINAL:
            name = f"{name}-{manifest['version']}"
        names.add(name)
        sets.append(VariantSet(name, Path(folder)))
    return sets


# ---- sources and selection ------------------------------------------------------------------


@dataclass
class Sources:
    """The source episodes in file order, and the lines that are not among them."""

    episodes: dict[str, Episode]
    lines: int = 0  # non-blank lines of the file
    rejected: int = 0  # lines that did not load or repeat an id
    first_reject: str | None = None  # "FILE:LINE id=ID FIELD: why", of the first rejected line

    def inputs(self) -> dict:
        """The report's account of the lines left out (see :func:`hsa.eval.report.rejects_note`)."""
        return {
            "source_lines": self.lines,
            "source_rejects": self.rejected,
            "source_first_reject": self.first_reject,
        }


def load_sources(path: str | os.PathLike, *, harness: Harness | None, trust_hooks: bool) -> Sources:
    """Episodes that load, first of each id (as ``hsa generate`` keeps them)."""
    sources = Sources({})
    for item in distinct_episodes(path, harness=harness, trust_hooks=trust_hooks):
        sources.lines += 1
        if isinstance(item, Episode):
            sources.episodes[item.id] = item
            continue
        sources.rejected += 1
        if sources.first_reject is None:
            sources.first_reject = str(item)
    return sources


def version_sources(
    version_dir: Path,
    *,
    episodes: str | os.PathLike | None,
    harness: str | os.PathLike | None,
    trust_hooks: bool,
) -> tuple[Path, Sources]:
    """The source episodes of a version, after checking they are the ones it was made from."""
    path, default = checked_input(
        read_manifest(version_dir), episodes, trust_hooks, harness=harness
    )
    return path, load_sources(path, harness=default, trust_hooks=trust_hooks)


def default_harness(folder: str | os.PathLike | None, trust_hooks: bool) -> Harness | None:
    return None if folder is None else load_harness(folder, trust_hooks=trust_hooks)


def select(ids: list[str], limit: int | None, seed: int) -> list[str]:
    """``limit`` episode ids chosen by a hash of (seed, id), kept in file order: a deterministic
    spread over the file (episode files are often grouped by category), not its first lines."""
    if limit is None or limit >= len(ids):
        return list(ids)
    if limit < 1:
        raise HsaError(f"--limit must be at least 1, got {limit}")
    ranked = sorted(ids, key=lambda i: (derive_seed(seed, i, 0, "eval-limit"), i))
    chosen = set(ranked[:limit])
    return [i for i in ids if i in chosen]


# ---- building every item --------------------------------------------------------------------


@dataclass
class ItemSet:
    """Every item of a run, with the counts that account for what was left out."""

    items: list[Item]
    episodes: list[str]  # evaluated source ids, file order
    unchanged: dict[str, int] = field(default_factory=dict)  # set -> rows no family changed
    missing: dict[str, int] = field(default_factory=dict)  # set -> sources without a row

    def sha256(self) -> str:
        """One hash of every item's key and fingerprint: equal runs judge equal items."""
        digest = hashlib.sha256()
        for item in sorted(self.items, key=lambda i: i.key):
            digest.update(f"{item.key}\t{item.fingerprint}\n".encode())
        return digest.hexdigest()


def _rows(version_dir: Path, wanted: set[str]) -> Iterator[dict]:
    manifest = read_manifest(version_dir)
    columns = ["hsa_source_id", "hsa_variant", "hsa_lineage", "hsa_families"]
    for shard in manifest["shards"]:
        file = pq.ParquetFile(version_dir / shard["path"])
        # Versions made before rows named their harness variant have no such column.
        pooled = "hsa_harness_variant" in file.schema_arrow.names
        for batch in file.iter_batches(
            batch_size=1024, columns=columns + ["hsa_harness_variant"] * pooled
        ):
            for row in batch.to_pylist():
                if row["hsa_source_id"] in wanted:
                    yield row


def build_items(sources: dict[str, Episode], chosen: list[str], sets: list[VariantSet]) -> ItemSet:
    """The items of the chosen originals and of every variant of theirs in ``sets``."""
    items: list[Item] = []
    for source_id in chosen:
        items.extend(episode_items(sources[source_id], ORIGINAL))
    result = ItemSet(items, chosen)
    wanted = set(chosen)
    for variant_set in sets:
        seen: set[str] = set()
        unchanged = 0
        for row in _rows(variant_set.version_dir, wanted):
            fired = tuple(f for f in row["hsa_families"] if f != CORE)
            if (variant_set.family not in fired) if variant_set.family else not fired:
                unchanged += 1
                continue
            source = sources[row["hsa_source_id"]]
            lineage = steps_from(row["hsa_lineage"])
            try:
                episode, _ = replay(source, lineage)
            except HsaError as exc:
                raise HsaError(
                    f"row {source.id}#{row['hsa_variant']} cannot be rebuilt from its "
                    f"lineage ({exc}); run hsa verify on the version",
                    file=str(variant_set.version_dir),
                ) from None
            seen.add(source.id)
            items.extend(
                episode_items(
                    episode,
                    variant_set.name,
                    source_id=source.id,
                    variant=row["hsa_variant"],
                    families=fired,
                    harness_variant=row.get("hsa_harness_variant"),
                )
            )
        result.unchanged[variant_set.name] = unchanged
        result.missing[variant_set.name] = len(wanted - seen)
    return result


# ---- what a run evaluates -------------------------------------------------------------------


@dataclass
class Plan:
    """The items of a run, the variant sets they come from, and a description for the report."""

    itemset: ItemSet
    sets: list[VariantSet]
    inputs: dict


def plan_from_episodes(
    episodes: str | os.PathLike,
    recipe: Recipe,
    datasets_dir: Path,
    *,
    variants: int | None,
    families: Iterable[str] | None,
    limit: int | None,
    seed: int,
    harness: str | os.PathLike | None,
    trust_hooks: bool,
    workers: int = 1,
    on_version=None,
) -> Plan:
    """Generate the variant sets of ``recipe`` over ``episodes`` and build every item."""
    path = input_file(episodes, "episodes file")
    recipe = with_variants(recipe, variants)
    sets = make_variant_sets(
        recipe,
        path,
        datasets_dir,
        families=families,
        harness=harness,
        trust_hooks=trust_hooks,
        workers=workers,
        on_version=on_version,
    )
    sources = load_sources(
        path, harness=default_harness(harness, trust_hooks), trust_hooks=trust_hooks
    )
    chosen = select(list(sources.episodes), limit, seed)
    inputs = {
        "episodes": str(path),
        "recipe": recipe.name,
        "variants": recipe.variants_per_episode,
        "families": [s.family for s in sets if s.family],
        "limit": limit,
        "seed": seed,
        **sources.inputs(),
    }
    return Plan(build_items(sources.episodes, chosen, sets), sets, inputs)


def plan_from_datasets(
    version_dirs: list[str | os.PathLike],
    *,
    episodes: str | os.PathLike | None,
    harness: str | os.PathLike | None = None,
    limit: int | None,
    seed: int,
    trust_hooks: bool,
) -> Plan:
    """Every item of existing dataset versions (all made from one episodes file)."""
    sets = dataset_sets(version_dirs)
    path, sources = version_sources(
        sets[0].version_dir, episodes=episodes, harness=harness, trust_hooks=trust_hooks
    )
    for other in sets[1:]:
        other_path, _ = checked_input(
            read_manifest(other.version_dir), episodes, trust_hooks, harness=harness
        )
        if other_path.resolve() != path.resolve():
            raise HsaError(
                f"the versions were made from different episodes ({path} and "
                f"{other_path}); evaluate them separately",
                file=str(other.version_dir),
            )
    chosen = select(list(sources.episodes), limit, seed)
    inputs = {
        "episodes": str(path),
        "datasets": [str(s.version_dir) for s in sets],
        "limit": limit,
        "seed": seed,
        **sources.inputs(),
    }
    return Plan(build_items(sources.episodes, chosen, sets), sets, inputs)
