"""Skills: Markdown modules with an id, in the Agent Skills format (``skills/<id>/SKILL.md``).

A SKILL.md file is YAML front matter (``name``, ``description``, optional ``metadata``,
``allowed-tools``, ``license``, ``compatibility``) followed by the Markdown body. The
harness-specific ``kind`` of a skill (reply, strategy, ...) travels in ``metadata.kind`` so the
file stays a valid Agent Skill. ``allowed-tools`` is the Agent Skills space-separated list, or
Claude Code's comma-separated one whose entries may restrict a tool (``Read, Grep,
Bash(python:*)``); each entry is kept as written, and :func:`allowed_tool_name` is the tool it
names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from hsa.errors import HarnessError
from hsa.files.textfile import dump_yaml, load_yaml

# Agent Skills naming rule: lowercase letters, digits and single hyphens, at most 64 characters.
SKILL_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_FRONT_MATTER_KEYS = (
    "name",
    "description",
    "metadata",
    "allowed-tools",
    "license",
    "compatibility",
)


def foreign_keys_as_metadata(text: str) -> tuple[str, list[str]]:
    """SKILL.md ``text`` with the front-matter keys the Agent Skills format does not define
    (Claude Code's ``model``, ``context``, ``argument-hint``...) moved under ``metadata``, which
    holds any key, and the keys moved; ``text`` as it is when there are none, or when its front
    matter cannot be read (the loader then says why). A key ``metadata`` already has is left
    where it is, for the loader to refuse: one of the two would be lost."""
    match = _FRONT_MATTER.match(text)
    try:
        front = load_yaml(match.group(1)) if match else None
    except yaml.YAMLError:
        front = None
    if match is None or not isinstance(front, dict):
        return text, []
    if not isinstance(front.get("metadata") or {}, dict):
        return text, []
    metadata = dict(front.get("metadata") or {})
    moved = [k for k in front if k not in _FRONT_MATTER_KEYS and k not in metadata]
    if not moved:
        return text, []
    kept = {k: v for k, v in front.items() if k not in moved}
    kept["metadata"] = {**metadata, **{k: front[k] for k in moved}}
    return f"---\n{dump_yaml(kept)}---\n{text[match.end() :]}", [str(k) for k in moved]


def allowed_tool_name(spec: str) -> str:
    """The tool an ``allowed-tools`` entry names: ``Bash(python:*)`` -> ``Bash``."""
    return spec.split("(", 1)[0].strip()


def parse_allowed_tools(text: str) -> tuple[str, ...]:
    """``allowed-tools`` entries: separated by commas or whitespace outside parentheses, so
    ``Read, Grep, Bash(git add:*)`` is three entries, the last one whole."""
    entries, current, depth = [], "", 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (ch == "," or ch.isspace()):
            if current.strip():
                entries.append(current.strip())
            current = ""
            continue
        current += ch
    if current.strip():
        entries.append(current.strip())
    return tuple(entries)


def format_allowed_tools(entries: tuple[str, ...]) -> str:
    """``allowed-tools`` as written back: space-separated (Agent Skills), or comma-separated when
    an entry holds a space or parentheses (Claude Code)."""
    if any("(" in e or any(c.isspace() for c in e) for e in entries):
        return ", ".join(entries)
    return " ".join(entries)


@dataclass(frozen=True, slots=True)
class Skill:
    """A skill: what the model can load to learn how to handle one kind of request."""

    id: str
    description: str
    content: str
    kind: str | None = None
    allowed_tools: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict)
    license: str | None = None
    compatibility: str | None = None  # Agent Skills: the environment the skill needs

    def to_dict(self) -> dict:
        out: dict[str, Any] = {
            "id": self.id,
            "description": self.description,
            "content": self.content,
        }
        if self.kind is not None:
            out["kind"] = self.kind
        if self.allowed_tools:
            out["allowed_tools"] = list(self.allowed_tools)
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        if self.license is not None:
            out["license"] = self.license
        if self.compatibility is not None:
            out["compatibility"] = self.compatibility
        return out

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "skill") -> Skill:
        if not isinstance(data, dict):
            raise HarnessError(f"expected an object, got {type(data).__name__}", field=where)
        unknown = set(data) - {
            "id",
            "description",
            "content",
            "kind",
            "allowed_tools",
            "metadata",
            "license",
            "compatibility",
        }
        if unknown:
            raise HarnessError(f"unknown keys {sorted(unknown)}", field=where)
        for key in ("id", "description", "content"):
            if not isinstance(data.get(key), str):
                raise HarnessError(f"'{key}' must be a string", field=f"{where}.{key}")
        if not data["id"]:
            raise HarnessError("skill id must not be empty", field=f"{where}.id")
        for key in ("kind", "license", "compatibility"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise HarnessError(f"'{key}' must be a string", field=f"{where}.{key}")
        allowed_tools = data.get("allowed_tools", ())
        if not isinstance(allowed_tools, list | tuple) or not all(
            isinstance(name, str) for name in allowed_tools
        ):
            raise HarnessError(
                "'allowed_tools' must be a list of names", field=f"{where}.allowed_tools"
            )
        if not isinstance(data.get("metadata", {}), dict):
            raise HarnessError("'metadata' must be a mapping", field=f"{where}.metadata")
        return cls(
            id=data["id"],
            description=data["description"],
            content=data["content"],
            kind=data.get("kind"),
            allowed_tools=tuple(data.get("allowed_tools", ())),
            metadata=dict(data.get("metadata", {})),
            license=data.get("license"),
            compatibility=data.get("compatibility"),
        )

    # ---- SKILL.md -------------------------------------------------------------------------

    def to_markdown(self) -> str:
        """The SKILL.md text: front matter, a blank line, then the body."""
        front: dict[str, Any] = {"name": self.id, "description": self.description}
        if self.license is not None:
            front["license"] = self.license
        if self.allowed_tools:
            front["allowed-tools"] = format_allowed_tools(self.allowed_tools)
        if self.compatibility is not None:
            front["compatibility"] = self.compatibility
        metadata = dict(self.metadata)
        if self.kind is not None:
            metadata["kind"] = self.kind
        if metadata:
            front["metadata"] = metadata
        head = dump_yaml(front)
        return f"---\n{head}---\n\n{self.content}"

    @classmethod
    def from_markdown(cls, text: str, *, folder: str, file: str) -> Skill:
        """Parse SKILL.md; ``folder`` is the name of the directory it lives in (must equal name).
        Line endings are read as "\n" whatever the file wrote (a file saved on Windows ends its
        lines in "\r\n", which would otherwise stay in the body the model reads)."""
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        match = _FRONT_MATTER.match(text)
        if not match:
            raise HarnessError(
                "SKILL.md must start with YAML front matter between '---' lines "
                "(with at least 'name' and 'description')",
                file=file,
                line=1,
            )
        try:
            front = load_yaml(match.group(1)) or {}
        except yaml.YAMLError as exc:
            line = getattr(getattr(exc, "problem_mark", None), "line", None)
            raise HarnessError(
                f"front matter is not valid YAML: {exc}",
                file=file,
                line=None if line is None else line + 2,
            ) from None
        if not isinstance(front, dict):
            raise HarnessError("front matter must be a YAML mapping", file=file, line=2)
        name = front.get("name")
        if name is None:
            raise HarnessError(
                f"front matter has no name (the skill's id: its folder's name, {folder!r})",
                file=file,
                field="name",
            )
        if not isinstance(name, str) or not SKILL_NAME.match(name) or len(name) > MAX_NAME:
            raise HarnessError(
                f"name {name!r} must be lowercase letters, digits and single "
                f"hyphens, at most {MAX_NAME} characters",
                file=file,
                field="name",
            )
        if name != folder:
            raise HarnessError(
                f"name {name!r} differs from its folder {folder!r}; they must be equal",
                file=file,
                field="name",
            )
        description = front.get("description")
        if not isinstance(description, str) or not description.strip():
            raise HarnessError(
                "description must be a non-empty string", file=file, field="description"
            )
        if len(description) > MAX_DESCRIPTION:
            raise HarnessError(
                f"description has {len(description)} characters, at most {MAX_DESCRIPTION} allowed",
                file=file,
                field="description",
            )
        unknown = set(front) - set(_FRONT_MATTER_KEYS)
        if unknown:
            raise HarnessError(
                f"unknown front matter keys {sorted(unknown)}; allowed: "
                f"{', '.join(_FRONT_MATTER_KEYS)}",
                file=file,
            )
        metadata = front.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise HarnessError("metadata must be a mapping", file=file, field="metadata")
        metadata = dict(metadata)
        kind = metadata.pop("kind", None)
        if kind is not None and not isinstance(kind, str):
            raise HarnessError(
                f"metadata.kind must be a string (the skill's kind, e.g. reply), got "
                f"{type(kind).__name__}",
                file=file,
                field="metadata.kind",
            )
        allowed = front.get("allowed-tools") or ""
        if isinstance(allowed, list) and all(isinstance(t, str) for t in allowed):
            allowed_tools = tuple(e for t in allowed for e in parse_allowed_tools(t))
        elif isinstance(allowed, str):
            allowed_tools = parse_allowed_tools(allowed)
        else:
            raise HarnessError(
                "allowed-tools must be a list of tools as a string (space- or "
                "comma-separated, e.g. 'Read, Grep, Bash(python:*)') or a list",
                file=file,
                field="allowed-tools",
            )
        for key in ("license", "compatibility"):
            if front.get(key) is not None and not isinstance(front[key], str):
                raise HarnessError(f"{key} must be a string", file=file, field=key)
        body = text[match.end() :]
        if body.startswith("\r\n"):
            body = body[2:]
        elif body.startswith("\n"):
            body = body[1:]
        return cls(
            id=name,
            description=description,
            content=body,
            kind=kind,
            allowed_tools=allowed_tools,
            metadata=metadata,
            license=front.get("license"),
            compatibility=front.get("compatibility"),
        )
