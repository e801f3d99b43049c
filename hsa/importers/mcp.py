"""Import an MCP server's tools: a ``tools/list`` result -> one ``tools/<name>.json`` per tool.

Accepts, per file, the result (``{"tools": [...], "nextCursor": ...}``) or the whole JSON-RPC
response around it (``{"jsonrpc": "2.0", "id": 1, "result": {...}}``); several files are the pages
of one listing. Every tool is written or rejected with its reason (file, ``tools[i]``, field):
it must load as a harness tool (a name, a JSON Schema ``inputSchema`` describing an object), and
two tools may not share a name. Each file holds the MCP tool object as the server sent it, so
nothing (``title``, ``annotations``, ``outputSchema``) is lost; the harness loader reads it as an
OpenAI function. Files appear only when every one can be written (nothing is overwritten). A
last page whose ``nextCursor`` names another page is a notice: the listing is not whole.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from hsa.errors import HarnessError, HsaError, Notice, Reject
from hsa.files.jsonl import json_error, loads, write_jsonl
from hsa.files.textfile import read_text
from hsa.model.tool import Tool


@dataclass
class McpImport:
    """The tools of a listing, each ``(file name, MCP tool object)``, and the rejected ones."""

    sources: list[str]
    tools: list[tuple[str, dict]] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)

    @property
    def listed(self) -> int:
        return len(self.tools) + len(self.rejects)


def _listed_page(path: Path) -> tuple[list, object, str]:
    """(the ``tools`` array, the ``nextCursor``, the path of the array in the file: ``tools``
    or ``result.tools``) of a ``tools/list`` result or response file."""
    try:
        data = loads(read_text(path))  # UTF-8 first: a bad byte is said where it is
    except OSError as exc:
        raise HsaError(f"cannot read: {exc.strerror}", file=str(path)) from None
    except orjson.JSONDecodeError as exc:
        raise HsaError(json_error(exc), file=str(path)) from None
    if isinstance(data, dict) and "error" in data and "result" not in data:
        error = data["error"] if isinstance(data["error"], dict) else {}
        raise HsaError(
            f"the response is a JSON-RPC error ({error.get('code')}: "
            f"{error.get('message')}), not a tools/list result",
            file=str(path),
        )
    result = data.get("result") if isinstance(data, dict) and "jsonrpc" in data else data
    if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
        raise HsaError(
            'expected a tools/list result {"tools": [...]} or its JSON-RPC response '
            '{"jsonrpc": "2.0", "result": {"tools": [...]}}',
            file=str(path),
        )
    return (
        result["tools"],
        result.get("nextCursor"),
        "result.tools" if result is not data else "tools",
    )


# File names stay well under the 255 bytes file systems allow, with room for "-<n>.json".
FILE_NAME_CHARS = 100


def file_name(tool_name: str) -> str:
    """A file name for a tool (MCP names may hold ``/`` or ``:``, and be of any length: a long
    one is cut, with a hash of the whole name so that two long names stay apart)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", tool_name).strip(".") or "tool"
    if len(name) > FILE_NAME_CHARS:
        digest = hashlib.sha256(tool_name.encode()).hexdigest()[:12]
        name = f"{name[: FILE_NAME_CHARS - 13]}-{digest}"
    return name


def import_mcp(paths: list[str | os.PathLike]) -> McpImport:
    """Read the listing in ``paths`` (pages in order)."""
    out = McpImport(sources=[str(p) for p in paths])
    names: set[str] = set()
    files: set[str] = set()
    cursor = None
    for path in map(Path, paths):
        listed, cursor, array = _listed_page(path)
        for i, raw in enumerate(listed):
            where = f"{array}[{i}]"
            try:
                tool = Tool.from_dict(raw, where=where)
            except HarnessError as exc:
                out.rejects.append(
                    Reject(str(path), None, _name(raw), exc.field or where, exc.reason)
                )
                continue
            if tool.name in names:
                out.rejects.append(
                    Reject(
                        str(path),
                        None,
                        tool.name,
                        f"{where}.name",
                        "another tool of the listing has this name",
                    )
                )
                continue
            names.add(tool.name)
            if isinstance(raw, dict) and "inputSchema" not in raw:
                # MCP requires one; a server that leaves it out may have dropped it by mistake
                out.notices.append(
                    Notice(
                        str(path),
                        None,
                        tool.name,
                        f"{where}.inputSchema",
                        "no inputSchema: imported as a tool that takes no arguments",
                    )
                )
            name, n = file_name(tool.name), 2
            while name.lower() in files:  # case-insensitive file systems
                name, n = f"{file_name(tool.name)}-{n}", n + 1
            files.add(name.lower())
            out.tools.append((f"{name}.json", raw))
    if cursor is not None:
        # MCP pages a long listing: the last page given names the next one, which is missing.
        out.notices.append(
            Notice(
                str(paths[-1]),
                None,
                None,
                "nextCursor",
                f"the listing goes on (nextCursor {cursor!r}): these are not all the server's "
                f"tools; pass every page, in order",
            )
        )
    return out


def _name(raw) -> str | None:
    name = raw.get("name") if isinstance(raw, dict) else None
    return name if isinstance(name, str) else None


def write_tools(
    result: McpImport, out_dir: str | os.PathLike, rejects_path: str | os.PathLike
) -> list[Path]:
    """Write each tool to ``out_dir/<name>.json`` and the rejects as JSONL; refuses, writing
    nothing, when a tool file is already there. An import that keeps no tool writes nothing
    (its rejects are printed). Rejects already in ``rejects_path`` (an earlier import of another
    server into the same folder) are kept, the new ones after them: each names its source."""
    out = Path(out_dir)
    if not result.tools:
        return []
    if out.exists() and not out.is_dir():
        raise HsaError("the tools folder is a file", file=str(out))
    clash = [name for name, _ in result.tools if (out / name).exists()]
    if clash:
        raise HsaError(
            f"tool file(s) already there: {', '.join(clash[:5])}; nothing was written "
            f"(remove them, or import into another folder)",
            file=str(out),
        )
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".mcp-import-", dir=out))
    written: list[Path] = []
    try:
        for name, raw in result.tools:
            (staging / name).write_bytes(orjson.dumps(raw, option=orjson.OPT_INDENT_2) + b"\n")
        for name, _ in result.tools:  # every file is complete before the first one appears
            os.replace(staging / name, out / name)
            written.append(out / name)
        if result.rejects or Path(rejects_path).exists():  # no empty file beside the tools
            write_jsonl(rejects_path, (r.to_dict() for r in result.rejects), after_existing=True)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written
