"""Tiny models and tokenizers built locally (no hub access), for tests and CPU dry runs.

A byte-level BPE tokenizer trained on the text it will see, with TRL's Qwen2.5 chat template (so
TRL swaps in its training variant for assistant-only loss, and ``add_response_schema`` knows how
to parse its tool calls), and a randomly initialised 2-layer Qwen2 model (~1.5 MB). Byte-level BPE
has no unknown token: text unlike the corpus only costs more tokens.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

# Markers of the Qwen chat format: ordinary added tokens (not special ones), as in real Qwen
# tokenizers, so decoding with special tokens skipped keeps them.
MARKERS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]


def build_tokenizer(corpus: Iterable[str], vocab_size: int = 1024, *, isolate_spaces: bool = False):
    """``isolate_spaces``: every whitespace character is a token of its own, so a word splits
    into the same tokens after a space as after a quote (``Paris`` in a request and in a call's
    arguments); rows get longer."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    if isolate_spaces:
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(r"\s"), behavior="isolated"), tokenizer.pre_tokenizer]
        )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    fast.add_tokens(MARKERS)
    # TRL recognises its own template string and swaps in the training variant with
    # {% generation %} markers, which assistant-only loss needs.
    fast.chat_template = qwen2_5_chat_template
    return fast


# The tiny model's shape; build_model(..., **overrides) changes any Qwen2Config field of it.
TINY_CONFIG = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": True,
}


def build_model(tokenizer, *, seed: int = 0, **overrides):
    """A randomly initialised Qwen2 model for ``tokenizer``: :data:`TINY_CONFIG`, with any
    Qwen2Config field overridden (``hidden_size=128, num_hidden_layers=3``)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        **{**TINY_CONFIG, **overrides},
        vocab_size=len(tokenizer),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return Qwen2ForCausalLM(config)


def save_tiny_model(
    out: str | os.PathLike, corpus: Iterable[str], *, vocab_size: int = 4096, seed: int = 0
) -> Path:
    """Train a tokenizer on ``corpus``, build the model, and save both to ``out`` (loadable with
    ``AutoModelForCausalLM`` / ``AutoTokenizer``)."""
    out = Path(out)
    tokenizer = build_tokenizer(corpus, vocab_size=vocab_size)
    model = build_model(tokenizer, seed=seed)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
