"""The harness runtime: the agent loop, hooks with feedback and retry, tool executors (code,
replay, faults), endpoint retries and timings.

The model side is tests/openai_stub.py's scripted server, a boundary stand-in: no real model
here makes a planned mistake on demand. The real-model path (transformers serve) is in
test_serve.py.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from conftest import PRICE_TOOL, write_harness
from hypothesis import given
from hypothesis import strategies as st
from openai_stub import PerConversation, Script, ScriptedServer, calls, status, text

from hsa.augment.mapping import Mapping
from hsa.errors import HooksNotTrustedError, HsaError
from hsa.example import load_example_episodes
from hsa.model.harness import load_harness
from hsa.model.hook import hook_rejected
from hsa.model.hook_runner import complies
from hsa.runtime import (
    CallContext,
    ChatClient,
    CodeTools,
    Conversation,
    End,
    Endpoint,
    EndpointError,
    FaultInjector,
    FaultPlan,
    HookRunner,
    ReplayTools,
    RequestRecord,
    Sampling,
    Step,
    ToolBelt,
    ToolOutcome,
    summarize_requests,
)
from hsa.runtime.records import DONE, HOOK_ERROR, STEP_LIMIT, percentile

HOOKS = """
def no_shouting(payload, config):
    text = payload["text"]
    if text.isupper():
        return {"ok": False, "feedback": "The user is shouting; answer calmly."}
    return {"ok": True}


def link_range(payload, config):
    args = payload["arguments"]
    if not isinstance(args, dict):
        return {"ok": False, "feedback": "arguments must be an object"}
    if args.get("link", 0) > config["max_link"]:
        return {"ok": False, "feedback": f"link {args['link']} does not exist"}
    return {"ok": True}


def sane_result(payload, config):
    if "NaN" in payload["result"]:
        return {"ok": False, "feedback": f"{payload['tool_name']} returned nonsense; try later"}
    return {"ok": True}


def short_reply(payload, config):
    if len(payload["reply"]) > config["max_chars"]:
        return {"ok": False, "feedback": f"at most {config['max_chars']} characters"}
    if payload["tools_called"] and not payload["loaded_skills"]:
        return {"ok": False, "feedback": "load a skill before replying with facts"}
    return {"ok": True}


def broken(payload, config):
    raise RuntimeError("boom")


def leaves(payload, config):
    import sys

    sys.exit(0)


def loops(payload, config):
    while True:
        pass
"""
HARNESS = """name: shop
version: "1"
skill_kinds: [reply]
prompt:
  layout: markdown
  sections: [persona, skills, tools, hooks]
  text: {persona: You sell things.}
hooks:
  - {name: calm, event: user_message, function: no_shouting}
  - {name: link_check, event: tool_call, function: link_range, config: {max_link: 10}}
  - {name: sanity, event: tool_result, function: sane_result}
  - {name: reply_check, event: reply, function: short_reply,
     config: {max_chars: 40, feedback_format: "xml:check"}}
"""
MODEL = "scripted-teacher"


@pytest.fixture
def shop(tmp_path) -> Path:
    return write_harness(
        tmp_path / "shop", harness_yaml=HARNESS, hooks=HOOKS, tools={"a_price.json": PRICE_TOOL}
    )


def user(content: str) -> dict:
    return {"role": "user", "content": content}


def converse(
    harness, plan, users, *, tools=None, stream=False, max_steps=12, retries=0, conversation_id="c1"
):
    """Run one conversation against a scripted server; return (conversation, records, server)."""

    async def go(server):
        endpoint = Endpoint(
            server.base_url, MODEL, stream=stream, max_retries=retries, backoff_s=0.01
        )
        async with ChatClient(endpoint) as client:
            conversation = Conversation(
                harness,
                client,
                tools or ToolBelt(),
                conversation_id=conversation_id,
                max_steps=max_steps,
            )
            return conversation, [r async for r in conversation.run(users)]

    with ScriptedServer(plan, model=MODEL) as server:
        conversation, records = asyncio.run(go(server))
    return conversation, records, server


def steps(records):
    return [r for r in records if isinstance(r, Step)]


def test_skill_load_tool_call_and_every_hook_event_with_retry(shop):
    harness = load_harness(shop, trust_hooks=True)
    replay = ReplayTools(
        harness,
        [
            ("get_price", {"link": 3}, '{"price": 159}'),
            ("get_price", {"link": 4}, '{"price": "NaN"}'),
        ],
    )
    plan = Script(
        [
            calls(("get_price", {"link": 30})),  # blocked by link_check
            calls(("get_price", {"link": 3}), ("get_price", {"link": 4})),  # second result insane
            text("Link 3 costs 159."),  # no skill loaded: sent back
            calls(("load_skill", {"name": "price-reply"})),
            text("Link 3 is 159 yuan; link 4 is not available right now, sorry."),  # too long
            text("Link 3: 159 yuan."),
        ]
    )
    conversation, records, _ = converse(
        harness, plan, [user("HOW MUCH ARE 3 AND 4")], tools=ToolBelt(replay)
    )
    messages = conversation.trajectory.messages
    # the user hook's feedback follows the user message, named after the hook
    assert messages[1] == {
        "role": "user",
        "name": "hook.calm",
        "content": "The user is shouting; answer calmly.",
    }
    accepted = [s.accepted for s in steps(records)]
    assert accepted == [False, True, False, True, False, True]
    assert [s.position for s in steps(records)] == [None, 0, None, 1, None, 2]
    blocked = messages[3]
    assert blocked["name"] == "hook.link_check" and blocked["content"] == "link 30 does not exist"
    assert blocked["tool_call_id"] == messages[2]["tool_calls"][0]["id"] == "call_1"
    ok, insane, about = messages[5], messages[6], messages[7]
    assert ok == {"role": "tool", "tool_call_id": "call_2", "content": '{"price": 159}'}
    # A result a tool_result hook fails stays, and the step stands (the call was no mistake):
    # the feedback follows the step's results from the user side.
    assert insane == {"role": "tool", "tool_call_id": "call_3", "content": '{"price": "NaN"}'}
    assert about == {
        "role": "user",
        "name": "hook.sanity",
        "content": "get_price returned nonsense; try later",
    }
    # Every reader of the messages (trainers, rollouts, audits) sees the steps the runtime sent
    # back, and only those.
    assert hook_rejected(messages) == [s.at for s in steps(records) if not s.accepted]
    # a reply hook's feedback comes as a user message, wrapped in the hook's format
    assert messages[9] == {
        "role": "user",
        "name": "hook.reply_check",
        "content": '<check name="reply_check">load a skill before replying with facts</check>',
    }
    skill = next(r for r in records if isinstance(r, ToolOutcome) and r.source == "skill")
    assert skill.content == load_harness(shop).skill("price-reply").content
    assert messages[-1] == {"role": "assistant", "content": "Link 3: 159 yuan."}
    assert conversation.trajectory.status == DONE and isinstance(records[-1], End)
    assert len(conversation.trajectory.requests) == 6


def test_a_tool_call_hook_reads_what_the_conversation_loaded_and_called(tmp_path):
    """A policy "load price-reply before calling get_price" reads the skills loaded so far in
    its tool_call payload, as a reply hook does: without them every call after the load was
    blocked as if nothing had been loaded. The evaluation's compliance check reads the same."""
    hooks = (
        "def skill_first(payload, config):\n"
        "    if payload['tool_name'] == 'get_price' and 'price-reply' not in "
        "payload.get('loaded_skills', []):\n"
        "        return {'ok': False, 'feedback': 'load price-reply first'}\n"
        "    assert payload['user_message'] == 'price of 3?' and payload['skill_kinds']\n"
        "    return {'ok': True}\n"
    )
    harness_yaml = HARNESS.split("hooks:")[0] + (
        "hooks:\n  - {name: skill_first, event: tool_call, function: skill_first}\n"
    )
    root = write_harness(
        tmp_path / "h", harness_yaml=harness_yaml, hooks=hooks, tools={"a_price.json": PRICE_TOOL}
    )
    harness = load_harness(root, trust_hooks=True)
    replay = ReplayTools(harness, [("get_price", {"link": 3}, '{"price": 159}')])
    plan = Script(
        [
            calls(("load_skill", {"name": "price-reply"})),
            calls(("get_price", {"link": 3})),
            text("Link 3: 159 yuan."),
        ]
    )
    conversation, records, _ = converse(
        harness, plan, [user("price of 3?")], tools=ToolBelt(replay)
    )
    assert [s.accepted for s in steps(records)] == [True, True, True]
    messages = conversation.trajectory.messages
    runner = HookRunner(harness)
    assert complies(runner, tuple(messages[:3]), messages[3]) is True
    assert complies(runner, tuple(messages[:1]), messages[3]) is False  # nothing loaded yet


def test_the_runtime_reproduces_recorded_episodes_hooks_and_all():
    """A model that says exactly what the recording says gets exactly the recorded conversation:
    the same skill bodies, tool results, and hook feedback at the same places."""
    episodes = [e for e in load_example_episodes() if e.meta.get("hooks")][:12]
    assert {h for e in episodes for h in e.meta["hooks"]} >= {
        "tool_arguments",
        "reply_skill_loaded",
    }
    plans = {
        f"{e.id}#0": [_reply_of(m) for m in e.messages if m["role"] == "assistant"]
        for e in episodes
    }

    async def go(server):
        out = []
        async with ChatClient(Endpoint(server.base_url, MODEL, max_retries=0)) as client:
            for e in episodes:
                users = [m for m in e.messages if m["role"] == "user" and "name" not in m]
                conversation = Conversation(
                    e.harness,
                    client,
                    ToolBelt(ReplayTools.from_episodes([e])),
                    conversation_id=f"{e.id}#0",
                )
                [r async for r in conversation.run(users)]
                out.append(conversation.trajectory.messages)
        return out

    with ScriptedServer(PerConversation(plans), model=MODEL) as server:
        got = asyncio.run(go(server))
    for episode, messages in zip(episodes, got):
        assert messages == [dict(m) for m in episode.messages], episode.id


def _reply_of(message):
    from openai_stub import from_message

    return from_message(message)


def test_unknown_skill_unknown_tool_and_bad_arguments_are_error_results(shop):
    harness = load_harness(shop, trust_hooks=True)
    plan = Script(
        [
            calls(
                ("load_skill", {"name": "nope"}),
                ("teleport", {"to": "mars"}),
                ("get_price", '{"link": '),
            ),
            text("ok"),
        ]
    )
    _, records, _ = converse(harness, plan, [user("hi")], tools=ToolBelt())
    outcomes = {r.name: r for r in records if isinstance(r, ToolOutcome)}
    assert outcomes["load_skill"].error and "price-reply" in outcomes["load_skill"].content
    assert outcomes["teleport"].error and "unknown_tool" in outcomes["teleport"].content
    assert "its tools: get_price" in outcomes["teleport"].content
    # the malformed call is blocked by the tool_call hook, which sees the raw text
    assert outcomes["get_price"].source == "hook"
    assert outcomes["get_price"].content == "arguments must be an object"


def test_a_skill_load_with_other_arguments_says_what_the_loader_takes(shop):
    harness = load_harness(shop, trust_hooks=True)
    plan = Script([calls(("load_skill", {"skill": "price-reply"})), text("ok")])
    _, records, _ = converse(harness, plan, [user("hi")], tools=ToolBelt())
    (outcome,) = [r for r in records if isinstance(r, ToolOutcome)]
    assert outcome.error and "takes exactly one argument, name" in outcome.content
    assert "price-reply" in outcome.content  # the ids it takes


def test_step_limit_ends_the_conversation(shop):
    harness = load_harness(shop, trust_hooks=True)
    plan = Script([text("x" * 100)] * 3)
    conversation, records, _ = converse(harness, plan, [user("hi")], max_steps=3)
    assert records[-1] == End(STEP_LIMIT, "the model used all 3 steps without finishing")
    assert conversation.trajectory.status == STEP_LIMIT
    assert len(conversation.trajectory.requests) == 3


@pytest.mark.parametrize(
    "function, error",
    [
        ("broken", "RuntimeError: boom"),
        ("leaves", "SystemExit"),
        ("loops", "TimeoutError: no verdict in 0.2 s"),
    ],
)
def test_a_hook_that_raises_ends_the_conversation_with_its_name(
    tmp_path, monkeypatch, function, error
):
    """A hook that raises, calls sys.exit() or never returns is a harness bug named in the
    trajectory: it ends the conversation, not the process (one that looped hung every chat,
    rollout and evaluation that ran it)."""
    monkeypatch.setattr("hsa.model.hook_runner.HOOK_SECONDS", 0.2)
    yaml_text = HARNESS.replace("function: short_reply", f"function: {function}")
    harness = load_harness(
        write_harness(
            tmp_path / "broken",
            harness_yaml=yaml_text,
            hooks=HOOKS,
            tools={"a_price.json": PRICE_TOOL},
        ),
        trust_hooks=True,
    )
    conversation, records, _ = converse(harness, Script([text("hello")]), [user("hi")])
    assert records[-1].status == HOOK_ERROR and "reply_check" in records[-1].reason
    assert error in conversation.trajectory.reason


def test_hooks_are_code_and_need_trust(shop):
    with pytest.raises(HooksNotTrustedError):
        converse(load_harness(shop), Script([text("hi")]), [user("hi")])


MUTATING_HOOK = """
def seen_once(payload, config):
    key = str(payload["arguments"])
    if key in config["seen"]:
        return {"ok": False, "feedback": "you already made this call"}
    config["seen"].append(key)
    payload["parameters"]["properties"].clear()
    return {"ok": True}
"""


def test_a_hook_that_edits_its_config_or_payload_changes_no_other_call(tmp_path):
    """Rollouts share one harness object across conversations: a hook's scratch edits must not
    reach the next conversation (same seed, other rows) or the tool schemas the model reads."""
    harness = load_harness(
        write_harness(
            tmp_path / "shop",
            harness_yaml=HARNESS.split("hooks:")[0]
            + "hooks:\n  - {name: seen, event: tool_call, function: seen_once, config: {seen: []}}\n",
            hooks=MUTATING_HOOK,
            tools={"a_price.json": PRICE_TOOL},
        ),
        trust_hooks=True,
    )
    schema = json.dumps(harness.openai_tools(), sort_keys=True)
    tool = harness.tools[0]
    payload = {"tool_name": tool.name, "arguments": {"link": 3}, "parameters": tool.parameters}
    for _ in range(2):  # a new runner per conversation, as the runtime makes
        assert HookRunner(harness).run("tool_call", payload)[0].ok
    assert harness.hooks[0].config == {"seen": []}
    assert json.dumps(harness.openai_tools(), sort_keys=True) == schema


def test_a_stopped_conversation_ends_with_the_step_it_stopped_at(shop):
    harness = load_harness(shop, trust_hooks=True)

    async def go(server):
        async with ChatClient(Endpoint(server.base_url, MODEL, max_retries=0)) as client:
            conversation = Conversation(harness, client, ToolBelt(), conversation_id="s")
            records = conversation.run([user("price of 3?")])
            async for record in records:
                if isinstance(record, Step):
                    break
            await records.aclose()
            return conversation.trajectory

    with ScriptedServer(
        Script([calls(("get_price", {"link": 3})), text("159")]), model=MODEL
    ) as server:
        trajectory = asyncio.run(go(server))
    assert trajectory.status == "stopped"
    assert trajectory.messages[-1]["tool_calls"][0]["function"]["name"] == "get_price"
    assert trajectory.tools == []  # the step's tools never ran


# ---- endpoint --------------------------------------------------------------------------------


def test_retries_429_and_5xx_with_backoff_then_succeeds(shop):
    harness = load_harness(shop, trust_hooks=True)
    plan = Script([status(429, retry_after=0.05), status(503), text("fine")])
    conversation, _, server = converse(harness, plan, [user("hi")], retries=3)
    request = conversation.trajectory.requests[0]
    assert request.attempts == 3 and request.waited_s >= 0.05
    assert [s.status for s in server.seen] == [429, 503, 200]


def test_gives_up_after_the_retries_as_a_retryable_error(shop):
    harness = load_harness(shop, trust_hooks=True)
    with pytest.raises(EndpointError) as caught:
        converse(harness, Script([status(500)] * 3), [user("hi")], retries=2)
    assert caught.value.retryable and "gave up after 3 attempts" in str(caught.value)


def test_a_refused_request_is_not_retried_and_a_wrong_model_is_a_setup_error(shop):
    harness = load_harness(shop, trust_hooks=True)
    with pytest.raises(EndpointError) as caught:
        converse(
            harness,
            Script([status(400, content="context too long"), text("x")]),
            [user("hi")],
            retries=3,
        )
    assert not caught.value.retryable and not caught.value.setup
    assert "context too long" in str(caught.value)

    async def check(server, model):
        async with ChatClient(Endpoint(server.base_url, model)) as client:
            await client.check_model()

    with ScriptedServer(Script([]), model=MODEL) as server, pytest.raises(EndpointError) as wrong:
        asyncio.run(check(server, "another-model"))
    assert wrong.value.setup


def test_the_api_key_comes_from_the_environment_and_is_never_recorded(shop, monkeypatch):
    harness = load_harness(shop, trust_hooks=True)
    monkeypatch.setenv("HSA_TEST_KEY", "sk-secret-123")
    seen_keys = []

    async def go(server):
        endpoint = Endpoint(server.base_url, MODEL, api_key_env="HSA_TEST_KEY")
        async with ChatClient(endpoint) as client:
            seen_keys.append(client._client.api_key)
            conversation = Conversation(harness, client, ToolBelt())
            [r async for r in conversation.run([user("hi")])]
            return endpoint, conversation

    with ScriptedServer(Script([text("hello")]), model=MODEL) as server:
        endpoint, conversation = asyncio.run(go(server))
    assert seen_keys == ["sk-secret-123"]
    written = json.dumps([endpoint.describe(), conversation.trajectory.to_dict()])
    assert "sk-secret" not in written and "HSA_TEST_KEY" in written


def test_streaming_assembles_tool_calls_and_records_ttft_and_tokens(shop):
    harness = load_harness(shop, trust_hooks=True)
    replay = ReplayTools(harness, [("get_price", {"link": 3}, '{"price": 159}')])
    plan = Script(
        [
            calls(("load_skill", {"name": "price-reply"}), ("get_price", {"link": 3})),
            text("Link 3: 159 yuan."),
        ]
    )
    conversation, records, server = converse(
        harness, plan, [user("3?")], stream=True, tools=ToolBelt(replay)
    )
    first = steps(records)[0].message["tool_calls"]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in first] == [
        ("load_skill", {"name": "price-reply"}),
        ("get_price", {"link": 3}),
    ]
    assert all(s.body["stream"] for s in server.seen)
    for request in conversation.trajectory.requests:
        assert request.ttft_s is not None and 0 < request.ttft_s <= request.latency_s
        assert request.prompt_tokens > 0 and request.completion_tokens > 0
    assert conversation.trajectory.messages[-1]["content"] == "Link 3: 159 yuan."


def _sse(delta: dict, finish: str | None = None) -> bytes:
    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def _call_part(call_id: str, link: int) -> dict:
    function = {"name": "get_price", "arguments": json.dumps({"link": link})}
    return {"index": 0, "id": call_id, "type": "function", "function": function}


@pytest.mark.parametrize(
    "body, expected",
    [
        (  # parallel calls all streamed at index 0 (as some servers do): two calls, not one
            _sse({"role": "assistant", "tool_calls": [_call_part("a", 1)]})
            + _sse({"tool_calls": [_call_part("b", 2)]})
            + _sse({}, "tool_calls")
            + b"data: [DONE]\n\n",
            ['get_price({"link": 1})', 'get_price({"link": 2})'],
        ),
        (b'{"id": "x", "choices": []}', "the stream carried no chunk"),  # a server that won't
        (b'data: {"id": "x", "choices": [{"delta": {"content": "hi\n\n', "unreadable"),
        (_sse({"content": ""}) + b"data: [DONE]\n\n", "no message and no finish reason"),
    ],
)
def test_a_stream_is_read_whole_or_refused_as_unusable(body, expected):
    """What a server streams that is no chat completion is said as such (not a crash, not an
    empty reply), and calls are told apart by their ids."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/v1"
    endpoint = Endpoint(url, "m", max_retries=0, stream=True)

    async def ask():
        async with ChatClient(endpoint) as client:
            return await client.complete([user("hi")], [])

    try:
        if isinstance(expected, list):
            calls = asyncio.run(ask()).message["tool_calls"]
            assert [f"{c['function']['name']}({c['function']['arguments']})" for c in calls] == (
                expected
            )
            assert [c["id"] for c in calls] == ["a", "b"]
        else:
            with pytest.raises(EndpointError, match=expected):
                asyncio.run(ask())
    finally:
        server.shutdown()


def test_requests_carry_a_derived_seed_and_the_conversation_in_their_id(shop):
    harness = load_harness(shop, trust_hooks=True)

    async def go(server):
        endpoint = Endpoint(
            server.base_url, MODEL, sampling=Sampling(temperature=0.7, seed=5, max_tokens=64)
        )
        async with ChatClient(endpoint) as client:
            conversation = Conversation(harness, client, ToolBelt(), conversation_id="ep#2")
            [r async for r in conversation.run([user("hi")])]

    with ScriptedServer(Script([text("x" * 60), text("ok")]), model=MODEL) as server:
        asyncio.run(go(server))
    first, second = server.seen
    assert (first.request_id, second.request_id) == ("ep#2:0", "ep#2:1")
    assert first.body["seed"] != second.body["seed"]
    assert first.body["temperature"] == 0.7 and first.body["max_tokens"] == 64
    with ScriptedServer(Script([text("x" * 60), text("ok")]), model=MODEL) as again:
        asyncio.run(go(again))
    assert [s.body["seed"] for s in again.seen] == [first.body["seed"], second.body["seed"]]


# ---- tool executors --------------------------------------------------------------------------


def run(executor, name, arguments, index=0, conversation="c"):
    return asyncio.run(executor(name, arguments, CallContext(conversation, index)))


def test_replay_matches_name_and_arguments_defaults_aside_and_repeats_in_order(shop):
    harness = load_harness(shop)
    schema = dict(PRICE_TOOL)
    schema["function"] = {
        **PRICE_TOOL["function"],
        "parameters": {
            "type": "object",
            "properties": {
                "link": {"type": "integer"},
                "currency": {"type": "string", "default": "CNY"},
            },
            "required": ["link"],
        },
    }
    from hsa.model.harness import Harness
    from hsa.model.tool import Tool

    harness = Harness(name="h", tools=(Tool.from_dict(schema),))
    replay = ReplayTools(
        harness,
        [
            ("get_price", {"link": 3}, "first"),
            ("get_price", {"link": 3}, "second"),
            ("get_price", {"link": 4, "currency": "CNY"}, "four"),
        ],
    )
    assert run(replay, "get_price", {"link": 3}).content == "first"
    assert run(replay, "get_price", {"link": 3, "currency": "CNY"}).content == "second"
    assert run(replay, "get_price", {"link": 3}).content == "second"  # the last, again
    assert run(replay, "get_price", {"link": 4}).content == "four"
    assert run(replay, "get_price", {"link": 3.0}).error  # types kept: 3.0 is not 3
    missing = run(replay, "get_price", {"link": 5})
    assert missing.error and "first" not in missing.content and "four" not in missing.content
    assert run(replay, "not_a_tool", {}) is None


def _without_ids(messages) -> list[dict]:
    """``messages`` as data without ids writes them (results in the order of the calls)."""
    out = []
    for message in messages:
        message = {k: v for k, v in message.items() if k != "tool_call_id"}
        if message.get("tool_calls"):
            message["tool_calls"] = [
                {k: v for k, v in c.items() if k != "id"} for c in message["tool_calls"]
            ]
        out.append(message)
    return out


def test_results_and_hook_feedback_pair_with_calls_without_ids():
    """Many datasets write no call ids, and list each result after its call: the replay must
    still answer a recorded call, and a call a hook sent back must still count as sent back."""
    from hsa.model.hook import blocked_calls
    from hsa.model.hook_runner import reply_context
    from hsa.runtime import recorded_results

    def blocked_count(messages):
        return len(blocked_calls(messages))

    episode = next(e for e in load_example_episodes() if e.id == "lc-hook-retry-001")
    plain = _without_ids(episode.messages)
    assert recorded_results(plain, episode.harness) == recorded_results(
        episode.messages, episode.harness
    )
    assert hook_rejected(plain) == hook_rejected(episode.messages) != []
    assert blocked_count(plain) == blocked_count(episode.messages) == 1
    # what a reply hook is told was called: a call sent back never ran
    context = reply_context(episode.harness, tuple(plain))
    assert context == reply_context(episode.harness, episode.messages)
    replay = ReplayTools.from_episodes([episode.with_harness(episode.harness, messages=plain)])
    name, arguments, content = recorded_results(plain, episode.harness)[0]
    assert run(replay, name, arguments).content == content


def test_recorded_results_skip_hook_feedback_and_skill_loads():
    episode = next(e for e in load_example_episodes() if e.id == "lc-hook-retry-001")
    from hsa.runtime import recorded_results

    found = recorded_results(episode.messages, episode.harness)
    assert [(name, args) for name, args, _ in found] == [
        ("get_price_after_coupon", {"link_number": 2}),
        ("get_price_after_coupon", {"link_number": 8}),
    ]


TOOLS_PY = """
import time

def get_price(link, currency="CNY"):
    if link < 0:
        raise ValueError("negative link")
    return {"link": link, "price": 100 + link, "currency": currency}

def slow(**kwargs):
    time.sleep(0.3)

def leave(**kwargs):
    raise SystemExit(3)

def hang(**kwargs):
    time.sleep(600)

TOOLS = {"math.factorial": lambda n: 1 if n <= 1 else n * TOOLS["math.factorial"](n - 1)}
"""


def test_code_tools_run_under_a_variants_names_and_report_failures(tmp_path):
    path = tmp_path / "tools.py"
    path.write_text(TOOLS_PY)
    with pytest.raises(HooksNotTrustedError, match="tools.py is Python code"):
        CodeTools.load(path, trust=False)
    code = CodeTools.load(path, trust=True, timeout_s=0.05)
    assert json.loads(run(code, "get_price", {"link": 3}).content)["price"] == 103
    assert run(code, "math.factorial", {"n": 5}).content == "120"
    failed = run(code, "get_price", {"link": -1})
    assert failed.error and "ValueError: negative link" in failed.content
    late = run(code, "slow", {})
    assert late.error and '"timeout"' in late.content
    left = run(code, "leave", {})  # sys.exit() in tool code is its error, not the process's
    assert left.error and "raised SystemExit(3)" in left.content
    assert run(code, "unknown", {}) is None
    variant = code.for_variant(
        Mapping(tools={"get_price": "price_of"}, parameters={"get_price": {"link": "item"}}),
        load_harness(write_harness(tmp_path / "shop")),
    )
    # called by the old names; the echoed argument comes back under the variant's name
    assert json.loads(run(variant, "price_of", {"item": 4}).content) == {
        "item": 4,
        "price": 104,
        "currency": "CNY",
    }


def test_only_the_harness_tools_run_not_every_function_of_tools_py(tmp_path):
    """tools.py may hold helpers (a cache reset, a fixture loader): a model that writes such a
    name gets an unknown-tool error, and the helper never runs."""
    (tmp_path / "tools.py").write_text(
        TOOLS_PY + "\ndef reset_cache():\n    open(__file__ + '.ran', 'w').close()\n"
    )
    code = CodeTools.load(tmp_path / "tools.py", trust=True)
    plan = Script([calls(("reset_cache", {}), ("get_price", {"link": 2})), text("ok")])
    plain = HARNESS.split("hooks:")[0]  # no hook, so that the plan is the whole conversation
    harness = load_harness(
        write_harness(
            tmp_path / "shop", harness_yaml=plain, hooks=None, tools={"p.json": PRICE_TOOL}
        )
    )
    _, records, _ = converse(harness, plan, [user("hi")], tools=ToolBelt(code))
    outcomes = {r.name: r for r in records if isinstance(r, ToolOutcome)}
    assert outcomes["reset_cache"].error and "unknown_tool" in outcomes["reset_cache"].content
    assert not (tmp_path / "tools.py.ran").exists()
    assert json.loads(outcomes["get_price"].content)["price"] == 102


SHOP_TOOLS_PY = """
def get_price(link, currency="CNY"):
    return {"link": link, "price": 100 + link, "currency": currency,
            "note": "for past prices call `get_price_history`"}
"""


def test_code_tool_results_under_a_variant_read_as_its_rows_do(tmp_path):
    """A rollout under a harness variant runs the harness's tool code, which knows the old
    names; its results must come back as the variant's rows write a recorded result (names
    mentioned, an echoed argument's key), or the trajectories it writes teach old names."""
    from hsa.augment.rename import rename_episode
    from hsa.model.episode import Episode
    from hsa.transforms.tool_schema.parameters import rename_parameters

    shop = write_harness(tmp_path / "shop")
    harness = load_harness(shop)
    (tmp_path / "tools.py").write_text(SHOP_TOOLS_PY)
    code = CodeTools.load(tmp_path / "tools.py", trust=True)
    raw = run(code, "get_price", {"link": 4}).content
    # The same result recorded in an episode, through the renames a pipeline makes in turn.
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": [
                {"role": "user", "content": "Link 4?"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_price", "arguments": '{"link": 4}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": raw},
                {"role": "assistant", "content": "104."},
            ],
            "gold": {"at": 1, "calls": [{"name": "get_price", "arguments": {"link": [4]}}]},
        },
        harness=harness,
    )
    tools = Mapping(tools={"get_price": "price_of", "get_price_history": "price_history"})
    renamed = rename_parameters(rename_episode(episode, tools), {"link": "item"})
    expected = renamed.messages[2]["content"]
    assert '"item":4' in expected and "`price_history`" in expected  # the renames reach it
    mapping = tools.then(
        Mapping(parameters={"price_of": {"link": "item"}, "price_history": {"link": "item"}})
    )
    variant = code.for_variant(mapping, harness)
    assert run(variant, "price_of", {"item": 4}).content == expected
    # Without a variant, or with renames its result does not show, the text is the code's own.
    assert (
        run(code.for_variant(Mapping(hooks={"x": "y"}), harness), "get_price", {"link": 4}).content
        == raw
    )


def test_a_live_result_keeps_the_data_its_call_passed(tmp_path):
    """Live as recorded (hsa.augment.user_data.conversation_data): a string the call passes is
    data, kept where the result echoes it, though it is also a tool's name; the result's other
    mentions of renamed names move."""
    from hsa.runtime.tools import variant_result

    harness = load_harness(write_harness(tmp_path / "shop"))
    mapping = Mapping(tools={"get_price": "price_of", "get_price_history": "price_history"})
    raw = json.dumps({"link": "get_price_history", "note": "get_price found get_price_history"})
    out = json.loads(
        variant_result(raw, harness, mapping, "get_price", {"link": "get_price_history"})
    )
    assert out == {"link": "get_price_history", "note": "price_of found get_price_history"}
    # Passed by no call, the same name moves.
    moved = json.loads(variant_result(raw, harness, mapping, "get_price", {"link": "7"}))
    assert moved == {"link": "price_history", "note": "price_of found price_history"}


def test_a_tool_that_hangs_does_not_keep_the_process_alive(tmp_path):
    """The hung call's thread cannot be stopped; it must not hold the run open once it is over
    (a real process, which must exit long before the tool would return)."""
    import subprocess
    import sys

    path = tmp_path / "tools.py"
    path.write_text(TOOLS_PY)
    script = (
        "import asyncio, sys\n"
        "from hsa.runtime import CallContext, CodeTools\n"
        f"code = CodeTools.load({str(path)!r}, trust=True, timeout_s=0.05)\n"
        "result = asyncio.run(code('hang', {}, CallContext('c', 0)))\n"
        "print(result.error, result.content)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("True") and "timeout" in done.stdout


def test_faults_are_reproducible_per_conversation_and_call():
    belt = ToolBelt(lambda *a: _result('{"price": 159, "currency": "CNY"}'))
    plan = FaultPlan.parse("timeout=0.2,malformed=0.2,permission_denied=0.2", seed=3)
    injector = FaultInjector(belt, plan)
    first = [run(injector, "get_price", {}, i, "conv-a") for i in range(200)]
    again = [run(injector, "get_price", {}, i, "conv-a") for i in range(200)]
    assert first == again
    sources = {r.source for r in first}
    assert sources == {"fault:timeout", "fault:malformed", "fault:permission_denied", None}
    malformed = next(r for r in first if r.source == "fault:malformed")
    with pytest.raises(ValueError):
        json.loads(malformed.content)
    share = sum(r.source is not None for r in first) / len(first)
    assert 0.45 < share < 0.75  # 60% of calls fault
    other = [run(injector, "get_price", {}, i, "conv-b") for i in range(200)]
    assert [r.source for r in other] != [r.source for r in first]
    only = FaultInjector(belt, FaultPlan.parse("timeout", tools=("other_tool",)))
    assert run(only, "get_price", {}).source is None


def test_a_fault_plan_draws_as_its_identity_says_in_any_order_of_kinds():
    """A rollout version names its plan by to_dict(); two plans with one identity must draw the
    same faults, or a resume could mix trajectories of two plans in one version."""
    one = FaultPlan.parse("timeout=0.3,malformed=0.3", seed=1)
    other = FaultPlan.parse("malformed=0.3,timeout=0.3", seed=1)
    assert one.to_dict() == other.to_dict()
    assert [one.draw("c", i) for i in range(300)] == [other.draw("c", i) for i in range(300)]


async def _coro(value):
    return value


def _result(content):
    from hsa.runtime import ToolResult

    return _coro(ToolResult(content, None))


@pytest.mark.parametrize(
    "spec, message",
    [
        ("explode=0.1", "unknown fault"),
        ("timeout=2", "within [0, 1]"),
        ("timeout=0.7,malformed=0.7", "add up to"),
        ("timeout=x", "not a number"),
        ("timeout=0.1,timeout=0.2", "fault timeout is given twice"),
    ],
)
def test_bad_fault_plans_name_the_problem(spec, message):
    with pytest.raises(HsaError, match=re.escape(message)):
        FaultPlan.parse(spec)


# ---- records ---------------------------------------------------------------------------------


@given(
    st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1, max_size=50),
    st.sampled_from([0, 50, 95, 99, 100]),
)
def test_percentiles_lie_within_the_values_and_follow_the_order(values, q):
    p = percentile(values, q)
    assert min(values) <= p <= max(values)
    assert percentile(values, 0) == min(values) and percentile(values, 100) == max(values)
    assert percentile(values, 50) <= percentile(values, 95) <= percentile(values, 99)


def test_request_summary_follows_the_serving_benchmark_definitions():
    requests = [
        RequestRecord(
            0, latency_s=1.0, ttft_s=0.2, prompt_tokens=10, completion_tokens=5, attempts=2
        ),
        RequestRecord(1, latency_s=3.0, ttft_s=0.4, prompt_tokens=20, completion_tokens=9),
    ]
    summary = summarize_requests(requests, wall_s=2.0)
    assert summary["requests"] == 2 and summary["retries"] == 1
    assert summary["completion_tokens"] == 14 and summary["output_tokens_per_s"] == 7.0
    assert summary["tpot_s"]["mean"] == pytest.approx(((0.8 / 4) + (2.6 / 8)) / 2)
    assert summary["e2e_s"]["p50"] == 2.0


# ---- hsa chat --------------------------------------------------------------------------------


def chat_args(harness, replay, base_url: str, message: str) -> list[str]:
    """``hsa chat`` under ``harness`` with ``replay``'s recorded results, one message, hooks
    trusted."""
    return [
        "chat",
        "--harness",
        str(harness),
        "--replay",
        str(replay),
        "--base-url",
        base_url,
        "--model",
        MODEL,
        "--trust-hooks",
        "--message",
        message,
    ]


def test_chat_shows_a_skill_load_a_tool_call_and_a_hook_retry_as_they_happen(capsys):
    """The example harness with its hooks and the recorded results of its episodes; the planned
    model loads a skill, makes a call the link hook blocks, retries, and writes a reply the
    compliance hook sends back before the one it accepts."""
    from hsa.cli import main
    from hsa.example import EPISODES_PATH, HARNESS_DIR

    plan = Script(
        [
            calls(("load_skill", {"name": "price-coupon-reply"})),
            calls(("get_price_after_coupon", {"link_number": 28})),
            status(503),
            calls(
                ("get_price_after_coupon", {"link_number": 2}),
                ("get_price_after_coupon", {"link_number": 8}),
            ),
            text("宝子，2号到手249元，8号到手89元，全网最低价！"),
            text("宝子，2号轻薄羽绒服到手249元；8号每日坚果礼盒到手89元～"),
        ]
    )
    with ScriptedServer(plan, model=MODEL) as server:
        code = main(chat_args(HARNESS_DIR, EPISODES_PATH, server.base_url, "2、8号分别多少钱"))
    lines = capsys.readouterr().out.splitlines()
    assert code == 0, lines
    assert lines[0] == "user: 2、8号分别多少钱"
    assert lines[1] == "  hook viewer_input (user_message): ok"
    assert lines[2].startswith('assistant -> load_skill({"name": "price-coupon-reply"})   [')
    assert any(
        line.startswith("  skill loaded via load_skill: # Price and coupon reply") for line in lines
    )
    blocked = lines.index(next(line for line in lines if "link_number 28 is not a link" in line))
    assert lines[blocked].startswith(
        "  hook tool_arguments (tool_call): FAILED -> the model is "
        "shown: get_price_after_coupon: link_number 28"
    )
    assert lines[blocked + 1] == "  sent back by a hook: the model tries again"
    retried = next(
        line
        for line in lines
        if line.startswith('assistant -> get_price_after_coupon({"link_number": 2})')
    )
    assert "2 attempts" in retried  # the 503 was retried
    results = [line for line in lines if line.startswith("  get_price_after_coupon <- replay")]
    assert len(results) == 2 and '"final_price":249' in results[0]
    assert any(
        "hook reply_compliance (reply): FAILED" in line and "全网最低" in line for line in lines
    )
    assert lines[-1] == "-- done"


def test_chat_waiting_for_the_user_ends_on_one_sigterm(shop, tmp_path):
    """The line reader blocked on stdin is a daemon thread: a SIGTERM ends the chat at once,
    with the "terminated" word, instead of a process that waits on stdin for ever (a real
    process, a real signal, stdin left open)."""
    import signal
    import subprocess
    import sys
    import time

    with ScriptedServer(Script([text("Hello!")] * 2), model=MODEL) as server:
        chat = subprocess.Popen(
            [sys.executable, "-m", "hsa.cli", "chat", "--harness", str(shop), "--trust-hooks"]
            + ["--base-url", server.base_url, "--model", MODEL],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        chat.stdin.write("hi\n")
        chat.stdin.flush()
        for line in chat.stdout:  # the reply is shown: the next line is being waited for
            if "Hello!" in line:
                break
        time.sleep(0.5)  # let the reader block on stdin (it is the case under test)
        chat.send_signal(signal.SIGTERM)
        try:
            code = chat.wait(timeout=30)  # stdin stays open: no end of input to stop at
        except subprocess.TimeoutExpired:
            code = None
        finally:
            chat.kill()
            chat.stdin.close()
        err = chat.stderr.read()
    assert code == 143, err
    assert "terminated:" in err


def test_a_transcript_says_which_failed_check_the_model_is_shown():
    """A blocked call is answered by the first check that blocked it; `hsa chat` said "the model
    is shown" of every failing check, though the runtime sends one."""
    from hsa.model.hook_runner import HookVerdict
    from hsa.runtime.transcript import _hooks

    def verdict(hook, ok):
        return HookVerdict(
            hook, "tool_call", ok, "" if ok else "no", None if ok else f"[{hook}] no"
        )

    # two calls, each checked by hooks a and b in turn
    lines = _hooks(
        (verdict("a", False), verdict("b", False), verdict("a", True), verdict("b", False)), 2
    )
    assert "a (tool_call): FAILED -> the model is shown" in lines[0]
    assert "b (tool_call): FAILED (not shown" in lines[1]
    assert lines[2].endswith("a (tool_call): ok")
    assert "b (tool_call): FAILED -> the model is shown" in lines[3]


def test_chat_says_which_replay_lines_do_not_load(tmp_path, capsys):
    """Lines of the --replay file that do not load answer nothing; they were dropped in
    silence, and a call their recorded results would have answered got an error result."""
    import shutil

    from hsa.cli import main
    from hsa.example import EPISODES_PATH, HARNESS_DIR

    shutil.copytree(HARNESS_DIR, tmp_path / "harness")  # the episodes name it beside them
    replay = tmp_path / "episodes.jsonl"
    replay.write_text(EPISODES_PATH.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    with ScriptedServer(Script([text("你好！")]), model=MODEL) as server:
        code = main(chat_args(HARNESS_DIR, replay, server.base_url, "在吗"))
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "warning: 1 line(s) of" in printed.err and "not valid JSON" in printed.err
