"""Distractor tools: plausible tools nobody needs, from a pool split into train and held-out
parts (options.yaml), never about what the request or the harness already asks or does."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import orjson

from hsa.augment.mapping import Mapping
from hsa.augment.registry import register
from hsa.augment.transform import Transform
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.harness import Harness
from hsa.model.message import message_text
from hsa.model.tool import Tool
from hsa.text.language import reads_english
from hsa.text.names import convention_of, name_words, shared_conventions, write_segments
from hsa.transforms._language import english_harness, japanese_harness
from hsa.transforms._names import declared_or_shared
from hsa.transforms.tool_schema.common import with_tools
from hsa.transforms.tool_schema.options import DISTRACTOR_TOOLS


def _harness_text(harness: Harness) -> str:
    """What the harness already does: its tools (a tool's name as its words, in any
    convention) and their descriptions."""
    return " ".join(
        f"{' '.join(name_words(t.name))} {t.description}" for t in harness.tools
    ).lower()


def _written_as(episode: Episode, names) -> str | None:
    """The convention a distractor's names take beside ``names``: the variant's (a step that
    renamed names recorded it) where ``names`` are written in it, else the one they share. A
    parameter rename's camelCase beside snake_case tools no step renamed would give the
    distractors a style no tool of the variant has, and away by their looks."""
    names = list(names)
    declared = declared_or_shared(episode, names)
    shared = shared_conventions(names) if names else set()
    if not shared or declared in shared:
        return declared
    return convention_of(names)


def _request_text(episode: Episode) -> str:
    """What the user asks: the user's messages."""
    return " ".join(message_text(m) for m in episode.messages if m.get("role") == "user").lower()


def _asked_for(episode: Episode, params: dict) -> str | None:
    """Why a drawn distractor is about what this conversation asks (its name and the keyword the
    request mentions), or None."""
    request = _request_text(episode)
    for entry in params["tools"]:
        for keyword in entry.get("keywords", ()):
            # A request in another language than English is read for its own words: an English
            # keyword there matches its words by their letters ("die", a German article, is no
            # die to roll). Asked only of a match: most requests match no keyword.
            if _mentions_keyword(request, keyword) and (
                not keyword.isascii() or reads_english(request)
            ):
                name = entry["tool"]["function"]["name"]
                return f"distractor tool {name!r} is about what the request asks ({keyword!r})"
    return None


def _mentions_keyword(text: str, keyword: str) -> bool:
    if keyword.isascii():
        return keyword.lower() in text and _keyword_pattern(keyword).search(text) is not None
    return keyword in text


@lru_cache(maxsize=4096)
def _keyword_pattern(keyword: str) -> re.Pattern:
    # A keyword starts a word: "qr" is no word of the record id "0015g00000QrS34AAC". It may
    # end inside one: a compound or an inflection still asks for it ("zipcode", "photographs",
    # "spellcheck", "scanned"); a longer word of its own ("IMAGENAME", "filed") then refuses the
    # variant, a row lost with its reason rather than a distractor that does what is asked.
    return re.compile(r"(?<![a-z0-9])" + re.escape(keyword.lower()))


def _written_in(tool: dict, name_convention: str | None, parameter_convention: str | None) -> dict:
    """A pool tool with its name and top-level parameter names in the harness's conventions (as
    they are where the harness mixes conventions), so a distractor does not stand out by its
    spelling."""
    fn = tool["function"]
    name = write_segments(fn["name"], name_convention) if name_convention else fn["name"]
    schema = fn["parameters"]
    if parameter_convention:
        renames = {p: write_segments(p, parameter_convention) for p in schema["properties"]}
        schema = {**schema, "properties": {renames[k]: v for k, v in schema["properties"].items()}}
        if "required" in schema:
            schema["required"] = [renames[p] for p in schema["required"]]
    return {**tool, "function": {**fn, "name": name, "parameters": schema}}


@lru_cache(maxsize=1024)
def _pool_tool(
    split: str, index: int, tool_convention: str | None, parameter_convention: str | None
) -> dict:
    """Pool tool ``index`` of ``split`` written in these conventions, made once: every harness
    variant draws from the whole pool. Never changed: what a draw keeps is a copy."""
    return _written_in(
        DISTRACTOR_TOOLS[split][index]["tool"], tool_convention, parameter_convention
    )


@register
@dataclass(frozen=True)
class DistractorTools(Transform):
    """Adds plausible tools the task does not need (a realistic pool, none about what the
    harness already does) at random places in the tools list, their names written in the
    harness's convention; every existing tool, call and the gold are kept as they are. A
    conversation that asks for what a drawn distractor does is refused (the variant is
    rejected), so no row is left with two tools for its request. The pool is English: a harness
    that does not read English, or is written in Japanese, gets none."""

    name = "distractor_tools"
    scope = "harness"
    version = "15"  # 15: a keyword starts a word and may end inside one again (zipcode,
    # photographs ask for their tools); distractors follow the tools' own convention where those are
    # not written in the variant's
    # 14: a keyword ends a word but for an inflection (IMAGENAME, pollution ask for
    # no distractor)
    # 13: the skill loader's own words are read as the harness's text (its language)
    # 12: a keyword starts a word (qr is no word of a record id)
    # 11: a record of data is no voice recording (the memo tool's keywords)
    # 10: none beside a harness written in Japanese, whose requests no keyword reads
    # 9: a request in another language is read for its own words, not English keywords
    # 8: a harness in Han or kana alone is no English one
    # 7: umlauts stay in their word; none for a Hangul or Cyrillic harness;
    # 6: digits stay in their word (s3, k8s); 5: none for a harness that does
    # not read English; 4: drawn from the
    # harness alone (the request refuses, it does not steer)
    family = "tool_schema"

    min_count: int = 1
    max_count: int = 3
    split: Literal["train", "heldout"] = "train"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.min_count <= self.max_count:
            raise HsaError(
                f"transform {self.name!r}: need 0 <= min_count <= max_count, got "
                f"{self.min_count} and {self.max_count}"
            )

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        # The harness alone decides (the draw is shared by every conversation under the
        # harness variant); a conversation that asks for a drawn tool is refused in apply.
        harness = episode.harness
        if not english_harness(harness) or japanese_harness(harness):
            # The pool is English, and its keywords read English and Chinese: beside an Italian
            # harness's tools its tools would be the only English ones (a tell, not a choice),
            # and none could be told apart from a tool the harness has (a second reminder tool).
            # Nor under a harness written in Japanese, whatever English it has besides: its
            # guests ask in Japanese (リマインド, メール), which no keyword reads, so a request for
            # a drawn tool would not be refused.
            return {"tools": []}
        taken = set(harness.names)
        request = _harness_text(harness)
        tool_convention = _written_as(episode, harness.tool_names)
        parameter_convention = _written_as(
            episode, [p for t in harness.tools for p in t.properties]
        )
        pool = [
            (_pool_tool(self.split, i, tool_convention, parameter_convention), d["keywords"])
            for i, d in enumerate(DISTRACTOR_TOOLS[self.split])
            if not any(_mentions_keyword(request, k) for k in d["keywords"])
        ]
        pool = [
            (tool, keywords) for tool, keywords in pool if tool["function"]["name"] not in taken
        ]
        count = min(rng.randint(self.min_count, self.max_count), len(pool))
        chosen = rng.sample(pool, count)
        size = len(harness.tools)
        added = []
        for tool, keywords in chosen:
            size += 1
            # A copy, so that no variant's harness shares a schema object with the pool.
            added.append(
                {
                    "at": rng.randrange(size),
                    "tool": orjson.loads(orjson.dumps(tool)),
                    "keywords": list(keywords),
                }
            )
        return {"tools": added}

    def apply(self, episode: Episode, params: dict) -> Episode:
        refused = _asked_for(episode, params)
        if refused:
            raise HsaError(refused)
        harness = episode.harness
        taken = set(harness.names)
        tools = list(harness.tools)
        for i, entry in enumerate(params["tools"]):
            tool = Tool.from_dict(entry["tool"], where=f"params.tools[{i}].tool")
            if tool.name in taken:
                raise HsaError(f"distractor tool {tool.name!r} would reuse a name of the harness")
            taken.add(tool.name)
            at = entry["at"]
            if not isinstance(at, int) or not 0 <= at <= len(tools):
                raise HsaError(f"distractor position {at!r} is outside the tools list")
            tools.insert(at, tool)
        return with_tools(episode, tuple(tools))

    def apply_to_conversation(
        self, episode: Episode, params: dict, harness: Harness, mapping: Mapping
    ) -> Episode | None:
        # The conversation is kept; it is only read, to refuse one that asks for a distractor.
        refused = _asked_for(episode, params)
        if refused:
            raise HsaError(refused)
        return episode.with_harness(harness)
