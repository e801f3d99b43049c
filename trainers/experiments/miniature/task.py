"""The miniature's task: pick the one tool whose description fits a request, and call it with
the argument values the request names.

One harness of a few tools is made from a seed. Tool names are generic words drawn at random
(``fetch_data``, ``run``, ``process_task_summary``): they say nothing about what a tool does, so
only its description tells the tools apart. Each episode is one conversation under that harness
with many short requests; every assistant turn is one call to the right tool and a judged gold
turn, so one training row carries many chances to copy a name from the tool list. Descriptions
are short and use phrasing the description transforms reword (``Gets ... a given city``); the
word that identifies a tool (weather, flights, stock) is not in those tables, so a reworded
description still tells the tools apart, and every request says that word: the model must find
the tool by what the request asks for, never by a name it has seen before.

Everything is written in hsa's own formats: a harness folder (:func:`hsa.model.harness.save_harness`)
and episodes JSONL whose rows name it by path, so ``hsa generate`` and ``hsa eval`` read them as
they read any user's data.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

from hsa.errors import HsaError
from hsa.files.jsonl import atomic_path, dumps
from hsa.model.harness import Harness, PromptSpec, load_harness, save_harness
from hsa.model.tool import Tool
from hsa.text.names import meaning

HARNESS_FOLDER = "harness"
EPISODES_FILE = "episodes.jsonl"

CITIES = (
    "Paris",
    "Tokyo",
    "Lima",
    "Oslo",
    "Cairo",
    "Dublin",
    "Madrid",
    "Nairobi",
    "Seoul",
    "Lisbon",
    "Denver",
    "Quito",
    "Hanoi",
    "Zurich",
    "Perth",
    "Boston",
    "Accra",
    "Riga",
    "Kyoto",
    "Austin",
    "Porto",
    "Delhi",
    "Sydney",
    "Vienna",
    "Havana",
    "Tunis",
    "Bergen",
    "Manila",
    "Dakar",
    "Geneva",
)
COMPANIES = (
    "Apple",
    "Tesla",
    "Nike",
    "Intel",
    "Boeing",
    "Pfizer",
    "Sony",
    "Toyota",
    "Adobe",
    "Oracle",
    "Nokia",
    "Visa",
    "Shell",
    "Honda",
    "Netflix",
    "Spotify",
    "Airbus",
    "Siemens",
    "Philips",
    "Nvidia",
)
WORDS = (
    "apple",
    "house",
    "river",
    "friend",
    "window",
    "bread",
    "music",
    "garden",
    "mountain",
    "book",
    "school",
    "summer",
    "coffee",
    "street",
    "bridge",
    "flower",
    "winter",
    "doctor",
)
LANGUAGES = (
    "French",
    "German",
    "Spanish",
    "Italian",
    "Japanese",
    "Swedish",
    "Polish",
    "Greek",
    "Dutch",
    "Korean",
    "Turkish",
    "Hindi",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
INGREDIENTS = (
    "rice",
    "eggs",
    "spinach",
    "lentils",
    "salmon",
    "tofu",
    "mushrooms",
    "potatoes",
    "chicken",
    "beans",
    "pasta",
    "cheese",
    "lemons",
    "carrots",
    "garlic",
    "honey",
)
TOPICS = (
    "football",
    "science",
    "politics",
    "music",
    "space",
    "health",
    "movies",
    "climate",
    "chess",
    "tennis",
    "fashion",
    "history",
    "robots",
    "travel",
)


@dataclass(frozen=True)
class ToolKind:
    """What one tool does: its description, its parameters ``(name, type, description,
    values)``, and the ways a user asks for it (``{param}`` marks where a value goes)."""

    description: str
    parameters: tuple[tuple[str, str, str, tuple], ...]
    requests: tuple[str, ...]


KINDS: tuple[ToolKind, ...] = (
    ToolKind(
        "Gets the weather for a given city.",
        (("city", "string", "The city.", CITIES),),
        (
            "What is the weather in {city}?",
            "Is the weather good in {city}?",
            "The weather in {city}, please.",
        ),
    ),
    ToolKind(
        "Retrieves the stock price of a specific company.",
        (("company", "string", "The company.", COMPANIES),),
        (
            "What is the stock price of {company}?",
            "Is the {company} stock up?",
            "Show the stock of {company}.",
        ),
    ),
    ToolKind(
        "Gives the translation of a word into the desired language.",
        (
            ("word", "string", "The word.", WORDS),
            ("language", "string", "The language.", LANGUAGES),
        ),
        (
            "What is the translation of {word} in {language}?",
            "I need the translation of {word} in {language}.",
            "Give me the {language} translation of {word}.",
        ),
    ),
    ToolKind(
        "Finds flights to a city on a given day.",
        (("city", "string", "The city.", CITIES), ("day", "string", "The day.", DAYS)),
        (
            "Any flights to {city} on {day}?",
            "Show me flights to {city} for {day}.",
            "I want flights to {city} on {day}.",
        ),
    ),
    ToolKind(
        "Suggests recipes that use the specified ingredient.",
        (("ingredient", "string", "The ingredient.", INGREDIENTS),),
        (
            "Any recipes with {ingredient}?",
            "Show me recipes using {ingredient}.",
            "I want recipes for {ingredient}.",
        ),
    ),
    ToolKind(
        "Gets the latest news about a particular topic.",
        (("topic", "string", "The topic.", TOPICS),),
        (
            "Any news about {topic}?",
            "What is the news on {topic}?",
            "Show me the news about {topic}.",
        ),
    ),
)

# Generic words of tool names: they fit any tool, so a name never says which one it is. Each is
# in the general lexicon, so the name transforms have synonyms for it in both splits.
NAME_VERBS = (
    "get",
    "fetch",
    "find",
    "show",
    "check",
    "run",
    "handle",
    "process",
    "apply",
    "generate",
    "compute",
    "manage",
    "execute",
    "start",
    "submit",
    "review",
)
NAME_NOUNS = (
    "data",
    "result",
    "report",
    "summary",
    "status",
    "detail",
    "task",
    "note",
    "tag",
    "group",
    "type",
    "level",
    "mode",
    "format",
    "unit",
    "page",
    "text",
    "option",
    "setting",
    "log",
)

PERSONA = "You are a phone assistant."
INSTRUCTIONS = "Call the tool whose description fits."


def tool_names(rng: random.Random, count: int) -> list[str]:
    """``count`` generic snake_case names of one to three words (mixed lengths, so a model
    cannot learn one length of name), no two meaning the same."""
    names: list[str] = []
    meanings: set[tuple[str, ...]] = set()
    while len(names) < count:
        words = [rng.choice(NAME_VERBS)] + rng.sample(NAME_NOUNS, rng.choice((0, 1, 1, 2)))
        name = "_".join(words)
        if meaning(name) not in meanings:
            meanings.add(meaning(name))
            names.append(name)
    return names


def make_harness(seed: int, tools: int = len(KINDS)) -> Harness:
    """The task's one harness: ``tools`` of the kinds (drawn by the seed) with generic names,
    in a seeded order."""
    rng = random.Random(f"miniature-harness-{seed}")
    kinds = rng.sample(KINDS, tools)
    made = []
    for name, kind in zip(tool_names(rng, tools), kinds, strict=True):
        properties = {p: {"type": t, "description": d} for p, t, d, _ in kind.parameters}
        made.append(
            Tool(
                name=name,
                description=kind.description,
                parameters={
                    "type": "object",
                    "properties": properties,
                    "required": [p for p, *_ in kind.parameters],
                    "additionalProperties": False,
                },
            )
        )
    return Harness(
        name="miniature-assistant",
        version="1",
        description="A phone assistant whose tools are told apart by their "
        "descriptions (the hsa miniature experiment).",
        tools=tuple(made),
        prompt=PromptSpec(
            layout="markdown",
            sections=("persona", "instructions"),
            text={"persona": PERSONA, "instructions": INSTRUCTIONS},
        ),
    )


def make_episode(harness: Harness, episode_id: str, rng: random.Random, turns: int) -> dict:
    """One conversation of ``turns`` requests, each answered by one call; every call is gold.
    Tool results are left out: they would say nothing here, and every token costs a CPU."""
    kinds = {k.description: k for k in KINDS}
    messages: list[dict] = []
    gold_turns = []
    for k in range(turns):
        tool = rng.choice(harness.tools)
        kind = kinds[tool.description]
        values = {p: rng.choice(pool) for p, _, _, pool in kind.parameters}
        messages.append({"role": "user", "content": rng.choice(kind.requests).format(**values)})
        gold_turns.append(
            {
                "at": len(messages),
                "calls": [{"name": tool.name, "arguments": {p: [v] for p, v in values.items()}}],
            }
        )
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{k + 1}",
                        "type": "function",
                        "function": {"name": tool.name, "arguments": dumps(values)},
                    }
                ],
            }
        )
    return {
        "id": episode_id,
        "harness": HARNESS_FOLDER,
        "messages": messages,
        "gold": {"turns": gold_turns},
        "meta": {"category": "tool_selection"},
    }


@dataclass(frozen=True)
class TaskFiles:
    harness: Path
    train: Path  # episodes the training versions are generated from
    eval: Path  # other episodes, for evaluation only


def write_task(
    folder: str | os.PathLike,
    *,
    seed: int,
    tools: int,
    train_episodes: int,
    eval_episodes: int,
    turns: int,
) -> TaskFiles:
    """Write the harness folder and two episode files (train, eval) that share no episode."""
    root = Path(folder)
    harness = make_harness(seed, tools)
    harness_dir = root / HARNESS_FOLDER
    if (harness_dir / "harness.yaml").is_file():
        # A resumed run finds its harness again; another one is never silently reused.
        if load_harness(harness_dir) != harness:
            raise HsaError(
                "this folder holds another task's harness; choose a new folder",
                file=str(harness_dir),
            )
    else:
        save_harness(harness, harness_dir)
    paths = {}
    for part, count in (("train", train_episodes), ("eval", eval_episodes)):
        rng = random.Random(f"miniature-episodes-{seed}-{part}")
        path = root / f"{part}-{EPISODES_FILE}"
        with atomic_path(path) as tmp:
            tmp.write_text(
                "".join(
                    dumps(make_episode(harness, f"{part}-{i:04d}", rng, turns)) + "\n"
                    for i in range(count)
                ),
                encoding="utf-8",
            )
        paths[part] = path
    return TaskFiles(harness_dir, paths["train"], paths["eval"])
