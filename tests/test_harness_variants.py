"""A recipe's pool of harness variants (``harness_variants: N``, hypothesis): the variants of
episodes under one harness that take the same slot share every harness-scoped draw, so they get
the same harness; episode-scoped draws stay the variant's own; output stays independent of input
order and batch size."""

from __future__ import annotations

import json
import random

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsa.augment.lineage import replay
from hsa.augment.recipe import Recipe, RecipeError, load_recipe
from hsa.augment.registry import registered
from hsa.augment.variant import Variant
from hsa.dataset.bench import write_inputs
from hsa.dataset.generate import generate
from hsa.dataset.harness_variants import LISTING_FILE, listed_lineages
from hsa.dataset.pipeline import augment, augment_episode, harness_variant
from hsa.dataset.rows import variant_row
from hsa.eval.items import ORIGINAL, changing_transforms, plan_from_datasets
from hsa.eval.run import judge_item
from hsa.model.episode import Episode
from tests.strategies import another_conversation, rich_episode_dicts

# Every harness-scoped transform, some of them under a composition, so that compositions'
# draws are shared too.
HARNESS_SCOPED = [n for n, cls in registered().items() if cls.scope == "harness"]
PIPELINE = [
    {"one_of": {"pipeline": [{"tool_name_mask": {}}, {"tool_name_paraphrase": {}}]}},
    *({name: {}} for name in HARNESS_SCOPED if not name.startswith("tool_name_")),
]


def pooled(pool: int | None, pipeline=PIPELINE, variants: int = 6, seed: int = 11) -> Recipe:
    data = {
        "recipe_version": 1,
        "name": "pooled",
        "seed": seed,
        "variants_per_episode": variants,
        "keep_original": False,
        "pipeline": pipeline,
    }
    if pool is not None:
        data["harness_variants"] = pool
    return Recipe.from_dict(data)


def variants_of(recipe: Recipe, *episodes: Episode) -> list[Variant]:
    out = [v for e in episodes for v in augment_episode(recipe, e)]
    assert all(isinstance(v, Variant) for v in out), [str(v) for v in out]
    return out


@settings(max_examples=25, deadline=None)
@given(row=rich_episode_dicts(), seed=st.integers(0, 2**32))
def test_a_pool_of_one_gives_every_episode_under_a_harness_the_same_harness(row, seed):
    episode = Episode.from_dict(row)
    out = variants_of(pooled(1, seed=seed), episode, another_conversation(episode))
    assert len({v.harness_variant for v in out}) == 1
    assert all(v.episode.harness == out[0].episode.harness for v in out)
    assert out[0].harness_variant.startswith(episode.harness.fingerprint + ":")


@settings(max_examples=25, deadline=None)
@given(row=rich_episode_dicts(), seed=st.integers(0, 2**32), pool=st.integers(1, 4))
def test_variants_in_one_slot_share_their_harness_and_there_are_at_most_n(row, seed, pool):
    episode = Episode.from_dict(row)
    out = variants_of(pooled(pool, variants=8, seed=seed), episode, another_conversation(episode))
    by_slot: dict[str, list[Variant]] = {}
    for v in out:
        by_slot.setdefault(v.harness_variant, []).append(v)
    assert len(by_slot) <= pool
    for shared in by_slot.values():
        assert all(v.episode.harness == shared[0].episode.harness for v in shared)
        assert all(v.mapping == shared[0].mapping for v in shared)


@settings(max_examples=25, deadline=None)
@given(
    row=rich_episode_dicts(),
    seed=st.integers(0, 2**32),
    variants=st.integers(1, 6),
    extra=st.integers(0, 3),
)
def test_an_episodes_variants_never_share_a_slot_while_the_pool_is_large_enough(
    row, seed, variants, extra
):
    # An episode under a harness of its own (BFCL) would otherwise get duplicate rows.
    episode = Episode.from_dict(row)
    slots = [
        harness_variant(seed, variants + extra, episode, index) for index in range(1, variants + 1)
    ]
    assert len(set(slots)) == variants
    assert harness_variant(seed, variants + extra, episode, 0) is None
    # A pool smaller than the variants shares slots, and uses no more than it has.
    assert len({harness_variant(seed, 1, episode, i) for i in range(1, variants + 1)}) == 1


@settings(max_examples=25, deadline=None)
@given(row=rich_episode_dicts(), seed=st.integers(0, 2**32))
def test_episode_scoped_draws_stay_the_variants_own(row, seed):
    # hook_retry_policy reads the conversation: a pool must not change what it draws.
    pipeline = [{"tool_name_mask": {}}, {"hook_retry_policy": {"keep_share": 0.5}}]
    episode = Episode.from_dict(row)

    def retry_steps(recipe):
        return [
            [s.to_dict() for s in v.lineage if s.transform == "hook_retry_policy"]
            for v in variants_of(recipe, episode)
        ]

    assert retry_steps(pooled(1, pipeline, seed=seed)) == retry_steps(
        pooled(None, pipeline, seed=seed)
    )


@settings(max_examples=15, deadline=None)
@given(
    rows=st.lists(rich_episode_dicts(), min_size=1, max_size=4, unique_by=lambda r: r["id"]),
    shuffle_seed=st.integers(0, 1000),
    batch=st.integers(1, 3),
)
def test_a_pool_keeps_output_independent_of_order_and_batch_size(rows, shuffle_seed, batch):
    recipe = pooled(2, variants=3)
    # Two episodes of each harness, so that slots are shared across episodes.
    episodes = [Episode.from_dict(r) for r in rows]
    episodes += [another_conversation(e) for e in episodes]

    def run(order, batch_size):
        return {
            (v.source_id, v.index): json.dumps(v.to_dict(), sort_keys=True)
            for v in augment(recipe, order, batch_size=batch_size)
        }

    shuffled = list(episodes)
    random.Random(shuffle_seed).shuffle(shuffled)
    assert run(episodes, 256) == run(shuffled, batch)


def test_without_a_pool_the_recipe_and_its_version_are_unchanged():
    plain = pooled(None)
    assert "harness_variants" not in plain.to_dict()
    assert pooled(4).to_dict()["harness_variants"] == 4
    assert pooled(4).version_dict() != plain.version_dict()
    assert Recipe.from_dict(pooled(4).to_dict()) == pooled(4)


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "8", 1_000_001])
def test_a_bad_pool_size_is_refused_naming_the_key(value):
    with pytest.raises(RecipeError) as caught:
        Recipe.from_dict({**pooled(None).to_dict(), "harness_variants": value})
    assert caught.value.field == "harness_variants"
    assert "integer from 1 to 1,000,000" in str(caught.value)


@settings(max_examples=15, deadline=None)
@given(row=rich_episode_dicts(), seed=st.integers(0, 2**32))
def test_the_memos_of_a_harness_variant_change_no_output(row, seed, monkeypatch_memo):
    # Two episodes under one harness, so the second's draws, harnesses, renamed harnesses and
    # rendered prompts come from the memos; the rows compared are the rendered ones.
    episode = Episode.from_dict(row)
    recipe = pooled(2, variants=4, seed=seed)

    def run():
        return [
            (v.to_dict(), variant_row(v, "v"))
            for v in variants_of(recipe, episode, another_conversation(episode))
        ]

    monkeypatch_memo(0)
    uncached = run()
    monkeypatch_memo(1024)
    assert run() == uncached
    assert run() == uncached  # and again, from a warm memo


@settings(max_examples=15, deadline=None)
@given(row=rich_episode_dicts(), seed=st.integers(0, 2**32))
def test_replaying_a_harness_variants_rows_makes_its_harness_once_and_changes_nothing(
    row, seed, monkeypatch_memo
):
    # hsa verify rebuilds every row from its lineage: a harness-scoped step's harness part is
    # made once per (params, input harness), whichever row asks first, and the rows of one
    # harness variant replay their conversations' part alone. Two slots give steps of one
    # transform with other params on the same input harness, which must not take each other's.
    episode = Episode.from_dict(row)
    other = another_conversation(episode)
    made = variants_of(pooled(2, variants=4, seed=seed), episode, other)
    source = {episode.id: episode, other.id: other}

    def replayed():
        return [replay(source[v.source_id], v.lineage) for v in made]

    monkeypatch_memo(0)
    uncached = replayed()
    monkeypatch_memo(1024)
    for cached in (replayed(), replayed()):  # a cold memo, then a warm one
        for v, (again, mapping), (alone, alone_mapping) in zip(made, cached, uncached, strict=True):
            assert again.to_dict() == alone.to_dict() == v.episode.to_dict()
            assert mapping == alone_mapping == v.mapping
    cached = replayed()
    by_slot: dict[str, set[int]] = {}
    for v, (again, _) in zip(made, cached, strict=True):
        by_slot.setdefault(v.harness_variant, set()).add(id(again.harness))
    assert len(by_slot) == 2 and all(len(harnesses) == 1 for harnesses in by_slot.values())


@pytest.fixture
def monkeypatch_memo(monkeypatch):
    from hsa import render, verify
    from hsa.augment import compose, rename, stage
    from hsa.dataset import rows
    from hsa.model import episode, memo

    memos = (
        compose.PARAMS_MEMO,
        compose.STEP_MEMO,
        stage.STAGE_MEMO,
        render._TOOLS_JSON,
        episode._ARGUMENT_VALIDATORS,
        episode._RECORDED_VERDICTS,
        rows._HARNESS_CHANGES,
        rows._MESSAGE_JSON,
        rename._RENAMED,
        render._PROMPTS,
        verify._STALE_IN_HARNESS,
        verify._MEANING_TAKEN,
    )

    def set_size(size: int) -> None:
        for each in memos:
            monkeypatch.setattr(each, "size", size)
            each.clear()
        # Long texts: none held, or every text, however short (the test's texts are short).
        monkeypatch.setattr(memo.LONG_TEXTS, "characters", 4_000_000 if size else 0)
        monkeypatch.setattr(memo.LONG_TEXTS, "SHORTEST", 1)
        memo.LONG_TEXTS.clear()

    return set_size


def test_a_step_that_fails_on_one_conversation_rejects_it_as_a_run_without_memos_does(
    private_registry, monkeypatch_memo
):
    # A harness-scoped transform may still refuse one conversation (its conversation's part
    # raises). When the harness stage was made by another episode and is replayed, the reject
    # must be the same as when the stage runs from scratch: same stage, reason and lineage.
    from dataclasses import dataclass

    from hsa.augment.registry import register
    from hsa.augment.transform import Transform

    @register
    @dataclass(frozen=True)
    class RefusesSomeConversations(Transform):
        """Changes nothing; refuses a conversation whose first message says "refuse"."""

        name = "stage_test_refuses"
        version = "1"
        family = "test"
        scope = "harness"

        def apply(self, episode, params):
            if "refuse" in str(episode.messages[0].get("content")):
                raise ValueError("this conversation is refused")
            return episode

    pipeline = [
        {"tool_order_permutation": {}},
        {"one_of": {"pipeline": [{"tool_name_mask": {}}, {"tool_name_paraphrase": {}}]}},
        {"stage_test_refuses": {}},
        {"tool_property_order": {}},
    ]
    recipe = pooled(1, pipeline=pipeline, variants=2)
    tools = [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"Gets the {name.split('_')[1]} of an order.",
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": {"type": "integer"}},
                    "required": ["order_id"],
                },
            },
        }
        for name in ("get_status", "get_price", "get_owner")
    ]

    def episode(i: int, text: str) -> Episode:
        return Episode.from_dict(
            {
                "id": f"e{i}",
                "harness": {"name": "shop", "tools": tools},
                "messages": [{"role": "user", "content": text}],
                "gold": {"no_call": True},
            }
        )

    fine, refused = episode(1, "Where is my order?"), episode(2, "I refuse to wait.")

    def outcomes(*episodes: Episode) -> list[dict]:
        return [item.to_dict() for e in episodes for item in augment_episode(recipe, e)]

    monkeypatch_memo(0)
    alone = outcomes(refused)
    monkeypatch_memo(1024)
    replayed = outcomes(fine, refused)[
        -2:
    ]  # the stage is made by ``fine``, replayed by ``refused``
    assert replayed == alone
    rejects = [r for r in replayed if "stage" in r]
    assert len(rejects) == 2 and all(r["stage"] == "transform:stage_test_refuses" for r in rejects)
    # The lineage so far: the two nodes before the refusing one, and nothing after it.
    assert all(
        [s["transform"] for s in r["lineage"]][-1] in ("tool_name_mask", "tool_name_paraphrase")
        for r in rejects
    )


def test_eval_items_and_results_carry_their_rows_harness_variant(tmp_path):
    """The evaluation reads each variant row's harness variant, so the report can say how a model
    does under each environment of the pool; a small pool guarantees shared ones (24 draws, 4
    slots, at most 2 draws per episode)."""
    jsonl, _ = write_inputs(tmp_path / "in", 12, "shared-harness")
    data = {**load_recipe("hat-heldout").to_dict(), "harness_variants": 4}
    recipe = Recipe.from_dict({**data, "variants_per_episode": 2}, source="test")
    version = generate(recipe, jsonl, tmp_path / "out")
    plan = plan_from_datasets([version.path], episodes=None, limit=None, seed=0, trust_hooks=False)
    rows = {
        (r["hsa_source_id"], r["hsa_variant"]): r["hsa_harness_variant"]
        for shard in version.path.glob("data/*.parquet")
        for r in pq.read_table(shard).to_pylist()
    }
    items = plan.itemset.items
    assert all(i.harness_variant is None for i in items if i.set == ORIGINAL)
    variant_items = [i for i in items if i.set != ORIGINAL]
    assert variant_items
    for item in variant_items:
        assert item.harness_variant is not None
        assert item.harness_variant == rows[(item.source_id, item.variant)]
    listed = {e["harness_variant"] for e in pq.read_table(version.path / LISTING_FILE).to_pylist()}
    assert {i.harness_variant for i in variant_items} <= listed
    episodes_by_variant: dict[str, set[str]] = {}
    for item in variant_items:
        episodes_by_variant.setdefault(item.harness_variant, set()).add(item.source_id)
    assert max(len(e) for e in episodes_by_variant.values()) >= 3
    # What each harness variant is: its listed lineage, which its rows' lineages start with.
    (variant_set,) = plan.sets
    lineages = listed_lineages(variant_set.version_dir, set(episodes_by_variant))
    assert set(lineages) == set(episodes_by_variant)
    row_lineages = {
        (r["hsa_source_id"], r["hsa_variant"]): json.loads(r["hsa_lineage"])
        for shard in version.path.glob("data/*.parquet")
        for r in pq.read_table(shard).to_pylist()
    }
    known = registered()
    for item in variant_items:
        (steps,) = lineages[item.harness_variant]
        assert row_lineages[(item.source_id, item.variant)][: len(steps)] == steps
        assert all(known[t].scope == "harness" for t in changing_transforms(steps))
    assert any(changing_transforms(steps) for (steps,) in lineages.values())
    result = judge_item(variant_items[0], {"message": None}, {})
    assert result.harness_variant == variant_items[0].harness_variant
    assert result.to_dict()["harness_variant"] == variant_items[0].harness_variant


def test_the_memo_of_long_texts_holds_no_short_text_and_no_more_characters_than_its_bound():
    from hsa.model.memo import LongTexts

    memo: LongTexts[str] = LongTexts(16_000)
    made: list[str] = []

    def rewrite(text: str) -> str:
        made.append(text)
        return text.upper()

    short, long = "get_price", "a" * 300
    for _ in range(3):
        assert memo.get("rewriter", short, lambda: rewrite(short)) == short.upper()
        assert memo.get("rewriter", long, lambda: rewrite(long)) == long.upper()
    assert made == [short, long, short, short]  # the long text read once, the short each time
    assert memo.get("another rewriter", long, lambda: rewrite(long)) == long.upper()
    assert made[-1] == long  # entries are the rewriter's own
    too_long = "b" * 1001  # more than a sixteenth of the bound is never held
    memo.get("rewriter", too_long, lambda: rewrite(too_long))
    memo.get("rewriter", too_long, lambda: rewrite(too_long))
    assert made[-2:] == [too_long, too_long]
    texts = [f"{i:03d}" + "c" * 997 for i in range(40)]  # 40,000 characters through 16,000
    for text in texts:
        memo.get("rewriter", text, lambda text=text: text)
    assert memo._held <= 16_000 and len(memo._values) == 16
    made.clear()
    memo.get("rewriter", texts[-1], lambda: rewrite(texts[-1]))  # the latest are held
    memo.get("rewriter", texts[0], lambda: rewrite(texts[0]))  # the first went first
    assert made == [texts[0]]


def test_a_harness_variant_that_leaves_the_harness_keeps_every_rows_folder_reference(tmp_path):
    # A stage of steps that keep the conversation and change nothing (identity) leaves each
    # episode under the folder it named, in the first episode of a slot (which makes the stage)
    # and in every other (which replays it), as a run without a pool does.
    from hsa.model.episode import read_episodes

    jsonl, _ = write_inputs(tmp_path, 6, "shared-harness")
    episodes = [e for e in read_episodes(jsonl) if isinstance(e, Episode)]
    assert len(episodes) == 6 and all(e.harness_ref for e in episodes)
    for pool in (None, 1):
        made = variants_of(pooled(pool, pipeline=[{"identity": {}}], variants=2), *episodes)
        assert [v.episode.harness_ref for v in made] == [
            e.harness_ref for e in episodes for _ in range(2)
        ]
