"""Import Agent Skills folders (SKILL.md and its files) as a harness skeleton.

``import_skills(["~/skills/pdf", "repo/skills"], "my-harness")`` takes each folder that holds a
SKILL.md, or else every subfolder of it that does, and writes::

    my-harness/harness.yaml          name, skill_kinds, runtime_tools, skills (in input order)
    my-harness/skills/<name>/...     each skill folder, copied as it is

Every skill folder becomes a skill or a reject naming its SKILL.md, the front-matter field and
the reason (the loader's own checks: name equal to the folder, a description...); two skills of
one name keep the first. ``allowed-tools`` (Agent Skills or Claude Code syntax) that name no tool
of the skeleton are the agent runtime's tools (``Read``, ``Bash``...) and are declared as
``runtime_tools``; tools come later (``tools/*.json``, e.g. from ``hsa import mcp``). Symbolic
links inside a skill folder are not followed (a link can lead anywhere) and are listed as
notices. Front-matter keys the Agent Skills format does not define (Claude Code's ``model``,
``context``, ``argument-hint``...) are moved under ``metadata`` in the copied SKILL.md, with a
notice. The skeleton loads as a harness before it appears, whole, at ``out``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hsa.errors import HsaError, Notice, Reject
from hsa.files.jsonl import plain_permissions
from hsa.files.textfile import dump_yaml, read_text
from hsa.model.harness import DEFAULT_SKILL_LOADER, load_harness
from hsa.model.skill import Skill, allowed_tool_name, foreign_keys_as_metadata


@dataclass
class SkillsImport:
    """What an import of skill folders found: skills (with their folders), rejects, notices."""

    skills: list[tuple[Skill, Path]] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    folders: int = 0
    # SKILL.md as written into the skeleton, by skill id, where it differs from the source's
    # (foreign front-matter keys moved under metadata)
    rewritten: dict[str, str] = field(default_factory=dict)


def _skill_file(folder: Path) -> Path | None:
    """The folder's skill file: SKILL.md, or a file of that name in another case (``skill.md``,
    which :func:`read_skills` rejects by name rather than skip without a word); None if none."""
    if (folder / "SKILL.md").is_file():
        return folder / "SKILL.md"
    return next(
        (p for p in sorted(folder.iterdir()) if p.is_file() and p.name.lower() == "skill.md"),
        None,
    )


def skill_files(path: Path) -> list[Path]:
    """The skill file of ``path`` if it holds one, else those of its subfolders that do, in name
    order (a skill file named in another case counts, to be rejected for it)."""
    if not path.is_dir():
        raise HsaError("not a folder of skills", file=str(path))
    own = _skill_file(path)
    if own is not None:
        return [own]
    found = [f for p in sorted(path.iterdir()) if p.is_dir() and (f := _skill_file(p)) is not None]
    if not found:
        raise HsaError("holds no SKILL.md, nor folders with one", file=str(path))
    return found


def read_skills(paths: list[str | os.PathLike]) -> SkillsImport:
    out = SkillsImport()
    seen: dict[str, Path] = {}
    for skill_file in (f for p in paths for f in skill_files(Path(p))):
        folder = skill_file.parent
        out.folders += 1
        if skill_file.name != "SKILL.md":
            out.rejects.append(
                Reject(
                    str(skill_file),
                    None,
                    folder.name,
                    None,
                    f"the skill file must be named SKILL.md, not {skill_file.name}",
                )
            )
            continue
        try:
            text, moved = foreign_keys_as_metadata(read_text(skill_file))
            skill = Skill.from_markdown(text, folder=folder.name, file=str(skill_file))
        except HsaError as exc:  # not a skill, or not UTF-8 text
            out.rejects.append(
                Reject(exc.file or str(skill_file), exc.line, folder.name, exc.field, exc.reason)
            )
            continue
        if skill.id in seen:
            out.rejects.append(
                Reject(
                    str(skill_file),
                    None,
                    skill.id,
                    "name",
                    f"another skill of this name was imported from {seen[skill.id]}",
                )
            )
            continue
        seen[skill.id] = folder
        out.skills.append((skill, folder))
        if moved:
            out.rewritten[skill.id] = text
            out.notices.append(
                Notice(
                    str(skill_file),
                    None,
                    skill.id,
                    "metadata",
                    f"front matter keys {moved} are no Agent Skills keys: kept under metadata",
                )
            )
    return out


def skeleton_manifest(found: SkillsImport, name: str, sources: list[str]) -> dict:
    """harness.yaml of the skeleton: the skills' kinds, and their allowed tools as runtime tools."""
    kinds = sorted({s.kind for s, _ in found.skills if s.kind is not None})
    runtime = sorted(
        {allowed_tool_name(e) for s, _ in found.skills for e in s.allowed_tools}
        - {DEFAULT_SKILL_LOADER}
    )
    manifest: dict = {
        "name": name,
        "version": "1",
        "description": f"Imported from {', '.join(sources)} by hsa import skills.",
    }
    if kinds:
        manifest["skill_kinds"] = kinds
    if runtime:
        manifest["runtime_tools"] = runtime
    manifest["prompt"] = {"layout": "markdown", "sections": ["skills", "tools"]}
    manifest["skills"] = [s.id for s, _ in found.skills]
    return manifest


def _copy_skill(source: Path, target: Path, notices: list[Notice]) -> None:
    """Copy a skill folder's files, skipping symbolic links (listed as notices)."""
    for root, dirs, files in os.walk(source, followlinks=False):
        here = Path(root)
        relative = here.relative_to(source)
        (target / relative).mkdir(parents=True, exist_ok=True)
        for name in sorted(files) + sorted(d for d in dirs if (here / d).is_symlink()):
            path = here / name
            if path.is_symlink():
                notices.append(
                    Notice(str(path), None, source.name, None, "symbolic link not copied")
                )
            elif name not in dirs:
                shutil.copy2(path, target / relative / name)
        dirs[:] = [d for d in dirs if not (here / d).is_symlink() and d != "__pycache__"]


def import_skills(
    paths: list[str | os.PathLike], out: str | os.PathLike, *, name: str | None = None
) -> SkillsImport:
    """Write the skeleton harness of the skills in ``paths`` to ``out`` (a new folder)."""
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise HsaError(
            "refusing to write a harness into an existing, non-empty path", file=str(target)
        )
    found = read_skills(paths)
    if not found.skills:
        raise HsaError(
            f"no skill could be imported from {found.folders} folder(s); first "
            f"reject: {found.rejects[0] if found.rejects else 'none'}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    plain_permissions(staging, folder=True)  # it becomes the harness folder
    try:
        manifest = skeleton_manifest(found, name or target.resolve().name, [str(p) for p in paths])
        (staging / "harness.yaml").write_text(dump_yaml(manifest), encoding="utf-8")
        for skill, folder in found.skills:
            _copy_skill(folder, staging / "skills" / skill.id, found.notices)
            if skill.id in found.rewritten:
                (staging / "skills" / skill.id / "SKILL.md").write_text(
                    found.rewritten[skill.id], encoding="utf-8"
                )
        load_harness(staging)  # the skeleton is a harness, or nothing appears
        if target.exists():
            target.rmdir()
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return found
