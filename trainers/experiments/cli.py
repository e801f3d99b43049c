"""``hsa experiment``: experiments that run hsa end to end (generate, train, eval) to check what
it claims. Registered with ``hsa`` through the ``hsa.commands`` entry-point group; imports stay
light so ``hsa --help`` does not load torch."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(name="experiment", no_args_is_help=True, add_completion=False,
                  rich_markup_mode="markdown")


@app.callback()
def experiment() -> None:
    """Experiments that run hsa end to end: `miniature` shows HSA training beating
    fixed-harness training on held-out harnesses, on a CPU."""


@app.command()
def miniature(
    out: Annotated[Path, typer.Option("--out", help="Folder for everything the run writes (new, empty, or an earlier run with the same settings to resume).")],
    seeds: Annotated[int, typer.Option(help="Seeds to run (0..N-1); each makes its own task, data and models.")] = 1,
    steps: Annotated[int, typer.Option(help="Training steps of each model.")] = 1500,
    checkpoints: Annotated[int, typer.Option(help="Checkpoints evaluated along training for the learning curve.")] = 6,
    batch_size: Annotated[int, typer.Option(help="Rows per training step.")] = 2,
    learning_rate: Annotated[float, typer.Option(help="Learning rate, constant after the warm-up.")] = 2e-3,
    warmup_steps: Annotated[int, typer.Option(help="Warm-up steps.")] = 100,
    hidden_size: Annotated[int, typer.Option(help="Model width.")] = 128,
    layers: Annotated[int, typer.Option(help="Transformer layers.")] = 3,
    heads: Annotated[int, typer.Option(help="Attention heads (also the key/value heads).")] = 4,
    intermediate_size: Annotated[int, typer.Option(help="MLP width.")] = 512,
    vocab_size: Annotated[int, typer.Option(help="BPE vocabulary of the tokenizer trained on the rows.")] = 1536,
    train_episodes: Annotated[int, typer.Option(help="Episodes the training versions are made of (8 rows each).")] = 300,
    eval_episodes: Annotated[int, typer.Option(help="Episodes evaluated (never trained on).")] = 50,
    curve_episodes: Annotated[int, typer.Option(help="Of those, the episodes judged at every checkpoint.")] = 16,
    turns: Annotated[int, typer.Option(help="Requests per episode, each a judged turn.")] = 4,
    heldout_variants: Annotated[int, typer.Option(help="Held-out harness variants per evaluated episode.")] = 2,
    device: Annotated[str, typer.Option(help="cpu, or cuda to train on a GPU.")] = "cpu",
    threads: Annotated[int, typer.Option(help="CPU threads for torch.")] = 2,
    eval_batch_size: Annotated[int, typer.Option(help="Prompts per generation batch in evaluation.")] = 32,
    max_new_tokens: Annotated[int, typer.Option(help="Most tokens of one answer in evaluation.")] = 48,
) -> None:
    """Proof in miniature: train one small model from scratch on the original harness only
    (*fixed*) and one on harness variants (*HSA*), with the same rows, steps and seed, and
    evaluate both on the original harness and on held-out variants (names and wordings no
    training row used), all with hsa's own generate, train sft and eval.

    The task is synthetic and made from the seed: eight tools with generic names, told apart by
    their descriptions; each request wants one call to the right tool with the values it names.
    Writes OUT/results.md (accuracy table against the target: HSA at least 20 points above fixed
    on held-out variants, within 5 of it on the original), results.json, curve.png (held-out
    accuracy over training steps) and, per seed, both eval reports and their `hsa eval compare`.

    On a 2-core CPU, one seed takes minutes:

        hsa experiment miniature --out runs/miniature

        hsa experiment miniature --seeds 3 --out runs/miniature-3

    On a GPU, a larger model for longer:

        hsa experiment miniature --device cuda --hidden-size 256 --layers 4 --steps 4000 --out runs/gpu
    """
    from trainers.cli import _require_train_extra
    from trainers.experiments.miniature.model import ModelShape
    from trainers.experiments.miniature.report import RESULTS_MD
    from trainers.experiments.miniature.run import Settings, run_miniature

    _require_train_extra()
    settings = Settings(seeds=seeds, steps=steps, checkpoints=checkpoints, batch_size=batch_size,
                        learning_rate=learning_rate, warmup_steps=warmup_steps,
                        shape=ModelShape(hidden_size=hidden_size, num_hidden_layers=layers,
                                         num_attention_heads=heads, num_key_value_heads=heads,
                                         intermediate_size=intermediate_size),
                        vocab_size=vocab_size, train_episodes=train_episodes,
                        eval_episodes=eval_episodes, curve_episodes=curve_episodes, turns=turns,
                        heldout_variants=heldout_variants, device=device, threads=threads,
                        eval_batch_size=eval_batch_size, max_new_tokens=max_new_tokens)
    results = run_miniature(out, settings, log=typer.echo)
    typer.echo((out / RESULTS_MD).read_text(encoding="utf-8"))
    met = ", ".join(f"seed {seed}: {'yes' if ok else 'no'}"
                    for seed, ok in results["target_met"].items())
    typer.echo(f"target met: {met}")
