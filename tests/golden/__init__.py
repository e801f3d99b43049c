"""Golden files: what each registered transform makes of fixed inputs, one file per version.

``tests/golden/<name>@<version>`` holds the sha256 of the transform's output on fixed episodes
(one of the shipped example and one of each test harness, chosen so that every family has work to
do) for a fixed seed: the harness, messages and gold of every variant, its identifier mapping and
its lineage (params), serialised in order (a new tool or property order is a new output).

tests/test_golden.py fails when a transform's output changed while its version did not, when a
transform has no golden file, and when a golden file names a version no transform has. After
changing a transform on purpose: bump its ``version``, then regenerate with

    python -m tests.golden --update

which writes the missing files and removes the stale ones. It refuses to rewrite a golden file
whose transform and inputs are unchanged but whose output differs (that is the version bump you
forgot); ``--force`` rewrites it anyway, for a change of this digest's own serialisation only.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import orjson

from hsa.augment.recipe import Recipe
from hsa.augment.registry import registered
from hsa.augment.variant import Variant
from hsa.dataset.pipeline import augment_episode
from hsa.example import EPISODES_PATH
from hsa.model.episode import Episode

GOLDEN_DIR = Path(__file__).resolve().parent
HARNESSES = GOLDEN_DIR.parent / "harnesses"
UPDATE = "python -m tests.golden --update"
SEED = 20261201
VARIANTS = 2
# One episode per harness, each loading a skill and calling tools; the example's also has a
# hook retry, which only hook_retry_policy rewrites.
INPUTS = {
    "example": (EPISODES_PATH, "lc-hook-retry-001"),
    "airline": (HARNESSES / "airline" / "episodes.jsonl", "air-change-001"),
    "coding": (HARNESSES / "coding" / "episodes.jsonl", "code-fix-001"),
    "finance": (HARNESSES / "finance" / "episodes.jsonl", "fin-transfer-001"),
}
# Transforms whose promise is to change nothing; every other one must change some input.
NO_OP = frozenset({"identity"})
_FILE = re.compile(r"^(?P<name>[a-z][a-z0-9_]*)@(?P<version>[^@/\s]+)$")


def _dumps(value) -> bytes:
    # Insertion order kept (no sorted keys): reordering is what some transforms do.
    return orjson.dumps(value)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_inputs() -> dict[str, Episode]:
    """The fixed input episodes by label (``example``, ``airline``...)."""
    episodes = {}
    for label, (path, episode_id) in INPUTS.items():
        for line in path.read_bytes().splitlines():
            data = orjson.loads(line) if line.strip() else None
            if isinstance(data, dict) and data.get("id") == episode_id:
                episodes[label] = Episode.from_dict(data, base_dir=path.parent, trust_hooks=True)
                break
        else:
            raise LookupError(
                f"golden input {episode_id!r} is no longer in {path}: choose another "
                f"episode in tests/golden/__init__.py (INPUTS), then {UPDATE}"
            )
    return episodes


def _episode_record(episode: Episode) -> dict:
    return {
        "harness": episode.harness.to_dict(),
        "messages": list(episode.messages),
        "gold": episode.gold.to_dict(),
    }


def inputs_digest(inputs: dict[str, Episode]) -> str:
    """What the golden outputs are made from: the input episodes, the seed and the variant count."""
    return _sha256(
        _dumps(
            {
                "seed": SEED,
                "variants": VARIANTS,
                "inputs": {label: _episode_record(e) for label, e in inputs.items()},
            }
        )
    )


@dataclass
class Golden:
    """One transform's output on the fixed inputs."""

    name: str
    version: str
    inputs: str  # inputs_digest
    digest: str  # over every output below
    outputs: dict[str, str]  # input label -> sha256 of its variants
    changed: dict[str, bool]  # input label -> whether some variant differs from the input
    rejects: list[str]

    @property
    def path(self) -> Path:
        return GOLDEN_DIR / f"{self.name}@{self.version}"

    def text(self) -> str:
        lines = [
            f"# Output of transform {self.name} version {self.version} on the fixed inputs "
            f"of tests/golden/__init__.py.",
            f"# Output changed on purpose? Bump the transform's version, then: {UPDATE}",
            f"transform: {self.name}",
            f"version: {self.version}",
            f"seed: {SEED}",
            f"variants per input: {VARIANTS}",
            f"inputs: {self.inputs}",
            f"digest: {self.digest}",
        ]
        lines += [
            f"output {label}: {digest}{'' if self.changed[label] else ' (unchanged)'}"
            for label, digest in self.outputs.items()
        ]
        return "\n".join(lines) + "\n"

    @classmethod
    def read(cls, path: Path) -> Golden:
        """A golden file's recorded values (its outputs and changes as far as it states them)."""
        match = _FILE.match(path.name)
        if match is None:
            raise ValueError(f"{path.name} is not named <transform>@<version>")
        fields, outputs, changed = {}, {}, {}
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("#") or ":" not in line:
                continue
            key, value = (part.strip() for part in line.split(":", 1))
            if key.startswith("output "):
                label = key.removeprefix("output ")
                outputs[label] = value.split()[0]
                changed[label] = not value.endswith("(unchanged)")
            else:
                fields[key] = value
        return cls(
            match["name"],
            match["version"],
            fields.get("inputs", ""),
            fields.get("digest", ""),
            outputs,
            changed,
            [],
        )


def compute(name: str, inputs: dict[str, Episode] | None = None) -> Golden:
    """Run transform ``name`` alone, with its default options, over the fixed inputs."""
    cls = registered()[name]
    inputs = load_inputs() if inputs is None else inputs
    recipe = Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": f"golden-{name}",
            "seed": SEED,
            "variants_per_episode": VARIANTS,
            "keep_original": False,
            "pipeline": [{name: {}}],
        }
    )
    outputs, changed, rejects, whole = {}, {}, [], hashlib.sha256()
    for label, episode in inputs.items():
        before = _dumps(_episode_record(episode))
        records, changed[label] = [], False
        for item in augment_episode(recipe, episode):
            if not isinstance(item, Variant):
                rejects.append(f"{label}: {item}")
                records.append({"variant": item.index, "reject": item.stage, "reason": item.reason})
                continue
            after = _episode_record(item.episode)
            changed[label] |= _dumps(after) != before
            records.append(
                {
                    "variant": item.index,
                    **after,
                    "mapping": item.mapping.to_dict(),
                    "lineage": [step.to_dict() for step in item.lineage],
                }
            )
        data = _dumps(records)
        outputs[label] = _sha256(data)
        whole.update(label.encode() + b"\0" + data)
    return Golden(
        name, cls.version, inputs_digest(inputs), whole.hexdigest(), outputs, changed, rejects
    )


def golden_files() -> dict[str, Path]:
    """``<name>@<version>`` -> path, for every golden file in the folder."""
    return {p.name: p for p in sorted(GOLDEN_DIR.iterdir()) if p.is_file() and _FILE.match(p.name)}


def update(*, force: bool = False) -> list[str]:
    """Write the missing golden files, remove the stale ones; say what was done. A golden file
    whose transform version and inputs are unchanged but whose output differs is not rewritten
    (the version must be bumped first) unless ``force``."""
    inputs = load_inputs()
    done, refused = [], []
    current = {f"{name}@{cls.version}": name for name, cls in registered().items()}
    for key, name in current.items():
        golden = compute(name, inputs)
        path = golden.path
        if path.is_file():
            recorded = Golden.read(path)
            if recorded.digest == golden.digest:
                if path.read_text(encoding="utf-8") != golden.text():
                    path.write_text(golden.text(), encoding="utf-8")
                    done.append(f"rewrote {key} (same digest)")
                continue
            if recorded.inputs == golden.inputs and not force:
                refused.append(key)
                continue
        path.write_text(golden.text(), encoding="utf-8")
        done.append(f"wrote {key}")
    for key, path in golden_files().items():
        if key not in current:
            path.unlink()
            done.append(f"removed stale {key}")
    if refused:
        raise SystemExit(
            "refused: the output of " + ", ".join(refused) + " changed but the version did not. "
            "Bump the version of each (the `version` of its class), then run " + UPDATE + " again "
            "(--force rewrites them as they are, for a change of the golden serialisation only)."
            + ("\nDone meanwhile: " + "; ".join(done) if done else "")
        )
    return done
