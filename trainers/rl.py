"""HSA-RL: TRL's ``GRPOTrainer`` on a version's judged turns, each prompt rendered with its row's
own harness variant (tools included), rewarded from gold by the one scorer.

Checked before training: shard hashes, a chat template that renders tools and a parser for its
tool calls, ``num_generations`` >= 2 dividing the generation batch, and ``--trust-hooks`` when
the hooks reward is weighted. Groups whose completions all get the same reward (zero advantage,
so no gradient) are noted in the log at every logging step.
"""

from __future__ import annotations

import os

from hsa.errors import HsaError
from hsa.trainers.chat import (
    check_chat_template,
    check_embeddings,
    ensure_response_parser,
    render_prompt,
)
from hsa.trainers.evaluate import evaluate
from hsa.trainers.output import dataset_entry, rank, read_record
from hsa.trainers.recipe import Recipe
from hsa.trainers.rewards import RewardSet
from hsa.trainers.stage import (
    Log,
    Run,
    load_model,
    load_tokenizer,
    lora_config,
    loss_line,
    losses,
    means_line,
    model_ref,
    split_eval,
    trained,
    trl_config,
)
from hsa.trainers.version import JudgedTurns, check_provenance, load_rows, sample_indices


def check_generation_batch(recipe: Recipe, world_size: int = 1) -> tuple[int, int]:
    """(num_generations, generation batch), refusing what GRPO cannot group."""
    trl = recipe.trl
    num = trl.get("num_generations", 8)
    per_device = trl.get("per_device_train_batch_size", 8)
    batch = trl.get("generation_batch_size")
    if batch is None:
        steps = trl.get("steps_per_generation") or trl.get("gradient_accumulation_steps", 1)
        batch = per_device * world_size * steps
    if not isinstance(num, int) or num < 2:
        raise HsaError(
            f"trl.num_generations is {num}: GRPO compares completions within a group, "
            f"so it needs at least 2",
            file=recipe.source,
            field="trl.num_generations",
        )
    if batch % num:
        raise HsaError(
            f"trl.num_generations {num} does not divide the generation batch {batch} "
            f"(per_device_train_batch_size {per_device} x processes {world_size} x "
            f"steps_per_generation): every group of completions of one prompt must "
            f"fit in one batch",
            file=recipe.source,
            field="trl.num_generations",
        )
    return num, batch


def zero_gradient_callback(log: Log, groups: int):
    from transformers import TrainerCallback

    class ZeroGradientGroups(TrainerCallback):
        """Notes the groups whose rewards were all equal: their advantages are 0, no gradient."""

        def __init__(self):
            self.steps: list[dict] = []

        def on_log(self, args, state, control, logs=None, **kwargs):
            frac = (logs or {}).get("frac_reward_zero_std")
            if frac is None:
                return
            self.steps.append({"step": state.global_step, "frac_groups_all_equal": frac})
            if frac > 0:
                log(
                    f"rl: step {state.global_step}: {round(frac * groups)} of {groups} group(s) "
                    f"had all-equal rewards (zero advantage, no gradient from them)"
                )

    return ZeroGradientGroups()


def run_rl(
    version_dir: str | os.PathLike,
    model_path: str,
    recipe: Recipe,
    out: str | os.PathLike,
    *,
    episodes: str | os.PathLike | None = None,
    trust_hooks: bool = False,
    log: Log = print,
) -> dict:
    from datasets import Dataset
    from trl import GRPOTrainer

    run = Run(recipe, out, log, {"--dataset": version_dir, "--model": model_path})
    try:
        num_generations, batch = check_generation_batch(recipe, rank()[1])
        weights = recipe.reward_weights()
        manifest = check_provenance(version_dir)
        rows = load_rows(version_dir, manifest)
        tokenizer = load_tokenizer(model_path)
        check_chat_template(tokenizer, model=model_path)
        ensure_response_parser(tokenizer)
        turns = JudgedTurns(version_dir, manifest, rows, episodes=episodes, trust_hooks=trust_hooks)
        rewards = RewardSet(turns, tokenizer, trust_hooks=trust_hooks)
        functions = rewards.functions(list(weights))
        model = load_model(model_path, recipe)
        check_embeddings(model, tokenizer, name=model_path)
        run.record.update(
            model=model_ref(model_path),
            base_model=_base_model(model_path),
            datasets=[dataset_entry(version_dir, manifest)],
            rewards=weights,
        )

        eval_turns, held_out = split_eval(turns, recipe, read_record(model_path), log)
        run.record["held_out_sources"] = sorted(held_out)
        pool = [t for t in turns.turns if t.source_id not in held_out]
        pool = [pool[i] for i in sample_indices(len(pool), recipe.get("rows"), recipe.seed)]
        if not pool:
            raise HsaError("no judged turns left to train on (all held out for evaluation?)")
        train = Dataset.from_dict(
            {
                "prompt": [render_prompt(tokenizer, t.prompt, t.tools) for t in pool],
                "hsa_row": [t.row_id for t in pool],
                "hsa_at": [t.at for t in pool],
            }
        )
        log(
            f"rl: {len(pool)} judged turns of {len(turns.turns)} in version "
            f"{manifest['version']}; rewards {weights}; {num_generations} generations per prompt"
        )

        if eval_turns:
            with run.timed("eval_before"):
                before = evaluate(
                    model,
                    tokenizer,
                    rewards,
                    eval_turns,
                    max_new_tokens=recipe.get("eval_max_new_tokens", 64),
                )
            run.record.setdefault("evaluation", {})["before"] = before
            log(f"rl: rewards before: {means_line(before)}")

        args = trl_config(recipe, run.staging, reward_weights=list(weights.values()))
        callback = zero_gradient_callback(log, batch // num_generations)
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=functions,
            args=args,
            train_dataset=train,
            processing_class=tokenizer,
            peft_config=lora_config(recipe),
            callbacks=[callback],
        )
        with run.timed("train"):
            result = trained(trainer, "rl")
        history = [
            {
                k: v
                for k, v in entry.items()
                if k == "step"
                or k == "reward"
                or k.startswith("rewards/")
                or k == "frac_reward_zero_std"
            }
            for entry in trainer.state.log_history
            if "reward" in entry
        ]
        run.record.update(
            global_step=result.global_step,
            losses=losses(trainer),
            reward_history=history,
            zero_gradient_groups=callback.steps,
        )
        if history:
            log(
                f"rl: {result.global_step} steps, loss {loss_line(run.record['losses'])}; "
                f"training reward first {history[0]['reward']:.3f}, last "
                f"{history[-1]['reward']:.3f}"
            )

        if eval_turns:
            with run.timed("eval_after"):
                after = evaluate(
                    trainer.model,
                    tokenizer,
                    rewards,
                    eval_turns,
                    max_new_tokens=recipe.get("eval_max_new_tokens", 64),
                )
            run.record["evaluation"]["after"] = after
            log(f"rl: rewards after: {means_line(after)}")
        path = run.save(trainer, tokenizer)
    except BaseException:
        run.abandon()
        raise
    log(f"rl: saved to {path}")
    return run.record


def _base_model(model_path: str) -> str:
    record = read_record(model_path)
    return (record or {}).get("base_model") or model_ref(model_path)
