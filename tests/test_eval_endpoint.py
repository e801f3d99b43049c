"""``hsa eval`` and ``hsa score`` are honest about a failing endpoint and about empty or ambiguous
input: a wrong model stops before any request, a run in which no request got an answer exits 1
and says so, a rerun asks the failed requests again, and a reply that is no chat completion is
one clear error.

The endpoint is tests/openai_stub.py's scripted server (a boundary stand-in: its replies are
planned, so which requests fail is known in advance); the real-model path is in test_eval.py.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from conftest import PRICE_TOOL, assistant, call, served, write_harness
from openai_stub import ScriptedServer, status, text

from hsa.cli import main
from hsa.eval.journal import PREDICTIONS_FILE

MODEL = "scripted-model"


def episodes_file(root: Path, n: int = 3) -> Path:
    """``n`` price questions under a one-tool harness (one judged call turn each)."""
    write_harness(root / "shop", tools={"a_price.json": PRICE_TOOL})
    lines = []
    for link in range(1, n + 1):
        lines.append(
            json.dumps(
                {
                    "id": f"q{link}",
                    "harness": "shop",
                    "messages": [
                        {"role": "user", "content": f"How much is link {link}?"},
                        assistant(call("get_price", {"link": link})),
                    ],
                    "gold": {
                        "turns": [
                            {
                                "at": 1,
                                "calls": [
                                    {
                                        "name": "get_price",
                                        "arguments": {"link": [link]},
                                        "omittable": ["currency"],
                                    }
                                ],
                            }
                        ]
                    },
                }
            )
        )
    path = root / "episodes.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def eval_args(episodes: Path, out: Path, base_url: str, model: str = MODEL) -> list[str]:
    return [
        "eval",
        "--episodes",
        str(episodes),
        "--recipe",
        "hat-heldout",
        "--variants",
        "1",
        "--families",
        "none",
        "--base-url",
        base_url,
        "--model",
        model,
        "--max-retries",
        "0",
        "--out",
        str(out),
        "--datasets-dir",
        str(out.parent / "datasets"),
    ]


def test_a_wrong_model_stops_before_any_request(tmp_path, capsys):
    episodes = episodes_file(tmp_path)
    with ScriptedServer(lambda rid, body: text("fine"), model=MODEL) as server:
        code = main(eval_args(episodes, tmp_path / "report", server.base_url, model="wrong"))
        assert code == 2
        assert server.seen == []  # not one prompt was sent
    err = capsys.readouterr().err
    assert "does not serve model 'wrong'" in err and MODEL in err
    assert "rerun" not in err  # nothing to resume: the settings are wrong
    assert not (tmp_path / "report" / "report.json").exists()


def test_a_base_url_without_its_api_root_stops_at_the_first_404(tmp_path, capsys):
    """Without "/v1", every request got a 404: every item was asked, a 0% report written, and
    the run said to rerun. A 404 is the settings' (as a refused key is): the run stops, says
    what to fix, and writes no report."""
    episodes = episodes_file(tmp_path)
    with ScriptedServer(lambda rid, body: text("fine"), model=MODEL) as server:
        root = server.base_url.removesuffix("/v1")
        code = main(eval_args(episodes, tmp_path / "report", root))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "ends in /v1" in err and "rerun the same command" not in err
    assert not (tmp_path / "report" / "report.json").exists()


def test_a_run_without_one_answer_exits_1_and_a_rerun_asks_again(tmp_path, capsys):
    episodes = episodes_file(tmp_path)
    out = tmp_path / "report"
    with ScriptedServer(lambda rid, body: status(500), model=MODEL) as server:
        assert main(eval_args(episodes, out, server.base_url)) == 1
        failed = len(server.seen)
    assert failed >= 3  # the originals and their variants, each refused
    err = capsys.readouterr().err
    assert f"{failed} of {failed} requests got no answer" in err
    report = json.loads((out / "report.json").read_text())
    assert len(report["no_answer"]) == failed

    # The server recovers: the rerun asks every failed request again, and they count.
    with ScriptedServer(lambda rid, body: text("It is 100."), model=MODEL) as server:
        assert main(eval_args(episodes, out, server.base_url)) == 0
        assert len(server.seen) == failed
    report = json.loads((out / "report.json").read_text())
    assert report["no_answer"] == []
    assert {r["rule"] for r in report["results"]} != {"no_answer"}
    # The journal keeps both lines of each request; the newer one is the answer.
    assert len((out / PREDICTIONS_FILE).read_text().splitlines()) > 2 * failed
    assert "got no answer" not in capsys.readouterr().err

    # Answered now: a third run asks nothing.
    with ScriptedServer(lambda rid, body: status(500), model=MODEL) as server:
        assert main(eval_args(episodes, out, server.base_url)) == 0
        assert server.seen == []


class _NotJson(BaseHTTPRequestHandler):
    """Answers every chat request with HTTP 200 and a body that is no JSON (a proxy's page)."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self._reply(b'{"object": "list", "data": []}', "application/json")

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._reply(b"<html>gateway says hello</html>", "text/html")

    def _reply(self, body: bytes, kind: str):
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def not_json_url():
    with served(_NotJson) as url:
        yield url


def test_a_reply_that_is_no_chat_completion_is_one_clear_error(tmp_path, capsys, not_json_url):
    episodes = episodes_file(tmp_path)
    assert main(eval_args(episodes, tmp_path / "report", not_json_url)) == 2
    err = capsys.readouterr().err
    assert "unusable answer" in err and "not a chat completion" in err and "gateway" in err
    assert "bug in hsa" not in err


@pytest.mark.parametrize(
    "body, kind, says",
    [
        (b"[1, 2]", "application/json", "not a chat completion"),
        (b"null", "application/json", "not a chat completion"),
        (b'{"choices": "x"}', "application/json", "not a chat completion"),
        (b'{"choices": [{"message": null}]}', "application/json", "its choice has no message"),
        (b"<html>proxy</html>", "application/json", "not JSON"),
        (b'{"choices": [{"message": "hi"}]}', "application/json", "its message is no message"),
        (b'{"choices": [{"message": {"content": 5}}]}', "application/json", "content is no text"),
        (
            b'{"choices": [{"message": {"content": "x", "tool_calls": "bad"}}]}',
            "application/json",
            "tool_calls are no list",
        ),
    ],
)
def test_a_reply_of_another_shape_is_one_clear_error(body, kind, says):
    """Whatever a 200 reply holds, the client either reads a chat completion from it or says
    why it cannot (an EndpointError, never an AttributeError from the answer's insides)."""
    import asyncio

    from hsa.runtime.endpoint import ChatClient, Endpoint, EndpointError

    class Reply(_NotJson):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._reply(body, kind)

    async def ask(url: str):
        async with ChatClient(Endpoint(url, MODEL, max_retries=0)) as client:
            return await client.complete([{"role": "user", "content": "hi"}], [])

    with served(Reply) as url, pytest.raises(EndpointError, match=f"unusable answer .*{says}"):
        asyncio.run(ask(url))


def test_nothing_to_judge_is_no_success(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with ScriptedServer(lambda rid, body: text("fine"), model=MODEL) as server:
        assert main(eval_args(empty, tmp_path / "report", server.base_url)) == 2
    assert "nothing to judge" in capsys.readouterr().err
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("")
    assert main(["score", "--episodes", str(empty), "--predictions", str(predictions)]) == 2
    assert "nothing to score" in capsys.readouterr().err


def test_score_refuses_an_id_on_two_lines(tmp_path, capsys):
    episodes = episodes_file(tmp_path)
    lines = episodes.read_text().splitlines()
    episodes.write_text("\n".join([lines[0], lines[1], lines[0]]) + "\n")
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(
        json.dumps({"id": "q1", "message": assistant(call("get_price", {"link": 1}))}) + "\n"
    )
    assert main(["score", "--episodes", str(episodes), "--predictions", str(predictions)]) == 2
    assert "episode id 'q1' is on lines 1, 3" in capsys.readouterr().err


def test_a_damaged_version_and_a_zero_limit_are_refused_before_any_work(tmp_path, capsys):
    from hsa.augment.recipe import load_recipe
    from hsa.dataset.generate import generate

    episodes = episodes_file(tmp_path)
    made = generate(load_recipe("hat-heldout"), episodes, tmp_path / "versions")
    shard = next((made.path / "data").iterdir())
    shard.write_bytes(shard.read_bytes()[:-8])
    with ScriptedServer(lambda rid, body: text("fine"), model=MODEL) as server:
        args = ["eval", "--dataset", str(made.path), "--base-url", server.base_url]
        args += ["--model", MODEL, "--out", str(tmp_path / "report")]
        assert main(args) == 2
        assert server.seen == []
    assert "files do not match its manifest" in capsys.readouterr().err
    limited = eval_args(episodes, tmp_path / "limited", "http://127.0.0.1:9/v1") + ["--limit", "0"]
    assert main(limited) == 2
    assert not (tmp_path / "datasets").exists()  # no variants generated first


def test_episode_lines_left_out_are_said_on_the_terminal_and_in_the_report(tmp_path, capsys):
    """A line that does not load, or repeats an id, is not evaluated; the run says how many of
    the file's lines that is and names the first, so the report never passes for one on the
    whole file (the count was in report.json alone)."""
    episodes = episodes_file(tmp_path)
    q1, q2, q3 = episodes.read_text().splitlines()
    episodes.write_text("\n".join([q1, q2, q1, "", "{not json", q3]) + "\n")
    out = tmp_path / "report"
    with ScriptedServer(lambda rid, body: text("It is 100."), model=MODEL) as server:
        assert main(eval_args(episodes, out, server.base_url)) == 0
    first = (
        f"{episodes}:3 id=q1 id: duplicate episode id; line 1 has it (ids must be unique, "
        "they key each variant's randomness)"
    )
    note = f"2 of 5 episode lines did not load (first: {first}); they are not evaluated."
    assert note in capsys.readouterr().err
    assert note.replace(first, f"`{first}`") in (out / "report.md").read_text()
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["inputs"]["source_rejects"] == 2
    assert report["run"]["episodes"] == 3  # what is judged is unchanged: q1 (line 1), q2, q3


def test_fewer_than_one_bootstrap_resample_is_refused_before_any_work(tmp_path, capsys):
    episodes = episodes_file(tmp_path)
    for resamples in ("0", "-5"):
        args = eval_args(episodes, tmp_path / "r", "http://127.0.0.1:9/v1")
        assert main([*args, "--resamples", resamples]) == 2
        assert "Invalid value for '--resamples'" in capsys.readouterr().err
    assert not (tmp_path / "datasets").exists()  # no variants generated first


def test_ctrl_c_says_what_is_kept_and_exits_130(tmp_path):
    """typer turns Ctrl-C into a silent exit 130; the user is told what survives and how to go
    on (a real SIGINT to a real process)."""
    import signal
    import subprocess
    import sys
    import time

    episodes = episodes_file(tmp_path)
    with ScriptedServer(lambda rid, body: text("slow", delay_s=30), model=MODEL) as server:
        run = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hsa.cli",
                *eval_args(episodes, tmp_path / "r", server.base_url),
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while not server.seen and time.monotonic() < deadline:  # asking: variants are made
            time.sleep(0.1)
        assert server.seen
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
    assert run.returncode == 130
    assert "interrupted: nothing half-written is published" in err
    assert "the same command resumes" in err
