"""The languages a version's card names: those its rows' gold states, never a default."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
import yaml

from hsa.augment.recipe import Recipe
from hsa.cli import main
from hsa.dataset.card import card_text
from hsa.dataset.generate import generate
from hsa.dataset.row_shape import gold_languages
from hsa.example import EPISODES_PATH, HARNESS_DIR

RECIPE = Recipe.from_dict(
    {
        "recipe_version": 1,
        "name": "lang",
        "seed": 1,
        "variants_per_episode": 1,
        "keep_original": True,
        "pipeline": [{"skill_id_mask": {}}],
    }
)


def example_episodes(languages: tuple[str, ...], *, per_language: int = 3) -> list[dict]:
    """The first ``per_language`` example episodes in each of ``languages`` (``meta.language``,
    which the example's gold states as ``reply.language`` too)."""
    picked: list[dict] = []
    for line in EPISODES_PATH.read_text(encoding="utf-8").splitlines():
        episode = json.loads(line)
        language = episode["meta"]["language"]
        if (
            language in languages
            and [e["meta"]["language"] for e in picked].count(language) < per_language
        ):
            picked.append(episode)
    assert {e["meta"]["language"] for e in picked} == set(languages)
    return picked


def unstated(episode: dict) -> dict:
    """``episode`` with no language stated anywhere: neither in its meta nor in its gold."""
    episode = json.loads(json.dumps(episode))
    episode["meta"].pop("language")
    gold = episode["gold"]
    for turn in gold.get("turns", [gold]):
        turn.get("reply", {}).pop("language", None)
    return episode


def version_of(tmp_path: Path, episodes: list[dict]) -> Path:
    """A version of ``episodes`` under a copy of the example harness."""
    shutil.copytree(HARNESS_DIR, tmp_path / "harness")
    source = tmp_path / "episodes.jsonl"
    source.write_text(
        "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in episodes), encoding="utf-8"
    )
    made = generate(RECIPE, source, tmp_path / "out", trust_hooks=True)
    assert made.manifest["counts"]["rows"] == 2 * len(episodes)
    return made.path


def front_matter(version: Path) -> dict:
    _, front, _ = (version / "README.md").read_text(encoding="utf-8").split("---\n", 2)
    return yaml.safe_load(front)


@pytest.mark.parametrize(
    ("languages", "expected"),
    [
        (("en",), ["en"]),  # an English-only dataset is not indexed as Chinese too
        (("zh",), ["zh"]),
        (("zh", "en"), ["en", "zh"]),  # sorted
    ],
    ids=["en", "zh", "en+zh"],
)
def test_the_card_names_the_languages_the_gold_states(tmp_path, languages, expected):
    version = version_of(tmp_path, example_episodes(languages))
    assert front_matter(version)["language"] == expected
    # hsa card, which reads everything from the version's files, writes the same card
    written = (version / "README.md").read_text(encoding="utf-8")
    assert main(["card", str(version)]) == 0
    assert (version / "README.md").read_text(encoding="utf-8") == written


def test_a_card_names_no_language_when_the_data_states_none(tmp_path):
    # no guess: the key is left out (the Hub shows no language rather than a wrong one)
    episodes = [unstated(e) for e in example_episodes(("en", "zh"))]
    version = version_of(tmp_path, episodes)
    meta = front_matter(version)
    assert "language" not in meta
    assert meta["task_categories"] == ["text-generation"] and meta["pretty_name"]
    assert card_text(version) == (version / "README.md").read_text(encoding="utf-8")


def gold_column(*golds: dict | None) -> pa.Array:
    """An ``hsa_gold`` column as the rows hold it (orjson's JSON, Arrow's JSON type)."""
    text = pa.array([None if g is None else orjson.dumps(g).decode() for g in golds], pa.string())
    return pa.ExtensionArray.from_storage(pa.json_(), text)


def test_only_a_reply_constraint_states_a_language():
    def call(arguments: dict) -> dict:
        return {"at": 1, "calls": [{"name": "search", "arguments": arguments}]}

    # a tool parameter named language, its values (objects included), and reply text that
    # reads like JSON are no stated language
    not_stated = [
        call({"language": ["en", "zh"]}),
        call({"filter": [{"language": "en"}, {"reply": {"language": "zh"}, "x": 1}]}),
        {"at": 3, "no_call": True, "reply": {"contains": ['"language":"en"', "{", '"reply":{']}},
        {"at": 3, "no_call": True, "reply": {"max_chars": 80}},
        None,
    ]
    assert gold_languages(gold_column(*not_stated)) == set()
    assert gold_languages(pa.chunked_array([gold_column(*not_stated)])) == set()
    # any turn's reply, whatever key comes first, in the flat or the turns form
    stated = {
        "turns": [
            call({"language": ["de"]}),
            {
                "at": 3,
                "no_call": True,
                "reply": {"contains": ['say "hi" {', "\\"], "max_chars": 9, "language": "zh"},
            },
            {"at": 5, "no_call": True, "reply": {"language": "en", "contains": ["ok"]}},
        ]
    }
    assert gold_languages(gold_column(*not_stated, stated)) == {"en", "zh"}
    flat = {"at": 3, "no_call": True, "reply": {"not_contains": ["x"], "language": "en"}}
    assert gold_languages(gold_column(flat)) == {"en"}
    assert gold_languages(gold_column(flat), among=("zh",)) == set()
