"""``hsa train``: the three stages (sft -> opd -> rl), the shipped recipes, and a tiny local model.

Registered with ``hsa`` through the ``hsa.commands`` entry-point group (hsa itself never imports
the trainers). Imports here stay light so ``hsa --help`` does not load torch; each command checks
the ``train`` extra is installed before it starts.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated

import typer

from hsa.errors import HsaError

app = typer.Typer(
    name="train",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="markdown",
    help="Train on dataset versions with TRL: `sft` -> `opd` -> `rl`.\n\n"
    "1. `hsa train sft`: SFTTrainer on the version's rows, loss on assistant turns only.\n\n"
    "2. `hsa train opd`: on-policy distillation of the SFT model towards its base model on "
    "general prompts, to win back the general ability SFT costs.\n\n"
    "3. `hsa train rl`: GRPO on the version's judged turns, rewards from gold.\n\n"
    "Each output folder holds the model, a model card (README.md) and hsa_training.json "
    "(dataset version, recipe, seeds, library versions, losses, rewards before and after).\n\n"
    "Try it on a CPU in minutes:\n\n"
    "    hsa demo --out out\n\n"
    "    hsa train tiny-model --out tiny --dataset out/hat-train/VERSION\n\n"
    "    hsa train sft --dataset out/hat-train/VERSION --model tiny --recipe sft-tiny-cpu --out run/sft\n\n"
    "    hsa train opd --model run/sft --recipe opd-tiny-cpu --out run/opd\n\n"
    "    hsa train rl --dataset out/hat-train/VERSION --model run/opd --recipe rl-tiny-cpu --out run/rl\n\n"
    "Several GPUs: `accelerate launch --num_processes N -m hsa.trainers sft ...` (same options).",
)

Dataset = Annotated[
    Path,
    typer.Option("--dataset", help="A dataset version folder (from `hsa generate` or `hsa demo`)."),
]
Model = Annotated[
    str, typer.Option("--model", help="Model folder or Hub id to train (with its tokenizer).")
]
RecipeName = Annotated[
    str,
    typer.Option(
        "--recipe", help="A shipped recipe name (see `hsa train recipes`) or a YAML path."
    ),
]
Sets = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Override a recipe key: `trl.max_steps=10`, `rewards.exact=2`, `max_length=4096`, `lora.r=8`. Repeatable; values read as YAML and type-checked.",
    ),
]
Out = Annotated[
    Path,
    typer.Option(
        "--out",
        help="Output folder (must not exist or be empty); written aside and moved in when complete.",
    ),
]
Episodes = Annotated[
    Path | None,
    typer.Option(
        "--episodes",
        help="The version's source episodes, when not where its manifest says (rows' harnesses are rebuilt from them for rewards).",
    ),
]
TrustHooks = Annotated[
    bool,
    typer.Option(
        "--trust-hooks",
        help="Import harnesses' hooks.py (code: read it first): rebuilding some harnesses and the hooks reward need it.",
    ),
]


def _require_train_extra() -> None:
    missing = [
        m
        for m in ("torch", "transformers", "trl", "datasets", "accelerate")
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise HsaError(
            f"hsa train needs the train extra, which is not installed (missing: "
            f"{', '.join(missing)}): pip install torch==2.13.0 (a CPU machine; "
            f"first, or pip pulls a CUDA build) then pip install -e '.[train]'"
        )


def _recipe(name: str, stage: str, sets: list[str] | None):
    from hsa.trainers.recipe import load_recipe

    return load_recipe(name, stage=stage, overrides=sets or [])


def _say(message: str) -> None:
    typer.echo(message)


@app.command()
def sft(
    dataset: Dataset,
    model: Model,
    recipe: RecipeName,
    out: Out,
    set_: Sets = None,
    episodes: Episodes = None,
    trust_hooks: TrustHooks = False,
) -> None:
    """Supervised fine-tuning on a version's rows (trajectories under harness variants).

    Checks the version's shard hashes and that the tokenizer renders tools, measures every row
    in tokens and picks or checks `max_length` (reporting rows truncated), trains with the loss on
    assistant turns only, scores `eval_turns` held-out judged turns before and after, and writes
    `loss_mask.txt` showing what the loss covers on one variant row.
    """
    _require_train_extra()
    from hsa.trainers.sft import run_sft

    run_sft(
        dataset,
        model,
        _recipe(recipe, "sft", set_),
        out,
        episodes=episodes,
        trust_hooks=trust_hooks,
        log=_say,
    )


@app.command()
def opd(
    model: Annotated[str, typer.Option("--model", help="The student: the SFT output folder.")],
    recipe: RecipeName,
    out: Out,
    prompts: Annotated[
        Path | None,
        typer.Option(
            "--prompts",
            help="General prompts (JSONL or Parquet; `prompt` text or messages, optional `tools`). Default: the small bilingual set shipped in trainers/prompts/.",
        ),
    ] = None,
    teacher: Annotated[
        str | None,
        typer.Option(
            "--teacher",
            help="The teacher: the base model. Default: the base model named in the student's hsa_training.json.",
        ),
    ] = None,
    dataset: Annotated[
        Path | None,
        typer.Option(
            "--dataset",
            help="Optional: a version whose held-out judged turns are scored before and after.",
        ),
    ] = None,
    set_: Sets = None,
    episodes: Episodes = None,
    trust_hooks: TrustHooks = False,
) -> None:
    """On-policy distillation: the student samples answers to general prompts and learns the
    teacher's (base model's) distribution over them; student and teacher must share a vocabulary.
    """
    _require_train_extra()
    from hsa.trainers.opd import run_opd
    from hsa.trainers.prompts import SHIPPED_PROMPTS

    run_opd(
        prompts or SHIPPED_PROMPTS,
        model,
        _recipe(recipe, "opd", set_),
        out,
        teacher_path=teacher,
        version_dir=dataset,
        episodes=episodes,
        trust_hooks=trust_hooks,
        log=_say,
    )


@app.command()
def rl(
    dataset: Dataset,
    model: Model,
    recipe: RecipeName,
    out: Out,
    set_: Sets = None,
    episodes: Episodes = None,
    trust_hooks: TrustHooks = False,
) -> None:
    """GRPO on a version's judged turns: each prompt rendered with its row's own harness variant,
    rewards (exact, partial, format, skills, reply, hooks) from gold by the one scorer, weighted as
    the recipe says. Groups with all-equal rewards (no gradient) are noted as training goes.
    """
    _require_train_extra()
    from hsa.trainers.rl import run_rl

    run_rl(
        dataset,
        model,
        _recipe(recipe, "rl", set_),
        out,
        episodes=episodes,
        trust_hooks=trust_hooks,
        log=_say,
    )


@app.command()
def recipes() -> None:
    """List the shipped recipes: name, stage and what each is for."""
    import yaml

    from hsa.trainers.recipe import RECIPES_DIR

    for path in sorted(RECIPES_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        typer.echo(f"{path.stem:22} {data.get('stage', '?'):4} {data.get('description', '')}")


@app.command("tiny-model")
def tiny_model(
    out: Annotated[Path, typer.Option("--out", help="Folder for the model and tokenizer.")],
    dataset: Annotated[
        list[Path] | None,
        typer.Option(
            "--dataset", help="Versions whose rows the tokenizer is trained on (repeatable)."
        ),
    ] = None,
    prompts: Annotated[
        list[Path] | None,
        typer.Option(
            "--prompts", help="Prompt files added to the tokenizer's corpus (repeatable)."
        ),
    ] = None,
    vocab_size: Annotated[
        int,
        typer.Option(min=512, help="BPE vocabulary size; larger means shorter rows in tokens."),
    ] = 8192,
    seed: Annotated[int, typer.Option(help="Seed of the model's random weights.")] = 0,
) -> None:
    """Build a tiny Qwen2 model (2 layers, random weights) and a BPE tokenizer trained on the
    given versions and prompts, locally, with nothing downloaded: for trying `hsa train` on a CPU.
    Without --dataset, the tokenizer learns from the embedded example's episodes.
    """
    _require_train_extra()
    import orjson

    from hsa.example import EPISODES_PATH
    from hsa.files.overlap import refuse_inside
    from hsa.trainers.prompts import SHIPPED_PROMPTS, read_prompts
    from hsa.trainers.tiny import save_tiny_model
    from hsa.trainers.version import check_provenance, load_rows

    if out.exists() and any(out.iterdir()):
        raise HsaError("output folder exists and is not empty", file=str(out))
    refuse_inside(("--out", out), {f"--dataset {v}": v for v in dataset or []})
    corpus: list[str] = []
    for version in dataset or []:
        rows = load_rows(version, check_provenance(version))
        corpus += [
            orjson.dumps(r["messages"]).decode() + orjson.dumps(r["tools"]).decode()
            for r in rows.select_columns(["messages", "tools"])
        ]
    if not dataset:
        corpus += EPISODES_PATH.read_text(encoding="utf-8").splitlines()
    for path in [SHIPPED_PROMPTS, *(prompts or [])]:
        corpus += [orjson.dumps(p.messages).decode() for p in read_prompts(path)]
    path = save_tiny_model(out, corpus, vocab_size=vocab_size, seed=seed)
    from transformers import AutoTokenizer

    # The trained vocabulary, special and added tokens included: it may differ from the size
    # asked (a small corpus yields fewer merges; special tokens come on top).
    size = len(AutoTokenizer.from_pretrained(path))
    typer.echo(f"tiny model and tokenizer ({size} tokens, {len(corpus)} texts) in {path}")
