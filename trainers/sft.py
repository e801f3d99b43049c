"""HSA-SFT: TRL's ``SFTTrainer`` on a dataset version's rows (trajectories under harness
variants), with the loss on assistant tokens only (``loss: assistant``, the default; ``loss:
all`` trains on every token, rejected turns included, for a model trained from scratch).

Before any step: the version's shard hashes are checked, the tokenizer must render tools, the
model must embed every token (embeddings are never resized), and every row is measured under the
tokenizer so that ``max_length`` is chosen or checked and the rows it truncates are reported.
With ``loss: assistant``, assistant messages a hook rejected (the mistake of a fail -> hook ->
recover lesson) stay out of the loss too: the model sees them, and the hook's feedback and the
recovery after them, but does not learn to say them. ``loss_mask.txt`` in the output shows one
variant row with the trained text in ⟦...⟧ (one with a rejected turn, when there is one).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hsa.errors import HsaError
from hsa.model.hook import hook_rejected
from hsa.trainers.chat import check_chat_template, check_embeddings, ensure_response_parser
from hsa.trainers.evaluate import evaluate
from hsa.trainers.lengths import (
    choose_max_length,
    measure,
    render_loss_mask,
    tokenize_row,
    trained_spans,
    training_template,
)
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
    trained,
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

        turns = None
        if recipe.get("eval_turns", 0):
            turns = JudgedTurns(
                version_dir, manifest, rows, episodes=episodes, trust_hooks=trust_hooks
            )
        eval_turns, held_out = split_eval(turns, recipe, read_record(model_path), log)
        run.record["held_out_sources"] = sorted(held_out)
        if eval_turns:
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

        prepared, rejected = hook_rejections_masked(train_rows, tokenizer, recipe)
        masked = sum(map(len, rejected)) if prepared is not None else 0
        run.record["hook_rejected_turns_masked"] = masked
        if masked:
            log(
                f"sft: {masked} assistant turn(s) a hook rejected kept out of the loss (seen as "
                f"context, not learned)"
            )
        args = trl_config(
            recipe,
            run.staging,
            max_length=report.max_length,
            # Rows tokenized here carry their labels, assistant-only already (TRL refuses the
            # option on rows that are not conversations).
            assistant_only_loss=recipe.loss == "assistant" and prepared is None,
        )
        trainer = SFTTrainer(
            model=model,
            args=args,
            train_dataset=prepared
            if prepared is not None
            else train_rows.select_columns(["messages", "tools"]),
            processing_class=tokenizer,
            peft_config=lora_config(recipe),
        )
        _write_loss_mask(run.staging, trainer, train_rows, report, tokenizer, rejected)
        with run.timed("train"):
            result = trained(trainer, "sft")
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


def hook_rejections_masked(rows, tokenizer, recipe) -> tuple[Any, list[list[int]]]:
    """The rows tokenized with their labels, the assistant messages a hook rejected
    (hsa.model.hook.hook_rejected) kept out of the loss; and those messages, per row. None for
    the rows when no row has one (TRL then tokenizes the rows itself); (None, []) when the loss
    is on every token.

    TRL trains on every assistant message; a rejected one is the recorded mistake of a fail ->
    hook -> recover lesson, which the model should see (the hook's feedback and the recovery
    follow it) but not learn to say. The labels are built here, before TRL, from the tokenization
    TRL itself would make (hsa.trainers.lengths.tokenize_row), so whatever TRL does after (cut at
    max_length from either end, drop rows left with nothing to learn, shuffle) carries each row's
    own labels with it. ``hsa_row`` names each example's row (for loss_mask.txt)."""
    if recipe.loss != "assistant":
        return None, []
    rejected = [hook_rejected(messages) for messages in rows["messages"]]
    if not any(rejected):
        return None, rejected
    template = training_template(tokenizer)

    def labelled(row: dict, i: int) -> dict:
        ids, mask = tokenize_row(tokenizer, row, template)
        if rejected[i]:
            turns = [j for j, m in enumerate(row["messages"]) if m.get("role") == "assistant"]
            spans = trained_spans(mask)
            if len(spans) != len(turns):
                raise HsaError(
                    f"row {row['id']}: the chat template trains {len(spans)} span(s) for its "
                    f"{len(turns)} assistant message(s), so the turns a hook rejected cannot "
                    f"be told apart to keep them out of the loss"
                )
            for (start, end), j in zip(spans, turns, strict=True):
                if j in rejected[i]:
                    mask[start:end] = [0] * (end - start)
        labels = [token if bit else -100 for token, bit in zip(ids, mask, strict=True)]
        return {"input_ids": ids, "labels": labels, "hsa_row": i}

    columns = ["id", "messages", "tools"]
    prepared = rows.select_columns(columns).map(labelled, with_indices=True, remove_columns=columns)
    return prepared, rejected


def _write_loss_mask(
    folder: Path, trainer, rows, report, tokenizer, rejected: list[list[int]]
) -> None:
    """Show what the loss covers on one variant row of the trainer's prepared examples: one
    with a turn a hook rejected (``rejected``, per row) when there is one, else the first
    variant row."""
    dataset = trainer.train_dataset
    if "hsa_row" in dataset.column_names:  # labels built by hook_rejections_masked
        behind = dataset["hsa_row"]
    else:  # TRL's own: example k is the k-th row that truncation left something to learn
        behind = [
            i
            for i, r in enumerate(report.lengths)
            if r.first_trained is not None and r.first_trained < report.max_length
        ]
    if not behind:
        return
    variants = rows["hsa_variant"]  # one column read, not a row decoded per example
    k = min(
        range(len(behind)),
        key=lambda k: (not (rejected and rejected[behind[k]]), variants[behind[k]] == 0, k),
    )
    example = dataset[k]
    text = render_loss_mask(tokenizer, example["input_ids"], example["labels"])
    (folder / "loss_mask.txt").write_text(
        f"row {rows[behind[k]]['id']}: trained text in ⟦...⟧\n\n{text}\n", encoding="utf-8"
    )
