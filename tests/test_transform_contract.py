"""The contract every registered transform keeps, present and future (hypothesis).

Determinism for a fixed seed; replay equals forward; params are JSON-only; recipes round-trip;
the task is preserved (verification passes and the variant's own assistant turns still score
correct against the variant's gold); p = 0 changes nothing; input order and batch size change no
output row; a harness-scoped transform reads the harness alone.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hsa.augment.lineage import replay
from hsa.augment.recipe import Recipe
from hsa.augment.registry import registered
from hsa.augment.variant import Variant, VariantReject
from hsa.dataset.pipeline import augment, augment_episode
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.scorer import score_turn
from tests.family_report import HARNESSES, harness_episodes
from tests.strategies import (
    another_conversation,
    rich_episode_dicts,
    skill_loading_conversation,
    wordy_conversation,
)

TRANSFORMS = sorted(registered())
HARNESS_SCOPED = [name for name in TRANSFORMS if registered()[name].scope == "harness"]


def recipe_for(name: str, seed: int = 7, variants: int = 2, **options) -> Recipe:
    return Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": f"contract-{name}",
            "seed": seed,
            "variants_per_episode": variants,
            "keep_original": False,
            "pipeline": [{name: options}],
        }
    )


def refused_for_its_request(
    recipe: Recipe, episode: Episode, variant: Variant | VariantReject
) -> bool:
    """Whether ``variant`` is a refusal of what the user wrote (it asks for what a drawn
    distractor does, say); any other reject fails the test. The refusal is the request's when
    the same variant of the same episode, its user turns alone reworded, is made: same id and
    harness (so the same draws), same calls and gold (so a broken task is still a reject)."""
    if isinstance(variant, Variant):
        return False
    reworded = tuple(
        {**m, "content": "Something else entirely."} if m.get("role") == "user" else m
        for m in episode.messages
    )
    again = augment_episode(recipe, replace(episode, messages=reworded))
    made = next(v for v in again if v.index == variant.index)
    assert isinstance(made, Variant), f"{variant} (and with the user turns reworded: {made})"
    return True


def test_every_transform_is_covered():
    assert {"identity", "tool_order_permutation", "tool_name_mask"} <= set(TRANSFORMS)


@pytest.mark.parametrize("name", TRANSFORMS)
@given(row=rich_episode_dicts(), seed=st.integers(0, 2**63))
def test_deterministic_for_a_fixed_seed(name, row, seed):
    episode = Episode.from_dict(row)
    recipe = recipe_for(name, seed)
    first = [v.to_dict() for v in augment_episode(recipe, episode)]
    again = [v.to_dict() for v in augment_episode(recipe_for(name, seed), Episode.from_dict(row))]
    assert first == again


@pytest.mark.parametrize("name", TRANSFORMS)
@given(row=rich_episode_dicts(), seed=st.integers(0, 2**63))
def test_replay_equals_forward_and_params_are_json(name, row, seed):
    episode = Episode.from_dict(row)
    recipe = recipe_for(name, seed)
    for variant in augment_episode(recipe, episode):
        if refused_for_its_request(recipe, episode, variant):
            continue
        for step in variant.lineage:
            assert json.loads(json.dumps(step.params)) == step.params
        replayed, mapping = replay(episode, variant.lineage)
        assert replayed == variant.episode
        assert mapping == variant.mapping


# A request that asks for what a drawn distractor does (CI found it: distractor_tools refuses it).
ASKS_FOR_A_DISTRACTOR = {
    "id": "a",
    "harness": {
        "name": "a",
        "version": "1",
        "prompt": {
            "layout": "markdown",
            "sections": ["persona", "skills", "tools"],
            "text": {"persona": ""},
        },
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "a",
                    "description": " Use `a` here.",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ],
    },
    "messages": [{"role": "user", "content": "EPISODE"}],
    "gold": {"no_call": True},
    "meta": {},
}


@pytest.mark.parametrize("name", TRANSFORMS)
@given(row=rich_episode_dicts(), seed=st.integers(0, 2**63))
@example(row=ASKS_FOR_A_DISTRACTOR, seed=2)
def test_task_is_preserved(name, row, seed):
    episode = Episode.from_dict(row)
    recipe = recipe_for(name, seed, variants=3)
    for variant in augment_episode(recipe, episode):
        if refused_for_its_request(recipe, episode, variant):
            continue
        out = variant.episode
        assert out.gold.skills == tuple(variant.mapping.skill(s) for s in episode.gold.skills)
        # The trajectory's own assistant messages were correct; they must stay correct.
        for turn in out.gold.turns:
            if turn.at < len(out.messages):
                verdict = score_turn(out.messages[turn.at], turn, out.harness)
                assert verdict.correct, verdict.reason


@pytest.mark.parametrize("name", TRANSFORMS)
@given(row=rich_episode_dicts(), seed=st.integers(0, 2**63))
def test_probability_zero_changes_nothing(name, row, seed):
    episode = Episode.from_dict(row)
    for variant in augment_episode(recipe_for(name, seed, p=0.0), episode):
        assert variant.episode == episode and not variant.mapping
        assert [s.fired for s in variant.lineage] == [False]


def test_the_scopes_are_declared():
    # Only the transforms that need the conversation are episode-scoped; a family that moves to
    # "episode" without reason loses the shared harness variants.
    scopes = {name: registered()[name].scope for name in TRANSFORMS}
    assert {n for n, s in scopes.items() if s == "episode"} == {"hook_retry_policy"}


@pytest.mark.parametrize("name", HARNESS_SCOPED)
@given(row=rich_episode_dicts(), seed=st.integers(0, 2**63))
def test_a_harness_scoped_transform_reads_the_harness_alone(name, row, seed):
    transform = registered()[name]()
    episode = Episode.from_dict(row)
    params = transform.sample_params(episode, random.Random(seed))
    harness = transform.apply(episode, params).harness
    for other in (another_conversation(episode), wordy_conversation(episode)):
        assert transform.sample_params(other, random.Random(seed)) == params
        assert transform.mapping(other, params) == transform.mapping(episode, params)
        try:
            out = transform.apply(other, params)
        except HsaError:
            continue  # it may refuse a conversation; the harness it makes is still the same
        assert out.harness == harness


@pytest.mark.parametrize("name", HARNESS_SCOPED)
@settings(max_examples=20, deadline=None)  # one per harness-scoped transform: 22 tests
@given(row=rich_episode_dicts(), seed=st.integers(0, 2**63))
def test_the_conversation_shortcut_equals_apply(name, row, seed):
    # In a pool, apply makes a harness variant's harness on its first episode; every other
    # episode of the variant goes through apply_to_conversation with that harness instead. The
    # episode itself (calls, mentions, a hook retry) and two others (nothing to call; every
    # skill loaded, its body in the result) are checked.
    transform = registered()[name]()
    episode = Episode.from_dict(row)
    params = transform.sample_params(episode, random.Random(seed))
    try:
        harness = transform.apply(episode, params).harness
        mapping = transform.mapping(episode, params)
    except HsaError:
        return  # no harness variant is made, so no shortcut is taken
    for conversation in (
        episode,
        another_conversation(episode),
        skill_loading_conversation(episode),
    ):
        try:
            expected = transform.apply(conversation, params)
        except HsaError as exc:  # a check that reads the conversation: the shortcut makes it too
            with pytest.raises(HsaError, match=re.escape(exc.reason)):
                transform.apply_to_conversation(conversation, params, harness, mapping)
            continue
        shortcut = transform.apply_to_conversation(conversation, params, harness, mapping)
        if transform.conversation == "own" and shortcut is None:
            return  # no shortcut: the pipeline applies it whole
        assert shortcut is not None, f"{name} declares conversation={transform.conversation!r}"
        assert shortcut.messages == expected.messages
        assert shortcut.gold == expected.gold
        assert shortcut.harness == expected.harness


@pytest.mark.parametrize("harness_name", sorted(HARNESSES))
def test_the_conversation_shortcut_equals_apply_on_domain_harnesses(harness_name):
    # Real skills (bodies the rule rewrite changes, loaded verbatim), hooks and tools of four
    # domains: each episode of the harness through the shortcut of every harness-scoped
    # transform, with the harness its first episode made, for a few draws.
    episodes = harness_episodes(HARNESSES[harness_name])
    episodes.append(skill_loading_conversation(episodes[0]))
    shortcuts = 0
    # Without an endpoint the LLM paraphrase records rule rewrites: its shortcut is the same.
    for name in HARNESS_SCOPED:
        transform = (
            registered()[name](split="heldout")
            if "split" in registered()[name].options()
            else registered()[name]()
        )
        for seed in range(3):
            params = transform.sample_params(episodes[0], random.Random(seed))
            harness = transform.apply(episodes[0], params).harness
            mapping = transform.mapping(episodes[0], params)
            for episode in episodes:
                shortcut = transform.apply_to_conversation(episode, params, harness, mapping)
                if shortcut is None:
                    continue
                expected = transform.apply(episode, params)
                assert (shortcut.messages, shortcut.gold) == (expected.messages, expected.gold), (
                    f"{name}, seed {seed}, episode {episode.id}"
                )
                assert shortcut.harness == expected.harness
                shortcuts += 1
    assert shortcuts > 0


def test_the_conversation_kinds_are_declared():
    # A transform that moves to "own" without a shortcut is applied whole for every episode of
    # a harness variant: correct, but the work a pool saves is lost.
    kinds = {name: registered()[name].conversation for name in HARNESS_SCOPED}
    assert {n for n, k in kinds.items() if k == "kept"} >= {
        "tool_order_permutation",
        "tool_description_paraphrase",
        "prompt_layout",
    }
    assert {n for n, k in kinds.items() if k == "renamed"} >= {"tool_name_mask", "skill_id_mask"}


@pytest.mark.parametrize("name", TRANSFORMS)
def test_recipe_round_trips(name):
    recipe = recipe_for(name)
    assert Recipe.from_dict(recipe.to_dict()) == recipe
    assert Recipe.from_dict(json.loads(json.dumps(recipe.to_dict()))).to_dict() == recipe.to_dict()
    # Defaults are written out: '- name: {}' and the explicit defaults are the same recipe.
    explicit = recipe_for(name, **registered()[name].options())
    assert explicit.to_dict() == recipe.to_dict()


@given(
    rows=st.lists(rich_episode_dicts(), min_size=1, max_size=6, unique_by=lambda r: r["id"]),
    shuffle_seed=st.integers(0, 1000),
    batch=st.integers(1, 4),
)
def test_input_order_and_batch_size_change_no_output_row(rows, shuffle_seed, batch):
    pipeline = [{name: {}} for name in TRANSFORMS]
    recipe = Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": "all",
            "seed": 3,
            "variants_per_episode": 2,
            "keep_original": True,
            "pipeline": pipeline,
        }
    )

    def run(order, batch_size):
        return {
            (v.source_id, v.index): json.dumps(v.to_dict(), sort_keys=True)
            for v in augment(recipe, [Episode.from_dict(r) for r in order], batch_size=batch_size)
        }

    shuffled = list(rows)
    random.Random(shuffle_seed).shuffle(shuffled)
    assert run(rows, 256) == run(shuffled, batch)
