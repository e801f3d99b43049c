"""A scripted OpenAI-protocol chat server: a boundary stand-in for tests, NOT a model.

The runtime's hook, retry, fault and resume logic needs a model that makes exactly the mistakes a
test plans (a blocked call, a reply a hook rejects, a 429, a 500); no real model on this machine
does that on demand, so this server answers ``POST /v1/chat/completions`` with planned replies
(JSON, or SSE when ``stream`` is set) and ``GET /health`` with ``{"status": "ok"}``. Like
``transformers serve`` it rejects a request whose ``model`` differs from the one it serves (400).
``GET /v1/models`` lists that one model. Token counts in ``usage`` are made up (characters / 4): they test plumbing, not tokenizers.

Plans: :class:`Script` (replies in order, whatever the conversation), :class:`PerConversation`
(each conversation its own list, told apart by the ``X-Request-Id`` the runtime sends:
``<conversation id>:<request index>``), :func:`replay_plans` (a teacher that replays the recorded
assistant messages of every variant of a recipe, optionally with a planted mistake).

Run it alone for a manual session (prints the base URL; Ctrl-C stops it)::

    python -m tests.openai_stub --model teacher --replay hsa/example/episodes.jsonl \
        --recipe hat-train --mistake-every 5
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    """One planned answer: an assistant message, or an HTTP error ``status``."""

    content: str | None = None
    tool_calls: tuple[tuple[str, dict | str], ...] = ()
    status: int = 200
    delay_s: float = 0.0
    retry_after: float | None = None

    def message(self, request_id: str) -> dict:
        message: dict = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"{request_id}-{i}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args
                        if isinstance(args, str)
                        else json.dumps(args, ensure_ascii=False),
                    },
                }
                for i, (name, args) in enumerate(self.tool_calls)
            ]
        return message


def text(content: str, **kw) -> Reply:
    return Reply(content=content, **kw)


def calls(*pairs: tuple[str, dict | str], **kw) -> Reply:
    return Reply(tool_calls=tuple(pairs), **kw)


def status(code: int, **kw) -> Reply:
    return Reply(status=code, **kw)


def from_message(message: dict) -> Reply:
    """A recorded assistant message as a planned reply."""
    pairs = tuple(
        (c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []
    )
    return Reply(content=message.get("content"), tool_calls=pairs)


class Script:
    """Replies in order, shared by every conversation; past the end: HTTP 400 (a test bug)."""

    def __init__(self, replies: Iterable[Reply]):
        self.replies = list(replies)
        self.next = 0
        self.lock = threading.Lock()

    def __call__(self, request_id: str, body: dict) -> Reply:
        with self.lock:
            if self.next >= len(self.replies):
                return status(400, content="the script has no more replies")
            self.next += 1
            return self.replies[self.next - 1]


class PerConversation:
    """Each conversation's own replies: request ``<conversation>:<n>`` gets reply n (so a
    request asked again, as a resumed rollout does, gets the same answer, like a deterministic
    model); past the end (or unknown): HTTP 400."""

    def __init__(self, plans: dict[str, list[Reply]]):
        self.plans = plans

    def __call__(self, request_id: str, body: dict) -> Reply:
        conversation, _, index = request_id.rpartition(":")
        plan = self.plans.get(conversation, [])
        n = int(index) if index.isdigit() else len(plan)
        if n >= len(plan):
            return status(400, content=f"no reply planned for request {n} of {conversation!r}")
        return plan[n]


def _first_int_changed(message: dict, harness) -> dict | None:
    """The message with the first integer argument of its first domain call changed (a wrong
    link, still within 1-10 so that no hook catches it), or None when it has none."""
    for i, call in enumerate(message.get("tool_calls") or []):
        if call["function"]["name"] == harness.skill_loader:
            continue
        args = json.loads(call["function"]["arguments"])
        for key, value in args.items():
            if isinstance(value, int) and not isinstance(value, bool):
                args[key] = value % 10 + 1 if 1 <= value <= 10 else value + 1
                changed = [dict(c) for c in message["tool_calls"]]
                changed[i] = {
                    **call,
                    "function": {**call["function"], "arguments": json.dumps(args)},
                }
                return {**message, "tool_calls": changed}
    return None


def replay_plans(
    episodes_path: str, recipe=None, *, mistake_every: int = 0, trust_hooks: bool = True
) -> tuple[dict[str, list[Reply]], set[str]]:
    """A replaying teacher: for every variant (``<id>#<index>``) of ``recipe`` over the episodes
    (the originals only without one), the recorded assistant messages in order; and the ids
    where it makes a mistake. With ``mistake_every`` k, every k-th trajectory (in row order)
    gets a wrong integer argument in its last domain call, so that the scorer discards it."""
    from hsa.augment.variant import Variant
    from hsa.dataset.pipeline import augment_episode
    from hsa.model.episode import Episode, read_episodes

    plans: dict[str, list[Reply]] = {}
    mistaken: set[str] = set()
    n = 0
    for episode in read_episodes(episodes_path, trust_hooks=trust_hooks):
        if not isinstance(episode, Episode):
            continue
        variants = (
            augment_episode(recipe, episode)
            if recipe is not None
            else [Variant(episode.id, 0, episode, (), None)]
        )
        for variant in variants:
            if not isinstance(variant, Variant):
                continue
            messages = [m for m in variant.episode.messages if m.get("role") == "assistant"]
            key = f"{variant.source_id}#{variant.index}"
            n += 1
            if mistake_every and n % mistake_every == 0:
                # the last message with a call: an earlier one may be a call a hook blocks
                for k in reversed(range(len(messages))):
                    message = messages[k]
                    wrong = _first_int_changed(message, variant.episode.harness)
                    if wrong is not None:
                        messages = messages[:k] + [wrong] + messages[k + 1 :]
                        mistaken.add(key)
                        break
            plans[key] = [from_message(m) for m in messages]
    return plans, mistaken


@dataclass
class Seen:
    """A request as the server received it."""

    request_id: str
    conversation: str
    body: dict
    status: int = 200


class ScriptedServer:
    """The server on 127.0.0.1 (a free port), in a background thread; use as a context manager."""

    def __init__(self, plan, *, model: str = "scripted-teacher", log: str | None = None):
        self.plan, self.model, self.log = plan, model, log
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _send(self, code: int, payload: dict, headers: dict | None = None):
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.rstrip("/") == "/health":
                    self._send(200, {"status": "ok"})
                elif self.path.rstrip("/") == "/v1/models":
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": [
                                {
                                    "id": server.model,
                                    "object": "model",
                                    "created": 0,
                                    "owned_by": "test",
                                }
                            ],
                        },
                    )
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "not found"}})
                    return
                request_id = self.headers.get("X-Request-Id") or f"r{len(server.seen)}"
                conversation = request_id.rpartition(":")[0] or request_id
                seen = Seen(request_id, conversation, body)
                with server.lock:
                    server.seen.append(seen)
                if body.get("model") != server.model:
                    seen.status = 400
                    self._send(
                        400,
                        {
                            "detail": f"Server is pinned to {server.model!r}; requested "
                            f"{body.get('model')!r}."
                        },
                    )
                    return
                reply = server.plan(request_id, body)
                if server.log is not None:
                    with open(server.log, "a") as handle:
                        handle.write(request_id + "\n")
                time.sleep(reply.delay_s)
                if reply.status != 200:
                    seen.status = reply.status
                    headers = (
                        {"Retry-After": str(reply.retry_after)}
                        if reply.retry_after is not None
                        else {}
                    )
                    self._send(
                        reply.status,
                        {"error": {"message": reply.content or f"planned HTTP {reply.status}"}},
                        headers,
                    )
                    return
                message = reply.message(request_id)
                prompt = max(1, len(json.dumps(body["messages"])) // 4)
                completion = max(1, len(json.dumps(message)) // 4)
                usage = {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                }
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                if body.get("stream"):
                    self._stream(request_id, message, finish, usage)
                    return
                self._send(
                    200,
                    {
                        "id": request_id,
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": server.model,
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": usage,
                    },
                )

            def _stream(self, request_id, message, finish, usage):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()

                def chunk(delta, finish_reason=None, usage=None):
                    payload = {
                        "id": request_id,
                        "object": "chat.completion.chunk",
                        "created": int(time.time()),
                        "model": server.model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
                    }
                    if usage is not None:
                        payload["usage"] = usage
                    self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
                    self.wfile.flush()

                chunk({"role": "assistant"})  # the role-only chunk some servers send at once
                content = message.get("content") or ""
                for start in range(0, len(content), max(1, len(content) // 2 or 1)):
                    chunk({"content": content[start : start + max(1, len(content) // 2 or 1)]})
                for i, call in enumerate(message.get("tool_calls") or []):
                    args = call["function"]["arguments"]
                    half = len(args) // 2
                    chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": i,
                                    "id": call["id"],
                                    "type": "function",
                                    "function": {
                                        "name": call["function"]["name"],
                                        "arguments": args[:half],
                                    },
                                }
                            ]
                        }
                    )
                    chunk({"tool_calls": [{"index": i, "function": {"arguments": args[half:]}}]})
                chunk({}, finish_reason=finish, usage=usage)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a client that went away (a killed rollout) is not the server's problem

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def conversations(self) -> set[str]:
        return {s.conversation for s in self.seen}

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="scripted-teacher")
    parser.add_argument("--replay", required=True, help="episodes JSONL to replay")
    parser.add_argument("--recipe", default=None, help="recipe whose variants to replay")
    parser.add_argument("--mistake-every", type=int, default=0)
    parser.add_argument("--log", default=None, help="append every request id to this file")
    args = parser.parse_args()
    recipe = None
    if args.recipe:
        from hsa.augment.recipe import load_recipe

        recipe = load_recipe(args.recipe)
    plans, _ = replay_plans(args.replay, recipe, mistake_every=args.mistake_every)
    with ScriptedServer(PerConversation(plans), model=args.model, log=args.log) as server:
        print(f"{server.base_url} model={args.model} conversations={len(plans)}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
