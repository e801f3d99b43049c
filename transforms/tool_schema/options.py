"""The option tables of the tool_schema family (``options.yaml`` beside this module), as the
transforms read them: name suffixes and mask prefixes, description phrases and distractor tools,
each with a train and a held-out part that never overlap."""

from __future__ import annotations

from pathlib import Path

import yaml

from hsa.text.phrases import PhraseTable, Phrasing

SPLITS = ("train", "heldout")

_TABLES = yaml.safe_load(Path(__file__).with_name("options.yaml").read_text(encoding="utf-8"))

# Suffixes of last resort and the first words of masks; the words of names are renamed with the
# general lexicon (transforms/_names.py).
TOOL_NAME_SUFFIXES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["tool_name_suffixes"].items()
}
PARAMETER_NAME_SUFFIXES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["parameter_name_suffixes"].items()
}
TOOL_MASK_PREFIXES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["tool_mask_prefixes"].items()
}
PARAMETER_MASK_PREFIXES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["parameter_mask_prefixes"].items()
}

DESCRIPTION_PHRASES: tuple[Phrasing, ...] = tuple(
    Phrasing(tuple(g["train"]), tuple(g["heldout"]), g.get("lang", "en"), g.get("pos", ""))
    for g in _TABLES["description_phrases"]
)
DESCRIPTIONS = PhraseTable(DESCRIPTION_PHRASES)

# A pool entry: an OpenAI tool and the words of the requests it would serve (a distractor is only
# offered where none of them occur, so it never answers the task).
DISTRACTOR_TOOLS: dict[str, tuple[dict, ...]] = {
    split: tuple(
        {
            "tool": {
                "type": "function",
                "function": {
                    "name": d["name"],
                    "description": d["description"],
                    "parameters": d["parameters"],
                },
            },
            "keywords": tuple(d["keywords"]),
        }
        for d in entries
    )
    for split, entries in _TABLES["distractor_tools"].items()
}

# How the prompt shows tool schemas; the tools column given to trainers stays OpenAI-shaped.
TOOL_SHAPES = ("openai", "mcp")
TOOL_SHAPE_OPTION = "tool_shape"
