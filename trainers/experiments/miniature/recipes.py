"""The miniature's recipes, shipped beside this module (recipes/*.yaml): the two training
versions' generate recipes (``miniature-fixed``, ``miniature-hsa``), the held-out evaluation
recipe (``miniature-heldout``) and the SFT recipe both models train with (``sft-miniature-cpu``).
The run's seed is added to each generate recipe's own, so each seed draws other variants."""

from __future__ import annotations

from pathlib import Path

RECIPES = Path(__file__).resolve().parent / "recipes"
FIXED, HSA = "fixed", "hsa"
CONDITIONS = {FIXED: "miniature-fixed", HSA: "miniature-hsa"}
HELDOUT = "miniature-heldout"
SFT = "sft-miniature-cpu"


def generate_recipe(name: str, seed: int):
    """A shipped miniature generate recipe with the run's seed added to its own."""
    from hsa.augment.recipe import Recipe, load_recipe

    recipe = load_recipe(RECIPES / f"{name}.yaml")
    return Recipe.from_dict({**recipe.to_dict(), "seed": recipe.seed + seed}, source=name)


def sft_recipe(
    *,
    seed: int,
    steps: int,
    batch_size: int,
    learning_rate: float,
    warmup_steps: int,
    decay_steps: int,
    save_steps: int,
    device: str,
):
    """The SFT recipe with the run's settings; checkpoints every ``save_steps`` (weights only)
    give the learning curve."""
    from hsa.trainers.recipe import load_recipe

    warmup_steps = min(warmup_steps, steps)
    overrides = [
        f"seed={seed}",
        f"trl.max_steps={steps}",
        f"trl.per_device_train_batch_size={batch_size}",
        f"trl.learning_rate={learning_rate}",
        f"trl.warmup_steps={warmup_steps}",
        f"trl.save_steps={save_steps}",
        "trl.save_only_model=true",
        f"trl.logging_steps={max(1, min(50, steps // 10))}",
    ]
    if decay_steps:
        # Warm-up, a steady rate, and a cosine fall to a tenth over the last decay_steps.
        overrides += [
            "trl.lr_scheduler_type=warmup_stable_decay",
            "trl.lr_scheduler_kwargs={num_decay_steps: "
            f"{min(decay_steps, steps - warmup_steps)}, min_lr_ratio: 0.1}}",
        ]
    if device != "cpu":
        overrides.append("trl.use_cpu=false")
    return load_recipe(str(RECIPES / f"{SFT}.yaml"), stage="sft", overrides=overrides)
