"""The one reading of a message's text (hsa.model.message), and the readers that use it: the scorer,
hook compliance and the runtime's hook payloads, verification's prose, skill id and hook transforms.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hsa.augment.user_data import rewrite_message_text
from hsa.example import load_example_harness
from hsa.model.episode import Episode
from hsa.model.gold import TurnGold
from hsa.model.message import content_text, is_text_part, message_text
from hsa.model.scorer import judge
from hsa.model.scorer import message_text as scorer_message_text
from hsa.transforms.hooks import HookImplementationSwap

TEXT = {"type": "text", "text": "hello"}
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
REFUSAL = {"type": "refusal", "refusal": "I can't help with that."}


def test_strings_are_their_own_text_and_none_has_none():
    assert content_text("a  b\n") == "a  b\n"
    assert content_text("") == ""
    assert content_text(None) == ""
    assert message_text({"role": "assistant", "content": None, "tool_calls": []}) == ""
    assert message_text({"role": "assistant"}) == ""


def test_text_parts_join_with_one_space_so_words_never_run_together():
    parts = [{"type": "text", "text": "call get_"}, {"type": "text", "text": "price now"}]
    assert content_text(parts) == "call get_ price now"
    assert content_text([TEXT]) == "hello"
    assert content_text([]) == ""


def test_parts_of_other_types_and_malformed_parts_carry_no_text():
    assert content_text([IMAGE, TEXT, REFUSAL]) == "hello"
    assert content_text([IMAGE]) == ""
    # No type, a text that is no string, a part that is no object: none of them is text.
    assert (
        content_text(
            [
                {"text": "untyped"},
                {"type": "text", "text": None},
                {"type": "text"},
                "loose string",
                3,
                None,
                TEXT,
            ]
        )
        == "hello"
    )
    assert not is_text_part({"type": "input_text", "text": "x"})


def test_content_of_no_known_shape_has_no_text():
    for content in (3, 2.5, True, {"type": "text", "text": "a dict, not a list"}, b"bytes"):
        assert content_text(content) == ""


@given(
    st.lists(
        st.one_of(
            st.builds(lambda t: {"type": "text", "text": t}, st.text()),
            st.just(IMAGE),
            st.just(REFUSAL),
            st.builds(lambda t: {"text": t}, st.text()),
            st.none(),
            st.integers(),
        )
    )
)
def test_a_list_reads_as_its_text_parts_in_order(parts):
    texts = [p["text"] for p in parts if isinstance(p, dict) and p.get("type") == "text"]
    assert content_text(parts) == " ".join(texts)
    assert message_text({"role": "user", "content": parts}) == content_text(parts)


def test_the_scorer_reads_the_same_text():
    assert scorer_message_text is message_text
    turn = TurnGold(at=0, no_call=True, reply={"contains": ["refund ticket"]})
    harness = load_example_harness()
    reply = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Your refund"},
            IMAGE,
            {"type": "text", "text": "ticket is open."},
        ],
    }
    assert judge(reply, turn, harness).verdict.correct
    no_text = {"role": "assistant", "content": [IMAGE]}
    assert not judge(no_text, turn, harness).verdict.correct


def test_the_hook_swap_reads_a_feedback_message_of_several_parts_as_one_text():
    """A hook feedback message split into parts is one feedback: the swap rewrites it whole (in
    one part), with its parts' words kept apart."""
    base = load_example_harness()
    episode = Episode.from_dict(
        {
            "id": "parts",
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Hello!"},
                {
                    "role": "user",
                    "name": "hook.reply_compliance",
                    "content": [
                        {"type": "text", "text": "Reply in Chinese."},
                        {"type": "text", "text": "Keep it short."},
                    ],
                },
                {"role": "assistant", "content": "你好！"},
            ],
            "gold": {"at": 3, "no_call": True},
        },
        harness=base,
    )
    params = {"renames": {}, "format": "xml:check"}
    out = HookImplementationSwap().apply(episode, params)
    assert out.messages[2]["content"] == [
        {
            "type": "text",
            "text": '<check name="reply_compliance">Reply in Chinese. Keep it short.</check>',
        }
    ]


def test_a_rewrite_reaches_every_text_part_and_no_other_part():
    def upper(text):
        return text.replace("get_price", "fetch_price")

    parts = [{"type": "text", "text": "call get_price"}, IMAGE, {"type": "text", "text": "no"}]
    out = rewrite_message_text({"role": "assistant", "content": parts}, upper, None)
    assert out == [{"type": "text", "text": "call fetch_price"}, IMAGE, parts[2]]
    assert out[1] is IMAGE and out[2] is parts[2]  # untouched parts are the same objects
    assert parts[0]["text"] == "call get_price"  # the message itself is not changed
    # Content the rewrite leaves alone is handed back as it is, whatever its shape.
    untouched = [IMAGE, {"type": "text", "text": "nothing to move"}]
    assert rewrite_message_text({"role": "user", "content": untouched}, upper, None) is untouched
    for content in (None, "", 3):
        assert rewrite_message_text({"role": "user", "content": content}, upper, None) is content


def test_in_the_users_text_parts_a_rewrite_goes_around_the_users_data():
    message = {
        "role": "user",
        "content": [{"type": "text", "text": "use get_price, my reference is get_price 7"}],
    }
    out = rewrite_message_text(
        message, lambda t: t.replace("get_price", "fetch_price"), lambda: ("get_price 7",)
    )
    assert out[0]["text"] == "use fetch_price, my reference is get_price 7"
