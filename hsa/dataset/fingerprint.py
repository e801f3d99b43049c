"""Fingerprints of inputs and the version id of a dataset.

A version is a short hash of (the recipe less its row-neutral options, input fingerprint, hsa
version, every transform's version, the shipped assets, split): same inputs give the same version,
and any change to one of them gives another. The input fingerprint covers the episodes file's bytes
and every harness folder the run can read: the default one and each folder an episode names by
reference (so a harness's own layouts, under its ``layouts/`` or inline in an episode, count as
input). The shipped assets are the files of ``templates/`` (the prompt layouts the renderer uses,
the card template): data that shapes rows as code does, without a version of its own.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import orjson

from hsa.errors import HsaError
from hsa.files.assets import templates_dir
from hsa.files.overlap import refuse_inside
from hsa.model.harness import hidden, inside, referenced_folder

# A string-valued "harness" key: a reference to a harness folder. Inside JSON string values
# quotes are escaped, so this only matches real keys.
_HARNESS_REF = re.compile(rb'"harness"\s*:\s*"((?:[^"\\]|\\.)*)"')
_CHUNK = 1 << 22


def folder_sha256(folder: str | os.PathLike) -> str:
    """sha256 over a folder: each file's relative path and bytes, in path order, and every entry
    that is no file to read (an empty folder, a link that leads nowhere or in a loop) by its
    path and kind, so that a folder that no longer loads never shares its version with the one
    that did. A symbolic link that leads out of the folder counts by its target's name, never
    its bytes: nothing outside is read (loading such a harness fails anyway). Hidden entries
    (``.git``, ``.DS_Store``) and ``__pycache__`` are no part of it: a harness is what
    hsa.model.harness loads, and a git tag or a byte-code cache must not make another version."""
    root = Path(folder)
    real = root.resolve()
    digest = hashlib.sha256()
    entries = sorted(p for p in root.rglob("*") if not hidden(p.relative_to(root)))
    files = {p for p in entries if p.is_file()}
    parents = {parent for p in files for parent in p.parents}
    for path in entries:
        name = path.relative_to(root).as_posix().encode() + b"\0"
        if path in files:
            digest.update(name)
            try:
                within = inside(real, path)
            except (OSError, RuntimeError):  # a loop of links
                within = False
            if within:
                digest.update(hashlib.sha256(path.read_bytes()).digest())
            else:
                digest.update(
                    b"link\0" + os.fsencode(os.readlink(path))
                    if path.is_symlink()
                    else b"outside\0"
                )
        elif path.is_symlink():  # to nothing, to a folder, or in a loop
            digest.update(name + b"link\0" + os.fsencode(os.readlink(path)))
        elif path not in parents:  # a folder with no file below: the files name the others
            digest.update(name + (b"folder\0" if path.is_dir() else b"other\0"))
    return digest.hexdigest()


def harness_key(ref: str) -> str:
    """How the fingerprint (and so the manifest) names a harness folder an episode references:
    as written when it is a plain relative path, else by a hash of the reference, so that no
    local absolute path (or path above the episodes' folder) lands in a published manifest."""
    path = Path(ref)
    if not path.is_absolute() and ".." not in path.parts:
        return ref
    return "ref-" + hashlib.sha256(ref.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def input_fingerprint(
    episodes: str | os.PathLike,
    harness: str | os.PathLike | None,
    harness_roots: tuple[str | os.PathLike, ...] = (),
    *,
    found: dict[str, Path] | None = None,
) -> dict:
    """What the run reads: the episodes file's sha256 and each harness folder's (the default one,
    and each one an episode references that it may read: see hsa.model.harness.referenced_folder).
    ``found``, when given, receives each referenced folder by its reference (read in the same
    pass over the file)."""
    episodes = Path(episodes)
    digest = hashlib.sha256()
    refs: set[bytes] = set()
    tail = b""
    with open(episodes, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            # Lines are scanned whole: keep the unfinished last line for the next chunk.
            text = tail + chunk
            cut = text.rfind(b"\n") + 1
            refs.update(m.group(1) for m in _HARNESS_REF.finditer(text, 0, cut))
            tail = text[cut:]
    refs.update(m.group(1) for m in _HARNESS_REF.finditer(tail))
    harnesses = {}
    if harness is not None:
        harnesses["--harness"] = folder_sha256(harness)
    for ref in sorted(refs):
        try:
            name = orjson.loads(b'"' + ref + b'"')
            folder = referenced_folder(name, episodes.parent, harness_roots)
            if not folder.is_dir():
                continue
        except (HsaError, OSError, ValueError):  # rows naming it are rejected on load
            continue
        harnesses[harness_key(name)] = folder_sha256(folder)
        if found is not None:
            found[name] = folder
    return {"episodes_sha256": digest.hexdigest(), "harnesses": harnesses}


def output_fingerprint(
    out: Path,
    episodes: str | os.PathLike,
    harness: str | os.PathLike | None,
    harness_roots: tuple[str | os.PathLike, ...] = (),
) -> dict:
    """:func:`input_fingerprint` of a run that writes a version under ``out``, refused when
    ``out`` lies in a harness folder it reads (``--harness``, or one an episode references): the
    version would change the folder it is a hash of, and no longer verify."""
    refuse_inside(("--out", out), {"--harness": harness})
    found: dict[str, Path] = {}
    fingerprint = input_fingerprint(episodes, harness, harness_roots, found=found)
    refuse_inside(
        ("--out", out), {f"the harness folder {ref!r}": path for ref, path in found.items()}
    )
    return fingerprint


def with_trust(fingerprint: dict, trust_hooks: bool) -> dict:
    """The input fingerprint of a run, and whether it runs the harnesses' hooks: verified with
    them (hsa.verify, ``hooks_accept``) a run may reject rows a run without them keeps, so the
    two are versions of their own, and the manifest's ``input`` says which one it is."""
    return {**fingerprint, "hooks_trusted": True} if trust_hooks else fingerprint


def shipped_assets() -> dict[str, str]:
    """sha256 of each shipped asset folder that shapes a version (see the module docstring)."""
    return {"templates": folder_sha256(templates_dir())}


def version_id(
    recipe: dict, fingerprint: dict, hsa_version: str, transforms: dict, split: str
) -> str:
    """The version of a dataset. ``recipe`` is the recipe's ``version_dict()`` (row-neutral
    options left out); the shipped assets are read here, so that no caller can leave them out."""
    payload = orjson.dumps(
        {
            "recipe": recipe,
            "input": fingerprint,
            "hsa": hsa_version,
            "transforms": transforms,
            "split": split,
            "assets": shipped_assets(),
        },
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.blake2b(payload, digest_size=6).hexdigest()
