"""Token lengths of rows under a model's tokenizer, measured before SFT, and the loss mask shown.

Rendered harness rows are long (a system prompt with every skill and tool, then the trajectory).
SFT truncates at ``max_length`` keeping the start, so late assistant turns are dropped first, and a
``max_length`` shorter than the system prompt and tools leaves rows with nothing to learn, which
TRL drops; when that is every row it stops with an empty dataset. :func:`measure` tokenizes each
row exactly as ``SFTTrainer`` will (the training chat template with generation markers, the row's
tools) and :func:`choose_max_length` turns a recipe's ``max_length`` into a checked number.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hsa.errors import HsaError


@dataclass(frozen=True)
class RowLength:
    tokens: int
    spans: tuple[tuple[int, int], ...]  # [start, end) of each run of assistant (trained) tokens

    @property
    def first_trained(self) -> int | None:
        return self.spans[0][0] if self.spans else None

    @property
    def trained(self) -> int:
        return sum(end - start for start, end in self.spans)

    def trained_past(self, cut: int) -> int:
        return sum(end - max(start, cut) for start, end in self.spans if end > cut)


@dataclass
class LengthReport:
    """Token lengths of a set of rows, and what a given ``max_length`` does to them."""

    lengths: list[RowLength]
    max_length: int | None = None
    truncated: int = 0  # rows longer than max_length (late turns dropped)
    emptied: int = 0  # rows whose every assistant token lies past max_length (dropped)
    trained_tokens_lost: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        tokens = sorted(r.tokens for r in self.lengths)
        if not tokens:
            return {"rows": 0}

        def pct(q: float) -> int:
            return tokens[min(len(tokens) - 1, int(q * len(tokens)))]

        trained = sum(r.trained for r in self.lengths)
        return {
            "rows": len(tokens),
            "tokens_min": tokens[0],
            "tokens_p50": pct(0.5),
            "tokens_p95": pct(0.95),
            "tokens_max": tokens[-1],
            "prefix_before_first_assistant_min": min(
                (r.first_trained for r in self.lengths if r.first_trained is not None), default=None
            ),
            "max_length": self.max_length,
            "rows_truncated": self.truncated,
            "rows_dropped_no_assistant_token_left": self.emptied,
            "assistant_tokens": trained,
            "assistant_tokens_lost": self.trained_tokens_lost,
        }


def training_template(tokenizer) -> str | None:
    """The chat template SFTTrainer trains with: TRL's variant with ``{% generation %}`` markers
    when the tokenizer's own template has none (None: the tokenizer's own is used)."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    if has_generation_markers(tokenizer.chat_template):
        return None
    try:
        return get_training_chat_template(tokenizer)
    except ValueError as exc:
        raise HsaError(
            f"assistant-only loss needs a chat template with generation markers, and "
            f"TRL has no training variant of this tokenizer's template ({exc})"
        ) from None


def tokenize_row(tokenizer, row: dict, template: str | None) -> tuple[list[int], list[int]]:
    """(input ids, assistant mask) of one row, as SFTTrainer tokenizes it."""
    out = tokenizer.apply_chat_template(
        row["messages"],
        tools=row.get("tools") or None,
        chat_template=template,
        tokenize=True,
        return_dict=True,
        return_assistant_tokens_mask=True,
    )
    return list(out["input_ids"]), list(out["assistant_masks"])


def measure(tokenizer, rows) -> LengthReport:
    template = training_template(tokenizer)
    lengths = []
    for row in rows:
        ids, mask = tokenize_row(tokenizer, row, template)
        lengths.append(RowLength(len(ids), tuple(trained_spans(mask))))
    return LengthReport(lengths)


def trained_spans(mask: list[int]) -> list[tuple[int, int]]:
    """[start, end) of each run of trained tokens in an assistant mask: one per assistant message
    under a template that marks each of them whole."""
    spans, start = [], None
    for i, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = i
        elif not bit and start is not None:
            spans.append((start, i))
            start = None
    return spans


def choose_max_length(
    report: LengthReport, wanted: int | str, model_limit: int | None
) -> LengthReport:
    """Apply ``wanted`` (a number, or ``auto``: the longest row, capped at the model's positions)
    and count what it truncates; refuse one that leaves no row anything to learn."""
    if not report.lengths:
        raise HsaError("no rows to train on")
    if all(r.first_trained is None for r in report.lengths):
        raise HsaError(
            "no row has an assistant message to learn: the rows are prompts without answers "
            "(a BFCL import's episodes end before the call). SFT needs trajectories: make "
            "them with hsa rollout, or train on these prompts with hsa train rl"
        )
    longest = max(r.tokens for r in report.lengths)
    if wanted == "auto":
        max_length = min(longest, model_limit) if model_limit else longest
        if model_limit and longest > model_limit:
            report.notes.append(
                f"max_length auto: the longest row has {longest} tokens, capped at "
                f"the model's {model_limit} positions"
            )
    else:
        max_length = int(wanted)
        if model_limit and max_length > model_limit:
            report.notes.append(
                f"max_length {max_length} exceeds the model's {model_limit} positions"
            )
    report.max_length = max_length
    report.truncated = sum(r.tokens > max_length for r in report.lengths)
    report.emptied = sum(
        r.first_trained is None or r.first_trained >= max_length for r in report.lengths
    )
    report.trained_tokens_lost = sum(r.trained_past(max_length) for r in report.lengths)
    if report.emptied == len(report.lengths):
        shortest_prefix = min(
            (r.first_trained for r in report.lengths if r.first_trained is not None), default=None
        )
        raise HsaError(
            f"max_length {max_length} drops every assistant turn of every row: the system prompt "
            f"and tools alone take {shortest_prefix} tokens or more before the first assistant "
            f"token (rows have {min(r.tokens for r in report.lengths)}-{longest} tokens), so TRL "
            f"would be left with an empty dataset. Set max_length above "
            f"{shortest_prefix} (--set max_length=auto trains on whole rows)"
        )
    return report


def render_loss_mask(tokenizer, input_ids: list[int], labels: list[int], *, keep: int = 80) -> str:
    """The row's text with trained spans shown whole in ⟦...⟧ and masked spans shortened to their
    first and last ``keep`` characters, so a reader sees exactly what the loss covers."""
    spans: list[tuple[bool, list[int]]] = []
    for token, label in zip(input_ids, labels, strict=True):
        trained = label != -100
        if spans and spans[-1][0] == trained:
            spans[-1][1].append(token)
        else:
            spans.append((trained, [token]))
    out = []
    for trained, ids in spans:
        text = tokenizer.decode(ids, skip_special_tokens=False)
        if trained:
            out.append(f"⟦{text}⟧")
        elif len(text) > 2 * keep + 20:
            out.append(f"{text[:keep]}…[{len(text) - 2 * keep} masked characters]…{text[-keep:]}")
        else:
            out.append(text)
    return "".join(out)
