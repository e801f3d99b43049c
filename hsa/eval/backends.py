"""Where answers come from: an OpenAI-compatible endpoint, or a local model run in-process.

Both take items (hsa.eval.items) and hand back one :class:`Answer` per item as it is ready: the
assistant message in OpenAI form and the request's record (hsa.runtime.records.RequestRecord, so
latency follows vLLM's serving-benchmark conventions). Neither judges: the run does, with the one
scorer.

* :class:`EndpointBackend` asks through the runtime's client (hsa.runtime.endpoint: retries with
  backoff, streaming TTFT), with bounded concurrency. Each request carries a seed derived from the
  run's seed and the prompt, so a sampled run is repeatable where the server honours seeds.
* :class:`InProcessBackend` loads a model with ``transformers`` and decodes greedily in batches,
  no server: the prompt is rendered with the model's chat template, the item's tools and the
  generation prompt (the request ``transformers serve`` would build), and the completion's token
  ids are parsed into tool calls by the function ``transformers serve`` uses, so both backends
  read a completion alike.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hsa.augment.rng import derive_seed
from hsa.dataset.rows import chat_template_messages
from hsa.errors import HsaError
from hsa.eval.items import Item
from hsa.runtime.records import RequestRecord

OnAnswer = Callable[["Answer"], None]


@dataclass(frozen=True, slots=True)
class Answer:
    """The model's message for one item, and the request's record; or None with ``error`` when
    there is no message to judge (the endpoint refused the request, e.g. a prompt longer than the
    model's context, or the completion's tool call could not be parsed)."""

    key: str
    fingerprint: str
    message: dict | None
    record: dict | None
    error: str | None = None

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "fingerprint": self.fingerprint,
            "message": self.message,
            "record": self.record,
            "error": self.error,
        }


def request_seed(seed: int, fingerprint: str) -> int:
    """The seed sent with one prompt's request (31 bits: what servers accept); from the prompt's
    fingerprint, so the same prompt is asked alike whichever item carries it."""
    return derive_seed(seed, fingerprint, 0, "request") % 2**31


def assistant_message(content: str | None, calls: list[tuple[str, str]]) -> dict:
    """An assistant message as the runtime stores it: text or null beside tool calls."""
    message: dict = {"role": "assistant", "content": content if content or not calls else None}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i + 1}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            for i, (name, arguments) in enumerate(calls)
        ]
    return message


def unparsable_reason(exc: Exception) -> str:
    """Why the response parser refused a completion, in one line."""
    if isinstance(exc, KeyError):
        return f"a tool call without {exc}"
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


class EndpointBackend:
    """Items through an OpenAI-compatible endpoint (``--base-url URL --model M``)."""

    kind = "endpoint"

    def __init__(self, endpoint, *, concurrency: int = 4, seed: int = 0):
        if concurrency < 1:
            raise HsaError(f"--concurrency must be at least 1, got {concurrency}")
        self.endpoint, self.concurrency, self.seed = endpoint, concurrency, seed

    def identity(self) -> dict:
        """What decides the answers (a resumed run must match it); the URL may change."""
        sampling = self.endpoint.sampling.to_dict()
        sampling.pop("seed", None)
        return {
            "backend": self.kind,
            "model": self.endpoint.model,
            "sampling": sampling,
            "seed": self.seed,
        }

    def describe(self) -> dict:
        return {
            **self.identity(),
            "endpoint": self.endpoint.describe(),
            "concurrency": self.concurrency,
        }

    def answer(self, items: Sequence[Item], on_answer: OnAnswer) -> None:
        if items:
            asyncio.run(self._answer(items, on_answer))

    async def _answer(self, items: Sequence[Item], on_answer: OnAnswer) -> None:
        from hsa.runtime.endpoint import ChatClient, EndpointError

        gate = asyncio.Semaphore(self.concurrency)

        async def one(client: ChatClient, item: Item) -> Answer:
            async with gate:
                try:
                    done = await client.complete(
                        list(item.messages),
                        list(item.tools),
                        request_id=f"hsa-eval-{item.fingerprint[:16]}",
                        seed=request_seed(self.seed, item.fingerprint),
                    )
                except EndpointError as exc:
                    if exc.status is None:  # no answer at all: the endpoint is down or slow;
                        raise  # stop, and a rerun resumes
                    if exc.setup:  # a wrong URL or key fails every request alike: stop
                        raise
                    # The server answered with an error for this prompt (a 4xx, or a 5xx after
                    # every retry: transformers serve answers 500 when it cannot parse the
                    # model's tool call): the item has no answer, the run goes on.
                    return Answer(item.key, item.fingerprint, None, None, error=exc.reason)
                return Answer(item.key, item.fingerprint, done.message, done.record.to_dict())

        async with ChatClient(self.endpoint) as client:
            # A wrong model name or key fails every request alike: stop before asking (each
            # refusal would otherwise be an item without an answer, and the report a 0%).
            await client.check_model()
            tasks = [asyncio.create_task(one(client, item)) for item in items]
            try:
                for finished in asyncio.as_completed(tasks):
                    on_answer(await finished)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)


class InProcessBackend:
    """Items through a local model (``--model-path DIR``), greedy, ``batch_size`` at a time.

    A request's latency is its batch's wall time (every item of a batch is asked and answered
    together); time to first token is not measured (no streaming). ``device`` (``cuda``,
    ``cuda:1``...) runs the model there; by default it stays where transformers loads it."""

    kind = "in-process"

    def __init__(
        self,
        model_path: str | Path,
        *,
        max_tokens: int,
        batch_size: int = 8,
        device: str | None = None,
    ):
        if batch_size < 1:
            raise HsaError(f"--batch-size must be at least 1, got {batch_size}")
        self.model_path = Path(model_path)
        if not self.model_path.is_dir():
            raise HsaError("model folder does not exist", file=str(self.model_path))
        self.max_tokens, self.batch_size, self.device = max_tokens, batch_size, device
        self._loaded = None

    def identity(self) -> dict:
        return {
            "backend": self.kind,
            "model": str(self.model_path.resolve()),
            "sampling": {"temperature": 0.0, "top_p": None, "max_tokens": self.max_tokens},
        }

    def describe(self) -> dict:
        return {**self.identity(), "batch_size": self.batch_size, "device": self.device}

    def _load(self):
        if self._loaded is None:
            try:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer
                from transformers.cli.serving.utils import parse_assistant_message
            except ImportError as exc:
                raise HsaError(
                    f"the in-process backend needs torch and transformers[serving] "
                    f"(pip install 'hsa[train]'): {exc}"
                ) from None
            tokenizer = AutoTokenizer.from_pretrained(self.model_path)
            model = AutoModelForCausalLM.from_pretrained(self.model_path, dtype="auto")
            if self.device is not None:
                model.to(self.device)
            model.eval()
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
            self._loaded = (torch, tokenizer, model, parse_assistant_message)
        return self._loaded

    def prompt_ids(self, item: Item) -> list[int]:
        """The token ids ``transformers serve`` would build for the item's request."""
        _, tokenizer, _, _ = self._load()
        return list(
            tokenizer.apply_chat_template(
                chat_template_messages(list(item.messages)),
                tools=list(item.tools) or None,
                add_generation_prompt=True,
                tokenize=True,
                return_dict=True,
            )["input_ids"]
        )

    def answer(self, items: Sequence[Item], on_answer: OnAnswer) -> None:
        if not items:
            return
        torch, tokenizer, model, parse = self._load()
        prompts = {item.key: self.prompt_ids(item) for item in items}
        # Similar lengths batch together (less padding); the key breaks ties, so batches are
        # the same from run to run.
        ordered = sorted(items, key=lambda i: (len(prompts[i.key]), i.key))
        config = model.generation_config.__class__.from_dict(model.generation_config.to_dict())
        config.do_sample, config.max_new_tokens = False, self.max_tokens
        config.temperature = config.top_p = config.top_k = None
        config.pad_token_id = tokenizer.pad_token_id
        eos = config.eos_token_id if config.eos_token_id is not None else tokenizer.eos_token_id
        stops = set(eos) if isinstance(eos, list) else {eos}
        for start in range(0, len(ordered), self.batch_size):
            batch = ordered[start : start + self.batch_size]
            ids = [prompts[item.key] for item in batch]
            width = max(map(len, ids))
            # Left padding: every row's generation starts at the same position.
            input_ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(x)) + x for x in ids])
            mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids])
            began = time.perf_counter()
            with torch.no_grad():
                out = model.generate(
                    input_ids=input_ids.to(model.device),
                    attention_mask=mask.to(model.device),
                    generation_config=config,
                )
            latency = time.perf_counter() - began
            for item, prompt, row in zip(batch, ids, out[:, width:].tolist(), strict=True):
                end = next((k + 1 for k, t in enumerate(row) if t in stops), len(row))
                generated = row[:end]
                text = tokenizer.decode(generated, skip_special_tokens=True)
                try:
                    content, _, calls = parse(
                        tokenizer,
                        model,
                        generated,
                        input_ids=prompt,
                        cleaned_content=text,
                        tools=list(item.tools) or None,
                    )
                # Where transformers serve answers HTTP 500: JSON that does not parse
                # (ValueError), a tool call object without "name" (KeyError) or one that is not
                # an object (TypeError), as a barely trained model writes them.
                except (ValueError, KeyError, TypeError) as exc:
                    on_answer(
                        Answer(
                            item.key,
                            item.fingerprint,
                            None,
                            None,
                            error=f"the completion cannot be parsed: {unparsable_reason(exc)}",
                        )
                    )
                    continue
                message = assistant_message(content, [(c.name, c.arguments) for c in calls or []])
                finish = (
                    "tool_calls"
                    if calls
                    else "stop"
                    if end < len(row) or (generated and generated[-1] in stops)
                    else "length"
                )
                record = RequestRecord(
                    index=0,
                    latency_s=latency,
                    prompt_tokens=len(prompt),
                    completion_tokens=len(generated),
                    finish_reason=finish,
                )
                on_answer(Answer(item.key, item.fingerprint, message, record.to_dict()))
