"""The miniature's model: a Qwen2 model built from scratch at a given size, and its tokenizer.

The tokenizer is byte-level BPE (trainers.tiny) trained on the text of the training versions'
rows, with a small vocabulary, so that everyday words get tokens of their own while rare
strings such as masked tool names (``fn_3f2a``) and unseen ones split into small pieces the model
can copy one by one. Its chat template (chat_template.jinja beside this module) is part of the
model: datasets are rendered for training and prompts for evaluation through it.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

CHAT_TEMPLATE = Path(__file__).with_name("chat_template.jinja")


@dataclass(frozen=True)
class ModelShape:
    """The Qwen2Config fields the experiment sets (the rest are trainers.tiny's)."""

    hidden_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 4
    intermediate_size: int = 256

    def to_dict(self) -> dict:
        return asdict(self)


def build_tokenizer(corpus, vocab_size: int, *, isolate_spaces: bool = True):
    """A BPE tokenizer trained on ``corpus`` with the miniature's chat template."""
    from hsa.trainers.tiny import build_tokenizer as tiny_tokenizer

    tokenizer = tiny_tokenizer(corpus, vocab_size=vocab_size, isolate_spaces=isolate_spaces)
    tokenizer.chat_template = CHAT_TEMPLATE.read_text(encoding="utf-8")
    return tokenizer


def save_model(out: str | os.PathLike, tokenizer, shape: ModelShape, *, seed: int) -> Path:
    """Build the model with random weights (``seed``) and save it with ``tokenizer`` to ``out``."""
    from hsa.trainers.tiny import build_model

    out = Path(out)
    model = build_model(tokenizer, seed=seed, **shape.to_dict())
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def parameter_count(model_dir: str | os.PathLike) -> int:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    return sum(p.numel() for p in model.parameters())
