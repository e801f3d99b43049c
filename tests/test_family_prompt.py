"""The prompt-structure family: layouts, section order, wording and placement keep every
section's information in what the model reads (example-based and hypothesis)."""

from __future__ import annotations

import itertools
import json
import random
import re
from dataclasses import replace

import pytest
from hypothesis import example as known_case
from hypothesis import given
from hypothesis import strategies as st

from hsa.augment.recipe import Recipe
from hsa.augment.variant import Variant
from hsa.dataset.pipeline import augment_episode
from hsa.errors import HarnessError, HsaError
from hsa.example import load_example_episodes
from hsa.model.episode import Episode
from hsa.model.gold import Gold
from hsa.model.harness import Harness, PromptSpec
from hsa.model.hook import Hook
from hsa.model.skill import Skill
from hsa.model.tool import Tool
from hsa.render import (
    DEFAULT_HEADINGS,
    DEFAULT_PHRASES,
    available_layouts,
    render_messages,
    render_system_prompt,
    section_heading,
)
from hsa.transforms.prompt_structure import (
    HEADINGS,
    LAYOUTS,
    PHRASES,
    PromptLayout,
    PromptPlacement,
    PromptSectionOrder,
    PromptWording,
    order_split,
    refers_to_position,
    rendered_sections,
)
from tests.strategies import harnesses, unicode_text

TRANSFORMS = ("prompt_layout", "prompt_section_order", "prompt_wording", "prompt_placement")
ALL_STYLES = [c for part in LAYOUTS.values() for c in part]


def with_layout(harness: Harness, layout: str, style: dict | None = None, **options) -> Harness:
    opts = {**harness.prompt.options, **options}
    if style:
        opts["layout_style"] = style
    return replace(harness, prompt=replace(harness.prompt, layout=layout, options=opts))


def model_reads(episode: Episode) -> str:
    """The system prompt and the first user turn: where every section must be found."""
    messages = render_messages(episode)
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    user = next((m.get("content") or "" for m in messages if m["role"] == "user"), "")
    if isinstance(user, list):
        user = "".join(p["text"] for p in user)
    return system + "\n" + user


def present(text: str, read: str) -> bool:
    """``text`` is in ``read`` as written, or as the JSON layouts write a string."""
    text = text.strip()
    return text in read or json.dumps(text, ensure_ascii=False)[1:-1] in read


def missing_information(episode: Episode) -> list[str]:
    harness, read = episode.harness, model_reads(episode)
    sections = harness.prompt.sections
    wanted = []
    if "skills" in sections:
        wanted += [x for s in harness.skills for x in (s.id, s.description)]
    if "tools" in sections:
        wanted += [x for t in harness.all_tools() for x in (t.name, t.description)]
    if "hooks" in sections:
        wanted += [x for h in harness.hooks for x in (h.name, h.description)]
    wanted += [harness.prompt.text[s] for s in sections if harness.prompt.text.get(s)]
    return [w for w in wanted if not present(w, read)]


@pytest.fixture(scope="module")
def example():
    return load_example_episodes()


# ---- option tables ---------------------------------------------------------------------------


def test_layout_tables_split_whole_layouts():
    train = {c["layout"] for c in LAYOUTS["train"]}
    heldout = {c["layout"] for c in LAYOUTS["heldout"]}
    assert not train & heldout
    assert train | heldout == {"markdown", "xml", "json", "prose"} <= set(available_layouts())
    assert min(len(LAYOUTS["train"]), len(LAYOUTS["heldout"])) >= 3
    keys = [json.dumps(c, sort_keys=True) for c in ALL_STYLES]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("table", [HEADINGS, PHRASES], ids=["headings", "phrases"])
def test_wording_tables_are_split_and_never_the_default(table):
    defaults = set(DEFAULT_HEADINGS.values()) | set(DEFAULT_PHRASES.values())
    for key, languages in table.items():
        assert set(languages) == {"en", "zh"}
        for language, parts in languages.items():
            train, heldout = set(parts["train"]), set(parts["heldout"])
            assert not train & heldout, (key, language)
            assert min(len(train), len(heldout)) >= 3, (key, language)
            assert not (train | heldout) & defaults
            if language == "zh":
                assert all(re.search("[\u4e00-\u9fff]", w) for w in train | heldout)
    if table is HEADINGS:  # headings of one language never coincide across sections
        for language in ("en", "zh"):
            words = [w for parts in table.values() for p in parts[language].values() for w in p]
            assert len(set(words)) == len(words)


def test_section_orders_split_by_parity():
    names = ["persona", "instructions", "skills", "tools", "hooks"]
    parts = [order_split(list(p)) for p in itertools.permutations(names)]
    assert parts.count("train") == parts.count("heldout") == 60
    assert order_split(["b", "a"]) == "heldout" and order_split(["a", "b"]) == "train"


# ---- layouts ---------------------------------------------------------------------------------

TINY = Harness(
    name="tiny",
    skills=(Skill(id="price-reply", description="Price answers.", content="x", kind="reply"),),
    tools=(
        Tool(
            name="get_price",
            description="Price of a link.",
            parameters={
                "type": "object",
                "properties": {"link": {"type": "integer"}},
                "required": ["link"],
            },
        ),
    ),
    prompt=PromptSpec(
        layout="markdown",
        sections=("persona", "skills", "tools", "hooks"),
        text={"persona": "You sell."},
    ),
    hooks=(Hook(name="reply_length", event="reply", function="f", description="Short."),),
    hooks_source="def f(payload, config):\n    return {'ok': True}\n",
)


def test_markdown_default_output_is_unchanged():
    assert render_system_prompt(TINY) == (
        "## Persona\nYou sell.\n\n"
        "## Skills\nLoad a skill with the skill loader tool before you act on it.\n\n"
        "- `price-reply` (reply): Price answers.\n\n"
        "## Tools\nCall these tools when the request needs their data.\n\n"
        "- `get_price`: Price of a link.\n"
        "- `load_skill`: Load a skill's full instructions by its id before acting on them.\n\n"
        "## Checks\nThese checks run around your actions; follow their feedback.\n\n"
        "- `reply_length` (reply): Short.\n"
    )
    styled = render_system_prompt(with_layout(TINY, "markdown", {"heading": "#", "bullet": "*"}))
    assert styled.startswith("# Persona\n") and "\n* `get_price`: Price of a link.\n" in styled


@pytest.mark.parametrize("choice", ALL_STYLES, ids=lambda c: json.dumps(c))
def test_every_layout_renders_every_section_of_the_example(example, choice):
    episode = example[0]
    harness = with_layout(episode.harness, choice["layout"], choice["style"])
    variant = episode.with_harness(harness)
    assert missing_information(variant) == []
    prompt = render_system_prompt(harness)
    headings = [DEFAULT_HEADINGS.get(s, s.title()) for s in harness.prompt.sections]
    positions = [prompt.index(h) for h in headings]
    assert positions == sorted(positions)
    if choice["layout"] == "json":
        assert list(json.loads(prompt)) == headings


@pytest.mark.parametrize(
    ("policy", "refers"),
    [
        ("In addition to the rules above, escalate outages.", True),
        ("The tools listed above are the only ones you may use.", True),
        ("Follow the instructions below before any tool call.", True),
        ("See the following sections for the tools.", True),
        ("遵守上述规则，再调用工具。", True),
        # the European languages harnesses are written in
        ("Usa solo las herramientas listadas más abajo y la sección siguiente.", True),
        ("Use apenas as ferramentas abaixo.", True),
        ("Respectez les règles ci-dessous.", True),
        ("Nutze nur die Werkzeuge weiter unten.", True),
        ("Usa solo gli strumenti qui sotto.", True),
        ("Gli strumenti elencati sopra e le regole bastano.", True),
        ("Rileggi le istruzioni precedenti.", True),
        ("Come indicato in precedenza, chiedi il nome.", True),
        ("Le regole sopra riportate valgono sempre.", True),
        ("La colazione è servita al piano di sotto.", False),  # downstairs: no position
        # and in other scripts (audits of a Russian billing desk, an Arabic airline)
        ("Инструменты перечислены ниже; навыки — выше них.", True),
        ("Следующий раздел описывает проверки.", True),
        ("استخدم فقط الأدوات المذكورة أدناه.", True),
        ("아래의 도구만 사용하세요.", True),
        ("השתמש רק בכלים שלהלן.", True),
        ("Aşağıdaki araçları kullanın.", True),
        ("Platność powyżej 100 zł wymaga zgody.", False),
        ("Платёж выше 500 ₽ требует подтверждения.", False),
        ("Отвечайте вежливо и по-русски.", False),
        ("उपरोक्त persona के अनुसार जवाब दें।", True),
        # "lower", "the next day", "last month": no position (a recheck of those audits)
        ("Уточните, если показание ниже предыдущего.", False),
        ("Следующий шаг — расчёт долга.", False),
        ("أرسل التذكرة في اليوم التالي.", False),
        ("पिछले महीने का statement भेजें।", False),
        # a threshold is no position
        ("Refunds above 500 EUR need a manager; below 20 EUR, just refund.", False),
        # a comparison with a noun phrase is no position (an ATS audit)
        ("Ask for approval when the offer is above the band.", False),
        ("Flag it when the reading is below the threshold.", False),
        ("Use only the tools listed above.", True),
        ("Follow the rules above.", True),
        ("Rimborsi sotto 500 euro: procedi.", False),
        ("Escalate outages at once.", False),
        ("Sé amable y responde en español.", False),
    ],
)
def test_sections_that_refer_to_where_others_stand_keep_their_places(policy, refers):
    """ "In addition to the rules above" moved first (or the tools it calls "listed above" moved
    into the user turn) points at nothing: where a section's text refers to where others stand,
    section order and placement keep the prompt's order and places."""
    harness = replace(
        TINY,
        prompt=replace(
            TINY.prompt,
            sections=("persona", "skills", "tools", "policy", "hooks"),
            text={"persona": "You sell.", "policy": policy},
        ),
    )
    episode = Episode(
        "e",
        harness,
        ({"role": "user", "content": "hi"},),
        Gold.from_dict({"no_call": True}, n_messages=1),
    )
    orders = {
        tuple(PromptSectionOrder(split=split).sample_params(episode, random.Random(seed))["order"])
        for split in ("train", "heldout")
        for seed in range(12)
    }
    placements = [
        PromptPlacement().sample_params(episode, random.Random(seed))["placement"]
        for seed in range(12)
    ]
    if refers:
        assert orders == {harness.prompt.sections}
        assert all(not p for p in placements)
    else:
        assert len(orders) > 1 and any(placements)


def test_the_json_layout_is_never_drawn_where_two_sections_share_a_heading():
    """A section ``checks`` shows "Checks", as the hooks' section does: the json layout writes
    one key per heading, and a reader keeps the last of two equal keys, so the section's text was
    lost in every JSON row. Where two sections share a heading the json layout is not drawn, and
    asked for, refused."""
    harness = replace(
        TINY,
        prompt=replace(
            TINY.prompt,
            sections=("persona", "checks", "tools", "hooks"),
            text={"persona": "You sell.", "checks": "Re-read the order before closing."},
        ),
    )
    episode = Episode(
        "e",
        harness,
        ({"role": "user", "content": "hi"},),
        Gold.from_dict({"no_call": True}, n_messages=1),
    )
    for split in ("train", "heldout"):
        drawn = {
            PromptLayout(split=split).sample_params(episode, random.Random(seed))["layout"]
            for seed in range(40)
        }
        assert drawn and "json" not in drawn, drawn
    with pytest.raises(HsaError, match="share a heading"):
        PromptLayout().apply(episode, {"layout": "json", "style": {}})


@pytest.mark.parametrize("shape", ["openai", "mcp"])
def test_json_and_xml_layouts_show_each_tool_whole_in_its_shape(example, shape):
    harness = example[0].harness

    def expected(tool):
        if shape == "mcp":
            return {
                "name": tool.name,
                "description": tool.description,
                "inputSchema": tool.parameters,
            }
        return {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }

    want = [expected(t) for t in harness.all_tools()]
    options = {} if shape == "openai" else {"tool_shape": shape}
    document = json.loads(render_system_prompt(with_layout(harness, "json", **options)))
    assert document["Tools"]["tools"] == want
    assert document["Skills"]["skills"][0] == {
        "id": "after-sales-reply",
        "kind": "reply",
        "description": harness.skills[0].description,
    }
    assert [c["name"] for c in document["Checks"]["checks"]] == [h.name for h in harness.hooks]
    xml = render_system_prompt(with_layout(harness, "xml", **options))
    shown = re.findall(r'<tool name="([^"]+)">(.*?)</tool>', xml)
    assert [(name, json.loads(body)) for name, body in shown] == [
        (t.name, w) for t, w in zip(harness.all_tools(), want, strict=True)
    ]


def test_unknown_tool_shape_fails_clearly():
    with pytest.raises(HarnessError, match="options_tool_shape_must_be_openai_or_mcp"):
        render_system_prompt(with_layout(TINY, "json", tool_shape="anthropic"))


@given(
    persona=unicode_text.filter(bool),
    description=unicode_text.filter(str.strip),
    indent=st.sampled_from([0, 2, 4]),
    flat_from=st.sampled_from([1, 2, 3, 99]),
)
@known_case(
    persona="".join(map(chr, range(32))) + '"\\/\x7f\u2028你',
    description="a\tb\x1f",
    indent=2,
    flat_from=99,
)
def test_json_layout_is_json_that_keeps_every_character(persona, description, indent, flat_from):
    tool = replace(
        TINY.tools[0],
        description=description,
        parameters={
            "type": "object",
            "properties": {
                "q": {
                    "type": "string",
                    "description": description,
                    "default": None,
                    "examples": [1.5, True, [], {}],
                }
            },
        },
    )
    harness = replace(TINY, tools=(tool,), prompt=replace(TINY.prompt, text={"persona": persona}))
    document = json.loads(
        render_system_prompt(
            with_layout(harness, "json", {"indent": indent, "flat_from": flat_from})
        )
    )
    assert document["Persona"] == persona
    assert document["Tools"]["tools"][0]["function"] == {
        "name": "get_price",
        "description": description,
        "parameters": tool.parameters,
    }


@pytest.mark.parametrize("choice", ALL_STYLES, ids=lambda c: json.dumps(c))
def test_template_syntax_in_harness_text_is_rendered_literally(choice):
    sneaky = "{{ 7 * 7 }} {% if true %}yes{% endif %} {{ ''.__class__ }}"
    harness = replace(
        TINY,
        skills=(replace(TINY.skills[0], description=sneaky),),
        tools=(replace(TINY.tools[0], description=sneaky),),
        prompt=replace(TINY.prompt, text={"persona": sneaky}),
    )
    prompt = render_system_prompt(with_layout(harness, choice["layout"], choice["style"]))
    assert prompt.count(sneaky) == 3 and "49" not in prompt


@pytest.mark.parametrize(
    "source",
    [
        "{{ sections.__class__.__mro__ }}",
        "{{ ''.__class__.__base__.__subclasses__() }}",
        "{{ cycler.__init__.__globals__ }}",
        "{% for s in sections %}{{ s.entries.append(1) }}{% endfor %}",
        "{{ options.update({'layout': 'x'}) }}",
    ],
)
def test_a_layout_reaching_for_python_internals_fails_with_a_harness_error(source):
    evil = replace(TINY, layouts={"evil": source}, prompt=replace(TINY.prompt, layout="evil"))
    with pytest.raises(HarnessError, match="layout 'evil' tried an unsafe operation"):
        render_system_prompt(evil)


@pytest.mark.parametrize(
    "source, why",
    [
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "range()",
        ),
        ("{{ 'x' * 3000000000 }}", "repeats a value"),
        ("{{ [1] * 3000000000 }}", "repeats a value"),
        ("{{ 3 ** 100000000 }}", "raises a number"),
        (
            "{% set ns = namespace(s='xx') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
            "joins values",
        ),
    ],
)
def test_a_layout_that_would_work_forever_fails_with_a_harness_error(source, why):
    """The sandbox stops escapes, not work: a budget of range() numbers per rendering and a limit
    on the values one operation makes turn a hang or a memory bomb into the harness's error."""
    heavy = replace(TINY, layouts={"heavy": source}, prompt=replace(TINY.prompt, layout="heavy"))
    with pytest.raises(HarnessError, match=f"layout 'heavy' tried an unsafe operation: .*{why}"):
        render_system_prompt(heavy)


def test_the_budget_is_per_rendering_and_leaves_real_layouts_alone():
    """Each rendering starts with the whole budget, so many renders of a harness's own layout
    never add up to a refusal; ordinary arithmetic and joins still work."""
    loops = "{% for k in range(6) %}{% for i in range(100000) %}{% endfor %}{% endfor %}"
    source = loops + "{{ 'ab' * 3 ~ ('c' + 'd') }} {{ 2 ** 10 }}"  # 600,006 numbers a rendering
    fine = replace(TINY, layouts={"fine": source}, prompt=replace(TINY.prompt, layout="fine"))
    for tools in range(3):  # another harness each time: no rendering is remembered
        harness = replace(fine, tools=fine.tools[: tools + 1] or fine.tools)
        assert render_system_prompt(replace(harness, name=f"h{tools}")).strip() == "abababcd 1024"


def test_a_custom_layout_can_use_the_json_macros():
    custom = (
        '{% from "json.j2" import json_value, tool_object %}'
        '{% for t in tools %}{{ tool_object(t, "mcp") }}\n{% endfor %}{{ json_value(skills) }}'
    )
    harness = replace(TINY, layouts={"mine": custom}, prompt=replace(TINY.prompt, layout="mine"))
    *tools, skills = render_system_prompt(harness).strip().split("\n")
    assert [json.loads(t)["name"] for t in tools] == ["get_price", "load_skill"]
    assert json.loads(skills) == [
        {"id": "price-reply", "kind": "reply", "description": "Price answers."}
    ]


# ---- the transforms, one by one --------------------------------------------------------------


def draw(transform, episode: Episode, seed: int = 0) -> tuple[dict, Episode]:
    params = transform.sample_params(episode, random.Random(seed))
    return params, transform.apply(episode, params)


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_layout_draws_from_its_split_and_always_changes(example, split):
    episode = example[0]
    seen = set()
    for seed in range(40):
        params, out = draw(PromptLayout(split=split), episode, seed)
        assert {"layout": params["layout"], "style": params["style"]} in LAYOUTS[split]
        assert out.harness.prompt.layout == params["layout"]
        assert render_messages(out)[0] != render_messages(episode)[0]
        seen.add(json.dumps(params, sort_keys=True))
    assert len(seen) >= 3


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_section_order_draws_from_its_split(example, split):
    episode = example[0]
    orders = set()
    for seed in range(40):
        params, out = draw(PromptSectionOrder(split=split), episode, seed)
        assert order_split(params["order"]) == split
        assert params["order"] != list(episode.harness.prompt.sections)
        prompt = render_system_prompt(out.harness)
        positions = [
            prompt.index("## " + DEFAULT_HEADINGS.get(s, s.title())) for s in params["order"]
        ]
        assert positions == sorted(positions)
        orders.add(tuple(params["order"]))
    assert len(orders) >= 10


def test_section_order_moves_only_sections_that_render():
    bare = replace(TINY, skills=(), hooks=(), hooks_source=None)  # persona and tools render
    episode = Episode.from_dict(
        {"id": "e", "messages": [{"role": "user", "content": "hi"}], "gold": {"no_call": True}},
        harness=bare,
    )
    assert rendered_sections(bare) == ["persona", "tools"]
    for split, expected in (
        ("train", ["persona", "skills", "tools", "hooks"]),
        ("heldout", ["tools", "skills", "persona", "hooks"]),
    ):
        params, _ = draw(PromptSectionOrder(split=split), episode)
        assert params["order"] == expected


@pytest.mark.parametrize("language", ["en", "zh"])
def test_wording_uses_one_language_from_its_split(example, language):
    episode = example[0]
    for split in ("train", "heldout"):
        params, out = draw(PromptWording(split=split, language=language), episode)
        assert params["language"] == language
        assert set(params["headings"]) == {"persona", "instructions", "skills", "tools", "hooks"}
        assert set(params["phrases"]) == {"skills_intro", "tools_intro", "hooks_intro"}
        for key, text in params["headings"].items():
            assert text in HEADINGS[key][language][split]
        for key, text in params["phrases"].items():
            assert text in PHRASES[key][language][split]
        prompt = render_system_prompt(out.harness)
        assert all(f"## {h}\n" in prompt for h in params["headings"].values())
        assert all(p in prompt for p in params["phrases"].values())
        assert not any(d in prompt for d in DEFAULT_PHRASES.values())


@given(
    headings=st.dictionaries(
        st.sampled_from(["rules", "policies", "guidelines", "directions", "role", "identity"]),
        st.sampled_from(["Policies", "Rules", "Guidelines", "Identity", "Toolbox", "Guards"]),
        max_size=3,
    ),
    language=st.sampled_from(["en", "zh"]),
    split=st.sampled_from(["train", "heldout"]),
    seed=st.integers(0, 2**32),
)
def test_wording_never_gives_two_sections_one_heading(example, headings, language, split, seed):
    """A harness with custom sections `rules` and `policies` (shown as "Rules", "Policies") had
    its `instructions` reworded to "Policies" too: two sections under one heading, and in the
    json layout the first's text lost (12 of 64 rows of an audit harness)."""
    episode = example[0]
    prompt = episode.harness.prompt
    custom = ["rules", "policies", "guidelines", "directions", "role", "identity"]
    harness = replace(
        episode.harness,
        prompt=replace(
            prompt,
            sections=(*prompt.sections, *custom),
            text={**prompt.text, **{name: f"Text of {name}." for name in custom}},
            options={
                **prompt.options,
                "headings": {**prompt.options.get("headings", {}), **headings},
            },
        ),
    )
    episode = replace(episode, harness=harness)
    options = harness.prompt.options
    before = [
        section_heading(s, {**DEFAULT_HEADINGS, **options.get("headings", {})}).casefold()
        for s in harness.prompt.sections
    ]
    _, out = draw(PromptWording(split=split, language=language), episode, seed)
    options = out.harness.prompt.options
    after = [
        section_heading(s, {**DEFAULT_HEADINGS, **options.get("headings", {})}).casefold()
        for s in out.harness.prompt.sections
    ]
    assert len(set(after)) >= len(set(before))  # no heading now stands for two sections


def test_placement_moves_the_catalogue_and_tool_list_to_the_first_user_turn(example):
    episode = example[0]
    seen = set()
    for seed in range(20):
        params, out = draw(PromptPlacement(), episode, seed)
        moved = {s for s, w in params["placement"].items() if w == "first_user"}
        assert moved and moved <= {"skills", "tools"}
        system, user = render_messages(out)[:2]
        for section, entry in (("skills", "`after-sales-reply`"), ("tools", "`check_stock`")):
            assert (entry in user["content"]) == (section in moved)
            assert (entry in system["content"]) == (section not in moved)
        assert user["content"].endswith("\n\n" + episode.messages[0]["content"])
        seen.add(frozenset(moved))
        back, _ = draw(PromptPlacement(), out, seed)  # from there, it can move them back
        assert back["placement"] != params["placement"]
    assert len(seen) == 3


def test_bad_params_are_refused(example):
    episode = example[0]
    with pytest.raises(HsaError, match="layout 'yaml' does not exist"):
        PromptLayout().apply(episode, {"layout": "yaml", "style": {}})
    with pytest.raises(HsaError, match="not a permutation"):
        PromptSectionOrder().apply(episode, {"order": ["tools", "persona"]})
    with pytest.raises(HsaError, match="placement of 'hooks' must be one of"):
        PromptPlacement().apply(episode, {"placement": {"hooks": "footer"}})
    with pytest.raises(HsaError, match="headings must map names to strings"):
        PromptWording().apply(episode, {"language": "en", "headings": {"tools": 3}, "phrases": {}})
    with pytest.raises(HsaError, match="give two sections one heading"):
        PromptWording().apply(
            episode, {"language": "en", "headings": {"instructions": "tools"}, "phrases": {}}
        )


# ---- the family's promise over whole pipelines -----------------------------------------------


def pipeline_recipe(steps: list[tuple[str, str]], seed: int) -> Recipe:
    pipeline = [
        {name: {} if name == "prompt_placement" else {"split": split}} for name, split in steps
    ]
    return Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": "prompt",
            "seed": seed,
            "variants_per_episode": 2,
            "keep_original": False,
            "pipeline": pipeline,
        }
    )


def test_every_variant_of_the_example_keeps_every_section(example):
    for k, episode in enumerate(example[::8]):
        for split in ("train", "heldout"):
            recipe = pipeline_recipe([(name, split) for name in TRANSFORMS], seed=k)
            for variant in augment_episode(recipe, episode):
                assert isinstance(variant, Variant), str(variant)
                assert missing_information(variant.episode) == [], variant.lineage


@st.composite
def prompt_episodes(draw_) -> Episode:
    """Generated harnesses with instructions and hooks sections too, and conversations with or
    without a user turn (then the moved sections join the system prompt)."""
    harness = draw_(harnesses())
    sections = list(harness.prompt.sections)
    text = dict(harness.prompt.text)
    if draw_(st.booleans()):
        sections.append("hooks")
    if draw_(st.booleans()):
        text["instructions"] = draw_(unicode_text)
        sections.insert(draw_(st.integers(0, len(sections))), "instructions")
    harness = replace(harness, prompt=replace(harness.prompt, sections=tuple(sections), text=text))
    messages = draw_(
        st.sampled_from(
            [
                [{"role": "user", "content": "hello"}],
                [
                    {"role": "system", "content": "Row system text."},
                    {"role": "user", "content": "hi"},
                ],
                [{"role": "system", "content": "Only a system turn."}],
            ]
        )
    )
    return Episode.from_dict(
        {"id": "p", "messages": messages, "gold": {"no_call": True}}, harness=harness
    )


@given(
    episode=prompt_episodes(),
    steps=st.lists(
        st.tuples(st.sampled_from(TRANSFORMS), st.sampled_from(["train", "heldout"])),
        min_size=1,
        max_size=5,
    ),
    seed=st.integers(0, 2**32),
)
def test_every_variant_keeps_every_section_in_what_the_model_reads(episode, steps, seed):
    for variant in augment_episode(pipeline_recipe(steps, seed), episode):
        assert isinstance(variant, Variant), str(variant)
        out = variant.episode
        assert missing_information(out) == []
        # Only the prompt changes; what it shows, and the conversation, are the same.
        assert (
            out.messages,
            out.gold,
            out.harness.skills,
            out.harness.tools,
            out.harness.hooks,
        ) == (
            episode.messages,
            episode.gold,
            episode.harness.skills,
            episode.harness.tools,
            episode.harness.hooks,
        )


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(
    value=_JSON_VALUES,
    indent=st.sampled_from([0, 1, 2, 4]),
    depth=st.integers(0, 3),
    flat_from=st.sampled_from([0, 1, 2, 3, 99]),
)
def test_layout_json_reads_back_and_keeps_its_shape(value, indent, depth, flat_from):
    """What layouts print for tools and schemas: valid JSON equal to the value; one line (as
    json.dumps with ", " writes it) when unindented or at/after flat_from; otherwise no line
    deeper than the last level allowed to break, each continuation line shifted by ``depth``."""
    from hsa.render import json_value_of

    text = json_value_of(value, indent, depth, flat_from)
    assert json.loads(text) == value
    if indent == 0 or depth >= flat_from:
        assert text == json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        return
    pads = [len(line) - len(line.lstrip(" ")) for line in text.split("\n")[1:]]
    assert all(depth * indent <= pad <= flat_from * indent for pad in pads)
    if isinstance(value, dict | list) and value:  # a breaking container: a line per item
        assert text.count("\n") >= len(value)


# One harness's texts per language: a persona, a skill and a tool described in it.
WRITTEN_IN = {
    "en": ("You help customers with their orders.", "Answers questions about the delivery."),
    "it": ("Aiuti i clienti con i loro ordini.", "Risponde alle domande sulla consegna del pacco."),
    "zh": ("你帮助顾客处理他们的订单。", "回答关于配送的问题。"),
    "ja": ("あなたはお客様の注文を手伝います。", "配送についての質問に答えます。"),
}


def harness_written_in(language: str, **options) -> Harness:
    persona, description = WRITTEN_IN[language]
    return replace(
        TINY,
        skills=(replace(TINY.skills[0], description=description, content=description),),
        tools=(replace(TINY.tools[0], description=description),),
        hooks=(replace(TINY.hooks[0], description=description),),
        prompt=replace(TINY.prompt, text={"persona": persona}, options=options),
    )


@pytest.mark.parametrize(
    ("language", "options", "drawn"),
    [
        ("en", {}, {"en"}),
        # The render's own headings are English: an Italian harness that keeps them reads
        # English scaffolding already, and is reworded in English, never in Chinese.
        ("it", {}, {"en"}),
        ("zh", {}, {"en", "zh"}),
        ("ja", {}, {"en"}),
        # An Italian harness with headings of its own: no table speaks its language.
        ("it", {"headings": {"skills": "Competenze", "tools": "Strumenti"}}, {None}),
    ],
)
def test_wording_draws_only_a_language_the_harness_is_written_in(language, options, drawn):
    """Chinese headings in an Italian or Japanese harness are wording no operator writes: the
    variant would teach the model a harness mixed of two languages, not its harness reworded."""
    harness = harness_written_in(language, **options)
    episode = Episode.from_dict(
        {"id": "e", "messages": [{"role": "user", "content": "?"}], "gold": {"no_call": True}},
        harness=harness,
    )
    seen = set()
    for seed in range(30):
        for split in ("train", "heldout"):
            params, out = draw(PromptWording(split=split), episode, seed)
            seen.add(params["language"])
            if params["language"] is None:
                assert out.harness.prompt == harness.prompt
    assert seen == drawn


def test_a_harness_rendering_through_its_own_layout_keeps_it_and_its_places():
    """A layout of the harness's own writes text of its own (a header, "load a skill with
    carica_competenza", a footer counting sections): another layout dropped it in every row, and
    sections moved to the user turn were rendered through it a second time, header and footer
    included."""
    own = "=== House ===\n{% for s in sections %}{{ s.heading }}: {{ s.text }}\n{% endfor %}=== End ==="
    harness = replace(TINY, layouts={"house": own}, prompt=replace(TINY.prompt, layout="house"))
    episode = Episode(
        "e",
        harness,
        ({"role": "user", "content": "hi"},),
        Gold.from_dict({"no_call": True}, n_messages=1),
    )
    for seed in range(8):
        for split in ("train", "heldout"):
            drawn = PromptLayout(split=split).sample_params(episode, random.Random(seed))
            assert drawn["layout"] == "house"
        assert PromptPlacement().sample_params(episode, random.Random(seed)) == {"placement": {}}


@pytest.mark.parametrize("where", ["phrases", "skill", "hook"])
def test_a_position_in_the_prompts_own_wording_or_a_listed_description_keeps_the_order(where):
    """The prompt shows more text than its sections': its own instructions (``hooks_intro``:
    "checks on the tools listed above") and every description its lists show. A position
    pointed at there was read nowhere, and the hooks moved first."""
    said = "Checks on the tools listed above."
    prompt = replace(TINY.prompt, sections=("persona", "skills", "tools", "hooks"))
    if where == "phrases":
        prompt = replace(prompt, options={"phrases": {"hooks_intro": said}})
    harness = replace(TINY, prompt=prompt)
    if where == "skill":
        harness = replace(
            harness, skills=(replace(harness.skills[0], description=said), *harness.skills[1:])
        )
    if where == "hook":
        harness = replace(
            harness,
            hooks=(Hook(name="guard", event="tool_call", function="f", description=said),),
            hooks_source="def f(payload, config):\n    return {'ok': True}\n",
        )
    assert refers_to_position(harness)
    assert not refers_to_position(TINY)
