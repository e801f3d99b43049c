"""An OpenAI-compatible chat endpoint (vLLM, ``transformers serve``, a hosted API), called through
the ``openai`` client: sampling settings, retries with backoff, and a timing record per request.

Promises: a 429, a 5xx, a timeout or a dropped connection is retried with exponential backoff
(jittered, or as the server's ``Retry-After`` asks) up to ``max_retries`` times, then raised as a
retryable :class:`EndpointError`; any other refusal (400, 401, 404, 422...) is raised at once as a
non-retryable one. The API key is read from the environment variable ``api_key_env`` at call time
and is never stored in a setting, a record or an error. Tool calls come back with their
``arguments`` as the string the server sent (not parsed here: a malformed call is the model's, and
the hooks and the scorer judge it).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from hsa.errors import HsaError
from hsa.runtime.records import RequestRecord

# Statuses worth another attempt: the server is busy, overloaded or restarting.
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
MAX_RETRY_AFTER_S = 60.0


@dataclass(frozen=True)
class Sampling:
    """What a request asks of the model; recorded in a rollout's manifest and version."""

    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = (
        None  # per request, a seed derived from it and the request (see Conversation)
    )

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Endpoint:
    """Where and how to call a model. Holds the *name* of the API key's environment variable,
    never the key."""

    base_url: str
    model: str
    sampling: Sampling = field(default_factory=Sampling)
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    max_retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    stream: bool = False

    def describe(self) -> dict:
        """Every setting, as JSON (safe to write: the key itself is not among them)."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "sampling": self.sampling.to_dict(),
            "api_key_env": self.api_key_env,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "backoff_s": self.backoff_s,
            "max_backoff_s": self.max_backoff_s,
            "stream": self.stream,
        }


# Refusals that say the setup is wrong (key, permission, model or path), not this request.
SETUP_STATUS = frozenset({401, 403, 404})


class EndpointError(HsaError):
    """The endpoint gave no usable answer. ``retryable``: the same request may succeed later
    (the endpoint was busy, down or slow); ``setup``: no request will succeed until the
    settings change (a wrong key, model or URL). Neither is the model's fault."""

    def __init__(self, reason: str, *, retryable: bool, status: int | None = None):
        super().__init__(reason)
        self.retryable = retryable
        self.status = status

    @property
    def setup(self) -> bool:
        return self.status in SETUP_STATUS


def refused_settings(exc: EndpointError) -> str:
    """What a run says when the endpoint refuses its settings (:attr:`EndpointError.setup`):
    the refusal, and the setting to check (a rerun of the same command fails the same way)."""
    if exc.status == 404:
        hint = (
            "is the base URL the API's root (for vLLM and transformers serve it ends in /v1), "
            "and the model one it serves?"
        )
    else:
        hint = "is the API key (the environment variable --api-key-env names) right for it?"
    return f"the endpoint refused the run's settings: {exc}; {hint}"


@dataclass(frozen=True, slots=True)
class Completion:
    """The assistant message of one request (OpenAI dict form) and its record."""

    message: dict
    record: RequestRecord


def _retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    value = getattr(response, "headers", {}).get("retry-after") if response is not None else None
    try:
        return min(float(value), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None


def _message(content: str | None, calls: list[dict]) -> dict:
    """The assistant message as the conversation stores it: text or null, and the tool calls."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content if content or not calls else None,
    }
    if calls:
        message["tool_calls"] = calls
    if message["content"] is None and not calls:
        message["content"] = ""
    return message


def _call(call_id: str | None, name: str | None, arguments: str | None) -> dict:
    return {
        "id": call_id or "",
        "type": "function",
        "function": {"name": name or "", "arguments": arguments or ""},
    }


class ChatClient:
    """Calls one :class:`Endpoint`; one client per event loop (it holds a connection pool)."""

    def __init__(self, endpoint: Endpoint):
        try:
            import openai
        except ImportError:
            raise HsaError("the runtime needs the openai client: pip install 'hsa[llm]'") from None
        self.endpoint = endpoint
        self._openai = openai
        # The client's own retries are off: ours record every attempt and wait.
        self._client = openai.AsyncOpenAI(
            base_url=endpoint.base_url,
            timeout=endpoint.timeout_s,
            max_retries=0,
            api_key=os.environ.get(endpoint.api_key_env) or "EMPTY",
        )

    async def close(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def check_model(self) -> None:
        """Fail early, with one clear message, when the endpoint cannot be reached or lists its
        models and the configured one is not among them (``transformers serve`` answers only to
        the exact string it was started with). Endpoints that do not list models pass."""
        openai = self._openai
        try:
            page = await self._client.models.list()
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise EndpointError(
                    f"{self.endpoint.base_url} refused the API key from "
                    f"${self.endpoint.api_key_env} (HTTP {exc.status_code})",
                    retryable=False,
                    status=exc.status_code,
                ) from None
            return  # no model list here (404, 405...): the first request will tell
        except openai.APIConnectionError as exc:
            raise EndpointError(
                f"cannot connect to {self.endpoint.base_url}: {exc}", retryable=True
            ) from None
        served = [m.id for m in getattr(page, "data", None) or []]
        if served and self.endpoint.model not in served:
            shown = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "")
            raise EndpointError(
                f"{self.endpoint.base_url} does not serve model "
                f"{self.endpoint.model!r}; it serves: {shown} (send the exact "
                f"name)",
                retryable=False,
                status=404,
            )

    def _params(self, messages: list[dict], tools: list[dict], seed: int | None) -> dict:
        sampling = self.endpoint.sampling
        params: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": messages,
            "temperature": sampling.temperature,
        }
        if tools:
            params["tools"] = tools
        if sampling.top_p is not None:
            params["top_p"] = sampling.top_p
        if sampling.max_tokens is not None:
            params["max_tokens"] = sampling.max_tokens
        if seed is not None:
            params["seed"] = seed
        return params

    async def complete(
        self,
        messages: list[dict],
        tools: list[dict],
        *,
        index: int = 0,
        request_id: str | None = None,
        seed: int | None = None,
    ) -> Completion:
        """One assistant message for ``messages`` with ``tools`` on offer. ``request_id`` is sent
        as ``X-Request-Id`` (servers log it; ``transformers serve`` builds tool-call ids from it)."""
        params = self._params(messages, tools, seed)
        headers = {"X-Request-Id": request_id} if request_id else {}
        openai = self._openai
        waited = 0.0
        endpoint = self.endpoint
        for attempt in range(endpoint.max_retries + 1):
            retry_after = None
            try:
                call = self._streamed if endpoint.stream else self._whole
                message, record = await call(params, headers)
                return Completion(
                    message,
                    RequestRecord(index=index, attempts=attempt + 1, waited_s=waited, **record),
                )
            except openai.APIStatusError as exc:
                status = exc.status_code
                reason = f"HTTP {status} from {endpoint.base_url}: {_detail(exc)}"
                if not _retryable_status(status):
                    raise EndpointError(reason, retryable=False, status=status) from None
                retry_after = _retry_after(exc)
            except openai.APITimeoutError:
                status = None
                reason = f"no answer from {endpoint.base_url} within {endpoint.timeout_s:g} s"
            except openai.APIConnectionError as exc:
                status, reason = None, f"cannot connect to {endpoint.base_url}: {exc}"
            except openai.OpenAIError as exc:  # an answer the client cannot read
                raise EndpointError(
                    f"unusable answer from {endpoint.base_url}: {type(exc).__name__}: {exc}",
                    retryable=False,
                ) from None
            if attempt == endpoint.max_retries:
                raise EndpointError(
                    f"{reason} (gave up after {attempt + 1} attempts)",
                    retryable=True,
                    status=status,
                )
            delay = self._delay(attempt, retry_after)
            waited += delay
            await asyncio.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        base = min(self.endpoint.max_backoff_s, self.endpoint.backoff_s * 2**attempt)
        return base * random.uniform(0.5, 1.0)  # jitter: many workers do not retry in step

    async def _whole(self, params: dict, headers: dict) -> tuple[dict, dict]:
        start = time.perf_counter()
        try:
            response = await self._client.chat.completions.create(**params, extra_headers=headers)
        except ValueError as exc:  # a body announced as JSON that is none (a proxy's page)
            raise self._unusable(f"not JSON ({exc})") from None
        latency = time.perf_counter() - start
        # The client hands back what it parsed, whatever its shape: a text body as a str, a
        # JSON list or null as such, an object without the fields as a model with them unset.
        choices = getattr(response, "choices", None)
        kind = self._openai.types.chat.ChatCompletion
        if not isinstance(response, kind) or not isinstance(choices, list):
            raise self._unusable(f"not a chat completion but {str(response)[:80]!r}")
        if not choices:
            raise EndpointError(
                f"{self.endpoint.base_url} answered without a choice", retryable=False
            )
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise self._unusable("its choice has no message")
        if not isinstance(message, self._openai.types.chat.ChatCompletionMessage):
            raise self._unusable(f"its message is no message but {str(message)[:80]!r}")
        content, raw_calls = message.content, message.tool_calls
        if content is not None and not isinstance(content, str):
            raise self._unusable(f"its content is no text but {str(content)[:80]!r}")
        if raw_calls is not None and not isinstance(raw_calls, list):
            raise self._unusable(f"its tool_calls are no list but {str(raw_calls)[:80]!r}")
        calls = []
        for c in raw_calls or []:
            function = getattr(c, "function", None)
            if function is None:
                continue
            name, arguments = function.name, function.arguments
            if isinstance(arguments, dict):  # some servers send the object, not its JSON text
                arguments = json.dumps(arguments, ensure_ascii=False)
            if not isinstance(name, str) or not isinstance(arguments, str | None):
                raise self._unusable(
                    f"a tool call's name or arguments are no text: {str(function)[:80]!r}"
                )
            calls.append(_call(c.id, name, arguments))
        usage = response.usage
        return _message(content, calls), {
            "latency_s": latency,
            "finish_reason": choice.finish_reason,
            "prompt_tokens": getattr(usage, "prompt_tokens", None),
            "completion_tokens": getattr(usage, "completion_tokens", None),
        }

    def _unusable(self, what: str) -> EndpointError:
        return EndpointError(
            f"unusable answer from {self.endpoint.base_url}: {what}", retryable=False
        )

    async def _streamed(self, params: dict, headers: dict) -> tuple[dict, dict]:
        start = time.perf_counter()
        stream = await self._client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}, extra_headers=headers
        )
        ttft = None
        text: list[str] = []
        calls: list[dict] = []
        at_index: dict[int, dict] = {}  # the call a part at this index adds to
        finish = usage = None
        chunks = 0
        try:
            async for chunk in stream:
                chunks += 1
                if chunk.usage is not None:
                    usage = chunk.usage
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if delta is None:
                        continue
                    produced = (
                        bool(delta.content)
                        or bool(delta.tool_calls)
                        or bool(getattr(delta, "reasoning_content", None))
                    )
                    if produced and ttft is None:
                        ttft = time.perf_counter() - start
                    if delta.content:
                        text.append(delta.content)
                    for part in delta.tool_calls or []:
                        call = at_index.get(part.index)
                        # Some servers stream parallel calls all at index 0: a new id is a new
                        # call, not more of the last one.
                        if call is None or (part.id and call["id"] and part.id != call["id"]):
                            call = {"id": None, "name": "", "arguments": ""}
                            calls.append(call)
                            at_index[part.index] = call
                        call["id"] = part.id or call["id"]
                        if part.function is not None:
                            call["name"] += part.function.name or ""
                            call["arguments"] += part.function.arguments or ""
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except (ValueError, AttributeError, TypeError) as exc:  # a chunk that is no chunk
            raise self._unusable(f"a streamed chunk is unreadable ({exc})") from None
        if not chunks:
            raise self._unusable(
                "the stream carried no chunk (does the server stream? try without --stream)"
            )
        if finish is None and not text and not calls:
            raise self._unusable("the stream ended with no message and no finish reason")
        latency = time.perf_counter() - start
        message = _message(
            "".join(text) or None,
            [_call(c["id"], c["name"], c["arguments"]) for c in calls],
        )
        return message, {
            "latency_s": latency,
            "ttft_s": ttft,
            "finish_reason": finish,
            "prompt_tokens": getattr(usage, "prompt_tokens", None),
            "completion_tokens": getattr(usage, "completion_tokens", None),
        }


def _detail(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        body = body.get("detail") or body.get("message") or body.get("error") or body
    return str(body if body is not None else exc)[:300]
