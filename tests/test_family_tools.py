"""The tool-schema family: each transform does what its promise says, on the embedded example,
on BFCL and on generated harnesses; its option tables are split into disjoint train and held-out
parts."""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections import Counter
from dataclasses import replace

import jsonschema
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hsa.augment.lineage import replay
from hsa.augment.mapping import EMPTY
from hsa.augment.recipe import Recipe
from hsa.augment.registry import registered
from hsa.augment.rename import renamed_config
from hsa.augment.variant import Variant
from hsa.dataset.pipeline import augment, augment_episode
from hsa.errors import HsaError
from hsa.example import load_example_episodes
from hsa.model.episode import Episode
from hsa.model.gold import Gold
from hsa.model.harness import Harness
from hsa.model.hook_feedback import format_feedback, parse_feedback
from hsa.model.schema import pointer, schema_nodes, unresolved_reference
from hsa.model.tool import Tool
from hsa.render import render_messages
from hsa.text.names import abbreviation_groups, convention_of, conventions_of, name_words
from hsa.text.paraphrase import invariants
from hsa.transforms import skill_ids as ids
from hsa.transforms._language import english_harness, english_names, table_languages
from hsa.transforms._names import (
    CONVENTION_SPLITS,
    OPAQUE_ALPHABETS,
    Renamer,
    lexicon,
    replacements,
    slots,
)
from hsa.transforms.tool_schema import options as ts
from hsa.transforms.tool_schema.common import fixed_tool_names
from hsa.transforms.tool_schema.descriptions import ToolDescriptionParaphrase
from hsa.transforms.tool_schema.distractors import DistractorTools
from hsa.transforms.tool_schema.spelling import ToolSchemaSpelling
from hsa.verify import verify_variant
from tests.conftest import BFCL_DIR, BFCL_FILES, assistant, call, variant_of
from tests.conftest import one_transform_recipe as recipe
from tests.strategies import harnesses, rich_episode_dicts

FAMILY = sorted(n for n, cls in registered().items() if cls.family == "tool_schema")
SPLIT_TRANSFORMS = [n for n in FAMILY if "split" in registered()[n].options()]


@pytest.fixture(scope="module")
def example() -> list[Episode]:
    return load_example_episodes()


def strings(*names: str) -> dict:
    """Properties of type string, by name."""
    return {name: {"type": "string"} for name in names}


def tool_of(name: str, description: str, properties: dict) -> dict:
    """A tool as a harness file holds it."""
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties},
    }


def greeting(harness: Harness) -> Episode:
    """An episode of one user greeting under ``harness`` (no call expected): what a
    harness-scoped draw reads is the harness alone."""
    return Episode(
        "e",
        harness,
        ({"role": "user", "content": "hi"},),
        Gold.from_dict({"no_call": True}, n_messages=1),
    )


def by_scenario(episodes: list[Episode], scenario: str) -> Episode:
    return next(e for e in episodes if e.meta.get("scenario") == scenario)


def tools_json(episode: Episode) -> str:
    return json.dumps([t.to_openai() for t in episode.harness.tools], ensure_ascii=False)


# ---- the option tables ---------------------------------------------------------------------


def _members(groups, split):
    return {m.lower() for g in groups for m in g.part(split)}


@pytest.mark.parametrize("table", ["DESCRIPTION_PHRASES"])
def test_word_tables_split_into_disjoint_nontrivial_parts(table):
    groups = getattr(ts, table)
    train, heldout = _members(groups, "train"), _members(groups, "heldout")
    assert not train & heldout
    assert len(train) >= 20 and len(heldout) >= 20
    assert all(g.heldout for g in groups), "every group offers held-out wordings"


@pytest.mark.parametrize(
    "table",
    [
        "TOOL_NAME_SUFFIXES",
        "PARAMETER_NAME_SUFFIXES",
        "TOOL_MASK_PREFIXES",
        "PARAMETER_MASK_PREFIXES",
    ],
)
def test_choice_tables_split_into_disjoint_nontrivial_parts(table):
    parts = getattr(ts, table)
    assert set(parts) == {"train", "heldout"}
    assert not set(parts["train"]) & set(parts["heldout"])
    assert len(parts["train"]) >= 2 and len(parts["heldout"]) >= 2


def test_distractor_pool_splits_into_disjoint_valid_tools():
    names = {
        split: [d["tool"]["function"]["name"] for d in ts.DISTRACTOR_TOOLS[split]]
        for split in ts.SPLITS
    }
    assert not set(names["train"]) & set(names["heldout"])
    for split in ts.SPLITS:
        assert len(set(names[split])) == len(names[split]) >= 10
        for entry in ts.DISTRACTOR_TOOLS[split]:
            Tool.from_dict(entry["tool"])  # a valid OpenAI tool with a valid JSON Schema
            assert entry["keywords"]


def test_each_phrase_has_one_meaning():
    phrases = Counter(m.lower() for g in ts.DESCRIPTION_PHRASES for m in g.train + g.heldout)
    assert [p for p, n in phrases.items() if n > 1] == []


@pytest.mark.parametrize("split", ts.SPLITS)
def test_description_phrases_keep_nouns_and_words_of_other_domains(split):
    # A verb after a determiner is the noun it is spelled like (BFCL: "The check ...", "the
    # change ..."); "including tax" is no "such as tax"; a document viewer has no audience.
    kept = {
        "The check runs nightly; a check costs one credit.": ["The check", "a check"],
        "When the change applies, the customer changes plan.": ["the change", "changes plan"],
        "Price including tax, for a code such as D02 X285.": ["including tax", "such as D02"],
        "Opens the PDF viewer for viewers of the document.": ["PDF viewer", "viewers of"],
        "Each find is logged and its returns are counted.": ["Each find", "its returns"],
        "Place an order at the given location.": ["Place an order"],
        "ID del vuelo devuelto por la búsqueda.": ["ID del vuelo"],
        # one word between: an insurance payout "to a bank account or a mailed check"
        "Pay to a bank account or a mailed check.": ["a mailed check"],
    }
    swapped = set()
    for seed in range(30):
        for text, parts in kept.items():
            out = ts.DESCRIPTIONS.paraphrase(text, split, random.Random(seed))
            assert all(part in out for part in parts), (text, out)
        out = ts.DESCRIPTIONS.paraphrase("Get the stock and return it.", split, random.Random(seed))
        swapped.add(out.split()[0])
        # a phrasal verb cannot stand before a pronoun ("Look up it", "Leave out it")
        out = ts.DESCRIPTIONS.paraphrase(
            "Get it. Returns them. Omit it.", split, random.Random(seed)
        )
        assert not re.search(r"\b(up|back|out) (it|them)\b", out), out
    assert swapped - {"Get"}, "a verb that is one is still reworded"


def test_phrases_hold_no_invariant():
    # hsa.text.paraphrase's one rule: no number, quote, identifier or negation in a phrase, so
    # replacing phrases can never add or drop one (a table is never a protected span).
    for group in ts.DESCRIPTION_PHRASES:
        for member in group.train + group.heldout:
            assert not invariants(member), member
            assert not re.search(r"\d", member), member


# ---- order -----------------------------------------------------------------------------------


def test_tool_and_property_order_change_order_only(example):
    episode = by_scenario(example, "complaint")
    tools = variant_of("tool_order_permutation", episode).episode.harness.tools
    assert [t.name for t in tools] != list(episode.harness.tool_names)
    assert sorted(tools, key=lambda t: t.name) == sorted(
        episode.harness.tools, key=lambda t: t.name
    )
    shuffled = variant_of("tool_property_order", episode).episode.harness
    ticket = shuffled.tool("create_after_sales_ticket")
    original = episode.harness.tool("create_after_sales_ticket")
    assert list(ticket.properties) != list(original.properties)
    assert ticket.properties == original.properties  # dicts: same keys and schemas
    assert ticket.required == original.required
    assert list(ticket.properties["contact"]["properties"]) == ["channel", "callback_time"]


@given(harness=harnesses(min_tools=1), seed=st.integers(0, 2**32))
def test_property_order_keeps_every_schema_up_to_order(harness, seed):
    episode = Episode(
        id="e",
        harness=harness,
        messages=({"role": "user", "content": "hi"},),
        gold=Episode.from_dict(
            {
                "id": "x",
                "harness": {"name": "h"},
                "messages": [{"role": "user", "content": "hi"}],
                "gold": {"no_call": True},
            }
        ).gold,
    )
    transform = registered()["tool_property_order"]()
    params = transform.sample_params(episode, random.Random(seed))
    out = transform.apply(episode, params)
    for before, after in zip(harness.tools, out.harness.tools):
        assert before == replace(after, parameters=before.parameters)
        assert json.dumps(before.parameters, sort_keys=True) == json.dumps(
            after.parameters, sort_keys=True
        )
        shuffled = {pointer(p): n for p, n in schema_nodes(after.parameters)}
        for parts, old in schema_nodes(before.parameters):
            if isinstance(old.get("properties"), dict) and len(old["properties"]) >= 2:
                assert list(old["properties"]) != list(shuffled[pointer(parts)]["properties"])


# ---- tool names ------------------------------------------------------------------------------


def test_tool_name_paraphrase_moves_every_mention(example):
    episode = by_scenario(example, "complaint")
    variant = variant_of("tool_name_paraphrase", episode, split="heldout")
    renames = variant.mapping.tools
    assert set(renames) == set(episode.harness.tool_names)
    out = variant.episode
    policy, ticket = renames["get_after_sales_policy"], renames["create_after_sales_ticket"]
    assert policy in out.harness.tool(ticket).description  # another tool's description
    strategy = out.harness.skill("complaint-handling-strategy")
    assert f"`{policy}`" in strategy.content and ticket in strategy.allowed_tools
    called = [c["function"]["name"] for m in out.messages for c in m.get("tool_calls") or ()]
    assert policy in called and ticket in called
    loaded = [
        m["content"]
        for m in out.messages
        if m.get("role") == "tool" and m["content"].startswith("# Complaint handling")
    ]
    assert loaded and f"`{policy}(" in loaded[0]  # the skill text the trajectory loaded
    assert {c.name for t in out.gold.turns for c in t.calls} == {policy, ticket}
    verify_variant(episode, out, variant.mapping)


def test_semantic_names_use_the_tables_and_the_split():
    for split in ts.SPLITS:
        other = "heldout" if split == "train" else "train"
        foreign = {w for g in lexicon().groups for m in g.part(other) for w in m.split("_")} | {
            w for g in abbreviation_groups() for m in g[other] for w in m.split("_")
        }
        for seed in range(20):
            renamer = Renamer(
                ["get_product_info"],
                set(),
                split,
                random.Random(seed),
                convention=None,
                suffixes=ts.TOOL_NAME_SUFFIXES[split],
            )
            new = renamer.paraphrase("get_product_info", set())
            words = {w.lower() for w in name_words(new)}
            assert new != "get_product_info" and words != {"get", "product", "info"}
            assert not words & (foreign - {"get", "product", "info"}), new
            assert convention_of([new]) in CONVENTION_SPLITS[split]


def test_a_word_with_several_senses_follows_its_tool():
    assert ("share",) in replacements(("stock",), "train", {"market", "ticker"}, leading=False)
    assert ("inventory",) in replacements(("stock",), "train", {"size"}, leading=False)
    # a plural word takes its singular's group, and plural replacements
    assert ("inventories",) in replacements(("stocks",), "train", {"size"}, leading=False)
    # verbs are read where names put their action only: `test_set` is no "configure"
    assert replacements(("set",), "train", set(), leading=False) == []
    # `check_in` names one thing and is never split up
    found = slots([["check", "in", "date"]], "train", set())
    assert all(slot.start >= 2 for slot in found)


def test_a_verb_moved_to_the_other_end_never_leaves_its_compound():
    # check-in became in_check / inCheck (an audit of a hotel desk): a verb moved to the end of
    # its name took the particle of a compound with it
    names = ["check_in", "sign_up_form", "log_in", "guest_check_in"]
    compounds = {("check", "in"), ("sign", "up"), ("log", "in")}
    for split in ts.SPLITS:
        for seed in range(25):
            renamer = Renamer(
                names, set(names), split, random.Random(seed), convention="snake", suffixes=("x",)
            )
            for name in names:
                words = name_words(renamer.paraphrase(name, set()))
                for i, word in enumerate(words):
                    if word in ("in", "up"):
                        assert i > 0 and (words[i - 1], word) in compounds, (name, words)


def test_names_no_table_knows_still_change():
    names = ["zorblat", "frob_quux", "zorblat_frob"]
    for split in ts.SPLITS:
        for convention in CONVENTION_SPLITS[split]:
            renamer = Renamer(
                names,
                set(names),
                split,
                random.Random(0),
                convention=convention,
                suffixes=ts.TOOL_NAME_SUFFIXES[split],
            )
            for name in names:
                new = renamer.paraphrase(name, set())
                assert new != name and convention in conventions_of(new)


@given(
    row=rich_episode_dicts(),
    seed=st.integers(0, 2**32),
    split=st.sampled_from(ts.SPLITS),
    name=st.sampled_from(["tool_name_paraphrase", "tool_name_mask"]),
)
def test_new_tool_names_are_unique_and_unused(row, seed, split, name):
    episode = Episode.from_dict(row)
    transform = registered()[name](split=split)
    renames = transform.sample_params(episode, random.Random(seed))["renames"]
    new = list(renames.values())
    assert len(set(new)) == len(new)
    assert not set(new) & episode.harness.names
    if name == "tool_name_mask":
        assert all(n.startswith(ts.TOOL_MASK_PREFIXES[split]) for n in new)


def _extends(name: str, names) -> str | None:
    """The other name ``name`` begins with, followed by a separator or a capital, if any."""
    return next(
        (
            b
            for b in names
            if b != name and name.startswith(b) and re.match(r"[_\-A-Z]", name[len(b) :])
        ),
        None,
    )


@given(
    row=rich_episode_dicts(),
    seed=st.integers(0, 2**32),
    nested=st.sampled_from([0.3, 0.7]),
    options=st.sampled_from(
        [{}, {"prefix": "", "alphabet": "letters"}, {"prefix_letters": [1, 3]}]
    ),
)
def test_nested_masks_extend_another_new_name_by_one_word(row, seed, nested, options):
    episode = Episode.from_dict(row)
    transform = registered()["tool_name_mask"](nested=nested, letters=(3, 5), **options)
    renames = transform.sample_params(episode, random.Random(seed))["renames"]
    new = list(renames.values())
    assert len(set(new)) == len(new) and not set(new) & episode.harness.names
    for name in new:
        base = _extends(name, new)
        if base is not None:  # one more word, written as the base is
            assert re.fullmatch(r"[_\-]?[A-Za-z_]+", name[len(base) :])


def test_nested_masks_nest_about_their_share_and_not_at_zero(example):
    episode = max(example, key=lambda e: len(e.harness.tools))

    def nesting(nested: float) -> float:
        transform = registered()["tool_name_mask"](nested=nested)
        counts = []
        for seed in range(60):
            new = list(transform.sample_params(episode, random.Random(seed))["renames"].values())
            counts.append(sum(_extends(n, new) is not None for n in new) / len(new))
        return sum(counts) / len(counts)

    assert nesting(0.0) == 0.0
    assert 0.2 <= nesting(0.3) <= 0.4
    variant = variant_of("tool_name_mask", episode, nested=0.5)
    verify_variant(episode, variant.episode, variant.mapping)


def test_mask_prefix_may_be_fixed(example):
    variant = variant_of("tool_name_mask", example[0], prefix="fn_")
    assert all(n.startswith("fn_") for n in variant.mapping.tools.values())


@given(
    row=rich_episode_dicts(),
    seed=st.integers(0, 2**32),
    letters=st.lists(st.integers(2, 7), min_size=1, max_size=4),
    prefix=st.sampled_from(["", "fn_", "Tool"]),
    alphabet=st.sampled_from(sorted(OPAQUE_ALPHABETS)),
)
def test_masks_take_their_lengths_from_letters_and_characters_from_alphabet(
    row, seed, letters, prefix, alphabet
):
    episode = Episode.from_dict(row)
    transform = registered()["tool_name_mask"](prefix=prefix, letters=letters, alphabet=alphabet)
    renames = transform.sample_params(episode, random.Random(seed))["renames"]
    # every tool but those named like a value or a parameter that the harness mentions
    assert set(renames) == set(episode.harness.tool_names) - fixed_tool_names(episode.harness)
    for new in renames.values():
        assert new.startswith(prefix)
        opaque = new[len(prefix) :]
        assert len(opaque) in letters and set(opaque) <= set(OPAQUE_ALPHABETS[alphabet])


def test_masks_of_mixed_lengths_are_drawn_from_every_length(example):
    lengths = {
        len(new) - 3
        for seed in range(40)
        for new in variant_of(
            "tool_name_mask", example[0], seed=seed, prefix="fn_", letters=[2, 5]
        ).mapping.tools.values()
    }
    assert lengths == {2, 5}


def test_masks_of_letters_take_any_shape(example):
    names = [
        new
        for seed in range(20)
        for new in variant_of(
            "tool_name_mask", example[0], seed=seed, prefix="", alphabet="letters", letters=[6]
        ).mapping.tools.values()
    ]
    assert any(n != n.lower() for n in names) and any(n != n.upper() for n in names)
    assert any("_" in n for n in names)


@given(
    row=rich_episode_dicts(),
    seed=st.integers(0, 2**32),
    prefix_letters=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    split=st.sampled_from(["train", "heldout"]),
)
def test_random_mask_prefixes_are_one_new_word_per_variant(row, seed, prefix_letters, split):
    episode = Episode.from_dict(row)
    transform = registered()["tool_name_mask"](prefix_letters=prefix_letters, split=split)
    renames = transform.sample_params(episode, random.Random(seed))["renames"]
    # every tool a rename may take is masked (a plain-word tool the prose writes as a word, a
    # persona "a" beside a tool `a`, keeps its name: fixed_tool_names)
    assert set(renames) == set(episode.harness.tool_names) - fixed_tool_names(episode.harness)
    if not renames:
        return
    firsts = {name_words(new)[0].lower() for new in renames.values()}
    assert len(firsts) == 1  # every tool of the variant shares the drawn word
    (first,) = firsts
    assert len(first) in prefix_letters and first.isalpha()


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_random_mask_prefixes_never_take_the_other_splits_words(example, split):
    episode = example[0]
    transform = registered()["tool_name_mask"](prefix_letters=[2, 3], split=split)
    other = set(ts.TOOL_MASK_PREFIXES["heldout" if split == "train" else "train"])
    firsts = Counter(
        name_words(
            next(iter(transform.sample_params(episode, random.Random(seed))["renames"].values()))
        )[0].lower()
        for seed in range(4000)
    )
    # About 8 of 4000 two- and three-letter draws would be "op", "act" or "cmd" (or "fn").
    assert len(firsts) > 300 and not other & set(firsts)


def test_random_mask_prefixes_vary_between_variants(example):
    firsts = {
        name_words(new)[0]
        for seed in range(30)
        for new in variant_of(
            "tool_name_mask", example[0], seed=seed, prefix_letters=[3, 4]
        ).mapping.tools.values()
    }
    assert len(firsts) > 20


@pytest.mark.parametrize(
    "options",
    [{"letters": []}, {"letters": [0]}, {"letters": [3, -1]}, {"prefix_letters": [0]}],
)
def test_mask_lengths_must_be_positive(options):
    with pytest.raises(HsaError, match="letters"):
        registered()["tool_name_mask"](**options)


# ---- parameter names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        # a call written out in prose is code, with or without backticks
        ('Call get_info(topic="insurance") first.', 'Call get_info(subject="insurance") first.'),
        ("`check(size = 2, topic='a')`", "`check(dimension = 2, subject='a')`"),
        # arguments written as keys in inline code
        (
            'Use `channel: "sms"` or `{"channel": "app"}`.',
            'Use `medium: "sms"` or `{"medium": "app"}`.',
        ),
        (
            "`size`, not `size::cast` or `size == 3`?",
            "`dimension`, not `size::cast` or `dimension == 3`?",
        ),
        # prose is prose: a word before "(" with a space, a call without keywords, plain text
        ("Any topic (or channel) works; list(topic); the size: large.", None),
        # a port, a ternary, a name inside a string value: no keywords
        ("`https://channel:8080/x` or `a ? channel : size`", None),
        ('get_news(query="topic=sports")', None),
        # a swap renames each name once
        ("`f(size=1, topic=2)` and g(topic=3)", "`f(dimension=1, subject=2)` and g(subject=3)"),
        # a fenced block is one code span: its backticks pair with each other, not with the
        # inline code after it (which is still code, while the prose between stays prose)
        (
            "Pick the size: large.\n\n```bash\nmake build\n```\n\n| 1 | `size`, `topic` |",
            "Pick the size: large.\n\n```bash\nmake build\n```\n\n| 1 | `dimension`, `subject` |",
        ),
        (
            "```yaml\nchannel: sms\n```\nthe channel: any; then `topic`",
            "```yaml\nmedium: sms\n```\nthe channel: any; then `subject`",
        ),
        # a longer backtick run closes only at a run of its own length, and one that closes
        # nowhere opens nothing (not even from its own inner backticks)
        ("``a `size` b`` and size: x", "``a `dimension` b`` and size: x"),
        (
            "Put it in a ```diff block, then pass `size`.",
            "Put it in a ```diff block, then pass `dimension`.",
        ),
        # an assignment in prose is code (a hook's feedback, a reply): glued to its value
        (
            "thermostat: size=28 is outside the range; set topic=news, channel=2.",
            "thermostat: dimension=28 is outside the range; set subject=news, medium=2.",
        ),
        # not spaced out, not a comparison, not in a web address's query, not a path's end
        ("size = 3, size==3, https://a.io/?size=3&topic=x, /size=3, a.size=3", None),
        ("paste shop.example/inventory?sku=FD-1&size=50 or ?topic=x", None),
        # a statement that binds a variable is the program's own name, which a call then
        # passes: the keyword moves, the variable stays (renamed at its binding alone, the
        # example would raise NameError)
        (
            '```python\ntopic = "news"\n  size = 2\nrows = get_info(topic=topic, size=size)\n```',
            '```python\ntopic = "news"\n  size = 2\nrows = get_info(subject=topic, dimension=size)\n```',
        ),
        (
            "```js\nconst topic = 'x';\nlet size = 2;\nget_info({topic: topic, size})\n```",
            "```js\nconst topic = 'x';\nlet size = 2;\nget_info({subject: topic, size})\n```",
        ),
    ],
)
def test_plain_word_parameters_are_renamed_where_they_are_code(text, expected):
    from hsa.text.mentions import parameter_mentions

    rewrite = parameter_mentions({"topic": "subject", "channel": "medium", "size": "dimension"})
    assert rewrite(text) == (text if expected is None else expected)
    swap = parameter_mentions({"size": "topic", "topic": "size"})
    assert swap("`f(size=1, topic=2)` and g(topic=3)") == "`f(topic=1, size=2)` and g(size=3)"
    assert swap("size=1 and `topic=2`") == "topic=1 and `size=2`"
    # a one-letter name in prose is the text's own variable (BFCL: "where a=2, b=6")
    letters = parameter_mentions({"a": "alpha", "size": "dimension"})
    assert letters("where a=2, size=3; `a=4`") == "where a=2, dimension=3; `alpha=4`"


@pytest.mark.parametrize("naming", ["variant", "mixed"])
def test_a_harness_that_writes_keyword_calls_is_never_renamed_into_kebab_case(example, naming):
    """The example's skills write calls out (``get_price_after_coupon(link_number=5)``); one
    convention names a variant's tools and parameters, and ``get-price(link-number=5)`` is no
    call in any language. A harness without such calls still meets kebab case."""
    names = ("tool_name_paraphrase", "parameter_name_paraphrase")
    pipeline = [{n: {"split": "train", "naming": naming}} for n in names]
    chained = Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": "names",
            "seed": 3,
            "variants_per_episode": 12,
            "keep_original": False,
            "pipeline": pipeline,
        }
    )
    episode = by_scenario(example, "swapped_args")
    news = set()
    for variant in augment_episode(chained, episode):
        assert isinstance(variant, Variant), str(variant)
        news |= {n for kind in variant.mapping.renamed().values() for n in kind.values()}
        written = "\n".join(s.content for s in variant.episode.harness.skills)
        assert not re.search(r"\b[a-z]+(?:-[a-z]+)+\(|\b[a-z]+(?:-[a-z]+)+=", written), written
    assert news and not any("-" in n for n in news), news
    quiet = episode.with_harness(
        replace(
            episode.harness,
            skills=tuple(
                replace(s, content="# Skill\n\nAsk first.\n") for s in episode.harness.skills
            ),
        )
    )
    kebab = set()
    for variant in augment_episode(chained, quiet):
        assert isinstance(variant, Variant), str(variant)
        kebab |= {n for n in variant.mapping.tools.values() if "-" in n}
    assert kebab


def test_a_tool_named_like_a_value_its_skills_write_as_code_keeps_its_name():
    """`build` is a tool and a `type` the `run` tool takes; the skill's `build` may be either,
    and renamed it teaches a value no schema accepts. `run`, `status` still move."""
    run_tool = {
        "name": "run",
        "description": "Runs a job.",
        "parameters": {
            "type": "object",
            "properties": {"type": {"type": "string", "enum": ["test", "lint", "build"]}},
        },
    }
    plain = {"type": "object", "properties": {"ref": {"type": "string"}}}
    harness = Harness.from_dict(
        {
            "name": "ci",
            "skills": [
                {
                    "id": "test-run",
                    "description": "Runs checks.",
                    "content": "# Run\n\n| `build` | a build job (prefer the `build` tool) |\n\n"
                    "Call `run`, then `status`.\n",
                }
            ],
            "tools": [
                run_tool,
                {"name": "build", "description": "Builds.", "parameters": plain},
                {"name": "status", "description": "A status.", "parameters": plain},
            ],
        }
    )
    episode = greeting(harness)
    for name in ("tool_name_paraphrase", "tool_name_mask"):
        moved = set()
        for seed in range(6):
            variant = variant_of(name, episode, seed=seed)
            assert "build" not in variant.mapping.tools
            assert variant.episode.harness.skill("test-run").content.count("`build`") == 2
            moved |= set(variant.mapping.tools)
        assert {"run", "status"} <= moved, moved
    # an identifier-like name is mentioned wherever it stands
    from hsa.transforms.tool_schema.common import fixed_tool_names

    data = episode.harness.to_dict()
    data["tools"][0]["function"]["parameters"]["properties"]["type"]["enum"].append("run_checks")
    data["tools"].append({"name": "run_checks", "description": "Runs checks.", "parameters": plain})
    data["skills"][0]["content"] += "\nFor a quick look, the type run_checks.\n"
    assert fixed_tool_names(Harness.from_dict(data)) == {"build", "run_checks"}


def test_a_plain_word_tool_the_prose_names_as_a_word_keeps_its_name():
    """A clinic's prompt says "Identify the patient with search before you read the record", and
    a skill lists "(search, check_insurance, search_slots)": prose keeps plain words, so with
    `search` renamed `locate` the rows sent the model to a tool they do not have (165 rows).
    Written as a plain word in prose, such a tool keeps its name; written only as code it is
    still renamed, with its mentions."""
    plain = {"type": "object", "properties": {"q": {"type": "string"}}}

    def harness(persona: str) -> Harness:
        return Harness.from_dict(
            {
                "name": "clinic",
                "prompt": {"text": {"persona": persona}},
                "tools": [
                    {"name": "search", "description": "Finds a patient.", "parameters": plain},
                    {"name": "get_patient", "description": "A patient.", "parameters": plain},
                ],
            }
        )

    in_prose = harness("Identify the patient with search before you read the record.")
    in_code = harness("Identify the patient with `search` before you read the record.")
    assert fixed_tool_names(in_prose) == {"search"}
    assert fixed_tool_names(in_code) == frozenset()
    for name in ("tool_name_paraphrase", "tool_name_mask"):
        moved = set()
        for seed in range(6):
            assert "search" not in variant_of(name, greeting(in_prose), seed=seed).mapping.tools
            moved |= set(variant_of(name, greeting(in_code), seed=seed).mapping.tools)
        assert "search" in moved, moved


@pytest.mark.parametrize(
    ("tool", "value_of", "result"),
    [
        # a helpdesk's audit log names the tools that changed a ticket as its `action` values
        (
            "update_ticket",
            "get_audit_log",
            '{"entries": [{"action": "update_ticket", "by": "ann"}]}',
        ),
        # a plain word: a CI runner's job `type`, a default, written back by the status tool
        ("build", "get_status", '{"job": 7, "type": "build", "state": "passed"}'),
    ],
)
def test_a_tool_named_like_a_value_the_tools_take_keeps_its_name(tool, value_of, result):
    """No text of the harness mentions ``tool``, but the conversation writes the value: in the
    call's arguments (data, never renamed) and in the result. Renamed, the result would say
    another action than the call asked for and the schema accepts."""
    action = {"type": "string", "enum": ["create_ticket", tool, "close_ticket"]}
    if tool == "build":
        action = {"type": "string", "default": "build"}
    harness = Harness.from_dict(
        {
            "name": "desk",
            "tools": [
                tool_of(value_of, "Lists what happened.", {"action": action}),
                tool_of(tool, "Changes one.", strings("ref")),
                tool_of("close_ticket", "Closes one.", strings("ref")),
            ],
        }
    )
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": [
                {"role": "user", "content": "What changed?"},
                assistant(call(value_of, {"action": tool})),
                {"role": "tool", "tool_call_id": "c1", "content": result},
                {"role": "assistant", "content": "Ann changed it."},
            ],
            "gold": {
                "turns": [{"at": 1, "calls": [{"name": value_of, "arguments": {"action": [tool]}}]}]
            },
        },
        harness=harness,
    )
    for name in ("tool_name_paraphrase", "tool_name_mask"):
        moved = set()
        for seed in range(8):
            variant = variant_of(name, episode, seed=seed)
            assert tool not in variant.mapping.tools
            assert variant.episode.messages[2]["content"] == result
            moved |= set(variant.mapping.tools)
        assert value_of in moved, moved  # the other tools still move


def test_a_tool_named_like_a_parameter_its_skills_write_as_code_keeps_its_name():
    """`baggage` is a tool and `book`'s parameter; the skill's `baggage` may be either, and
    renamed as the tool it would name a parameter `book` does not have. `book` still moves."""
    plain = {"type": "object", "properties": {"ref": {"type": "string"}}}
    harness = Harness.from_dict(
        {
            "name": "travel",
            "skills": [
                {
                    "id": "rebook",
                    "description": "Rebooks.",
                    "content": "# Rebook\n\nCall `book` with the bags in the parameter `baggage`.\n",
                }
            ],
            "tools": [
                {
                    "name": "book",
                    "description": "Books a flight.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "flight": {"type": "string"},
                            "baggage": {"type": "integer"},
                        },
                    },
                },
                {"name": "baggage", "description": "Baggage rules.", "parameters": plain},
            ],
        }
    )
    episode = greeting(harness)
    for name in ("tool_name_paraphrase", "tool_name_mask"):
        moved = set()
        for seed in range(6):
            variant = variant_of(name, episode, seed=seed)
            assert "baggage" not in variant.mapping.tools
            assert "`baggage`" in variant.episode.harness.skill("rebook").content
            moved |= set(variant.mapping.tools)
        assert "book" in moved, moved


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_code_mixed_prose_keeps_its_latin_words(name):
    """A Hindi bank desk writes Hinglish: "अगर phone खो गया है तो reason पूछें" (if the phone is
    lost, ask the reason). Beside Devanagari, `phone` and `reason` became `telephone` and
    `reason_value` (an audit: replies, results, skills and the prompt). In prose that writes
    ordinary words in Latin letters, a Latin word is the prose's own; as code it still moves."""
    description = (
        "UPI transaction fail हो गया तो bank server timeout देखें। अगर phone खो गया है तो "
        "reason पूछें। `phone` में ग्राहक का नंबर डालें।"
    )
    harness = Harness.from_dict(
        {"name": "bank", "tools": [tool_of("block_card", description, strings("phone", "reason"))]}
    )
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        renames = variant.mapping.parameters["block_card"]
        text = variant.episode.harness.tools[0].description
        assert "अगर phone खो गया है तो reason पूछें।" in text, text
        assert f"`{renames['phone']}` में" in text, text


@pytest.mark.parametrize(
    ("description", "glued"),
    [
        ("FAQ를 검색합니다. query에는 고객의 말을 그대로 넣으세요.", "{}에는"),
        ("检索常见问题。把query设为用户的原话。", "把{}设为"),
        ("よくある質問を探します。queryには客の言葉を入れます。", "{}には"),
        # against the script's full-width punctuation too (、（）「」：), as Japanese and
        # Chinese write it around a name
        ("種別（query）を選びます。", "（{}）"),
        ("「query」は２００文字以内にします。", "「{}」"),
        ("检索常见问题：query，用户的原话。", "：{}，"),
        # beside a word of a script written with spaces (audits of a Russian billing desk and
        # an Arabic airline: the schema, calls and gold moved, the prose kept the old name)
        ("Ищет ответы. Передайте в query слова клиента.", "в {} слова"),
        ("Ищет ответы (в «query» — слова клиента).", "«{}»"),
        ("يبحث في الأسئلة. ضع كلام العميل في query دون تغيير.", "في {} دون"),
        ("يبحث في الأسئلة. املأ الـquery بكلام العميل.", "الـ{} بكلام"),
        # wrapped in right-to-left marks, as an editor writes a Latin word in Arabic text
        ("يبحث في الأسئلة. املأ الحقل \u200fquery\u200f بكلام العميل.", "\u200f{}\u200f"),
        ("Αναζήτηση. Βάλτε στο query τα λόγια του πελάτη.", "στο {} τα"),
    ],
)
@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_plain_word_parameter_written_against_cjk_or_hangul_moves(name, description, glued):
    """A Korean tool description said "query에는 고객의 말을 그대로 넣으세요" (put the customer's
    words into query); `query` became `Query` and the description kept the old name, since a
    plain word counts as the parameter only in code. Written against the text's own script, a
    Latin word is no word of that prose: it names the parameter. English prose keeps its
    words."""
    harness = Harness.from_dict(
        {
            "name": "faq",
            "tools": [
                tool_of("search_faq", description, strings("query", "locale")),
                tool_of("search_docs", "Use query to search the docs.", strings("query")),
            ],
        }
    )
    moved = 0
    for seed in range(8):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameter("search_faq", "query")
        tools = {t.name: t for t in variant.episode.harness.tools}
        faq = tools[variant.mapping.tool("search_faq")].description
        assert glued.format(new) in faq, faq
        docs = tools[variant.mapping.tool("search_docs")].description
        assert docs == "Use query to search the docs."
        moved += new != "query"
    assert moved


REFUND_GUARD = """def guard(payload, config):
    args = payload.get("arguments") or {}
    if args.get(config["flag_param"]) and config["skill"] not in payload.get("loaded_skills", ()):
        return {"ok": False, "feedback": "Load the refund skill first."}
    return {"ok": True}
"""


@pytest.mark.parametrize(
    "name",
    [
        "skill_id_synonym",
        "skill_id_case",
        "skill_id_namespace",
        "skill_id_mask",
        "parameter_name_paraphrase",
        "parameter_name_mask",
    ],
)
@pytest.mark.parametrize("mentioned", [True, False])
def test_a_skill_and_a_parameter_of_one_name_keep_it(name, mentioned):
    """`update_order` takes a boolean `refund`, a skill is called `refund`, and a hook's config
    names the parameter (`flag_param: refund`): the config took the skill's new id (20 of 30
    hook configs of an audit harness), so the hook looked for an argument no call has and
    stopped checking, and the skill's "the `refund` parameter" named a parameter that does not
    exist. Where a skill id is a parameter's name, no text tells which one it means: both keep
    it."""
    harness = Harness.from_dict(
        {
            "name": "back-office",
            "hooks": [
                {
                    "name": "refund_guard",
                    "event": "tool_call",
                    "function": "guard",
                    "config": {"flag_param": "refund", "skill": "refund-policy"},
                }
            ],
            "hooks_source": REFUND_GUARD,
            "skills": [
                {
                    "id": "refund",
                    "description": "How to refund.",
                    "content": "# Refund\n\n"
                    + (
                        "Never confuse the `refund` parameter with a return.\n"
                        if mentioned
                        else "Refunds go back to the card.\n"
                    ),
                },
                {
                    "id": "refund-policy",
                    "description": "Refund rules.",
                    "content": "# Refund policy\n\n"
                    + ("Load `refund` after this one.\n" if mentioned else "Rules for refunds.\n"),
                },
            ],
            "tools": [
                tool_of(
                    "update_order",
                    "Updates an order.",
                    {"order_id": {"type": "string"}, "refund": {"type": "boolean"}},
                )
            ],
        },
    )
    episode = greeting(harness)
    fields = {f.name for f in dataclasses.fields(registered()[name])}
    options = {"fraction": 1.0} if "fraction" in fields else {}
    for seed in range(8):
        variant = variant_of(name, episode, seed=seed, **options)
        out = variant.episode.harness
        assert "refund" not in variant.mapping.skills
        assert "refund" not in variant.mapping.parameters.get("update_order", {})
        assert out.hooks[0].config["flag_param"] == "refund"
        if mentioned:
            assert "the `refund` parameter" in out.skill(variant.mapping.skill("refund")).content


def test_a_parameter_named_like_a_value_the_tools_take_keeps_its_name():
    """`departure_time` is `book`'s parameter and a `sortBy` choice of `search`; `plan` is a
    parameter and a ticket type a hook's config allows. Renamed, the value would move with it
    (the skill's `sortBy="departure_time"`, the hook's allowed types), which no schema takes."""
    harness = Harness.from_dict(
        {
            "name": "travel",
            "hooks": [
                {
                    "name": "ticket_types",
                    "event": "tool_call",
                    "function": "check_type",
                    "config": {"allowed_types": ["flight", "plan"]},
                }
            ],
            "hooks_source": "def check_type(payload, config):\n    return {'ok': True}\n",
            "skills": [
                {
                    "id": "search-flights",
                    "description": "Searches.",
                    "content": '# Search\n\nCall `search(sortBy="departure_time")` first.\n',
                }
            ],
            "tools": [
                {
                    "name": "search",
                    "description": "Searches flights.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "sortBy": {
                                "type": "string",
                                "enum": ["price", "departure_time", "duration"],
                            },
                            "type": {"type": "string", "enum": ["flight", "plan"]},
                        },
                    },
                },
                {
                    "name": "book",
                    "description": "Books.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "departure_time": {"type": "string"},
                            "plan": {"type": "string"},
                            "seat": {"type": "string"},
                            "passengers": {"type": "integer"},
                        },
                    },
                },
            ],
        }
    )
    episode = greeting(harness)
    for name in ("parameter_name_paraphrase", "parameter_name_mask"):
        moved = set()
        for seed in range(8):
            variant = variant_of(name, episode, seed=seed)
            renamed = set(variant.mapping.renamed()["parameters"])
            assert not {"book.departure_time", "book.plan"} & renamed, renamed
            assert '="departure_time")`' in variant.episode.harness.skill("search-flights").content
            moved |= renamed
        assert moved & {"book.seat", "search.sortBy", "search.type"}, moved


def test_a_parameter_whose_mentions_cannot_move_keeps_its_name():
    """`name` (also the skill loader's argument) and `id` (also a nested property) are mentioned
    as code in a skill: their mentions cannot be told to be the parameter's, so renaming them
    would leave every one stale. `ref` is unambiguous and moves; `qty` is nested-only."""
    item = {"type": "object", "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}}}
    harness = Harness.from_dict(
        {
            "name": "ci",
            "skills": [
                {
                    "id": "deploy",
                    "description": "Deploys.",
                    "content": "# Deploy\n\nCall `build` with the service `name`, the `ref` and "
                    "the build `id`.\n",
                }
            ],
            "tools": [
                tool_of(
                    "build",
                    "Builds.",
                    {**strings("name", "ref", "id"), "items": {"type": "array", "items": item}},
                )
            ],
        }
    )
    episode = greeting(harness)
    for name in ("parameter_name_paraphrase", "parameter_name_mask"):
        for seed in range(6):
            variant = variant_of(name, episode, seed=seed, split="heldout")
            renames = variant.mapping.parameters.get("build", {})
            assert "ref" in renames and not {"name", "id"} & set(renames), renames
            content = variant.episode.harness.skill("deploy").content
            assert "`name`" in content and "`id`" in content and "`ref`" not in content


def test_a_path_into_a_renamed_parameter_moves_with_it():
    """A skill writes paths into object parameters (`resource.kind`, `details.assets[0]`,
    `filters.price.max` in prose): renamed, `resource` takes its paths along, or the skill names
    a field no tool has. A path that does not lead into the parameter (`resource.owner`, no
    property of it; `account.resource.kind`, another root) is no mention of it."""
    resource = {
        "type": "object",
        "properties": {"kind": {"type": "string"}, "path": {"type": "string"}},
    }
    details = {
        "type": "object",
        "properties": {"assets": {"type": "array", "items": {"type": "string"}}},
    }
    price = {"type": "object", "properties": {"max": {"type": "number"}}}
    filters = {"type": "object", "properties": {"price": price}}
    harness = Harness.from_dict(
        {
            "name": "desk",
            "skills": [
                {
                    "id": "access",
                    "description": "Grants access.",
                    "content": "# Access\n\n`resource.kind` is one of group, share, app; "
                    "`resource.path` is the full path. Put the asset tags in "
                    "`details.assets[0]`. Filter with filters.price.max when asked.\n"
                    "Never guess `resource.owner`; `account.resource.kind` is the old form.\n",
                }
            ],
            "tools": [
                tool_of(
                    "request_access",
                    "Asks for access.",
                    {"resource": resource, "details": details, **strings("reason")},
                ),
                tool_of("search_assets", "Finds assets.", {"filters": filters}),
            ],
        }
    )
    episode = greeting(harness)
    for name in ("parameter_name_paraphrase", "parameter_name_mask"):
        moved = set()
        for seed in range(8):
            variant = variant_of(name, episode, seed=seed)
            content = variant.episode.harness.skill("access").content
            for renames in variant.mapping.parameters.values():
                for old, new in renames.items():
                    moved.add(old)
                    for path in ("resource.kind", "resource.path", "details.assets[0]"):
                        if path.startswith(old + "."):
                            assert f"`{path}`" not in content, (old, new, content)
                            assert f"`{new}{path[len(old) :]}`" in content, (old, new, content)
                    if old == "filters":
                        assert f"{new}.price.max" in content, content
            # not paths into the parameter: as written
            assert "`resource.owner`" in content and "`account.resource.kind`" in content
        assert {"resource", "details", "filters"} & moved, moved


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_path_through_a_reference_or_a_branch_moves_with_its_parameter(name):
    """An insurance harness's `payout` is `oneOf` a bank account or a check address, and its
    `mailing` a `$ref` to a definition: renamed, the skill still wrote `payout.bank_account` and
    `mailing.line1` (32 of 178 hat-train rows), paths into no parameter the tool had."""
    address = {"type": "object", "properties": {"line1": {"type": "string"}}}
    payout = {
        "oneOf": [
            {"type": "object", "properties": {"bank_account": {"type": "string"}}},
            {"type": "object", "properties": {"check_address": {"$ref": "#/$defs/Address"}}},
        ]
    }
    tool = tool_of(
        "file_claim",
        "Files a claim.",
        {"payout": payout, "mailing": {"$ref": "#/$defs/Address"}, **strings("claim_ref")},
    )
    tool["parameters"]["$defs"] = {"Address": address}
    harness = Harness.from_dict(
        {
            "name": "claims",
            "skills": [
                {
                    "id": "payout-setup",
                    "description": "Sets up a payout.",
                    "content": "Send `payout.bank_account` or `payout.check_address`; the "
                    "letter goes to mailing.line1. Never `payout.iban`.",
                }
            ],
            "tools": [tool],
        }
    )
    moved = set()
    for seed in range(8):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        renames = variant.mapping.parameters.get("file_claim", {})
        content = variant.episode.harness.skill("payout-setup").content
        pay, mail = renames.get("payout", "payout"), renames.get("mailing", "mailing")
        assert f"`{pay}.bank_account` or `{pay}.check_address`" in content, content
        assert f"goes to {mail}.line1." in content, content
        assert "`payout.iban`" in content  # no property of it: as written
        moved |= set(renames)
    assert {"payout", "mailing"} <= moved


@pytest.mark.parametrize(
    ("tools", "user", "call_args", "kept", "moved"),
    [
        # travel: a cancellation reason the user types holds a parameter's name
        (
            [
                tool_of("cancel_booking", "Cancels.", strings("booking_id", "reason")),
                tool_of("book_hotel", "Books.", strings("check_in", "city")),
            ],
            "Cancel BK-1200, reason: wrong check_in date. Was `check_in` the field I got wrong?",
            ("cancel_booking", {"booking_id": "BK-1200", "reason": "wrong check_in date"}),
            "wrong check_in date",
            None,  # a parameter the user writes is the user's word (see the next test)
        ),
        # banking: a reference the user quotes is a tool's name
        (
            [
                tool_of("transfer_money", "Sends money.", strings("reference", "iban")),
                tool_of("get_balance", "Reads the balance.", strings("account_id")),
            ],
            "Send it to DE02 with reference get_balance 7. Then run get_balance for me.",
            ("transfer_money", {"iban": "DE02", "reference": "get_balance 7"}),
            "get_balance 7",
            "run get_balance for",
        ),
    ],
)
def test_the_users_own_data_stays_as_written(tools, user, call_args, kept, moved):
    """A gold value the user types is data, though it holds a harness name: renamed in the
    user's words it would ask for another value than the gold expects (verification rejected
    every such variant). The user's other mentions of a tool's name still move."""
    name, args = call_args
    harness = Harness.from_dict({"name": "h", "tools": tools})
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": [{"role": "user", "content": user}, assistant(call(name, args))],
            "gold": {
                "turns": [
                    {
                        "at": 1,
                        "calls": [{"name": name, "arguments": {k: [v] for k, v in args.items()}}],
                    }
                ]
            },
        },
        harness=harness,
    )
    old = kept.split()[-2] if kept.startswith("wrong") else kept.split()[0]
    transform = "parameter_name_mask" if old == "check_in" else "tool_name_mask"
    for seed in range(6):
        variant = variant_of(transform, episode, seed=seed)
        text = variant.episode.messages[0]["content"]
        assert text.count(kept) == 1, text
        if moved is not None:
            assert moved not in text, text  # renamed where the user names the harness's name
        else:
            assert text == user, text
        verify_variant(episode, variant.episode, variant.mapping)


@pytest.mark.parametrize("transform", ["parameter_name_paraphrase", "parameter_name_mask"])
@pytest.mark.parametrize(
    "user",
    [
        # a student asks about their own code (a Portuguese tutoring desk)
        "No meu código `limit=5` e `nivel: 3` estão certos? E o `aluno_id`?",
        # a shipper quotes their own system's reference field and header
        'Our reference field says "type=urgent; mode=sea"; our EDI needs x-request-id REQ-1.',
    ],
)
def test_a_parameter_rename_leaves_the_users_own_words_as_written(transform, user):
    """The user does not see the harness's parameters: a name they write is their code's, their
    table's, their system's. Renamed there, the user would describe code or data they never
    wrote, half renamed beside the names no parameter has."""
    names = ("limit", "nivel", "aluno_id", "mode", "x-request-id", "query")
    harness = Harness.from_dict(
        {"name": "h", "tools": [tool_of("find", "Finds records.", strings(*names))]}
    )
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": [
                {"role": "user", "content": user},
                assistant(call("find", {"query": "x"})),
            ],
            "gold": {
                "turns": [{"at": 1, "calls": [{"name": "find", "arguments": {"query": ["x"]}}]}]
            },
        },
        harness=harness,
    )
    renamed = set()
    for seed in range(6):
        variant = variant_of(transform, episode, seed=seed)
        renamed |= {old for r in variant.mapping.parameters.values() for old in r}
        assert variant.episode.messages[0]["content"] == user
        verify_variant(episode, variant.episode, variant.mapping)
    assert renamed & {"limit", "nivel", "aluno_id", "mode", "x-request-id"}, renamed


def test_renamable_parameters_follow_each_harness_order_and_read_each_text_alone():
    """Memoised by the exact fingerprint: two harnesses that differ only in the order of a
    tool's properties (tool_property_order) draw in their own order, whichever came first. A
    stray backtick in one skill pairs with nothing in another."""
    from hsa.transforms.tool_schema.parameters import renamable_parameters

    def harness(order, contents):
        properties = {p: {"type": "string"} for p in order}
        return Harness.from_dict(
            {
                "name": "h",
                "skills": [
                    {"id": f"s{i}", "description": "A skill.", "content": text}
                    for i, text in enumerate(contents)
                ],
                "tools": [
                    {
                        "name": "check_stock",
                        "description": "Checks.",
                        "parameters": {"type": "object", "properties": properties},
                    }
                ],
            }
        )

    texts = ("# A\n\nPress the ` key to open the console.\n", "# B\n\nGive the buyer's `name`.\n")
    forward = harness(["size", "color", "name"], texts)
    backward = harness(["color", "size", "name"], texts)
    assert forward.fingerprint == backward.fingerprint
    assert renamable_parameters(backward) == ("color", "size")
    assert renamable_parameters(forward) == ("size", "color")


def test_a_hyphenated_word_parameter_is_renamed_only_as_code():
    """``follow-up`` is a JSON key and an English word: the user's "a follow-up call" is theirs.
    ``link-number`` is a kebab-case name like any identifier, moved wherever it stands."""
    from hsa.text.mentions import parameter_mentions

    rewrite = parameter_mentions(
        {"follow-up": "recall", "drugCode": "medicationCode", "link-number": "item-no"}
    )
    text = "A follow-up call, please. Set `follow-up`: `book(follow-up=true)`; drugCode is known."
    assert rewrite(text) == (
        "A follow-up call, please. Set `recall`: `book(recall=true)`; medicationCode is known."
    )
    assert rewrite("Give the link-number first.") == "Give the item-no first."
    from hsa.text.names import identifier_like

    words = ["follow-up", "check-in", "opt-out", "drop-off", "e-mail", "co-pay", "self-service"]
    names = ["link-number", "x-api-key", "created-by", "sort-by", "depends-on", "post-id"]
    assert not any(map(identifier_like, words))
    assert all(map(identifier_like, names + ["sub-id", "mid-price", "size_limit"]))


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_parameter_rename_moves_mentions_and_keeps_the_hook_checking(example, name):
    episode = by_scenario(example, "swapped_args")  # check_stock, then the hook's feedback
    variant = variant_of(name, episode, split="heldout")
    out = variant.episode
    new = variant.mapping.parameters["check_stock"]["link_number"]
    assert set(variant.mapping.parameters["check_stock"]) == {"link_number", "size", "color"}
    # one name per old name across every tool, so prose mentions stay unambiguous
    assert {
        r["link_number"] for r in variant.mapping.parameters.values() if "link_number" in r
    } == {new}
    hook = next(h for h in out.harness.hooks if h.name == "tool_arguments")
    assert new in hook.config["link_params"] and "link_number" not in hook.config["link_params"]
    # the renamed hook still blocks a link that is not in the room
    check = out.harness.hook_functions()["tool_arguments"]
    stock = out.harness.tool("check_stock")
    blocked = check(
        {"tool_name": "check_stock", "arguments": {new: 29}, "parameters": stock.parameters},
        hook.config,
    )
    assert not blocked["ok"] and new in blocked["feedback"]
    assert f"as the {new} argument" in out.harness.prompt.text["instructions"]
    strategy = out.harness.skill("size-stock-strategy").content
    size = variant.mapping.parameters["check_stock"]["size"]
    assert f"`{new}`" in strategy and f"`{size}`" in strategy and "`link_number`" not in strategy
    assert f'{size}="29"' in strategy  # a keyword argument inside a code span
    feedback = next(m for m in out.messages if m.get("name") == "hook.tool_arguments")
    assert feedback["content"].startswith(f"check_stock: {new} 29 is not a link")
    result = orjson.loads(out.messages[-2]["content"])
    assert result[new] == 3 and "link_number" not in result
    calls = [
        orjson.loads(c["function"]["arguments"])
        for m in out.messages
        for c in m.get("tool_calls") or ()
        if c["function"]["name"] == "check_stock"
    ]
    assert calls[-1] == {
        new: 3,
        size: "29",
        variant.mapping.parameters["check_stock"]["color"]: "浅蓝色",
    }
    verify_variant(episode, out, variant.mapping)


def test_tool_results_echoing_plain_word_arguments_are_renamed(example):
    episode = by_scenario(example, "compare")
    variant = variant_of("parameter_name_mask", episode)
    aspects = variant.mapping.parameters["compare_products"]["aspects"]
    result = next(
        m["content"]
        for m in variant.episode.messages
        if m.get("role") == "tool" and m["content"].startswith("{")
    )
    assert orjson.loads(result)[aspects] == ["material"]
    assert result == orjson.dumps(orjson.loads(result)).decode()  # the original compact style


def test_a_json_tool_result_keeps_its_own_keys_and_moves_mentions_in_its_text():
    """A JSON result is the backend's data: a key named like a parameter (not echoing the
    call's argument) is its own field; an echoed argument moves with the call; its strings are
    text, where an identifier-like mention moves. A plain-text result is prose."""
    from hsa.transforms.tool_schema.parameters import rename_parameters

    tool = tool_of("book", "Books a flight.", strings("flight_number", "fare"))
    booked = {
        "fare": "Classic",
        "flights": [{"flight_number": "SW214"}],
        "note": "check flight_number before paying",
    }
    row = {
        "id": "e",
        "harness": {"name": "air", "tools": [tool]},
        "messages": [
            {"role": "user", "content": "Book SW214, Classic."},
            assistant(call("book", {"flight_number": "SW214", "fare": "Classic"}, "a")),
            {"role": "tool", "tool_call_id": "a", "content": json.dumps(booked, indent=2)},
            assistant(call("book", {"flight_number": "SW215", "fare": "Classic"}, "b")),
            {"role": "tool", "tool_call_id": "b", "content": "error: flight_number SW215 is full"},
            {"role": "assistant", "content": "Done."},
        ],
        "gold": {
            "at": 1,
            "calls": [
                {"name": "book", "arguments": {"flight_number": ["SW214"], "fare": ["Classic"]}}
            ],
        },
    }
    episode = Episode.from_dict(row)
    out = rename_parameters(episode, {"flight_number": "flightNo", "fare": "fare_class"})
    first, second = (m["content"] for m in out.messages if m.get("role") == "tool")
    assert first == json.dumps(
        {
            "fare_class": "Classic",  # echoes the call's argument
            "flights": [{"flight_number": "SW214"}],  # the backend's own field
            "note": "check flightNo before paying",
        },
        indent=2,
    )
    assert second == "error: flightNo SW215 is full"
    # rewritten in place, whatever the result's layout: a trailing newline, mixed spacing,
    # \u escapes
    from hsa.text.mentions import parameter_mentions
    from hsa.transforms.tool_schema.parameters import _renamed_result

    prose = parameter_mentions({"flight_number": "flightNo"})
    for raw, renamed in (
        ('{"error": "flight_number is required"}\n', '{"error": "flightNo is required"}\n'),
        ('{"error":"flight_number x", "n":1}', '{"error":"flightNo x", "n":1}'),
        ('[{"a": "caf\\u00e9 flight_number"}]', '[{"a": "caf\\u00e9 flightNo"}]'),
    ):
        assert _renamed_result(raw, prose, None, {}) == renamed


def test_the_fields_a_tools_log_writes_are_its_own():
    """A DevOps tool's log writes `namespace=prod podName=api-1` and JSON `{"dryRun":true}`:
    renamed with the parameters, the log showed fields it never had (an audit: every log
    result). The fields a result writes as data are the backend's; a sentence of the result
    about the argument still moves."""
    from hsa.transforms.tool_schema.parameters import rename_parameters

    tool = tool_of("get_logs", "Reads a pod's logs.", strings("namespace", "podName", "dryRun"))
    log = 'ts=1 namespace=prod podName=api-1 msg="GET /v1" body={"dryRun":true}'
    row = {
        "id": "e",
        "harness": {"name": "ops", "tools": [tool]},
        "messages": [
            {"role": "user", "content": "Logs of api-1?"},
            assistant(call("get_logs", {"namespace": "prod", "podName": "api-1"}, "a")),
            {"role": "tool", "tool_call_id": "a", "content": log},
            assistant(call("get_logs", {"namespace": "prod", "podName": "api-2"}, "b")),
            {"role": "tool", "tool_call_id": "b", "content": "error: podName=api-2 not found"},
            {"role": "assistant", "content": "Done."},
        ],
        "gold": {
            "at": 1,
            "calls": [
                {"name": "get_logs", "arguments": {"namespace": ["prod"], "podName": ["api-1"]}}
            ],
        },
    }
    out = rename_parameters(
        Episode.from_dict(row), {"namespace": "ns", "podName": "pod_name", "dryRun": "dry_run"}
    )
    first, second = (m["content"] for m in out.messages if m.get("role") == "tool")
    assert first == log
    assert second == "error: pod_name=api-2 not found"  # an error about the call: it moves


@given(
    row=rich_episode_dicts(),
    seed=st.integers(0, 2**32),
    name=st.sampled_from(["parameter_name_paraphrase", "parameter_name_mask"]),
    split=st.sampled_from(ts.SPLITS),
)
def test_parameter_renames_keep_every_argument_value(row, seed, name, split):
    episode = Episode.from_dict(row)
    variant = augment_episode(recipe(name, seed, split=split), episode)[0]
    assert isinstance(variant, Variant), str(variant)
    out = variant.episode
    renames = variant.lineage[0].params["renames"]
    for before, after in zip(episode.harness.tools, out.harness.tools):
        assert [renames.get(p, p) for p in before.properties] == list(after.properties)
        assert list(before.properties.values()) == list(after.properties.values())
    for m_before, m_after in zip(episode.messages, out.messages):
        for c_before, c_after in zip(
            m_before.get("tool_calls") or (), m_after.get("tool_calls") or ()
        ):
            args = orjson.loads(c_before["function"]["arguments"])
            if c_before["function"]["name"] != episode.harness.skill_loader:
                args = {renames.get(k, k): v for k, v in args.items()}
            assert orjson.loads(c_after["function"]["arguments"]) == args


def test_bad_parameter_params_raise(example):
    episode = example[0]
    transform = registered()["parameter_name_mask"]()
    with pytest.raises(HsaError, match="unknown parameter"):
        transform.apply(episode, {"renames": {"nope": "arg_1"}})
    with pytest.raises(HsaError, match="one name"):
        transform.apply(episode, {"renames": {"size": "arg_1", "color": "arg_1"}})


# ---- descriptions ----------------------------------------------------------------------------


def test_a_chinese_description_phrase_is_reworded_only_where_it_is_a_word():
    """用户 in 专用户外 (专用 + 户外) is no phrase of the text; 查询 standing alone is."""
    for seed in range(20):
        out = ts.DESCRIPTIONS.paraphrase("专用户外灯，查询价格。", "train", random.Random(seed))
        assert out.startswith("专用户外灯，") and "查询" not in out


def test_japanese_descriptions_get_no_chinese_synonyms():
    """商品 and 取得 are Japanese words too, and a Chinese synonym in Japanese text (产品を交換する)
    is wrong in both languages; the English phrases of a mixed text are still reworded."""
    text = "商品を交換する。注文情報を取得する。Get the order."
    outs = {
        ts.DESCRIPTIONS.paraphrase(text, split, random.Random(seed))
        for seed in range(20)
        for split in ("train", "heldout")
    }
    assert {out.rsplit("。", 1)[0] for out in outs} == {"商品を交換する。注文情報を取得する"}
    assert any("Get the" not in out for out in outs)
    # a Chinese text quoting a Japanese brand name (山の茶) is still Chinese
    assert any(
        "获取"
        not in ts.DESCRIPTIONS.paraphrase(
            "获取商品的价格。品牌：山の茶", "train", random.Random(seed)
        )
        for seed in range(20)
    )
    # the same phrases in Chinese text are reworded, katakana names in it notwithstanding
    assert any(
        "商品"
        not in ts.DESCRIPTIONS.paraphrase(
            "交换优衣库（ユニクロ）的商品。", "train", random.Random(seed)
        )
        for seed in range(20)
    )


def test_a_japanese_harness_is_the_document_for_its_short_descriptions():
    """対象商品 and 商品名 hold no kana; in a harness whose other texts are Japanese they are
    Japanese too, and keep their words."""
    harness = Harness.from_dict(
        {
            "name": "jp",
            "tools": [
                {
                    "name": "exchange",
                    "description": "商品を交換する。",
                    "parameters": {
                        "type": "object",
                        "properties": {"item": {"type": "string", "description": "対象商品"}},
                    },
                },
                {"name": "lookup", "description": "商品名", "parameters": {"type": "object"}},
            ],
        }
    )
    episode = greeting(harness)
    for seed in range(20):
        params = ToolDescriptionParaphrase().sample_params(episode, random.Random(seed))
        assert "产品" not in str(params) and "宝贝" not in str(params), params


def test_paraphrase_rewords_english_and_chinese_and_keeps_what_matters():
    rng = random.Random(5)
    text = (
        'Get the price of a product, e.g. "ZB10"; do not apply `coupon_code` unless the '
        "user asks. Default is 3.5 items; see get_price_after_coupon."
    )
    out = ts.DESCRIPTIONS.paraphrase(text, "heldout", rng, {"coupon_code"})
    assert out != text
    for kept in ('"ZB10"', "not", "`coupon_code`", "unless", "3.5", "get_price_after_coupon"):
        assert kept in out
    assert "Get the" not in out and "e.g." not in out
    zh = ts.DESCRIPTIONS.paraphrase(
        "获取指定商品的信息，例如价格。不要返回库存，最多20件。", "train", rng
    )
    assert zh != "获取指定商品的信息，例如价格。不要返回库存，最多20件。"
    assert "不要" in zh and "20件" in zh
    assert ts.DESCRIPTIONS.paraphrase("Sends a GET request.", "train", rng).count("GET") == 1
    # an item (of a list, of an array) is no product, and a product may be of two numbers
    for phrase in ("An item", "A product"):
        assert ts.DESCRIPTIONS.paraphrase(phrase, "heldout", random.Random(0)) == phrase


_TOKENS = st.sampled_from(
    [
        "Get",
        "the",
        "price",
        "of",
        "a",
        "product",
        "e.g.",
        "based on",
        "not",
        "never",
        "without",
        "不",
        "获取",
        "商品",
        "例如",
        "没有",
        "3",
        "42.5",
        "10%",
        '"ZB10"',
        "'M'",
        "`size`",
        "get_price",
        "linkNumber",
        "user",
        "specific",
        "information",
        "viewer",
        ",",
        ".",
    ]
)


@given(
    tokens=st.lists(_TOKENS, min_size=1, max_size=25),
    seed=st.integers(0, 2**32),
    split=st.sampled_from(ts.SPLITS),
)
def test_paraphrase_keeps_numbers_quotes_identifiers_and_negations(tokens, seed, split):
    text = " ".join(tokens)
    out = ts.DESCRIPTIONS.paraphrase(text, split, random.Random(seed))
    kept = re.compile(
        r'\d+(?:\.\d+)?%?|"[^"]*"|\'[^\']*\'|`[^`]*`|[A-Za-z]+_[a-z_]+|[a-z]+[A-Z]'
        r"\w*|(?<![A-Za-z])(?:not|never|without)(?![A-Za-z])|[不没]"
    )
    assert Counter(kept.findall(out)) == Counter(kept.findall(text))


def test_description_paraphrase_changes_only_descriptions(example):
    episode = example[0]
    variant = variant_of("tool_description_paraphrase", episode, split="heldout")
    changed = 0
    for before, after in zip(episode.harness.tools, variant.episode.harness.tools):
        assert before.name == after.name
        strip = lambda s: json.dumps(s, sort_keys=True, default=str)  # noqa: E731
        assert strip(_without_descriptions(before.parameters)) == strip(
            _without_descriptions(after.parameters)
        )
        changed += before.description != after.description
        for (_, a), (_, b) in zip(schema_nodes(before.parameters), schema_nodes(after.parameters)):
            for token in re.findall(r'\d+|"[^"]*"|\([^)]*\)', a.get("description", "")):
                assert token in b["description"]
    assert changed >= len(episode.harness.tools) // 2
    with pytest.raises(HsaError, match="no tool"):
        registered()["tool_description_paraphrase"]().apply(
            episode, {"tools": {"nope": {"description": "x"}}}
        )


def _without_descriptions(schema):
    if isinstance(schema, dict):
        return {k: _without_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [_without_descriptions(v) for v in schema]
    return schema


# ---- distractors -----------------------------------------------------------------------------


def test_distractors_are_new_unneeded_tools(example):
    episode = by_scenario(example, "size_stock")
    for split in ts.SPLITS:
        variant = variant_of("distractor_tools", episode, split=split, min_count=3, max_count=3)
        out = variant.episode
        added = [t for t in out.harness.tools if t.name not in episode.harness.tool_names]
        pool = {d["tool"]["function"]["name"] for d in ts.DISTRACTOR_TOOLS[split]}
        assert len(added) == 3 and {t.name for t in added} <= pool
        assert [t for t in out.harness.tools if t.name in episode.harness.tool_names] == list(
            episode.harness.tools
        )
        assert out.gold == episode.gold and out.messages == episode.messages
        assert not variant.mapping


def test_distractors_are_drawn_from_the_harness_and_a_request_for_one_is_refused(example):
    # The draw is the harness variant's (the same for every conversation under it); a
    # conversation that asks for what a drawn distractor does is refused, so no row offers two
    # tools for its request.
    base = example[0]
    asks = replace(
        base,
        id="mail",
        messages=({"role": "user", "content": "Please send an email to my boss"},)
        + base.messages[1:],
    )
    request = "please send an email to my boss"
    transform = registered()["distractor_tools"](min_count=3, max_count=3)
    refused = 0
    for seed in range(30):
        params = transform.sample_params(asks, random.Random(seed))
        assert transform.sample_params(base, random.Random(seed)) == params
        if any(k in request for entry in params["tools"] for k in entry["keywords"]):
            refused += 1
            with pytest.raises(HsaError, match="is about what the request asks"):
                transform.apply(asks, params)
        else:
            assert transform.apply(asks, params).messages == asks.messages
        transform.apply(base, params)  # the example's own request asks for none of them
    assert 0 < refused < 30
    with pytest.raises(HsaError, match="reuse a name"):
        registered()["distractor_tools"]().apply(
            base, {"tools": [{"at": 0, "tool": base.harness.tools[0].to_openai()}]}
        )


def _only_distractor(keyword: str) -> dict:
    """Params that add the one pool tool with ``keyword`` among its keywords."""
    entry = next(
        e for part in ts.DISTRACTOR_TOOLS.values() for e in part if keyword in e["keywords"]
    )
    return {"tools": [{**entry, "at": 0}]}


def _asking(base: Episode, text: str) -> Episode:
    """``base`` with its first user message ``text``."""
    return replace(base, messages=({"role": "user", "content": text},) + base.messages[1:])


def test_an_english_keyword_is_no_word_of_a_request_in_another_language(example):
    """A German customer wrote "Die Pizza kam kalt an": the article "die" matched the dice
    roller's English keyword, and the variant was rejected as if the customer asked to roll a
    die. A request in another language is read for its own words, not English ones."""
    base, params = example[0], _only_distractor("die")
    transform = registered()["distractor_tools"]()
    german = _asking(
        base, "Die Pizza kam kalt an, und die Getränke fehlten. Ich will mein Geld zurück."
    )
    assert transform.apply(german, params).messages == german.messages
    with pytest.raises(HsaError, match="is about what the request asks"):
        transform.apply(_asking(base, "Please roll a die for the giveaway winner."), params)


def test_a_keyword_starts_a_word(example):
    """A CRM user's request held the record id `0015g00000QrS34AAC`, and the QR-code
    distractor's keyword "qr" matched inside it: the row was rejected as asking for a QR code."""
    base, params = example[0], _only_distractor("qr")
    transform = registered()["distractor_tools"]()
    held = _asking(base, "Add account 0015g00000QrS34AAC to the early access list.")
    assert transform.apply(held, params).messages == held.messages
    with pytest.raises(HsaError, match="is about what the request asks"):
        transform.apply(_asking(base, "Make a QR code for the menu."), params)


def test_a_keyword_asks_for_its_tool_inside_a_compound_or_an_inflection(example):
    """A commerce harness (an audit): a keyword that had to end a word no longer refused
    "What city is zipcode 97205?" beside the zip-code distractor, nor "spellcheck",
    "photographs", "scanned" or "notepad": the drawn distractor did what the request asks. A
    keyword starts a word and may end inside one."""
    base = example[0]
    transform = registered()["distractor_tools"]()
    for keyword, asks in (
        ("zip", "What city is zipcode 97205?"),
        ("spell", "Could you spellcheck my review?"),
        ("photo", "Send me photographs of the jacket."),
        ("scan", "I scanned the receipt, can you read it?"),
        ("note", "Put it in my notepad."),
    ):
        with pytest.raises(HsaError, match="is about what the request asks"):
            transform.apply(_asking(base, asks), _only_distractor(keyword))


def test_records_of_a_database_are_no_voice_recording(example):
    """A data agent's user asked "Can you also update records?": the voice-memo distractor's
    keyword `record` matched, and the row was rejected as asking to record a memo. A recording
    is asked for as one; a record of data is not."""
    base, params = example[0], _only_distractor("录音")
    transform = registered()["distractor_tools"]()
    for text in ("Can you also update records?", "Show the record of my last order."):
        assert transform.apply(_asking(base, text), params).messages == _asking(base, text).messages
    for text in ("Please record a voice memo for me.", "Start a recording of this call."):
        with pytest.raises(HsaError, match="is about what the request asks"):
            transform.apply(_asking(base, text), params)


@given(row=rich_episode_dicts(), seed=st.integers(0, 2**32), split=st.sampled_from(ts.SPLITS))
def test_distractors_keep_the_original_tools_in_order(row, seed, split):
    episode = Episode.from_dict(row)
    variant = augment_episode(recipe("distractor_tools", seed, split=split), episode)[0]
    if not isinstance(variant, Variant):  # the request asks for what a drawn distractor does
        assert "is about what the request asks" in variant.reason, str(variant)
        return
    tools = variant.episode.harness.tools
    assert [t for t in tools if t.name in episode.harness.tool_names] == list(episode.harness.tools)
    # The pool is English: a harness whose texts read as another language gets none.
    assert (len(tools) > len(episode.harness.tools)) == ("en" in table_languages(episode.harness))
    assert variant.episode.gold == episode.gold


# ---- schema spellings and shape --------------------------------------------------------------


def test_schema_spelling_respells_without_changing_meaning(example):
    episode = by_scenario(example, "complaint")
    variant = variant_of("tool_schema_spelling", episode, rate=1.0)
    out = variant.episode.harness
    ticket, original = (
        out.tool("create_after_sales_ticket"),
        episode.harness.tool("create_after_sales_ticket"),
    )
    assert ticket.required != original.required and set(ticket.required) == set(original.required)
    assert ticket.properties["issue_type"]["enum"] != original.properties["issue_type"]["enum"]
    # it was closed: it stays closed (opened, it would accept calls its harness refuses)
    assert ticket.parameters["additionalProperties"] is False
    verify_variant(episode, variant.episode, variant.mapping)


def test_schema_spelling_never_closes_a_schema_a_call_overflows(example):
    episode = Episode.from_dict(
        {
            "id": "open",
            "harness": {
                "name": "h",
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "search_docs",
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    "query": {"type": "string"},
                                    "opts": {
                                        "type": "object",
                                        "properties": {"lang": {"type": "string"}},
                                    },
                                },
                            },
                        },
                    }
                ],
            },
            "messages": [
                {"role": "user", "content": "find it"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {
                                "name": "search_docs",
                                "arguments": '{"query": "x", "opts": {"lang": "en", "n": 2}}',
                            },
                        }
                    ],
                },
            ],
            "gold": {
                "at": 1,
                "calls": [
                    {
                        "name": "search_docs",
                        "arguments": {"query": ["x"], "opts": [{"lang": ["en"], "n": [2]}]},
                    }
                ],
            },
        }
    )
    for seed in range(20):
        edits = registered()["tool_schema_spelling"](rate=1.0).sample_params(
            episode, random.Random(seed)
        )["edits"]
        assert edits["search_docs"] == {"": {"additionalProperties": "close"}}
    spelling = registered()["tool_schema_spelling"]()
    close_opts = {"edits": {"search_docs": {"/properties/opts": {"additionalProperties": "close"}}}}
    with pytest.raises(HsaError, match="undeclared key"):
        spelling.apply(episode, close_opts)
    # In a pool the closed harness is made once, by an episode whose calls fit it; another
    # episode of the harness variant, through the shortcut, is still refused.
    fits = Episode.from_dict(
        {
            **episode.to_dict(),
            "id": "fits",
            "messages": [{"role": "user", "content": "nothing to call"}],
            "gold": {"no_call": True},
        }
    )
    closed = spelling.apply(fits, close_opts).harness
    assert (
        closed.tool("search_docs").parameters["properties"]["opts"]["additionalProperties"] is False
    )
    with pytest.raises(HsaError, match="undeclared key"):
        spelling.apply_to_conversation(episode, close_opts, closed, EMPTY)
    assert spelling.apply_to_conversation(fits, close_opts, closed, EMPTY).harness == closed


@given(harness=harnesses(min_tools=1), seed=st.integers(0, 2**32))
def test_schema_spelling_accepts_exactly_what_it_accepted(harness, seed):
    row = {
        "id": "e",
        "harness": harness.to_dict(),
        "messages": [{"role": "user", "content": "q"}],
        "gold": {"no_call": True},
    }
    episode = Episode.from_dict(row)
    transform = registered()["tool_schema_spelling"](rate=1.0)
    out = transform.apply(episode, transform.sample_params(episode, random.Random(seed)))
    for before, after in zip(harness.tools, out.harness.tools):
        assert _normalised(before.parameters) == _normalised(after.parameters)
        value = dict.fromkeys(before.properties, 1)
        assert jsonschema.Draft202012Validator(after.parameters).is_valid(
            value
        ) == jsonschema.Draft202012Validator(before.parameters).is_valid(value)


@given(
    harness=harnesses(min_tools=1),
    closed=st.lists(st.booleans(), min_size=1, max_size=6),
    seed=st.integers(0, 2**32),
)
def test_schema_spelling_refuses_whatever_the_harness_refuses(harness, closed, seed):
    """Dropping a schema's `"additionalProperties": false` (drawn until version 4) let the
    variant's schema accept a call with a key the tool does not declare, which its harness
    refuses: a German claims harness's closed tools and nested objects were opened in 17 of
    50 variants. Closing an open object is what the scorer holds calls to already."""
    data = harness.to_dict()
    for i, tool in enumerate(data["tools"]):
        if closed[i % len(closed)]:
            tool["function"]["parameters"]["additionalProperties"] = False
    row = {
        "id": "e",
        "harness": data,
        "messages": [{"role": "user", "content": "q"}],
        "gold": {"no_call": True},
    }
    episode = Episode.from_dict(row)
    transform = registered()["tool_schema_spelling"](rate=1.0)
    params = transform.sample_params(episode, random.Random(seed))
    out = transform.apply(episode, params)
    for before, after in zip(episode.harness.tools, out.harness.tools, strict=True):
        extra = {**dict.fromkeys(before.properties, 1), "zz_undeclared": 1}
        if not jsonschema.Draft202012Validator(before.parameters).is_valid(extra):
            assert not jsonschema.Draft202012Validator(after.parameters).is_valid(extra)
        if before.parameters.get("additionalProperties") is False:
            assert after.parameters["additionalProperties"] is False


def _normalised(schema):
    """A schema with list order and a closing ``additionalProperties: false`` ignored."""
    if isinstance(schema, dict):
        return {
            k: (sorted(map(json.dumps, v)) if k in ("required", "enum") else _normalised(v))
            for k, v in schema.items()
            if not (k == "additionalProperties" and v is False)
        }
    return schema


def test_tool_shape_sets_the_prompt_option_and_keeps_the_tools(example):
    episode = example[0]
    variant = variant_of("tool_shape", episode)
    assert variant.episode.harness.prompt.options["tool_shape"] == "mcp"
    assert variant.episode.harness.openai_tools() == episode.harness.openai_tools()
    back = variant_of("tool_shape", variant.episode)
    assert back.episode.harness.prompt.options["tool_shape"] == "openai"
    with pytest.raises(HsaError, match="tool_shape must be"):
        registered()["tool_shape"]().apply(episode, {"tool_shape": "yaml"})


# ---- the acceptance targets on real data -----------------------------------------------------


def _differs(name: str, before: Episode, after: Episode) -> bool:
    shape = lambda e: e.harness.prompt.options.get("tool_shape")  # noqa: E731
    return tools_json(before) != tools_json(after) or shape(before) != shape(after)


def _applies(name: str, episode: Episode) -> bool:
    tools = episode.harness.tools
    if name == "tool_order_permutation":
        return len(tools) >= 2
    if name == "tool_property_order":
        return any(
            isinstance(n.get("properties"), dict) and len(n["properties"]) >= 2
            for t in tools
            for _, n in schema_nodes(t.parameters)
        )
    if name.startswith("parameter_"):
        return any(t.properties for t in tools)
    return bool(tools)


def _real_data() -> list[Episode]:
    from hsa.importers.bfcl import import_bfcl

    episodes = list(load_example_episodes()[::4])
    for file in BFCL_FILES:
        episodes += import_bfcl(BFCL_DIR / file).episodes[::8]
    return episodes


@pytest.fixture(scope="module")
def real_data(bfcl_data) -> list[Episode]:
    return _real_data()


@pytest.mark.parametrize("name", FAMILY)
def test_verified_and_different_on_bfcl_and_the_example(name, real_data):
    splits = ts.SPLITS if name in SPLIT_TRANSFORMS else ("train",)
    for split in splits:
        options = {"split": split} if name in SPLIT_TRANSFORMS else {}
        originals = {e.id: e for e in real_data}
        out = list(augment(recipe(name, seed=11, **options), real_data))
        kept = [v for v in out if isinstance(v, Variant)]
        # Distractors are drawn for the harness and refuse a conversation that asks for what
        # one of them does: some rows of real data do (BFCL: about 1 in 70).
        share = 0.97 if name == "distractor_tools" else 0.99
        assert len(kept) >= share * len(out), [str(v) for v in out if v not in kept][:3]
        applicable = [v for v in kept if _applies(name, originals[v.source_id])]
        differ = sum(_differs(name, originals[v.source_id], v.episode) for v in applicable)
        assert differ >= 0.9 * len(applicable)
        for v in kept[:: max(1, len(kept) // 10)]:  # replays on a default instance
            assert replay(originals[v.source_id], v.lineage)[0] == v.episode


LIMIT_HOOK = """
def cap(payload, config):
    config.get("refund_reason", {}).get("order_ref")  # a nested option read by its name
    for name, most in config["limits"].items():
        value = payload["arguments"].get(name)
        if value is not None and value > most:
            return {"ok": False, "feedback": f"{name} {value} is over {most}"}
    return {"ok": True}
"""


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_hook_configured_per_parameter_keeps_checking_the_renamed_parameter(name):
    """A hook's configuration may name the parameters it checks as keys (``limits: {amount:
    500}``): renamed with the parameter, the hook still blocks an over-limit call under the new
    name; a key that is the hook's own option stays."""
    harness = Harness.from_dict(
        {
            "name": "payments",
            "hooks": [
                {
                    "name": "payment_limits",
                    "event": "tool_call",
                    "function": "cap",
                    "config": {
                        "limits": {"refund_amount": 500, "max_items": 3},
                        "strict": True,
                        "order_ref": "required",
                        "refund_reason": {"order_ref": 1},
                    },
                }
            ],
            "hooks_source": LIMIT_HOOK,
            "tools": [
                tool_of(
                    "issue_refund",
                    "Refunds an order.",
                    {
                        "order_ref": {"type": "string"},
                        "refund_amount": {"type": "number"},
                        "refund_reason": {"type": "string"},
                    },
                )
            ],
        },
        trust_hooks=True,
    )
    episode = greeting(harness)
    renamed = 0
    for seed in range(6):
        variant = variant_of(name, episode, seed=seed, fraction=1.0)
        new = variant.mapping.parameter("issue_refund", "refund_amount")
        hook = variant.episode.harness.hooks[0]
        ref = variant.mapping.parameter("issue_refund", "order_ref")
        assert hook.config == {
            "limits": {new: 500, "max_items": 3},
            "strict": True,
            # an option named like a parameter is the hook's own, at the top or nested
            "order_ref": "required",
            "refund_reason": {"order_ref": 1},
        }, ref
        check = variant.episode.harness.hook_functions()["payment_limits"]
        blocked = check({"tool_name": "issue_refund", "arguments": {new: 900}}, hook.config)
        assert not blocked["ok"] and blocked["feedback"] == f"{new} 900 is over 500"
        renamed += new != "refund_amount"
    assert renamed


def test_a_rename_that_would_merge_two_keys_of_a_hook_configuration_is_refused():
    names = {"refund_amount": "amount"}

    def key(name, depth):
        return names.get(name, name)

    config = {"limits": {"refund_amount": 500, "amount": 7}}
    with pytest.raises(
        HsaError, match="'refund_amount' renamed to 'amount' would merge with key 'amount'"
    ):
        renamed_config(config, key, lambda text: names.get(text, text))
    assert renamed_config({"a": ["refund_amount", {"refund_amount": 1}]}, key, str) == {
        "a": ["refund_amount", {"amount": 1}]
    }


def _ticket_caps_harness(config: dict) -> Harness:
    """Travel: `plan` is `book`'s parameter and a value `search` takes; a hook configured by
    ``config``."""
    return Harness.from_dict(
        {
            "name": "travel",
            "hooks": [
                {
                    "name": "ticket_caps",
                    "event": "tool_call",
                    "function": "cap_types",
                    "config": config,
                }
            ],
            "hooks_source": "def cap_types(payload, config):\n    return {'ok': True}\n",
            "tools": [
                tool_of("search", "Searches.", {"type": {"type": "string", "enum": ["plan"]}}),
                tool_of("book", "Books.", {"plan": {"type": "string"}, "seat_row": {}}),
            ],
        }
    )


def test_a_parameter_named_like_a_value_a_hook_configuration_keys_keeps_its_name():
    """`plan` is `book`'s parameter and a ticket type `search` takes; a hook keyed by ticket type
    (`max_per_type: {plan: 2}`) writes the value. Renamed, the key would move with the
    parameter, and the hook would no longer know the type."""
    harness = _ticket_caps_harness({"max_per_type": {"plan": 2}})
    moved = set()
    for seed in range(8):
        variant = variant_of("parameter_name_paraphrase", greeting(harness), seed=seed)
        moved |= set(variant.mapping.renamed()["parameters"])
        assert variant.episode.harness.hooks[0].config == {"max_per_type": {"plan": 2}}
    assert "book.plan" not in moved and "book.seat_row" in moved, moved


def _refund_guard_harness(config: dict) -> Harness:
    """Delivery: `issue_refund` takes an order id, a reason code and the missing items; a hook
    configured by ``config``."""
    return Harness.from_dict(
        {
            "name": "delivery",
            "hooks": [
                {
                    "name": "refund_guard",
                    "event": "tool_call",
                    "function": "guard",
                    "config": config,
                }
            ],
            "hooks_source": "def guard(payload, config):\n    return {'ok': True}\n",
            "tools": [
                tool_of(
                    "issue_refund",
                    "Refunds an order.",
                    {
                        "order_id": {"type": "string"},
                        "reason": {"type": "string"},
                        "missing_items": {"type": "array", "items": {"type": "string"}},
                        "amount_eur": {"type": "number"},
                    },
                )
            ],
        }
    )


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_format_field_of_a_hook_template_keeps_its_name(name):
    """A hook's feedback template (``"order_id {order_id} is not an order number"``) is filled by
    hooks.py with ``.format(order_id=...)``: the text around its fields moves with the rename,
    a field renamed would raise KeyError in every variant that runs the hook."""
    template = "order_id {order_id} is not an order number; amount_eur {amount_eur:.2f} is over"
    harness = _refund_guard_harness({"message": template})
    moved = 0
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        order = variant.mapping.parameter("issue_refund", "order_id")
        amount = variant.mapping.parameter("issue_refund", "amount_eur")
        message = variant.episode.harness.hooks[0].config["message"]
        assert message == (
            f"{order} {{order_id}} is not an order number; {amount} {{amount_eur:.2f}} is over"
        )
        moved += order != "order_id"
    assert moved


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_parameter_named_like_a_value_in_a_hook_configuration_list_keeps_its_name(name):
    """`missing_items` is a parameter and one of the reason codes a hook allows
    (``allowed_reasons: [late_delivery, missing_items, wrong_order]``): a list that holds other
    values than names is data, and renamed, the code would no longer be one the hook allows."""
    harness = _refund_guard_harness(
        {"allowed_reasons": ["late_delivery", "missing_items", "wrong_order"]}
    )
    moved = set()
    for seed in range(8):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        moved |= set(variant.mapping.renamed()["parameters"])
        assert variant.episode.harness.hooks[0].config == {
            "allowed_reasons": ["late_delivery", "missing_items", "wrong_order"]
        }
    assert "issue_refund.missing_items" not in moved and "issue_refund.order_id" in moved, moved


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_parameter_named_like_a_nested_field_a_hook_configuration_names_keeps_its_name(name):
    """Freight: `currency` is a parameter of `declare` and a field of `book`'s `customs` object,
    and a hook requires ``required_fields: [hs_code, currency]`` of that object. The config
    may name the nested field, which keeps its name: renamed with the parameter, the hook
    blocked every valid booking ("customs is missing currency_unit")."""
    harness = Harness.from_dict(
        {
            "name": "freight",
            "hooks": [
                {
                    "name": "customs_fields",
                    "event": "tool_call",
                    "function": "guard",
                    "config": {
                        "tools": ["book"],
                        "object_param": "customs",
                        "required_fields": ["hs_code", "currency"],
                    },
                }
            ],
            "hooks_source": "def guard(payload, config):\n    return {'ok': True}\n",
            "tools": [
                tool_of("declare", "Declares goods.", strings("hs_code", "currency", "value")),
                tool_of(
                    "book",
                    "Books a shipment.",
                    {
                        "origin_port": {"type": "string"},
                        "customs": {
                            "type": "object",
                            "properties": {
                                "hs_code": {"type": "string"},
                                "currency": {"type": "string"},
                            },
                        },
                    },
                ),
            ],
        }
    )
    moved = set()
    for seed in range(8):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        moved |= set(variant.mapping.renamed()["parameters"])
        config = variant.episode.harness.hooks[0].config
        assert config["required_fields"] == ["hs_code", "currency"], config
    assert "declare.currency" not in moved and "declare.value" in moved, moved


@pytest.mark.parametrize(
    ("transform", "tools", "passed"),
    [
        # devops: the user's playbook is called like a tool
        (
            "tool_name_mask",
            [
                tool_of("run_playbook", "Runs a playbook.", strings("playbook")),
                tool_of("restart_service", "Restarts a service.", strings("service")),
            ],
            ("run_playbook", "playbook", "restart_service"),
        ),
        (
            "tool_name_paraphrase",
            [
                tool_of("run_playbook", "Runs a playbook.", strings("playbook")),
                tool_of("restart_service", "Restarts a service.", strings("service")),
            ],
            ("run_playbook", "playbook", "restart_service"),
        ),
        # parcels: the user's label is called like a parameter
        (
            "parameter_name_mask",
            [
                tool_of("track_parcel", "Tracks a parcel by its label.", strings("label")),
                tool_of("ship", "Ships; `gift_wrap` wraps it.", {"gift_wrap": {"type": "boolean"}}),
            ],
            ("track_parcel", "label", "gift_wrap"),
        ),
    ],
)
def test_the_data_a_call_passes_stays_where_a_result_or_a_reply_repeats_it(
    transform, tools, passed
):
    """A value the user gives and a call passes is data wherever the conversation repeats it:
    the result that echoes it and the reply that quotes it keep it as written, though it is
    also a harness name that the rename moves everywhere else (the rows read "night_mode_check
    will run" for the user's scene "night_mode")."""
    name, param, value = passed
    harness = Harness.from_dict({"name": "h", "tools": tools})
    result = {"role": "tool", "tool_call_id": "c1", "content": json.dumps({param: value, "ok": 1})}
    reply = {"role": "assistant", "content": f"Done: {value} is on its way."}
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": [
                {"role": "user", "content": f"Please take care of {value} for me."},
                assistant(call(name, {param: value})),
                result,
                reply,
            ],
            "gold": {
                "turns": [{"at": 1, "calls": [{"name": name, "arguments": {param: [value]}}]}]
            },
        },
        harness=harness,
    )
    renamed = 0
    for seed in range(6):
        variant = variant_of(transform, episode, seed=seed, fraction=1.0)
        out = variant.episode
        new = variant.mapping.tool(value) if transform.startswith("tool") else None
        if new is None:
            new = variant.mapping.parameter("ship", value)
        renamed += new != value
        assert out.messages[0]["content"] == f"Please take care of {value} for me."
        assert value in json.loads(out.messages[2]["content"]).values()
        assert out.messages[3]["content"] == f"Done: {value} is on its way."
        verify_variant(episode, out, variant.mapping)
    assert renamed


PATHS_HOOK = """
def complete(payload, config):
    missing = []
    for path in config["required_paths"]:
        value = payload["arguments"]
        for step in path.split("."):
            value = value.get(step) if isinstance(value, dict) else None
        if value is None:
            missing.append(path)
    if missing:
        return {"ok": False, "feedback": config["message"] + ": " + ", ".join(missing)}
    return {"ok": True}
"""


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_hook_that_requires_paths_into_a_parameter_follows_its_rename(name):
    """Insurance claims: a hook requires `claimant.name` and `claimant.policy.number` in every
    `file_claim` call and says so in its message. Renamed, `claimant` takes its paths and the
    hook's text along: the variant's hook passes a complete call under the new name (before,
    it blocked every correct call) and still blocks an incomplete one."""
    claimant = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "policy": {"type": "object", "properties": {"number": {"type": "string"}}},
        },
    }
    harness = Harness.from_dict(
        {
            "name": "claims",
            "hooks": [
                {
                    "name": "claim_complete",
                    "event": "tool_call",
                    "function": "complete",
                    "config": {
                        "required_paths": ["claimant.name", "claimant.policy.number"],
                        "message": "Ask for the claimant.policy.number first",
                    },
                }
            ],
            "hooks_source": PATHS_HOOK,
            "tools": [
                tool_of(
                    "file_claim",
                    "Files a claim.",
                    {"claimant": claimant, "loss_date": {"type": "string"}},
                )
            ],
        },
        trust_hooks=True,
    )
    renamed = 0
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameter("file_claim", "claimant")
        renamed += new != "claimant"
        hook = variant.episode.harness.hooks[0]
        assert hook.config["required_paths"] == [f"{new}.name", f"{new}.policy.number"]
        check = variant.episode.harness.hook_functions()["claim_complete"]
        whole = {new: {"name": "Ada", "policy": {"number": "P-9"}}}
        assert check({"tool_name": "file_claim", "arguments": whole}, hook.config)["ok"]
        blocked = check(
            {"tool_name": "file_claim", "arguments": {new: {"name": "Ada"}}}, hook.config
        )
        assert blocked == {
            "ok": False,
            "feedback": f"Ask for the {new}.policy.number first: {new}.policy.number",
        }
    assert renamed


def test_a_loaded_skill_reads_as_the_variants_skill_whatever_data_the_calls_pass():
    """Recruiting: the candidate's username is literally `schedule_interview`, a tool's name,
    and the skill the agent loads names that tool. The username is data wherever the
    conversation repeats it; the loaded body is the harness's text, renamed whole as the
    variant's skill is (rows read the old tool name in the body, beside a renamed one). A value
    glued into a name (`entretien` in `planification-entretien`) is no value of its own."""
    body = (
        "# Planification\n\nLook the candidate up with `lookup_user`, then call "
        "`schedule_interview`; the `planification-entretien` notes say how.\n"
    )
    harness = Harness.from_dict(
        {
            "name": "recrutement",
            "skills": [{"id": "planification-entretien", "description": "Plans.", "content": body}],
            "tools": [
                tool_of("schedule_interview", "Plans an interview.", strings("candidate")),
                tool_of("lookup_user", "Finds a user.", strings("username")),
            ],
        }
    )
    messages = [
        {"role": "user", "content": "My username is schedule_interview; plan my entretien."},
        assistant(call("load_skill", {"name": "planification-entretien"}, "c0")),
        {"role": "tool", "tool_call_id": "c0", "content": body},
        assistant(call("lookup_user", {"username": "schedule_interview"}, "c1")),
        {"role": "tool", "tool_call_id": "c1", "content": '{"username": "schedule_interview"}'},
        assistant(call("schedule_interview", {"candidate": "entretien"}, "c2")),
        {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        {"role": "assistant", "content": "Booked, as planification-entretien says."},
    ]
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": messages,
            "gold": {
                "turns": [
                    {
                        "at": 3,
                        "calls": [
                            {
                                "name": "lookup_user",
                                "arguments": {"username": ["schedule_interview"]},
                            }
                        ],
                    },
                    {
                        "at": 5,
                        "calls": [
                            {
                                "name": "schedule_interview",
                                "arguments": {"candidate": ["entretien"]},
                            }
                        ],
                    },
                ]
            },
        },
        harness=harness,
    )
    for transform in ("tool_name_mask", "skill_id_mask"):
        moved = 0
        for seed in range(4):
            variant = variant_of(transform, episode, seed=seed)
            out = variant.episode
            skill = out.harness.skills[0]
            assert out.messages[2]["content"] == skill.content  # the body as the variant has it
            assert out.messages[0]["content"].startswith("My username is schedule_interview;")
            assert out.messages[4]["content"] == '{"username": "schedule_interview"}'
            verify_variant(episode, out, variant.mapping)
            moved += skill.content != body
            if transform == "skill_id_mask":  # the id moves whole in the reply
                assert out.messages[-1]["content"] == f"Booked, as {skill.id} says."
        assert moved, transform


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_paths_into_an_array_parameter_follow_its_rename(name):
    """Warehouse: a hook requires lot numbers at `packages[*].items[*]`, `packages.items` and
    `lines[*]`, indexes into array parameters (of objects, of strings). Renamed, each path takes
    the new name; a path to something the parameter does not hold stays as written."""
    packages = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "string"}}},
        },
    }
    harness = Harness.from_dict(
        {
            "name": "souko",
            "hooks": [
                {
                    "name": "lot_required",
                    "event": "tool_call",
                    "function": "lots",
                    "config": {
                        "item_paths": [
                            "packages[*].items[*]",
                            "packages.items",
                            "lines[*]",
                            "packages.weight",
                        ]
                    },
                }
            ],
            "hooks_source": "def lots(payload, config):\n    return {'ok': True}\n",
            "tools": [
                tool_of(
                    "create_shipment",
                    "Creates a shipment.",
                    {"packages": packages, "lines": {"type": "array", "items": {"type": "string"}}},
                )
            ],
        }
    )
    renamed = 0
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        p = variant.mapping.parameter("create_shipment", "packages")
        lines = variant.mapping.parameter("create_shipment", "lines")
        renamed += p != "packages"
        assert variant.episode.harness.hooks[0].config["item_paths"] == [
            f"{p}[*].items[*]",
            f"{p}.items",
            f"{lines}[*]",
            "packages.weight",  # no property of the parameter's items: no path into it
        ]
    assert renamed


CODE_NAMES_HOOK = """
def check_payment(payload, config):
    if payload["tool_name"] == "book_trip" and payload["arguments"].get("payment") == "boleto":
        return {"ok": False, "feedback": "boleto is not accepted"}
    return {"ok": True}
"""


@pytest.mark.parametrize(
    "name",
    ["parameter_name_paraphrase", "parameter_name_mask", "tool_name_paraphrase", "tool_name_mask"],
)
def test_a_name_the_hook_code_writes_keeps_its_name(name):
    """Travel: hooks.py compares `tool_name == "book_trip"` and reads `arguments.get("payment")`.
    Renamed, either would leave the variant's hook looking for a name no call has: it would
    pass the boleto the recorded conversation shows it blocking. Such names stay; the others
    still move."""
    harness = Harness.from_dict(
        {
            "name": "viagem",
            "hooks": [{"name": "payment_rules", "event": "tool_call", "function": "check_payment"}],
            "hooks_source": CODE_NAMES_HOOK,
            "tools": [
                tool_of("book_trip", "Books a trip.", strings("payment", "traveller_name")),
                tool_of("search_trips", "Finds trips.", strings("destination_city")),
            ],
        },
        trust_hooks=True,
    )
    moved = set()
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        renamed = variant.mapping.renamed()
        moved |= set(renamed["tools"]) | set(renamed["parameters"])
        assert "book_trip" not in renamed["tools"]
        assert "book_trip.payment" not in renamed["parameters"]
        check = variant.episode.harness.hook_functions()["payment_rules"]
        tool = variant.mapping.tool("book_trip")
        blocked = check({"tool_name": tool, "arguments": {"payment": "boleto"}}, {})
        assert not blocked["ok"]
    assert moved - {"book_trip", "book_trip.payment"}, moved


def test_what_the_gold_requires_a_reply_to_say_stays_in_the_reply():
    """Recruiting: the gold requires the final reply to contain "remote_only", also a
    parameter's name. Renamed in the reply as a mention, the recorded reply failed its own gold
    and every such variant was rejected (`recorded_turn`)."""
    harness = Harness.from_dict(
        {
            "name": "recrutement",
            "tools": [
                tool_of(
                    "search_jobs",
                    "Finds jobs.",
                    {"remote_only": {"type": "boolean"}, **strings("job_title")},
                )
            ],
        }
    )
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": [
                {"role": "user", "content": "Remote data jobs, please."},
                assistant(call("search_jobs", {"remote_only": True, "job_title": "data"})),
                {"role": "tool", "tool_call_id": "c1", "content": '{"jobs": 3}'},
                {"role": "assistant", "content": "3 jobs, searched with remote_only on."},
            ],
            "gold": {
                "turns": [
                    {
                        "at": 1,
                        "calls": [
                            {
                                "name": "search_jobs",
                                "arguments": {"remote_only": [True], "job_title": ["data"]},
                            }
                        ],
                    },
                    {"at": 3, "no_call": True, "reply": {"contains": ["remote_only"]}},
                ]
            },
        },
        harness=harness,
    )
    moved = 0
    for seed in range(6):
        variant = variant_of("parameter_name_mask", episode, seed=seed, fraction=1.0)
        moved += variant.mapping.parameter("search_jobs", "remote_only") != "remote_only"
        assert variant.episode.messages[3]["content"] == "3 jobs, searched with remote_only on."
        verify_variant(episode, variant.episode, variant.mapping)
    assert moved


def test_a_hook_option_named_like_a_parameter_and_a_value_holds_nothing_back():
    """The same `plan`, a parameter and a value `search` takes, now named by a hook's own option
    (`plan: strict`): an option's name never moves with a parameter, so it takes no value along
    and the parameter may be renamed."""
    harness = _ticket_caps_harness({"plan": "strict"})
    moved = set()
    for seed in range(8):
        variant = variant_of("parameter_name_paraphrase", greeting(harness), seed=seed)
        moved |= set(variant.mapping.renamed()["parameters"])
        assert variant.episode.harness.hooks[0].config == {"plan": "strict"}
    assert "book.plan" in moved, moved


def travel_harness(language: str) -> Harness:
    """One travel agent's harness, written in Portuguese or in English (same tools), or in
    Japanese or Chinese with English (ASCII) names, as such harnesses name their tools."""
    if language in ("ja", "zh"):
        ja = language == "ja"
        persona = (
            "あなたは旅行代理店の担当者です。お客様の航空券とホテルの予約を手伝ってください。"
            if ja
            else "你是旅行社的客服。帮助客户预订机票和酒店。"
        )
        tools = [
            tool_of(
                "search_flights",
                "指定した日付の航空券を検索します。" if ja else "按日期搜索航班。",
                strings("departure_date", "city"),
            ),
            tool_of(
                "book_hotel",
                "ホテルを予約します。" if ja else "预订酒店。",
                strings("hotel_name", "total_nights"),
            ),
        ]
        skills = [
            ("hotel-booking", "お客様のホテルを予約する手順。" if ja else "为客户预订酒店的步骤。")
        ]
    elif language == "pt":
        persona = "Você é um agente de viagens. Ajude o cliente a reservar voos e hotéis."
        tools = [
            tool_of("buscar_voos", "Busca voos na data pedida.", strings("data_partida", "cidade")),
            tool_of("reservar_hotel", "Reserva um hotel.", strings("nome_hotel", "total_noites")),
        ]
        skills = [("reserva-hotel", "Reserva de um hotel para o cliente.")]
    else:
        persona = "You are a travel agent. Help the customer book flights and hotels."
        tools = [
            tool_of(
                "search_flights", "Finds flights on a date.", strings("departure_date", "city")
            ),
            tool_of("book_hotel", "Books a hotel.", strings("hotel_name", "total_nights")),
        ]
        skills = [("hotel-booking", "Books a hotel for the customer.")]
    return Harness.from_dict(
        {
            "name": "travel",
            "prompt": {"text": {"persona": persona}},
            "tools": tools,
            "skills": [{"id": i, "description": d, "content": d} for i, d in skills],
        }
    )


@pytest.mark.parametrize("language", ["pt", "en", "ja"])
def test_english_synonyms_reword_only_the_names_of_an_english_harness(language):
    """Portuguese `data_partida` (departure date) had become `dataset_partida`, `total_noites`
    `grand_total_noites`, `reservar_hotel` `reservar_lodging`: English synonyms of words the
    two languages spell alike, a wrong sense in a name of two languages. A harness that does
    not read English keeps its names' words (reordered, restyled or suffixed); an English one
    still has them reworded."""
    harness = travel_harness(language)
    names = [*harness.names, *(p for tool in harness.tools for p in tool.properties)]
    own = {w.lower() for name in names for w in name_words(name)}
    suffixes = {
        w
        for table in (ts.TOOL_NAME_SUFFIXES, ts.PARAMETER_NAME_SUFFIXES, ids.SKILL_SUFFIXES)
        for part in table.values()
        for suffix in part
        for w in suffix.split("_")
        if w
    }
    new_words = set()
    for name in ("tool_name_paraphrase", "parameter_name_paraphrase", "skill_id_synonym"):
        for seed in range(6):
            renamed = variant_of(name, greeting(harness), seed=seed).mapping.renamed()
            for kind in ("tools", "parameters", "skills"):
                for new in renamed[kind].values():
                    new_words |= {w.lower() for w in name_words(new)} - own - suffixes
    # A Japanese harness names its tools in English words (ASCII): the tables reword them.
    assert bool(new_words) == (language in ("en", "ja")), new_words


@pytest.mark.parametrize("name", ["tool_name_paraphrase", "parameter_name_paraphrase"])
def test_names_that_take_a_suffix_take_the_variants_one_suffix(name):
    """A Spanish travel harness's tools had become `buscar_vuelos_fn`, `buscar_hoteles_tool`
    and `calcular_precio_total_api` in one variant: a harness whose words no table rewords
    takes suffixes, and one operator writes one suffix on every name that needs one."""
    harness = travel_harness("pt")
    suffixes = {
        w
        for part in (ts.TOOL_NAME_SUFFIXES, ts.PARAMETER_NAME_SUFFIXES)
        for s in part.values()
        for w in s
    }
    seen = 0
    for seed in range(12):
        renamed = variant_of(name, greeting(harness), seed=seed).mapping.renamed()
        kind = "tools" if name.startswith("tool") else "parameters"
        used = {
            w.lower()
            for old, new in renamed[kind].items()
            for w in name_words(new)[len(name_words(old.split(".")[-1])) :]
        } & suffixes
        assert len(used) <= 1, renamed[kind]
        seen += bool(used)
    assert seen


@pytest.mark.parametrize("language", ["ja", "zh"])
def test_a_harness_written_in_han_or_kana_alone_is_no_english_one(language):
    """A Japanese harness (its texts in kana and Han, its names ASCII) has no English function
    word; it had been read as English by default, and got English distractor tools (whose
    refusal keywords cannot read a Japanese request: タイマー asked for a set_timer it was
    offered) and English hook feedback sentences around Japanese feedback."""
    harness = travel_harness(language)
    assert not english_harness(harness)
    assert english_names(harness)
    assert table_languages(harness) == (frozenset({"zh"}) if language == "zh" else frozenset())
    for seed in range(10):
        variant = variant_of("distractor_tools", greeting(harness), seed=seed)
        assert variant.episode.harness.tools == harness.tools


def one_skill_harness(skill_id: str, content: str, tool: dict) -> Harness:
    """A harness of one skill (its body ``content``) and one tool."""
    return Harness.from_dict(
        {
            "name": "one-skill",
            "skills": [{"id": skill_id, "description": "How to do it.", "content": content}],
            "tools": [tool],
        }
    )


SCALE_RUNBOOK = """# Scale by hand

If the tool is down, apply this manifest:

```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: checkout
  namespace: prod
spec:
  replicas: 12
```

or patch it: `kubectl patch deployment checkout -n prod -p '{"spec": {"replicas": 12}}'`

Otherwise call `scale_deployment` with `namespace` and `replicas`:

```json
{"namespace": "prod", "deployment": "checkout", "replicas": 12}
```

As a call: `scale_deployment(namespace="prod", deployment="checkout", replicas=12)`, or
`{"name": "scale_deployment", "arguments": {"namespace": "prod", "replicas": 12}}`.
"""


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_keys_of_other_data_in_code_are_not_parameters(name):
    """Devops: a runbook's Kubernetes manifest and `kubectl patch` JSON have keys `namespace`
    and `replicas`, also parameters of `scale_deployment`. Renamed (`replicasArg: 12`), the
    manifest and the command no longer work. Keys in code are the parameters' where the code
    names the tool, or where every key it has is a parameter (an arguments object); the
    runbook's calls and arguments still move."""
    harness = one_skill_harness(
        "manual-scale",
        SCALE_RUNBOOK,
        tool_of(
            "scale_deployment",
            "Sets the replica count of a deployment.",
            {**strings("namespace", "deployment"), "replicas": {"type": "integer"}},
        ),
    )
    for seed in range(4):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = {
            p: variant.mapping.parameter("scale_deployment", p) for p in ("namespace", "replicas")
        }
        assert new["namespace"] != "namespace" and new["replicas"] != "replicas"
        body = variant.episode.harness.skills[0].content
        manifest = SCALE_RUNBOOK[SCALE_RUNBOOK.index("```yaml") : SCALE_RUNBOOK.index("```\n\nor")]
        assert manifest in body
        assert """-p '{"spec": {"replicas": 12}}'`""" in body
        ns, rep = new["namespace"], new["replicas"]
        assert f"with `{ns}` and `{rep}`:" in body
        assert f'{{"{ns}": "prod", ' in body and f', "{rep}": 12}}\n```' in body
        assert f'`scale_deployment({ns}="prod", ' in body
        assert f'"arguments": {{"{ns}": "prod", "{rep}": 12}}}}`' in body


STATUS_RUNBOOK = """# Check a rollout

The live object looks like this:

```yaml
kind: Deployment
metadata:
  namespace: prod
status:
  replicas: 3
```

Call `status(namespace="prod", deployment="checkout")`, or
```json
{"name": "status", "arguments": {"namespace": "prod", "deployment": "checkout"}}
```
"""


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_key_spelt_like_a_plain_word_tool_does_not_make_a_manifest_arguments(name):
    """A DevOps harness has a tool `status`; a manifest's `status:` key made the whole manifest
    read as tool arguments, and its `namespace:` became `namespaceValue:` (12 of 12 rows that
    loaded the skill). A plain-word tool is named in code as a call names it."""
    harness = one_skill_harness(
        "rollout-check",
        STATUS_RUNBOOK,
        tool_of("status", "Shows a deployment's rollout.", strings("namespace", "deployment")),
    )
    manifest = STATUS_RUNBOOK[STATUS_RUNBOOK.index("```yaml") : STATUS_RUNBOOK.index("```\n\nCall")]
    for seed in range(4):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        ns = variant.mapping.parameter("status", "namespace")
        assert ns != "namespace"
        body = variant.episode.harness.skills[0].content
        assert manifest in body
        assert f'status({ns}="prod", ' in body
        assert f'"arguments": {{"{ns}": "prod", ' in body


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_json_schema_in_a_skill_keeps_its_keywords(name):
    """A claims tool takes `type`, `format` and `items`; a skill showing the JSON Schema of a
    field (`{"type": "string", "format": "date"}`) had its keywords renamed with them
    (`"outputFormat": "date"`), since every key was some tool's property."""
    harness = one_skill_harness(
        "field-setup",
        'A date field is `{"type": "string", "format": "date"}`, a list '
        '`{"type": "array", "items": {"type": "string"}}`. Call '
        '`add_field(type="date", format="iso")`. A date field is noted `type="date"`.',
        tool_of("add_field", "Adds a form field.", strings("type", "format", "items")),
    )
    for seed in range(4):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        renames = variant.mapping.parameters["add_field"]
        body = variant.episode.harness.skills[0].content
        assert '`{"type": "string", "format": "date"}`' in body, body
        assert '`{"type": "array", "items": {"type": "string"}}`' in body, body
        assert f'`add_field({renames["type"]}="date", {renames["format"]}="iso")`' in body, body
        # a keyword argument alone is the call's, not a schema's (a French clinic's skill kept
        # `type="premiere_consultation"` while the schema renamed it)
        assert f'noted `{renames["type"]}="date"`.' in body, body


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_an_arguments_example_with_a_free_keyed_map_is_renamed_whole(name):
    """`{"claim_id": ..., "properties": {"adjuster": "Kim"}}`: the map's own key (`adjuster`)
    is no parameter, which made the example read as other data, and it came out half renamed
    (`claim_id` moved, `properties` did not)."""
    notes = {"type": "object", "additionalProperties": {"type": "string"}}
    harness = one_skill_harness(
        "claim-notes",
        'Send `{"claim_id": "CLM-1", "properties": {"adjuster": "Kim"}}`.\n\n'
        # fenced too (a coding agent's skill: `{"cwd": ..., "env": {"CI": "1"}}` was kept whole)
        '```json\n{"claim_id": "CLM-2", "properties": {"adjuster": "Lee"}}\n```\n',
        tool_of(
            "annotate_claim", "Annotates a claim.", {**strings("claim_id"), "properties": notes}
        ),
    )
    for seed in range(4):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        renames = variant.mapping.parameters["annotate_claim"]
        body = variant.episode.harness.skills[0].content
        claim, props = renames.get("claim_id", "claim_id"), renames.get("properties", "properties")
        assert f'`{{"{claim}": "CLM-1", "{props}": {{"adjuster": "Kim"}}}}`' in body, body
        assert f'{{"{claim}": "CLM-2", "{props}": {{"adjuster": "Lee"}}}}\n```' in body, body


BILLING_GUIDE = """# Nightly billing

Export the open invoices:

```sql
SELECT invoice_id, patient_id, status FROM invoices
WHERE status = 'open' ORDER BY invoice_id;
```

```python
rows = [{"invoice_id": r["invoice_id"], "payer": r["payer"]} for r in db.query("invoices")]
```

Then call `record_payment` with `invoice_id`:

```json
{"invoice_id": "INV-7", "amount": 20}
```
"""


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_other_systems_code_in_a_skill_keeps_its_names(name):
    """A clinic's billing skill holds a query of its own database and a script reading its rows,
    whose column and field names are also `record_payment`'s parameters: `SELECT invoice_id,
    patient_id, status` had become `SELECT invoice-id, patient-id, status ... WHERE
    current-status = 'open'`, half renamed and no longer SQL. A fenced query (```sql), and code
    that names no tool with the parameter and has keys no tool has, stay as written; the
    skill's own mention and its arguments example still move."""
    harness = one_skill_harness(
        "nightly-billing",
        BILLING_GUIDE,
        tool_of(
            "record_payment",
            "Records a payment on an invoice.",
            {**strings("invoice_id", "status", "patient_id"), "amount": {"type": "number"}},
        ),
    )
    moved = 0
    for seed in range(4):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameter("record_payment", "invoice_id")
        body = variant.episode.harness.skills[0].content
        for block in ("```sql", "```python"):
            start = BILLING_GUIDE.index(block)
            assert BILLING_GUIDE[start : BILLING_GUIDE.index("```\n", start + 3)] in body
        if new != "invoice_id":
            moved += 1
            assert f"with `{new}`:" in body and f'{{"{new}": "INV-7"' in body
    assert moved


LATENCY_GUIDE = """# Checkout latency

Ask the metrics store for the slow requests of one service:

```{language}
{query}
```

Then call `page_owner` with `namespace` and `service`:

```json
{{"namespace": "payments", "service": "checkout"}}
```
"""


@pytest.mark.parametrize(
    ("language", "query"),
    [
        (
            "promql",
            'histogram_quantile(0.99, sum(rate(http_seconds_bucket{namespace="payments", '
            'service="checkout"}[5m])) by (le))',
        ),
        ("logql", '{namespace="payments", service="checkout"} |= "timeout"'),
        ("graphql", 'query { pods(namespace: "payments", service: "checkout") { name } }'),
        ("PromQL", 'up{namespace="payments", service="checkout"} == 0'),
    ],
)
@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_query_in_any_language_but_a_tool_calls_keeps_its_names(name, language, query):
    """A DevOps skill's PromQL query matches the labels `namespace` and `service`, which are
    also the paging tool's parameters: every key in it was a tool property, so it was read as
    tool arguments and renamed (`{namespace_input="payments", service_input="checkout"}`, in 52
    of 125 variants), a query of labels that do not exist that contradicts the gold. Only a
    block in a language that tool calls are written in (JSON, YAML, Python, ...) may hold
    arguments; any other language's code is that system's, kept whole."""
    harness = one_skill_harness(
        "checkout-latency",
        LATENCY_GUIDE.format(language=language, query=query),
        tool_of("page_owner", "Pages the owner of a service.", strings("namespace", "service")),
    )
    moved = 0
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameter("page_owner", "namespace")
        body = variant.episode.harness.skills[0].content
        assert f"```{language}\n{query}\n```" in body
        if new != "namespace":
            moved += 1
            assert f"with `{new}` and" in body and f'{{"{new}": "payments"' in body
    assert moved


@pytest.mark.parametrize("language", ["pt", "en"])
def test_distractors_only_beside_tools_in_their_language(language):
    """The pool is English and its keywords read English and Chinese: an Italian reminder
    harness got `schedule_reminder` beside its own `imposta_promemoria` (26 of 200 variants),
    and every English distractor among Portuguese tools is told apart by its language alone. A
    harness that does not read English gets none; an English one still does."""
    harness = travel_harness(language)
    added = []
    for seed in range(10):
        params = DistractorTools().sample_params(greeting(harness), random.Random(seed))
        added += params["tools"]
    assert bool(added) == (language == "en")


def test_no_distractors_beside_a_japanese_harness():
    """The keywords that refuse a request for a drawn distractor read English and Chinese, not
    Japanese (リマインド, メール, 翻訳): a ryokan concierge's Japanese harness, which read as English
    for the one English sentence of its persona, got `schedule_reminder` beside a guest asking
    チェックインの前日にリマインドしてもらえますか, whose gold refuses for want of such a tool.
    A harness written in Japanese gets none, as one in another script does."""
    harness = Harness.from_dict(
        {
            "name": "ryokan",
            "prompt": {
                "text": {
                    "persona": "あなたは旅館の予約コンシェルジュです。丁寧な敬語で答えてください。"
                    " You also answer guests who write in English."
                }
            },
            "skills": [
                {
                    "id": "booking-reply",
                    "description": "予約内容を確認して返信する。",
                    "content": "# 予約の返信\n\n`reserveRoom` の結果から日付と人数を伝えます。",
                }
            ],
            "tools": [
                tool_of(
                    "reserveRoom",
                    "部屋を予約します。",
                    {**strings("checkInDate"), "guestCount": {"type": "integer"}},
                )
            ],
        }
    )
    for seed in range(10):
        params = DistractorTools().sample_params(greeting(harness), random.Random(seed))
        assert params["tools"] == []


@pytest.mark.parametrize(
    ("name", "old", "new_of"),
    [
        ("tool_name_paraphrase", "search_policy", lambda v: v.mapping.tool("search_policy")),
        ("skill_id_mask", "claim-opening", lambda v: v.mapping.skill("claim-opening")),
        (
            "parameter_name_mask",
            "policy_code",
            lambda v: v.mapping.parameter("search_policy", "policy_code"),
        ),
    ],
)
def test_names_in_the_prompts_own_wording_move(name, old, new_of):
    """An author's own headings and instructions (`prompt.options.phrases`) name a tool, a skill
    and a parameter: left as written, the system prompt sends the model to names the variant no
    longer has."""
    harness = Harness.from_dict(
        {
            "name": "claims",
            "prompt": {
                "text": {"persona": "You handle insurance claims."},
                "options": {
                    "headings": {"tools": "Tools (start with `search_policy`)"},
                    "phrases": {
                        "tools_intro": "Always start from `search_policy` with `policy_code`.",
                        "skills_intro": "For a new claim load `claim-opening` first.",
                    },
                },
            },
            "skills": [{"id": "claim-opening", "description": "Opens a claim.", "content": "x"}],
            "tools": [tool_of("search_policy", "Finds a policy.", strings("policy_code"))],
        }
    )
    for seed in range(3):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = new_of(variant)
        assert new != old
        prompt = render_messages(variant.episode)[0]["content"]
        assert f"`{new}`" in prompt
        assert f"`{old}`" not in prompt


PAYOUT_HOOK = """
def check_payout(payload, config):
    field = config["amount_field"]
    amount = payload["arguments"].get(field, 0)
    if amount > config["limit"]:
        return {"ok": False, "feedback": f"{field} {amount} is over the limit of {config['limit']}."}
    return {"ok": True}
"""


# A hook whose own sentence uses the word again ("lower the amount"): that word is the hook's,
# and the variant's hook still writes it.
PAYOUT_HOOK_REPEATING = PAYOUT_HOOK.replace(
    "is over the limit of {config['limit']}.", "is over the limit; lower the amount."
)


# A hook that writes the word in its own sentence and reads the argument by its config (an
# audit's Spanish refund desk: "El importe 899 supera el máximo de 500"): the word is its text,
# which the variant's hook prints as it is.
PAYOUT_HOOK_OWN_WORD = PAYOUT_HOOK.replace(
    'f"{field} {amount} is over the limit', 'f"The amount {amount} is over the limit'
)

# A hook that writes the configured name twice (an audit's Arabic telecom hook: "... صحّح
# {param} ..."): both are the config's, and the variant's hook writes the new name twice.
PAYOUT_HOOK_TWICE = PAYOUT_HOOK.replace(
    "is over the limit of {config['limit']}.", "is over the limit; lower {field}."
)

PAYOUT_FEEDBACK = {
    PAYOUT_HOOK_TWICE: "amount 26000 is over the limit; lower amount.",
    PAYOUT_HOOK: "amount 26000 is over the limit of 20000.",
    PAYOUT_HOOK_REPEATING: "amount 26000 is over the limit; lower the amount.",
    PAYOUT_HOOK_OWN_WORD: "The amount 26000 is over the limit of 20000.",
}


@pytest.mark.parametrize("source", list(PAYOUT_FEEDBACK))
@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_hook_feedback_names_a_plain_word_parameter_as_its_hook_now_does(name, source):
    """The payout hook reads the parameter it checks from its config (`amount_field: amount`)
    and writes it into its feedback ("amount 26000 is over the limit"). The config moves with
    the rename, so the variant's hook writes the new name: the recorded feedback must say what
    the variant's hook says, not a name the variant has no longer. A hook that writes the word
    in its own sentence writes it in the variant too."""
    harness = Harness.from_dict(
        {
            "name": "claims",
            "hooks": [
                {
                    "name": "payout_limit",
                    "event": "tool_call",
                    "function": "check_payout",
                    "config": {"amount_field": "amount", "limit": 20000},
                }
            ],
            "hooks_source": source,
            "tools": [
                tool_of(
                    "pay_claim",
                    "Pays a claim.",
                    {"amount": {"type": "integer"}, **strings("claim_id")},
                )
            ],
        },
        trust_hooks=True,
    )
    blocked = call("pay_claim", {"amount": 26000, "claim_id": "C-1"})
    retried = call("pay_claim", {"amount": 20000, "claim_id": "C-1"}, "c2")
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": [
                {"role": "user", "content": "Pay claim C-1: 26000, or what the limit allows."},
                assistant(blocked),
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "name": "hook.payout_limit",
                    "content": PAYOUT_FEEDBACK[source],
                },
                assistant(retried),
                {"role": "tool", "tool_call_id": "c2", "content": '{"paid": 20000}'},
                {"role": "assistant", "content": "Paid 20000, the limit."},
            ],
            "gold": {
                "turns": [
                    {
                        "at": 3,
                        "calls": [
                            {
                                "name": "pay_claim",
                                "arguments": {"amount": [20000], "claim_id": ["C-1"]},
                            }
                        ],
                    },
                    {"at": 5, "no_call": True},
                ]
            },
        },
        harness=harness,
    )
    for seed in range(4):
        variant = variant_of(name, episode, seed=seed, fraction=1.0)
        new = variant.mapping.parameter("pay_claim", "amount")
        assert new != "amount"
        hook = variant.episode.harness.hooks[0]
        said = variant.episode.harness.hook_functions()["payout_limit"](
            {"tool_name": "pay_claim", "arguments": {new: 26000, "claim_id": "C-1"}}, hook.config
        )
        assert variant.episode.messages[2]["content"] == said["feedback"]
        assert variant.episode.messages[0]["content"] == episode.messages[0]["content"]


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_configured_word_moves_in_the_feedback_never_in_its_wrapper(name):
    """A hook configured to check `reason` writes its feedback in the json:guard wrapper, whose
    key is "reason" too: the word moves in the core feedback (the variant's hook writes the new
    name there), and the wrapper keeps its key, or the message no longer parses as its declared
    format."""
    harness = Harness.from_dict(
        {
            "name": "delivery",
            "hooks": [
                {
                    "name": "reason_check",
                    "event": "tool_call",
                    "function": "check_reason",
                    "config": {"field": "reason", "feedback_format": "json:guard"},
                }
            ],
            "hooks_source": "def check_reason(payload, config):\n    return {'ok': True}\n",
            "tools": [tool_of("issue_refund", "Refunds.", strings("reason", "order_id"))],
        },
        trust_hooks=True,
    )
    wrapped = format_feedback("reason_check", "reason 'late' is not allowed", "json", "guard")
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": [
                {"role": "user", "content": "Refund order 7, it came late."},
                assistant(call("issue_refund", {"reason": "late", "order_id": "7"})),
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "name": "hook.reason_check",
                    "content": wrapped,
                },
                assistant(call("issue_refund", {"reason": "delay", "order_id": "7"}, "c2")),
            ],
            "gold": {
                "at": 3,
                "calls": [
                    {"name": "issue_refund", "arguments": {"reason": ["delay"], "order_id": ["7"]}}
                ],
            },
        },
        harness=harness,
    )
    moved = 0
    for seed in range(6):
        variant = variant_of(name, episode, seed=seed, fraction=1.0)
        new = variant.mapping.parameter("issue_refund", "reason")
        parsed = parse_feedback(
            variant.episode.messages[2]["content"], "json:guard", hook="reason_check"
        )
        assert parsed.feedback == f"{new} 'late' is not allowed"
        moved += new != "reason"
    assert moved


TRANSFER_SCHEMA = {
    "type": "object",
    "properties": {
        "iban": {"type": "string"},
        "card_number": {"type": "string"},
        "card_id": {"type": "string"},
        "amount": {"type": "number"},
        "bic": {"type": "string"},
        "kind": {"type": "string", "enum": ["SEPA", "ABROAD"]},
        "execution_date": {"type": "string"},
        "purpose": {"type": "string"},
    },
    "required": ["amount", "kind"],
    "anyOf": [{"required": ["iban"]}, {"required": ["card_number"]}, {"required": ["card_id"]}],
    "dependentRequired": {"execution_date": ["purpose"]},
    "if": {"properties": {"kind": {"const": "ABROAD"}}, "required": ["kind"]},
    "then": {"required": ["bic"]},
    "oneOf": [{"not": {"required": ["card_number", "card_id"]}}],
}


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_rename_reaches_every_keyword_that_names_the_objects_properties(name):
    """A bank's transfer tool lists its properties beyond `properties` and `required`: in
    `anyOf` branches, `dependentRequired`, `if`/`then`, `oneOf`/`not`. Left as written, no call
    could satisfy the `anyOf` (it names properties the variant's tool no longer has) and
    "ABROAD needs a bic" would say nothing: every call valid for the source must be valid for the
    variant, renamed, and every invalid one invalid."""
    harness = Harness.from_dict(
        {
            "name": "bank",
            "tools": [
                {"name": "transfer", "description": "Sends money.", "parameters": TRANSFER_SCHEMA}
            ],
        }
    )
    calls = [
        {"iban": "DE1", "amount": 5, "kind": "SEPA"},
        {"card_id": "K-1", "amount": 5, "kind": "SEPA"},
        {"iban": "CH9", "amount": 5, "kind": "ABROAD", "bic": "UBSW"},
        {"iban": "CH9", "amount": 5, "kind": "ABROAD"},  # no bic
        {"amount": 5, "kind": "SEPA"},  # no account
        {"iban": "DE1", "amount": 5, "kind": "SEPA", "execution_date": "2027-01-02"},  # no purpose
        {"card_number": "4", "card_id": "K-1", "amount": 5, "kind": "SEPA"},  # both cards
    ]
    for seed in range(3):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        schema = variant.episode.harness.tool("transfer").parameters
        new = variant.mapping.parameters["transfer"]
        assert len(new) == len(TRANSFER_SCHEMA["properties"])
        for args in calls:
            renamed = {new.get(k, k): v for k, v in args.items()}
            assert jsonschema.Draft202012Validator(schema).is_valid(renamed) == (
                jsonschema.Draft202012Validator(TRANSFER_SCHEMA).is_valid(args)
            ), (args, schema)


ADDRESS_SCHEMA = {
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            "required": ["street", "city"],
        }
    },
    "properties": {
        "new_address": {
            "allOf": [{"$ref": "#/$defs/address"}],
            "properties": {"valid_from": {"type": "string"}},
        },
        "delivery": {
            "type": "object",
            "properties": {"kind": {"type": "string"}},
            "oneOf": [{"properties": {"email": {"type": "string"}}, "required": ["email"]}],
        },
        "note": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
}


def test_spelling_never_closes_an_object_that_takes_keys_from_elsewhere():
    """`new_address` takes `street` and `city` through `allOf`/`$ref`, `delivery` its `email`
    through `oneOf`: closed with "additionalProperties": false, each refuses a call its own
    schema requires, whatever the episode's calls use. A plain object (`note`) still closes."""
    harness = Harness.from_dict(
        {
            "name": "post",
            "tools": [{"name": "move", "description": "Moves.", "parameters": ADDRESS_SCHEMA}],
        }
    )
    valid = {
        "new_address": {"street": "Königstraße 12", "city": "Stuttgart", "valid_from": "2027"},
        "delivery": {"kind": "email", "email": "a@b.de"},
        "note": {"text": "hi"},
    }
    assert jsonschema.Draft202012Validator(ADDRESS_SCHEMA).is_valid(valid)
    closed = set()
    for seed in range(30):
        params = ToolSchemaSpelling(rate=1.0).sample_params(greeting(harness), random.Random(seed))
        for at, change in params["edits"].get("move", {}).items():
            if change.get("additionalProperties") == "close":
                closed.add(at)
        schema = ToolSchemaSpelling(rate=1.0).apply(greeting(harness), params).harness.tools[0]
        assert jsonschema.Draft202012Validator(schema.parameters).is_valid(valid)
    assert closed == {"", "/properties/note"}, closed  # the root declares its keys too


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_title_made_from_a_parameter_name_moves_with_it(name):
    """Pydantic titles each property after its name (``created_gte`` -> "Created Gte"): left,
    a masked name is spelt out in its title. A title of the property's own words stays."""
    parameters = {
        "type": "object",
        "title": "ListChargesArgs",
        "properties": {
            "created_gte": {"type": "integer", "title": "Created Gte"},
            "customer": {"type": "string", "title": "Customer"},
            "currency_code": {"type": "string", "title": "ISO 4217 code"},
        },
    }
    harness = Harness.from_dict(
        {
            "name": "charges",
            "tools": [{"name": "list_charges", "description": "Lists.", "parameters": parameters}],
        }
    )
    renamed = set()
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameters.get("list_charges", {})
        properties = variant.episode.harness.tool("list_charges").properties
        for old, title in (("created_gte", "Created Gte"), ("customer", "Customer")):
            if old in new:
                renamed.add(old)
                assert properties[new[old]]["title"] == new[old].replace("_", " ").title()
                assert properties[new[old]]["title"] != title
        kept = properties[new.get("currency_code", "currency_code")]
        assert kept["title"] == "ISO 4217 code"
    assert renamed


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_example_and_default_arguments_are_renamed_with_the_parameters(name):
    """``examples`` (and an object ``default``, ``const`` or ``enum``) of the arguments are
    instances: their keys are the parameters' names, and move with them, or the tools would show
    the model a sample call its own schema refuses (``additionalProperties: false``)."""
    sample = {"account_number": "ACC-1", "query": "rent", "max_results": 5}
    parameters = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "account_number": {"type": "string"},
            "query": {"type": "string"},
            "max_results": {"type": "integer"},
        },
        "examples": [sample, "not an object"],
        "default": {"max_results": 5},
    }
    harness = Harness.from_dict(
        {
            "name": "bank",
            "tools": [
                {"name": "search_payments", "description": "Finds.", "parameters": parameters}
            ],
        }
    )
    renamed = 0
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameters.get("search_payments", {})
        schema = variant.episode.harness.tool("search_payments").parameters
        validator = jsonschema.Draft202012Validator(schema)
        assert validator.is_valid(schema["examples"][0]), schema["examples"]
        assert validator.is_valid(schema["default"])
        assert schema["examples"][0] == {new.get(k, k): v for k, v in sample.items()}
        assert schema["examples"][1] == "not an object"
        renamed += bool(new)
    assert renamed


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_names_a_definition_applied_by_reference_constrains_stay(name):
    """``allOf: [{"$ref": "#/$defs/paging"}]`` applies the definition to the arguments
    themselves: it bounds ``limit`` and makes ``page`` need it, by name. Renamed in the
    properties alone, the variant would take ``cap=500`` that the original refuses; the
    definition may serve other objects, so its names stay and the others move."""
    parameters = {
        "type": "object",
        "$defs": {
            "paging": {
                "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 100}},
                "dependentRequired": {"page": ["limit"]},
            }
        },
        "allOf": [{"$ref": "#/$defs/paging"}],
        "properties": {
            "account_number": {"type": "string"},
            "limit": {"type": "integer"},
            "page": {"type": "integer"},
        },
    }
    harness = Harness.from_dict(
        {
            "name": "bank",
            "tools": [
                {"name": "search_payments", "description": "Finds.", "parameters": parameters}
            ],
        }
    )
    moved = set()
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameters.get("search_payments", {})
        assert not {"limit", "page"} & set(new), new
        moved |= set(new)
        schema = variant.episode.harness.tool("search_payments").parameters
        assert not jsonschema.Draft202012Validator(schema).is_valid({"limit": 500})
        assert not jsonschema.Draft202012Validator(schema).is_valid({"page": 2})
    assert moved == {"account_number"}


def test_a_percent_encoded_ref_to_a_renamed_property_follows_it():
    """A pointer writes brackets percent-encoded (``#/properties/created%5Bgte%5D``, as a URI
    fragment must): it names ``created[gte]`` and follows its rename like a plain one."""
    parameters = {
        "type": "object",
        "properties": {
            "created[gte]": {"type": "integer", "minimum": 0},
            "created[lte]": {"$ref": "#/properties/created%5Bgte%5D"},
        },
    }
    harness = Harness.from_dict(
        {
            "name": "charges",
            "tools": [{"name": "list_charges", "description": "Lists.", "parameters": parameters}],
        }
    )
    renamed = 0
    for seed in range(6):
        variant = variant_of("parameter_name_mask", greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameters.get("list_charges", {})
        schema = variant.episode.harness.tool("list_charges").parameters
        assert unresolved_reference(schema) is None, schema
        if "created[gte]" in new:
            renamed += 1
            validator = jsonschema.Draft202012Validator(schema)
            assert not validator.is_valid({new.get("created[lte]", "created[lte]"): -1})
    assert renamed


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_ref_to_a_renamed_property_follows_it_and_constrained_names_stay(name):
    """`first_rate` is `{"$ref": "#/properties/amount"}`: left pointing at the old name, the
    variant's schema does not resolve and every variant is rejected. A tool whose schema
    constrains its property names (`propertyNames: {pattern: ^[a-z_]+$}`) keeps them: a kebab or
    camelCase variant name would break the constraint the tool declares."""
    standing = {
        "type": "object",
        "properties": {
            "amount": {"type": "number", "maximum": 10000},
            "first_rate": {"$ref": "#/properties/amount"},
            "interval": {"type": "string", "enum": ["monthly", "yearly"]},
        },
        "required": ["amount", "interval"],
    }
    strict = {
        "type": "object",
        "propertyNames": {"pattern": "^[a-z_]+$"},
        "properties": {"reference": {"type": "string"}},
    }
    harness = Harness.from_dict(
        {
            "name": "bank",
            "tools": [
                {"name": "standing_order", "description": "Sets one up.", "parameters": standing},
                {"name": "lookup", "description": "Finds a payment.", "parameters": strict},
            ],
        }
    )
    args = {"amount": 50, "first_rate": 75, "interval": "monthly"}
    for seed in range(4):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameters.get("standing_order", {})
        assert set(new) == set(args)
        schema = variant.episode.harness.tool("standing_order").parameters
        renamed = {new[k]: v for k, v in args.items()}
        assert jsonschema.Draft202012Validator(schema).is_valid(renamed)
        too_much = {**renamed, new["first_rate"]: 20000}
        assert not jsonschema.Draft202012Validator(schema).is_valid(too_much)
        assert "lookup" not in variant.mapping.parameters


ANALYST_GUIDE = """# Top customers

Rank customers with `SELECT user_id, SUM(amount) AS revenue FROM sales.orders GROUP BY user_id`,
then `get_user_profile` with `user_id` for the first one. For yesterday, filter with
`date = CURRENT_DATE - 1`; for a period, pass `date` to `compare_periods`.

run_sql(query="SELECT order_id FROM sales.orders WHERE user_id = 1042", limit=20)

A call then looks like `run_sql(query="SELECT ...", limit=1)`.

If the hook answers "get_user_profile: user_id must be BETWEEN 1 AND 99999", check it.

```
SELECT `date`, SUM(cost) AS spend FROM marketing.spend GROUP BY `date`
```

```python
rows = run_sql(query='''
    SELECT user_id, date FROM analytics.events
''', limit=5)
```
"""


def harness_of(name: str, *tools: dict) -> Harness:
    """A harness of ``tools`` alone."""
    return Harness.from_dict({"name": name, "tools": list(tools)})


def conversation(harness: Harness, messages: list[dict], gold: dict, episode_id: str) -> Episode:
    """The episode ``episode_id`` of ``messages`` under ``harness`` (inline), judged by ``gold``."""
    return Episode.from_dict(
        {"id": episode_id, "harness": harness.to_dict(), "messages": messages, "gold": gold}
    )


def moved_parameter(name: str, episode: Episode, tool: str, parameter: str, seeds: int = 8):
    """(variant, new name) for each of ``seeds`` variants of ``episode`` under the name transform
    ``name`` (every parameter renamed) in which ``tool``'s ``parameter`` moved; at least one."""
    found = []
    for seed in range(seeds):
        variant = variant_of(name, episode, seed=seed, fraction=1.0)
        new = variant.mapping.parameter(tool, parameter)
        if new != parameter:
            found.append((variant, new))
    assert found, f"no variant moved {tool}.{parameter}"
    return found


def analyst_harness() -> Harness:
    return Harness.from_dict(
        {
            "name": "analyst",
            "skills": [
                {"id": "top-customers", "description": "Rank customers.", "content": ANALYST_GUIDE}
            ],
            "tools": [
                tool_of(
                    "run_sql", "Runs a query.", {**strings("query"), "limit": {"type": "integer"}}
                ),
                tool_of("get_user_profile", "A customer's profile.", strings("user_id")),
                tool_of("compare_periods", "Compares two periods.", strings("date")),
            ],
        }
    )


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_sql_in_a_skill_keeps_its_columns(name):
    """A data agent's skill writes SQL whose columns are spelled like the tools' parameters
    (`user_id` of `get_user_profile`, `date` of `compare_periods`): `SELECT user_id, ... GROUP BY
    user_id` in inline code, a written call's query string, a block of SQL with no language and
    a Python block's triple-quoted query had become `SELECT arg_npwp, ... GROUP BY arg_npwp`,
    columns no table has, contradicting the gold queries that run them as written. The SQL stays;
    the skill's own mentions and the call's keywords still move."""
    harness = analyst_harness()
    moved = set()
    for seed in range(8):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        body = variant.episode.harness.skills[0].content
        for sql_text in (
            "`SELECT user_id, SUM(amount) AS revenue FROM sales.orders GROUP BY user_id`",
            "`date = CURRENT_DATE - 1`",
            '"SELECT order_id FROM sales.orders WHERE user_id = 1042"',
            "SELECT `date`, SUM(cost) AS spend FROM marketing.spend GROUP BY `date`",
            "    SELECT user_id, date FROM analytics.events\n",
        ):
            assert sql_text in body, (sql_text, body)
        for tool, param, written in (
            ("get_user_profile", "user_id", "with `{}` for"),
            ("compare_periods", "date", "pass `{}` to"),
            ("run_sql", "query", "run_sql({}="),
            ("run_sql", "limit", ", {}=20)"),
            # a code span of a call whose query is elided ("SELECT ...") is the call's code
            ("run_sql", "limit", '`run_sql({q}="SELECT ...", {}=1)`'),
            # a quoted message that shouts a word SQL has too is no SQL
            ("get_user_profile", "user_id", '"get_user_profile: {} must be BETWEEN 1 AND 99999"'),
        ):
            new = variant.mapping.parameter(tool, param)
            query = variant.mapping.parameter("run_sql", "query")
            assert written.format(new, q=query) in body, (new, body)
            if new != param:
                moved.add(param)
    assert moved == {"user_id", "date", "query", "limit"}


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_more_statements_are_sql_and_a_sentence_selecting_from_the_list_is_not(name):
    """A notebook skill (an audit): quoted `CREATE TEMP TABLE ... AS SELECT user_id ...`,
    `EXPLAIN SELECT ...` and `WITH RECURSIVE ...` had their column renamed with `user_id`, since
    no statement was read there; and "Select a user_id from the list and try again.", a
    sentence, was read as SQL and kept the old name beside a renamed parameter."""
    guide = (
        "# Notebook\n\n"
        "```python\n"
        'run_sql(query="CREATE TEMP TABLE top AS SELECT user_id FROM sales.orders")\n'
        'run_sql(query="EXPLAIN SELECT user_id FROM sales.orders WHERE user_id = 7")\n'
        'run_sql(query="WITH RECURSIVE r(n) AS (SELECT user_id FROM t) SELECT n FROM r")\n'
        "```\n\n"
        'When none is found, tell the user: "Select a user_id from the list and try again."\n'
    )
    harness = Harness.from_dict(
        {
            **analyst_harness().to_dict(),
            "skills": [{"id": "notebook", "description": "Notebook SQL.", "content": guide}],
        }
    )
    moved = 0
    for seed in range(8):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameter("get_user_profile", "user_id")
        if new == "user_id":
            continue
        moved += 1
        body = variant.episode.harness.skills[0].content
        for statement in (
            "CREATE TEMP TABLE top AS SELECT user_id FROM sales.orders",
            "EXPLAIN SELECT user_id FROM sales.orders WHERE user_id = 7",
            "WITH RECURSIVE r(n) AS (SELECT user_id FROM t) SELECT n FROM r",
        ):
            assert statement in body, body
        assert f'"Select a {new} from the list and try again."' in body, body
    assert moved


@pytest.mark.parametrize(
    ("text", "sql"),
    [  # a recheck of the statements and sentences (an audit)
        ("explain (analyze, buffers) select customer_id from sales.orders", True),
        ("explain query plan select region from orders", True),
        ("select * from my.orders", True),
        ("SHOW COLUMNS FROM orders", True),
        ("create table top (id int)", True),
        ("select a y_column from them", False),
        ("select x_column from all columns", False),
        ("select the region from which the order came", False),
        ("Show columns with missing values", False),
        ("Show tables of revenue by region", False),
        ("create table of top customers by region", False),
        ("Create view for the dashboard", False),
    ],
)
def test_statements_and_sentences_are_told_apart(text, sql):
    from hsa.text.sql import written_in_sql

    assert written_in_sql(text) is sql


def sql_episode(harness: Harness) -> Episode:
    """A user asks for the top customer: a query selects the column ``user_id``, the result lists
    it, a reply names it, then the profile of that customer is fetched by ``user_id``."""
    query = "SELECT user_id, SUM(amount) AS revenue FROM sales.orders GROUP BY user_id LIMIT 1"
    return conversation(
        harness,
        [
            {"role": "user", "content": "Who is our top customer, and on what plan?"},
            assistant(call("run_sql", {"query": query, "limit": 1}, "c1")),
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": '{"columns": ["user_id", "revenue"], "rows": [[1042, 48210.0]]}',
            },
            assistant(
                call("get_user_profile", {"user_id": "1042"}, "c2"),
                content="The top user_id is 1042; fetching the profile.",
            ),
            {
                "role": "tool",
                "tool_call_id": "c2",
                "content": '{"user_id": "1042", "plan": "enterprise"}',
            },
            {"role": "assistant", "content": "Customer 1042 (user_id) is on enterprise."},
        ],
        {
            "turns": [
                {
                    "at": 1,
                    "calls": [{"name": "run_sql", "arguments": {"query": [query], "limit": [1]}}],
                },
                {
                    "at": 3,
                    "calls": [{"name": "get_user_profile", "arguments": {"user_id": ["1042"]}}],
                },
            ]
        },
        episode_id="sql",
    )


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_column_the_calls_query_stays_in_the_conversation(name):
    """The query a call runs selects the column `user_id`, which is also `get_user_profile`'s
    parameter: renamed with the parameter, the result listed a column `arg_npwp` the query never
    selected and the reply named it, while the gold query runs `user_id`. In that conversation
    the word is the data's; the profile's call, gold and the result's echo of the argument still
    move."""
    episode = sql_episode(analyst_harness())
    for variant, new in moved_parameter(name, episode, "get_user_profile", "user_id"):
        messages = variant.episode.messages
        assert messages[2]["content"] == episode.messages[2]["content"]
        # a plain word: the query's column, though the message's call passes the parameter
        assert messages[3]["content"] == "The top user_id is 1042; fetching the profile."
        assert messages[5]["content"] == "Customer 1042 (user_id) is on enterprise."
        assert json.loads(messages[3]["tool_calls"][0]["function"]["arguments"]) == {new: "1042"}
        assert json.loads(messages[4]["content"]) == {new: "1042", "plan": "enterprise"}
        assert variant.episode.gold.turns[1].calls[0].arguments == {new: ["1042"]}


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_result_value_named_like_another_tools_parameter_is_the_results_data(name):
    """A warehouse lists the columns of a table, one of them `user_id`, also the parameter of
    `get_user_profile`; no call passed the word. Renamed with the parameter, the result listed a
    column the table does not have and the reply repeated it. A whole value of one tool's
    result is its backend's data when it names another tool's parameter; an error naming the
    answering tool's own parameter still moves with it."""
    harness = Harness.from_dict(
        {
            **analyst_harness().to_dict(),
            "tools": [
                *[t.to_dict() for t in analyst_harness().tools],
                tool_of("describe_table", "A table's columns.", strings("table")),
            ],
        }
    )
    columns = '{"table": "sales.refunds", "columns": [{"name": "user_id"}, {"name": "amount"}]}'
    episode = conversation(
        harness,
        [
            {"role": "user", "content": "What columns does sales.refunds have?"},
            assistant(call("describe_table", {"table": "sales.refunds"}, "c1")),
            {"role": "tool", "tool_call_id": "c1", "content": columns},
            assistant(call("get_user_profile", {}, "c2")),
            {
                "role": "tool",
                "tool_call_id": "c2",
                "content": '{"error": "missing argument", "field": "user_id"}',
            },
            {"role": "assistant", "content": "The columns are user_id and amount."},
        ],
        {
            "turns": [
                {
                    "at": 1,
                    "calls": [
                        {"name": "describe_table", "arguments": {"table": ["sales.refunds"]}}
                    ],
                }
            ]
        },
        episode_id="columns",
    )
    for variant, new in moved_parameter(name, episode, "get_user_profile", "user_id"):
        messages = variant.episode.messages
        listed = json.loads(messages[2]["content"])["columns"]  # ("table" echoes the call)
        assert listed == [{"name": "user_id"}, {"name": "amount"}]
        assert messages[5]["content"] == "The columns are user_id and amount."
        assert json.loads(messages[4]["content"])["field"] == new  # about the call: it moves


def top_customer_profile(harness: Harness, after: list[dict], at: int, episode_id: str) -> Episode:
    """A user asks for the top customer's profile: a query selects the column `user_id` and its
    result lists it, then ``after``; the gold judges the profile's call at ``at``."""
    return conversation(
        harness,
        [
            {"role": "user", "content": "Profile of our top customer?"},
            assistant(
                call("run_sql", {"query": "SELECT user_id FROM sales.orders LIMIT 1", "limit": 1})
            ),
            {"role": "tool", "tool_call_id": "c1", "content": '{"columns": ["user_id"]}'},
            *after,
        ],
        {
            "turns": [
                {
                    "at": at,
                    "calls": [{"name": "get_user_profile", "arguments": {"user_id": ["1042"]}}],
                }
            ]
        },
        episode_id=episode_id,
    )


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_where_a_conversation_means_the_parameter_its_name_moves_beside_a_column(name):
    """A query selects the column `user_id`, so the word is the data's in that conversation;
    but a hook's feedback says what the variant's hook says ("missing required argument
    user_id" was kept while the hook now writes the new name), and a reply that writes the
    name as a keyword (`user_id="1042"`) means the parameter."""
    harness = Harness.from_dict(
        {
            **analyst_harness().to_dict(),
            "hooks": [
                {"name": "arguments_check", "event": "tool_call", "function": "check_arguments"}
            ],
            "hooks_source": "def check_arguments(payload, config):\n    return {'ok': True}\n",
        }
    )
    episode = top_customer_profile(
        harness,
        [
            assistant(call("get_user_profile", {}, "c2")),
            {
                "role": "tool",
                "tool_call_id": "c2",
                "name": "hook.arguments_check",
                "content": "get_user_profile: missing required argument user_id.",
            },
            assistant(
                call("get_user_profile", {"user_id": "1042"}, "c3"),
                content='Calling get_user_profile with user_id="1042".',
            ),
            {"role": "tool", "tool_call_id": "c3", "content": '{"plan": "enterprise"}'},
            {"role": "assistant", "content": "Customer 1042 is on enterprise."},
        ],
        at=5,
        episode_id="sql-hook",
    )
    for variant, new in moved_parameter(name, episode, "get_user_profile", "user_id"):
        messages = variant.episode.messages
        assert messages[2]["content"] == '{"columns": ["user_id"]}'  # the query's column
        assert messages[4]["content"] == f"get_user_profile: missing required argument {new}."
        assert messages[5]["content"] == f'Calling get_user_profile with {new}="1042".'


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_the_assistants_words_about_its_own_call_name_the_parameter_beside_a_column(name):
    """A notebook agent (an audit): a query selects the column `user_id`, so the word is the
    data's in that conversation; but the assistant's "I'll pass that as the user_id argument of
    get_user_profile", beside the call that passes it, kept the old name while the call moved.
    A message's own call's argument written as code names the parameter."""
    episode = top_customer_profile(
        analyst_harness(),
        [
            assistant(
                call("get_user_profile", {"user_id": "1042"}, "c2"),
                content="1042 is top; I'll pass it as the `user_id` argument.",
            ),
            {"role": "tool", "tool_call_id": "c2", "content": '{"plan": "enterprise"}'},
            {"role": "assistant", "content": "Customer 1042 is on enterprise."},
        ],
        at=3,
        episode_id="own-call",
    )
    for variant, new in moved_parameter(name, episode, "get_user_profile", "user_id"):
        messages = variant.episode.messages
        assert messages[2]["content"] == '{"columns": ["user_id"]}'  # the query's column
        # written as code beside the call that passes it, the word is that call's parameter
        assert messages[3]["content"] == f"1042 is top; I'll pass it as the `{new}` argument."


def test_a_tool_named_like_the_projects_function_stays_in_its_code():
    """A coding agent's project has a function `read_file`, as its tool is called: a code
    search for "read_file\\(" found `def read_file(` and the user asked about its callers;
    renamed with the tool, the user, the file and the search result spoke of `view_document`
    while the gold still searched for `read_file`. A name the calls' values write as code is
    the conversation's data; the tool's own calls still move."""
    harness = harness_of(
        "coder",
        tool_of("read_file", "Reads a file of the repository.", strings("path")),
        tool_of("search_code", "Searches the code.", strings("pattern")),
    )
    episode = conversation(
        harness,
        [
            {"role": "user", "content": "Find every caller of our read_file helper."},
            assistant(call("search_code", {"pattern": "read_file\\("}, "c1")),
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": "src/io.py:3: def read_file(path):\nsrc/app.py:9: read_file(p)",
            },
            assistant(call("read_file", {"path": "src/app.py"}, "c2")),
            {"role": "tool", "tool_call_id": "c2", "content": "data = read_file(p)"},
            {"role": "assistant", "content": "read_file is called once, in src/app.py."},
        ],
        {
            "turns": [
                {
                    "at": 1,
                    "calls": [{"name": "search_code", "arguments": {"pattern": ["read_file\\("]}}],
                },
                {
                    "at": 3,
                    "calls": [{"name": "read_file", "arguments": {"path": ["src/app.py"]}}],
                },
            ]
        },
        episode_id="callers",
    )
    variant = variant_of("tool_name_mask", episode, seed=1)
    new = variant.mapping.tool("read_file")
    assert new != "read_file"
    messages = variant.episode.messages
    for i in (0, 2, 4):  # the user's words and the tools' results
        assert messages[i]["content"] == episode.messages[i]["content"]
    assert messages[3]["tool_calls"][0]["function"]["name"] == new
    # the assistant's own words name its tools (an audit's "vou rodar buscar_voos agora" kept
    # the old name right before calling the new one): they move
    assert messages[5]["content"] == f"{new} is called once, in src/app.py."


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_query_strings_keys_are_the_servers(name):
    """A FHIR skill wrote the server's search in inline code,
    `GET [base]/Appointment?status=booked&date=ge2025-03-10`, and its keys were renamed with
    the tool's `status` and `date`: a request the server refuses. Keys after "?" or "&" are the
    server's; the skill's own keyword still moves."""
    harness = one_skill_harness(
        "agenda",
        "L'API utilise `GET [base]/Appointment?status=booked&date=ge2025-03-10`. "
        'Appelez `lister_rdv(status="booked")`.',
        tool_of("lister_rdv", "Liste les rendez-vous.", strings("status", "date")),
    )
    moved = 0
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameter("lister_rdv", "status")
        body = variant.episode.harness.skills[0].content
        assert "`GET [base]/Appointment?status=booked&date=ge2025-03-10`" in body, body
        assert f'`lister_rdv({new}="booked")`' in body, body
        moved += new != "status"
    assert moved


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_key_the_backend_writes_elsewhere_is_no_echo(name):
    """A FHIR read by id returns `{"resourceType": "Patient", "id": "pat-2210", ...}`: the same
    key and value as the call's `id`, so it was renamed as an echo of the argument
    (`"param_kvpd": "pat-2210"`), while the search's Bundle in the same conversation writes `id`
    in every resource: the standard's field, which stays."""
    harness = harness_of(
        "fhir",
        tool_of("rechercher_patient", "Cherche.", strings("nom")),
        tool_of("lire_ressource", "Lit une ressource.", strings("type_ressource", "id")),
    )
    bundle = {
        "resourceType": "Bundle",
        "entry": [{"resource": {"resourceType": "Patient", "id": "pat-2210"}}],
    }
    patient = {"resourceType": "Patient", "id": "pat-2210", "birthDate": "1980-02-01"}
    episode = conversation(
        harness,
        [
            {"role": "user", "content": "Date de naissance de M. Martin ?"},
            assistant(call("rechercher_patient", {"nom": "Martin"}, "c1")),
            {"role": "tool", "tool_call_id": "c1", "content": json.dumps(bundle)},
            assistant(
                call("lire_ressource", {"type_ressource": "Patient", "id": "pat-2210"}, "c2")
            ),
            {"role": "tool", "tool_call_id": "c2", "content": json.dumps(patient)},
            {"role": "assistant", "content": "Né le 1980-02-01."},
        ],
        {
            "turns": [
                {
                    "at": 3,
                    "calls": [
                        {
                            "name": "lire_ressource",
                            "arguments": {"type_ressource": ["Patient"], "id": ["pat-2210"]},
                        }
                    ],
                }
            ]
        },
        episode_id="fhir",
    )
    moved = 0
    for seed in range(8):
        variant = variant_of(name, episode, seed=seed, fraction=1.0)
        if variant.mapping.parameter("lire_ressource", "id") == "id":
            continue
        moved += 1
        assert json.loads(variant.episode.messages[4]["content"]) == patient
    assert moved


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_names_the_calls_pass_are_read_as_their_values_write_them(name):
    """A recheck of the rule above on a travel back office: an e-mail's body ("origem em São
    Paulo e destino Lisboa") made the plain words `origem` and `destino` the data's, so the
    reply's `` `origem` `` kept a name the variant no longer has; a SQL comparison in a reply
    (`voo_id = 'VOO-4471'`) read as the parameter written as a keyword. A plain word counts only
    in SQL; only `name=` glued is a keyword."""
    harness = harness_of(
        "viagens",
        tool_of("buscar_voos", "Busca voos.", strings("origem", "destino")),
        tool_of("enviar_email", "Envia.", strings("corpo")),
        tool_of("executar_consulta", "Consulta.", strings("sql")),
        tool_of("reservar", "Reserva.", strings("voo_id")),
    )
    sql = "SELECT voo_id FROM voos WHERE voo_id = 'VOO-4471'"
    episode = conversation(
        harness,
        [
            {"role": "user", "content": "Mande o e-mail e veja o voo."},
            assistant(
                call(
                    "enviar_email",
                    {"corpo": "Sua viagem: origem São Paulo, destino Lisboa."},
                    "c1",
                ),
                call("executar_consulta", {"sql": sql}, "c2"),
            ),
            {"role": "tool", "tool_call_id": "c1", "content": "enviado"},
            {"role": "tool", "tool_call_id": "c2", "content": '{"linhas": [["VOO-4471"]]}'},
            {
                "role": "assistant",
                "content": "Use `origem` e `destino`. O filtro usou voo_id = 'VOO-4471'.",
            },
        ],
        {"turns": [{"at": 4, "no_call": True}]},
        episode_id="v",
    )
    for seed in range(6):
        variant = variant_of(name, episode, seed=seed, fraction=1.0)
        origem = variant.mapping.parameter("buscar_voos", "origem")
        reply = variant.episode.messages[4]["content"]
        assert f"Use `{origem}` e" in reply, reply
        assert "O filtro usou voo_id = 'VOO-4471'." in reply, reply


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_key_the_backend_writes_with_another_value_is_no_echo(name):
    """Parallel results under one harness variant: the fare echoed `voo_id` (renamed with the
    parameter) while the booking answered `voo_id` with the flight it was moved to, VOO-4481,
    and kept it: one backend wrote the flight under two names in one turn. A key the backend
    writes with a value of its own is its field."""
    harness = harness_of(
        "viagens",
        tool_of("calcular_tarifa", "Tarifa.", strings("voo_id")),
        tool_of("reservar", "Reserva.", strings("voo_id")),
    )
    episode = conversation(
        harness,
        [
            {"role": "user", "content": "Tarifa e reserva do VOO-4480."},
            assistant(
                call("calcular_tarifa", {"voo_id": "VOO-4480"}, "c1"),
                call("reservar", {"voo_id": "VOO-4480"}, "c2"),
            ),
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": '{"voo_id": "VOO-4480", "preco": 900}',
            },
            {
                "role": "tool",
                "tool_call_id": "c2",
                "content": '{"voo_id": "VOO-4481", "aviso": "remarcado"}',
            },
            {"role": "assistant", "content": "Reservado no VOO-4481."},
        ],
        {"turns": [{"at": 4, "no_call": True}]},
        episode_id="v",
    )
    moved = 0
    for seed in range(6):
        variant = variant_of(name, episode, seed=seed, fraction=1.0)
        if variant.mapping.parameter("reservar", "voo_id") == "voo_id":
            continue
        moved += 1
        assert json.loads(variant.episode.messages[2]["content"]) == {
            "voo_id": "VOO-4480",
            "preco": 900,
        }
    assert moved


GUARD_SPEAKING_NAMES = """
def check_ids(payload, config):
    value = payload["arguments"].get("passageiro_id", "")
    if not value.startswith("P"):
        return {"ok": False, "feedback": f"{value!r} não é um id; confira o voo_id ou rode consultar_passageiro."}
    return {"ok": True}
"""


@pytest.mark.parametrize(
    ("name", "renamed"),
    [
        ("parameter_name_mask", lambda v: v.mapping.parameter("reservar", "voo_id")),
        ("parameter_name_paraphrase", lambda v: v.mapping.parameter("reservar", "voo_id")),
        ("tool_name_mask", lambda v: v.mapping.tool("consultar_passageiro")),
        ("tool_name_paraphrase", lambda v: v.mapping.tool("consultar_passageiro")),
    ],
)
def test_a_name_the_hooks_feedback_prints_keeps_it(name, renamed):
    """A hook's own sentence says "confira o voo_id ou rode consultar_passageiro": the
    variant's hook prints those names as written, so the recorded feedback kept them while the
    parameter and the tool were renamed, and rows taught feedback no hook of the variant gives
    (or, moved, feedback the variant's hook never prints). A name hooks.py writes in its
    strings keeps it."""
    harness = Harness.from_dict(
        {
            "name": "viagens",
            "hooks": [{"name": "ids", "event": "tool_call", "function": "check_ids"}],
            "hooks_source": GUARD_SPEAKING_NAMES,
            "tools": [
                tool_of("reservar", "Reserva.", strings("passageiro_id", "voo_id")),
                tool_of("consultar_passageiro", "Consulta.", strings("nome")),
            ],
        }
    )
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        assert renamed(variant) in ("voo_id", "consultar_passageiro")


CALENDAR_GUARD = """
def move_not_recreate(payload, config):
    if payload["name"] == "create_event" and payload["arguments"].get("replaces"):
        return {"ok": False, "feedback": "Moving this meeting? Reschedule works on the event_id instead."}
    return {"ok": True}
"""


@pytest.mark.parametrize("name", ["tool_name_paraphrase", "tool_name_mask"])
def test_a_tool_named_by_a_plain_word_the_hooks_feedback_prints_keeps_it(name):
    """A calendar hook prints "use reschedule with the event_id instead" (here, opening a
    sentence: "Reschedule works on..."): a tool named by a plain word was renamed though the
    variant's hook still prints it, and its feedback sent the model to a tool the variant did
    not have. A tool's name that hooks.py's strings write as a word, in any case, keeps it; a
    parameter's plain word there ("the meeting") is the sentence's own."""
    harness = Harness.from_dict(
        {
            "name": "calendar",
            "hooks": [{"name": "move", "event": "tool_call", "function": "move_not_recreate"}],
            "hooks_source": CALENDAR_GUARD,
            "tools": [
                tool_of("reschedule", "Moves an event.", strings("event_id", "start")),
                tool_of("create_event", "Creates an event.", strings("title", "replaces")),
                tool_of("list_events", "Lists events.", strings("day")),
            ],
        }
    )
    others = set()
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        assert variant.mapping.tool("reschedule") == "reschedule"
        others.add(variant.mapping.tool("list_events"))
    assert others - {"list_events"}  # a tool the hook does not name still moves


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_name_before_a_german_compounds_noun_moves(name):
    """A German smart-home skill wrote "Die entity_id-Angabe muss exakt stimmen; ... jede
    entity_id einzeln": the second moved, the first did not, since a hyphen glued the name to
    what followed. A capitalised word after the hyphen is the compound's noun, not the name's."""
    harness = one_skill_harness(
        "licht",
        "Die entity_id-Angabe muss exakt stimmen; bei mehreren Lampen gilt jede entity_id einzeln.",
        tool_of("schalten", "Schaltet.", strings("entity_id", "zustand")),
    )
    for seed in range(4):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameter("schalten", "entity_id")
        body = variant.episode.harness.skills[0].content
        assert f"Die {new}-Angabe" in body and f"jede {new} einzeln" in body, body


def test_a_name_a_hook_prints_glued_to_a_korean_particle_keeps_it():
    """A Korean hook prints f"phone_last4는 숫자 4자리여야 합니다": glued to the particle 는,
    the name was not found in its string, and the renamed parameter made rows whose feedback the
    variant's hook never prints."""
    harness = Harness.from_dict(
        {
            "name": "shop",
            "hooks": [{"name": "phone", "event": "tool_call", "function": "check_phone"}],
            "hooks_source": (
                "def check_phone(payload, config):\n"
                "    value = str(payload['arguments'].get(config['param'], ''))\n"
                "    if len(value) != 4:\n"
                "        return {'ok': False, 'feedback': f'phone_last4는 숫자 4자리여야 합니다({value!r})'}\n"
                "    return {'ok': True}\n"
            ),
            "tools": [tool_of("get_order", "주문 조회.", strings("order_no", "phone_last4"))],
        }
    )
    for seed in range(6):
        variant = variant_of("parameter_name_mask", greeting(harness), seed=seed, fraction=1.0)
        assert variant.mapping.parameter("get_order", "phone_last4") == "phone_last4"


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_an_english_text_quoting_arabic_makes_no_prose_code_mixed(name):
    """A Gulf operator's harness wrote "ضع رقم الهاتف في msisdn" in Arabic and had one English
    skill quoting an Arabic sentence to say to customers: its English words counted as Latin
    words of Arabic prose, the harness read as code-mixed, and `msisdn` kept its old name
    beside Arabic in 78 of 128 rows. A text written mostly in Latin words is no code-mixed one."""
    harness = Harness.from_dict(
        {
            "name": "telecom",
            "skills": [
                {
                    "id": "porting-reply",
                    "description": "How to answer a porting question.",
                    "content": "Porting takes three days. Tell the customer: "
                    '"سيتم نقل رقمك خلال ثلاثة أيام" and never promise an exact date.',
                }
            ],
            "tools": [
                tool_of(
                    "check_balance",
                    "يعرض الرصيد. ضع رقم الهاتف في msisdn دون مسافات.",
                    strings("msisdn"),
                )
            ],
        }
    )
    moved = 0
    for seed in range(6):
        variant = variant_of(name, greeting(harness), seed=seed, fraction=1.0)
        new = variant.mapping.parameter("check_balance", "msisdn")
        text = variant.episode.harness.tools[0].description
        assert f"في {new} دون" in text, text
        moved += new != "msisdn"
    assert moved


def test_a_name_in_a_hooks_docstring_is_no_feedback():
    """hooks.py's docstring said "Payslips (create_payslip) are checked": a docstring is never
    printed, yet the name was frozen as if the hook's feedback wrote it."""
    harness = Harness.from_dict(
        {
            "name": "hr",
            "hooks": [{"name": "payslip", "event": "tool_call", "function": "check_payslip"}],
            "hooks_source": (
                '"""Payslips (create_payslip) are checked here."""\n\n\n'
                "def check_payslip(payload, config):\n"
                '    """Every create_payslip call passes."""\n'
                "    return {'ok': True}\n"
            ),
            "tools": [tool_of("create_payslip", "Makes a payslip.", strings("employee_id"))],
        }
    )
    assert any(
        variant_of("tool_name_mask", greeting(harness), seed=seed).mapping.tool("create_payslip")
        != "create_payslip"
        for seed in range(4)
    )


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_a_suffix_never_gives_a_parameter_another_sense(split):
    """BFCL (an audit): a stock API's `market` became `market_value` (a price) and a chord
    progression's `key` `key-value` (a pair): where no table knows a word, the suffix a
    parameter takes says only that it is a parameter."""
    harness = harness_of(
        "music",
        tool_of("get_stock_info", "A stock's info.", strings("market", "key")),
    )
    seen = set()
    for seed in range(12):
        variant = variant_of(
            "parameter_name_paraphrase", greeting(harness), seed=seed, split=split, fraction=1.0
        )
        for old in ("market", "key"):
            new = variant.mapping.parameter("get_stock_info", old)
            seen.add(new)
            assert not re.search(r"value|setting", new, re.IGNORECASE), (old, new)
    assert seen - {"market", "key"}


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_distractors_follow_the_tools_convention_when_no_skill_was_renamed(split):
    """BFCL (an audit): a harness of snake_case tools and no skills got distractors named
    `sendEmail`, `rollDice` in a fifth of its variants: the skill-id step drew a convention for
    the variant though it renamed nothing, and the distractors followed that, a style no tool of
    the variant has; so did a parameter rename's convention. A step that renames nothing records
    no convention, and distractors follow the tools' own where those are not written in the
    variant's."""
    harness = harness_of(
        "physics",
        tool_of("final_velocity", "Final velocity of a falling object.", strings("height")),
        tool_of("kinetic_energy", "Kinetic energy of a mass.", strings("mass_kg")),
    )
    styles = set()
    for seed in range(16):
        recipe = Recipe.from_dict(
            {
                "recipe_version": 1,
                "name": "t",
                "seed": seed,
                "variants_per_episode": 1,
                "keep_original": False,
                "pipeline": [
                    {"skill_id_case": {"split": split}},
                    # a parameter rename records its convention too, and renames no tool
                    {"parameter_name_paraphrase": {"split": split}},
                    {"distractor_tools": {"split": split, "min_count": 2, "max_count": 2}},
                ],
            }
        )
        out = augment_episode(recipe, greeting(harness))[0]
        assert isinstance(out, Variant), str(out)
        added = [t for t in out.episode.harness.tool_names if t not in harness.tool_names]
        assert added
        styles |= {convention_of([name]) for name in added}
    assert styles <= {"snake"}, styles


@pytest.mark.parametrize("name", ["parameter_name_paraphrase", "parameter_name_mask"])
def test_a_tool_text_naming_what_it_returns_keeps_the_name_of_its_results(name):
    """A hotel concierge (an audit): `search` said "the results include plan_id", a key its
    results keep, and `book` "returns the reservation_id"; where another tool's `plan_id` and
    `reservation_id` were renamed, both texts named the new parameters (`PLAN_IDENT`) beside
    results that still returned `plan_id` (43 of 126 rows). A tool's own texts rename only its
    own parameters."""

    def tool(tool_name, description, params):
        return {
            "type": "function",
            "function": {
                "name": tool_name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": {
                        p: {"type": "string", "description": f"The {p} to use."} for p in params
                    },
                    "required": list(params),
                },
            },
        }

    episode = Episode.from_dict(
        {
            "id": "e",
            "harness": {
                "name": "hotel",
                "tools": [
                    tool("search_rooms", "Finds rooms; the results include plan_id.", ["city"]),
                    tool(
                        "get_rates",
                        "Rates of a room; pass the plan_id you choose when you call book_room.",
                        ["room"],
                    ),
                    tool(
                        "book_room", "Books the plan_id; returns the reservation_id.", ["plan_id"]
                    ),
                    tool("cancel_booking", "Cancels a reservation_id.", ["reservation_id"]),
                ],
            },
            "messages": [{"role": "user", "content": "hi"}],
            "gold": {"no_call": True},
        }
    )
    renamed = 0
    for seed in range(6):
        variant = variant_of(name, episode, seed=seed, fraction=1.0)
        tools = {t.name: t for t in variant.episode.harness.tools}
        names = {
            old: new
            for renames in variant.mapping.parameters.values()
            for old, new in renames.items()
        }
        if "plan_id" in names:
            renamed += 1
            assert tools["search_rooms"].description.endswith("include plan_id."), tools
            assert names["plan_id"] in tools["book_room"].description  # its own, renamed
            # a text that names the tool whose parameter it is means that parameter
            assert f"pass the {names['plan_id']} you" in tools["get_rates"].description
        if "reservation_id" in names:
            assert "returns the reservation_id" in tools["book_room"].description, tools
            assert names["reservation_id"] in tools["cancel_booking"].description
    assert renamed


STAY_HOOKS = """
def check_stay(payload, config):
    tool = payload.get("tool_name")
    if tool not in (config.get("tools") or []):
        return {"ok": True}
    args = payload.get("arguments") or {}
    if args.get("check_out", "") <= args.get("check_in", ""):
        return {"ok": False, "feedback": f"{tool}: the check-out date must be after check-in."}
    return {"ok": True}
"""


def stay_episode() -> Episode:
    """Plain-word tools `search` and `book`, listed in their hook's configuration (as the
    README configures a hook per tool), a search the hook sends back, and its retry."""

    def tool(name):
        dates = {"check_in": {"type": "string"}, "check_out": {"type": "string"}}
        return {
            "name": name,
            "description": f"{name.capitalize()} hotel rooms for the dates.",
            "parameters": {"type": "object", "properties": dates},
        }

    bad, good = (
        {"check_in": "2025-08-12", "check_out": "2025-08-10"},
        {
            "check_in": "2025-08-10",
            "check_out": "2025-08-12",
        },
    )
    return Episode.from_dict(
        {
            "id": "stay",
            "harness": {
                "name": "hotel",
                "tools": [tool("search"), tool("book")],
                "hooks": [
                    {
                        "name": "stay_dates",
                        "event": "tool_call",
                        "function": "check_stay",
                        "config": {"tools": ["search", "book"]},
                    }
                ],
                "hooks_source": STAY_HOOKS,
            },
            "messages": [
                {"role": "user", "content": "Rooms from 10 to 12 August?"},
                assistant(call("search", bad, "c1")),
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "name": "hook.stay_dates",
                    "content": "search: the check-out date must be after check-in.",
                },
                assistant(call("search", good, "c2")),
                {"role": "tool", "tool_call_id": "c2", "content": '{"rooms": 3}'},
                {"role": "assistant", "content": "Three rooms are free."},
            ],
            "gold": {
                "turns": [
                    {
                        "at": 3,
                        "calls": [
                            {
                                "name": "search",
                                "arguments": {
                                    "check_in": ["2025-08-10"],
                                    "check_out": ["2025-08-12"],
                                },
                            }
                        ],
                    },
                    {"at": 5, "no_call": True},
                ]
            },
        },
        trust_hooks=True,
    )


def test_plain_word_tools_a_hook_is_configured_with_are_renamed_with_its_feedback():
    """A hotel concierge (an audit): `search` and `book`, listed in a hook's configuration,
    were never renamed (0 of 168 rows: the list read as prose that writes them as words); and
    where such a tool was renamed, the recorded feedback of the hook that blocked its call
    still said "search: ...", though the variant's hook says the new name. A configuration's
    name is the name, and the feedback on a blocked call names its tool as the variant's hook
    does."""
    from hsa.model.hook_runner import HookRunner, refusal

    episode = stay_episode()
    renamed = 0
    for seed in range(6):
        variant = variant_of("tool_name_paraphrase", episode, seed=seed)
        new = variant.mapping.tools.get("search")
        if new is None:
            continue
        renamed += 1
        out = variant.episode
        assert out.harness.hooks[0].config["tools"][0] == new
        verdict = refusal(HookRunner(out.harness), out.messages[:1], out.messages[1])
        assert verdict is not None and out.messages[2]["content"] == verdict.feedback, out.messages
    assert renamed


def test_a_plain_word_tool_glued_to_japanese_is_its_name():
    """A hotel concierge (an audit): a result said "searchで最新のプランを取得してから、bookを再実行
    してください" and kept `search` and `book` after both were renamed: a Latin word against
    Japanese, Chinese or Korean text is no word of it but the name, as parameters were read
    already; and verification finds such a name left behind."""
    from hsa.augment.mapping import Mapping
    from hsa.augment.rename import rename_episode
    from hsa.verify import VerificationFailed

    episode = stay_episode()
    note = "searchで最新のプランを取得してから、bookを再実行してください。"
    messages = list(episode.messages)
    messages[4] = {
        **messages[4],
        "content": json.dumps({"rooms": 3, "note": note}, ensure_ascii=False),
    }
    episode = replace(episode, messages=tuple(messages))
    mapping = Mapping(tools={"search": "locate", "book": "reserve"})
    variant = rename_episode(episode, mapping)
    assert "locateで最新" in variant.messages[4]["content"]
    assert "reserveを再実行" in variant.messages[4]["content"]
    verify_variant(episode, variant, mapping)
    left = list(variant.messages)
    left[4] = episode.messages[4]
    with pytest.raises(VerificationFailed, match="renamed .search. survives in messages"):
        verify_variant(episode, replace(variant, messages=tuple(left)), mapping)
    # an English word of English prose is no name: "search again" stays as written
    plain = list(episode.messages)
    plain[4] = {**plain[4], "content": '{"note": "No rooms: search again later."}'}
    english = rename_episode(replace(episode, messages=tuple(plain)), mapping)
    assert "search again" in english.messages[4]["content"]


def test_a_plain_word_a_person_writes_glued_to_chinese_is_their_word():
    """What people say mixes in English words ("我要refund", "这个size有M吗"): a shopper's or a
    reply's plain word glued to Chinese is theirs, not the tool `refund`, and stays."""
    from hsa.augment.mapping import Mapping
    from hsa.augment.rename import rename_episode

    episode = stay_episode()
    messages = list(episode.messages)
    messages[0] = {"role": "user", "content": "我想search一下8月10号到12号的房间"}
    messages[5] = {"role": "assistant", "content": "帮您search到了三间房。"}
    episode = replace(episode, messages=tuple(messages))
    mapping = Mapping(tools={"search": "locate"})
    variant = rename_episode(episode, mapping)
    assert variant.messages[0]["content"] == messages[0]["content"]
    assert variant.messages[5]["content"] == messages[5]["content"]
    verify_variant(episode, variant, mapping)


def test_a_hook_configuration_lists_names_only_where_it_says_so():
    """A recheck: `protected_branches: [main, release]` and `banned_words: [guaranteed,
    refund]` were renamed with the tools `release` and `refund`, so the variant's hooks no
    longer protected the branch nor refused the word. A string equal to a name is the name only
    in a list of names alone, among keys that are names alone, or under a key that says so."""
    from hsa.model.hook import configured_names

    names = {"search", "book", "release", "refund"}
    config = {
        "tools": ["search", "book"],
        "source_tool": "search",
        "limits": {"search": 5, "book": 2},
        "protected_branches": ["main", "release"],
        "banned_words": ["guaranteed", "refund"],
        "branch": "release",
    }
    found, words = configured_names(config, names)
    assert found == {"search", "book"}
    assert {"release", "refund", "main", "guaranteed"} <= set(words)
    # one name alone is a name only where the key says so (a recheck: `blocked_memo_words:
    # [transfer]` beside `allowed_functions: [transfer]` had the word renamed with the tool)
    found, words = configured_names(
        {"allowed_functions": ["refund"], "blocked_memo_words": ["refund"], "tools": ["book"]},
        names,
    )
    assert found == {"refund", "book"} and words.count("refund") == 1

    episode = stay_episode()
    hooks_source = episode.harness.hooks_source + (
        "\n\ndef check_words(payload, config):\n"
        "    reply = payload.get('reply') or ''\n"
        "    bad = [w for w in config['banned_words'] if w in reply]\n"
        "    return {'ok': not bad, 'feedback': f'Do not say {bad}.'}\n"
    )
    words_hook = {
        "name": "reply_words",
        "event": "reply",
        "function": "check_words",
        "config": {"banned_words": ["guaranteed", "book"]},
    }
    harness = Harness.from_dict(
        {
            **episode.harness.to_dict(),
            "hooks": [h.to_dict() for h in episode.harness.hooks] + [words_hook],
            "hooks_source": hooks_source,
        },
        trust_hooks=True,
    )
    episode = replace(episode, harness=harness)
    for seed in range(6):
        variant = variant_of("tool_name_paraphrase", episode, seed=seed)
        assert "book" not in variant.mapping.tools, variant.mapping  # a word the hook refuses
        (words,) = [h for h in variant.episode.harness.hooks if h.name == "reply_words"]
        assert words.config["banned_words"] == ["guaranteed", "book"]


def test_the_feedback_on_a_blocked_call_keeps_the_values_it_quotes_and_moves_the_tools_it_names():
    """A recheck: feedback quoting the blocked query "search something quick" had it renamed
    with the tool (the user's words), and feedback naming the tool its configuration gives
    (`source_tool: search`, "Call search first") kept the old name."""
    from hsa.augment.mapping import Mapping
    from hsa.augment.rename import rename_episode

    episode = stay_episode()
    hook = episode.harness.hooks[0]
    harness = replace(
        episode.harness,
        hooks=(replace(hook, config={**hook.config, "source_tool": "search"}),),
    )
    bad = json.loads(episode.messages[1]["tool_calls"][0]["function"]["arguments"])
    blocked = call("book", {**bad, "note": "search something quick"}, "c1")
    messages = list(episode.messages)
    messages[1] = assistant(blocked)
    messages[2] = {
        **messages[2],
        "content": "book: the note 'search something quick' is no date. Call search first.",
    }
    episode = replace(episode, harness=harness, messages=tuple(messages))
    variant = rename_episode(episode, Mapping(tools={"search": "locate", "book": "reserve"}))
    assert variant.messages[2]["content"] == (
        "reserve: the note 'search something quick' is no date. Call locate first."
    )


def test_a_plain_word_spaced_from_chinese_is_the_name_but_not_in_quoted_speech():
    """A live room's skills (an audit): "refund_type 和 reason 必须从选项里选" renamed
    `refund_type` and left `reason`, spaced from the Chinese as it is often typeset, naming a
    parameter the variant no longer has; and the quoted customer line “这个size有M吗” became
    “这个p_csqn有M吗”, though the customer's own message kept `size`."""
    from hsa.text.mentions import parameter_mentions, replace_glued_mentions

    rewrite = parameter_mentions({"reason": "cause", "size": "dimension"})
    assert (
        rewrite("refund_type 和 reason 必须从选项里选。") == "refund_type 和 cause 必须从选项里选。"
    )
    assert rewrite("按 size 查库存，再回复") == "按 dimension 查库存，再回复"
    # a Latin phrase is the prose's own words: "reason code" is no parameter alone
    assert rewrite("填写 reason code 即可") == "填写 reason code 即可"
    quoted = "顾客常问（比如“这个size有M吗”），先按size查库存。"
    assert rewrite(quoted) == "顾客常问（比如“这个size有M吗”），先按dimension查库存。"
    # tools and skills are read so too
    assert replace_glued_mentions("先用 search 查询「searchしたい」", {"search": "locate"}) == (
        "先用 locate 查询「searchしたい」"
    )


def test_a_plain_word_tool_the_harness_writes_glued_to_japanese_is_renamed_there():
    """A recheck: a Japanese harness that writes its tools as the language does
    ("注文の確認には必ずsearchを使ってください") had them never renamed (0 of 45 rows): the glued
    mention read as a word. It is the name, and moves with it; an English phrase does not."""
    episode = stay_episode()
    text = {"instructions": "注文の確認には必ずsearchを使ってください。予約はbookで行います。"}
    harness = replace(episode.harness, prompt=replace(episode.harness.prompt, text=text))
    episode = replace(episode, harness=harness)
    assert not {"search", "book"} & fixed_tool_names(harness)
    renamed = 0
    for seed in range(6):
        variant = variant_of("tool_name_paraphrase", episode, seed=seed)
        new = variant.mapping.tools.get("search")
        if new is not None:
            renamed += 1
            said = variant.episode.harness.prompt.text["instructions"]
            assert f"必ず{new}を" in said, said
    assert renamed
    english = {"instructions": "注文の確認には search API を使ってください。"}
    worded = replace(harness, prompt=replace(harness.prompt, text=english))
    assert "search" in fixed_tool_names(worded)  # "search API" is the prose's own phrase
