"""Names: words, conventions and meaning (hsa.text.names); the general tables every name transform
draws from (transforms/lexicon.yaml, hsa/text/abbreviations.yaml); and the promise that no rename
gives an identifier the meaning of another of its kind (transforms and verification)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hsa.augment.mapping import Mapping
from hsa.augment.recipe import Recipe
from hsa.augment.rename import rename_episode
from hsa.augment.variant import Variant
from hsa.dataset.pipeline import augment_episode
from hsa.model.episode import Episode
from hsa.text.names import (
    CONVENTIONS,
    abbreviation_groups,
    convention_of,
    conventions_of,
    meaning,
    name_words,
    shared_conventions,
    write_name,
)
from hsa.transforms._names import CONVENTION_SPLITS, lexicon
from hsa.verify import VerificationFailed, identifiers_by_kind, verify_variant
from tests.strategies import clashing_episode_dicts

RENAMERS = [
    "skill_id_synonym",
    "skill_id_case",
    "skill_id_namespace",
    "skill_id_mask",
    "tool_name_paraphrase",
    "tool_name_mask",
    "parameter_name_paraphrase",
    "parameter_name_mask",
    "hook_implementation_swap",
]


# ---- words and conventions -----------------------------------------------------------------


def test_words_of_names_in_any_convention():
    assert name_words("getHTTPStatus2") == ["get", "HTTP", "Status", "2"]
    assert name_words("shop.ITEM_QA") == ["shop", "ITEM", "QA"]
    assert name_words("item-qa") == ["item", "qa"]
    assert name_words("请调用get_price") == ["请调用", "get", "price"]


def test_conventions_are_written_and_recognised():
    words = ["get", "flight", "status"]
    written = {c: write_name(words, c) for c in CONVENTIONS}
    assert written == {
        "snake": "get_flight_status",
        "camel": "getFlightStatus",
        "kebab": "get-flight-status",
        "pascal": "GetFlightStatus",
        "screaming_snake": "GET_FLIGHT_STATUS",
        "title_snake": "Get_Flight_Status",
    }
    for convention, name in written.items():
        assert convention in conventions_of(name)
    assert conventions_of("get") == {"snake", "camel", "kebab"}  # one word fits several
    assert conventions_of("math.factorial_of") == {"snake"}  # dots are namespaces
    assert shared_conventions(["get_price", "getPrice"]) == frozenset()  # a mixed list
    assert convention_of(["get", "get_price"]) == "snake"
    assert not set(CONVENTION_SPLITS["train"]) & set(CONVENTION_SPLITS["heldout"])


@given(
    words=st.lists(st.text("abcdefghij", min_size=2, max_size=6), min_size=1, max_size=4),
    convention=st.sampled_from(CONVENTIONS),
)
def test_a_name_in_any_convention_keeps_its_meaning(words, convention):
    # (one-letter words run together in camelCase: "aAA" reads as a, AA in any reading)
    name = write_name(words, convention)
    assert convention in conventions_of(name)
    assert meaning(name) == meaning(write_name(words, "snake"))


# ---- meaning ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("item_ids", "itemIdentifier"),
        ("item_ids", "identifier_of_the_item"),
        ("product_id", "PRODUCT-IDENT"),
        ("regex", "regular_expression"),
        ("user_name", "name_user"),
        ("categories", "category"),
        ("search_flights", "flight_search"),
    ],
)
def test_names_that_say_the_same(a, b):
    assert meaning(a) == meaning(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("item_id", "product_id"),
        ("from_date", "to_date"),
        ("no_cache", "number_cache"),
        ("get_price", "get_price_history"),
    ],
)
def test_names_that_say_different_things(a, b):
    assert meaning(a) != meaning(b)


# ---- the general tables ----------------------------------------------------------------------


def _words(members) -> set[str]:
    return {w for m in members for w in m.split("_")}


def test_lexicon_and_abbreviations_split_into_disjoint_parts():
    groups = lexicon().groups
    abbreviations = abbreviation_groups()
    train = _words(m for g in groups for m in g.train) | _words(
        m for g in abbreviations for m in g["train"]
    )
    heldout = _words(m for g in groups for m in g.heldout) | _words(
        m for g in abbreviations for m in g["heldout"]
    )
    assert not train & heldout  # not even a word is shared across the splits
    assert len(groups) >= 200 and len(train) >= 500 and len(heldout) >= 300
    for group in groups:
        assert group.train and group.heldout and group.pos in ("verb", "noun", "adj")
        for member in group.train + group.heldout:
            assert member == member.lower() and all(w.isalpha() for w in member.split("_"))


def test_a_word_has_one_default_sense_per_part_of_speech():
    defaults = Counter(
        (m, g.pos) for g in lexicon().groups if not g.when for m in g.train + g.heldout
    )
    assert [k for k, n in defaults.items() if n > 1] == []


def _offered(name: str, context: set[str], split: str) -> set[str]:
    """Every word the tables of ``split`` offer for any phrase of ``name`` in ``context``."""
    from hsa.transforms._names import slots

    found = slots([name_words(name)], split, context)
    return {w for slot in found for option in slot.options for w in option}


# Names as tools of any domain write them (BFCL's among them), with the words of their tool's
# text, and words the tables once offered for them that say something else there: a customer's
# name is no label, a US state no status, a tip no advice, a model's tokens no access tokens.
NEIGHBOURS_NOT_SYNONYMS = [
    ("customer_name", {"customer", "email"}, {"label", "designation", "moniker"}),
    ("state", {"city", "weather", "us"}, {"status", "condition"}),
    ("calculate_tip", {"bill", "restaurant", "percentage"}, {"advice"}),
    ("max_tokens", {"model", "text", "generate"}, {"access", "credential"}),
    ("page", {"results", "search", "limit"}, {"sheet", "leaf"}),
    ("calculate_average", {"numbers", "list"}, {"median", "like", "typical"}),
    ("sum", {"numbers", "add", "math"}, {"amount", "figure"}),
    ("departure_time", {"train", "station", "rail"}, {"takeoff", "leaving"}),
    ("user_agent", {"http", "request", "header"}, {"assistant", "aide"}),
    ("thread_count", {"cpu", "process", "parallel"}, {"discussion"}),
    ("battery_level", {"device", "phone", "charge"}, {"degree", "extent"}),
    ("date_format", {"date", "string"}, {"layout", "encoding"}),
    ("search_keyword", {"search", "products"}, {"tag", "label"}),
    ("job_title", {"employment", "salary", "company"}, {"task", "todo"}),
    ("get_recipe", {"ingredients", "cuisine"}, {"dish"}),
    ("language", {"code", "python", "snippet"}, {"tongue", "idiom"}),
    ("loan_amount", {"bank", "interest"}, {"credit", "line", "advance"}),
    ("currency", {"exchange", "rate"}, {"money", "denomination"}),
    ("music_genre", {"songs", "artist"}, {"audio", "sound"}),
    ("health_check", {"server", "endpoint"}, {"wellness", "wellbeing"}),
    ("player_id", {"video", "media", "stream"}, {"athlete", "competitor"}),
    ("appointment_id", {"doctor", "clinic"}, {"slot"}),
    ("translate_text", {"language", "target"}, {"localize"}),
    ("random_seed", {"numbers"}, {"arbitrary"}),
    ("invite_user", {"group", "chat"}, {"bid", "summon"}),
    ("gift_card", {"balance", "store"}, {"giveaway", "keepsake"}),
    ("emergency_contact", {"patient", "phone"}, {"connection", "acquaintance"}),
    ("write_review", {"product", "rating", "stars"}, {"save", "persist", "store"}),
]


@pytest.mark.parametrize("split", ["train", "heldout"])
@pytest.mark.parametrize(("name", "context", "not_synonyms"), NEIGHBOURS_NOT_SYNONYMS)
def test_the_tables_offer_no_neighbouring_sense_for_a_word(name, context, not_synonyms, split):
    assert not _offered(name, context, split) & not_synonyms


@pytest.mark.parametrize(
    ("name", "context", "split", "synonym"),
    [  # where the word has the sense its group names, the group still offers it
        ("loan_amount", {"bank", "interest"}, "train", "lending"),
        ("departure_time", {"flight", "airport"}, "train", "takeoff"),
        ("access_token", {"oauth", "login"}, "heldout", "credential"),
        ("total_amount", {"invoice", "payment"}, "train", "sum"),
        ("player_name", {"league", "team"}, "train", "athlete"),
        ("average_rating", {"product"}, "train", "mean"),
        ("order_status", {"order", "shipping"}, "train", "current"),
        ("tag_ids", {"post"}, "train", "label"),
    ],
)
def test_the_tables_still_offer_a_words_synonyms_in_its_sense(name, context, split, synonym):
    assert synonym in _offered(name, context, split)


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_in_a_dotted_name_only_the_last_segment_leads_with_a_verb(split):
    """``alerts.ack`` acknowledges alerts: its namespace is what the action acts on, so a verb
    reading of ``alerts`` (``notifies``) is no paraphrase; the action itself still is one."""
    from hsa.transforms._names import name_words, slots

    def replaced(name: str) -> dict[int, set[tuple[str, ...]]]:
        segments = [name_words(s) for s in name.split(".")]
        out: dict[int, set[tuple[str, ...]]] = {}
        for slot in slots(segments, split, set()):
            out.setdefault(slot.segment, set()).add(slot.key)
        return out

    assert "alert" in lexicon().verbs  # else this test would say nothing
    assert 0 not in replaced("alerts.ack")
    assert ("alert",) in replaced("alert_team")[0]  # undotted: the leading word acts
    assert ("get",) in replaced("weather.get_forecast")[1]


def test_the_tables_name_no_single_domain():
    # Words of the shipped example's domain are there only as any dictionary has them: no
    # group is about live streaming, and the namespaces are general.
    from hsa.transforms.skill_ids import SKILL_NAMESPACES

    members = {m for g in lexicon().groups for m in g.train + g.heldout}
    assert not {"livestream", "streamer", "live_room"} & members
    assert not {"live", "host", "shop", "store", "mall", "studio"} & (
        set(SKILL_NAMESPACES["train"]) | set(SKILL_NAMESPACES["heldout"])
    )


# ---- no rename takes another identifier's meaning ---------------------------------------------


def _episode(tools: dict[str, list[str]]) -> Episode:
    first = next(iter(tools))
    return Episode.from_dict(
        {
            "id": "e",
            "harness": {
                "name": "h",
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": name,
                            "parameters": {
                                "type": "object",
                                "properties": {p: {"type": "string"} for p in params},
                            },
                        },
                    }
                    for name, params in tools.items()
                ],
            },
            "messages": [{"role": "user", "content": "hi"}],
            "gold": {"calls": [{"name": first, "arguments": {}}]},
        }
    )


def test_verification_rejects_a_rename_onto_another_parameters_meaning():
    episode = _episode({"get_items": ["item_ids"], "get_product": ["product_id"]})
    # item_ids -> product_ids: every identifier still resolves, but for a reader the call now
    # names products, which product_id already means.
    mapping = Mapping(parameters={"get_items": {"item_ids": "product_ids"}})
    with pytest.raises(VerificationFailed) as caught:
        verify_variant(episode, rename_episode(episode, mapping), mapping)
    assert caught.value.check == "meaning_taken"
    assert "product_id" in str(caught.value)
    # Its own meaning in other words (an abbreviation expanded, another convention) is fine.
    for new in ("item_identifiers", "itemIds"):
        mapping = Mapping(parameters={"get_items": {"item_ids": new}})
        verify_variant(episode, rename_episode(episode, mapping), mapping)


def test_verification_rejects_a_swap_and_a_rename_onto_a_new_name():
    episode = _episode({"get_item": [], "get_product": [], "list_users": []})
    for renames in (
        {"get_item": "get_product", "get_product": "get_item"},  # a swap
        {"get_item": "fetch_goods", "list_users": "fetch_goods_2", "get_product": "goods_fetch"},
    ):  # onto another's new name
        mapping = Mapping(tools=renames)
        with pytest.raises(VerificationFailed) as caught:
            verify_variant(episode, rename_episode(episode, mapping), mapping)
        assert caught.value.check == "meaning_taken"


def recipe(name: str, split: str, seed: int) -> Recipe:
    return Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": name,
            "seed": seed,
            "variants_per_episode": 2,
            "keep_original": False,
            "pipeline": [{name: {"split": split}}],
        }
    )


@pytest.mark.parametrize("name", RENAMERS)
@given(
    row=clashing_episode_dicts(),
    seed=st.integers(0, 2**32),
    split=st.sampled_from(["train", "heldout"]),
)
def test_no_rename_takes_another_identifiers_meaning(name, row, seed, split):
    """Over harnesses whose names are synonyms, abbreviations and plurals of each other, every
    renaming transform keeps every variant (verification, meaning check included, passes) and
    no new name says what another identifier of its kind says, before or after renaming."""
    episode = Episode.from_dict(row)
    for variant in augment_episode(recipe(name, split, seed), episode):
        assert isinstance(variant, Variant), str(variant)
        for kind, identifiers in identifiers_by_kind(episode.harness, variant.mapping).items():
            for old, news in identifiers.items():
                for new in news - {old}:
                    if meaning(new) == meaning(old):
                        continue
                    others = {
                        n
                        for other, names in identifiers.items()
                        if meaning(other) != meaning(old)
                        for n in names | {other}
                    }
                    assert meaning(new) not in {meaning(n) for n in others}, (kind, old, new)


@given(row=clashing_episode_dicts(), seed=st.integers(0, 2**32))
def test_one_naming_convention_per_variant(row, seed):
    """A variant renamed by several transforms writes every renamed name in one convention."""
    pipeline = [
        {n: {"split": "train"}}
        for n in (
            "skill_id_synonym",
            "tool_name_paraphrase",
            "parameter_name_paraphrase",
            "hook_implementation_swap",
        )
    ]
    chained = Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": "all",
            "seed": seed,
            "variants_per_episode": 2,
            "keep_original": False,
            "pipeline": pipeline,
        }
    )
    episode = Episode.from_dict(row)
    for variant in augment_episode(chained, episode):
        assert isinstance(variant, Variant), str(variant)
        convention = variant.episode.harness.prompt.options["naming"]
        renamed = [new for kind in variant.mapping.renamed().values() for new in kind.values()]
        assert convention in shared_conventions(renamed), renamed
        harness = variant.episode.harness
        for names in (
            harness.tool_names,
            harness.skill_ids,
            [h.name for h in harness.hooks],
            [p for t in harness.tools for p in t.properties],
        ):
            assert convention in shared_conventions(names), names


def test_mixing_conventions_is_an_option():
    episode = _episode(
        {
            f"get_{w}": []
            for w in ("item", "user", "flight", "price", "date", "trip", "cost", "client")
        }
    )
    seen = set()
    for seed in range(6):
        out = augment_episode(
            Recipe.from_dict(
                {
                    "recipe_version": 1,
                    "name": "mixed",
                    "seed": seed,
                    "variants_per_episode": 1,
                    "keep_original": False,
                    "pipeline": [{"tool_name_paraphrase": {"naming": "mixed"}}],
                }
            ),
            episode,
        )[0]
        seen |= {convention_of([n]) for n in out.episode.harness.tool_names}
        assert "naming" not in out.episode.harness.prompt.options
    assert len(seen) > 1
