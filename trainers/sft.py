"""HSA-SFT: TRL's ``SFTTrainer`` on a dataset version's rows (trajectories under harness
variants), with the loss on assistant tokens only.

Before any step: the version's shard hashes are checked, the tokenizer must render tools, the
model must embed every token (embeddings are never resized), and every row is measured under the
tokenizer so that ``max_length`` is chosen or checked and the rows it truncates are reported.
Assistant messages a hook rejected (the mistake of a fail -> hook -> recover lesson) stay out of
the loss: the model sees them, and the hook's feedback and the recovery after them, but does not
learn to say them. ``loss_mask.txt`` in the output shows one variant row with the trained text in
⟦...⟧ (one with a rejected turn, when there is one).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hsa.errors import HsaError
from hsa.model.hook import hook_rejected
from hsa.trainers.chat import check_chat_template, check_embeddings, ensure_response_parser
from hsa.trainers.evaluate import evaluate
from hsa.trainers.lengths import choose_max_length, measure, render_loss_mask
from hsa.trainers.output import dataset_entry, read_record
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
    trl_config,
)
from hsa.trainers.version import JudgedTurns, check_provenance, load_rows, sample_indices


def run_sft(
    version_dir: str | os.PathLike,
    model_path: str,
    recipe: Recipe,
    out: str | os.PathLike,
    *,
    episodes: str | os.PathLike | None = None,
    trust_hooks: bool = False,
    log: Log = print,
) -> dict:
    """Train, save to ``out`` with card and record, and return the record."""
    from trl import SFTTrainer

    run = Run(recipe, out, log, {"--dataset": version_dir, "--model": model_path})
    try:
        manifest = check_provenance(version_dir)
        rows = load_rows(version_dir, manifest)
        tokenizer = load_tokenizer(model_path)
        check_chat_template(tokenizer, model=model_path)
        model = load_model(model_path, recipe)
        check_embeddings(model, tokenizer, name=model_path)
        run.record.update(
            model=model_ref(model_path),
            base_model=model_ref(model_path),
            datasets=[dataset_entry(version_dir, manifest)],
        )

        eval_turns, held_out = [], set()
        if recipe.get("eval_turns", 0):
            turns = JudgedTurns(
                version_dir, manifest, rows, episodes=episodes, trust_hooks=trust_hooks
            )
            eval_turns, held_out = split_eval(turns, recipe, read_record(model_path), log)
            run.record["held_out_sources"] = sorted(held_out)
            ensure_response_parser(tokenizer)
            rewards = RewardSet(turns, tokenizer, trust_hooks=trust_hooks)
        keep = [i for i, source in enumerate(rows["hsa_source_id"]) if source not in held_out]
        keep = [keep[i] for i in sample_indices(len(keep), recipe.get("rows"), recipe.seed)]
        train_rows = rows.select(keep)
        log(
            f"sft: {len(train_rows)} of {len(rows)} rows of version {manifest['version']}"
            + (f" ({len(held_out)} source episodes held out for evaluation)" if held_out else "")
        )

        with run.timed("measure"):
            report = measure(tokenizer, train_rows.select_columns(["messages", "tools"]))
            limit = getattr(model.config, "max_position_embeddings", None)
            report = choose_max_length(report, recipe.get("max_length", "auto"), limit)
        summary = report.summary()
        run.record["token_lengths"] = summary
        log(
            f"sft: tokens per row min {summary['tokens_min']}, median {summary['tokens_p50']}, "
            f"p95 {summary['tokens_p95']}, max {summary['tokens_max']}; max_length "
            f"{report.max_length}: {report.truncated} row(s) truncated (late turns dropped, "
            f"{report.trained_tokens_lost} assistant tokens lost), {report.emptied} row(s) "
            f"left with no assistant token (dropped)"
        )
        for note in report.notes:
            log(f"sft: {note}")

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
            log(f"sft: rewards before: {means_line(before)}")

        args = trl_config(
            recipe,
            run.staging,
            max_length=report.max_length,
            assistant_only_loss=recipe.loss == "assistant",
        )
        trainer = SFTTrainer(
            model=model,
            args=args,
            train_dataset=train_rows.select_columns(["messages", "tools"]),
            processing_class=tokenizer,
            peft_config=lora_config(recipe),
        )
        kept = mask_hook_rejected(trainer, train_rows, report)
        run.record["hook_rejected_turns_masked"] = kept.masked
        if kept.masked:
            log(
                f"sft: {kept.masked} assistant turn(s) a hook rejected kept out of the loss "
                f"(seen as context, not learned)"
                + (
                    f"; {kept.emptied} row(s) left with nothing else to learn dropped"
                    if kept.emptied
                    else ""
                )
            )
        _write_loss_mask(run.staging, trainer, train_rows, kept, tokenizer)
        with run.timed("train"):
            result = trainer.train()
        run.record.update(global_step=result.global_step, losses=losses(trainer))
        log(f"sft: {result.global_step} steps, loss {loss_line(run.record['losses'])}")

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
            log(f"sft: rewards after: {means_line(after)}")
        path = run.save(trainer, tokenizer)
    except BaseException:
        run.abandon()
        raise
    log(f"sft: saved to {path}")
    return run.record


@dataclass
class Kept:
    """The trainer's rows after masking: ``rows[k]`` is the row (of ``train_rows``) behind
    prepared example ``k``; ``masked`` turns a hook rejected; ``emptied`` rows dropped."""

    rows: list[int]
    masked: int = 0
    emptied: int = 0
    shown: int | None = None  # a prepared example with a masked turn, for loss_mask.txt


def mask_hook_rejected(trainer, rows, report) -> Kept:
    """Keep the assistant messages a hook rejected (hsa.model.hook.hook_rejected) out of the
    loss, in the trainer's prepared dataset. TRL trains on every assistant message; a rejected
    one is the recorded mistake of a fail -> hook -> recover lesson, which the model should see
    (what the hook said, and the recovery, follow it) but not learn to say. A row left with
    nothing to learn is dropped, as TRL drops rows that truncation empties."""
    # Prepared example k is row kept[k]: TRL dropped the rows truncation left without a label.
    kept = [
        i
        for i, r in enumerate(report.lengths)
        if r.first_trained is not None and r.first_trained < report.max_length
    ]
    cuts: dict[int, list[tuple[int, int]]] = {}
    for k, i in enumerate(kept):
        messages = rows[i]["messages"]
        rejected = set(hook_rejected(messages))
        if not rejected:
            continue
        turns = [j for j, m in enumerate(messages) if m.get("role") == "assistant"]
        spans = report.lengths[i].spans
        if len(spans) != len(turns):
            raise HsaError(
                f"row {rows[i]['id']}: the chat template trains {len(spans)} span(s) for its "
                f"{len(turns)} assistant message(s), so the turns a hook rejected cannot be "
                f"told apart to keep them out of the loss"
            )
        cuts[k] = [span for span, j in zip(spans, turns, strict=True) if j in rejected]
    if not cuts:
        return Kept(kept)
    if getattr(trainer.args, "packing", False):
        raise HsaError(
            "packing joins rows, so the turns a hook rejected cannot be kept out of the loss: "
            "train without packing"
        )

    def mask(example: dict, k: int) -> dict:
        labels = list(example["labels"])
        for start, end in cuts.get(k, ()):
            labels[start:end] = [-100] * len(labels[start:end])
        return {"labels": labels}

    dataset = trainer.train_dataset.map(mask, with_indices=True)
    alive = [k for k, labels in enumerate(dataset["labels"]) if any(t != -100 for t in labels)]
    trainer.train_dataset = dataset.select(alive)
    shown = next((n for n, k in enumerate(alive) if k in cuts), None)
    return Kept(
        [kept[k] for k in alive],
        masked=sum(len(v) for v in cuts.values()),
        emptied=len(kept) - len(alive),
        shown=shown,
    )


def _write_loss_mask(folder: Path, trainer, rows, kept: Kept, tokenizer) -> None:
    """Show what the loss covers on one variant row of the trainer's: one with a turn a hook
    rejected when there is one, else the first variant row (index maps past dropped rows)."""
    variants = [k for k, i in enumerate(kept.rows) if rows[i]["hsa_variant"] > 0] or list(
        range(len(kept.rows))
    )
    if kept.shown is not None:
        variants.insert(0, kept.shown)
    if not variants:
        return
    k = variants[0]
    example = trainer.train_dataset[k]
    text = render_loss_mask(tokenizer, example["input_ids"], example["labels"])
    (folder / "loss_mask.txt").write_text(
        f"row {rows[kept.rows[k]]['id']}: trained text in ⟦...⟧\n\n{text}\n", encoding="utf-8"
    )
