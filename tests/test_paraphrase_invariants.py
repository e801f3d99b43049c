"""One rule of what a rewording keeps (hsa.text.paraphrase), held alike on skill bodies (the
skill-content rewrite) and on tool descriptions (the tool-description paraphrase)."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsa.augment.registry import registered
from hsa.example import load_example_episodes
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.text.paraphrase import (
    NEGATIONS_EN,
    NEGATIONS_ZH,
    NOT_NEGATIONS_ZH,
    invariant_spans,
    invariants,
    lost_invariants,
    negations,
)
from hsa.transforms.tool_schema.options import DESCRIPTIONS

# Words of both families' phrase tables (tool descriptions: get, the user, product, e.g.,
# 商品...; skill bodies: make sure, the viewer, 然后...), and one of every kind of invariant,
# the kinds the two copies of the rule used to disagree on included (unless, nothing, 非, 否,
# single and book-title quotes, dotted names).
_UNITS = st.sampled_from(
    [
        "Get",
        "the user",
        "a product",
        "product",
        "e.g.",
        "based on",
        "information",
        "specific",
        "the viewer",
        "make sure",
        "in parallel",
        "exactly as",
        "获取",
        "商品",
        "例如",
        "然后",
        "库存",
        "3",
        "42.5",
        "5-7",
        "10%",
        '"ZB10"',
        "'M'",
        "“满减”",
        "‘VIP’",
        "「宝子」",
        "《直播须知》",
        "`size`",
        "`check_stock(link_number=3)`",
        "get_price",
        "linkNumber",
        "math.factorial",
        "items.json",
        "link_number",
        "size",
        "shop@example.com",
        "not",
        "never",
        "no",
        "none",
        "nothing",
        "nobody",
        "without",
        "unless",
        "don't",
        "can't",
        "cannot",
        "不",
        "没有",
        "禁止",
        "非必填",
        "否则",
        "勿",
        "莫",
        ",",
        ".",
        "。",
        "and",
        "then",
    ]
)
NAMES = ("check_stock", "link_number", "size", "get_price")


@st.composite
def texts(draw) -> str:
    return " ".join(draw(st.lists(_UNITS, min_size=1, max_size=20)))


@pytest.fixture(scope="module")
def episode() -> Episode:
    return load_example_episodes()[0]


def with_texts(episode: Episode, text: str) -> Episode:
    """The episode with ``text`` in its first skill's body and as its first tool's description."""
    harness = episode.harness
    body = f"# Rules\n\n## Always\n\n{text}\n"
    skills = (replace(harness.skills[0], content=body), *harness.skills[1:])
    tool = replace(harness.tools[0], description=text)
    return episode.with_harness(replace(harness, skills=skills, tools=(tool, *harness.tools[1:])))


def rewritten(name: str, episode: Episode, seed: int, **options) -> Episode:
    transform = registered()[name](**options)
    return transform.apply(episode, transform.sample_params(episode, random.Random(seed)))


# ---- the rule --------------------------------------------------------------------------------


@pytest.mark.parametrize("word", NEGATIONS_EN)
def test_every_english_negation_counts(word):
    kind = "not" if word in ("not", "cannot") else word
    assert negations(f"Reply {word} later.") == [kind]
    assert negations(f"Reply {word.upper()} later.") == [kind]  # restyled (caps) is kept
    assert negations(f"Reply `{word}` later.") == []  # code is code, kept as a whole


@pytest.mark.parametrize("word", ["don't", "won’t", "shouldn't", "isn't", "wouldn't"])
def test_every_contraction_counts_as_not(word):
    assert negations(f"You {word} reply.") == ["not"]
    assert lost_invariants(f"You {word} reply.", "You do not reply.") == []
    assert lost_invariants(f"You {word} reply.", "You reply.") == ["not"]


@pytest.mark.parametrize("word", NEGATIONS_ZH)
def test_every_chinese_negation_counts(word):
    assert negations(f"请{word}回复") == [word]


@pytest.mark.parametrize("compound", NOT_NEGATIONS_ZH)
def test_compounds_that_do_not_negate_do_not_count(compound):
    assert negations(f"请{compound}回复") == []


def test_the_kinds_the_two_copies_disagreed_on_are_invariants():
    text = (
        "Do nothing unless asked; 非必填，否则莫回复. See ‘VIP’, 《直播须知》 and 'M' in "
        "items.json, e.g. math.factorial."
    )
    found = invariants(text)
    for item in (
        "nothing",
        "unless",
        "非",
        "否",
        "莫",
        "“VIP”",
        "“直播须知”",
        "“M”",
        "items.json",
        "math.factorial",
    ):
        assert found[item] == 1, item
    assert "e.g" not in found  # an abbreviation is prose
    assert invariants("It's the users' turn, don't wait.") == {"not": 1}  # apostrophes


@settings(max_examples=60, deadline=None)
@given(text=texts())
def test_invariant_spans_hold_every_invariant_but_numbers_and_negations(text):
    # What a rewording may not touch covers what it must keep; numbers and negations are kept
    # by the tables holding none (a negation may be restyled in place).
    rest = list(text)
    for start, end in invariant_spans(text, NAMES):
        rest[start:end] = " " * (end - start)
    negation_kinds = {"not", *NEGATIONS_EN, *NEGATIONS_ZH}
    left = invariants("".join(rest), NAMES)
    assert all(k in negation_kinds or re.fullmatch(r"[0-9.]+", k) for k in left), left


# ---- held on both kinds of text --------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(text=texts(), seed=st.integers(0, 2**32), split=st.sampled_from(["train", "heldout"]))
def test_skill_bodies_and_tool_descriptions_keep_the_same_invariants(episode, text, seed, split):
    source = with_texts(episode, text)
    names = sorted(source.harness.identifiers | set(NAMES))
    body = source.harness.skills[0].content
    skill = rewritten("skill_content_rewrite", source, seed, split=split)
    assert lost_invariants(body, skill.harness.skills[0].content, names) == []
    tool = rewritten("tool_description_paraphrase", source, seed, split=split)
    description = tool.harness.tools[0].description
    assert lost_invariants(text, description, names) == []
    # A table rewording neither drops nor adds an invariant.
    assert invariants(description, names) == invariants(text, names)


def test_both_reword_a_text_that_holds_their_phrases(episode):
    text = (
        "Get the product information for the viewer, e.g. the price; make sure you do not "
        "share it unless the user asks. 获取商品信息，然后回复，非必填。"
    )
    source = with_texts(episode, text)
    names = sorted(source.harness.identifiers)
    changed = {"skill": 0, "tool": 0}
    for seed in range(6):
        skill = rewritten("skill_content_rewrite", source, seed, split="train")
        body = skill.harness.skills[0].content
        tool = rewritten("tool_description_paraphrase", source, seed, split="train")
        description = tool.harness.tools[0].description
        assert lost_invariants(source.harness.skills[0].content, body, names) == []
        assert lost_invariants(text, description, names) == []
        changed["skill"] += body != source.harness.skills[0].content
        changed["tool"] += description != text
    assert changed["skill"] >= 3 and changed["tool"] == 6


def test_a_hyphenated_phrase_of_the_table_is_reworded():
    # The tool paraphrase used to keep every hyphenated word whole, so "live-stream room", a
    # phrase of its own table, was never reworded; a hyphen makes no invariant.
    out = DESCRIPTIONS.paraphrase("Open the live-stream room.", "train", random.Random(0))
    assert out == "Open the live room."
    assert DESCRIPTIONS.paraphrase(
        "Reads items.json for the product.", "train", random.Random(0)
    ).startswith("Reads items.json for the ")
