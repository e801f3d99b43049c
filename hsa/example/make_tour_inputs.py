"""Generate the inputs the README's tour reads, from the example episodes.

* ``chats.jsonl``: conversations in OpenAI / TRL format (``{"id", "messages", "tools"}`` per
  line), as ``hsa import openai`` reads them; the last line calls a tool its ``tools`` lack, so
  the import shows a reject.
* ``predictions.jsonl``: model answers for ``hsa score`` (``{"id", "at", "message"}`` per line),
  one per example episode judged at its first turn with tool calls: the recorded answer, except
  that every ninth answer has a wrong argument value and every ninth (another) answers in text
  instead of calling, and every twentieth episode has no prediction.

``python -m hsa.example.make_tour_inputs`` rewrites both files; ``--check`` exits 1 unless the
files on disk are what it would write. The output depends only on the example episodes and this
code.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

from hsa.example import CHATS_PATH, PREDICTIONS_PATH, load_example_episodes
from hsa.files.jsonl import dumps, write_jsonl
from hsa.model.hook import HOOK_MESSAGE_PREFIX

CHATS = 6  # conversations, taken from the first episodes of each category in turn


def build_chats() -> list[dict]:
    episodes = load_example_episodes()
    by_category: dict[str, list] = {}
    for episode in episodes:
        # A chat as an OpenAI export holds it: no feedback of hsa's hooks (named "hook.<hook>"),
        # which the import's harness, made of the chat's tools alone, could not know.
        if any(str(m.get("name", "")).startswith(HOOK_MESSAGE_PREFIX) for m in episode.messages):
            continue
        by_category.setdefault(episode.meta["category"], []).append(episode)
    chosen = []
    while len(chosen) < CHATS:
        for group in by_category.values():
            if group and len(chosen) < CHATS:
                chosen.append(group.pop(0))
    rows = [
        {"id": e.id, "messages": list(e.messages), "tools": e.harness.openai_tools()}
        for e in chosen
    ]
    broken = copy.deepcopy(rows[0])
    broken["id"] = f"{broken['id']}-without-its-tool"
    called = {c["function"]["name"] for m in broken["messages"] for c in m.get("tool_calls") or ()}
    broken["tools"] = [t for t in broken["tools"] if t["function"]["name"] not in called]
    return rows + [broken]


def _with_wrong_value(message: dict) -> dict:
    """The message with its first numeric argument off by one (or, without one, an argument
    dropped)."""
    message = copy.deepcopy(message)
    for call in message.get("tool_calls") or ():
        args = json.loads(call["function"]["arguments"])
        for key, value in args.items():
            if isinstance(value, int) and not isinstance(value, bool):
                args[key] = value + 1
                call["function"]["arguments"] = json.dumps(args, ensure_ascii=False)
                return message
    for call in message.get("tool_calls") or ():
        args = json.loads(call["function"]["arguments"])
        if args:
            args.pop(sorted(args)[0])
            call["function"]["arguments"] = json.dumps(args, ensure_ascii=False)
            return message
    return message


def build_predictions() -> list[dict]:
    predictions = []
    for i, episode in enumerate(load_example_episodes()):
        if i % 20 == 13:
            continue  # scored as missing
        turn = next((t for t in episode.gold.turns if t.calls), episode.gold.turns[0])
        message = dict(episode.messages[turn.at])
        if i % 9 == 4:
            message = _with_wrong_value(message)
        elif i % 9 == 7:
            message = {"role": "assistant", "content": "稍等，我查一下～"}
        predictions.append({"id": episode.id, "at": turn.at, "message": message})
    return predictions


def render(rows: list[dict]) -> bytes:
    return b"".join(dumps(r).encode() + b"\n" for r in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hsa.example.make_tour_inputs", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 unless the files are what this script would write",
    )
    args = parser.parse_args(argv)
    stale = 0
    for path, rows in ((CHATS_PATH, build_chats()), (PREDICTIONS_PATH, build_predictions())):
        data = render(rows)
        if args.check:
            if not path.is_file() or Path(path).read_bytes() != data:
                print(
                    f"{path} is stale: run python -m hsa.example.make_tour_inputs", file=sys.stderr
                )
                stale += 1
            continue
        write_jsonl(path, rows)
        print(f"wrote {len(rows)} lines to {path}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
