"""The miniature's model: a Qwen2 model built from scratch at a given size, and its tokenizer.

The tokenizer is byte-level BPE (trainers.tiny) trained on the text of the training versions'
rows with every copied string taken out (:func:`without_copied_strings`: tool names and the
values calls take from requests), so the words of prompts, descriptions and requests become
tokens of their own (``weather``, ``stock``) while names and values, which the model copies,
split into letters and small pieces it can copy one by one, whatever the name. Its chat
template (chat_template.jinja beside this module) is part of the model: datasets are rendered
for training and prompts for evaluation through it.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from hsa.model.episode import parse_arguments
from hsa.text.mentions import replace_mentions

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


def without_copied_strings(messages: list[dict], tools: list[dict]) -> tuple[list, list]:
    """A row's ``messages`` and ``tools`` (OpenAI shape, as hsa writes them) with what a model
    copies into a call taken out: every tool name (in the tool list and in calls) and every
    string value of a call's arguments (in the calls and, as whole words, wherever a message
    says it).

    Why: a tokenizer trained on them learns merges of the shipped names and values (``Nike``,
    ``Paris``, ``manage``), which the model then has to copy as whole tokens, while a word the
    tool must be found by (``weather`` in a description and in a request) stays in pieces a
    small model must first join. Seen on the miniature: trained on whole rows with a
    vocabulary of 384, ``weather`` is 4 tokens; with 700, ``Nike`` and ``Paris`` became tokens
    and arguments were no longer copied (13% on the original harness at 4000 steps)."""
    values: set[str] = set()
    calls = [
        [
            {
                **call,
                "function": {
                    **call["function"],
                    "name": "",
                    "arguments": _blanked(
                        parse_arguments(call["function"].get("arguments") or {}, where="arguments"),
                        values,
                    ),
                },
            }
            for call in message.get("tool_calls") or []
        ]
        for message in messages
    ]
    said = dict.fromkeys(values, "")
    stripped = []
    for message, blanked in zip(messages, calls, strict=True):
        message = dict(message)
        if isinstance(message.get("content"), str):
            message["content"] = replace_mentions(message["content"], said)
        if blanked:
            message["tool_calls"] = blanked
        stripped.append(message)
    return stripped, [{**tool, "function": {**tool["function"], "name": ""}} for tool in tools]


def _blanked(value, found: set[str]):
    """``value`` with every string emptied; the strings it held are added to ``found``."""
    if isinstance(value, str):
        found.add(value)
        return ""
    if isinstance(value, dict):
        return {k: _blanked(v, found) for k, v in value.items()}
    if isinstance(value, list):
        return [_blanked(v, found) for v in value]
    return value


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
