"""Rendered rows: the families a row counts are those that changed what the model reads (its
messages and tools), not those whose transforms fired."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from hsa.augment.mapping import EMPTY
from hsa.augment.recipe import Recipe
from hsa.augment.step import Step
from hsa.augment.variant import Variant
from hsa.dataset.card import card_text
from hsa.dataset.generate import generate
from hsa.dataset.pipeline import augment_episode
from hsa.dataset.rows import (
    lineage_json,
    parse_row_id,
    row_id,
    variant_row,
    visible_families,
)
from hsa.model.episode import Episode, read_episodes
from hsa.model.frozen import replace
from hsa.render import render_conversation, render_messages, renders_alike

HARNESSES = Path(__file__).parent / "harnesses"
FINANCE = HARNESSES / "finance" / "episodes.jsonl"  # no hooks
PIPELINE = [
    {"hook_implementation_swap": {}},
    {"hook_retry_policy": {}},
    {"skill_content_rewrite": {}},
    {"tool_order_permutation": {}},
]


def recipe(seed: int = 5, pipeline: list[dict] = PIPELINE) -> Recipe:
    return Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": "visible",
            "seed": seed,
            "variants_per_episode": 3,
            "keep_original": True,
            "pipeline": pipeline,
        }
    )


@pytest.fixture(scope="module")
def finance() -> dict[str, Episode]:
    return {e.id: e for e in read_episodes(FINANCE) if isinstance(e, Episode)}


def test_a_family_counts_where_it_changed_what_the_model_reads(finance):
    loads_a_skill, loads_none = finance["fin-spend-001"], finance["fin-balance-001"]
    for episode, skill_visible in ((loads_a_skill, True), (loads_none, False)):
        original, *variants = augment_episode(recipe(), episode)
        assert visible_families(original) == []
        for variant in variants:
            assert isinstance(variant, Variant)
            fired = {s.transform for s in variant.lineage if s.fired}
            assert {"hook_implementation_swap", "skill_content_rewrite"} <= fired
            families = variant_row(variant, "v")["hsa_families"]
            # Hooks fired on a harness without hooks: nothing changed, nothing counted.
            assert "hooks" not in families
            # A rewritten skill body counts only where a message loads it.
            assert ("skill_content" in families) == skill_visible
            assert "tool_schema" in families


def test_a_harness_shown_with_other_messages_is_rendered_with_them(finance):
    # A trail where an episode-scoped step rewrites the messages between two harness-scoped
    # steps: the last step swaps the harness for an equal copy (no visible change), and the
    # step before it kept the harness object but not the messages.
    start = finance["fin-spend-001"]
    restyled = start.with_prompt_options(layout_style={"heading": "###"})
    reworded = replace(
        restyled, messages=[*restyled.messages[:-1], {"role": "assistant", "content": "Done."}]
    )
    copied = replace(reworded, harness=replace(reworded.harness))
    assert copied.harness is not reworded.harness and copied.harness == reworded.harness
    trail = (
        ("prompt", start, restyled),
        ("hooks", restyled, reworded),
        ("tool_schema", reworded, copied),
    )
    variant = Variant(start.id, 1, copied, (), EMPTY, trail=trail)
    assert visible_families(variant) == ["hooks", "prompt"]


def test_a_section_moved_to_the_first_user_turn_counts_where_it_shows_elsewhere(finance):
    # The prompt's parts differ (the section leaves the system prompt for the first user turn);
    # with a user turn the model reads it elsewhere, without one it lands back in the system
    # prompt, where it was: no change the model can see.
    start = finance["fin-spend-001"]
    only_skills = start.with_harness(
        replace(start.harness, prompt=replace(start.harness.prompt, sections=("skills",)))
    )
    moved = only_skills.with_prompt_options(placement={"skills": "first_user"})
    shown = Variant(start.id, 1, moved, (), EMPTY, trail=(("prompt", only_skills, moved),))
    assert visible_families(shown) == ["prompt"]
    no_user = tuple(m for m in only_skills.messages if m["role"] != "user")
    before, after = replace(only_skills, messages=no_user), replace(moved, messages=no_user)
    assert render_messages(before) == render_messages(after)
    unseen = Variant(start.id, 1, after, (), EMPTY, trail=(("prompt", before, after),))
    assert visible_families(unseen) == []


_PROMPTS = st.tuples(
    st.lists(st.sampled_from(["skills", "tools", "hooks"]), unique=True),  # sections
    st.dictionaries(st.sampled_from(["skills", "tools", "hooks"]), st.just("first_user")),
)


@given(first=_PROMPTS, second=_PROMPTS, user=st.booleans(), system=st.booleans())
@example(  # the one section moved to a user turn the conversation lacks: back where it was
    first=(["skills"], {}), second=(["skills"], {"skills": "first_user"}), user=False, system=False
)
def test_harnesses_render_alike_exactly_when_their_renderings_are_equal(
    finance, first, second, user, system
):
    # renders_alike answers mostly from the prompt's parts; it must agree with rendering, with
    # and without a user turn (without one, a preface joins the system prompt) and a system
    # message of the conversation's own.
    episode = finance["fin-spend-001"]

    def harness(prompt):
        sections, placement = prompt
        placement = {k: v for k, v in placement.items() if k in sections}
        shaped = replace(episode.harness.prompt, sections=tuple(sections))
        return replace(episode.harness, prompt=replace(shaped, options={"placement": placement}))

    conversation = [m for m in episode.messages if user or m["role"] != "user"]
    if system:
        conversation = [{"role": "system", "content": "Be brief."}, *conversation]
    a, b = harness(first), harness(second)
    equal = render_conversation(a, conversation) == render_conversation(b, conversation)
    assert renders_alike(a, b, conversation) == equal


@pytest.mark.parametrize("domain", ["finance", "airline", "coding"])
def test_a_schema_whose_keys_moved_counts_as_changed_tools(domain):
    # tool_property_order changes the order of a schema's keys and nothing else: the tools
    # column the model reads (chat templates write tools as JSON) changes, whether or not the
    # harness's layout renders schemas (markdown does not, xml does).
    only_order = recipe(seed=3, pipeline=[{"tool_property_order": {}}])
    episodes = read_episodes(HARNESSES / domain / "episodes.jsonl")
    moved = 0
    for episode in episodes:
        assert isinstance(episode, Episode)
        original, *variants = augment_episode(only_order, episode)
        before = variant_row(original, "v")
        for variant in variants:
            assert isinstance(variant, Variant)
            row = variant_row(variant, "v")
            if row["tools"] != before["tools"]:
                moved += 1
                assert row["hsa_families"] == ["tool_schema"], row["id"]
            else:
                assert row["hsa_families"] == [], row["id"]
    assert moved


def test_the_version_statistics_and_card_count_changed_rows(tmp_path):
    version = generate(recipe(), FINANCE, tmp_path)
    by_family = version.manifest["statistics"]["rows_by_family"]
    by_transform = version.manifest["statistics"]["rows_by_transform"]
    assert "hooks" not in by_family and by_transform["hook_implementation_swap"] == 60
    loading = sum(
        1
        for line in FINANCE.read_text().splitlines()
        if '"name":"load_skill"' in line.replace(" ", "")
    )
    assert 0 < by_family["skill_content"] <= 3 * loading < 60
    card = card_text(version.path, manifest=version.manifest)
    assert "| family | rows whose messages or tools it changed |" in card
    # the hook swap was drawn for every row and changed none: the card says drawn, not fired
    assert "| transform | rows it was drawn for |" in card
    assert "| `hook_implementation_swap` | 60 |" in card


@given(st.text(min_size=1), st.integers(min_value=0))
def test_a_row_id_parses_back_to_its_source_and_index(source_id, index):
    # Source ids may hold "#" themselves (and end in one): the index follows the last "#".
    assert parse_row_id(row_id(source_id, index)) == (source_id, index)


@pytest.mark.parametrize(
    "text",
    [
        "parallel_3",
        "#2",
        "parallel_3#",
        "parallel_3#x",
        "parallel_3#-1",
        "parallel_3#\u00b2",
        "parallel_3#\uff12",
    ],
)
def test_what_is_no_row_id_parses_to_none(text):
    assert parse_row_id(text) is None


def test_the_lineage_and_mapping_columns_are_the_steps_and_mapping_as_they_write_themselves(
    finance,
):
    # The mapping column is written once per mapping (a memo by its key) and the lineage by
    # lineage_json: they must stay what Mapping.to_dict and Step.to_dict say, params and all.
    renaming = Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": "renaming",
            "seed": 11,
            "variants_per_episode": 3,
            "pipeline": [
                {"skill_id_case": {}},
                {"tool_name_paraphrase": {}},
                {"parameter_name_paraphrase": {}},
                *PIPELINE,
            ],
        }
    )
    rows = 0
    for episode in finance.values():
        for variant in augment_episode(renaming, episode):
            if not isinstance(variant, Variant) or variant.index == 0:
                continue
            row = variant_row(variant, "v")
            assert orjson.loads(row["hsa_lineage"]) == [s.to_dict() for s in variant.lineage]
            assert (
                row["hsa_lineage"] == orjson.dumps([s.to_dict() for s in variant.lineage]).decode()
            )
            assert row["hsa_mapping"] == orjson.dumps(variant.mapping.to_dict()).decode()
            rows += bool(variant.mapping) and any(s.params for s in variant.lineage)
    assert rows > 0  # some rows carry renames and drawn params


steps = st.lists(
    st.builds(
        Step,
        transform=st.sampled_from(["tool_shape", "identity", "one_of"]),
        version=st.just("1"),
        path=st.from_regex(r"[0-9](\.[0-9])?", fullmatch=True),
        fired=st.booleans(),
        params=st.none()
        | st.dictionaries(
            st.text(max_size=5), st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5), max_size=3
        ),
    ),
    max_size=6,
)


@given(steps, steps)
def test_a_lineage_whose_head_is_a_harness_variants_is_written_as_any_other(head, rest):
    # The head's JSON is remembered by its steps' ids (every row of a harness variant has the
    # same Step objects first); a row's lineage text must not change for it, the first time or
    # the next.
    whole = orjson.dumps([s.to_dict() for s in head + rest]).decode()
    for _ in range(2):
        assert lineage_json(head + rest, len(head)) == whole
        assert lineage_json(head + rest) == whole
    alone = orjson.dumps([s.to_dict() for s in head]).decode()
    assert lineage_json(head, len(head)) == lineage_json(head, len(head) + 2) == alone


def test_a_system_message_of_text_parts_joins_the_prompt_as_its_text(finance):
    """OpenAI accepts a system message as a list of text parts; written into the rendered
    prompt as it was, the model read a Python list's repr in every row."""
    episode = finance["fin-balance-001"]
    own = [{"type": "text", "text": "You are WeatherBot."}, {"type": "text", "text": "Be brief."}]
    conversation = ({"role": "system", "content": own}, *episode.messages)
    system = render_conversation(episode.harness, conversation)[0]
    assert system["role"] == "system"
    assert system["content"].endswith("\n\nYou are WeatherBot.\n\nBe brief.")


def test_text_parts_reach_the_rows_as_one_text():
    """Rows kept a message's text parts as a list: Qwen2.5's chat template concatenates content
    as a string and every trainer failed on the row ("can only concatenate str (not list)"),
    and Qwen3's dropped the user's question. The parts are one text, in rows and requests alike;
    the preface of sections placed in the first user turn goes before it."""
    from hsa.model.harness import Harness

    harness = Harness.from_dict(
        {
            "name": "h",
            "prompt": {
                "sections": ["persona", "tools"],
                "text": {"persona": "You sell."},
                "options": {"placement": {"persona": "first_user"}},
            },
        }
    )
    parts = [{"type": "text", "text": "Price of link 3?"}, {"type": "text", "text": "In EUR."}]
    conversation = ({"role": "user", "content": parts}, {"role": "assistant", "content": "9"})
    rendered = render_conversation(harness, conversation)
    user = next(m for m in rendered if m["role"] == "user")
    assert isinstance(user["content"], str)
    assert user["content"].endswith("You sell.\n\nPrice of link 3?\n\nIn EUR.")
    assert conversation[0]["content"] == parts  # the episode's own message is as it was
