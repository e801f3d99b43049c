"""What passes between rows and a tokenizer: per-row prompts, parsed completions, and the checks
that stop a tokenizer or model that would train silently wrong.

GRPO and distillation render only trainer-level Python tools into prompts and ignore a per-row
``tools`` column, so a harness variant's tools would never reach the model. :func:`render_prompt`
renders each prompt through the tokenizer's own chat template with the row's tools and the
generation prompt, into the string those trainers then tokenize as is. :func:`parse_completion`
reads a completion back into an assistant message with the tokenizer's response parser (TRL's
``parse_response``), from token ids: decoding with special tokens skipped can strip tool-call
markers.
"""

from __future__ import annotations

from typing import Any

from hsa.errors import HsaError

# A tool whose every part must show in a rendered prompt: a template that drops tool definitions
# trains a model that never sees the harness it is meant to read.
_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "probe_tool_7f3a",
        "description": "probe_description_c91e",
        "parameters": {
            "type": "object",
            "properties": {"probe_param_2b8d": {"type": "string"}},
            "required": ["probe_param_2b8d"],
        },
    },
}


def check_chat_template(tokenizer, *, model: str = "the tokenizer") -> None:
    """Refuse a tokenizer whose chat template cannot render a harness: its tool definitions (name,
    description, parameters) and a tool-calling exchange (call, arguments, tool result)."""
    from jinja2 import TemplateError
    from trl.chat_template_utils import supports_tool_calling

    if not tokenizer.chat_template:
        raise HsaError(
            f"{model} has no chat template; training on harness rows needs one that "
            f"renders tools (e.g. a Qwen2.5/Qwen3 instruct tokenizer)"
        )
    try:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "hi"}],
            tools=[_PROBE_TOOL],
            tokenize=False,
            add_generation_prompt=True,
        )
    except (TemplateError, TypeError, ValueError) as exc:
        raise HsaError(
            f"{model}: its chat template fails when given tools ({exc}); it cannot render a harness"
        ) from None
    parts = ("probe_tool_7f3a", "probe_description_c91e", "probe_param_2b8d")
    missing = [p for p in parts if p not in text]
    if missing:
        raise HsaError(
            f"{model}: its chat template does not render the tools it is given (the "
            f"tool's name, description or parameters are missing from the prompt), so "
            f"a model would never see the harness's tools; use a tokenizer whose "
            f"template renders `tools` (e.g. Qwen2.5/Qwen3 instruct)"
        )
    if not supports_tool_calling(tokenizer):
        raise HsaError(
            f"{model}: its chat template does not render tool calls and tool results "
            f"(assistant tool_calls -> tool message), which every harness row has"
        )


def check_embeddings(model, tokenizer, *, name: str = "the model") -> None:
    """Every token id the tokenizer can produce must have an embedding row. hsa never resizes
    embeddings: a resized student no longer shares its teacher's vocabulary."""
    rows = model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > rows:
        raise HsaError(
            f"{name}: the tokenizer has {len(tokenizer)} tokens but the model embeds "
            f"only {rows}; hsa does not resize embeddings (it would break the shared "
            f"vocabulary distillation needs): use the tokenizer saved with the model"
        )


def check_vocabulary(student_tokenizer, teacher_tokenizer, student_model, teacher_model) -> None:
    """Student and teacher must share a vocabulary: distillation compares their next-token
    distributions position by position, so token ``i`` must mean the same for both."""
    s_size = student_model.config.get_text_config().vocab_size
    t_size = teacher_model.config.get_text_config().vocab_size
    if s_size != t_size:
        raise HsaError(
            f"student and teacher do not share a vocabulary: the student's model has "
            f"vocab_size {s_size}, the teacher's {t_size} (was an embedding resized?); "
            f"distillation needs the same vocabulary: use the base model the student "
            f"was trained from as the teacher"
        )
    s_vocab, t_vocab = student_tokenizer.get_vocab(), teacher_tokenizer.get_vocab()
    if s_vocab != t_vocab:
        differing = sorted(set(s_vocab.items()) ^ set(t_vocab.items()), key=lambda kv: kv[1])[:3]
        raise HsaError(
            f"student and teacher tokenizers map tokens to different ids (e.g. "
            f"{', '.join(f'{t!r}->{i}' for t, i in differing)}); distillation needs "
            f"the same vocabulary: use the base model the student was trained from as "
            f"the teacher"
        )


def render_prompt(tokenizer, messages: list[dict], tools: list[dict] | None) -> str:
    """The prompt string for one judged turn or general prompt: the row's messages, with its own
    tools, through the tokenizer's chat template, ending with the generation prompt."""
    text = tokenizer.apply_chat_template(
        messages, tools=tools or None, tokenize=False, add_generation_prompt=True
    )
    # Trainers tokenize string prompts with special tokens added: a template that writes the BOS
    # token itself would get a second one.
    bos = tokenizer.bos_token
    if bos and text.startswith(bos) and tokenizer("x")["input_ids"][:1] == [tokenizer.bos_token_id]:
        text = text[len(bos) :]
    return text


def ensure_response_parser(tokenizer) -> None:
    """Give the tokenizer a response parser for its chat template (TRL knows the common ones)."""
    if (
        getattr(tokenizer, "response_template", None) is not None
        or getattr(tokenizer, "response_schema", None) is not None
    ):
        return
    from trl.chat_template_utils import add_response_schema

    try:
        add_response_schema(tokenizer)
    except ValueError:
        raise HsaError(
            "cannot parse tool calls out of this model's completions: TRL has no "
            "response parser for its chat template; set tokenizer.response_template "
            "(see transformers' chat response parsing docs) and save the tokenizer"
        ) from None


def tool_call_opener(tokenizer) -> str | None:
    """The text that opens a tool call in this template's responses (``<tool_call>`` for Qwen)."""
    template = getattr(tokenizer, "response_template", None)
    if isinstance(template, dict):
        field = (template.get("fields") or {}).get("tool_calls") or {}
        opener = field.get("open")
        if isinstance(opener, str):
            return opener
    return None


def parse_completion(
    tokenizer, completion_ids: list[int], prompt: str, tools: list[dict] | None
) -> tuple[dict, bool]:
    """The completion as an assistant message (tool-call arguments typed by the row's schemas),
    and whether it tried to call a tool that did not parse (a malformed call falls back to text).
    """
    from trl.chat_template_utils import parse_response

    ids = list(completion_ids)
    message: dict[str, Any] = parse_response(tokenizer, ids, prefix=prompt, tools=tools or None)
    opener = tool_call_opener(tokenizer)
    malformed = False
    if not message.get("tool_calls") and opener is not None:
        malformed = opener in tokenizer.decode(ids, skip_special_tokens=False)
    return message, malformed
