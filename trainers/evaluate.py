"""Reward means of a model on judged turns: what each stage reports before and after training.

Greedy decoding (reproducible), one turn at a time, the same prompt rendering, completion parsing
and reward functions as RL training, so "before" and "after" are measured by exactly what RL
optimises.
"""

from __future__ import annotations

import math

from hsa.trainers.chat import render_prompt
from hsa.trainers.recipe import REWARDS
from hsa.trainers.rewards import RewardSet
from hsa.trainers.version import JudgedTurn


def evaluate(
    model,
    tokenizer,
    rewards: RewardSet,
    turns: list[JudgedTurn],
    *,
    max_new_tokens: int,
    names: tuple[str, ...] | None = None,
) -> dict:
    """Mean of each reward over ``turns`` (None where it applied to none), and how many applied."""
    import torch

    names = names or tuple(n for n in REWARDS if n != "hooks" or rewards.trust_hooks)
    sums = dict.fromkeys(names, 0.0)
    counts = dict.fromkeys(names, 0)
    was_training = model.training
    model.eval()
    eos = tokenizer.eos_token_id
    try:
        for turn in turns:
            prompt = render_prompt(tokenizer, turn.prompt, turn.tools)
            ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=True)["input_ids"]
            ids = ids.to(model.device)
            with torch.inference_mode():
                out = model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    eos_token_id=eos,
                    pad_token_id=tokenizer.pad_token_id,
                )
            completion = out[0, ids.shape[1] :].tolist()
            scored = rewards.scored(prompt, completion, turn.row_id, turn.at)
            for name in names:
                value = rewards.value(name, scored)
                if value is not None and not math.isnan(value):
                    sums[name] += value
                    counts[name] += 1
    finally:
        model.train(was_training)
    return {
        "turns": len(turns),
        "means": {n: (sums[n] / counts[n] if counts[n] else None) for n in names},
        "applied": counts,
    }
