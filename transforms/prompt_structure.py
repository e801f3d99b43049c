"""Prompt structure: change how the system prompt is laid out, never what it says.

Changes: the layout (Markdown, XML tags, one JSON object, plain prose, each with a few styles),
the order of the prompt's sections, the wording of section headings and of the fixed
instructions that introduce skills, tools and hooks (curated English and Chinese tables), and
whether the skill catalogue and the tool list sit in the system prompt or in the first user turn.
Keeps: every section's information — each skill id and description, each tool name and
description (and schema, in the layouts that show it), each hook, every text section — in what
the model reads (system prompt plus first user turn); skills, tools, hooks, messages and gold are
untouched. Every option table is split into a ``train`` and a ``heldout`` part that never overlap.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Literal

from hsa.augment.registry import register
from hsa.augment.transform import Transform
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.model.harness import BUILTIN_SECTIONS, WORDING_OPTIONS, Harness
from hsa.render import (
    DEFAULT_HEADINGS,
    DEFAULT_PHRASES,
    PLACEMENTS,
    available_layouts,
    section_heading,
)
from hsa.text.position import POSITION
from hsa.transforms._language import table_languages

# (layout, style) pairs: the style is prompt.options.layout_style, read by the layout (see the
# comment at the top of each templates/layouts/*.j2). Held-out layouts are whole layouts that no
# training variant uses.
LAYOUTS: dict[str, tuple[dict, ...]] = {
    "train": (
        {"layout": "markdown", "style": {}},
        {"layout": "markdown", "style": {"heading": "#", "bullet": "*"}},
        {"layout": "markdown", "style": {"heading": "###", "bullet": "+"}},
        {"layout": "xml", "style": {"tags": "section"}},
        {"layout": "xml", "style": {"tags": "named"}},
    ),
    "heldout": (
        {"layout": "json", "style": {"indent": 2}},
        {"layout": "json", "style": {"indent": 2, "flat_from": 3}},
        {"layout": "json", "style": {"indent": 4, "flat_from": 2}},
        {"layout": "prose", "style": {"entries": "lines"}},
        {"layout": "prose", "style": {"entries": "inline"}},
    ),
}

# Wording of section headings (by section name) and of the fixed instructions (phrases, by key),
# per language and split. The render defaults (DEFAULT_HEADINGS, DEFAULT_PHRASES) are the source
# harness's own wording and belong to neither part.
HEADINGS: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {
    "persona": {
        "en": {
            "train": ("Role", "Who you are", "Identity"),
            "heldout": ("Your role", "About you", "Character"),
        },
        "zh": {
            "train": ("角色", "你的身份", "人设"),
            "heldout": ("角色设定", "关于你", "身份说明"),
        },
    },
    "instructions": {
        "en": {
            "train": ("Rules", "Guidelines", "How to work"),
            "heldout": ("Operating rules", "Directions", "Policies"),
        },
        "zh": {
            "train": ("规则", "工作准则", "注意事项"),
            "heldout": ("行为规范", "操作说明", "要求"),
        },
    },
    "skills": {
        "en": {
            "train": ("Skill catalogue", "Available skills", "Skill modules"),
            "heldout": ("Skill library", "Loadable skills", "Playbooks"),
        },
        "zh": {
            "train": ("技能列表", "可用技能", "技能模块"),
            "heldout": ("技能库", "可加载的技能", "技能目录"),
        },
    },
    "tools": {
        "en": {
            "train": ("Available tools", "Functions", "Tool list"),
            "heldout": ("Callable functions", "Toolbox", "API functions"),
        },
        "zh": {
            "train": ("可用工具", "工具列表", "函数"),
            "heldout": ("可调用的函数", "工具箱", "接口函数"),
        },
    },
    "hooks": {
        "en": {
            "train": ("Automatic checks", "Guards", "Hooks"),
            "heldout": ("Validators", "Runtime checks", "Safety checks"),
        },
        "zh": {
            "train": ("自动检查", "钩子", "校验规则"),
            "heldout": ("运行时检查", "安全校验", "检查项"),
        },
    },
}

# Phrases never name a tool, skill or hook: renaming transforms do not rewrite prompt options.
PHRASES: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {
    "skills_intro": {
        "en": {
            "train": (
                "Before acting on a skill, load its full instructions with the skill loader.",
                "Each skill below is a module of instructions; load it first, then follow it.",
                "Skills are listed by id; call the loader tool with an id to read one.",
            ),
            "heldout": (
                "Load the matching skill by its id before you follow it.",
                "The list shows summaries only: load a skill with the skill loader "
                "tool to read its full text.",
                "When a request fits a skill, load that skill first and do what it says.",
            ),
        },
        "zh": {
            "train": (
                "使用技能前，先用技能加载工具加载它的完整说明。",
                "下面每个技能都是一份说明，先加载，再照做。",
                "技能按 id 列出；用加载工具传入 id 即可读取。",
            ),
            "heldout": (
                "先按 id 加载合适的技能，再按它的说明行动。",
                "列表只有摘要：加载技能后才能看到完整内容。",
                "需要某个技能时，调用技能加载工具读取它。",
            ),
        },
    },
    "tools_intro": {
        "en": {
            "train": (
                "Use these tools whenever the request needs their data.",
                "Call a tool when you need information it provides; do not guess values.",
                "The functions below can be called with JSON arguments.",
            ),
            "heldout": (
                "When a question depends on data, get it from one of these tools.",
                "Invoke these functions with arguments that match their schemas.",
                "Answer from tool results, calling the functions listed here as needed.",
            ),
        },
        "zh": {
            "train": (
                "请求需要相关数据时，调用这些工具。",
                "需要信息时调用对应工具，不要猜测参数值。",
                "下列函数可以用 JSON 参数调用。",
            ),
            "heldout": (
                "问题依赖数据时，从这些工具获取。",
                "调用这些函数时，参数要符合其模式。",
                "根据需要调用这里列出的函数，并依据工具结果作答。",
            ),
        },
    },
    "hooks_intro": {
        "en": {
            "train": (
                "Automatic checks run around your steps; when one reports a problem, "
                "follow its feedback.",
                "These hooks check your actions; redo a step they reject.",
                "Guards watch each step; their feedback tells you what to fix.",
            ),
            "heldout": (
                "Validators review your calls and replies; correct whatever they flag.",
                "A failed check comes back as a message; fix the step it names.",
                "These runtime checks may block a step; follow what they say.",
            ),
        },
        "zh": {
            "train": (
                "这些检查会在你的每一步前后运行；如有问题，按反馈修正。",
                "钩子会检查你的操作；被拦下的步骤请重做。",
                "每一步都有校验，按校验反馈改正。",
            ),
            "heldout": (
                "校验器会审查你的调用和回复，请修正被标出的问题。",
                "检查未通过时会发来消息，按提示修正对应步骤。",
                "这些运行时检查可能拦截某一步，请按反馈处理。",
            ),
        },
    },
}

LANGUAGES = ("en", "zh")
# The sections that may move between the system prompt and the first user turn.
MOVABLE_SECTIONS = ("skills", "tools")


def rendered_sections(harness: Harness) -> list[str]:
    """The prompt's sections that render something, in order (a built-in section with no
    entries, or a text section with no text, renders nothing in any layout)."""
    entries = {"skills": harness.skills, "tools": harness.all_tools(), "hooks": harness.hooks}
    return [
        name
        for name in harness.prompt.sections
        if (entries[name] if name in BUILTIN_SECTIONS else harness.prompt.text.get(name))
    ]


def order_split(order: list[str]) -> str:
    """Which part a section order belongs to: even permutations of the sorted section names are
    ``train``, odd ones ``heldout`` (so each part holds half of all orders)."""
    ranks = {name: i for i, name in enumerate(sorted(order))}
    seq = [ranks[name] for name in order]
    inversions = sum(1 for i in range(len(seq)) for j in range(i + 1, len(seq)) if seq[i] > seq[j])
    return "train" if inversions % 2 == 0 else "heldout"


@register
@dataclass(frozen=True)
class PromptLayout(Transform):
    """Renders the prompt through another layout (Markdown, XML tags, a JSON object or plain
    prose, in one of a few styles); every section and its information is kept. A harness that
    renders through a layout of its own keeps it: its own text would be lost."""

    name = "prompt_layout"
    scope = "harness"
    conversation = "kept"
    version = "4"  # 4: the skill loader's own words are read as the harness's text (its language)
    # 3: a harness's own layout is kept
    # 2: the json layout is never drawn where two sections share a heading
    family = "prompt_structure"

    split: Literal["train", "heldout"] = "train"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        prompt = episode.harness.prompt
        current = {"layout": prompt.layout, "style": prompt.options.get("layout_style") or {}}
        if prompt.layout in episode.harness.layouts:
            # The harness's own layout writes text of its own (a header, "load a skill with
            # carica_competenza"), which another layout would drop: it is kept.
            return {"layout": current["layout"], "style": dict(current["style"])}
        choices = [c for c in LAYOUTS[self.split] if c != current]
        if _share_a_heading(episode.harness):
            choices = [c for c in choices if c["layout"] not in KEYED_BY_HEADING] or choices
        chosen = rng.choice(choices)
        return {"layout": chosen["layout"], "style": dict(chosen["style"])}

    def apply(self, episode: Episode, params: dict) -> Episode:
        layout, style = params["layout"], params["style"]
        known = set(available_layouts()) | set(episode.harness.layouts)
        if layout not in known:
            raise HsaError(f"layout {layout!r} does not exist; available: {sorted(known)}")
        if not isinstance(style, dict):
            raise HsaError(f"layout style must be an object, got {style!r}")
        if layout in KEYED_BY_HEADING and _share_a_heading(episode.harness):
            raise HsaError(
                f"two sections of the prompt share a heading, and the {layout} layout keys "
                f"sections by heading: one section's text would be lost"
            )
        episode = episode.with_prompt_options(layout_style=style or None)
        return episode.with_harness(
            replace(episode.harness, prompt=replace(episode.harness.prompt, layout=layout))
        )


@register
@dataclass(frozen=True)
class PromptSectionOrder(Transform):
    """Reorders the prompt's sections (persona, instructions, skills, tools, hooks...); the text
    and entries of every section are kept."""

    name = "prompt_section_order"
    scope = "harness"
    conversation = "kept"
    version = "8"  # 8: a comparison (the offer is above the band) is no reference to where
    # sections stand
    # 7: the skill loader's own words are read as the harness's text (its language)
    # 6: below/above alone in Russian, Arabic 'the next', Hindi 'last' are positions
    # only where they point (ниже ends a clause, перечисленные ниже)
    # 5: positions written in Dutch, Polish, Turkish, Indonesian, Vietnamese,
    # Russian, Ukrainian, Greek, Hebrew, Arabic, Hindi and Korean
    # 4: more positions read (Italian, European nouns), and in the prompt's wording
    # and listed descriptions
    # 3: positions written in Spanish, Portuguese, French, German, Italian
    # 2: a prompt whose text points at where sections stand keeps its order and
    # places
    family = "prompt_structure"

    split: Literal["train", "heldout"] = "train"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        sections = list(episode.harness.prompt.sections)
        if refers_to_position(episode.harness):
            return {"order": sections}  # "the rules above", moved first, points at nothing
        shown = rendered_sections(episode.harness)
        drawn = list(shown)
        rng.shuffle(drawn)
        if len(drawn) >= 2 and order_split(drawn) != self.split:
            drawn[0], drawn[1] = drawn[1], drawn[0]  # one swap flips the parity
        if drawn == shown and len(drawn) >= 3:
            drawn = drawn[1:3] + drawn[:1] + drawn[3:]  # a 3-cycle keeps the parity
        if order_split(drawn) != self.split:
            drawn = list(shown)  # two sections: the only other order is in the other part
        # Sections that render nothing keep their places; the shown ones take theirs in order.
        slots = iter(drawn)
        return {"order": [next(slots) if name in shown else name for name in sections]}

    def apply(self, episode: Episode, params: dict) -> Episode:
        order = params["order"]
        sections = episode.harness.prompt.sections
        if sorted(order) != sorted(sections):
            raise HsaError(
                f"order {order} is not a permutation of the prompt's sections {list(sections)}"
            )
        return episode.with_harness(
            replace(episode.harness, prompt=replace(episode.harness.prompt, sections=tuple(order)))
        )


def wording_languages(harness: Harness) -> tuple[str, ...]:
    """The languages (of :data:`LANGUAGES`) ``language: any`` rewords a harness's prompt in:
    those its texts are written in, and English too while the prompt keeps the render's own
    (English) headings and instructions, the scaffolding it shows already."""
    written = table_languages(harness)
    if not any(harness.prompt.options.get(option) for option in WORDING_OPTIONS):
        written |= {"en"}
    return tuple(language for language in LANGUAGES if language in written)


# Words a prompt's text uses to point at where other sections stand ("the rules above", "the
# tools listed below", "the following sections", 上述, 下記): such a prompt keeps its order and
# places. "above 500 EUR" is a threshold, and "the offer is above the band" a comparison, no
# position: "above" there leads a noun phrase.
_POSITION = re.compile(
    r"\b(?:listed|shown|described|given|stated|mentioned|defined|set out|see|as)\s+"
    r"(?:above|below)\b"
    r"|\b(?:above|below)(?=\s*[.,:;)!?]|\s*$)"
    r"|\b(?:above|below)-mentioned\b"
    r"|\bthe\s+[a-z]+(?:\s+[a-z]+)?\s+(?:above|below)\b"
    r"(?!\s*(?:[\d$€£¥]|(?:the|a|an|this|that|its|their|your|our|his|her)\b))"
    r"|\bthe\s+(?:following|preceding|previous)\s+(?:section|sections|rule|rules|tool|tools|"
    r"skill|skills|instruction|instructions|list|steps|checks)\b"
    r"|上述|以上规则|以上的|如下|下列|下面的|上面的|上記|下記|以下の"
    rf"|{POSITION}",
    re.IGNORECASE,
)


def refers_to_position(harness: Harness) -> bool:
    """Whether a text ``harness``'s prompt shows points at where sections stand
    (:data:`_POSITION`): a section's text, the prompt's own headings and instructions
    (``hooks_intro``: "the tools listed above"), and the skill, tool and hook descriptions the
    sections list."""
    texts = [
        *harness.prompt.text.values(),
        *(text for _, text in harness.prompt.wording()),
        *(s.description for s in harness.skills),
        *(t.description for t in harness.all_tools()),
        *(h.description for h in harness.hooks),
    ]
    return any(_POSITION.search(text) for text in texts)


# Layouts that key the sections by heading (one JSON object key each): of two sections with one
# heading, a reader keeps the last.
KEYED_BY_HEADING = frozenset({"json"})


def _share_a_heading(harness: Harness) -> bool:
    """Whether two sections of the harness's prompt show one heading (a section ``checks`` and
    the hooks' "Checks")."""
    shown = list(_shown_headings(harness, {}).values())
    return len(set(shown)) < len(shown)


def _shown_headings(harness: Harness, reworded: dict[str, str]) -> dict[str, str]:
    """Each section's heading as a layout shows it (case folded), with ``reworded`` over the
    harness's own headings."""
    headings = {**DEFAULT_HEADINGS, **harness.prompt.options.get("headings", {}), **reworded}
    return {s: section_heading(s, headings).casefold() for s in harness.prompt.sections}


@register
@dataclass(frozen=True)
class PromptWording(Transform):
    """Rewords the section headings and the fixed instructions that introduce skills, tools and
    hooks (English or Chinese); what each section lists and says is kept, and no two sections
    share a heading."""

    name = "prompt_wording"
    scope = "harness"
    conversation = "kept"
    version = "6"  # 6: the skill loader's own words are read as the harness's text (its language)
    # 5: no heading another section has;
    # 4: a harness in Han or kana alone is no English one
    # 3: a Hangul or Cyrillic harness is no English one; 2: language any draws
    # only a language the harness is written in
    family = "prompt_structure"

    split: Literal["train", "heldout"] = "train"
    language: Literal["any", "en", "zh"] = "any"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        options = episode.harness.prompt.options
        if self.language != "any":
            language: str | None = self.language
        else:
            languages = wording_languages(episode.harness)
            if not languages:
                return {"language": None, "headings": {}, "phrases": {}}
            language = rng.choice(languages)
        current_phrases = {**DEFAULT_PHRASES, **options.get("phrases", {})}
        headings, phrases = {}, {}
        # A heading another section shows (its own, its title-cased name, or one drawn for it
        # here) is taken: two sections headed "Policies" read as one, and in the json layout
        # one key's value is lost.
        taken = set(_shown_headings(episode.harness, {}).values())
        for section in episode.harness.prompt.sections:
            if section in HEADINGS:
                choices = [
                    h for h in HEADINGS[section][language][self.split] if h.casefold() not in taken
                ]
                if not choices:
                    continue  # every word of the table is another section's: keep its own
                headings[section] = rng.choice(choices)
                taken.add(headings[section].casefold())
            key = f"{section}_intro"
            if key in PHRASES:
                choices = [
                    p for p in PHRASES[key][language][self.split] if p != current_phrases.get(key)
                ]
                phrases[key] = rng.choice(choices)
        return {"language": language, "headings": headings, "phrases": phrases}

    def apply(self, episode: Episode, params: dict) -> Episode:
        headings, phrases = params["headings"], params["phrases"]
        for what, values in (("headings", headings), ("phrases", phrases)):
            if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
                raise HsaError(f"{what} must map names to strings, got {values!r}")
        if not headings and not phrases:
            return episode
        options = episode.harness.prompt.options
        shown = _shown_headings(episode.harness, headings)
        if any(
            shown[section] == heading
            for section in headings
            if section in shown
            for other, heading in shown.items()
            if other != section
        ):
            raise HsaError(f"headings {headings} give two sections one heading")
        return episode.with_prompt_options(
            headings={**options.get("headings", {}), **headings} or None,
            phrases={**options.get("phrases", {}), **phrases} or None,
        )


@register
@dataclass(frozen=True)
class PromptPlacement(Transform):
    """Moves the skill catalogue and/or the tool list between the system prompt and the start of
    the first user turn; what they list is kept. A harness that renders through a layout of its
    own keeps its places (the layout would write its own text into both).

    There is no train/heldout split: each movable section has two places, and a split of two
    would leave one choice per part."""

    name = "prompt_placement"
    scope = "harness"
    conversation = "kept"
    version = "8"  # 8: a comparison (the offer is above the band) is no reference to where
    # sections stand
    # 7: the skill loader's own words are read as the harness's text (its language)
    # 6: below/above alone in Russian, Arabic 'the next', Hindi 'last' are positions
    # only where they point (ниже ends a clause, перечисленные ниже)
    # 5: positions written in Dutch, Polish, Turkish, Indonesian, Vietnamese,
    # Russian, Ukrainian, Greek, Hebrew, Arabic, Hindi and Korean
    # 4: more positions read (Italian, European nouns), and in the prompt's wording
    # and listed descriptions; a harness's own layout keeps its places
    # 3: positions written in Spanish, Portuguese, French, German, Italian
    # 2: a prompt whose text points at where sections stand keeps its order and
    # places
    family = "prompt_structure"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        harness = episode.harness
        current = harness.prompt.options.get("placement") or {}
        movable = [s for s in rendered_sections(harness) if s in MOVABLE_SECTIONS]
        if not movable or refers_to_position(harness):
            return {"placement": {}}  # "the tools listed above", moved out, points at nothing
        if harness.prompt.layout in harness.layouts:
            # The harness's own layout renders the sections moved to the user turn too, with
            # its own header and footer ("end of the instructions (5 sections)") a second time.
            return {"placement": {}}
        now = [current.get(s, "system") for s in movable]
        # Every assignment of the movable sections to a place, except the current one.
        choices = []
        for mask in range(2 ** len(movable)):
            places = [PLACEMENTS[(mask >> i) & 1] for i in range(len(movable))]
            if places != now:
                choices.append(places)
        return {"placement": dict(zip(movable, rng.choice(choices), strict=True))}

    def apply(self, episode: Episode, params: dict) -> Episode:
        chosen = params["placement"]
        sections = episode.harness.prompt.sections
        for section, where in chosen.items():
            if section not in sections or where not in PLACEMENTS:
                raise HsaError(
                    f"placement of {section!r} must be one of {list(PLACEMENTS)} "
                    f"for a section of the prompt {list(sections)}, got {where!r}"
                )
        if not chosen:
            return episode
        merged = {**(episode.harness.prompt.options.get("placement") or {}), **chosen}
        moved = {s: w for s, w in merged.items() if w != "system"}
        return episode.with_prompt_options(placement=moved or None)
