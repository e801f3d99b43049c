"""Shared hypothesis strategies: harnesses, tools, skills, episodes and values that fit schemas.

Names deliberately include dotted names, unicode text and names that are prefixes of other names,
because those are where renaming and matching go wrong.
"""

from __future__ import annotations

import functools
import json

from hypothesis import strategies as st

from hsa.model.episode import Episode
from hsa.model.gold import GoldCall
from hsa.model.harness import Harness, PromptSpec
from hsa.model.hook import HOOK_EVENTS, Hook
from hsa.model.skill import Skill
from hsa.model.tool import Tool

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
unicode_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)
# A skill body as a SKILL.md holds it: its lines end in "\n" (loading reads "\r\n" and "\r" so).
skill_body_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\r"), max_size=60
)


@st.composite
def _identifiers(draw, sep: str) -> str:
    parts = draw(st.lists(_WORD, min_size=1, max_size=3))
    name = sep.join(parts)
    if sep == "_" and draw(st.booleans()):
        name = f"{draw(_WORD)}.{name}"
    return name


# The strategies below are built once and reused: hypothesis validates every strategy object
# the first time it draws from it, and building them afresh in each draw of a harness was a
# third of the contract tests' time.
@functools.cache
def identifiers(sep: str = "_"):
    """snake_case, sometimes dotted (``math.factorial``), e.g. for tool and parameter names."""
    return _identifiers(sep)


skill_ids = st.builds(lambda parts: "-".join(parts), st.lists(_WORD, min_size=1, max_size=3))


@functools.cache
def unique_names(strategy, min_size=0, max_size=6, sep="_"):
    """Distinct names, often with one a prefix of another (get_price / get_price_history)."""

    @st.composite
    def build(draw):
        names = draw(st.lists(strategy, min_size=min_size, max_size=max_size, unique=True))
        if names and draw(st.booleans()):
            names.append(names[0] + draw(st.sampled_from([f"{sep}history", "2", f"{sep}v2"])))
        return list(dict.fromkeys(names))

    return build()


@functools.cache
def _scalar_schema():
    return st.one_of(
        st.just({"type": "string"}),
        st.builds(
            lambda e: {"type": "string", "enum": e},
            st.lists(_WORD, min_size=1, max_size=4, unique=True),
        ),
        st.just({"type": "integer"}),
        st.just({"type": "number"}),
        st.just({"type": "boolean"}),
    )


@functools.cache
def property_schemas(depth: int = 2):
    """Parameter schemas: scalars, arrays of them, and nested objects (bounded depth)."""
    if depth == 0:
        return _scalar_schema()
    inner = property_schemas(depth - 1)
    return st.one_of(
        _scalar_schema(),
        st.builds(lambda items: {"type": "array", "items": items}, inner),
        st.builds(
            lambda props: {"type": "object", "properties": props},
            st.dictionaries(identifiers(), inner, min_size=1, max_size=3),
        ),
    )


@st.composite
def tools(draw, name: str | None = None) -> Tool:
    props = draw(st.dictionaries(identifiers(), property_schemas(), max_size=5))
    required = [p for p in props if draw(st.booleans())]
    params = {"type": "object", "properties": props}
    if required:
        params["required"] = required
    return Tool(name=name or draw(identifiers()), description=draw(unicode_text), parameters=params)


@st.composite
def skills(draw, skill_id: str | None = None, kinds=("reply", "strategy")) -> Skill:
    return Skill(
        id=skill_id or draw(skill_ids),
        description=draw(unicode_text.filter(str.strip)),
        content=draw(skill_body_text),
        kind=draw(st.sampled_from((None, *kinds))),
    )


@st.composite
def harnesses(draw, min_tools: int = 0, max_tools: int = 6) -> Harness:
    tool_names = draw(unique_names(identifiers(), min_size=min_tools, max_size=max_tools))
    skill_names = [
        n for n in draw(unique_names(skill_ids, max_size=4, sep="-")) if n not in tool_names
    ]
    hook_names = [
        n
        for n in draw(st.lists(identifiers(), max_size=3, unique=True))
        if n not in tool_names and n not in skill_names
    ]
    hooks = tuple(
        Hook(
            name=n,
            event=draw(st.sampled_from(HOOK_EVENTS)),
            function=f"check_{i}",
            description=draw(unicode_text),
        )
        for i, n in enumerate(hook_names)
    )
    source = (
        "".join(
            f"def check_{i}(payload, config):\n    return {{'ok': True}}\n\n"
            for i in range(len(hooks))
        )
        if hooks
        else None
    )
    return Harness(
        name=draw(skill_ids),
        version=str(draw(st.integers(1, 9))),
        description=draw(unicode_text),
        skills=tuple(draw(skills(s)) for s in skill_names),
        tools=tuple(draw(tools(n)) for n in tool_names),
        prompt=PromptSpec(
            layout="markdown",
            sections=tuple(draw(st.permutations(["persona", "skills", "tools"]))),
            text={"persona": draw(unicode_text)},
        ),
        hooks=hooks,
        skill_kinds=("reply", "strategy"),
        hooks_source=source,
    )


def values_for(schema: dict):
    """JSON values that fit ``schema`` (strings avoid characters BFCL normalisation removes)."""
    return _values_for(json.dumps(schema))  # key order kept: it is part of what is drawn


@functools.cache  # one strategy per schema, as identifiers()
def _values_for(key: str):
    schema = json.loads(key)
    kind = schema.get("type")
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if kind == "string":
        return st.text(alphabet="abcdefghijXYZ0123456789", min_size=1, max_size=10)
    if kind == "integer":
        return st.integers(-(10**6), 10**6)
    if kind == "number":
        return st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(values_for(schema.get("items", {"type": "string"})), max_size=3)
    if kind == "object":
        props = schema.get("properties", {})
        return st.fixed_dictionaries({k: values_for(v) for k, v in props.items()})
    return st.none()


def acceptable(value):
    """``value`` as an acceptable gold value: every dict in it, however deep, becomes a BFCL
    pattern ``{key: [acceptable]}`` (a dict in gold is always read as one)."""
    if isinstance(value, dict):
        return {k: [acceptable(v)] for k, v in value.items()}
    if isinstance(value, list):
        return [acceptable(v) for v in value]
    return value


@st.composite
def gold_calls(draw, tool: Tool) -> tuple[GoldCall, dict]:
    """A gold call on ``tool`` and the concrete arguments a correct model would send."""
    args = {}
    arguments, omittable = {}, []
    for name, schema in tool.properties.items():
        if name in tool.required or draw(st.booleans()):
            value = draw(values_for(schema))
            args[name] = value
            arguments[name] = [acceptable(value)]
        elif draw(st.booleans()):
            arguments[name] = [acceptable(draw(values_for(schema)))]
            omittable.append(name)
    return GoldCall(name=tool.name, arguments=arguments, omittable=tuple(omittable)), args


@st.composite
def episodes_dicts(draw) -> dict:
    """An episode row (inline harness) whose first turn expects parallel calls or no call."""
    harness = draw(harnesses(min_tools=1))
    chosen = draw(st.lists(st.sampled_from(harness.tools), max_size=3))
    calls = [draw(gold_calls(t)) for t in chosen]
    question = draw(unicode_text.filter(str.strip))
    gold = (
        {"calls": [c.to_dict() for c, _ in calls], "ordered": False} if calls else {"no_call": True}
    )
    return {
        "id": draw(identifiers()),
        "harness": harness.to_dict(),
        "messages": [{"role": "user", "content": question}],
        "gold": gold,
        "meta": {"arguments": [json.dumps(a) for _, a in calls]},
    }


@st.composite
def harnesses_with_mentions(draw, min_tools: int = 1) -> Harness:
    """A harness whose texts mention its own names: skill content names tools and other skills,
    tool descriptions name other tools (often a prefix of their own name)."""
    harness = draw(harnesses(min_tools=min_tools))
    tool_names = list(harness.tool_names)
    skill_names = list(harness.skill_ids)

    def mention(names):
        if not names:
            return ""
        name = draw(st.sampled_from(names))
        return draw(st.sampled_from([f" Use `{name}` here.", f" Call {name}.", f" ({name})"]))

    from dataclasses import replace

    tools_ = tuple(
        replace(t, description=t.description + mention(tool_names)) for t in harness.tools
    )
    skills_ = tuple(
        replace(s, content=s.content + mention(tool_names) + mention(skill_names))
        for s in harness.skills
    )
    return replace(harness, tools=tools_, skills=skills_)


@st.composite
def rich_episode_dicts(draw) -> dict:
    """A full episode: question, an assistant turn loading skills and calling tools, tool
    results that echo tool names, and a final reply; gold for both assistant turns."""
    harness = draw(harnesses_with_mentions())
    chosen = draw(st.lists(st.sampled_from(harness.tools), max_size=3))
    calls = [draw(gold_calls(t)) for t in chosen]
    loaded = (
        draw(st.lists(st.sampled_from(harness.skill_ids), max_size=2, unique=True))
        if harness.skills
        else []
    )
    messages = [{"role": "user", "content": draw(unicode_text.filter(str.strip))}]
    if not calls and not loaded:
        gold = {"no_call": True}
        if draw(st.booleans()):
            messages.append({"role": "assistant", "content": draw(unicode_text) or "ok"})
            gold["at"] = 1
        return {
            "id": draw(identifiers()),
            "harness": harness.to_dict(),
            "messages": messages,
            "gold": gold,
            "meta": {},
        }
    tool_calls = [
        {
            "id": f"s{i}",
            "type": "function",
            "function": {"name": harness.skill_loader, "arguments": json.dumps({"name": s})},
        }
        for i, s in enumerate(loaded)
    ]
    tool_calls += [
        {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(args)},
        }
        for i, (c, args) in enumerate(calls)
    ]
    if calls and harness.hooks and draw(st.booleans()):
        # A hook-retry sequence: a failing call, the hook's feedback as its result, then the
        # correct turn (the one the gold judges).
        hook = draw(st.sampled_from(harness.hooks))
        bad = {
            "id": "bad0",
            "type": "function",
            "function": {"name": calls[0][0].name, "arguments": "{}"},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [bad]})
        messages.append(
            {
                "role": "tool",
                "tool_call_id": "bad0",
                "name": f"hook.{hook.name}",
                "content": f"[{hook.name}] {calls[0][0].name} needs its arguments.",
            }
        )
    judged = len(messages)
    messages.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
    for call in tool_calls:
        name = call["function"]["name"]
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": json.dumps({"tool": name, "ok": True}),
            }
        )
    names = [c.name for c, _ in calls] or loaded
    messages.append(
        {"role": "assistant", "content": f"Done with {names[0]}: " + draw(unicode_text)}
    )
    first = {"at": judged, "ordered": False}
    if calls:
        first["calls"] = [c.to_dict() for c, _ in calls]
    if loaded:
        first["skills"] = loaded
    gold = {"turns": [first, {"at": len(messages) - 1, "no_call": True}]}
    return {
        "id": draw(identifiers()),
        "harness": harness.to_dict(),
        "messages": messages,
        "gold": gold,
        "meta": {},
    }


# Words whose synonyms, abbreviations and plurals are each other (item/product, id/identifier,
# number/num, list/enumerate...): names made of them collide in meaning, which is where a rename
# can give one identifier another's meaning.
CLASHING_WORDS = (
    "item",
    "items",
    "product",
    "goods",
    "id",
    "ids",
    "identifier",
    "number",
    "num",
    "get",
    "fetch",
    "list",
    "user",
    "client",
    "zorblat",
)


@st.composite
def clashing_names(draw, sep: str = "_", max_words: int = 3) -> str:
    return sep.join(draw(st.lists(st.sampled_from(CLASHING_WORDS), min_size=1, max_size=max_words)))


@st.composite
def clashing_episode_dicts(draw) -> dict:
    """An episode whose harness names its tools, parameters, skills and hooks with words that
    are synonyms, abbreviations or plurals of each other, with a gold call on one tool."""
    tool_names = draw(st.lists(clashing_names(), min_size=1, max_size=5, unique=True))
    tools = []
    for name in tool_names:
        params = draw(st.lists(clashing_names(max_words=2), max_size=6, unique=True))
        tools.append(
            Tool(
                name=name,
                description=f"Does {name.replace('_', ' ')}.",
                parameters={
                    "type": "object",
                    "properties": {p: {"type": "string"} for p in params},
                },
            )
        )
    skill_names = [
        s
        for s in draw(st.lists(clashing_names(sep="-"), max_size=4, unique=True))
        if s not in tool_names
    ]
    hook_names = [
        h
        for h in draw(st.lists(clashing_names(), max_size=2, unique=True))
        if h not in tool_names and h not in skill_names
    ]
    hooks = tuple(
        Hook(name=n, event="tool_call", function=f"check_{i}") for i, n in enumerate(hook_names)
    )
    harness = Harness(
        name="clash",
        skills=tuple(
            Skill(id=s, description=f"About {s}.", content=f"Use {s}.") for s in skill_names
        ),
        tools=tuple(tools),
        hooks=hooks,
        hooks_source="".join(
            f"def check_{i}(payload, config):\n    return {{'ok': True}}\n\n"
            for i in range(len(hooks))
        )
        if hooks
        else None,
    )
    tool = draw(st.sampled_from(tools))
    args = dict.fromkeys(tool.properties, "x")
    messages = [
        {"role": "user", "content": "please help"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": tool.name, "arguments": json.dumps(args)},
                }
            ],
        },
    ]
    return {
        "id": "clash",
        "harness": harness.to_dict(),
        "messages": messages,
        "gold": {
            "at": 1,
            "calls": [{"name": tool.name, "arguments": {k: [v] for k, v in args.items()}}],
        },
    }


def another_conversation(episode: Episode) -> Episode:
    """Another episode under the same harness: its own id, one request, nothing to call."""
    return Episode.from_dict(
        {
            "id": f"{episode.id}-other",
            "harness": episode.harness.to_dict(),
            "messages": [{"role": "user", "content": "Something else entirely."}],
            "gold": {"no_call": True},
            "meta": {},
        }
    )


@functools.lru_cache(maxsize=1)
def _table_words() -> str:
    """Every string of the shipped option tables (transforms/**/options.yaml and the other
    tables beside the transforms), as one text."""
    from pathlib import Path

    import yaml

    import hsa.transforms

    found: list[str] = []

    def walk(value) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    root = Path(hsa.transforms.__file__).parent
    for path in sorted(root.rglob("*.yaml")):
        if "recipes" not in path.parts:
            walk(yaml.safe_load(path.read_text(encoding="utf-8")))
    return " ".join(found)


def wordy_conversation(episode: Episode) -> Episode:
    """Another episode under the same harness whose request holds every word of the shipped
    option tables: a harness-scoped transform that lets the request steer a draw from its
    tables (leave out what the user asks about, say) draws otherwise for this one."""
    return Episode.from_dict(
        {
            "id": f"{episode.id}-wordy",
            "harness": episode.harness.to_dict(),
            "messages": [{"role": "user", "content": _table_words()}],
            "gold": {"no_call": True},
            "meta": {},
        }
    )


def skill_loading_conversation(episode: Episode) -> Episode:
    """Another episode under the same harness that loads every skill, each loader result
    carrying the skill's body verbatim (as a real skill loader returns it)."""
    harness = episode.harness
    if not harness.skills:
        return another_conversation(episode)
    calls = [
        {
            "id": f"load{i}",
            "type": "function",
            "function": {"name": harness.skill_loader, "arguments": json.dumps({"name": s.id})},
        }
        for i, s in enumerate(harness.skills)
    ]
    results = [
        {"role": "tool", "tool_call_id": call["id"], "content": s.content}
        for call, s in zip(calls, harness.skills, strict=True)
    ]
    return Episode.from_dict(
        {
            "id": f"{episode.id}-skills",
            "harness": harness.to_dict(),
            "messages": [
                {"role": "user", "content": "Which skills are there?"},
                {"role": "assistant", "content": None, "tool_calls": calls},
                *results,
                {"role": "assistant", "content": "I read them."},
            ],
            "gold": {"no_call": True},
            "meta": {},
        }
    )
