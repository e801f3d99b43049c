"""The wording of tool and parameter descriptions, reworded with the family's phrase table
(:mod:`hsa.text.phrases`), keeping every invariant of :mod:`hsa.text.paraphrase`."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from hsa.augment.registry import register
from hsa.augment.transform import Transform
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.model.schema import edit_schema, pointer, schema_nodes
from hsa.transforms._language import english_harness, japanese_harness
from hsa.transforms.tool_schema.common import tool_named, with_tools
from hsa.transforms.tool_schema.options import DESCRIPTIONS


@register
@dataclass(frozen=True)
class ToolDescriptionParaphrase(Transform):
    """Rewords tool and parameter descriptions (of every sub-schema) with curated phrase tables
    (English and Chinese); every number, quoted string, code span, identifier, name and negation
    is kept exactly, and so is everything else in the schema."""

    name = "tool_description_paraphrase"
    scope = "harness"
    conversation = "kept"
    version = "25"  # 25: Chinese phrases of another sense gone (直播间 as a channel,
    # 购买数量 after 购买, 折扣券, 推介, 举荐)
    # 24: a city is no town
    # 23: a location is no site
    # 22: phrases of another sense gone (check, find, returns, make, default is,
    # list of, in parallel, requested, information, the user, the number of, identifier, required,
    # drop, derived from)
    # 21: phrases of another sense gone (at least, maximum, minimum, exact, check)
    # 20: the skill loader's own words are read as the harness's text (its language)
    # 19: a rewording repeats no word before it and leaves a capital inside a
    # sentence (a placeholder); convert is no translate, amount no number, position no site, largest
    # no highest, used to no meant to
    # 18: a negation has no letter of any script glued to it (French noté is no not)
    # 17: a verb after a determiner and one word is the noun it is spelled like (a
    # mailed check)
    # 16: words written with a hyphen (check-in, follow-up) are words in prose, and
    # a plain-word name the prose writes as a word keeps it; a verb never leaves its compound
    # (check_in is no in_check)
    # 15: no inspect for check (it takes no that-clause)
    # 14: a parameter's description opens with a noun (Check number)
    # 13: a harness in Han or kana alone is no English one
    # 12: a Hangul or Cyrillic harness is no English one;
    # 11: the "e" of "e.g." is no Portuguese word; 10: words in code and names tell
    # no language; 9: English phrases only in
    # texts that read as English (hsa.text.language)
    # 8: no "product" row (a product of two numbers, a company's software)
    # 7: phrases of one sense (no articles, items, listing, caller, requester)
    # 6: verbs after a determiner are nouns; no change/switch, such as, viewer
    # 5: a backtick run that closes nowhere opens no code span (invariants)
    family = "tool_schema"

    split: Literal["train", "heldout"] = "train"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        harness = episode.harness
        names = harness.identifiers  # every name a rewording keeps
        in_japanese, in_english = japanese_harness(harness), english_harness(harness)
        tools: dict[str, dict] = {}
        for tool in harness.tools:
            entry: dict[str, Any] = {}
            description = DESCRIPTIONS.paraphrase(
                tool.description,
                self.split,
                rng,
                names,
                in_japanese=in_japanese,
                in_english=in_english,
            )
            if description != tool.description:
                entry["description"] = description
            schema: dict[str, str] = {}
            for parts, node in schema_nodes(tool.parameters):
                text = node.get("description")
                if isinstance(text, str):
                    new = DESCRIPTIONS.paraphrase(
                        text,
                        self.split,
                        rng,
                        names,
                        in_japanese=in_japanese,
                        in_english=in_english,
                        names_a_value=True,
                    )
                    if new != text:
                        schema[pointer(parts)] = new
            if schema:
                entry["schema"] = schema
            if entry:
                tools[tool.name] = entry
        return {"tools": tools}

    def apply(self, episode: Episode, params: dict) -> Episode:
        harness = episode.harness
        for name in params["tools"]:
            tool_named(harness, name)

        def describe(text: str, where: str) -> Callable[[dict], dict]:
            def edit(node: dict) -> dict:
                if not isinstance(node.get("description"), str):
                    raise HsaError(f"{where} has no description to reword")
                return {**node, "description": text}

            return edit

        tools = []
        for tool in harness.tools:
            entry = params["tools"].get(tool.name)
            if entry is None:
                tools.append(tool)
                continue
            edits = {
                p: describe(text, f"tool {tool.name!r} schema node {p!r}")
                for p, text in entry.get("schema", {}).items()
            }
            tools.append(
                replace(
                    tool,
                    description=entry.get("description", tool.description),
                    parameters=edit_schema(tool.parameters, edits, tool.name),
                )
            )
        return with_tools(episode, tuple(tools))
