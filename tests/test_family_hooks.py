"""The hooks family: feedback formats and their inverse, hook implementation swaps, and the
hook-retry policy, on the embedded example and on generated episodes (hypothesis)."""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hsa.augment.mapping import Mapping
from hsa.augment.recipe import Recipe
from hsa.augment.rename import rename_messages
from hsa.augment.variant import Variant
from hsa.dataset.pipeline import augment, augment_episode
from hsa.errors import HsaError
from hsa.example import load_example_episodes, load_example_harness
from hsa.model.episode import Episode
from hsa.model.gold import Gold
from hsa.model.harness import Harness, load_harness
from hsa.model.hook import Hook
from hsa.model.hook_feedback import (
    FORMAT_KEY,
    FORMAT_SPLITS,
    FORMATS,
    PLAIN,
    format_feedback,
    parse_feedback,
    split_format,
)
from hsa.transforms._names import CONVENTION_SPLITS
from hsa.transforms.hooks import (
    NAMING_STYLES,
    HookImplementationSwap,
    HookRetryPolicy,
    hook_name_in,
    retry_sequences,
)
from tests.strategies import gold_calls, harnesses, identifiers, rich_episode_dicts, unicode_text


def recipe(name: str, seed: int = 11, variants: int = 1, **options) -> Recipe:
    return Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": "hooks-test",
            "seed": seed,
            "variants_per_episode": variants,
            "keep_original": False,
            "pipeline": [{name: options}],
        }
    )


def variants_of(name: str, episodes, **options) -> list[Variant]:
    out = list(augment(recipe(name, **options), episodes))
    assert all(isinstance(v, Variant) for v in out), [
        str(v) for v in out if not isinstance(v, Variant)
    ][:3]
    return out


@pytest.fixture(scope="module")
def example():
    return load_example_episodes()


def hook_messages(episode: Episode) -> list[tuple[int, dict]]:
    return [
        (i, m) for i, m in enumerate(episode.messages) if str(m.get("name", "")).startswith("hook.")
    ]


# ---- option tables ---------------------------------------------------------------------------


def test_format_and_naming_splits_are_disjoint_and_non_trivial():
    train, heldout = set(FORMAT_SPLITS["train"]), set(FORMAT_SPLITS["heldout"])
    assert not train & heldout
    assert train | heldout == set(FORMATS) - {PLAIN}
    for part in (train, heldout):
        styles = {split_format(f)[0] for f in part}
        assert styles == {"tag", "xml", "json", "sentence"}  # every style in both parts
        sentences = {f for f in part if f.startswith("sentence:")}
        assert any(":en-" in f for f in sentences) and any(":zh-" in f for f in sentences)
    assert not set(NAMING_STYLES["train"]) & set(NAMING_STYLES["heldout"])
    assert min(len(NAMING_STYLES["train"]), len(NAMING_STYLES["heldout"])) >= 3
    words = {
        split: {w for p in NAMING_STYLES[split] for w in p.split() if w != "{words}"}
        for split in ("train", "heldout")
    }
    assert not words["train"] & words["heldout"]  # not even a word is shared


def test_hook_names_in_each_convention():
    assert hook_name_in("{words} check", "tool_arguments") == "tool_arguments_check"
    assert hook_name_in("{words} guard", "tool_arguments", "camel") == "toolArgumentsGuard"
    # a pattern word the name already has at that end is said once
    assert hook_name_in("{words} guard", "refund_guard") == "refund_guard"
    assert hook_name_in("guard {words}", "guardRefund", "camel") == "guardRefund"
    assert hook_name_in("{words} check", "replySkillLoaded", "kebab") == "reply-skill-loaded-check"
    assert hook_name_in("validate {words}", "math.check2") == "validate_math_check2"
    assert hook_name_in("enforce {words}", "tool_arguments", "pascal") == "EnforceToolArguments"


# ---- formats ---------------------------------------------------------------------------------


def test_each_style_looks_as_documented():
    core = "tool_x: link_number 28 is not a link in this room."
    assert format_feedback("tool_arguments", core, PLAIN) == core
    assert format_feedback("tool_arguments", core, "tag", "square") == f"[tool_arguments] {core}"
    assert format_feedback("h", core, "xml", "hook") == f'<hook name="h">{core}</hook>'
    assert json.loads(format_feedback("h", core, "json", "hook")) == {
        "hook": "h",
        "ok": False,
        "feedback": core,
    }
    assert format_feedback("h", core, "sentence", "en-failed") == f"Check h failed: {core}"
    assert format_feedback("h", core, "sentence", "zh-failed") == f"检查 h 未通过：{core}"
    with pytest.raises(HsaError, match="unknown hook feedback format 'xml:nope'"):
        format_feedback("h", core, "xml", "nope")


@given(
    fmt=st.sampled_from(FORMATS),
    hook=st.one_of(identifiers(), st.text(min_size=1, max_size=12)),
    feedback=unicode_text,
)
def test_parse_inverts_format_for_any_name_and_text(fmt, hook, feedback):
    style, wording = split_format(fmt)
    text = format_feedback(hook, feedback, style, wording)
    parsed = parse_feedback(text, fmt, hook=hook)
    assert (parsed.feedback, parsed.format) == (feedback, fmt)
    assert parsed.hook == (None if fmt == PLAIN else hook)


@given(fmt=st.sampled_from(FORMATS[1:]), hook=identifiers(), feedback=unicode_text)
def test_parse_recognises_every_wrapped_format_unaided(fmt, hook, feedback):
    """Identifier hook names (what harnesses use) are recovered without being told the format."""
    parsed = parse_feedback(format_feedback(hook, feedback, *split_format(fmt)))
    assert (parsed.hook, parsed.feedback, parsed.format) == (hook, feedback, fmt)


def test_parse_with_the_declared_format_keeps_plain_text_whole():
    text = "[tool_arguments] arguments are missing"
    assert parse_feedback(text).format == "tag:square"  # guessing reads a wrapper
    assert parse_feedback(text, PLAIN).feedback == text  # the declared format decides
    with pytest.raises(HsaError, match="not in its declared feedback format 'xml:check'"):
        parse_feedback(text, "xml:check", hook="tool_arguments")
    with pytest.raises(HsaError, match="declared feedback format 'tag:square'"):
        parse_feedback(text, "tag:square", hook="other_hook")


# ---- the example's hook messages are plain ---------------------------------------------------


def _recomputed_feedback(episode: Episode, i: int, harness, functions) -> dict:
    """What the harness's own hook returns for the step messages[i] reports on."""
    messages = episode.messages
    hook = harness.hooks[[h.name for h in harness.hooks].index(messages[i]["name"][5:])]
    viewer_at = max(
        k for k in range(i) if messages[k]["role"] == "user" and "name" not in messages[k]
    )
    if hook.event == "user_message":
        payload = {"text": messages[viewer_at]["content"]}
    elif hook.event == "tool_call":
        (call,) = [
            c
            for m in messages[:i]
            for c in m.get("tool_calls") or ()
            if c["id"] == messages[i]["tool_call_id"]
        ]
        name = call["function"]["name"]
        tool = harness.tool(name) or harness.loader_tool()
        payload = {
            "tool_name": name,
            "arguments": json.loads(call["function"]["arguments"]),
            "parameters": tool.parameters,
        }
    else:
        calls = [
            (k, c["function"])
            for k, m in enumerate(messages[:i])
            for c in m.get("tool_calls") or ()
        ]
        loader = harness.skill_loader
        payload = {
            "reply": messages[i - 1]["content"],
            "viewer_message": messages[viewer_at]["content"],
            "loaded_skills": [
                json.loads(f["arguments"])["name"] for _, f in calls if f["name"] == loader
            ],
            "skill_kinds": {s.id: s.kind for s in harness.skills},
            "tools_called": [f["name"] for k, f in calls if f["name"] != loader and k > viewer_at],
            "skill_loader": loader,
        }
    return functions[hook.name](payload, hook.config)


def test_example_hook_messages_are_the_plain_feedback_of_its_hooks(example):
    harness = load_example_harness()
    functions = harness.hook_functions()
    assert all(FORMAT_KEY not in h.config for h in harness.hooks)  # absent means plain
    seen = 0
    for episode in example:
        for i, message in hook_messages(episode):
            result = _recomputed_feedback(episode, i, harness, functions)
            assert result == {"ok": False, "feedback": message["content"]}, (episode.id, i)
            seen += 1
    assert seen == 45


# ---- hook_implementation_swap ----------------------------------------------------------------


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_swap_renames_hooks_and_rewraps_every_feedback_message(example, split):
    chosen = [e for e in example if hook_messages(e)]
    by_id = {e.id: e for e in chosen}
    formats = set()
    for variant in variants_of("hook_implementation_swap", chosen, split=split):
        original, out = by_id[variant.source_id], variant.episode
        (params,) = [s.params for s in variant.lineage]
        fmt = params["format"]
        formats.add(fmt)
        assert fmt in FORMAT_SPLITS[split]
        renames = variant.mapping.hooks
        assert set(renames) == {h.name for h in original.harness.hooks}
        naming = out.harness.prompt.options["naming"]  # the variant's one convention
        assert naming in CONVENTION_SPLITS[split]
        assert any(
            hook_name_in(style, "tool_arguments", naming) == renames["tool_arguments"]
            for style in NAMING_STYLES[split]
        )
        for old, new in zip(original.harness.hooks, out.harness.hooks, strict=True):
            assert (new.name, new.function, new.event) == (
                renames[old.name],
                old.function,
                old.event,
            )
            assert new.config == {**old.config, FORMAT_KEY: fmt}
        before, after = hook_messages(original), hook_messages(out)
        assert [i for i, _ in before] == [i for i, _ in after]
        for (_, old), (_, new) in zip(before, after, strict=True):
            hook = renames[old["name"][5:]]
            assert new["name"] == f"hook.{hook}" and new["role"] == old["role"]
            parsed = parse_feedback(new["content"], fmt, hook=hook)
            assert parsed.feedback == old["content"]  # the example's cores name no hook
        # Every other message only moves with the renaming (a loaded skill names a hook).
        moved = rename_messages(original.messages, original.harness, variant.mapping)
        assert [m for m in out.messages if "name" not in m] == [m for m in moved if "name" not in m]
        assert out.gold == original.gold
    assert len(formats) >= 3


def test_swap_twice_reads_the_first_swaps_format(example):
    episode = next(e for e in example if e.id == "lc-hook-retry-002")
    twice = Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": "twice",
            "seed": 5,
            "variants_per_episode": 4,
            "keep_original": False,
            "pipeline": [
                {"hook_implementation_swap": {}},
                {"hook_implementation_swap": {"split": "heldout"}},
            ],
        }
    )
    ((_, core),) = [(i, m["content"]) for i, m in hook_messages(episode)]
    for variant in augment_episode(twice, episode):
        assert isinstance(variant, Variant), str(variant)
        fmt = variant.lineage[1].params["format"]
        ((_, message),) = hook_messages(variant.episode)
        assert parse_feedback(message["content"], fmt, hook=message["name"][5:]).feedback == core


def test_swap_moves_hook_mentions_inside_the_core_and_keeps_list_content():
    base = load_example_harness()
    episode = Episode.from_dict(
        {
            "id": "mention",
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Hello!"},
                {
                    "role": "user",
                    "name": "hook.reply_compliance",
                    "content": [
                        {
                            "type": "text",
                            "text": "reply_compliance wants Chinese; see `tool_arguments`.",
                        }
                    ],
                },
                {"role": "assistant", "content": "你好！"},
            ],
            "gold": {"at": 3, "no_call": True},
        },
        harness=base,
    )
    params = {"renames": {h.name: h.name + "_v2" for h in base.hooks}, "format": "xml:check"}
    out = HookImplementationSwap().apply(episode, params)
    assert out.messages[2]["content"] == [
        {
            "type": "text",
            "text": '<check name="reply_compliance_v2">reply_compliance_v2 wants Chinese; see '
            "`tool_arguments_v2`.</check>",
        }
    ]


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_a_hook_named_like_a_parameter_keeps_its_name(split):
    """Smart home: the hook ``pin`` checks the parameter its config names (``pin_param: pin``).
    Renamed as the hook, the config value became ``check_pin``: the variant's hook looked for
    an argument no call sends and blocked every unlock the recording let through."""
    harness = Harness.from_dict(
        {
            "name": "home",
            "hooks": [
                {
                    "name": "pin",
                    "event": "tool_call",
                    "function": "f",
                    "config": {"pin_param": "pin"},
                },
                {"name": "quiet_hours", "event": "tool_call", "function": "f"},
            ],
            "hooks_source": "def f(payload, config):\n    return {'ok': True}\n",
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "lock_door",
                        "description": "Locks or unlocks a door.",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "door_id": {"type": "string"},
                                "pin": {"type": "string"},
                            },
                        },
                    },
                }
            ],
        }
    )
    episode = Episode(
        "e",
        harness,
        ({"role": "user", "content": "hi"},),
        Gold.from_dict({"no_call": True}, n_messages=1),
    )
    for seed in range(6):
        params = HookImplementationSwap(split=split).sample_params(episode, random.Random(seed))
        assert "pin" not in params["renames"] and "quiet_hours" in params["renames"]
        out = HookImplementationSwap(split=split).apply(episode, params)
        assert [h.config["pin_param"] for h in out.harness.hooks if h.name == "pin"] == ["pin"]


def test_swap_refuses_params_that_do_not_fit(example):
    episode = next(e for e in example if hook_messages(e))
    swap = HookImplementationSwap()
    with pytest.raises(HsaError, match="renames unknown hook"):
        swap.apply(episode, {"renames": {"nope": "x"}, "format": "xml:check"})
    with pytest.raises(HsaError, match="collide"):
        swap.apply(episode, {"renames": {"viewer_input": "check_stock"}, "format": "xml:check"})
    with pytest.raises(HsaError, match="unknown hook feedback format"):
        swap.apply(episode, {"renames": {}, "format": "smoke:signals"})
    stray = replace(
        episode,
        messages=episode.messages + ({"role": "user", "name": "hook.ghost", "content": "boo"},),
    )
    with pytest.raises(HsaError, match="hook.ghost, a hook the harness does not define"):
        swap.apply(stray, {"renames": {}, "format": "xml:check"})


@given(
    row=rich_episode_dicts(),
    seed=st.integers(0, 2**32),
    split=st.sampled_from(["train", "heldout"]),
)
def test_swap_keeps_every_core_feedback_up_to_the_renaming(row, seed, split):
    episode = Episode.from_dict(row)
    swap = HookImplementationSwap(split=split)
    params = swap.sample_params(episode, random.Random(seed))
    out = swap.apply(episode, params)
    mapping = Mapping(hooks=params["renames"])
    before, after = hook_messages(episode), hook_messages(out)
    assert [(i, m["role"]) for i, m in before] == [(i, m["role"]) for i, m in after]
    for (_, old), (_, new) in zip(before, after, strict=True):
        hook = mapping.hooks.get(old["name"][5:], old["name"][5:])
        assert new["name"] == f"hook.{hook}"
        (moved,) = rename_messages(
            ({"role": "user", "content": old["content"]},), episode.harness, mapping
        )
        assert (
            parse_feedback(new["content"], params["format"], hook=hook).feedback == moved["content"]
        )
    assert all(h.config[FORMAT_KEY] == params["format"] for h in out.harness.hooks)
    taken = set(out.harness.tool_names) | set(out.harness.skill_ids) | {out.harness.skill_loader}
    names = [h.name for h in out.harness.hooks]
    assert len(set(names)) == len(names) and not taken & set(names)


# ---- hook_retry_policy -----------------------------------------------------------------------


def _judged(episode: Episode) -> list[dict]:
    return [episode.messages[t.at] for t in episode.gold.turns if t.at < len(episode.messages)]


def test_retry_sequences_of_the_example(example):
    found = {e.id: retry_sequences(e) for e in example}
    with_sequences = {k for k, v in found.items() if v}
    # lc-hook-retry-035 keeps its sequence: the viewer asked for "the last link", the hook said
    # "tonight's links run from 1 to 10" and the recovery changed 13 to 10, read there alone
    # (the prompt's "10" is a coupon's, ZB10); cut, the row would teach the model to guess it.
    assert with_sequences == {e.id for e in example if e.meta.get("category") == "hook_retry"} - {
        "lc-hook-retry-035"
    }
    assert found["lc-hook-retry-035"] == []
    assert found["lc-hook-retry-001"] == [
        {"at": 3, "hook_messages": [4], "hooks": ["tool_arguments"], "recovery": 5}
    ]
    assert found["lc-hook-retry-004"] == [
        {"at": 5, "hook_messages": [6], "hooks": ["reply_compliance"], "recovery": 7}
    ]
    # A viewer-input flag follows a viewer message, not a failed step: nothing to strip.
    assert found["lc-no-tool-005"] == []


def test_retry_policy_strips_to_the_recovering_turn(example):
    by_id = {e.id: e for e in example}
    for variant in variants_of("hook_retry_policy", example, keep_share=0.0):
        original, out = by_id[variant.source_id], variant.episode
        (params,) = [s.params for s in variant.lineage]
        removed = {k for s in params["stripped"] for k in [s["at"], *s["hook_messages"]]}
        assert out.messages == tuple(m for i, m in enumerate(original.messages) if i not in removed)
        if retry_sequences(original):
            assert len(removed) == 2 and not hook_messages(out)
        else:
            assert out == original
        assert _judged(out) == _judged(original)
        assert [replace(t, at=0) for t in out.gold.turns] == [
            replace(t, at=0) for t in original.gold.turns
        ]


def test_retry_policy_keeps_a_share_whole(example):
    retry = [e for e in example if retry_sequences(e)]
    assert all(
        v.episode == e
        for v, e in zip(variants_of("hook_retry_policy", retry, keep_share=1.0), retry, strict=True)
    )
    out = list(augment(recipe("hook_retry_policy", variants=5), retry))
    kept = sum(1 for v in out if v.episode == next(e for e in retry if e.id == v.source_id))
    assert 0.1 < kept / len(out) < 0.3  # default keep_share 0.2, over 200 variants


def _hand_episode(messages, gold):
    harness = load_example_harness()
    return Episode.from_dict({"id": "hand", "messages": messages, "gold": gold}, harness=harness)


def _coupon_retry(user: str, first: str, feedback: str, code: str, thinking: str | None = None):
    """``get_price_after_coupon(3, first)``, blocked by the argument hook's ``feedback``, then
    the recovery with ``code`` (with ``thinking`` as its reasoning), its result and a reply."""
    recovery = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            _call("c2", "get_price_after_coupon", {"link_number": 3, "coupon_code": code})
        ],
    }
    if thinking is not None:
        recovery["reasoning_content"] = thinking
    return _hand_episode(
        [
            {"role": "user", "content": user},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    _call("c1", "get_price_after_coupon", {"link_number": 3, "coupon_code": first})
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "c1",
                "name": "hook.tool_arguments",
                "content": feedback,
            },
            recovery,
            {"role": "tool", "tool_call_id": "c2", "content": '{"price": 99}'},
            {"role": "assistant", "content": "99."},
        ],
        {
            "turns": [
                {
                    "at": 3,
                    "calls": [
                        {
                            "name": "get_price_after_coupon",
                            "arguments": {"link_number": [3], "coupon_code": [code]},
                        }
                    ],
                },
                {"at": 5, "no_call": True},
            ]
        },
    )


def _call(cid, name, args):
    return {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def test_a_recovery_that_writes_what_only_the_feedback_gave_keeps_its_sequence():
    """Cut, the row would teach the model a date it never read: the hook's feedback gave it."""

    def episode(user: str):
        return _hand_episode(
            [
                {"role": "user", "content": user},
                {"role": "assistant", "content": "Link 3 ships on 2024-07-12."},
                {
                    "role": "user",
                    "name": "hook.reply_compliance",
                    "content": "Wrong date: link 3 ships by 2024-07-19 at the latest.",
                },
                {"role": "assistant", "content": "Sorry: link 3 ships by 2024-07-19."},
            ],
            {"at": 3, "no_call": True},
        )

    assert retry_sequences(episode("When does link 3 ship?")) == []
    # the user gave the date: the recovery reads it there, and the sequence may go
    said = episode("Will link 3 ship by 2024-07-19?")
    assert retry_sequences(said) == [
        {"at": 1, "hook_messages": [2], "hooks": ["reply_compliance"], "recovery": 3}
    ]


def test_a_recovery_that_writes_the_feedbacks_number_in_groups_keeps_its_sequence():
    """A clinic's payment hook said "over the front-desk limit of 2000"; the recovery told the
    caller "at most $2,000": cut, 15 of 18 rows taught a limit the model never read."""

    def episode(feedback: str):
        return _hand_episode(
            [
                {"role": "user", "content": "Please book the room."},
                {"role": "assistant", "content": "Booked for you."},
                {"role": "user", "name": "hook.reply_compliance", "content": feedback},
                {"role": "assistant", "content": "Sorry: one payment can be at most $2,000."},
            ],
            {"at": 3, "no_call": True},
        )

    assert retry_sequences(episode("Over the front-desk limit of 2000.")) == []
    assert retry_sequences(episode("Over the front-desk limit of 2,000.")) == []
    # a range gives its ends ("18-24 °C": a reply that then says 24 read it there)
    assert retry_sequences(episode("Payments must be in the range 500-2000.")) == []
    # a number the feedback does not give: the recovery leans on nothing
    assert retry_sequences(episode("Over the front-desk limit.")) != []
    # digits of another script are the same number (an Arabic airline's "٢٣ كغ" cut the
    # recovery that passed 23: the gold's value was then read nowhere)
    assert retry_sequences(episode("تجاوز الحد الأقصى وهو ٢٬٠٠٠.")) == []
    assert retry_sequences(episode("सीमा २००० से अधिक है।")) == []
    # and grouped the Indian way (lakhs): "₹1,00,000" is the 100000 a corrected call passes
    lakh = _hand_episode(
        [
            {"role": "user", "content": "Pay it all."},
            {"role": "assistant", "content": "Paying ₹1,50,000."},
            {"role": "user", "name": "hook.reply_compliance", "content": "सीमा ₹1,00,000 है।"},
            {"role": "assistant", "content": "Sorry: at most 100000 per payment."},
        ],
        {"at": 3, "no_call": True},
    )
    assert retry_sequences(lakh) == []


@pytest.mark.parametrize(
    ("feedback", "user", "leans"),
    [
        # the corrected call passes a code only the feedback gave: cut, the row would teach the
        # model to write it from nowhere
        ("Coupon SPRING is expired; the live coupon is LIVEVIP.", "Price of link 3?", True),
        ("优惠券已过期，请改用直播间券ZBQUAN。", "链接3多少钱？", True),
        # the user wrote it: the recovery reads it there
        ("Coupon SPRING is expired; the live coupon is LIVEVIP.", "Price with LIVEVIP?", False),
        # the feedback gives no value the call passes
        ("Coupon SPRING is expired.", "Price of link 3?", False),
    ],
)
def test_a_corrected_call_that_passes_what_only_the_feedback_gave_keeps_its_sequence(
    feedback, user, leans
):
    """An airline's argument hook said "Shanghai is not an airport code: Shanghai Pudong is
    PVG", and the recovery called with "PVG": the sequence was cut (only digits counted as data
    a recovery may have read), so the row taught the model to produce PVG from nothing."""
    code = "ZBQUAN" if "ZBQUAN" in feedback else "LIVEVIP"
    episode = _coupon_retry(user, "SPRING", feedback, code)
    assert (retry_sequences(episode) == []) == leans


def test_a_later_message_that_writes_what_only_the_feedback_gave_keeps_its_sequence():
    """The hook said "at most 30 EUR"; the recovery loaded a skill (which gives no cap), and
    only the call after it refunded 30: the recovery alone was read, the sequence was cut, and
    the row asked for 30 that nothing it shows says."""

    def episode(feedback: str):
        return _hand_episode(
            [
                {"role": "user", "content": "Refund all 45 of order 7, it never came."},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_call("c1", "get_price_after_coupon", {"link_number": 45})],
                },
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "name": "hook.tool_arguments",
                    "content": feedback,
                },
                {"role": "assistant", "content": "Let me check the cap."},
                {"role": "user", "content": "ok"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_call("c2", "get_price_after_coupon", {"link_number": 37})],
                },
                {"role": "tool", "tool_call_id": "c2", "content": '{"price": 99}'},
                {"role": "assistant", "content": "Done."},
            ],
            {
                "turns": [
                    {
                        "at": 5,
                        "calls": [
                            {"name": "get_price_after_coupon", "arguments": {"link_number": [37]}}
                        ],
                    },
                    {"at": 7, "no_call": True},
                ]
            },
        )

    assert retry_sequences(episode("At most 37 per order.")) == []
    assert retry_sequences(episode("Over the cap per order.")) != []


TEST_HARNESSES = Path(__file__).parent / "harnesses"
HARNESSES_WITH_HOOKS = [
    pytest.param(load_example_harness, id="live-commerce"),
    *(
        pytest.param(lambda name=name: load_harness(TEST_HARNESSES / name / "harness"), id=name)
        for name in ("airline", "coding")
    ),
]


@pytest.mark.parametrize("harness_of", HARNESSES_WITH_HOOKS)
def test_a_datum_the_model_never_reads_does_not_count_as_read(harness_of):
    """The feedback's amount written in a hook's config or in a skill body no message loads is
    not in the row: cut, the recovery would state it from nowhere. Where rows show it (a tool's
    description), the recovery may read it there."""
    base = harness_of()
    hook = base.hooks[0]

    def sequence(harness):
        episode = Episode.from_dict(
            {
                "id": "hand",
                "messages": [
                    {"role": "user", "content": "Move 20000 please."},
                    {"role": "assistant", "content": "Done, 20000 moved."},
                    {
                        "role": "user",
                        "name": f"hook.{hook.name}",
                        "content": "Over the daily limit of 98765.",
                    },
                    {"role": "assistant", "content": "Sorry: the daily limit is 98765."},
                ],
                "gold": {"at": 3, "no_call": True},
            },
            harness=harness,
        )
        return retry_sequences(episode)

    assert sequence(base) == []
    in_config = replace(
        base, hooks=(replace(hook, config={**hook.config, "limit": 98765}), *base.hooks[1:])
    )
    skill = base.skills[-1]
    unloaded_body = replace(
        base,
        skills=(*base.skills[:-1], replace(skill, content=skill.content + "\nLimit: 98765.\n")),
    )
    assert sequence(in_config) == []
    assert sequence(unloaded_body) == []
    tool = base.tools[0]
    described = replace(
        base,
        tools=(
            replace(tool, description=tool.description + " Daily limit 98765."),
            *base.tools[1:],
        ),
    )
    assert sequence(described) == [
        {"at": 1, "hook_messages": [2], "hooks": [hook.name], "recovery": 3}
    ]


def test_a_step_with_a_successful_call_or_judged_by_gold_is_never_stripped():
    mixed = _hand_episode(
        [
            {"role": "user", "content": "1、2号多少钱"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    _call("a", "get_product_info", {"link_number": 1}),
                    _call("b", "get_product_info", {"link_number": 12}),
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": "{}"},
            {
                "role": "tool",
                "tool_call_id": "b",
                "name": "hook.tool_arguments",
                "content": "bad link",
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [_call("c", "get_product_info", {"link_number": 2})],
            },
            {"role": "tool", "tool_call_id": "c", "content": "{}"},
            {"role": "assistant", "content": "ok"},
        ],
        {"at": 6, "no_call": True},
    )
    assert retry_sequences(mixed) == []
    # A step the gold judges is never a sequence's either; an episode whose gold judges the
    # step a hook sent back does not load (hsa.model.episode.check_recorded_turns), so it is
    # built here without the load's checks.
    loaded = _hand_episode(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello"},
            {"role": "user", "name": "hook.reply_compliance", "content": "Chinese please"},
            {"role": "assistant", "content": "你好"},
        ],
        {"turns": [{"at": 3, "no_call": True}]},
    )
    assert retry_sequences(loaded) != []
    judged = dataclasses.replace(
        loaded,
        gold=Gold.from_dict(
            {"turns": [{"at": 1, "no_call": True}, {"at": 3, "no_call": True}]}, n_messages=4
        ),
    )
    assert retry_sequences(judged) == []
    no_hook = _hand_episode(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello"},
            {"role": "assistant", "content": "你好"},
        ],
        {"at": 2, "no_call": True},
    )
    assert retry_sequences(no_hook) == []
    with pytest.raises(HsaError, match="no strippable hook-retry sequence"):
        HookRetryPolicy().apply(
            judged,
            {
                "stripped": [
                    {"at": 1, "hook_messages": [2], "hooks": ["reply_compliance"], "recovery": 3}
                ],
                "kept": [],
            },
        )


def test_consecutive_sequences_strip_independently():
    episode = _hand_episode(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello, cheapest!"},
            {"role": "user", "name": "hook.reply_compliance", "content": "no superlatives"},
            {"role": "assistant", "content": "Hello"},
            {"role": "user", "name": "hook.reply_compliance", "content": "Chinese please"},
            {"role": "user", "name": "hook.reply_skill_loaded", "content": "and a skill"},
            {"role": "assistant", "content": "你好"},
        ],
        {"at": 6, "no_call": True},
    )
    first, second = retry_sequences(episode)
    assert (first["at"], first["recovery"]) == (1, 3)
    assert (second["at"], second["hook_messages"], second["recovery"]) == (3, [4, 5], 6)
    policy = HookRetryPolicy()
    only_second = policy.apply(episode, {"stripped": [second], "kept": [first]})
    assert [m["content"] for m in only_second.messages] == [
        "hi",
        "Hello, cheapest!",
        "no superlatives",
        "你好",
    ]
    assert only_second.gold.turns[0].at == 3
    both = policy.apply(episode, {"stripped": [first, second], "kept": []})
    assert [m["content"] for m in both.messages] == ["hi", "你好"] and both.gold.turns[0].at == 1


@st.composite
def retry_episode_dicts(draw) -> dict:
    """Episodes with several hook-retry sequences of every shape (blocked calls, rejected
    replies, both), and steps that are no sequence (a call the hook let through beside one it
    blocked), each good step judged by the gold."""
    harness = draw(harnesses(min_tools=1))
    if not harness.hooks:
        harness = replace(
            harness,
            hooks=(Hook(name="guard_x", event="tool_call", function="check_0"),),
            hooks_source="def check_0(payload, config):\n    return {'ok': True}\n",
        )
    hooks = [h.name for h in harness.hooks]
    messages = [{"role": "user", "content": "go"}]
    turns = []
    n = 0

    def call(tool, args):
        nonlocal n
        n += 1
        return {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": tool, "arguments": json.dumps(args)},
        }

    def hook_message(role, call_id=None):
        message = {
            "role": role,
            "name": f"hook.{draw(st.sampled_from(hooks))}",
            "content": draw(unicode_text),
        }
        if call_id:
            message["tool_call_id"] = call_id
        return message

    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["blocked", "rejected", "both", "mixed", "plain"]))
        if kind in ("blocked", "both"):
            bad = [
                call(draw(st.sampled_from(harness.tool_names)), {})
                for _ in range(draw(st.integers(1, 2)))
            ]
            messages.append({"role": "assistant", "content": None, "tool_calls": bad})
            messages += [hook_message("tool", c["id"]) for c in bad]
            if kind == "both":
                messages.append(hook_message("user"))
        elif kind == "rejected":
            messages.append({"role": "assistant", "content": draw(unicode_text) or "draft"})
            messages += [hook_message("user") for _ in range(draw(st.integers(1, 2)))]
        elif kind == "mixed":  # one call let through (valid: a training target), one blocked
            passed = draw(st.sampled_from(harness.tools))
            good = call(passed.name, draw(gold_calls(passed))[1])
            bad = call(draw(st.sampled_from(harness.tool_names)), {})
            messages.append({"role": "assistant", "content": None, "tool_calls": [good, bad]})
            messages += [
                {"role": "tool", "tool_call_id": good["id"], "content": "{}"},
                hook_message("tool", bad["id"]),
            ]
        tool = draw(st.sampled_from(harness.tools))
        gold_call, args = draw(gold_calls(tool))
        turns.append({"at": len(messages), "calls": [gold_call.to_dict()]})
        good = call(tool.name, args)
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [good]},
            {"role": "tool", "tool_call_id": good["id"], "content": "{}"},
        ]
    if draw(st.booleans()):  # a final reply, or a prompt still awaiting it
        messages.append({"role": "assistant", "content": "done"})
        turns.append({"at": len(messages) - 1, "no_call": True})
    else:
        turns.append({"at": len(messages), "no_call": True})
    return {
        "id": "retry",
        "harness": harness.to_dict(),
        "messages": messages,
        "gold": {"turns": turns},
        "meta": {},
    }


@given(
    row=retry_episode_dicts(), seed=st.integers(0, 2**32), keep_share=st.sampled_from([0.0, 0.5])
)
def test_stripping_removes_whole_sequences_and_keeps_every_judged_turn(row, seed, keep_share):
    episode = Episode.from_dict(row)
    policy = HookRetryPolicy(keep_share=keep_share)
    params = policy.sample_params(episode, random.Random(seed))
    out = policy.apply(episode, params)
    found = retry_sequences(episode)
    assert sorted(params["stripped"] + params["kept"], key=lambda s: s["at"]) == found
    removed = {k for s in params["stripped"] for k in [s["at"], *s["hook_messages"]]}
    assert out.messages == tuple(m for i, m in enumerate(episode.messages) if i not in removed)
    for turn_o, turn_v in zip(episode.gold.turns, out.gold.turns, strict=True):
        assert replace(turn_v, at=turn_o.at) == turn_o
        if turn_o.at < len(episode.messages):
            assert out.messages[turn_v.at] is episode.messages[turn_o.at]
        else:
            assert turn_v.at == len(out.messages)
    # Each kept step that is no sequence ("mixed") survives whole.
    assert all(
        any(m is o for m in out.messages)
        for i, o in enumerate(episode.messages)
        if i not in removed
    )
    if keep_share == 0.0:
        assert retry_sequences(out) == []
    assert (
        HookRetryPolicy(keep_share=1.0).apply(
            episode, HookRetryPolicy(keep_share=1.0).sample_params(episode, random.Random(seed))
        )
        is episode
    )


# A hooked harness's texts per language: the persona and the hook's description.
HOOKED_IN = {
    "en": ("You book trips for customers.", "Checks that the card is accepted."),
    "it": ("Prenoti i viaggi per i clienti.", "Controlla che la carta sia accettata dal negozio."),
    "zh": ("你为顾客预订行程。", "检查这张卡是否可以使用。"),
    "ja": ("お客様の旅行を予約します。", "カードが使えるかどうかを確認します。"),
    # No Latin function word tells Hangul from English: its script does.
    "ko": ("고객의 여행을 예약합니다.", "카드를 사용할 수 있는지 확인합니다."),
}


@pytest.mark.parametrize(
    ("language", "sentences"),
    [("en", {"en"}), ("it", set()), ("zh", {"zh"}), ("ja", set()), ("ko", set())],
)
def test_swap_words_feedback_sentences_only_in_the_harness_language(language, sentences):
    """A feedback sentence wraps the hook's own feedback: "检查 card_check 未通过：<Italian>"
    mixes two languages in one message. Sentences come in a language the harness is written in
    (a harness written in Chinese or Japanese alone, with no English function word, is no
    English one: "Check card_check failed: <Japanese>" had been written); formats without
    words (tags, XML, JSON) serve every harness."""
    persona, description = HOOKED_IN[language]
    harness = Harness.from_dict(
        {
            "name": "trips",
            "prompt": {"text": {"persona": persona}},
            "hooks": [
                {
                    "name": "card_check",
                    "event": "tool_call",
                    "function": "f",
                    "description": description,
                }
            ],
            "hooks_source": "def f(payload, config):\n    return {'ok': True}\n",
        }
    )
    episode = Episode.from_dict(
        {"id": "e", "messages": [{"role": "user", "content": "?"}], "gold": {"no_call": True}},
        harness=harness,
    )
    worded, wordless = set(), 0
    for seed in range(60):
        for split in ("train", "heldout"):
            params = HookImplementationSwap(split=split).sample_params(episode, random.Random(seed))
            style, wording = split_format(params["format"])
            if params["format"] == "tag:lenticular":  # 【hook】: Chinese punctuation
                worded.add("zh")
            elif style == "sentence":
                worded.add(wording.split("-")[0])
            else:
                wordless += 1
    assert worded == sentences
    assert wordless


def test_a_recovery_whose_failure_was_cut_loses_the_thinking_it_wrote_after_it():
    """The recovery's thinking was written after the feedback ("the hook wants the code in
    capitals"): with the failure and the feedback cut, the row taught the model to think about a
    check it never saw. A sequence kept whole keeps its recovery's thinking."""
    thinking = "The hook wants the code in capitals."
    episode = _coupon_retry(
        "Price of link 3 with SPRING?",
        "spring",
        "coupon codes are written in capitals",
        "SPRING",
        thinking=thinking,
    )
    recovery = episode.messages[3]
    (sequence,) = retry_sequences(episode)
    policy = HookRetryPolicy()
    cut = policy.apply(episode, {"stripped": [sequence], "kept": []})
    assert [m["role"] for m in cut.messages] == ["user", "assistant", "tool", "assistant"]
    assert "reasoning_content" not in cut.messages[1]
    assert cut.messages[1]["tool_calls"] == recovery["tool_calls"]
    whole = policy.apply(episode, {"stripped": [], "kept": [sequence]})
    assert whole.messages[3]["reasoning_content"] == thinking


PARTY_SIZE = """
def check_party_size(payload, config):
    limits = {param: int(limit) for param, limit in config.items()}
    for param, limit in limits.items():
        if int(payload["arguments"].get(param, 0)) > limit:
            return {"ok": False, "feedback": f"{param} is above {limit}."}
    return {"ok": True}
"""


def test_a_hook_reading_its_whole_config_is_not_handed_the_feedback_format():
    """A travel desk's hook reads its whole config as limits per parameter (an audit): the swap
    writes the hook's feedback format into its config, and the variant's hook then raised on
    int('sentence:en-blocked') at every call, so verification rejected half of the variants and
    rollouts under them would fail. The format is hsa's to wrap the feedback with, and is not
    handed to the hook."""
    from hsa.model.hook_runner import HookRunner

    harness = Harness.from_dict(
        {
            "name": "travel",
            "tools": [
                {
                    "name": "book_trip",
                    "description": "Books a trip.",
                    "parameters": {"type": "object", "properties": {"adults": {"type": "integer"}}},
                }
            ],
            "hooks": [
                {
                    "name": "party_size",
                    "event": "tool_call",
                    "function": "check_party_size",
                    "config": {"adults": 9, "feedback_format": "tag:square"},
                }
            ],
            "hooks_source": PARTY_SIZE,
        },
        trust_hooks=True,
    )
    runner = HookRunner(harness)
    payload = {"tool_name": "book_trip", "arguments": {"adults": 12}}
    (verdict,) = runner.run("tool_call", payload)
    assert not verdict.ok and verdict.feedback == "adults is above 9."
    assert verdict.message.startswith("[")  # still wrapped in the configured format


def test_a_recovery_that_changes_a_value_to_the_feedbacks_keeps_its_sequence():
    """A live room (an audit): the viewer asked for 5, the hook said "limit 2 per order", the
    recovery passed 2; cut, the row taught the model to change the viewer's 5 to a 2 it never
    read (a 2 elsewhere in the prompt, a "maximum": 20, counted as the source). A value the
    recovery changed from the blocked call's to the feedback's is read there."""
    from hsa.transforms.hooks import _shown

    def episode(user: str):
        first = {"link_number": 3, "quantity": 5}
        return _hand_episode(
            [
                {"role": "user", "content": user},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_call("c1", "get_price_after_coupon", first)],
                },
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "name": "hook.tool_arguments",
                    "content": "Link 3 sells at most 2 per order; quantity=5 is over it.",
                },
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_call("c2", "get_price_after_coupon", {**first, "quantity": 2})],
                },
                {"role": "tool", "tool_call_id": "c2", "content": '{"price": 198}'},
                {"role": "assistant", "content": "198 for the 2 you may buy."},
            ],
            {
                "turns": [
                    {
                        "at": 3,
                        "calls": [
                            {
                                "name": "get_price_after_coupon",
                                "arguments": {"link_number": [3], "quantity": [2]},
                            }
                        ],
                    },
                    {"at": 5, "no_call": True},
                ]
            },
        )

    asked = episode("Five of link 3, please: quantity 5.")
    assert "2" in _shown(asked.harness)[1]  # the prompt writes a 2 elsewhere
    assert retry_sequences(asked) == []
    # the viewer gave the 2 (two of them, at most 2): the recovery reads it there, and it may go
    said = episode("Five of link 3, or 2 if that is the most I may take.")
    assert [s["at"] for s in retry_sequences(said)] == [1]
