"""General on-policy distillation: TRL's ``DistillationTrainer`` with the SFT checkpoint as the
student and the base model as the teacher, on general prompts the user names.

SFT on harness rows costs general ability; the student samples its own answers to general
prompts and learns the base model's distribution over them (``trl.beta``: 0 forward KL, 0.5 JSD,
1 reverse KL). Student and teacher must share a vocabulary, checked before training. Prompts are
rendered per row (with a row's own ``tools`` when it has them). With a dataset version, the
judged-turn rewards are measured before and after, to show what distillation keeps.
"""

from __future__ import annotations

import os

from hsa.errors import HsaError
from hsa.trainers.chat import (
    check_chat_template,
    check_vocabulary,
    ensure_response_parser,
    render_prompt,
)
from hsa.trainers.evaluate import evaluate
from hsa.trainers.output import dataset_entry, file_sha256, read_record
from hsa.trainers.prompts import read_prompts
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


def teacher_of(student_path: str) -> str:
    """The base model a student was trained from, as its training record says."""
    record = read_record(student_path)
    if not record or not record.get("base_model"):
        raise HsaError(
            f"{student_path} has no hsa training record naming its base model; pass "
            f"--teacher (the base model the student was trained from)"
        )
    return record["base_model"]


def run_opd(
    prompts_path: str | os.PathLike,
    student_path: str,
    recipe: Recipe,
    out: str | os.PathLike,
    *,
    teacher_path: str | None = None,
    version_dir: str | os.PathLike | None = None,
    episodes: str | os.PathLike | None = None,
    trust_hooks: bool = False,
    log: Log = print,
) -> dict:
    from datasets import Dataset
    from trl import DistillationTrainer

    run = Run(
        recipe,
        out,
        log,
        {"--model": student_path, "--teacher": teacher_path, "--dataset": version_dir},
    )
    try:
        teacher_path = teacher_path or teacher_of(student_path)
        student_tokenizer = load_tokenizer(student_path)
        teacher_tokenizer = load_tokenizer(teacher_path)
        check_chat_template(student_tokenizer, model=student_path)
        student = load_model(student_path, recipe)
        teacher = load_model(teacher_path, recipe)
        check_vocabulary(student_tokenizer, teacher_tokenizer, student, teacher)
        prompts = read_prompts(prompts_path)
        picked = [prompts[i] for i in sample_indices(len(prompts), recipe.get("rows"), recipe.seed)]
        texts = [render_prompt(student_tokenizer, p.messages, p.tools) for p in picked]
        run.record.update(
            model=model_ref(student_path),
            teacher=model_ref(teacher_path),
            base_model=model_ref(teacher_path),
            prompts={
                "path": str(prompts_path),
                "rows": len(prompts),
                "used": len(texts),
                "sha256": file_sha256(prompts_path),
            },
        )
        student_record = read_record(student_path)
        if student_record:
            run.record["student_record"] = {
                k: student_record.get(k)
                for k in ("stage", "recipe_source", "datasets", "base_model")
            }
        log(
            f"opd: {len(texts)} general prompts from {prompts_path}; student {student_path}, "
            f"teacher {teacher_path}"
        )

        # OPD trains on general prompts, none of the version's episodes: what the student's
        # stage held out stays held out for the stage after this one.
        run.record["held_out_sources"] = sorted(
            (student_record or {}).get("held_out_sources") or ()
        )
        eval_turns = []
        if version_dir is not None and recipe.get("eval_turns", 0):
            manifest = check_provenance(version_dir)
            turns = JudgedTurns(
                version_dir,
                manifest,
                load_rows(version_dir, manifest),
                episodes=episodes,
                trust_hooks=trust_hooks,
            )
            eval_turns, _ = split_eval(turns, recipe, student_record, log)
            ensure_response_parser(student_tokenizer)
            rewards = RewardSet(turns, student_tokenizer, trust_hooks=trust_hooks)
            run.record["datasets"] = [dataset_entry(version_dir, manifest)]
            with run.timed("eval_before"):
                before = evaluate(
                    student,
                    student_tokenizer,
                    rewards,
                    eval_turns,
                    max_new_tokens=recipe.get("eval_max_new_tokens", 64),
                )
            run.record.setdefault("evaluation", {})["before"] = before
            log(f"opd: judged-turn rewards before: {means_line(before)}")

        args = trl_config(recipe, run.staging)
        trainer = DistillationTrainer(
            model=student,
            teacher_model=teacher,
            args=args,
            train_dataset=Dataset.from_dict({"prompt": texts}),
            processing_class=student_tokenizer,
            peft_config=lora_config(recipe),
        )
        with run.timed("train"):
            result = trained(trainer, "opd")
        run.record.update(global_step=result.global_step, losses=losses(trainer))
        log(f"opd: {result.global_step} steps, divergence loss {loss_line(run.record['losses'])}")

        if eval_turns:
            with run.timed("eval_after"):
                after = evaluate(
                    trainer.model,
                    student_tokenizer,
                    rewards,
                    eval_turns,
                    max_new_tokens=recipe.get("eval_max_new_tokens", 64),
                )
            run.record["evaluation"]["after"] = after
            log(f"opd: judged-turn rewards after: {means_line(after)}")
        path = run.save(trainer, student_tokenizer)
    except BaseException:
        run.abandon()
        raise
    log(f"opd: saved to {path}")
    return run.record
