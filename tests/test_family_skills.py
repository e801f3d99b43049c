"""The skill families: skill ids (synonyms, case, namespace, opaque) and skill content (rule-based
rewrite and LLM paraphrase), on the embedded example and on generated harnesses and bodies."""

from __future__ import annotations

import json
import random
import re
import sys
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsa.augment.lineage import replay
from hsa.augment.recipe import Recipe
from hsa.augment.variant import Variant
from hsa.dataset.pipeline import augment_episode
from hsa.errors import HsaError
from hsa.example import load_example_episodes
from hsa.model.episode import Episode
from hsa.model.harness import Harness
from hsa.model.skill import Skill
from hsa.model.tool import Tool
from hsa.render import render_messages
from hsa.text.markdown import parse
from hsa.text.mentions import find_mentions
from hsa.text.names import (
    abbreviation_groups,
    convention_of,
    identifier_like,
    meaning,
    name_words,
    shared_conventions,
)
from hsa.text.paraphrase import invariants, lost_invariants, normalise_space
from hsa.transforms import skill_content as content
from hsa.transforms import skill_ids as ids
from hsa.transforms._names import CONVENTION_SPLITS, lexicon
from hsa.transforms.skill_content import (
    SkillContentLlmParaphrase,
    SkillContentRewrite,
    essentials,
    rewrite_body,
    rules_of,
)
from hsa.transforms.skill_content import llm_paraphrase as llm_paraphrase_module
from hsa.transforms.skill_ids import SkillIdCase, SkillIdMask, SkillIdNamespace, SkillIdSynonym
from hsa.verify import verify_variant
from tests.conftest import assistant, call, served, variant_of
from tests.strategies import rich_episode_dicts

ID_TRANSFORMS = [SkillIdSynonym, SkillIdCase, SkillIdNamespace, SkillIdMask]


@pytest.fixture(scope="module")
def example() -> dict[str, Episode]:
    return {e.id: e for e in load_example_episodes()}


def run(transform, episode: Episode, seed: int = 0) -> tuple[Episode, dict]:
    params = transform.sample_params(episode, random.Random(seed))
    assert json.loads(json.dumps(params)) == params
    return transform.apply(episode, params), params


def loads(episode: Episode) -> list[tuple[str, str]]:
    """(loaded skill id, tool result content) for every skill-loader call of the episode."""
    calls, out = {}, []
    for message in episode.messages:
        for made in message.get("tool_calls") or ():
            if made["function"]["name"] == episode.harness.skill_loader:
                calls[made["id"]] = orjson.loads(made["function"]["arguments"])["name"]
        if message.get("role") == "tool" and message.get("tool_call_id") in calls:
            out.append((calls[message["tool_call_id"]], message["content"]))
    return out


# ---- option splits ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "table",
    [
        CONVENTION_SPLITS,
        ids.SKILL_NAMESPACES,
        ids.OPAQUE_PREFIXES,
        ids.SKILL_SUFFIXES,
        content.HEADING_STYLES,
        content.LIST_STYLES,
        content.WHITESPACE_STYLES,
        content.EMPHASIS_STYLES,
        content.PARAPHRASE_STYLES,
    ],
)
def test_option_tables_are_split_disjoint_and_non_trivial(table):
    assert set(table) == {"train", "heldout"}
    assert len(table["train"]) >= 2 and len(table["heldout"]) >= 2
    assert not set(table["train"]) & set(table["heldout"])


def test_list_styles_differ_between_parts():
    train = set(content.LIST_STYLES["train"].values())
    assert not train & set(content.LIST_STYLES["heldout"].values())


def test_phrase_groups_are_split_and_cannot_touch_an_invariant():
    seen: set[str] = set()
    for group in content.SKILL_PHRASES:
        assert group["train"] and group["heldout"], group
        members = [p.lower() for p in group["train"] + group["heldout"]]
        assert not seen & set(members), members  # a phrase belongs to one group only
        seen |= set(members)
        for phrase in members:
            assert not invariants(phrase), phrase  # no number, quote, identifier, negation
            assert not set(phrase) & set("*_`#>|[]()\"“”「」'0123456789"), phrase
    train = {p for g in content.SKILL_PHRASES for p in g["train"]}
    heldout = {p for g in content.SKILL_PHRASES for p in g["heldout"]}
    assert len(train) > 30 and len(heldout) > 30 and not train & heldout
    assert any(not p.isascii() for p in train) and any(not p.isascii() for p in heldout)


# ---- skill ids on the example ----------------------------------------------------------------


def test_synonym_rename_moves_every_mention(example):
    episode = example["lc-single-call-001"]  # loads product-qa-reply, whose body names another
    variant, params = run(SkillIdSynonym(), episode, seed=3)
    renames = params["renames"]
    assert set(renames) == set(episode.harness.skill_ids)  # every id gets new words
    new = renames["product-qa-reply"]
    assert meaning(new) != meaning("product-qa-reply")  # other words, not only another spelling
    # The rendered system prompt, the loader's enum, the call, the loaded body and the gold.
    system = render_messages(variant)[0]["content"]
    assert all(n in system for n in renames.values())
    assert not find_mentions(system, list(renames))
    enum = variant.harness.loader_tool().parameters["properties"]["name"]["enum"]
    assert sorted(enum) == sorted(renames.values())
    call = variant.messages[1]["tool_calls"][0]["function"]
    assert orjson.loads(call["arguments"]) == {"name": new}
    assert variant.gold.skills == (new,)
    body = variant.harness.skill(new).content
    assert f"`{renames['price-coupon-reply']}`" in body and "price-coupon-reply" not in body
    assert loads(variant) == [(new, body)]  # the loaded body is the variant's body
    verify_variant(episode, variant, SkillIdSynonym().mapping(episode, params))


def test_every_renamed_id_is_in_the_variants_one_convention(example):
    episode = example["lc-single-call-001"]
    for split in ("train", "heldout"):
        for seed in range(8):
            variant, params = run(SkillIdSynonym(split=split), episode, seed)
            assert params["naming"] in CONVENTION_SPLITS[split]
            assert variant.harness.prompt.options["naming"] == params["naming"]
            assert params["naming"] in shared_conventions(params["renames"].values())
    mixed = {
        convention_of([new])
        for seed in range(8)
        for new in run(SkillIdSynonym(naming="mixed"), episode, seed)[1]["renames"].values()
    }
    assert len(mixed) > 1  # the option that mixes conventions does


def test_heldout_synonyms_use_only_heldout_vocabulary(example):
    episode = example["lc-single-call-001"]
    train_words = {w for g in lexicon().groups for m in g.train for w in m.split("_")}
    train_words |= {w for g in abbreviation_groups() for m in g["train"] for w in m.split("_")}
    train_words |= set(ids.SKILL_SUFFIXES["train"])
    for seed in range(20):
        _, params = run(SkillIdSynonym(split="heldout"), episode, seed)
        for old, new in params["renames"].items():
            introduced = {w.lower() for w in name_words(new)} - set(name_words(old))
            assert introduced and not introduced & train_words, (old, new)


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_case_rename_uses_one_convention_of_its_split(example, split):
    episode = example["lc-single-call-001"]
    for seed in range(10):
        _, params = run(SkillIdCase(split=split), episode, seed)
        assert len(params["renames"]) == 12
        assert (
            convention_of(params["renames"].values(), CONVENTION_SPLITS[split]) == params["naming"]
        )
        for old, new in params["renames"].items():
            assert [w.lower() for w in name_words(new)] == name_words(old)


def test_namespace_and_mask(example):
    episode = example["lc-single-call-001"]
    _, params = run(SkillIdNamespace(split="heldout"), episode)
    namespaces = {new.split(".")[0] for new in params["renames"].values()}
    allowed = set(ids.harness_namespaces(episode, "heldout")) | set(ids.SKILL_NAMESPACES["heldout"])
    assert len(namespaces) == 1 and namespaces <= allowed
    assert all(new.split(".", 1)[1] == old for old, new in params["renames"].items())
    variant, params = run(SkillIdMask(), episode)
    pattern = "|".join(re.escape(p) for p in ids.OPAQUE_PREFIXES["train"])
    # written in the harness's own convention (the example's ids are kebab-case)
    assert all(re.fullmatch(f"({pattern})-[a-z]{{4}}", n) for n in params["renames"].values())
    assert loads(variant)[0][1] == variant.harness.skill(variant.gold.skills[0]).content


def test_namespaces_come_from_the_harness_or_the_general_table():
    harness = Harness(name="airline-support-desk", skills=(Skill("baggage-rules", "Bags.", "x"),))
    episode = Episode(
        "e",
        harness,
        ({"role": "user", "content": "hi"},),
        Episode.from_dict(
            {
                "id": "x",
                "harness": {"name": "h"},
                "messages": [{"role": "user", "content": "q"}],
                "gold": {"no_call": True},
            }
        ).gold,
    )
    own = set(ids.harness_namespaces(episode, "train")) | set(
        ids.harness_namespaces(episode, "heldout")
    )
    assert own == {"airline", "support", "desk"}  # every word of its name, in one split each
    assert not set(ids.harness_namespaces(episode, "train")) & set(
        ids.harness_namespaces(episode, "heldout")
    )
    seen = {
        run(SkillIdNamespace(), episode, seed)[1]["renames"]["baggage-rules"].split(".")[0]
        for seed in range(40)
    }
    allowed = set(ids.harness_namespaces(episode, "train")) | set(ids.SKILL_NAMESPACES["train"])
    assert seen <= allowed
    assert seen & own or not ids.harness_namespaces(episode, "train")


def test_new_ids_never_take_a_name_in_use():
    # Every case style of "item-qa" is already taken by a tool, a hook or a text mention.
    harness = Harness(
        name="h",
        skills=(
            Skill("item-qa", "Answers item questions.", "Use `itemQa`."),
            Skill("ITEM.QA", "Other.", "Mention: Item_Qa and ITEM-QA."),
        ),
        tools=(Tool("item_qa"), Tool("ITEM_QA"), Tool("ItemQa")),
    )
    episode = Episode(
        "e",
        harness,
        ({"role": "user", "content": "hi item.qa"},),
        Episode.from_dict(
            {
                "id": "x",
                "harness": {"name": "h"},
                "messages": [{"role": "user", "content": "q"}],
                "gold": {"no_call": True},
            }
        ).gold,
    )
    for seed in range(30):
        for split in ("train", "heldout"):
            _, params = run(SkillIdCase(split=split), episode, seed)
            taken = (
                set(harness.tool_names)
                | set(harness.skill_ids)
                | {"itemQa", "item.qa", "Item_Qa", "ITEM-QA"}
            )
            assert not set(params["renames"].values()) & taken
            assert "item-qa" not in params["renames"]  # no free style left for it


def test_bad_rename_params_are_rejected(example):
    episode = example["lc-single-call-001"]
    with pytest.raises(HsaError, match="unknown skill"):
        SkillIdMask().apply(episode, {"renames": {"no-such-skill": "x_1"}})
    with pytest.raises(HsaError, match="same id"):
        SkillIdMask().apply(episode, {"renames": {"product-qa-reply": "price-coupon-reply"}})
    with pytest.raises(HsaError, match="tool, hook or skill-loader"):
        SkillIdMask().apply(episode, {"renames": {"product-qa-reply": "check_stock"}})


@settings(max_examples=25)
@given(
    row=rich_episode_dicts(),
    seed=st.integers(0, 2**32),
    which=st.sampled_from(ID_TRANSFORMS),
    split=st.sampled_from(["train", "heldout"]),
)
def test_renamed_ids_are_fresh_identifiers_and_old_ones_are_gone(row, seed, which, split):
    episode = Episode.from_dict(row)
    transform = which(split=split)
    variant, params = run(transform, episode, seed)
    renames = params["renames"]
    new_ids = list(variant.harness.skill_ids)
    assert len(set(new_ids)) == len(new_ids)
    others = set(episode.harness.tool_names) | {h.name for h in episode.harness.hooks}
    for new in renames.values():
        assert identifier_like(new) and new not in others | set(episode.harness.skill_ids)
    Harness.from_dict(variant.harness.to_dict())  # still a valid harness
    verify_variant(episode, variant, transform.mapping(episode, params))
    # Call ids (c0, c1, ...) key the conversation's own calls: no mention of a skill whose id
    # happens to be the same string (hypothesis found a skill "c2" beside a call "c2").
    messages = [
        {k: v for k, v in m.items() if k != "tool_call_id"}
        | (
            {"tool_calls": [{k: v for k, v in c.items() if k != "id"} for c in m["tool_calls"]]}
            if m.get("tool_calls")
            else {}
        )
        for m in render_messages(variant)
    ]
    rendered = json.dumps(messages, ensure_ascii=False)
    assert not find_mentions(rendered, [o for o in renames if identifier_like(o)])


# ---- skill content: the rule-based rewrite ----------------------------------------------------


def ordered_items(body: str, *, words: bool = True) -> list:
    """The numbered items of ``body`` in order (numbers only, or with their normalised text)."""
    items: list[list[str]] = []
    current = None
    for line in body.split("\n"):
        match = re.match(r"^ {0,3}(\d+)[.)] +(.*)$", line)
        if match:
            current = [match.group(1), match.group(2)]
            items.append(current)
        elif current and line.strip() and not re.match(r"^\s*([-*+#]|\d+[.)])\s", line):
            current[1] += " " + line.strip()
        else:
            current = None
    if not words:
        return [number for number, _ in items]
    return [(number, normalise_space(text.replace("*", "")).lower()) for number, text in items]


def first_line(body: str) -> str:
    return next(line for line in body.split("\n") if line.strip()).strip("# ")


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_example_skills_keep_every_invariant_and_rule(example, split):
    episode = next(iter(example.values()))
    names = sorted(episode.harness.identifiers)
    changed = Counter()
    for seed in range(8):
        for flag in (True, False):
            transform = SkillContentRewrite(split=split, rephrase=flag)
            variant, _ = run(transform, episode, seed)
            for skill in episode.harness.skills:
                new = variant.harness.skill(skill.id).content
                changed[skill.id] += new != skill.content
                assert not lost_invariants(essentials(skill.content), new, names), skill.id
                assert first_line(new) == first_line(skill.content)  # the title stays first
                # Numbered steps keep their order (and, without synonyms, their words).
                assert ordered_items(new, words=not flag) == ordered_items(
                    skill.content, words=not flag
                )
                assert re.search(r"(Viewer|Calls): ", new)  # at least one example is left
                if not flag:
                    assert not Counter(rules_of(skill.content)) - Counter(rules_of(new))
    assert all(changed[s.id] >= 12 for s in episode.harness.skills), changed


def test_a_chinese_phrase_is_reworded_only_where_it_is_a_word():
    """Chinese has no spaces: a table phrase found inside other words (然后 in 虽然后来, 比如 in
    比如果汁 is a word, 解释 in 解释权 is not) is left alone, and never drawn when it is found
    nowhere else."""
    body = "- 虽然后来缺货，最终解释权归商家。\n- 比如果汁缺货，然后解释原因。\n"
    plan = {"phrases": [["然后", "接着"], ["比如", "例如"], ["解释", "说明"]]}
    out = rewrite_body(body, plan, [])
    assert "虽然后来" in out and "解释权" in out  # pieces of other words, as they were
    assert "例如果汁" in out and "接着说明原因" in out  # the words themselves, reworded
    only_inside = "- 虽然后来缺货，最终解释权归商家。\n- 请先确认地址。\n"
    drawn = {
        phrase
        for seed in range(40)
        for phrase, _ in content.draw_plan(only_inside, [], random.Random(seed), "train").get(
            "phrases", ()
        )
    }
    assert drawn == {"确认"}


def test_a_japanese_body_gets_no_chinese_synonyms():
    """Kanji are Japanese words too: a text with kana is Japanese, and the Chinese table phrases
    found in it (商品, 例如 is not Japanese) are neither drawn nor replaced."""
    body = "- 商品を交換する前に、注文を確認してください。\n- 商品到着後に返品できます。\n"
    plan = {"phrases": [["商品", "产品"], ["确认", "核实"]]}
    assert rewrite_body(body, plan, []) == body
    drawn = {
        phrase
        for seed in range(40)
        for phrase, _ in content.draw_plan(body, [], random.Random(seed), "train").get(
            "phrases", ()
        )
    }
    assert drawn == set()
    chinese = "- 交换商品前请确认订单。\n"
    assert "产品" in rewrite_body(chinese, plan, [])
    # The body is the document: a line of kanji alone, or one cut at a name, is Japanese too.
    mixed = "返品の手順です。\n\n1. 商品確認\n2. 返金\n3. get_order → 商品確認\n"
    assert rewrite_body(mixed, plan, ["get_order"]) == mixed


def test_loaded_bodies_follow_the_rewrite(example):
    for episode in list(example.values())[::40]:
        variant, _ = run(SkillContentRewrite(), episode, seed=1)
        assert loads(episode) and all(
            body == variant.harness.skill(skill).content for skill, body in loads(variant)
        )
        assert variant.gold == episode.gold
        # Only loaded-skill results change; every other message is untouched.
        loaded_results = {
            i
            for i, m in enumerate(episode.messages)
            if m.get("role") == "tool" and any(m["content"] == body for _, body in loads(episode))
        }
        for i, (a, b) in enumerate(zip(episode.messages, variant.messages)):
            assert a == b or i in loaded_results


def test_dependent_lists_and_step_sections_keep_their_order(example):
    episode = next(iter(example.values()))
    price = episode.harness.skill("price-coupon-reply").content
    rules = re.findall(r"^- (\S+ \S+)", price, re.M)  # "- Then say..." ties this list's order
    for seed in range(10):
        plan = content.draw_plan(
            price, [], random.Random(seed), "train", restyle=False, rephrase=False
        )
        assert "lists" not in plan
        new = rewrite_body(price, plan)
        assert re.findall(r"^- (\S+ \S+)", new, re.M) == rules
    body = (
        "# Refunds\n\n## 流程\n\n- 先查政策\n- 再开工单\n\n## Rules\n\n- Be calm.\n"
        "- Never blame the viewer.\n- 不要 promise 200 yuan.\n"
    )
    moved = set()
    for seed in range(20):
        new = rewrite_body(body, content.draw_plan(body, [], random.Random(seed), "train"))
        assert new.index("先查政策") < new.index("再开工单")
        assert new.index("流程") < new.index("Rules")  # the 流程 section keeps its place
        moved.add(tuple(re.findall(r"Be calm|Never blame|不要 promise", new, re.I)))
    assert len(moved) > 1  # while the rules list does move


# Lists whose order is the skill's own: ordered steps (sequence cues in any language the rewrite
# reads, a last resort, tool calls whose results feed the next) and lists whose items own a
# block the Markdown leaves outside them. Each body names its items by a few words, in order.
STEP_LISTS = {
    # An item that tells what was done already follows the item that does it (a food-delivery
    # audit: "tell the user it has been passed on" came before passing it on)
    "a relay, then telling the user it is done (zh)": (
        "# 联系商家\n\n- 用户要求加餐具、少辣、催单时，调用联系商家工具 `contact_merchant`，把用户原话转述给商家。\n"
        "- 告诉用户已经转达，商家会尽快处理。\n",
        ["contact_merchant", "已经转达"],
    ),
    "a relay, then telling the user it is done (en)": (
        "# Merchant contact\n\n- When the user asks for cutlery, call `contact_merchant` with"
        " their words.\n- Tell the user their request has already been passed on.\n",
        ["call `contact_merchant`", "already been passed"],
    ),
    # Steps without a cue word, under a heading that says they are a procedure
    "recruiting steps under 'Marche à suivre' (fr)": (
        "# Entretiens\n\n## Marche à suivre\n\n- Vérifier le CV.\n- Planifier l'entretien.\n"
        "- Envoyer la confirmation.\n\n## Règles\n\n- Rester courtois.\n",
        ["Vérifier le CV", "Planifier l'entretien", "Envoyer la confirmation"],
    ),
    "shipping steps under '作業の流れ' (ja)": (
        "# 出荷\n\n## 作業の流れ\n\n- 在庫を確認します。\n- 出荷を作成します。\n"
        "- 追跡番号を伝えます。\n\n## 注意\n\n- 丁寧に話します。\n",
        ["在庫を確認", "出荷を作成", "追跡番号"],
    ),
    "onboarding steps under 'Proceso de alta' (es)": (
        "# Alta\n\n## Proceso de alta\n\n- Crear la cuenta.\n- Asignar el equipo.\n"
        "- Enviar las credenciales.\n\n## Reglas\n\n- Ser amable.\n",
        ["Crear la cuenta", "Asignar el equipo", "Enviar las credenciales"],
    ),
    "helpdesk, a fallback and a ticket block under the last bullet": (
        "# Laptop won't boot\n\nWork through these with the user:\n\n"
        "* Check the power light and the charger.\n"
        "* Hold the power button for 15 seconds, then try again.\n"
        "* Seek the asset tag on the bottom of the laptop and note it.\n"
        "* If nothing helps, open a ticket:\n"
        '```json\n{"category": "hardware", "asset_tag": "<tag>"}\n```\n'
        "* Tell the user the ticket number.\n",
        ["Check the power", "Hold the power", "Seek the asset", "open a ticket"],
    ),
    "booking, tool calls and a last resort": (
        "# Cancel a booking\n\n"
        "* Find the booking with `get_booking` and the reference the user gave.\n"
        "* Call `cancel_booking` with the booking id.\n"
        "* Refund with `request_refund` to the original payment.\n"
        "* If nothing helps, hand over to a human agent.\n",
        ["Find the booking", "Call `cancel_booking`", "Refund with", "hand over"],
    ),
    "airline, tool calls alone": (
        "# Cancellation\n\n- Look up the booking with `get_booking`.\n"
        "- Cancel it with `cancel_booking` and the traveller's reason.\n"
        "- Refund with `request_refund`: `original_payment` takes 7 to 10 days.\n",
        ["Look up the booking", "Cancel it", "Refund with"],
    ),
    "transfers, an item that claims the first place": (
        "# Transfers\n\n- Check the balance of the source account first.\n"
        "- Use the exact account ids the user named.\n- Send the money once.\n",
        ["Check the balance", "Use the exact", "Send the money"],
    ),
    "returns, an item that opens on what the one before found": (
        "# Late parcels\n\n- Look up the order and its tracking number.\n"
        "- If it has shipped, send the tracking link.\n- Apologise for the delay once.\n",
        ["Look up the order", "send the tracking", "Apologise for"],
    ),
    "退款 (zh)": (
        "# 退款\n\n- 先查询订单状态。\n- 核对退款金额。\n- 如果都不行，转人工客服。\n",
        ["查询订单", "核对退款", "转人工"],
    ),
    "返品 (ja)": (
        "# 返品\n\n- まず注文番号を確認します。\n- 配送状況を調べます。\n"
        "- それでも解決しない場合は、担当者に引き継ぎます。\n",
        ["注文番号", "配送状況", "担当者"],
    ),
    "Störung (de)": (
        "# Störung melden\n\n- Zuerst die Kundennummer erfragen.\n"
        "- Den Router neu starten lassen.\n- Wenn nichts hilft, ein Ticket anlegen.\n",
        ["Kundennummer", "Router", "Ticket anlegen"],
    ),
    "deploy, a code block after a captioned last bullet": (
        "# Deploy\n\n- Build the image.\n- Tag the image with the release.\n"
        "- Push it with this command:\n\n```bash\nmake push\n```\n",
        ["Build the image", "Tag the image", "Push it"],
    ),
    "deploy, a code block closed outside its bullet": (
        "# Deploy\n\n- Logs are kept for 30 days.\n- Run the check:\n  ```bash\n"
        "make check\n  ```\n- Metrics live in Grafana.\n",
        ["Logs are kept", "Run the check", "Metrics live"],
    ),
}

# Lists of rules and facts, whose order carries no meaning: they still move (an order inside one
# item, "first, then", ties nothing to the other items). Items own the blocks indented under them.
FREE_LISTS = {
    "stock (en)": (
        "# Stock reply\n\n- Answer yes or no first, then the number left.\n"
        "- Be calm.\n- Keep it to one sentence.\n- Quote sizes as written.\n",
        ["Answer yes or no", "Be calm", "Keep it", "Quote sizes"],
    ),
    "语气 (zh)": (
        "# 回复\n\n- 语气要亲切。\n- 回答要简短，先说结论再说原因。\n- 称呼观众为宝子。\n",
        ["语气要亲切", "回答要简短", "称呼观众"],
    ),
    "丁寧 (ja)": (
        "# 返信\n\n- 丁寧語を使います。\n- 値段は道具の結果どおりに伝えます。\n- 返事は短くします。\n",
        ["丁寧語", "値段は", "返事は"],
    ),
    "Ton (de)": (
        "# Antworten\n\n- Sei freundlich.\n- Antworte kurz.\n- Nenne Preise in Euro.\n",
        ["Sei freundlich", "Antworte kurz", "Nenne Preise"],
    ),
    "deploy notes with blocks of their own": (
        "# Deploy notes\n\n- Staging lives in `eu-west-1`:\n\n  ```yaml\n  region: eu-west-1\n"
        "  ```\n\n- Secrets are read from the vault:\n\n      vault read secret/app\n\n"
        "- Rollbacks are allowed:\n  - for the web tier;\n  - for the worker tier.\n"
        "- Logs are kept for 30 days\n  and rotated at midnight.\n",
        ["Staging lives", "Secrets are read", "Rollbacks are allowed", "Logs are kept"],
    ),
}

# What each item owns, as read after normalisation (list markers and line breaks ignored): the
# whole unit must stand together in every variant.
OWNED_UNITS = [
    'If nothing helps, open a ticket: ```json {"category": "hardware", "asset_tag": "<tag>"} ```',
    "Push it with this command: ```bash make push ```",
    "Staging lives in `eu-west-1`: ```yaml region: eu-west-1 ```",
    "Secrets are read from the vault: vault read secret/app",
    "Rollbacks are allowed: for the web tier; for the worker tier.",
    "Logs are kept for 30 days and rotated at midnight.",
]


def flat(text: str) -> str:
    """``text`` without list markers and line breaks, spaces collapsed: what moves with what."""
    lines = [re.sub(r"^\s*([-*+]|\d+[.)])\s+", "", line).strip() for line in text.split("\n")]
    return re.sub(r"\s+", " ", " ".join(line for line in lines if line))


def item_order(text: str, keys: list[str]) -> list[int]:
    flattened = flat(text)
    return [flattened.index(key) for key in keys]


def variants_of(body: str, seeds=range(25), **options):
    episode = skill_episode([body])
    for seed in seeds:
        variant, _ = run(SkillContentRewrite(rephrase=False, **options), episode, seed)
        yield variant.harness.skill("skill-0").content


@pytest.mark.parametrize("name", sorted(STEP_LISTS))
def test_lists_of_steps_keep_their_order(name):
    body, keys = STEP_LISTS[name]
    for new in variants_of(body):
        order = item_order(new, keys)
        assert order == sorted(order), (name, new)


@pytest.mark.parametrize("name", sorted(FREE_LISTS))
def test_lists_of_rules_and_facts_still_move(name):
    body, keys = FREE_LISTS[name]
    orders = {tuple(item_order(new, keys)) for new in variants_of(body)}
    assert any(list(order) != sorted(order) for order in orders), name


@pytest.mark.parametrize("name", sorted(STEP_LISTS) + sorted(FREE_LISTS))
def test_an_item_moves_with_every_block_it_owns(name):
    body, _ = {**STEP_LISTS, **FREE_LISTS}[name]
    units = [unit for unit in OWNED_UNITS if unit in flat(body)]
    for new in variants_of(body):
        for unit in units:
            assert unit in flat(new), (unit, new)


# Items for the property below: rules without a sequence cue, each named by its own word, and
# what an item may own (CommonMark: lines indented to its content) or leave under it outside the
# list (a code block right after a captioned last item, which the Markdown does not give it).
_RULES = [
    "Be calm with {w}.",
    "Keep replies about {w} short.",
    "Quote the {w} figures as written.",
    "语气要亲切，提到 {w} 时简短。",
    "{w} の値段は結果どおりに伝えます。",
    "Nenne {w} in Euro.",
]
_WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
_OWNED = {
    "none": "",
    "fence": "\n{pad}```text\n{pad}{w} fenced line\n{pad}```",
    "code": "\n\n{pad}    {w} code line",
    "sub": "\n{pad}- {w} sub one\n{pad}- {w} sub two",
    "wrap": "\n{pad}{w} continued line",
}
_CUES = [
    "Then check {w}.",
    "If nothing helps, call {w} support.",
    "先确认 {w}。",
    "次に {w} を確認します。",
    "Zuletzt {w} prüfen.",
]


@st.composite
def owning_lists(draw) -> tuple[str, list[str], bool]:
    """A skill body with one bullet list whose items own blocks; the items' units (flattened, as
    they must read in every variant) and whether the list's order is the skill's."""
    marker = draw(st.sampled_from(["-", "*", "+"]))
    pad = " " * (len(marker) + 1)
    n = draw(st.integers(2, 5))
    loose = draw(st.booleans())
    cue_at = draw(st.one_of(st.none(), st.integers(0, n - 1)))
    attached = draw(st.booleans())
    lines, units = [], []
    for i, word in enumerate(_WORDS[:n]):
        text = draw(st.sampled_from(_RULES)).format(w=word)
        if i == cue_at:
            text = draw(st.sampled_from(_CUES)).format(w=word)
        owned = draw(st.sampled_from(sorted(_OWNED)))
        tail = _OWNED[owned].format(pad=pad, w=word)
        if attached and i == n - 1:
            text, tail = text.rstrip(".。") + ":", f"\n```text\n{word} attached line\n```"
        item = f"{marker} {text}{tail}"
        lines.append(("\n" if loose and i else "") + item)
        units.append(flat(item))
    body = "# Notes\n\nWhat to keep in mind:\n\n" + "\n".join(lines) + "\n"
    return body, units, cue_at is not None or attached


@settings(max_examples=60, deadline=None)
@given(case=owning_lists(), seed=st.integers(0, 2**32), split=st.sampled_from(["train", "heldout"]))
def test_an_item_and_its_blocks_move_as_one_and_steps_keep_their_order(case, seed, split):
    body, units, ordered = case
    new = next(variants_of(body, seeds=[seed], split=split))
    flattened = flat(new)
    for unit in units:
        assert flattened.count(unit) == 1, (unit, new)  # whole, once, and nowhere else
    if ordered:
        order = [flattened.index(unit) for unit in units]
        assert order == sorted(order), new


def test_an_example_section_keeps_its_rules_tables_and_captions():
    """Under an "Example" heading: rule bullets are rules (never dropped), a table is
    reference (kept), and a caption ("The deploy file it writes:") keeps the block it introduces
    right after it; the examples themselves still move and go."""
    body = (
        "# Deploy\n\nA deploy is a build, then a promote.\n\n## Example call\n\n"
        '```json\n{"name": "build"}\n```\n\nThe second call, once the build passed.\n\n'
        '```json\n{"name": "promote"}\n```\n\nWhat the pipeline runs for you:\n\n'
        "```bash\nmake build\n```\n\nThe deploy file it writes:\n\n```yaml\nto: staging\n```\n\n"
        "| step | tool |\n|---|---|\n| 1 | `build` |\n\n"
        "step | when\n--- | ---\n2 | after the build\n\nNever promote a build that failed.\n\n"
        "| Name |\n| --- |\n| checkout-api |\n\n> Do not deploy on Friday.\n\n"
        "- Do not build from a branch the user did not name.\n"
        '- Only promote when it is "passed".\n- build, then promote\n- a second example\n'
    )
    dropped, moved = 0, 0
    for seed in range(40):
        plan = content.draw_plan(body, [], random.Random(seed), "train", rephrase=False)
        new = rewrite_body(body, plan)
        for kept in (
            "Do not build from a branch the user did not name.",
            'promote when it is "passed".',
            "| 1 | `build` |",
            "2 | after the build",
            "Never promote a build that failed.",
            "| checkout-api |",
            "> Do not deploy on Friday.",
        ):
            assert kept in new, (seed, new)
        assert re.search(r"runs for you:\n\n```bash\nmake build\n```", new), new
        assert re.search(r"file it writes:\n\n```yaml\nto: staging\n```", new), new
        dropped += "a second example" not in new or "The second call" not in new
        moved += new.find('"build"') > new.find('"promote"') >= 0
    assert dropped and moved  # the examples themselves still go and move


@pytest.mark.parametrize("width", range(40, 101, 3))
def test_rewrapping_never_breaks_inline_code_or_a_quoted_string(width):
    from hsa.text.markdown import rewrap

    line = (
        'When the user says "run the tests", call `run` with `type` set to `test`. For "lint" '
        'use `type: lint`; for end-to-end checks say "no known interactions" or use ``a ` b``.'
    )
    lines = rewrap([line], "", width)
    assert lines is not None and " ".join(lines) == line
    for wrapped in lines:
        assert wrapped.count('"') % 2 == 0 and re.sub(r"``.*?``", "", wrapped).count("`") % 2 == 0
    # a stray inch mark pairs with no quote inside code; curly quotes hold together too
    code = '`check_fit(note="fits a 5 inch bag")`'
    stray = f'A 5" screen fits; to check it call {code} and then say “no known interactions”.'
    lines = rewrap([stray], "", width // 2)
    assert lines is not None and " ".join(lines) == stray
    assert any(code in wrapped for wrapped in lines)
    assert any("“no known interactions”" in wrapped for wrapped in lines)


def test_tampered_plans_are_refused(example):
    episode = next(iter(example.values()))
    strategy = episode.harness.skill("coupon-price-strategy").content
    with pytest.raises(HsaError, match="order carries meaning"):
        rewrite_body(strategy, {"lists": {"0": [1, 0, 2, 3, 4]}})  # the numbered steps
    with pytest.raises(HsaError, match="may not be dropped"):
        rewrite_body(strategy, {"lists": {"1": [0, 1, 2]}})  # a rule is not an example
    with pytest.raises(HsaError, match="not one of"):
        rewrite_body(strategy, {"headings": "fancy"})
    with pytest.raises(HsaError, match="one synonym group"):
        rewrite_body(strategy, {"phrases": [["make sure", "never"]]})
    with pytest.raises(HsaError, match="skill 'coupon-price-strategy'"):
        SkillContentRewrite().apply(
            episode, {"plans": {"coupon-price-strategy": {"sections": [1, 0, 2]}}}
        )  # "Steps" keeps its place


def test_styles_render_as_promised():
    body = (
        "# Title\n\nIntro paragraph that is\nwrapped over two lines.\n\n## Rules\n\n"
        "- Never quote 3 prices.\n- Keep `code_span` as is\n  across lines.\n\n"
        "## Examples\n\nViewer: a\nReply: b\n\nViewer: c\nReply: d\n"
    )
    assert rewrite_body(body, {}) == body  # an empty plan changes nothing, byte for byte
    setext = rewrite_body(body, {"headings": "setext"})
    assert setext.startswith("Title\n=====") and "\nRules\n-----\n" in setext
    bold = rewrite_body(body, {"headings": "bold"})
    assert "\n**Rules**\n\n- Never" in bold and bold.startswith("# Title")
    assert "## Rules ##" in rewrite_body(body, {"headings": "atx_closed"})
    wide = rewrite_body(body, {"list_style": "dash_wide"})
    assert "-   Keep `code_span` as is\n    across lines." in wide
    unwrapped = rewrite_body(body, {"whitespace": "unwrap"})
    assert "Intro paragraph that is wrapped over two lines." in unwrapped
    assert "- Keep `code_span` as is across lines." in unwrapped
    assert "Viewer: a\nReply: b" in unwrapped  # examples are quoted as written
    assert "- **Never** quote" in rewrite_body(body, {"emphasis": "strong_negations"})
    assert "- NEVER quote" in rewrite_body(body, {"emphasis": "caps_negations"})
    dropped = rewrite_body(body, {"examples": {"1": [1]}})
    assert "Viewer: c" in dropped and "Viewer: a" not in dropped
    # A rewrite of a rewrite parses the same structure again.
    again = rewrite_body(bold, {"sections": [1, 0]})
    assert again.index("**Examples**") < again.index("**Rules**")


@pytest.mark.parametrize("space", ["\u00a0", "\u202f", " ", ""])
def test_a_labelled_paragraph_is_not_rewrapped_whatever_space_its_colon_takes(space):
    """French puts a (no-break) space before ":" ("Client : ...", "Réponse : ..."): the lines
    of a dialogue are fields, and unwrapped they ran into one paragraph of prose."""
    dialogue = f"Client{space}: Je veux annuler BK-4821.\nRéponse{space}: Cela coûte 35 €.\n"
    body = f"# Annulation\n\n## Dialogue\n\n{dialogue}"
    for whitespace in ("unwrap", "wrap_100"):
        assert dialogue in rewrite_body(body, {"whitespace": whitespace})


CLAIMS_BODY = """# Water damage

## 1. Stop the water

Tell the customer to shut the main valve.

## 2. Photos

Ask for photos of every wet room.

## 3. Drying

Only once the photos are uploaded may the customer start drying.

## Covered perils (e.g. fire, theft, storm)

- Fire and smoke damage.
- Theft after a break-in.
- Storm damage to the roof.

## Examples of red flags

- The policy started less than 30 days ago.
- The customer presses for payment within 60 days.

## Examples

Customer: When will I be paid?

Agent: Your claim is in assessment; I cannot give a date yet.

Customer: Where is my claim?

Agent: It is with the adjuster.

## Links

See the handbook and the pricing note, which say how
the deductible applies to a second claim in one year.

[customer-deductible-handbook-2024]: https://docs.example.com/handbook/deductibles
[pricing-note]: https://docs.example.com/pricing

Customer (angry): Why is my claim taking so long?
Agent: I understand; let me check the status now.
"""


def test_a_claims_skill_keeps_its_counted_sections_reference_lists_and_conversations():
    """An insurance skill (an audit): "## 1." sections were reordered (drying before stopping
    the water); "(e.g. fire, theft, storm)" and "Examples of red flags" made reference lists
    droppable; a conversation written a turn a paragraph was re-paired (answers swapped); link
    reference definitions and "Customer (angry):" lines were joined into one line."""
    kept = [
        "## 1. Stop the water",
        "## 2. Photos",
        "## 3. Drying",
        "Fire and smoke damage.",
        "Theft after a break-in.",
        "Storm damage to the roof.",
        "less than 30 days ago",
        "within 60 days",
        "[customer-deductible-handbook-2024]: https://docs.example.com/handbook/deductibles\n"
        "[pricing-note]: https://docs.example.com/pricing",
        "Customer (angry): Why is my claim taking so long?\nAgent:",
    ]
    dialogue = [
        "Customer: When will I be paid?",
        "Agent: Your claim is in assessment; I cannot give a date yet.",
        "Customer: Where is my claim?",
        "Agent: It is with the adjuster.",
    ]
    for seed in range(40):
        for split in ("train", "heldout"):
            plan = content.draw_plan(CLAIMS_BODY, [], random.Random(seed), split)
            new = rewrite_body(CLAIMS_BODY, plan)
            for text in kept:
                assert text in new, (seed, split, text, new)
            heads = [new.index(h) for h in kept[:3]]
            assert heads == sorted(heads), (seed, split, new)
            said = [new.index(turn) for turn in dialogue]
            assert said == sorted(said), (seed, split, new)


def test_example_bullets_may_go_but_rules_stay():
    body = (
        "# Sizes\n\n- Give the size from `recommend_size`.\n- 例如：身高160穿M码。\n"
        "- For example, 52 kg fits M.\n- Never guess a size.\n"
    )
    seen = set()
    for seed in range(30):
        plan = content.draw_plan(body, [], random.Random(seed), "train", restyle=False)
        new = rewrite_body(body, plan)
        assert "`recommend_size`" in new and "Never guess a size." in new
        seen.add(("身高160" in new, "52 kg" in new))
    assert any(not (zh and en) for zh, en in seen)  # some variants drop an example bullet


def test_invariant_checker_finds_what_was_lost():
    original = (
        'Say "直播间专属价" and 「宝子」; call `get_price` with link_number 3.\n'
        "Never promise 96.2 yuan; do not round. 不要夸大，禁止承诺。"
    )
    assert lost_invariants(original, original.replace("\n", "\n  "), ["get_price"]) == []
    assert lost_invariants(original, original.replace("do not", "don't")) == []
    assert lost_invariants(original, original.replace("96.2", "96")) == ["96.2"]
    assert lost_invariants(original, original.replace("Never", "Always")) == ["never"]
    assert lost_invariants(original, original.replace("不要", "要")) == ["不"]
    assert lost_invariants(original, original.replace("「宝子」", "宝子")) == ["“宝子”"]
    assert lost_invariants(original, original.replace("`get_price`", "it"), ["get_price"]) == [
        "`get_price`",
        "get_price",
    ]
    assert lost_invariants(original, original.replace("link_number", "link")) == ["link_number"]


_CHUNK = st.sampled_from(
    [
        "the viewer",
        "make sure",
        "in parallel",
        "然后",
        "商品",
        "库存",
        "exactly as",
        "give",
        "never",
        "do not",
        "不要",
        "禁止",
        "no",
        "`check_stock`",
        "`recommend_size(link_number=3)`",
        '"hello there"',
        "「宝子」",
        "link_number",
        "price-coupon-reply",
        "50%",
        "1-10",
        "3号",
        "and",
        "stock",
        "answer",
        "reply",
        "**important**",
        "(see this)",
        "ok",
        "tonight",
    ]
)


@st.composite
def sentences(draw) -> str:
    words = draw(st.lists(_CHUNK, min_size=2, max_size=8))
    words.insert(0, draw(st.sampled_from(["Say", "Use", "Check", "请", "Then", "Also", "Keep"])))
    words.append(str(draw(st.integers(0, 999))))
    return " ".join(words) + draw(st.sampled_from([".", "。", "", ";"]))


@st.composite
def bullet_lists(draw, ordered: bool = False) -> str:
    items = draw(st.lists(sentences(), min_size=1, max_size=5))
    marker = draw(st.sampled_from(["-", "*", "+"]))
    lines = []
    for i, text in enumerate(items):
        head = f"{i + 1}. " if ordered else f"{marker} "
        if draw(st.booleans()) and " " in text:
            cut = text.index(" ", len(text) // 2) if " " in text[len(text) // 2 :] else None
            if cut:
                text = text[:cut] + "\n" + " " * len(head) + text[cut + 1 :]
        lines.append(head + text)
    return "\n".join(lines)


@st.composite
def skill_bodies(draw) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append("# " + draw(st.sampled_from(["Price reply", "价格回复", "Size strategy"])))
    if draw(st.booleans()):
        parts.append(draw(sentences()))
    style = draw(st.sampled_from(["atx", "setext", "closed"]))
    for heading in draw(
        st.lists(
            st.sampled_from(["Rules", "Tone", "Steps", "流程", "Examples", "示例", "Notes"]),
            max_size=4,
            unique=True,
        )
    ):
        if style == "setext":
            parts.append(f"{heading}\n{'-' * 5}")
        else:
            parts.append(f"## {heading}" + (" ##" if style == "closed" else ""))
        if heading in ("Examples", "示例"):
            parts += [
                f"Viewer: {draw(sentences())}\nReply: {draw(sentences())}"
                for _ in range(draw(st.integers(1, 3)))
            ]
        else:
            ordered = heading in ("Steps", "流程")
            if draw(st.booleans()):
                parts.append(draw(sentences()) + ":")
            parts.append(draw(bullet_lists(ordered=ordered)))
    return "\n\n".join(parts) + draw(st.sampled_from(["", "\n"]))


def skill_episode(bodies: list[str], properties: dict | None = None) -> Episode:
    skills = [{"id": f"skill-{i}", "description": "d", "content": b} for i, b in enumerate(bodies)]
    tools = [
        {
            "type": "function",
            "function": {
                "name": "check_stock",
                "parameters": {
                    "type": "object",
                    "properties": properties or {"link_number": {"type": "integer"}},
                },
            },
        }
    ]
    calls = [
        {
            "id": f"s{i}",
            "type": "function",
            "function": {"name": "load_skill", "arguments": json.dumps({"name": s["id"]})},
        }
        for i, s in enumerate(skills)
    ]
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": calls},
    ]
    messages += [
        {"role": "tool", "tool_call_id": c["id"], "content": s["content"]}
        for c, s in zip(calls, skills)
    ]
    messages.append({"role": "assistant", "content": "done"})
    return Episode.from_dict(
        {
            "id": "g",
            "harness": {"name": "h", "skills": skills, "tools": tools},
            "messages": messages,
            "gold": {
                "turns": [
                    {"at": 1, "skills": [s["id"] for s in skills]},
                    {"at": len(messages) - 1, "no_call": True},
                ]
            },
        }
    )


@settings(max_examples=40)
@given(
    bodies=st.lists(skill_bodies(), min_size=1, max_size=2),
    seed=st.integers(0, 2**32),
    split=st.sampled_from(["train", "heldout"]),
    rephrase=st.booleans(),
)
def test_rewrite_keeps_invariants_rules_title_and_steps(bodies, seed, split, rephrase):
    episode = skill_episode(bodies)
    names = sorted(episode.harness.identifiers)
    transform = SkillContentRewrite(split=split, rephrase=rephrase)
    variant, _ = run(transform, episode, seed)
    for skill in episode.harness.skills:
        new = variant.harness.skill(skill.id).content
        assert not lost_invariants(essentials(skill.content), new, names)
        assert ordered_items(new, words=not rephrase) == ordered_items(
            skill.content, words=not rephrase
        )
        if skill.content.startswith("# "):
            assert first_line(new) == first_line(skill.content)
        if not rephrase:
            assert not Counter(rules_of(skill.content)) - Counter(rules_of(new))
        # A second rewrite of the rewrite keeps the first one's invariants.
        again = rewrite_body(
            new, content.draw_plan(new, names, random.Random(seed + 1), split), names
        )
        assert not lost_invariants(essentials(new), again, names)
    assert [body for _, body in loads(variant)] == [s.content for s in variant.harness.skills]


@settings(max_examples=60)
@given(text=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200))
def test_empty_plan_is_exact_on_any_text(text):
    assert rewrite_body(text, {}) == text
    plan = content.draw_plan(text, [], random.Random(0), "train")
    try:
        rewrite_body(text, plan)
    except HsaError as exc:  # a plan may be refused for losing an invariant, never crash
        assert "loses" in exc.reason


# ---- skill content: the LLM paraphrase -------------------------------------------------------

BODY = (
    "# Price reply\n\nAnswer with the final price from `get_price` first.\n\n"
    '- Never round 96.2 down.\n- Say "直播间专属价", 不要 say cheapest.\n'
)


class _Endpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint whose model name picks its behaviour."""

    hits: ClassVar[list[str]] = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).hits.append(request["model"])
        text = request["messages"][-1]["content"]
        if request["model"] == "slow":
            time.sleep(1.5)
        output = {
            "faithful": text.replace("Answer with", "Reply with"),
            "garbage": "Lorem ipsum dolor sit amet.",
        }.get(request["model"], text)
        data = json.dumps(
            {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": request["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": output},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        ).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (the timeout case)
            pass


@pytest.fixture(scope="module")
def endpoint():
    with served(_Endpoint) as url:
        yield url


def paraphrase(endpoint, tmp_path, model, **options):
    transform = SkillContentLlmParaphrase(
        base_url=endpoint, model=model, cache_dir=str(tmp_path / "cache"), **options
    )
    episode = skill_episode([BODY])
    variant, params = run(transform, episode)
    return episode, variant, params["skills"]["skill-0"]


def test_faithful_paraphrase_is_accepted_and_replays_without_the_endpoint(endpoint, tmp_path):
    episode, variant, record = paraphrase(endpoint, tmp_path, "faithful")
    assert record["backend"] == "llm" and "Reply with the final price" in record["text"]
    assert variant.harness.skills[0].content == record["text"]
    assert loads(variant) == [("skill-0", record["text"])]
    before = len(_Endpoint.hits)
    recipe = Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": "p",
            "seed": 1,
            "variants_per_episode": 1,
            "pipeline": [
                {
                    "skill_content_llm_paraphrase": {
                        "base_url": endpoint,
                        "model": "faithful",
                        "cache_dir": str(tmp_path / "cache"),
                    }
                }
            ],
        }
    )
    [out] = augment_episode(recipe, episode)
    assert isinstance(out, Variant)
    hits = len(_Endpoint.hits)
    replayed, _ = replay(episode, out.lineage)
    assert replayed == out.episode and len(_Endpoint.hits) == hits >= before


def test_garbage_is_refused_for_the_rules_with_the_reason(endpoint, tmp_path):
    episode, variant, record = paraphrase(endpoint, tmp_path, "garbage")
    assert record["backend"] == "rules"
    assert record["fallback_reason"].startswith("lost: [")
    assert "96.2" in record["fallback_reason"] and "never" in record["fallback_reason"]
    new = variant.harness.skills[0].content
    assert not lost_invariants(BODY, new, sorted(episode.harness.identifiers))


def test_a_slow_endpoint_times_out_to_the_rules_and_says_so_once(
    endpoint, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(llm_paraphrase_module, "_TOLD", set())
    start = time.monotonic()
    _, _, record = paraphrase(endpoint, tmp_path, "slow", timeout_s=0.3)
    assert record == {**record, "backend": "rules", "fallback_reason": "timeout"}
    assert time.monotonic() - start < 1.4
    # A run with its endpoint down still succeeds on the rules: the console is told, once.
    said = capsys.readouterr().err
    assert f"warning: skill_content_llm_paraphrase: {endpoint} gave no paraphrase (timeout)" in said
    paraphrase(endpoint, tmp_path, "slow", timeout_s=0.3)
    assert capsys.readouterr().err == ""


def test_the_cache_answers_the_second_call(endpoint, tmp_path):
    _, _, first = paraphrase(endpoint, tmp_path, "faithful", samples=1)
    hits = len(_Endpoint.hits)
    _, _, second = paraphrase(endpoint, tmp_path, "faithful", samples=1)
    assert len(_Endpoint.hits) == hits and second == first
    entries = list((tmp_path / "cache").rglob("*.json"))
    assert len(entries) == 1 and not list((tmp_path / "cache").rglob("*.tmp"))


def test_no_endpoint_and_no_client(example, monkeypatch, tmp_path):
    episode = next(iter(example.values()))
    _, params = run(SkillContentLlmParaphrase(), episode)
    assert {r["fallback_reason"] for r in params["skills"].values()} == {
        "no endpoint configured (set base_url and model)"
    }
    monkeypatch.setitem(sys.modules, "openai", None)
    transform = SkillContentLlmParaphrase(
        base_url="http://127.0.0.1:9/v1", model="m", cache_dir=str(tmp_path)
    )
    with pytest.raises(HsaError, match=r"pip install 'hsa\[llm\]'"):
        transform.sample_params(skill_episode([BODY]), random.Random(0))


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_skill_phrases_say_the_same_in_any_domain(split):
    # A travel agent's skill: its customer is nobody's viewer, its request is a noun, its store
    # may hold data, and a rewording keeps the grammar around pronouns and numbers.
    body = (
        "# Rebooking\n\n"
        "If the request is unclear, ask the customer for the booking reference and give you "
        "the fare. Mention it once, for example 45 min before departure. Save it to the store.\n"
    )
    episode = skill_episode([body])
    changed = False
    for seed in range(40):
        variant, _ = run(SkillContentRewrite(split=split), episode, seed)
        out = variant.harness.skills[0].content
        changed = changed or out != body
        for kept in ("the request", "the customer", "the store"):
            assert kept in out.lower(), out
        for wrong in (
            "viewer",
            "audience",
            "shopper",
            "hand over",
            "bring up it",
            "give an example",
        ):
            assert wrong not in out.lower(), out
    assert changed


# Skills of other domains (audits), each with the words a rewording must keep and those it
# must never write. A claims skill: "If any red flag appears" became "When applicable red flag
# appears" (the condition gone), "Never ask for all the details at once" "Never seek all the
# details right away", "pick up" "select up", "clearly a total loss" "openly", "the shop" (a
# repair shop) "the merchant", "mention the adjuster" "refer to the adjuster" (which hands the
# claim over), "ask for the report" "inquire about the report". A warehouse skill: "Copy the
# address exactly as written" became "just as written" (exactness gone), "Ask for
# `signature_required`" "Solicit" or "Seek", "Choose the carrier mode" "Opt for", and "choose
# to" would read "select to".
SKILLS_OF_OTHER_DOMAINS = [
    (
        "# Claims\n\n"
        "If any red flag appears, stop. Never ask for all the details at once. Let them pick up "
        "personal items. If it is clearly a total loss, say so. Take the car to the shop. "
        "Mention the adjuster by name.\n",
        ("if any red flag", "at once", "pick up", "clearly", "the shop", "mention"),
        ("inquire about", "when applicable", "openly", "merchant", "refer to"),
    ),
    (
        "# Dispatch\n\n"
        "Copy the address exactly as the customer wrote it. Ask for the signature when the "
        "order is insured. Choose the carrier mode, or choose to hold the parcel.\n",
        ("ask for", "choose the carrier", "choose to"),
        ("just as", "solicit", "seek", "opt for", "select to"),
    ),
]


@pytest.mark.parametrize("split", ["train", "heldout"])
@pytest.mark.parametrize(("body", "kept", "wrong"), SKILLS_OF_OTHER_DOMAINS)
def test_skill_phrases_of_other_domains_keep_their_sense(body, kept, wrong, split):
    episode = skill_episode([body])
    for seed in range(40):
        variant, _ = run(SkillContentRewrite(split=split), episode, seed)
        out = " ".join(variant.harness.skills[0].content.lower().split())  # wrapped or not
        assert all(k in out for k in kept), out
        assert not any(w in out for w in wrong), out


def test_a_tampered_paraphrase_is_refused():
    episode = skill_episode([BODY])
    with pytest.raises(HsaError, match="loses"):
        SkillContentLlmParaphrase().apply(
            episode,
            {"skills": {"skill-0": {"backend": "llm", "text": BODY.replace("Never", "Always")}}},
        )
    with pytest.raises(HsaError, match="backend must be"):
        SkillContentLlmParaphrase().apply(episode, {"skills": {"skill-0": {"backend": "x"}}})


def test_a_nested_parameter_named_in_a_body_is_kept_like_a_top_level_one():
    """The rewrite keeps every identifier of the harness (Harness.identifiers), nested fields
    included: a body that names the nested ``briefly`` flag keeps the word, though it is also a
    phrase of the synonym tables."""
    body = "# Stock reply\n\nSet briefly when the viewer asks for a short answer.\n"
    episode = skill_episode(
        [body],
        {
            "link_number": {"type": "integer"},
            "reply": {"type": "object", "properties": {"briefly": {"type": "boolean"}}},
        },
    )
    assert "briefly" in episode.harness.identifiers
    plan = {"phrases": [["briefly", "concisely"]]}
    out = SkillContentRewrite().apply(episode, {"plans": {"skill-0": plan}})
    assert out.harness.skill("skill-0").content == body
    # Where "briefly" names nothing, the same plan rewords it.
    assert "concisely" in rewrite_body(body, plan, ["check_stock", "link_number", "reply"])


@pytest.mark.parametrize("transform", ID_TRANSFORMS)
def test_no_skill_is_renamed_into_a_parameters_name(transform):
    """`incident-report` became `incident_report` under snake case: the name of `create_claim`'s
    parameter, so the prompt, the loader's list and every "follow `incident_report`" could mean
    either (and a later parameter rename then left the parameter as it was)."""
    harness = Harness.from_dict(
        {
            "name": "claims",
            "skills": [
                {"id": "incident-report", "description": "Writing it up.", "content": "x"},
                {"id": "claim-intake", "description": "First notice.", "content": "y"},
            ],
            "tools": [
                {
                    "name": "create_claim",
                    "description": "Opens a claim.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "incident_report": {"type": "string"},
                            "IncidentReport": {"type": "string"},
                            "incidentReport": {"type": "string"},
                            "claim_intake": {"type": "string"},
                        },
                    },
                }
            ],
        }
    )
    episode = Episode.from_dict(
        {"id": "e", "messages": [{"role": "user", "content": "hi"}], "gold": {"no_call": True}},
        harness=harness,
    )
    for seed in range(12):
        for split in ("train", "heldout"):
            variant, _ = run(transform(split=split), episode, seed)
            assert not set(variant.harness.skill_ids) & harness.parameter_names


SKILL_GATE_HOOK = """
def require_returns_skill(payload, config):
    if "refund" in payload["reply"] and "returns-policy" not in payload["loaded_skills"]:
        return {"ok": False, "feedback": "Load the returns policy before promising a refund."}
    return {"ok": True}
"""


@pytest.mark.parametrize("transform", ID_TRANSFORMS)
def test_a_skill_id_the_hook_code_writes_keeps_its_id(transform):
    """A bookshop's reply hook reads `"returns-policy" in payload["loaded_skills"]`: renamed,
    the variant's hook would block every refund reply the recorded conversation shows passing
    (the loaded skill would have another id). Such an id stays; the others still move."""
    harness = Harness.from_dict(
        {
            "name": "bookshop",
            "skills": [
                {"id": "returns-policy", "description": "Refunds and returns.", "content": "x"},
                {"id": "order-tracking", "description": "Where an order is.", "content": "y"},
                {"id": "gift-wrapping", "description": "Wrapping a gift.", "content": "z"},
            ],
            "hooks": [
                {"name": "refund_gate", "event": "reply", "function": "require_returns_skill"}
            ],
            "hooks_source": SKILL_GATE_HOOK,
        },
        trust_hooks=True,
    )
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": [{"role": "user", "content": "Can I get a refund?"}],
            "gold": {"no_call": True},
        },
        harness=harness,
    )
    moved = set()
    for seed in range(8):
        for split in ("train", "heldout"):
            variant, params = run(transform(split=split), episode, seed)
            loaded = params["renames"].get("returns-policy", "returns-policy")
            assert loaded in variant.harness.skill_ids
            check = variant.harness.hook_functions()["refund_gate"]
            payload = {"reply": "Your refund is on its way.", "loaded_skills": [loaded]}
            assert check(payload, {})["ok"]
            moved |= set(params["renames"])
    assert moved == {"order-tracking", "gift-wrapping"}


@pytest.mark.parametrize(
    ("body", "items", "free"),
    [
        # Italian steps: "Per prima cosa", "Poi", "Se non basta", "Infine" are cues no table reads
        (
            "# Gestione di un reclamo\n\nSegui questi passi nell'ordine indicato:\n\n"
            "- Per prima cosa scusati con l'assicurato per il disagio.\n"
            "- Poi chiedi il numero di sinistro e annotalo.\n"
            "- Se non basta a calmarlo, offri una richiamata dal responsabile entro 24 ore.\n"
            "- Infine ringrazia e chiudi la conversazione.\n",
            ["Per prima cosa", "Poi chiedi", "Se non basta", "Infine"],
            False,
        ),
        # Portuguese steps ("Primeiro", "Depois", "Por fim")
        (
            "# Reembolso\n\nUse esta habilidade para os reembolsos do cliente.\n\n"
            "- Primeiro confirme o número do pedido com o cliente.\n"
            "- Depois consulte o estado do reembolso no sistema.\n"
            "- Por fim informe o valor e o prazo ao cliente.\n",
            ["Primeiro", "Depois", "Por fim"],
            False,
        ),
        # Russian steps with one English sentence quoted: its function words are no reason
        # to read the body with the English cues (an audit: 53 of 74 loaded bodies shuffled)
        (
            "# Рассрочка\n\nАбонент пишет: «I want to pay it off in six months».\n\n"
            "- Сначала вызовите расчёт долга по лицевому счёту.\n"
            "- Затем оформите рассрочку на названный срок.\n"
            "- В конце загрузите шаблон ответа.\n",
            ["Сначала", "Затем", "В конце"],
            False,
        ),
        # Hinglish steps (Hindi in Latin letters): "Pehle", "Uske baad", "Aakhir mein"
        (
            "# Dispute\n\nYeh skill UPI dispute ke liye hai.\n\n"
            "- Pehle customer se UTR number lo.\n"
            "- Uske baad upi_status check karo.\n"
            "- Aakhir mein dispute raise karo.\n",
            ["Pehle", "Uske baad", "Aakhir mein"],
            False,
        ),
        # An English list of independent rules: still free to move
        (
            "# Tone\n\nUse this skill for the tone of every reply.\n\n"
            "- Be calm and polite with the customer.\n"
            "- Never blame the customer for the delay.\n"
            "- Keep the reply short and to the point.\n",
            ["Be calm", "Never blame", "Keep the reply"],
            True,
        ),
    ],
)
def test_lists_in_a_language_the_cues_do_not_read_keep_their_order(body, items, free):
    """The sequence cues are read in English, Chinese, Japanese, German, French and Spanish: an
    Italian complaint procedure (apologise first, a call back only if that is not enough) was
    shuffled in 31 of 40 draws, the last resort first. Where the cues cannot be read, no list or
    section is proved free, and the burden of proof lies on shuffling."""
    orders = _item_orders(body, items)
    assert (len(orders) > 1) == free, orders


@pytest.mark.parametrize(
    ("pointer", "free"),
    [
        ("Usa siempre la plantilla de más abajo.", False),  # Spanish: "the template below"
        ("Utilise toujours le modèle ci-dessous.", False),  # French
        ("Verwende immer die Vorlage weiter unten.", False),  # German
        ("Usa siempre un tono cercano.", True),  # no position: the rules are free to move
    ],
)
def test_a_list_item_that_points_below_in_a_european_language_keeps_the_list(pointer, free):
    """A rule that points at "the template below" in Spanish, French or German was read as free
    to move: shuffled, the template it points at could come first."""
    body = (
        "# Tono\n\nUsa esta habilidad para el tono de cada respuesta.\n\n"
        "- Sé amable y educado con el cliente.\n"
        f"- {pointer}\n"
        "- Nunca culpes al cliente por el retraso.\n"
    )
    items = ["Sé amable", pointer.split()[0] + " " + pointer.split()[1], "Nunca culpes"]
    orders = _item_orders(body, items)
    assert (len(orders) > 1) == free, orders


def _item_orders(body: str, items: list[str]) -> set[tuple[str, ...]]:
    """The orders ``items`` (texts of a body's list) take in 30 train rewrites of ``body``."""
    orders = set()
    for seed in range(30):
        plan = content.draw_plan(body, [], random.Random(seed), "train", restyle=False)
        new = rewrite_body(body, plan)
        orders.add(tuple(sorted(items, key=new.index)))
    return orders


def test_a_list_in_an_unknown_script_keeps_its_order():
    """Russian steps ("Сначала", "Затем", "Наконец"): no table reads their cues, and no function
    word tells their language; letters beyond ASCII keep the list as written."""
    body = (
        "# Возврат\n\n- Сначала извинитесь перед клиентом.\n- Затем узнайте номер заказа.\n"
        "- Наконец поблагодарите клиента.\n"
    )
    for seed in range(20):
        plan = content.draw_plan(body, [], random.Random(seed), "train", restyle=False)
        new = rewrite_body(body, plan)
        assert new.index("Сначала") < new.index("Затем") < new.index("Наконец")


@pytest.mark.parametrize("transform", ID_TRANSFORMS)
def test_a_skill_id_that_is_the_users_own_word_stays_in_their_words(transform):
    """A bank's skill `online-banking` is also the word the customer types: "Mein
    online-banking ist gesperrt". Renamed there (`Mein sk-bpkj ist gesperrt`), the user would
    type the id the gold expects the model to load, which no user writes. In the user's words
    and the reply that repeats them it stays; the harness, the loader call and the gold move."""
    harness = Harness.from_dict(
        {
            "name": "bank",
            "skills": [
                {
                    "id": "online-banking",
                    "description": "Online-Banking entsperren.",
                    "content": "x",
                },
                {"id": "card-block", "description": "Karte sperren.", "content": "y"},
            ],
        }
    )
    user = "Mein online-banking ist gesperrt, Kundennummer 44812."
    reply = "Ihr online-banking ist wieder entsperrt."
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": [
                {"role": "user", "content": user},
                assistant(call("load_skill", {"name": "online-banking"})),
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
                {"role": "assistant", "content": reply},
            ],
            "gold": {
                "turns": [{"at": 1, "skills": ["online-banking"]}, {"at": 3, "no_call": True}]
            },
        },
        harness=harness,
    )
    moved = 0
    for seed in range(6):
        out = variant_of(transform.name, episode, seed=seed)
        new = out.mapping.skill("online-banking")
        moved += new != "online-banking"
        assert out.episode.messages[0]["content"] == user
        assert out.episode.messages[3]["content"] == reply
        loaded = json.loads(out.episode.messages[1]["tool_calls"][0]["function"]["arguments"])
        assert loaded == {"name": new}
        assert new in out.episode.harness.skill_ids
    assert moved


ERP_EXAMPLES = [
    # the call a numbered step introduces ("4. Approve:"), at the margin after the list
    (
        "# Approval\n\nApprovals follow the limits.\n\n## Worked example\n\n"
        '"Approve PO-2026-00481 for me, I am E-2001."\n\n'
        "1. `get_po` with `id` `PO-2026-00481`.\n2. `get_employee` with `id` `E-2001`.\n"
        "3. Compare the total with the limit.\n4. Approve:\n\n"
        '```json\n{"name": "approve_po", "arguments": {"id": "PO-2026-00481"}}\n```\n\n'
        "5. Reply with the new `status`.\n",
        ['"name": "approve_po"', "5. Reply with the new"],
    ),
    # the section's only call, and its own instruction after it
    (
        "# Leave\n\nRequests go through `request_leave`.\n\n## Example\n\n"
        '```json\n{"name": "request_leave", "arguments": {"employee_id": "E-1042"}}\n```\n\n'
        "For approving or rejecting, see `leave-approval-policy`.\n",
        ['"name": "request_leave"', "see `leave-approval-policy`"],
    ),
    # a request and the call that answers it
    (
        "# Requisitions\n\nUse `create_requisition`.\n\n## Example\n\n"
        '"Two monitors for the new analysts, please."\n\n'
        '```json\n{"name": "create_requisition", "arguments": {"quantity": 2}}\n```\n\n'
        "To follow up, call `list_requisitions` with `status` `open`.\n",
        ['"Two monitors', '"name": "create_requisition"', "To follow up, call"],
    ),
]


@pytest.mark.parametrize(("body", "kept"), ERP_EXAMPLES)
def test_an_example_sections_calls_and_instructions_are_never_dropped(body, kept):
    """An ERP desk's skills (an audit): the JSON call a numbered step introduced ("4. Approve:")
    was dropped, leaving the step empty; a section's only call went, or the instruction beside
    it ("To follow up, call list_requisitions", a cross-reference to another skill), since any
    paragraph of an example section counted as an example."""
    for seed in range(40):
        plan = content.draw_plan(body, [], random.Random(seed), "train", restyle=False)
        new = rewrite_body(body, plan)
        for text in kept:
            assert text in new, (seed, plan, new)


def test_offering_and_giving_keep_their_words():
    """ "Offer to notify that person" became "give to notify that person" (a suggestion to the
    user turned into an act), and "provide the user with" has no "give the user with":
    give, provide and offer are no phrase table group."""
    body = (
        "# Over the limit\n\nUse this skill when an approval is over the limit.\n\n"
        "- Tell the user the next grade and offer to notify that person with `notify_user`.\n"
        "- Provide the user with the request's `id`.\n"
        "- Give the existing request's `id` and never give up on a pending approval.\n"
    )
    for seed in range(30):
        for split in ("train", "heldout"):
            plan = content.draw_plan(body, [], random.Random(seed), split, restyle=False)
            new = rewrite_body(body, plan)
            for words in (
                "offer to notify",
                "Provide the user with",
                "Give the existing",
                "give up",
            ):
                assert words in new, (seed, split, new)


def _front_desk(instructions: str) -> Episode:
    """A hotel desk whose skill ids are words written with a hyphen, as prose writes them."""
    harness = Harness.from_dict(
        {
            "name": "front-desk",
            "prompt": {"text": {"instructions": instructions}},
            "skills": [
                {
                    "id": "check-in",
                    "description": "Guides the guest through online check-in.",
                    "content": "When a guest asks for an early check-in, call `get_booking`.",
                },
                {
                    "id": "follow-up",
                    "description": "Sends a follow-up message after the stay.",
                    "content": "Call `get_booking`, then write a short follow-up.",
                },
            ],
            "tools": [Tool("get_booking").to_openai()],
        }
    )
    return Episode.from_dict(
        {
            "id": "desk",
            "messages": [
                {"role": "user", "content": "Can I do an early check-in? And a follow-up?"},
                assistant(call("load_skill", {"name": "follow-up"}, "c1")),
                {"role": "tool", "tool_call_id": "c1", "content": "(body)"},
                assistant(content="Sure: your early check-in is booked."),
            ],
            "gold": {"at": 1, "skills": ["follow-up"]},
        },
        harness=harness,
    )


@pytest.mark.parametrize("transform", ID_TRANSFORMS)
def test_an_id_the_prose_writes_as_a_word_keeps_it_and_the_word_is_never_renamed(transform):
    # An audit found "For an early sk-kbkf, load the sk-kbkf skill first" and "Offer a sk-chdr
    # message": hyphenated words (check-in, follow-up) were renamed wherever prose wrote them.
    episode = _front_desk("For an early check-in, load the check-in skill first.")
    renamed = set()
    for seed in range(6):
        variant = variant_of(transform.name, episode, seed)
        renames = variant.mapping.skills
        assert "check-in" not in renames  # the instructions name it as a word
        renamed |= set(renames)
        harness = variant.episode.harness
        assert harness.prompt.text["instructions"] == (
            "For an early check-in, load the check-in skill first."
        )
        new = renames.get("follow-up", "follow-up")
        assert harness.skill(new).description == "Sends a follow-up message after the stay."
        assert harness.skill(new).content.endswith("write a short follow-up.")
        assert variant.episode.messages[0] == episode.messages[0]
        assert variant.episode.messages[3] == episode.messages[3]
        assert json.loads(
            variant.episode.messages[1]["tool_calls"][0]["function"]["arguments"]
        ) == {"name": new}
        assert variant.episode.gold.turns[0].skills == (new,)
    assert renamed == {"follow-up"}  # written as a word only in its own texts: it may move


@pytest.mark.parametrize("emphasis", ["strong_negations", "italic_negations", "caps_negations"])
def test_negation_emphasis_marks_no_word_of_another_language(emphasis):
    """A French clinic's example reply « C'est noté » became « C'est **not**é »: the negation
    "not" was read inside a word, since only ASCII letters counted as its neighbours. The
    English "Do not" beside it is still marked."""
    body = "# Confirmer\n\n- Répondez « C'est noté, Madame ». Do not guess the time.\n"
    out = rewrite_body(body, {"emphasis": emphasis})
    assert "« C'est noté, Madame »" in out
    assert out != body


def test_a_phrase_written_in_capitals_is_a_keyword_not_the_word():
    """A data agent's skill said "Write one SELECT": the phrase table's "select" -> "choose"
    made it "Write one Choose". A word in capitals is a keyword or an acronym (SQL's SELECT,
    HTTP's GET, a flag named BRIEFLY); the word in prose still moves. The plan reads the body
    as the rewrite does."""
    body = "# Query\n\n1. Set the BRIEFLY flag. Answer briefly.\n"
    assert rewrite_body(body, {"phrases": [["briefly", "concisely"]]}) == (
        "# Query\n\n1. Set the BRIEFLY flag. Answer concisely.\n"
    )
    episode = skill_episode(["# Query\n\n1. Set the BRIEFLY flag.\n"])
    for seed in range(10):
        variant, _ = run(SkillContentRewrite(), episode, seed)
        assert "Set the BRIEFLY flag." in variant.harness.skills[0].content


@pytest.mark.parametrize("transform", ID_TRANSFORMS)
def test_the_skill_loaders_own_words_move_with_the_ids(transform):
    """A Korean shop words its loader's argument "(예: order-lookup-strategy)": the ids were
    renamed in the loader's enum and everywhere else, and its own words kept the old one."""
    harness = Harness.from_dict(
        {
            "name": "shop",
            "skill_loader_text": {
                "description": "스킬의 전체 지침을 불러옵니다.",
                "argument": "불러올 스킬 id (예: order-lookup-strategy)",
            },
            "skills": [
                {"id": "order-lookup-strategy", "description": "주문 조회.", "content": "x"},
                {"id": "refund-reply", "description": "환불 답변.", "content": "y"},
            ],
        }
    )
    episode = Episode.from_dict(
        {
            "id": "e",
            "messages": [{"role": "user", "content": "안녕하세요"}],
            "gold": {"no_call": True},
        },
        harness=harness,
    )
    moved = 0
    for seed in range(8):
        variant, _ = run(transform(), episode, seed)
        new = variant.harness.skill_ids[0]
        argument = variant.harness.skill_loader_text["argument"]
        assert argument == f"불러올 스킬 id (예: {new})", argument
        moved += new != "order-lookup-strategy"
    assert moved


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_a_block_quote_in_a_list_item_is_said_as_written(split):
    """A brokerage's disclosure skill (an audit): "include this sentence once:" and, in the list
    item, the sentence as a block quote; its "not" became **not**, *not* or NOT, and the
    recorded replies that quote it plain disagreed with their skill."""
    quote = (
        "  > All investing involves risk. Options are not suitable for all investors, for\n"
        "  > example when you never traded them. Make sure you never\n"
        "  promise returns, for example on crypto."  # a lazy line: still the quote's
    )
    body = (
        "# Disclosure\n\n"
        "- When options come up, include this sentence once:\n\n"
        f"{quote}\n\n"
        "- Never say a return is guaranteed, for example in a reply.\n"
    )
    episode = skill_episode([body])
    restyled = False
    for seed in range(40):
        variant, _ = run(SkillContentRewrite(split=split), episode, seed)
        out = variant.harness.skills[0].content
        # as written, at whatever indent the item's list style gives its lines
        assert re.sub(r"(?m)^ +", "", quote) in re.sub(r"(?m)^ +", "", out), out
        restyled = restyled or "Never say" not in out or "for example in a reply" not in out
    assert restyled  # the item's own words are still reworded and restyled


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_an_item_pointing_at_what_another_lists_keeps_the_list_in_order(split):
    """An ATS compliance skill (an audit): "If a recruiter asks you to filter, rank or reject
    on one of these, refuse" came before the item listing the protected characteristics in 32
    of 150 harness variants, and "these" pointed at nothing."""
    body = (
        "# EEO\n\n"
        "## Rules\n\n"
        "- Protected characteristics: age, ethnicity, religion, disability and pregnancy.\n"
        "- If a recruiter asks you to filter, rank or reject on one of these, refuse politely.\n"
        "- Keep notes factual and job-related.\n"
    )
    episode = skill_episode([body])
    for seed in range(30):
        variant, _ = run(SkillContentRewrite(split=split), episode, seed)
        out = " ".join(variant.harness.skills[0].content.split())  # wrapped or not
        assert out.index("Protected characteristics") < out.index("one of these"), out


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_an_item_pointing_back_with_such_keeps_the_list_in_order(split):
    """A home-automation skill (an audit): "Without such words leave `hold` out" came before
    the items that list the words in 48 of 91 rows, and read as an unconditional rule. An item
    that says "such" points back at what others said; "words such as" lists its own."""
    body = (
        "# Climate\n\n"
        "## Holds\n\n"
        '- "keep it there", "hold it": `hold` "permanent".\n'
        '- "until 6 pm", "until the evening": `hold` `{"until": "18:00"}` with a 24-hour time.\n'
        "- Without such words leave `hold` out, so the schedule resumes.\n"
    )
    episode = skill_episode([body])
    for seed in range(30):
        variant, _ = run(SkillContentRewrite(split=split), episode, seed)
        out = " ".join(variant.harness.skills[0].content.split())
        assert out.index("hold it") < out.index("such words"), out
        assert out.index("until the evening") < out.index("such words"), out
    examples = (
        "# Replies\n\n## Tone\n\n"
        "- Greet with words such as hello or welcome.\n"
        "- Thank the customer for waiting.\n"
        "- Say goodbye by name.\n"
    )
    first = set()
    for seed in range(30):
        variant, _ = run(SkillContentRewrite(split=split), skill_episode([examples]), seed)
        out = variant.harness.skills[0].content
        first.add(out.index("such as") < out.index("customer"))
    assert first == {True, False}  # a list whose item gives examples "such as" still moves


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_a_list_written_as_one_sentence_keeps_its_punctuation_in_place(split):
    """A home-automation skill (an audit): bullets closed by ";" and the last by "." were
    moved with their punctuation, so the list ended mid-way ("... in a scene.") and closed on
    ";" in 31 of 91 rows. The punctuation belongs to the places."""
    body = (
        "# Scenes\n\n"
        "## Fields\n\n"
        "- `name` word for word as the user says it;\n"
        "- `room` of the devices, whole_home when they span floors;\n"
        "- `devices`: the lights to set, and only lights can be in a scene.\n"
    )
    episode = skill_episode([body])
    moved = 0
    for seed in range(30):
        variant, _ = run(SkillContentRewrite(split=split), episode, seed)
        blocks, _ = parse(variant.harness.skills[0].content)
        (items,) = [block.items for block in blocks if block.kind == "list"]
        texts = [" ".join(line.strip() for line in item.lines) for item in items]
        assert [text[-1] for text in texts] == [";", ";", "."], texts
        moved += "`devices`" not in texts[-1]
    assert moved  # the list still moves


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_a_preamble_pointing_below_keeps_the_sections_in_place(split):
    """A live room's banned-words skill (an audit) opens with "下面这些词一律不能出现在回复里"
    (the words below must never appear); its sections were reordered, and "below" then meant
    the tips or the table of what may be said (40 of 54 rows)."""
    body = (
        "# 禁用词\n\n下面这些词一律不能出现在回复里。\n\n"
        "## 禁用词\n\n- 最便宜\n- 全网最低\n\n"
        "## 可以说\n\n- 很划算\n- 性价比高\n\n"
        "## 注意\n\n- 回复前再读一遍。\n"
    )
    for seed in range(30):
        variant, _ = run(SkillContentRewrite(split=split), skill_episode([body]), seed)
        out = variant.harness.skills[0].content
        assert out.index("最便宜") < out.index("很划算") < out.index("回复前"), out


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_a_list_its_intro_ranks_keeps_its_order(split):
    """A meal planner (a recheck): "Use these swaps, most reliable first:" was followed by its
    ranked list shuffled in 103 of 109 bodies."""
    body = (
        "# Swaps\n\n## Dairy\n\nUse these swaps, most reliable first:\n\n"
        "- Oat milk for milk.\n- Coconut cream for cream.\n- Olive oil for butter.\n"
    )
    for seed in range(30):
        variant, _ = run(SkillContentRewrite(split=split), skill_episode([body]), seed)
        out = variant.harness.skills[0].content
        assert out.index("Oat") < out.index("Coconut") < out.index("Olive"), out
