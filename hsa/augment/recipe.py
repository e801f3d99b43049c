"""Recipes: a versioned YAML envelope around a pipeline of transforms and compositions.

```yaml
recipe_version: 1
name: tool-shuffle
seed: 1234
variants_per_episode: 4
keep_original: true
harness_variants: 16   # optional: a pool of 16 harness variants per source harness
pipeline:
  - tool_order_permutation: {}
  - one_of:
      weights: [1, 3]
      pipeline:
        - identity: {}
        - tool_order_permutation: {p: 0.5}
```

Every problem (unknown transform or option, wrong type, probability outside [0, 1], an empty
composition, a seed that is not an integer) is an error naming the key, raised before any work
starts. ``to_dict`` is canonical: every option is written out, so two recipes that mean the same
serialise the same, and ``from_dict(to_dict(r)) == r``; ``version_dict`` is the same less the
options that cannot change a row (``Transform.row_neutral``), and is what a dataset version hashes.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import yaml

from hsa.augment.compose import COMPOSITIONS, Maybe, Node, OneOf, Sequence, SomeOf, TransformNode
from hsa.augment.registry import registered
from hsa.errors import HsaError
from hsa.files.textfile import load_yaml, read_text

RECIPE_VERSION = 1
# Variants made of each episode, all held in memory while it is augmented.
MAX_VARIANTS_PER_EPISODE = 1000
# A recipe's name is the folder its versions go in (<out>/<name>/<version>): one path component.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# The largest pool of harness variants per source harness (``harness_variants``).
MAX_HARNESS_VARIANTS = 1_000_000
_ENVELOPE = (
    "recipe_version",
    "name",
    "seed",
    "variants_per_episode",
    "keep_original",
    "harness_variants",
    "pipeline",
)


class RecipeError(HsaError):
    """A recipe that cannot run."""


@dataclass
class Recipe:
    """A named, seeded pipeline and how many variants to make of each episode."""

    name: str
    seed: int
    pipeline: Sequence
    variants_per_episode: int = 1
    keep_original: bool = False
    # The pool of harness variants per source harness: every variant takes one of N slots and
    # the episodes that take the same slot share their harness-scoped draws. None: each variant
    # draws its own harness (no pool).
    harness_variants: int | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Recipe) and self.to_dict() == other.to_dict()

    def to_dict(self, *, row_neutral: bool = True) -> dict:
        out: dict[str, Any] = {
            "recipe_version": RECIPE_VERSION,
            "name": self.name,
            "seed": self.seed,
            "variants_per_episode": self.variants_per_episode,
            "keep_original": self.keep_original,
        }
        # Written only when set: a recipe without a pool keeps the dataset versions it had.
        if self.harness_variants is not None:
            out["harness_variants"] = self.harness_variants
        out["pipeline"] = [
            child.to_dict(row_neutral=row_neutral) for child in self.pipeline.children
        ]
        return out

    def version_dict(self) -> dict:
        """What of the recipe a dataset version is a hash of: :meth:`to_dict` without the options
        transforms declare row-neutral (``Transform.row_neutral``: they cannot change a row)."""
        return self.to_dict(row_neutral=False)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    @property
    def variant_indices(self) -> range:
        """The variant indices made of every episode: 0 is the original, when kept; then
        ``1..variants_per_episode``, each a run of the pipeline."""
        return range(0 if self.keep_original else 1, self.variants_per_episode + 1)

    def transform_versions(self) -> dict[str, str]:
        return dict(
            sorted(
                {n.transform.name: n.transform.version for n in self.pipeline.transforms()}.items()
            )
        )

    def with_pipeline(
        self, pipeline: list[dict], *, name: str | None = None, source: str
    ) -> Recipe:
        """This recipe's envelope (seed, variants per episode, pool, whether the original is kept)
        around ``pipeline`` (nodes as a recipe file writes them), named ``name`` (default: its
        own); ``source`` names it in errors."""
        data = {**self.to_dict(), "pipeline": pipeline}
        if name is not None:
            data["name"] = name
        return Recipe.from_dict(data, source=source)

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "recipe") -> Recipe:
        if not isinstance(data, dict):
            raise RecipeError("a recipe must be a mapping", file=source)
        unknown = set(data) - set(_ENVELOPE)
        if unknown:
            raise RecipeError(
                f"unknown keys {sorted(unknown)}; allowed: {', '.join(_ENVELOPE)}", file=source
            )
        if data.get("recipe_version") != RECIPE_VERSION:
            raise RecipeError(
                f"recipe_version must be {RECIPE_VERSION}, got {data.get('recipe_version')!r}",
                file=source,
                field="recipe_version",
            )
        seed = data.get("seed")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise RecipeError(f"seed must be an integer, got {seed!r}", file=source, field="seed")
        if not -(2**63) <= seed < 2**64:  # what a version's JSON records (orjson: 64 bits)
            raise RecipeError(
                f"seed must fit in 64 bits (-2**63 to 2**64 - 1), got {seed}",
                file=source,
                field="seed",
            )
        name = data.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise RecipeError(
                f"name must be 1-100 letters, digits, '.', '_' or '-', starting "
                f"with a letter or digit (it names the output folder), got "
                f"{name!r}",
                file=source,
                field="name",
            )
        variants = data.get("variants_per_episode", 1)
        if not _int_in(variants, 1, MAX_VARIANTS_PER_EPISODE):
            raise RecipeError(
                f"variants_per_episode must be an integer from 1 to "
                f"{MAX_VARIANTS_PER_EPISODE}, got {variants!r}",
                file=source,
                field="variants_per_episode",
            )
        keep = data.get("keep_original", False)
        if not isinstance(keep, bool):
            raise RecipeError(
                "keep_original must be true or false", file=source, field="keep_original"
            )
        pool = data.get("harness_variants")
        if pool is not None and not _int_in(pool, 1, MAX_HARNESS_VARIANTS):
            raise RecipeError(
                f"harness_variants (the pool of harness variants per source harness) must be "
                f"an integer from 1 to {MAX_HARNESS_VARIANTS:,}, or left out for one harness "
                f"per variant, got {pool!r}",
                file=source,
                field="harness_variants",
            )
        pipeline = _parse_pipeline(data.get("pipeline"), "pipeline", "", source)
        return cls(
            name=name,
            seed=seed,
            pipeline=Sequence(pipeline, path=""),
            variants_per_episode=variants,
            keep_original=keep,
            harness_variants=pool,
        )


def _int_in(value: Any, low: int, high: int) -> TypeGuard[int]:
    """Whether ``value`` is an integer (YAML's true and false are not) from ``low`` to ``high``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _parse_pipeline(raw: Any, where: str, prefix: str, source: str) -> list[Node]:
    if not isinstance(raw, list) or not raw:
        raise RecipeError(
            "must be a non-empty list of '- name: {options}' entries", file=source, field=where
        )
    return [
        _parse_node(entry, f"{where}[{i}]", f"{prefix}{i}", source) for i, entry in enumerate(raw)
    ]


def _parse_node(entry: Any, where: str, path: str, source: str) -> Node:
    if not isinstance(entry, dict) or len(entry) != 1:
        raise RecipeError(
            "each pipeline entry is a one-key mapping: '- name: {options}'",
            file=source,
            field=where,
        )
    ((name, options),) = entry.items()
    options = {} if options is None else options
    if not isinstance(options, dict):
        raise RecipeError(f"options of {name!r} must be a mapping", file=source, field=where)
    where = f"{where}.{name}"
    if name in COMPOSITIONS:
        return _parse_composition(name, options, where, path, source)
    transforms = registered()
    if name not in transforms:
        raise RecipeError(
            f"unknown transform {name!r}; registered: "
            f"{', '.join(transforms) or 'none'}; compositions: "
            f"{', '.join(COMPOSITIONS)}",
            file=source,
            field=where,
        )
    cls = transforms[name]
    valid = cls.options()
    unknown = set(options) - set(valid)
    if unknown:
        raise RecipeError(
            f"unknown option(s) {sorted(unknown)}; {name} takes: "
            f"{', '.join(f'{k} (default {v!r})' for k, v in valid.items())}",
            file=source,
            field=where,
        )
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
    try:
        transform = cls(**values)
    except HsaError as exc:
        raise RecipeError(exc.reason, file=source, field=where) from None
    except TypeError as exc:
        raise RecipeError(str(exc), file=source, field=where) from None
    return TransformNode(transform, path=path)


def _parse_composition(name: str, options: dict, where: str, path: str, source: str) -> Node:
    allowed = COMPOSITIONS[name].keys
    unknown = set(options) - allowed
    if unknown:
        raise RecipeError(
            f"unknown option(s) {sorted(unknown)}; {name} takes: {', '.join(sorted(allowed))}",
            file=source,
            field=where,
        )
    children = _parse_pipeline(options.get("pipeline"), f"{where}.pipeline", f"{path}.", source)
    if name == Sequence.name:
        return Sequence(children, path=path)
    if name == OneOf.name:
        weights = options.get("weights", [1.0] * len(children))
        if (
            not isinstance(weights, list)
            or len(weights) != len(children)
            or not all(
                isinstance(w, int | float) and not isinstance(w, bool) and w >= 0 for w in weights
            )
            or not sum(weights) > 0
        ):
            raise RecipeError(
                f"weights must be {len(children)} non-negative numbers, not all "
                f"zero, got {weights!r}",
                file=source,
                field=f"{where}.weights",
            )
        return OneOf(children, weights=[float(w) for w in weights], path=path)
    if name == SomeOf.name:
        n = options.get("n")
        if not _int_in(n, 0, len(children)):
            raise RecipeError(
                f"n must be an integer from 0 to {len(children)}, got {n!r}",
                file=source,
                field=f"{where}.n",
            )
        return SomeOf(children, n=n, path=path)
    p = options.get("p", 0.5)
    if not isinstance(p, int | float) or isinstance(p, bool) or not 0 <= p <= 1:
        raise RecipeError(
            f"p must be a probability in [0, 1], got {p!r}", file=source, field=f"{where}.p"
        )
    return Maybe(children, p=float(p), path=path)


def recipes_dir() -> Path:
    # The shipped recipes are data of the built-in transforms package (a layer above this one):
    # found by name, so that augment never imports the transforms.
    spec = importlib.util.find_spec("hsa.transforms")
    assert spec is not None and spec.submodule_search_locations, "hsa.transforms is part of hsa"
    return Path(next(iter(spec.submodule_search_locations))).resolve() / "recipes"


def shipped_recipes() -> list[str]:
    folder = recipes_dir()
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def load_recipe(name_or_path: str | os.PathLike) -> Recipe:
    """A recipe from a YAML file, or a shipped recipe by name (``hat-train``)."""
    path = Path(name_or_path)
    if not path.is_file():
        shipped = recipes_dir() / f"{name_or_path}.yaml"
        if not shipped.is_file():
            raise RecipeError(
                f"no recipe file {str(name_or_path)!r} and no shipped recipe of "
                f"that name; shipped: {', '.join(shipped_recipes()) or 'none'}"
            )
        path = shipped
    try:
        data = load_yaml(read_text(path))
    except OSError as exc:
        raise RecipeError(f"cannot read the recipe: {exc}", file=str(path)) from None
    except HsaError as exc:  # not UTF-8
        raise RecipeError(f"cannot read the recipe: {exc.reason}", file=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise RecipeError(
            f"not valid YAML: {getattr(exc, 'problem', exc)}",
            file=str(path),
            line=None if mark is None else mark.line + 1,
        ) from None
    return Recipe.from_dict(data, source=str(path))
