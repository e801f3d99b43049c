"""``hsa experiment``: experiments that run hsa end to end (generate, train, eval) to check what
it claims. Registered with ``hsa`` through the ``hsa.commands`` entry-point group; imports stay
light so ``hsa --help`` does not load torch."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hsa.trainers.experiments.miniature.model import ModelShape
from hsa.trainers.experiments.miniature.run import Settings

# One home for the defaults: the run's Settings and the model's shape.
_RUN, _SHAPE = Settings(), ModelShape()

app = typer.Typer(
    name="experiment", no_args_is_help=True, add_completion=False, rich_markup_mode="markdown"
)


@app.callback()
def experiment() -> None:
    """Experiments that run hsa end to end: `miniature` tests, on a CPU, whether HSA training
    beats fixed-harness training on held-out harnesses."""


@app.command()
def miniature(
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Folder for everything the run writes (new, empty, or an earlier run with the same settings to resume).",
        ),
    ],
    seeds: Annotated[
        int, typer.Option(help="Seeds to run (0..N-1); each makes its own task, data and models.")
    ] = _RUN.seeds,
    steps: Annotated[int, typer.Option(help="Training steps of each model.")] = _RUN.steps,
    checkpoints: Annotated[
        int, typer.Option(help="Checkpoints evaluated along training for the learning curve.")
    ] = _RUN.checkpoints,
    batch_size: Annotated[
        int, typer.Option(help="Rows (episodes under one harness) per training step.")
    ] = _RUN.batch_size,
    learning_rate: Annotated[
        float, typer.Option(help="Learning rate, constant after the warm-up until the decay.")
    ] = _RUN.learning_rate,
    warmup_steps: Annotated[int, typer.Option(help="Warm-up steps.")] = _RUN.warmup_steps,
    decay_share: Annotated[
        float,
        typer.Option(
            help="Last share of the steps in which the learning rate falls (cosine) to a "
            "tenth; 0 keeps it constant to the end."
        ),
    ] = _RUN.decay_share,
    hidden_size: Annotated[int, typer.Option(help="Model width.")] = _SHAPE.hidden_size,
    layers: Annotated[int, typer.Option(help="Transformer layers.")] = _SHAPE.num_hidden_layers,
    heads: Annotated[
        int, typer.Option(help="Attention heads (also the key/value heads).")
    ] = _SHAPE.num_attention_heads,
    intermediate_size: Annotated[int, typer.Option(help="MLP width.")] = _SHAPE.intermediate_size,
    vocab_size: Annotated[
        int,
        typer.Option(
            help="Most tokens of the BPE tokenizer trained on the rows' words (names and "
            "argument values left out, so they split into pieces the model copies)."
        ),
    ] = _RUN.vocab_size,
    tools: Annotated[int, typer.Option(help="Tools of the task's harness.")] = _RUN.tools,
    train_episodes: Annotated[
        int, typer.Option(help="Episodes the training versions are made of (8 rows each).")
    ] = _RUN.train_episodes,
    eval_episodes: Annotated[
        int, typer.Option(help="Episodes evaluated (never trained on).")
    ] = _RUN.eval_episodes,
    curve_episodes: Annotated[
        int, typer.Option(help="Of those, the episodes judged at every checkpoint.")
    ] = _RUN.curve_episodes,
    turns: Annotated[
        int, typer.Option(help="Requests per episode, each answered by one call and judged.")
    ] = _RUN.turns,
    heldout_variants: Annotated[
        int, typer.Option(help="Held-out harness variants per evaluated episode.")
    ] = _RUN.heldout_variants,
    device: Annotated[
        str, typer.Option(help="cpu, or cuda to train and evaluate on a GPU.")
    ] = _RUN.device,
    threads: Annotated[int, typer.Option(help="CPU threads for torch.")] = _RUN.threads,
    parallel: Annotated[
        bool,
        typer.Option(
            help="On a CPU with 2+ threads, train and evaluate the two models side by side, "
            "half the threads each (faster for models this small)."
        ),
    ] = _RUN.parallel,
    eval_batch_size: Annotated[
        int, typer.Option(help="Prompts per generation batch in evaluation.")
    ] = _RUN.eval_batch_size,
    max_new_tokens: Annotated[
        int, typer.Option(help="Most tokens of one answer in evaluation.")
    ] = _RUN.max_new_tokens,
) -> None:
    """The method's claim in miniature: train one small model from scratch on the original harness only
    (*fixed*) and one on harness variants (*HSA*), with the same rows, steps and seed, and
    evaluate both on the original harness and on held-out variants (names and wordings no
    training row used), all with hsa's own generate, train sft and eval (in-process).

    The task is synthetic and made from the seed: a few tools with generic names, told apart
    by their descriptions; each episode is a conversation of short requests, each wanting one
    call to the right tool with the values it names. Writes OUT/results.md (accuracy table
    against the target: HSA at least 20 points above fixed on held-out variants, within 5 of
    it on the original harness), results.json, curve.png (held-out accuracy over training
    steps) and, per seed, both eval reports and their `hsa eval compare` (compare.md).

    On a 2-core CPU, one seed takes minutes:

        hsa experiment miniature --out runs/miniature

        hsa experiment miniature --seeds 3 --out runs/miniature-3

    On a GPU, a larger model for longer:

        hsa experiment miniature --device cuda --hidden-size 256 --layers 4 --steps 10000 --out runs/gpu
    """
    import os

    # On a CPU that other processes share, torch's OpenMP threads spin while they wait for one
    # another and a step can take ten times as long; sleeping threads lose little when the CPU
    # is free. Read once, when torch is first imported (below), so only if the user set nothing.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from hsa.trainers.cli import _require_train_extra
    from hsa.trainers.experiments.miniature.report import RESULTS_MD
    from hsa.trainers.experiments.miniature.run import run_miniature

    _require_train_extra()
    settings = Settings(
        seeds=seeds,
        steps=steps,
        checkpoints=checkpoints,
        batch_size=batch_size,
        learning_rate=learning_rate,
        warmup_steps=warmup_steps,
        decay_share=decay_share,
        shape=ModelShape(
            hidden_size=hidden_size,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=heads,
            intermediate_size=intermediate_size,
        ),
        vocab_size=vocab_size,
        tools=tools,
        train_episodes=train_episodes,
        eval_episodes=eval_episodes,
        curve_episodes=curve_episodes,
        turns=turns,
        heldout_variants=heldout_variants,
        device=device,
        threads=threads,
        parallel=parallel,
        eval_batch_size=eval_batch_size,
        max_new_tokens=max_new_tokens,
    )
    results = run_miniature(out, settings, log=typer.echo)
    typer.echo((out / RESULTS_MD).read_text(encoding="utf-8"))
    met = ", ".join(
        f"seed {seed}: {'yes' if ok else 'no'}" for seed, ok in results["target_met"].items()
    )
    typer.echo(f"target met: {met}")
