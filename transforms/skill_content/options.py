"""The option tables of the skill_content family (``options.yaml`` beside this module), as the
transforms read them: styles and phrases, each with a train and a held-out part."""

from __future__ import annotations

from pathlib import Path

import yaml

_TABLES = yaml.safe_load(Path(__file__).with_name("options.yaml").read_text(encoding="utf-8"))

HEADING_STYLES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["heading_styles"].items()
}
# name -> (bullet, spaces after the bullet, delimiter of numbered items)
LIST_STYLES: dict[str, dict[str, tuple[str, int, str]]] = {
    k: {name: tuple(style) for name, style in v.items()} for k, v in _TABLES["list_styles"].items()
}
# name -> (list spacing, wrapping): spacing "tight" | "loose" | None (keep); wrapping None (keep),
# 0 (one line per paragraph or item) or a width to rewrap at.
WHITESPACE_STYLES: dict[str, dict[str, tuple[str | None, int | None]]] = {
    k: {name: tuple(style) for name, style in v.items()}
    for k, v in _TABLES["whitespace_styles"].items()
}
EMPHASIS_STYLES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["emphasis_styles"].items()
}
# Groups of interchangeable phrases (see options.yaml for what a phrase may not hold).
SKILL_PHRASES: tuple[dict[str, tuple[str, ...]], ...] = tuple(
    {k: tuple(v) for k, v in group.items()} for group in _TABLES["phrases"]
)
# Registers of the LLM paraphrase, appended to its instruction.
PARAPHRASE_STYLES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["paraphrase_styles"].items()
}

# The plan keys of the style tables, in the order a plan draws them (the order is part of the
# random stream, so of every variant's bytes).
RESTYLES = (
    ("headings", HEADING_STYLES),
    ("list_style", LIST_STYLES),
    ("whitespace", WHITESPACE_STYLES),
    ("emphasis", EMPHASIS_STYLES),
)

# Every phrase (lower case) -> (its group in SKILL_PHRASES, its part).
PHRASES: dict[str, tuple[int, str]] = {
    phrase.lower(): (g, part)
    for g, group in enumerate(SKILL_PHRASES)
    for part in ("train", "heldout")
    for phrase in group[part]
}
