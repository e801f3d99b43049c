"""Shared fixtures: a small harness folder written from scratch, and the BFCL data location."""

from __future__ import annotations

import json
import os
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

# The shared data lies beside the checkout (../shared), in development and in CI alike.
BFCL_DIR = Path(
    os.environ.get("HSA_BFCL_DIR")
    or Path(__file__).resolve().parents[2] / "shared" / "data" / "bfcl"
)
BFCL_FILES = [
    "BFCL_v4_simple_python.json",
    "BFCL_v4_multiple.json",
    "BFCL_v4_parallel.json",
    "BFCL_v4_live_simple.json",
    "BFCL_v4_irrelevance.json",
]


_SPLIT_GROUPS = pytest.StashKey[str]()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Fail the grouped tests of a run that would split the xdist groups: every test that
    imports torch carries the group "torch" so that one worker process builds the tiny models
    and serves them once. Under pytest 9.2 with xdist 3.8, ``--dist loadgroup`` stopped grouping
    without a word (xdist issue 1386: the group suffix it writes into the node id no longer
    takes), and the torch tests ran in both workers, session fixtures built twice. xdist marks a
    grouped test by its node id ending in ``@<group>``: a grouped test without it means grouping
    is off. (A worker that raised here would leave the controller an internal error that does
    not say why; a failed test does.)"""
    # Set in xdist workers under --dist loadgroup; absent without xdist (``pytest`` alone).
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        group = item.get_closest_marker("xdist_group")
        if group is not None and "@" not in item.nodeid:
            config.stash[_SPLIT_GROUPS] = (
                f"--dist loadgroup is not grouping tests ({item.nodeid} is in group "
                f"{group.args[0] if group.args else group.kwargs.get('name')!r} but its node "
                f"id has no @group suffix): check the pytest and pytest-xdist pins in "
                f"pyproject.toml"
            )
            return


def pytest_runtest_setup(item):
    why = item.config.stash.get(_SPLIT_GROUPS, None)
    if why is not None and item.get_closest_marker("xdist_group") is not None:
        pytest.fail(why, pytrace=False)


@pytest.fixture(scope="session")
def bfcl_data() -> Path:
    """The BFCL folder, for tests on real data: without it they fail with one clear message
    (never skip: a missing folder would silently drop that coverage)."""
    missing = [name for name in BFCL_FILES if not (BFCL_DIR / name).is_file()]
    if missing:
        pytest.fail(
            f"BFCL test data missing in {BFCL_DIR} ({len(missing)} files, e.g. "
            f"{missing[0]}): the tests read shared/data/bfcl beside the checkout, where "
            f"CI puts it; or set HSA_BFCL_DIR to the folder",
            pytrace=False,
        )
    return BFCL_DIR


PRICE_TOOL = {
    "type": "function",
    "function": {
        "name": "get_price",
        "description": "Price of a product by link number.",
        "parameters": {
            "type": "object",
            "properties": {
                "link": {"type": "integer", "minimum": 1, "description": "Link number"},
                "currency": {"type": "string", "enum": ["CNY", "USD"]},
            },
            "required": ["link"],
        },
    },
}
HISTORY_TOOL = {
    "type": "function",
    "function": {
        "name": "get_price_history",
        "description": "Past prices; unlike get_price it looks back.",
        "parameters": {
            "type": "object",
            "properties": {"link": {"type": "integer"}, "days": {"type": "number"}},
            "required": ["link"],
        },
    },
}
SKILL_MD = """---
name: price-reply
description: How to answer a price question.
metadata:
  kind: reply
allowed-tools: get_price
---

# Price reply
- Quote the price from `get_price`, never from memory.
"""
HOOKS_PY = '''"""Test hooks."""


def short_reply(payload, config):
    if len(payload.get("reply", "")) > config.get("max_chars", 100):
        return {"ok": False, "feedback": "too long"}
    return {"ok": True}
'''
HARNESS_YAML = """name: tiny-shop
version: "2"
description: A tiny shop harness for tests.
skill_kinds: [reply, strategy]
prompt:
  layout: markdown
  sections: [persona, skills, tools, hooks]
  text:
    persona: You are a shop assistant.
hooks:
  - name: reply_length
    event: reply
    function: short_reply
    description: Replies stay short.
    config: {max_chars: 50}
"""


def write_harness(
    root: Path,
    *,
    harness_yaml: str = HARNESS_YAML,
    skills: dict | None = None,
    tools: dict | None = None,
    hooks: str | None = HOOKS_PY,
) -> Path:
    """Write a harness folder; ``skills`` maps folder -> SKILL.md text, ``tools`` file -> object."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "harness.yaml").write_text(harness_yaml, encoding="utf-8")
    for folder, text in (skills if skills is not None else {"price-reply": SKILL_MD}).items():
        (root / "skills" / folder).mkdir(parents=True)
        (root / "skills" / folder / "SKILL.md").write_text(text, encoding="utf-8")
    tools = (
        tools if tools is not None else {"a_price.json": PRICE_TOOL, "b_history.json": HISTORY_TOOL}
    )
    if tools:
        (root / "tools").mkdir()
        for name, obj in tools.items():
            text = obj if isinstance(obj, str) else json.dumps(obj)
            (root / "tools" / name).write_text(text, encoding="utf-8")
    if hooks is not None:
        (root / "hooks.py").write_text(hooks, encoding="utf-8")
    return root


@pytest.fixture
def harness_dir(tmp_path: Path) -> Path:
    return write_harness(tmp_path / "tiny-shop")


def call(name: str, args: dict, call_id: str = "c1") -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def assistant(*calls: dict, content: str | None = None) -> dict:
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def one_transform_recipe(name: str, seed: int = 1, variants: int = 1, **options):
    """A recipe of the one transform ``name`` (with ``options``), originals not kept."""
    from hsa.augment.recipe import Recipe

    return Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": f"t-{name}",
            "seed": seed,
            "variants_per_episode": variants,
            "keep_original": False,
            "pipeline": [{name: options}],
        }
    )


def variant_of(name: str, episode, seed: int = 1, **options):
    """The first variant of ``episode`` under the one transform ``name``; fails on a reject."""
    from hsa.augment.variant import Variant
    from hsa.dataset.pipeline import augment_episode

    out = augment_episode(one_transform_recipe(name, seed, **options), episode)[0]
    assert isinstance(out, Variant), str(out)
    return out


# Hypothesis budgets: "ci" for make test; HSA_HYPOTHESIS_PROFILE=deep for a long bug hunt.
# "ci" draws the same examples on every run (derandomize: seeded from each test), so a clean
# clone's `make test` here is what CI runs, and CI never goes red on a draw no one has seen;
# "deep" draws new examples each run to find such cases, and a case found becomes an @example.
@contextmanager
def served(handler):
    """``handler`` (a BaseHTTPRequestHandler class) on 127.0.0.1 in a thread: its /v1 base URL."""
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci",
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile(
    "deep",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HSA_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def private_registry(monkeypatch):
    """Transforms a test registers stay out of the registry the rest of the session sees."""
    import hsa.augment.registry as registry

    registry.registered()  # the built-in families first, into the real registry
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
