"""The harness an agent runs in: skills, tools, a prompt layout and hooks.

Loads from and saves to a folder::

    harness.yaml            name, version, description, skill kinds, skill loader, runtime tools,
                            prompt, hooks
    skills/<id>/SKILL.md    one Agent Skill per folder (see hsa.model.skill)
    tools/*.json            one OpenAI function tool (or MCP tool) per file
    hooks.py                optional: the functions that implement the hooks (trusted code)
    layouts/<name>.j2       optional: custom prompt layouts

Promises: folder -> model -> folder and model -> dict -> model are lossless; a harness that loads is
valid (tool parameters are JSON Schemas, names are unique, every reference resolves), and every
error names the file and field at fault.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson
import yaml

from hsa.errors import HarnessError, HsaError
from hsa.files.jsonl import json_error, loads
from hsa.files.textfile import decode_utf8, dump_yaml, load_yaml, read_bytes, write_text
from hsa.model.frozen import replace
from hsa.model.hook import Hook, defined_functions, import_hooks, written_in_code
from hsa.model.hook_feedback import FORMAT_KEY, hook_format
from hsa.model.layout_text import layout_text, written_in_layout_code
from hsa.model.schema import property_names, schema_descriptions
from hsa.model.skill import MAX_NAME, SKILL_NAME, Skill, allowed_tool_name
from hsa.model.tool import Tool

# Sections of the system prompt that are generated from the harness rather than written as text.
BUILTIN_SECTIONS = ("skills", "tools", "hooks")
DEFAULT_SKILL_LOADER = "load_skill"
DEFAULT_SECTIONS = ("skills", "tools", "hooks")
_HARNESS_KEYS = {
    "name",
    "version",
    "description",
    "skill_kinds",
    "skill_loader",
    "skill_loader_text",
    "runtime_tools",
    "prompt",
    "hooks",
}


# The prompt options that word a heading or an instruction (section name or phrase key -> text),
# read by the layouts (hsa.render): prose of the harness like its sections' texts.
WORDING_OPTIONS = ("headings", "phrases")


@dataclass(frozen=True, slots=True)
class PromptSpec:
    """How the system prompt is laid out: a layout name, the section order, texts and options."""

    layout: str = "markdown"
    sections: tuple[str, ...] = DEFAULT_SECTIONS
    text: dict = field(default_factory=dict)  # section name -> its text (persona, instructions...)
    options: dict = field(default_factory=dict)  # free-form knobs a layout reads

    def wording(self):
        """(where, text) for every heading and instruction the options word themselves
        (``options.headings``, ``options.phrases``, as a layout reads them): prose the model
        reads, which may name a tool or a skill."""
        for option in WORDING_OPTIONS:
            values = self.options.get(option)
            if isinstance(values, dict):
                for key, text in values.items():
                    if isinstance(text, str):
                        yield f"prompt.options.{option}.{key}", text

    def rewritten(self, rewrite: Callable[[str], str]) -> PromptSpec:
        """The prompt with ``rewrite`` applied to every text of it the model reads as prose:
        the sections' texts and the options' own headings and instructions."""
        options = dict(self.options)
        for option in WORDING_OPTIONS:
            values = options.get(option)
            if isinstance(values, dict):
                options[option] = {
                    k: rewrite(v) if isinstance(v, str) else v for k, v in values.items()
                }
        if options == self.options:
            options = self.options
        return replace(self, text={k: rewrite(v) for k, v in self.text.items()}, options=options)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"layout": self.layout, "sections": list(self.sections)}
        if self.text:
            out["text"] = dict(self.text)
        if self.options:
            out["options"] = dict(self.options)
        return out

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "prompt") -> PromptSpec:
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise HarnessError("expected a mapping", field=where)
        unknown = set(data) - {"layout", "sections", "text", "options"}
        if unknown:
            raise HarnessError(
                f"unknown keys {sorted(unknown)}; allowed: layout, sections, text, options",
                field=where,
            )
        layout = data.get("layout", "markdown")
        if not isinstance(layout, str) or not layout:
            raise HarnessError("layout must be a non-empty string", field=f"{where}.layout")
        text = data.get("text") or {}
        if not isinstance(text, dict) or not all(isinstance(v, str) for v in text.values()):
            raise HarnessError("text must map section names to strings", field=f"{where}.text")
        # Without a list, the sections given a text come first, then the generated ones: a
        # persona written with no sections listed was never shown.
        sections = data.get(
            "sections", [*(s for s in text if s not in DEFAULT_SECTIONS), *DEFAULT_SECTIONS]
        )
        if not isinstance(sections, list) or not all(isinstance(s, str) for s in sections):
            raise HarnessError(
                "sections must be a list of section names", field=f"{where}.sections"
            )
        twice = sorted({s for s in sections if sections.count(s) > 1})
        if twice:
            raise HarnessError(
                f"sections lists {', '.join(map(repr, twice))} twice: each section is shown once",
                field=f"{where}.sections",
            )
        unlisted = sorted(set(text) - set(sections))
        if unlisted:
            raise HarnessError(
                f"text for {', '.join(map(repr, unlisted))}, which prompt.sections does not list: "
                f"it would never be shown (add it to sections, or remove its text)",
                field=f"{where}.text",
            )
        options = data.get("options") or {}
        if not isinstance(options, dict):
            raise HarnessError("options must be a mapping", field=f"{where}.options")
        return cls(layout=layout, sections=tuple(sections), text=dict(text), options=dict(options))


def loaded_skill(arguments: Any) -> str | None:
    """The skill id a call of the skill loader asks for: its one argument ``name``, a string
    (the loader's schema, :meth:`Harness.loader_tool`, takes exactly that); None for any other
    arguments. The scorer judges loader calls by it and the runtime answers them by it."""
    if isinstance(arguments, dict) and set(arguments) == {"name"}:
        name = arguments["name"]
        return name if isinstance(name, str) else None
    return None


@dataclass(frozen=True)
class Harness:
    """A complete harness. Frozen: transforms return new harnesses, they never edit one."""

    name: str
    version: str = "1"
    description: str = ""
    skills: tuple[Skill, ...] = ()
    tools: tuple[Tool, ...] = ()
    prompt: PromptSpec = field(default_factory=PromptSpec)
    hooks: tuple[Hook, ...] = ()
    skill_kinds: tuple[str, ...] = ()
    skill_loader: str = DEFAULT_SKILL_LOADER
    # The loader's own words in the harness's language: its ``description`` and its argument's
    # (``argument``); English by default (LOADER_TEXT).
    skill_loader_text: dict = field(default_factory=dict)
    # Tools the agent runtime provides itself (Claude Code's Read, Grep, Bash...): skills may
    # allow them, though no tools/*.json defines them and the model is not shown them here.
    runtime_tools: tuple[str, ...] = ()
    hooks_source: str | None = None  # the text of hooks.py, kept so the harness travels whole
    layouts: dict = field(default_factory=dict)  # custom layout name -> Jinja2 source
    trust_hooks: bool = field(default=False, compare=False)
    # The folder it was read from (None for an inline harness, which an episode carries): where
    # errors of its hooks.py and its prompt point. Not content: no fingerprint reads it.
    folder: str | None = field(default=None, compare=False)

    # ---- lookups ---------------------------------------------------------------------------

    @cached_property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)

    @cached_property
    def fingerprint(self) -> str:
        """A content hash of the whole harness (16 hex digits), with every object's keys sorted:
        two harnesses with the same fingerprint hold the same content, whichever folder or row
        they came from. What names a source harness (its pool of harness variants)."""
        data = orjson.dumps(self.to_dict(), option=orjson.OPT_SORT_KEYS)
        return hashlib.blake2b(data, digest_size=8).hexdigest()

    @cached_property
    def exact_fingerprint(self) -> str:
        """The content hash with the order of every key kept. The model reads that order (a
        schema's properties in the tools and in JSON and XML prompts; ``tool_property_order``
        changes nothing else), so memos of what is made from a harness are keyed by this one:
        keyed by :attr:`fingerprint`, two orders would share one memo entry."""
        return hashlib.blake2b(orjson.dumps(self.to_dict()), digest_size=8).hexdigest()

    @cached_property
    def skill_ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.skills)

    @cached_property
    def parameter_names(self) -> frozenset[str]:
        """The top-level parameter names of every tool (the skill loader's aside)."""
        return frozenset(p for t in self.tools for p in t.properties)

    @cached_property
    def names(self) -> frozenset[str]:
        """The one namespace of tool, skill and hook names, the skill loader and the runtime's
        tools: what a new name must avoid, and what prose may mention (see :meth:`validate`)."""
        return frozenset(
            (
                *self.tool_names,
                *self.skill_ids,
                *(h.name for h in self.hooks),
                self.skill_loader,
                *self.runtime_tools,
            )
        )

    @cached_property
    def identifiers(self) -> frozenset[str]:
        """Every name the harness's texts may mention as an identifier, which a rewording of a
        skill body or a description must keep: :attr:`names` and every tool's parameter names at
        any depth of its schema (nested objects, array items, branches and definitions), since
        a text may name a nested field as well as a top-level one."""
        return self.names | frozenset(
            name for tool in self.tools for name in property_names(tool.parameters)
        )

    def written_in_code(self, names) -> frozenset[str]:
        """Which of ``names`` the harness's code writes as string literals: hooks.py, which
        compares or reads them (``tool_name == "applyPatch"``, ``arguments.get("payment")``),
        and its own layouts' Jinja (``{% if item.name == "get_logs_tail" %}``). A rename must
        leave them: the code would look for the old name and never find it."""
        return written_in_code(self.hooks_source, names) | written_in_layout_code(
            self.layouts, names
        )

    def prose(self):
        """(where, text) for every free text of the harness the model reads: prompt texts, the
        skill loader's own words (``skill_loader_text``), skill descriptions and contents, tool
        and parameter descriptions, hook descriptions and configuration, and the literal text of
        its own layouts (hsa.model.layout_text)."""
        for name, text in self.prompt.text.items():
            yield f"prompt.text.{name}", text
        yield from self.prompt.wording()
        for key, text in self.skill_loader_text.items():
            yield f"skill_loader_text.{key}", text
        for skill in self.skills:
            yield f"skill {skill.id}", skill.description + "\n" + skill.content
        for tool in self.tools:
            yield f"tool {tool.name}", tool.description
            for text in schema_descriptions(tool.parameters):
                yield f"tool {tool.name} parameters", text
        for hook in self.hooks:
            yield f"hook {hook.name}", hook.description + orjson.dumps(hook.config).decode()
        for name, source in self.layouts.items():
            text = layout_text(source)
            if text:
                yield f"layout {name}", text

    @cached_property
    def _tools_by_name(self) -> dict[str, Tool]:
        return {t.name: t for t in self.tools}

    @cached_property
    def _skills_by_id(self) -> dict[str, Skill]:
        return {s.id: s for s in self.skills}

    def tool(self, name: str) -> Tool | None:
        return self._tools_by_name.get(name)

    def skill(self, skill_id: str) -> Skill | None:
        return self._skills_by_id.get(skill_id)

    def loader_tool(self) -> Tool | None:
        """The built-in tool the model calls to load a skill's content (None without skills)."""
        if not self.skills:
            return None
        text = {**LOADER_TEXT, **self.skill_loader_text}
        return Tool(
            name=self.skill_loader,
            description=text["description"],
            parameters={
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "enum": list(self.skill_ids),
                        "description": text["argument"],
                    }
                },
                "required": ["name"],
            },
        )

    def all_tools(self) -> tuple[Tool, ...]:
        """Every tool the model can call: the harness's tools, then the skill loader if any."""
        return self._all_tools

    @cached_property
    def _all_tools(self) -> tuple[Tool, ...]:
        # Made once per harness object: every row of a harness variant renders and compares it.
        loader = self.loader_tool()
        return self.tools + ((loader,) if loader else ())

    def openai_tools(self) -> list[dict]:
        return [t.to_openai() for t in self.all_tools()]

    @property
    def hooks_path(self) -> str:
        """How errors name hooks.py: in the folder the harness was read from, else under the
        harness's name (an inline one carries its code as text)."""
        return str(Path(self.folder) / "hooks.py") if self.folder else f"{self.name}/hooks.py"

    def hook_functions(self) -> dict[str, Callable[..., Any]]:
        """Import hooks.py (only if this harness was loaded with trust) and map hook name -> fn."""
        if not self.hooks:
            return {}
        file = self.hooks_path
        functions = import_hooks(self.hooks_source or "", file=file, trust_hooks=self.trust_hooks)
        for hook in self.hooks:
            if hook.function not in functions:  # defined, then bound to something else
                raise HarnessError(
                    f"hook {hook.name!r} names {hook.function!r}, which hooks.py defines but "
                    f"is no function once imported (its name is bound to something else)",
                    file=file,
                )
        return {hook.name: functions[hook.function] for hook in self.hooks}

    # ---- validation ------------------------------------------------------------------------

    def validate(self, *, file: str | None = None) -> Harness:
        """Check names are unique and every reference resolves; return self for chaining."""

        def fail(reason: str, fld: str) -> HarnessError:
            return HarnessError(reason, file=file, field=fld)

        seen: set[str] = set()
        forms: dict[str, str] = {}  # NFC form -> the name written
        for i, tool in enumerate(self.tools):
            if tool.name in seen:
                raise fail(f"duplicate tool name {tool.name!r}", f"tools[{i}].name")
            seen.add(tool.name)
            other = forms.setdefault(unicodedata.normalize("NFC", tool.name), tool.name)
            if other != tool.name:  # "café" twice: one name to the model and to a reader
                raise fail(
                    f"tool names {other!r} and {tool.name!r} differ only in their Unicode form "
                    f"(NFC/NFD): they read as one name",
                    f"tools[{i}].name",
                )
        if self.skills and self.skill_loader in seen:
            raise fail(
                f"tool name {self.skill_loader!r} is reserved for the skill loader "
                f"(set skill_loader in harness.yaml to use another name)",
                "skill_loader",
            )
        seen = set()
        for i, skill in enumerate(self.skills):
            if skill.id in seen:
                raise fail(f"duplicate skill id {skill.id!r}", f"skills[{i}].id")
            seen.add(skill.id)
            if skill.kind is not None and self.skill_kinds and skill.kind not in self.skill_kinds:
                raise fail(
                    f"skill {skill.id!r} has kind {skill.kind!r}, not one of the harness's "
                    f"skill_kinds {list(self.skill_kinds)}",
                    f"skills[{i}].kind",
                )
            for spec in skill.allowed_tools:
                tool_name = allowed_tool_name(spec)
                if (
                    tool_name not in self.tool_names
                    and tool_name != self.skill_loader
                    and tool_name not in self.runtime_tools
                ):
                    raise fail(
                        f"skill {skill.id!r} allows unknown tool {tool_name!r}; tools the "
                        f"agent runtime provides (Read, Grep, Bash...) are declared in "
                        f"harness.yaml as runtime_tools: [{tool_name}]",
                        f"skills[{i}].allowed_tools",
                    )
        for i, name in enumerate(self.runtime_tools):
            if not isinstance(name, str) or not name or re.search(r"[\s(),]", name):
                raise fail(
                    f"runtime tool {name!r} must be a tool name (no spaces, commas or parentheses)",
                    f"runtime_tools[{i}]",
                )
            if (
                name in self.tool_names
                or name == self.skill_loader
                or name in self.runtime_tools[:i]
            ):
                raise fail(
                    f"runtime tool {name!r} is already a tool of the harness, the skill "
                    f"loader or listed before",
                    f"runtime_tools[{i}]",
                )
        for i, section in enumerate(self.prompt.sections):
            if section not in BUILTIN_SECTIONS and section not in self.prompt.text:
                raise fail(
                    f"section {section!r} has no text and is not one of the built-in "
                    f"sections {list(BUILTIN_SECTIONS)}",
                    f"prompt.sections[{i}]",
                )
        # One namespace across kinds: a mention of a name in prose must say what it refers to,
        # and renaming a tool must never touch a hook or skill that happens to share its name.
        owners: dict[str, str] = {}
        for kind, names in (
            ("tool", self.tool_names),
            ("skill", self.skill_ids),
            ("hook", [h.name for h in self.hooks]),
        ):
            for name in names:
                if name in owners and owners[name] != kind:
                    raise fail(
                        f"{kind} {name!r} has the same name as a {owners[name]}; tool, "
                        f"skill and hook names must be distinct",
                        f"{kind}s",
                    )
                owners[name] = kind
        seen = set()
        functions = (
            defined_functions(self.hooks_source, file=self.hooks_path)
            if self.hooks_source is not None
            else set()
        )
        for i, hook in enumerate(self.hooks):
            if hook.name in seen:
                raise fail(f"duplicate hook name {hook.name!r}", f"hooks[{i}].name")
            seen.add(hook.name)
            if self.hooks_source is None:
                raise fail(
                    f"hook {hook.name!r} needs hooks.py, which the harness does not have",
                    f"hooks[{i}].function",
                )
            if hook.function not in functions:
                raise fail(
                    f"hook {hook.name!r} names function {hook.function!r}, which hooks.py "
                    f"does not define (it defines: {', '.join(sorted(functions)) or 'none'})",
                    f"hooks[{i}].function",
                )
            try:  # read at every failing verdict: a bad one would fail each run of the hook
                hook_format(hook.config)
            except HsaError as exc:
                raise fail(exc.reason, f"hooks[{i}].config.{FORMAT_KEY}") from None
        return self

    # ---- dict round trip -------------------------------------------------------------------

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.description:
            out["description"] = self.description
        if self.skill_kinds:
            out["skill_kinds"] = list(self.skill_kinds)
        if self.skill_loader != DEFAULT_SKILL_LOADER:
            out["skill_loader"] = self.skill_loader
        if self.skill_loader_text:
            out["skill_loader_text"] = dict(self.skill_loader_text)
        if self.runtime_tools:
            out["runtime_tools"] = list(self.runtime_tools)
        out["prompt"] = self.prompt.to_dict()
        out["skills"] = [s.to_dict() for s in self.skills]
        out["tools"] = [t.to_dict() for t in self.tools]
        if self.hooks:
            out["hooks"] = [h.to_dict() for h in self.hooks]
        if self.hooks_source is not None:
            out["hooks_source"] = self.hooks_source
        if self.layouts:
            out["layouts"] = dict(self.layouts)
        return out

    @classmethod
    def from_dict(
        cls,
        data: Any,
        *,
        file: str | None = None,
        trust_hooks: bool = False,
        where: str = "harness",
    ) -> Harness:
        """Build and validate a harness from its dict form (the inline form episodes use)."""
        if not isinstance(data, dict):
            raise HarnessError(
                f"expected an object, got {type(data).__name__}", file=file, field=where
            )
        allowed = _HARNESS_KEYS | {"skills", "tools", "hooks_source", "layouts"}
        unknown = set(data) - allowed
        if unknown:
            raise HarnessError(
                f"unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}",
                file=file,
                field=where,
            )
        try:
            harness = cls(
                name=_string(data.get("name", "inline"), f"{where}.name"),
                version=_version(data.get("version", "1"), f"{where}.version"),
                description=_string(data.get("description", ""), f"{where}.description"),
                skills=tuple(
                    Skill.from_dict(s, where=f"{where}.skills[{i}]")
                    for i, s in enumerate(_list(data.get("skills"), f"{where}.skills"))
                ),
                tools=tuple(
                    Tool.from_dict(t, where=f"{where}.tools[{i}]")
                    for i, t in enumerate(_list(data.get("tools"), f"{where}.tools"))
                ),
                prompt=PromptSpec.from_dict(data.get("prompt"), where=f"{where}.prompt"),
                hooks=tuple(
                    Hook.from_dict(h, where=f"{where}.hooks[{i}]")
                    for i, h in enumerate(_list(data.get("hooks"), f"{where}.hooks"))
                ),
                skill_kinds=tuple(
                    _string(kind, f"{where}.skill_kinds[{i}]")
                    for i, kind in enumerate(_list(data.get("skill_kinds"), f"{where}.skill_kinds"))
                ),
                skill_loader=_string(
                    data.get("skill_loader", DEFAULT_SKILL_LOADER), f"{where}.skill_loader"
                ),
                skill_loader_text=_loader_text(
                    data.get("skill_loader_text"), f"{where}.skill_loader_text"
                ),
                runtime_tools=tuple(_list(data.get("runtime_tools"), f"{where}.runtime_tools")),
                hooks_source=None
                if data.get("hooks_source") is None
                else _string(data["hooks_source"], f"{where}.hooks_source"),
                layouts=_texts(data.get("layouts"), f"{where}.layouts"),
                trust_hooks=trust_hooks,
                folder=str(Path(file).parent)
                if file is not None and Path(file).name == "harness.yaml"
                else None,
            )
        except HarnessError as exc:
            raise exc.at(file=file) from None
        return harness.validate(file=file)

    def with_trust(self, trust_hooks: bool) -> Harness:
        return replace(self, trust_hooks=trust_hooks)


# What the skill loader tool says of itself and of its one argument, unless the harness words it
# in its own language (``skill_loader_text``): every prompt and tools list shows it.
LOADER_TEXT = {
    "description": "Load a skill's full instructions by its id before acting on them.",
    "argument": "The id of the skill to load.",
}


def _loader_text(value: Any, where: str) -> dict:
    """``skill_loader_text``: a mapping of ``description`` and ``argument`` to strings."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise HarnessError(f"expected a mapping, got {type(value).__name__}", field=where)
    unknown = sorted(set(value) - set(LOADER_TEXT))
    if unknown:
        raise HarnessError(
            f"unknown keys {unknown}; allowed: {', '.join(LOADER_TEXT)}", field=where
        )
    for key, text in value.items():
        if not isinstance(text, str) or not text.strip():
            raise HarnessError("expected a non-empty string", field=f"{where}.{key}")
    return dict(value)


def _version(value: Any, where: str) -> str:
    """A harness's version as written: a string, or a whole number. YAML reads ``1.10`` as the
    number 1.1, which is not what the file says."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        raise HarnessError(
            f'version {value!r} is a YAML number, not the text written: quote it (version: "1.10")',
            field=where,
        )
    raise HarnessError(f"expected a string, got {type(value).__name__}", field=where)


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise HarnessError(f"expected a string, got {type(value).__name__}", field=where)
    return value


def _texts(value: Any, where: str) -> dict[str, str]:
    """A mapping of names to texts (a harness's own layouts: file name -> template)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise HarnessError(f"expected a mapping, got {type(value).__name__}", field=where)
    for key, text in value.items():
        _string(text, f"{where}.{key}")
    return dict(value)


def _list(value: Any, where: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise HarnessError(f"expected a list, got {type(value).__name__}", field=where)
    return value


# ---- folders -------------------------------------------------------------------------------


def inside(folder: Path, path: Path) -> bool:
    """Whether ``path`` resolves (symbolic links followed) to ``folder`` or below it; ``folder``
    is already resolved."""
    real = path.resolve()
    return real == folder or folder in real.parents


def hidden(relative: Path) -> bool:
    """Whether a path inside a harness folder is no part of the harness: a hidden entry
    (``.git``, ``.DS_Store``, an editor's ``.swp``) or a byte-code cache, at any depth."""
    return any(part.startswith(".") or part == "__pycache__" for part in relative.parts)


class _FolderReader:
    """Reads a harness folder's files, refusing any that a symbolic link leads out of the folder
    to: a harness's text becomes training data that may be published, so it must be the
    folder's own, not whatever a link points at."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        # A loop of links reads as no file at all ("has no SKILL.md"): name it first.
        for path in sorted(root.rglob("*")):
            if path.is_symlink():
                try:
                    os.stat(path)
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        raise HarnessError("is a loop of symbolic links", file=str(path)) from None

    def bytes(self, path: Path) -> bytes:
        try:
            within = inside(self.root, path)
        except (OSError, RuntimeError):  # a loop behind a linked folder the scan did not enter
            raise HarnessError("is a loop of symbolic links", file=str(path)) from None
        if not within:
            raise HarnessError(
                "is a symbolic link that leads outside the harness folder; copy "
                "the file into the folder instead",
                file=str(path),
            )
        try:
            return read_bytes(path)
        except OSError as exc:
            raise HarnessError(f"cannot read: {exc.strerror}", file=str(path)) from None

    def text(self, path: Path) -> str:
        return decode_utf8(self.bytes(path), file=str(path), error=HarnessError)


def load_harness(folder: str | os.PathLike, *, trust_hooks: bool = False) -> Harness:
    """Load and validate a harness folder. hooks.py is read as text; it is imported only later,
    by :meth:`Harness.hook_functions`, and only when ``trust_hooks`` is true. Files that symbolic
    links lead out of the folder to are refused."""
    root = Path(folder)
    manifest = root / "harness.yaml"
    if not root.is_dir():
        raise HarnessError("harness folder does not exist or is not a directory", file=str(root))
    if not manifest.is_file():
        raise HarnessError("harness folder has no harness.yaml", file=str(root))
    read = _FolderReader(root)
    try:
        data = load_yaml(read.text(manifest)) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise HarnessError(
            f"not valid YAML: {getattr(exc, 'problem', exc)}",
            file=str(manifest),
            line=None if mark is None else mark.line + 1,
        ) from None
    if not isinstance(data, dict):
        raise HarnessError("harness.yaml must be a mapping", file=str(manifest))
    if "name" not in data:  # inline harnesses may go unnamed; a folder's names itself
        raise HarnessError(
            "harness.yaml needs a name (name: shop): what rows, licences and warnings call it",
            file=str(manifest),
            field="name",
        )
    allowed = _HARNESS_KEYS | {"skills"}
    unknown = set(data) - allowed
    if unknown:
        raise HarnessError(
            f"unknown keys {sorted(unknown)}; allowed: {sorted(allowed)} "
            f"(skill and tool definitions live in skills/ and tools/)",
            file=str(manifest),
        )

    skills = []
    skill_files: dict[str, Path] = {}
    skills_dir = root / "skills"
    if skills_dir.is_dir():
        for sub in sorted(
            p for p in skills_dir.iterdir() if p.is_dir() and not hidden(Path(p.name))
        ):
            skill_file = sub / "SKILL.md"
            if not skill_file.is_file() and not skill_file.is_symlink():
                raise HarnessError("skill folder has no SKILL.md", file=str(sub))
            skills.append(
                Skill.from_markdown(read.text(skill_file), folder=sub.name, file=str(skill_file))
            )
            skill_files[skills[-1].id] = skill_file
    # harness.yaml may list skill ids to fix their order; the list must match the folders exactly.
    order = data.get("skills")
    if order is not None:
        found = {s.id for s in skills}
        if not isinstance(order, list) or sorted(map(str, order)) != sorted(found):
            listed = list(map(str, order)) if isinstance(order, list) else []
            missing = sorted(set(listed) - found)
            extra = sorted(found - set(listed))
            twice = sorted({s for s in listed if listed.count(s) > 1})
            raise HarnessError(
                f"'skills' must list exactly the skill folders, each once; without a folder: "
                f"{missing}, not listed: {extra}" + (f", listed twice: {twice}" if twice else ""),
                file=str(manifest),
                field="skills",
            )
        by_id = {s.id: s for s in skills}
        skills = [by_id[str(i)] for i in order]
    tools = []
    tool_files: list[Path] = []  # each tool's file, in the tools' order
    tools_dir = root / "tools"
    if tools_dir.is_dir():
        for path in sorted(p for p in tools_dir.iterdir() if not hidden(Path(p.name))):
            if path.suffix.lower() == ".json" and path.suffix != ".json":
                # Read as no tool, it would surface later as an unknown allowed tool.
                raise HarnessError(
                    "a tool file's name ends in .json, lowercase; rename it", file=str(path)
                )
        for path in sorted(p for p in tools_dir.glob("*.json") if not hidden(Path(p.name))):
            try:
                raw = loads(read.text(path))  # UTF-8 first: a bad byte is said where it is
            except orjson.JSONDecodeError as exc:
                raise HarnessError(json_error(exc), file=str(path)) from None
            try:
                tools.append(Tool.from_dict(raw, where="tool"))
            except HarnessError as exc:
                raise exc.at(file=str(path)) from None
            tool_files.append(path)
    hooks_file = root / "hooks.py"
    hooks_source = read.text(hooks_file) if hooks_file.is_file() else None
    layouts = {}
    layouts_dir = root / "layouts"
    if layouts_dir.is_dir():
        layouts = {
            p.name[:-3]: read.text(p)
            for p in sorted(layouts_dir.glob("*.j2"))
            if not hidden(Path(p.name))
        }

    data = dict(data)
    data.update(
        skills=[s.to_dict() for s in skills],
        tools=[t.to_dict() for t in tools],
        hooks_source=hooks_source,
        layouts=layouts,
    )
    if hooks_source is None:
        data.pop("hooks_source")
    # Tool order in the folder is file-name order; harness.yaml may not reorder it.
    try:
        harness = Harness.from_dict(data, file=str(manifest), trust_hooks=trust_hooks)
    except HarnessError as exc:
        raise _in_tool_file(_in_skill_file(exc, skills, skill_files), tools, tool_files) from None
    if trust_hooks:
        # Trusted, hooks.py is imported where the harness is read: one that raises, exits or
        # rebinds a hook's function would otherwise pass generate and verify (which never run
        # a hook) and fail at training, evaluation or rollout.
        harness.hook_functions()
    return harness


# A skill's fields as its SKILL.md front matter names them.
_FRONT_MATTER_KEYS = {"allowed_tools": "allowed-tools", "kind": "metadata.kind", "id": "name"}


def _in_skill_file(exc: HarnessError, skills: list[Skill], files: dict[str, Path]) -> HarnessError:
    """A validation error about one skill, located in its SKILL.md rather than harness.yaml."""
    match = re.fullmatch(r"skills\[(\d+)\]\.(\w+)", exc.field or "")
    if match is None or int(match.group(1)) >= len(skills):
        return exc
    key = match.group(2)
    return HarnessError(
        exc.reason,
        file=str(files[skills[int(match.group(1))].id]),
        field=_FRONT_MATTER_KEYS.get(key, key),
    )


def _in_tool_file(exc: HarnessError, tools: list[Tool], files: list[Path]) -> HarnessError:
    """A validation error about one tool, located in its tools/*.json file rather than
    harness.yaml; a duplicate name also names the file that has it first."""
    match = re.fullmatch(r"tools\[(\d+)\](?:\.(.+))?", exc.field or "")
    if match is None or int(match.group(1)) >= len(files):
        return exc
    i = int(match.group(1))
    reason = exc.reason
    first = next((files[j] for j in range(i) if tools[j].name == tools[i].name), None)
    if first is not None:
        reason = f"{reason}, which {first.name} defines too"
    return HarnessError(reason, file=str(files[i]), field=match.group(2))


def referenced_folder(
    ref: str, base_dir: str | os.PathLike, roots: tuple[str | os.PathLike, ...] = ()
) -> Path:
    """The harness folder an episode names by ``ref``, relative to the episodes file's folder
    ``base_dir``. Once symbolic links are followed it must lie inside ``base_dir`` or one of
    ``roots`` (folders the user names): an episodes file must not pull any folder on disk into a
    dataset that may be published. Raises HarnessError, or OSError/ValueError for a string that
    is no usable path."""
    path = Path(ref)
    if not path.is_absolute():
        path = Path(base_dir) / path
    allowed = [Path(base_dir).resolve(), *(Path(r).resolve() for r in roots)]
    if not any(inside(folder, path) for folder in allowed):
        raise HarnessError(
            f"harness reference {ref[:120]!r} leads outside the episodes file's "
            f"folder{' and the --harness-root folders' if roots else ''}; pass "
            f"--harness-root DIR to allow harness folders under DIR",
            field="harness",
        )
    return path


def save_harness(harness: Harness, folder: str | os.PathLike) -> Path:
    """Write ``harness`` as a folder that :func:`load_harness` reads back to an equal harness.

    Tool files are numbered (``00-name.json``) so that file-name order keeps the tool order."""
    root = Path(folder)
    if root.exists() and any(root.iterdir()):
        raise HarnessError("refusing to write a harness into a non-empty folder", file=str(root))
    for skill in harness.skills:
        # A folder names each skill by its SKILL.md's name, which the format restricts; a
        # variant's id in another convention (``refund_policy``, ``RefundPolicy``) would be
        # written into a folder that no longer loads.
        if not SKILL_NAME.match(skill.id) or len(skill.id) > MAX_NAME:
            raise HarnessError(
                f"skill id {skill.id!r} is no SKILL.md name (lowercase letters, digits and "
                f"single hyphens, at most {MAX_NAME} characters), so this harness cannot be "
                f"written as a folder; keep it as JSON (Harness.to_dict)",
                file=str(root),
                field=f"skills.{skill.id}",
            )
    root.mkdir(parents=True, exist_ok=True)
    manifest = {
        k: v
        for k, v in harness.to_dict().items()
        if k not in ("skills", "tools", "hooks_source", "layouts")
    }
    if harness.skills:
        manifest["skills"] = list(harness.skill_ids)
    write_text(root / "harness.yaml", dump_yaml(manifest))
    for skill in harness.skills:
        (root / "skills" / skill.id).mkdir(parents=True)
        write_text(root / "skills" / skill.id / "SKILL.md", skill.to_markdown())
    if harness.tools:
        (root / "tools").mkdir()
        width = max(2, len(str(len(harness.tools) - 1)))
        for i, tool in enumerate(harness.tools):
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in tool.name)
            (root / "tools" / f"{i:0{width}d}-{safe}.json").write_bytes(
                orjson.dumps(tool.to_openai(), option=orjson.OPT_INDENT_2) + b"\n"
            )
    if harness.hooks_source is not None:
        write_text(root / "hooks.py", harness.hooks_source)
    if harness.layouts:
        (root / "layouts").mkdir()
        for name, source in harness.layouts.items():
            write_text(root / "layouts" / f"{name}.j2", source)
    return root
