"""Publish a dataset version to the Hugging Face Hub in one commit, with retries.

The token comes from the environment (``HF_TOKEN``) or the Hub login (``hf auth login``) through
``huggingface_hub``; ``hsa`` never reads it into its own files, logs or manifests. The repository
keeps the version's layout (``data/``, ``rejects.parquet``, ``manifest.json``, ``README.md``), so
``load_dataset("ORG/NAME")`` reads the card's ``configs``.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from hsa.dataset.licenses import restricted
from hsa.dataset.writer import listed_files, read_manifest, version_problems
from hsa.errors import HsaError

_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
RETRIES = 4


def version_files(version_dir: Path, manifest: dict | None = None) -> list[Path]:
    """The files a version publishes, in a stable order (card and manifest first), after
    checking they are exactly the ones its manifest lists, with the bytes it hashed: a damaged
    version is never published."""
    manifest = manifest if manifest is not None else read_manifest(version_dir)
    problems = version_problems(version_dir, manifest)
    if problems:
        shown = "; ".join(problems[:5]) + (
            f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        )
        raise HsaError(
            f"the version's files do not match its manifest, nothing pushed: {shown} "
            f"(hsa verify says more; hsa generate rebuilds a damaged version)",
            file=str(version_dir),
        )
    paths = ["README.md", "manifest.json"] + [entry["path"] for entry in listed_files(manifest)]
    return [version_dir / p for p in paths]


def _retryable(exc: BaseException) -> bool:
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(exc, HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        return status is None or status == 429 or status >= 500
    # Network trouble is transient; a missing or unreadable local file is not.
    return isinstance(exc, (ConnectionError, TimeoutError))


def _with_retries(what: str, call, *, sleep=time.sleep):
    for attempt in range(1, RETRIES + 1):
        try:
            return call()
        except Exception as exc:  # classified below: only transient failures are retried
            if attempt == RETRIES or not _retryable(exc):
                raise HsaError(
                    f"{what} failed after {attempt} attempt(s): {type(exc).__name__}: {exc}"
                ) from exc
            sleep(2 ** (attempt - 1))


def push_version(
    version_dir: str | os.PathLike,
    repo_id: str,
    *,
    private: bool = False,
    dry_run: bool = False,
    allow_restricted_licenses: bool = False,
    api: Any = None,
    sleep=time.sleep,
) -> list[str]:
    """Create the dataset repo if needed and upload the version in one commit.

    Returns the operations as lines (``add data/train-00000-of-00001.parquet (123 bytes)``);
    with ``dry_run`` nothing is sent. ``api`` defaults to ``huggingface_hub.HfApi()``. A version
    whose rows carry a skill under a licence that is not open is refused, dry run included,
    unless ``allow_restricted_licenses`` (see :mod:`hsa.dataset.licenses`)."""
    root = Path(version_dir)
    if not _REPO_ID.match(repo_id):
        raise HsaError(f"--repo-id must look like ORG/NAME, got {repo_id!r}")
    manifest = read_manifest(root)
    if not manifest["counts"]["rows"]:
        # generate marks such a version FAILED and keeps it only to show its rejects
        raise HsaError(
            f"the version has no rows ({manifest['rejects']['rows']} rejects: see "
            f"rejects.parquet); nothing pushed",
            file=str(root),
        )
    closed = restricted(manifest.get("skill_licenses", {}))
    if closed and not allow_restricted_licenses:
        listed = "; ".join(f"{skill}: {license!r}" for skill, license in closed.items())
        raise HsaError(
            f"the rows carry {len(closed)} skill(s) whose licence is not an open one "
            f"({listed}); push only with the right to publish them, by passing "
            f"--allow-restricted-licences",
            file=str(root),
        )
    files = version_files(root, manifest)
    lines = [f"add {p.relative_to(root).as_posix()} ({p.stat().st_size} bytes)" for p in files]
    header = (
        f"create dataset repo {repo_id} ({'private' if private else 'public'}) if missing; "
        f"commit 'hsa {manifest['name']} {manifest['version']}' with {len(files)} files"
    )
    if dry_run:
        return [header] + lines
    from huggingface_hub import CommitOperationAdd, HfApi, get_token

    if api is None:
        if not get_token():
            raise HsaError("no Hugging Face token: set HF_TOKEN or run `hf auth login`")
        api = HfApi()
    operations = [
        CommitOperationAdd(path_in_repo=p.relative_to(root).as_posix(), path_or_fileobj=str(p))
        for p in files
    ]
    _with_retries(
        "creating the repository",
        lambda: api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True),
        sleep=sleep,
    )
    message = f"hsa {manifest['name']} {manifest['version']}"
    head = _with_retries(
        "reading the repository's head",
        lambda: api.repo_info(repo_id, repo_type="dataset").sha,
        sleep=sleep,
    )

    def commit():
        # A retry after a lost response must not commit twice. The commit names its parent, so
        # the Hub refuses it on top of anything else; and before each attempt, a head that has
        # moved is either our own earlier attempt (done) or someone else's push (stop).
        current = api.repo_info(repo_id, repo_type="dataset").sha
        if current != head:
            newest = api.list_repo_commits(repo_id, repo_type="dataset")[0]
            if newest.title == message:
                return None
            raise HsaError(
                f"{repo_id} changed while pushing (its head is now "
                f"{current[:12]}, {newest.title!r}); nothing of this version was "
                f"committed, push again"
            )
        return api.create_commit(
            repo_id,
            operations,
            repo_type="dataset",
            parent_commit=head,
            commit_message=message,
            commit_description=f"Dataset version {manifest['version']} made by hsa "
            f"{manifest['hsa_version']} (recipe {manifest['name']}, seed "
            f"{manifest['seed']}).",
        )

    _with_retries("the upload commit", commit, sleep=sleep)
    return [header] + lines
