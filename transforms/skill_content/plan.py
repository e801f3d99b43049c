"""Drawing a rewrite plan for a skill body (see :mod:`~hsa.transforms.skill_content.rewrite` for
what a plan holds), and fitting it to the body: the largest part of a plan that keeps every
invariant, and a style that changes a body the plan would leave as it was.

The draws are part of every variant's bytes: their number and order for a given body and seed
must not change without a version bump of the transforms that use them.
"""

from __future__ import annotations

import random
from functools import lru_cache

from hsa.errors import HsaError
from hsa.text.markdown import block_text, parse
from hsa.transforms.skill_content.options import PHRASES, RESTYLES, SKILL_PHRASES
from hsa.transforms.skill_content.rewrite import (
    block_english,
    body_languages,
    rewrite_body,
    skip_phrase,
)
from hsa.transforms.skill_content.structure import (
    free_segments,
    inline_blocks,
    phrases_in,
    structure_of,
)


def _found_phrases(blocks, structure, names, in_japanese: bool, in_english: bool) -> list[str]:
    found = set()
    for k in inline_blocks(blocks, structure):
        text = block_text(blocks[k])
        pattern = phrases_in(text, PHRASES)
        if pattern is None:
            continue
        english = block_english(blocks[k], in_english)
        for start, end in free_segments(text, names):
            # Per segment, as the rewrite reads it (rewrite._rephrase): a Chinese phrase counts
            # where it is a word of its segment, in a body that is not Japanese
            # (hsa.text.chinese), an English one in a block that reads as English.
            segment = text[start:end]
            found.update(
                m.group(0).lower()
                for m in pattern.finditer(segment)
                if not skip_phrase(segment, m, in_japanese=in_japanese, in_english=english)
            )
    return sorted(found)


@lru_cache(maxsize=4096)
def _analysis(body: str, names: tuple[str, ...], languages: tuple[bool, bool]):
    """What drawing a plan reads of a body, computed once per body (read-only afterwards: the
    same skill bodies recur in every episode of a harness)."""
    blocks, _ = parse(body)
    structure = structure_of(blocks)
    found = _found_phrases(blocks, structure, names, *languages)
    return blocks, structure, found


# A body's document languages when nothing is known of its harness (body_languages).
_DOCUMENT_DEFAULTS = {"japanese": False, "english": True}


def draw_plan(
    body: str,
    names,
    rng: random.Random,
    split: str,
    *,
    reorder: bool = True,
    restyle: bool = True,
    rephrase: bool = True,
    drop_examples: bool = True,
    document: dict | None = None,
) -> dict:
    """A rewrite plan for ``body``: JSON-only, every choice :func:`rewrite_body` needs.
    ``document``: the languages of the body's harness (``{"japanese": ..., "english": ...}``,
    hsa.transforms._language), kept in the plan where they change how the body reads."""
    document = {k: v for k, v in (document or {}).items() if v != _DOCUMENT_DEFAULTS[k]}
    languages = body_languages(body, document)
    blocks, structure, found = _analysis(body, tuple(names), languages)
    plan: dict = {}
    if document and languages != body_languages(body, {}):
        plan["document"] = document
    if reorder and structure.reorder_sections and rng.random() < 0.7:
        order = list(range(len(structure.sections)))
        moved = list(structure.movable)
        rng.shuffle(moved)
        for slot, section in zip(structure.movable, moved, strict=True):
            order[slot] = section
        if order != sorted(order):
            plan["sections"] = order
    lists = {}
    for index, info in enumerate(structure.lists):
        items = list(range(len(blocks[info.block].items)))
        if drop_examples and info.droppable:
            dropped = {i for i in info.droppable if rng.random() < 0.4}
            if len(dropped) == len(items):
                dropped.discard(rng.choice(sorted(dropped)))
            items = [i for i in items if i not in dropped]
        if reorder and info.shuffle and rng.random() < 0.8:
            rng.shuffle(items)
        if items != list(range(len(blocks[info.block].items))):
            lists[str(index)] = items
    if lists:
        plan["lists"] = lists
    examples = {}
    for index, section in enumerate(structure.sections):
        units = list(range(len(section.units)))
        if len(units) < 2:
            continue
        if drop_examples and rng.random() < 0.4:
            units = sorted(rng.sample(units, rng.randint(1, len(units) - 1)))
        if reorder and rng.random() < 0.6:
            rng.shuffle(units)
        if units != list(range(len(section.units))):
            examples[str(index)] = units
    if examples:
        plan["examples"] = examples
    if restyle:
        for key, table in RESTYLES:
            if rng.random() < 0.6:
                plan[key] = rng.choice(sorted(table[split]))
    if rephrase:
        phrases = []
        for phrase in found:
            group = SKILL_PHRASES[PHRASES[phrase][0]]
            choices = [p for p in group[split] if p.lower() != phrase]
            if choices and rng.random() < 0.7:
                phrases.append([phrase, rng.choice(choices)])
        if phrases:
            plan["phrases"] = phrases
    return plan


def safe_plan(body: str, plan: dict, names) -> dict:
    """``plan``, or the largest part of it that keeps every invariant: a body that defeats a
    rule (a stray quote that pairs differently once bullets move) loses that rule, not the rest."""
    restyle = tuple(key for key, _ in RESTYLES)
    candidates = [
        plan,
        {k: v for k, v in plan.items() if k != "phrases"},
        {k: v for k, v in plan.items() if k not in restyle + ("phrases",)},
        {k: v for k, v in plan.items() if k in restyle},
        {k: v for k, v in plan.items() if k in ("headings", "list_style")},
    ]
    for candidate in candidates:
        try:
            rewrite_body(body, candidate, names)
        except HsaError:
            continue
        return candidate
    return {}


def changing_plan(body: str, plan: dict, names, rng: random.Random, split: str) -> dict:
    """``plan``, or when it leaves ``body`` as it was, ``plan`` with one style of the split that
    changes the body (the first, in a random order, that does and keeps every invariant)."""
    if _rewrites_to(body, plan, names) not in (None, body):
        return plan
    options = [
        (key, option)
        for key, table in RESTYLES
        for option in sorted(table[split])
        if plan.get(key) != option
    ]
    rng.shuffle(options)
    for key, option in options:
        candidate = {**plan, key: option}
        if _rewrites_to(body, candidate, names) not in (None, body):
            return candidate
    return plan


def _rewrites_to(body: str, plan: dict, names) -> str | None:
    try:
        return rewrite_body(body, plan, names)
    except HsaError:
        return None
