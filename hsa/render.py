"""Render a harness into what the model reads: the system prompt and the tools list.

Layouts are Jinja2 templates (``templates/layouts/<name>.j2``, or a harness's own ``layouts/``).
A harness's own layouts render in Jinja2's sandbox, with a budget (:mod:`hsa.sandbox`): one that
reaches for Python internals, or loops or grows a value far beyond what a prompt needs, fails
with :class:`~hsa.errors.HarnessError` instead of running. The shipped layouts are this package's
code and render without the sandbox; texts (skills, prompts) are data to every layout, never
template code.
"""

from __future__ import annotations

import json
import re
from functools import cache, lru_cache
from json.encoder import encode_basestring

import jinja2
import orjson

from hsa.errors import HarnessError
from hsa.files.assets import templates_dir
from hsa.model.episode import Episode
from hsa.model.harness import Harness
from hsa.model.memo import BoundedMemo
from hsa.model.message import content_text
from hsa.sandbox import LayoutSandbox, new_budget

DEFAULT_HEADINGS = {"skills": "Skills", "tools": "Tools", "hooks": "Checks"}
DEFAULT_PHRASES = {
    "skills_intro": "Load a skill with the skill loader tool before you act on it.",
    "tools_intro": "Call these tools when the request needs their data.",
    "hooks_intro": "These checks run around your actions; follow their feedback.",
}


def json_string_of(value: str) -> str:
    """A JSON string literal that keeps every character (no ASCII escaping, no HTML escaping):
    exactly what ``json.dumps(value, ensure_ascii=False)`` writes."""
    return (
        encode_basestring(value)
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False)
    )


# The standard library's encoders: the one-line one runs in C, the indented one writes strings in
# C. A layout serialises every tool of every rendered row, so this is on the hot path.
_ONE_LINE = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), default=str)
_INDENTS = re.compile(r"\n( +)")


@lru_cache(maxsize=16)
def _indented(indent: int) -> json.JSONEncoder:
    return json.JSONEncoder(ensure_ascii=False, indent=indent, default=str)


def json_value_of(value, indent: int = 0, depth: int = 0, flat_from: int = 99) -> str:
    """JSON for a layout: ``indent`` spaces per level (0: one line, ", " between items), values
    at ``depth >= flat_from`` on one line; ``depth`` is the level ``value`` sits at."""
    try:
        if indent <= 0 or depth >= flat_from or not isinstance(value, dict | list | tuple):
            return _ONE_LINE.encode(value)
        text = _indented(indent).encode(value)
    except (TypeError, ValueError):  # keys the encoder refuses (a YAML date): the slow path
        return _nested_json(value, indent, depth, flat_from)
    # A line indented k levels is an item of a container at depth + k - 1; when that container
    # should have stayed on one line, write it level by level instead.
    deepest = max((len(m) for m in _INDENTS.findall(text)), default=0) // indent
    if depth + deepest - 1 >= flat_from:
        return _nested_json(value, indent, depth, flat_from)
    return text.replace("\n", "\n" + " " * (indent * depth)) if depth else text


def _nested_json(value, indent: int, depth: int, flat_from: int) -> str:
    """:func:`json_value_of` one level at a time (for values the encoders cannot write)."""
    pretty = indent > 0 and depth < flat_from
    inner = "\n" + " " * (indent * (depth + 1)) if pretty else ""
    outer = "\n" + " " * (indent * depth) if pretty else ""
    comma = "," if pretty else ", "
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _ONE_LINE.encode(value)
    if isinstance(value, str):
        return json_string_of(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = (
            f"{json_string_of(str(k))}: {_nested_json(v, indent, depth + 1, flat_from)}"
            for k, v in value.items()
        )
        return "{" + inner + (comma + inner).join(items) + outer + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        items = (_nested_json(v, indent, depth + 1, flat_from) for v in value)
        return "[" + inner + (comma + inner).join(items) + outer + "]"
    return json_string_of(str(value))


@lru_cache(maxsize=2)
def _environment(sandboxed: bool = True) -> jinja2.Environment:
    """The sandbox for a harness's own layouts; the shipped layouts are this package's code and
    render without the sandbox's per-attribute checks (a tenth of rendering time)."""
    kind = LayoutSandbox if sandboxed else jinja2.Environment
    env = kind(
        loader=jinja2.FileSystemLoader(str(templates_dir() / "layouts")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )
    env.globals.update(json_string_of=json_string_of, json_value_of=json_value_of)
    return env


def available_layouts() -> list[str]:
    return list(_shipped_layouts())


@lru_cache(maxsize=1)
def _shipped_layouts() -> tuple[str, ...]:
    return tuple(sorted(p.name[:-3] for p in (templates_dir() / "layouts").glob("*.j2")))


@cache
def _shipped_layout(name: str) -> jinja2.Template:
    """A shipped layout, compiled once: the loader's own cache would stat its file on every row
    to see whether it changed, and the package's templates do not change under a running job."""
    return _environment(sandboxed=False).get_template(f"{name}.j2")


@lru_cache(maxsize=256)
def _harness_layout(source: str) -> jinja2.Template:
    """A harness's own layout, compiled once per text (every row of a harness renders it)."""
    return _environment(sandboxed=True).from_string(source)


def _template(harness: Harness) -> jinja2.Template:
    name = harness.prompt.layout
    try:
        if name in harness.layouts:
            return _harness_layout(harness.layouts[name])
        return _shipped_layout(name)
    except jinja2.TemplateNotFound:
        raise HarnessError(
            f"unknown prompt layout {name!r}; available: "
            f"{', '.join(available_layouts() + sorted(harness.layouts))}",
            field="prompt.layout",
        ) from None
    except jinja2.TemplateSyntaxError as exc:
        raise HarnessError(
            f"layout {name!r} does not parse: {exc.message}",
            file=_layout_file(harness, name),
            line=exc.lineno,
            field="prompt.layout",
        ) from None


PLACEMENTS = ("system", "first_user")


def placement(harness: Harness) -> dict[str, str]:
    """Where each prompt section goes: the system prompt (default) or the first user turn.

    Set by ``prompt.options.placement`` (``{"skills": "first_user"}``), which the prompt-structure
    transforms vary; chat templates that only honour one system message still see every section."""
    chosen = harness.prompt.options.get("placement") or {}
    for section, where in chosen.items():
        if section not in harness.prompt.sections:
            raise HarnessError(
                f"placement names {section!r}, which is no section of the prompt (sections: "
                f"{', '.join(harness.prompt.sections)})",
                field=f"prompt.options.placement.{section}",
            )
        if where not in PLACEMENTS:
            raise HarnessError(
                f"placement of {section!r} must be one of {list(PLACEMENTS)}, got {where!r}",
                field=f"prompt.options.placement.{section}",
            )
    return {name: chosen.get(name, "system") for name in harness.prompt.sections}


# Rendered prompts by (exact harness fingerprint, sections): rows that share a harness (a pool's
# harness variants, the episodes under one harness) share its prompt, and a layout takes about
# a millisecond to render. Pure: the exact fingerprint hashes everything a layout reads, key order included.
_PROMPTS: BoundedMemo[str] = BoundedMemo(1024)


def section_heading(name: str, headings: dict[str, str]) -> str:
    """The heading a layout shows for section ``name``: the harness's own (``headings``: its
    prompt options' over :data:`DEFAULT_HEADINGS`), else the name in title case (``house_rules``:
    "House Rules")."""
    return headings.get(name, name.replace("_", " ").title())


def render_system_prompt(harness: Harness, sections: list[str] | None = None) -> str:
    """The sections of ``harness`` (default: those placed in the system prompt), in order,
    through its layout; empty text when none is left."""
    key = (harness.exact_fingerprint, None if sections is None else tuple(sections))
    return _PROMPTS.get(key, lambda: _render_system_prompt(harness, sections))


def _render_system_prompt(harness: Harness, sections: list[str] | None) -> str:
    if sections is None:
        where = placement(harness)
        sections = [name for name in harness.prompt.sections if where[name] == "system"]
    options = harness.prompt.options
    headings = {**DEFAULT_HEADINGS, **options.get("headings", {})}
    phrases = {**DEFAULT_PHRASES, **options.get("phrases", {})}
    # Generated sections carry uniform entries (name, tag, description) so every layout can list
    # skills, tools and hooks with one loop.
    # A description is one entry's line: the line break a YAML block keeps at its end
    # (``description: >`` in a SKILL.md) would be a blank line in every list.
    generated = {
        "skills": [
            {"name": s.id, "tag": s.kind, "description": s.description.strip()}
            for s in harness.skills
        ],
        "tools": [
            {"name": t.name, "tag": None, "description": t.description.strip()}
            for t in harness.all_tools()
        ],
        "hooks": [
            {"name": h.name, "tag": h.event, "description": h.description.strip()}
            for h in harness.hooks
        ],
    }
    sections = [
        {
            "name": name,
            "heading": section_heading(name, headings),
            "text": harness.prompt.text.get(name, ""),
            "entries": generated.get(name, []),
            "intro": phrases.get(f"{name}_intro", ""),
        }
        for name in harness.prompt.sections
        if name in sections and (name in generated or harness.prompt.text.get(name))
    ]
    if not sections:
        return ""
    context = {
        "sections": sections,
        "headings": headings,
        "phrases": phrases,
        "options": options,
        "skills": [
            {"id": s.id, "kind": s.kind, "description": s.description} for s in harness.skills
        ],
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in harness.all_tools()
        ],
        "hooks": [
            {"name": h.name, "event": h.event, "description": h.description} for h in harness.hooks
        ],
        "skill_loader": harness.skill_loader,
    }
    new_budget()  # a harness's own layout gets the whole budget of hsa.sandbox per rendering
    try:
        text = _template(harness).render(context)
    except jinja2.exceptions.SecurityError as exc:
        raise HarnessError(
            f"layout {harness.prompt.layout!r} tried an unsafe operation: {exc}",
            field="prompt.layout",
        ) from None
    except jinja2.UndefinedError as exc:
        raise HarnessError(
            f"layout {harness.prompt.layout!r} uses an undefined value: {exc.message}",
            file=_layout_file(harness, harness.prompt.layout),
            line=_template_line(exc),
            field="prompt.layout",
        ) from None
    except HarnessError:
        raise  # said already (_template: an unknown layout, one that does not parse)
    except Exception as exc:
        if harness.prompt.layout not in harness.layouts:
            raise  # a shipped layout failing is a bug in hsa, not in the harness
        # A harness's own layout is the user's code: whatever it raises (a range the sandbox
        # caps, a template it may not include, a division by zero) is the harness's error.
        why = (
            f"it includes {exc.name!r}, which is no shipped layout"
            if isinstance(exc, jinja2.TemplateNotFound)
            else f"{type(exc).__name__}: {exc}"
        )
        raise HarnessError(
            f"layout {harness.prompt.layout!r} (layouts/"
            f"{harness.prompt.layout}.j2) does not render: {why}",
            file=_layout_file(harness, harness.prompt.layout),
            line=_template_line(exc),
            field="prompt.layout",
        ) from None
    return text.strip() + "\n"


def _layout_file(harness: Harness, name: str) -> str | None:
    """Where a harness's own layout is written (None for a shipped one)."""
    return f"layouts/{name}.j2" if name in harness.layouts else None


def _template_line(exc: BaseException) -> int | None:
    """The line of the template where rendering raised ``exc``: Jinja compiles a template to
    Python whose frames it names ``<template>`` and maps back to the template's lines."""
    line, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


# The tools as rows show them, by exact harness fingerprint: every row of a harness variant has
# the same ones.
_TOOLS_JSON: BoundedMemo[str] = BoundedMemo(1024)


def tools_json(harness: Harness) -> str:
    """A row's ``tools`` column under ``harness``: its tools as the model reads them (chat
    templates write them as JSON, so the order of every schema's keys is part of what it
    reads)."""
    return _TOOLS_JSON.get(
        harness.exact_fingerprint, lambda: orjson.dumps(harness.openai_tools()).decode()
    )


def prompt_parts(harness: Harness) -> tuple[str, str]:
    """(system prompt, preface of the first user turn) rendered from ``harness``: all that
    :func:`render_conversation` reads of a harness, so two harnesses with the same parts render
    any conversation alike."""
    where = placement(harness)
    system = render_system_prompt(harness).rstrip("\n")
    to_user = [name for name in harness.prompt.sections if where[name] == "first_user"]
    preface = render_system_prompt(harness, to_user).rstrip("\n") if to_user else ""
    return system, preface


def renders_alike(first: Harness, second: Harness, conversation) -> bool:
    """Whether :func:`render_conversation` gives ``conversation`` the same messages under both
    harnesses, mostly without rendering it (row statistics ask this of every step of every
    variant). The same prompt parts render alike. Other parts render apart wherever the
    conversation has a user turn: the system prompt, with any system message of the
    conversation after it, and the user turn's preface are each written out whole, so another
    part is another message. Without a user turn the preface joins the system prompt, where
    other parts may join to the same text; those two renderings are compared."""
    if first is second:
        return True
    if prompt_parts(first) == prompt_parts(second):
        return True
    if any(message.get("role") == "user" for message in conversation):
        return False
    return render_conversation(first, conversation) == render_conversation(second, conversation)


def render_messages(episode: Episode) -> list[dict]:
    """What the model reads: the episode's harness rendered around its conversation (see
    :func:`render_conversation`)."""
    return render_conversation(episode.harness, episode.messages)


def render_conversation(harness: Harness, conversation) -> list[dict]:
    """What the model reads: the harness's system prompt, then the conversation.

    Sections placed in the first user turn are rendered by the same layout and put before that
    turn's text. A system message already in the conversation (some BFCL rows have one) is kept,
    after the harness's prompt, in the single leading system message chat templates expect. The
    runtime renders every request with this, so a model sees what the datasets train on."""
    system, preface = prompt_parts(harness)
    # Text parts are written as one text: chat templates join a message's content as a string
    # (Qwen's concatenate it, and fail on a list; others drop it), and parts carry text alone.
    # A blank line between two parts.
    messages = [
        {**m, "content": content_text(m["content"], "\n\n")}
        if isinstance(m.get("content"), list)
        else m
        for m in conversation
    ]
    while messages and messages[0].get("role") in ("system", "developer"):
        own = messages.pop(0).get("content") or ""
        system = f"{system}\n\n{own}" if system else own
    if preface:
        first = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
        if first is None:
            system = f"{system}\n\n{preface}" if system else preface
        else:
            content = messages[first].get("content") or ""
            messages[first] = {**messages[first], "content": f"{preface}\n\n{content}"}
    return ([{"role": "system", "content": system}] if system else []) + messages
