"""Training recipes: YAML files that say how a stage trains, with ``--set key=value`` overrides.

A recipe names its ``stage`` (sft, opd or rl), hsa's own keys (seed, rows, max_length, eval,
rewards, lora, dtype) and, under ``trl``, the fields of that stage's TRL config (``SFTConfig``,
``DistillationConfig``, ``GRPOConfig``) exactly as TRL spells them. Everything is checked before
any model is loaded: unknown keys, values of the wrong type (TRL's own type hints for ``trl.*``),
a GPU recipe on a machine without CUDA, vLLM options without vLLM. Shipped recipes live in
``trainers/recipes/`` and are named without a path (``--recipe sft-tiny-cpu``).
"""

from __future__ import annotations

import copy
import dataclasses
import re
import types
import typing
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from hsa.errors import HsaError
from hsa.files.textfile import load_yaml, read_text

RECIPES_DIR = Path(__file__).resolve().parent / "recipes"
STAGES = ("sft", "opd", "rl")
REWARDS = ("exact", "partial", "format", "skills", "reply", "hooks")
_LORA_KEYS = {"r": int, "alpha": int, "dropout": float, "target_modules": (str, list)}
# hsa's keys: name -> (accepted types, stages that read it)
_KEYS: dict[str, tuple[tuple, tuple[str, ...]]] = {
    "recipe_version": ((int,), STAGES),
    "name": ((str,), STAGES),
    "stage": ((str,), STAGES),
    "description": ((str,), STAGES),
    "seed": ((int,), STAGES),
    "dtype": ((str,), STAGES),
    "rows": ((int, type(None)), STAGES),
    "max_length": ((int, str), ("sft",)),
    "loss": ((str,), ("sft",)),
    "eval_turns": ((int,), STAGES),
    "eval_max_new_tokens": ((int,), STAGES),
    "rewards": ((dict,), STAGES),
    "lora": ((dict, type(None)), STAGES),
    "trl": ((dict,), STAGES),
}
_FLOAT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")
_DTYPES = ("auto", "float32", "bfloat16", "float16")
# sft's loss, the default first: on assistant turns only (a model is taught to answer, not to
# write users' messages), or on every token (a model trained from scratch also learns the
# language of prompts and tool lists, and in-context copying sooner).
_LOSSES = ("assistant", "all")
# Set from the command line or by hsa itself, never in a recipe.
_RESERVED_TRL = {
    "output_dir": "--out",
    "seed": "the recipe's top-level seed",
    "data_seed": "the recipe's top-level seed (it seeds the data order too)",
    "max_length": "the recipe's top-level max_length (sft)",
    "assistant_only_loss": "the recipe's top-level loss (sft: assistant or all)",
    "reward_weights": "the recipe's rewards mapping",
}


@dataclass(frozen=True)
class Recipe:
    """A checked recipe: its stage, hsa's keys and the TRL config fields."""

    name: str
    stage: str
    data: dict
    source: str  # the file it came from, for error messages and the training record

    @property
    def trl(self) -> dict:
        return self.data.get("trl", {})

    @property
    def seed(self) -> int:
        return self.data.get("seed", 0)

    @property
    def loss(self) -> str:
        """sft: ``assistant`` (the default) or ``all``."""
        return self.data.get("loss", _LOSSES[0])

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def reward_weights(self) -> dict[str, float]:
        """Rewards with a non-zero weight, in the fixed order of :data:`REWARDS`."""
        weights = self.data.get("rewards") or {}
        return {name: float(weights[name]) for name in REWARDS if weights.get(name)}

    def to_dict(self) -> dict:
        return copy.deepcopy(self.data)


def shipped_recipes() -> list[str]:
    return sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


def load_recipe(name_or_path: str, *, stage: str, overrides: list[str] = ()) -> Recipe:
    """Load a shipped recipe by name or a YAML file by path, apply ``key=value`` overrides, check."""
    path = Path(name_or_path)
    if not path.suffix and not path.exists():
        path = RECIPES_DIR / f"{name_or_path}.yaml"
        if not path.is_file():
            raise HsaError(
                f"no recipe {name_or_path!r}; shipped recipes: "
                f"{', '.join(shipped_recipes())} (or give a path to a YAML file)"
            )
    try:
        data = load_yaml(read_text(path))
    except OSError as exc:
        raise HsaError(f"cannot read recipe: {exc.strerror}", file=str(path)) from None
    except yaml.YAMLError as exc:
        raise HsaError(f"recipe is not valid YAML: {exc}", file=str(path)) from None
    if not isinstance(data, dict):
        raise HsaError("a recipe must be a YAML mapping", file=str(path))
    for item in overrides:
        apply_override(data, item, stage=data.get("stage", stage), source=str(path))
    return check_recipe(data, stage=stage, source=str(path))


def check_recipe(data: dict, *, stage: str, source: str) -> Recipe:
    def fail(reason: str, key: str) -> HsaError:
        return HsaError(reason, file=source, field=key)

    if data.get("recipe_version") != 1:
        raise fail("recipe_version must be 1", "recipe_version")
    if data.get("stage") != stage:
        raise fail(
            f"this is a {data.get('stage')!r} recipe; `hsa train {stage}` needs a "
            f"{stage!r} recipe (shipped: {', '.join(r for r in shipped_recipes() if r.startswith(stage))})",
            "stage",
        )
    for key, value in data.items():
        if key not in _KEYS or stage not in _KEYS[key][1]:
            allowed = sorted(k for k, (_, stages) in _KEYS.items() if stage in stages)
            raise fail(f"unknown key for a {stage} recipe; allowed: {', '.join(allowed)}", key)
        types_ = _KEYS[key][0]
        if not _is_instance(value, types_):
            raise fail(
                f"expected {' or '.join(t.__name__ for t in types_)}, got "
                f"{type(value).__name__} {value!r}",
                key,
            )
    if not isinstance(data.get("name"), str):
        raise fail("a recipe needs a name", "name")
    if data.get("dtype", "auto") not in _DTYPES:
        raise fail(f"dtype must be one of {', '.join(_DTYPES)}", "dtype")
    if data.get("loss", _LOSSES[0]) not in _LOSSES:
        raise fail(f"loss must be one of {', '.join(_LOSSES)}", "loss")
    max_length = data.get("max_length", "auto")
    if (isinstance(max_length, str) and max_length != "auto") or (
        isinstance(max_length, int) and max_length < 1
    ):
        raise fail(
            "max_length must be a positive integer or 'auto' (the longest row, measured)",
            "max_length",
        )
    for key in ("rows", "eval_turns", "eval_max_new_tokens"):
        value = data.get(key)
        if isinstance(value, int) and value < 0:
            raise fail("must be >= 0", key)
    rewards = data.get("rewards") or {}
    if stage == "rl":
        for name, weight in rewards.items():
            if name not in REWARDS:
                raise fail(f"unknown reward; rewards: {', '.join(REWARDS)}", f"rewards.{name}")
            if not _is_instance(weight, (int, float)) or weight < 0:
                raise fail("a reward weight is a number >= 0", f"rewards.{name}")
        if not any(rewards.values()):
            raise fail("at least one reward needs a weight > 0", "rewards")
    elif rewards:
        raise fail("rewards are read by rl recipes only", "rewards")
    for key, value in (data.get("lora") or {}).items():
        if key not in _LORA_KEYS:
            raise fail(f"unknown LoRA key; allowed: {', '.join(_LORA_KEYS)}", f"lora.{key}")
        if not _is_instance(
            value, _LORA_KEYS[key] if isinstance(_LORA_KEYS[key], tuple) else (_LORA_KEYS[key],)
        ):
            raise fail(f"wrong type {type(value).__name__}", f"lora.{key}")
    hints = trl_fields(stage)
    for key, value in data.get("trl", {}).items():
        if key in _RESERVED_TRL:
            raise fail(f"set by {_RESERVED_TRL[key]}, not under trl", f"trl.{key}")
        if key not in hints:
            raise fail(
                f"not a field of {trl_config_class(stage).__name__} (TRL {_trl_version()})",
                f"trl.{key}",
            )
        if not _fits_hint(value, hints[key]):
            raise fail(f"{value!r} does not fit the type {_hint_name(hints[key])}", f"trl.{key}")
    return Recipe(name=data["name"], stage=stage, data=copy.deepcopy(data), source=source)


def apply_override(data: dict, item: str, *, stage: str, source: str) -> None:
    """``a.b=value``: the value is read as YAML (``3``, ``1e-4``, ``true``, ``null``, ``[a, b]``)."""
    key, sep, text = item.partition("=")
    if not sep or not key:
        raise HsaError(f"--set expects key=value (e.g. trl.max_steps=10), got {item!r}")
    try:
        value = yaml.safe_load(text) if text else ""
    except yaml.YAMLError as exc:
        raise HsaError(f"--set {key}: the value is not valid YAML: {exc}") from None
    if isinstance(value, str) and _FLOAT.match(value):
        value = float(value)  # YAML 1.1 reads 1e-4 (no dot) as a string; nobody means that
    parts = key.split(".")
    target = data
    for i, part in enumerate(parts[:-1]):
        child = target.get(part)
        if child is None and part in ("trl", "rewards", "lora"):
            if part == "lora":
                raise HsaError(
                    f"--set {key}: this recipe trains without LoRA (lora: null); use a "
                    f"LoRA recipe or a copy of this one with a lora: mapping",
                    file=source,
                )
            child = target[part] = {}
        if not isinstance(child, dict):
            raise HsaError(
                f"--set {key}: {'.'.join(parts[: i + 1])} is not a mapping in this recipe",
                file=source,
            )
        target = child
    leaf = parts[-1]
    # A YAML number given where the recipe holds a float stays a float (1 -> 1.0), so a type
    # check does not refuse an obvious value.
    if (
        isinstance(target.get(leaf), float)
        and isinstance(value, int)
        and not isinstance(value, bool)
    ):
        value = float(value)
    target[leaf] = value


def _is_instance(value: Any, types_: tuple) -> bool:
    if isinstance(value, bool):
        return bool in types_
    if float in types_ and isinstance(value, int):
        return True
    return isinstance(value, types_)


# ---- TRL config fields -----------------------------------------------------------------------


def trl_config_class(stage: str) -> type:
    if stage == "sft":
        from trl import SFTConfig

        return SFTConfig
    if stage == "opd":
        from trl import DistillationConfig

        return DistillationConfig
    from trl import GRPOConfig

    return GRPOConfig


@cache
def trl_fields(stage: str) -> dict[str, Any]:
    """Every init field of the stage's TRL config and its type hint."""
    cls = trl_config_class(stage)
    hints = typing.get_type_hints(cls)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(cls) if f.init}


def _trl_version() -> str:
    import trl

    return trl.__version__


def _fits_hint(value: Any, hint: Any) -> bool:
    """Whether a YAML value fits a dataclass field's type hint (basic types, unions, literals,
    lists and dicts; anything more exotic is accepted and left to TRL)."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits_hint(value, arg) for arg in typing.get_args(hint))
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is list or hint is list:
        return isinstance(value, list)
    if origin is dict or hint is dict:
        return isinstance(value, dict)
    if isinstance(hint, type) and issubclass(hint, str):  # enums of strings (IntervalStrategy...)
        return isinstance(value, str)
    return True


def _hint_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def check_machine(recipe: Recipe) -> None:
    """Refuse, before any model loads, a recipe this machine cannot run."""
    import importlib.util

    import torch

    if recipe.trl.get("use_vllm") and importlib.util.find_spec("vllm") is None:
        raise HsaError(
            "trl.use_vllm is true but vllm is not importable here: TRL needs vllm in "
            "the trainer's environment even in server mode (pip install -e '.[vllm]' "
            "on a GPU machine), or --set trl.use_vllm=false",
            file=recipe.source,
            field="trl.use_vllm",
        )
    if not recipe.trl.get("use_cpu") and not torch.cuda.is_available():
        raise HsaError(
            "this recipe is for a GPU and no CUDA device is visible; use a *-tiny-cpu "
            "recipe or --set trl.use_cpu=true --set trl.bf16=false",
            file=recipe.source,
        )
    if recipe.get("lora") is not None and importlib.util.find_spec("peft") is None:
        raise HsaError(
            "this recipe trains a LoRA adapter and peft is not installed: "
            "pip install -e '.[train]'",
            file=recipe.source,
            field="lora",
        )
