"""Properties of the model and the scorer, over generated harnesses and episodes."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsa.model.episode import Episode
from hsa.model.harness import Harness, load_harness, save_harness
from hsa.model.scorer import score_turn
from hsa.model.skill import Skill
from tests.strategies import episodes_dicts, harnesses, skills

SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(harnesses())
def test_harness_dict_round_trip(harness):
    assert Harness.from_dict(json.loads(json.dumps(harness.to_dict()))) == harness


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(harnesses())
def test_harness_folder_round_trip(tmp_path_factory, harness):
    folder = tmp_path_factory.mktemp("h")
    assert load_harness(save_harness(harness, folder / "h")) == harness


@SETTINGS
@given(skills())
def test_skill_markdown_round_trip(skill):
    text = skill.to_markdown()
    assert Skill.from_markdown(text, folder=skill.id, file="SKILL.md") == skill


@SETTINGS
@given(episodes_dicts())
def test_episode_round_trip(row):
    episode = Episode.from_dict(row)
    assert Episode.from_dict(json.loads(json.dumps(episode.to_dict()))) == episode


def _message(calls):
    return {
        "role": "assistant",
        "content": None if calls else "No tool fits this request.",
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": args}}
            for i, (name, args) in enumerate(calls)
        ]
        or None,
    }


@SETTINGS
@given(episodes_dicts(), st.randoms(use_true_random=False))
def test_correct_answer_scores_in_any_order(row, rnd):
    episode = Episode.from_dict(row)
    turn = episode.gold.turn()
    calls = [(c.name, args) for c, args in zip(turn.calls, row["meta"]["arguments"])]
    rnd.shuffle(calls)
    message = _message(calls)
    if message["tool_calls"] is None:
        del message["tool_calls"]
    verdict = score_turn(message, turn, episode.harness)
    assert verdict.correct, verdict.reason


@SETTINGS
@given(episodes_dicts())
def test_dropping_a_call_or_calling_on_irrelevance_fails(row):
    episode = Episode.from_dict(row)
    turn = episode.gold.turn()
    calls = [(c.name, args) for c, args in zip(turn.calls, row["meta"]["arguments"])]
    if calls:
        message = _message(calls[1:])
        if message["tool_calls"] is None:
            del message["tool_calls"]
        assert score_turn(message, turn, episode.harness).rule == "wrong_call_count"
    else:
        tool = episode.harness.tools[0]
        message = _message([(tool.name, "{}")])
        assert score_turn(message, turn, episode.harness).rule == "unexpected_call"
