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
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson

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
    """``messages`` and ``tools`` with what a model copies into a call taken out: every tool
    name (in the tool list and in calls) and every string value of a call's arguments (in the
    calls and, as whole words, wherever a message says it).

    Why: a tokenizer trained on them learns merges of the shipped names and values (``Nike``,
    ``Paris``, ``manage``), which the model then has to copy as whole tokens, while a word the
    tool must be found by (``weather`` in a description and in a request) stays in pieces a
    small model must first join. Seen on the miniature: trained on whole rows with a
    vocabulary of 384, ``weather`` is 4 tokens; with 700, ``Nike`` and ``Paris`` became tokens
    and arguments were no longer copied (13% on the original harness at 4000 steps)."""
    values: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            values.update(_strings(_arguments(call)))
    said = (
        re.compile(
            r"(?<!\w)(?:"
            + "|".join(map(re.escape, sorted(values, key=len, reverse=True)))
            + r")(?!\w)"
        )
        if values
        else None
    )

    def unnamed(entry: dict) -> dict:
        if "function" in entry:
            return {**entry, "function": unnamed(entry["function"])}
        return {**entry, "name": ""}

    def message(m: dict) -> dict:
        m = dict(m)
        if said and isinstance(m.get("content"), str):
            m["content"] = said.sub("", m["content"])
        if m.get("tool_calls"):
            m["tool_calls"] = [
                _with_arguments(unnamed(call), _blank(_arguments(call))) for call in m["tool_calls"]
            ]
        return m

    return [message(m) for m in messages], [unnamed(t) for t in tools]


def _arguments(call: dict):
    arguments = (call.get("function") or call).get("arguments") or {}
    return orjson.loads(arguments) if isinstance(arguments, str) else arguments


def _with_arguments(call: dict, arguments) -> dict:
    if "function" in call:
        return {**call, "function": {**call["function"], "arguments": arguments}}
    return {**call, "arguments": arguments}


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for v in value.values() if isinstance(value, dict) else value:
            yield from _strings(v)


def _blank(value):
    if isinstance(value, str):
        return ""
    if isinstance(value, dict):
        return {k: _blank(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_blank(v) for v in value]
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
