"""What the three stages share: loading a model as a recipe says, LoRA, the TRL config, the
evaluation sample, losses, and the output folder with its card and record."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hsa.errors import HsaError
from hsa.files.overlap import refuse_inside
from hsa.files.paths import missing_local
from hsa.trainers import output
from hsa.trainers.recipe import Recipe, check_machine, trl_config_class
from hsa.trainers.version import JudgedTurn, JudgedTurns, sample_indices

Log = Callable[[str], None]


def quiet_hub() -> None:
    """Trainers ping the Hub with telemetry by default; hsa sends nothing it was not asked to."""
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def model_ref(path: str) -> str:
    """How a record names a model: a local folder by its absolute path (a later stage may run
    from another directory), a Hub id as given."""
    local = Path(path)
    return str(local.resolve()) if local.exists() else path


def _why(exc: BaseException) -> str:
    """An exception's message, its lines joined (transformers puts the cause on later lines)."""
    return " ".join(line.strip() for line in str(exc).splitlines() if line.strip())[:400]


def _check_local(path: str) -> None:
    """A path that can only be local must exist (else transformers reads it as a Hub id and
    says the id is malformed)."""
    if missing_local(path):
        raise HsaError("model folder does not exist", file=path)


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    _check_local(path)
    try:
        return AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as exc:
        raise HsaError(f"cannot load a tokenizer from {path!r}: {_why(exc)}") from None


def is_adapter(path: str | os.PathLike | None) -> bool:
    """Whether ``path`` is a LoRA adapter folder (what a LoRA recipe saves)."""
    return path is not None and (Path(path) / "adapter_config.json").is_file()


def load_model(path: str, recipe: Recipe):
    """The causal LM at ``path``. A LoRA adapter (a LoRA stage's output) is merged into its base
    model: transformers would load it as a frozen adapter over the base, so a later stage would
    train nothing (full weights) or a fresh adapter under the old one's name (LoRA), from the
    base model, the earlier stage's training lost."""
    import torch
    from transformers import AutoModelForCausalLM

    dtype = recipe.get("dtype", "auto")
    dtype_arg = "auto" if dtype == "auto" else getattr(torch, dtype)
    _check_local(path)
    try:
        if not is_adapter(path):
            return AutoModelForCausalLM.from_pretrained(path, dtype=dtype_arg)
        from peft import AutoPeftModelForCausalLM

        model = AutoPeftModelForCausalLM.from_pretrained(path, dtype=dtype_arg).merge_and_unload()
        for parameter in model.parameters():  # as a model loaded whole: every weight trains
            parameter.requires_grad_(True)
        return model
    except (OSError, ValueError) as exc:
        raise HsaError(f"cannot load a causal LM from {path!r}: {_why(exc)}") from None


def trained(trainer, what: str):
    """``trainer.train()``'s result, refused when it took no step: a stage that trained nothing
    must not save its starting model as its output and exit 0 (TRL's GRPO and distillation
    samplers drop a generation batch the data cannot fill, and then train for no step)."""
    # TrainingArguments' resume_from_checkpoint is "not used by Trainer": train() must be told.
    result = trainer.train(resume_from_checkpoint=trainer.args.resume_from_checkpoint)
    if result.global_step > 0:
        return result
    rows = len(trainer.train_dataset) if trainer.train_dataset is not None else 0
    batch = getattr(trainer.args, "generation_batch_size", None)
    generations = getattr(trainer.args, "num_generations", None) or 1
    need = (
        f": one generation batch takes {batch // generations} prompts and there are {rows}"
        if batch
        else f" ({rows} rows)"
    )
    raise HsaError(
        f"{what} took no training step{need}. Give it more rows (the recipe's rows, or a larger "
        f"dataset) or a smaller per_device_train_batch_size / gradient_accumulation_steps"
    )


def lora_config(recipe: Recipe):
    lora = recipe.get("lora")
    if lora is None:
        return None
    from peft import LoraConfig  # import-guarded: check_machine refuses a LoRA recipe without peft

    return LoraConfig(
        r=lora.get("r", 16),
        lora_alpha=lora.get("alpha", 32),
        lora_dropout=lora.get("dropout", 0.05),
        target_modules=lora.get("target_modules", "all-linear"),
        task_type="CAUSAL_LM",
    )


def trl_config(recipe: Recipe, output_dir: Path, **fixed: Any):
    """The stage's TRL config: the recipe's ``trl`` fields, the seed, and what hsa fixes."""
    cls = trl_config_class(recipe.stage)
    kwargs = {
        "report_to": "none",
        **recipe.trl,
        **fixed,
        "output_dir": str(output_dir),
        "seed": recipe.seed,
        "data_seed": recipe.seed,
    }
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:  # TRL's own checks: say them as the recipe's error
        raise HsaError(f"{cls.__name__} refuses this recipe: {exc}", file=recipe.source) from None


def split_eval(
    turns: JudgedTurns | None, recipe: Recipe, earlier: dict | None = None, log: Log = print
) -> tuple[list[JudgedTurn], set[str]]:
    """A seeded sample of ``eval_turns`` judged turns, and their source ids: rows of those sources
    (every variant of them) stay out of training, so "after" is measured on unseen episodes.
    ``turns`` may be None when ``eval_turns`` is 0 (nothing is evaluated).

    ``earlier`` is the record of the stage that trained the model (hsa_training.json): its
    held-out sources stay held out (evaluated or not) and are the ones evaluated, so that a
    chain sft -> opd -> rl never measures "after" on an episode an earlier stage trained on,
    whatever each stage's seed and ``eval_turns``."""
    count = recipe.get("eval_turns", 0)
    inherited = set((earlier or {}).get("held_out_sources") or ())
    stage = (earlier or {}).get("stage") or "earlier"
    if not count:
        if inherited:
            log(
                f"{recipe.stage}: the {len(inherited)} source episode(s) the {stage} run held "
                f"out stay out of training (not evaluated: eval_turns is 0)"
            )
        return [], inherited
    assert turns is not None, "eval_turns needs the judged turns"
    candidates = [t for t in turns.turns if t.source_id in inherited]
    if candidates:
        picked = [candidates[i] for i in sample_indices(len(candidates), count, recipe.seed)]
        log(
            f"{recipe.stage}: evaluating on the {len({t.source_id for t in candidates})} source "
            f"episode(s) of this version the {stage} run held out (they stay out of training "
            f"here too)"
        )
        return picked, inherited
    if earlier is not None:
        log(
            f"{recipe.stage}: the model's {stage} record holds out no episode of this version, "
            f"so the evaluation split is drawn afresh and may hold episodes that stage trained on"
        )
    picked = [turns.turns[i] for i in sample_indices(len(turns.turns), count, recipe.seed)]
    return picked, {t.source_id for t in picked}


def losses(trainer) -> list[dict]:
    return [
        {"step": entry["step"], "loss": entry["loss"]}
        for entry in trainer.state.log_history
        if "loss" in entry and "step" in entry
    ]


def means_line(evaluation: dict) -> str:
    return ", ".join(f"{k} {v:.3f}" for k, v in evaluation["means"].items() if v is not None)


def loss_line(entries: list[dict]) -> str:
    if not entries:
        return "not logged (lower trl.logging_steps)"
    return f"first {entries[0]['loss']:.4f}, last {entries[-1]['loss']:.4f}"


class Run:
    """One stage's run: its staging folder, clock and record, published only when complete."""

    def __init__(
        self,
        recipe: Recipe,
        out: str | os.PathLike,
        log: Log,
        inputs: dict[str, str | os.PathLike | None] | None = None,
    ):
        # ``inputs``: option -> the folders the run reads (a dataset version, a model); the
        # output may not lie inside one.
        refuse_inside(("--out", Path(out)), dict(inputs or {}))
        check_machine(recipe)
        quiet_hub()
        self.recipe, self.log = recipe, log
        # A model trained from a merged adapter is saved whole (see save).
        self.from_adapter = is_adapter((inputs or {}).get("--model"))
        self.final, self.staging = output.staging_dir(out)
        self.started = time.monotonic()
        self.record: dict[str, Any] = {
            "stage": recipe.stage,
            "out": str(self.final.resolve()),
            "recipe": recipe.to_dict(),
            "recipe_source": recipe.source,
            "seed": recipe.seed,
        }

    @contextmanager
    def timed(self, name: str):
        start = time.monotonic()
        yield
        self.record.setdefault("seconds", {})[name] = round(time.monotonic() - start, 2)

    def save(self, trainer, tokenizer) -> Path:
        model = trainer.accelerator.unwrap_model(trainer.model)
        if self.from_adapter and hasattr(model, "merge_and_unload"):
            # A LoRA stage on a merged adapter: its own adapter would name the base model as its
            # base and, loaded over it, lose the earlier stage; the merged model stands alone.
            merged = model.merge_and_unload()
            if trainer.args.should_save:
                merged.save_pretrained(str(self.staging))
        else:
            trainer.save_model(str(self.staging))  # every rank calls it; the main process writes
        trainer.accelerator.wait_for_everyone()
        if output.rank()[0] != 0:
            return self.final  # rank 0 writes the card and record and publishes
        tokenizer.save_pretrained(str(self.staging))
        for checkpoint in self.staging.glob("checkpoint-*"):
            # Checkpoints stay (resumable); TRL's cards in them would contradict the run's card.
            (checkpoint / "README.md").unlink(missing_ok=True)
        self.record.setdefault("seconds", {})["total"] = round(time.monotonic() - self.started, 2)
        output.write_record(self.staging, self.record)
        output.write_card(self.staging, self.record)
        return output.publish(self.staging, self.final)

    def abandon(self) -> None:
        """Discard a failed run's staging folder, unless it holds checkpoints: a crash or a
        Ctrl-C hours into a run must not take them, and a rerun resumes from one."""
        if output.rank()[0] != 0:
            return
        from transformers.trainer_utils import get_last_checkpoint  # the Trainer's own reading

        newest = get_last_checkpoint(str(self.staging)) if self.staging.is_dir() else None
        if newest is None:
            output.discard(self.staging)
            return
        self.log(
            f"{self.recipe.stage}: the run failed; its checkpoints are kept in {self.staging}. "
            f"The same command with --set trl.resume_from_checkpoint={newest} resumes "
            f"(delete the folder once done)"
        )
