"""The runtime's commands: ``hsa rollout``, ``hsa serve`` and ``hsa chat`` (registered by hsa.cli).

Thin: the work is in hsa.rollout, hsa.runtime.serve and hsa.runtime; these functions parse options, call
them and print what happened.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from hsa.cli.console import err, out, print_reject_summary
from hsa.dataset.outcome import failure
from hsa.errors import HsaError
from hsa.runtime.conversation import DEFAULT_MAX_STEPS

runtime_app = typer.Typer()

TrustCode = Annotated[
    bool,
    typer.Option(
        "--trust-hooks",
        help="Allow the harness's hooks.py (and --tool-code) to be imported and run: "
        "they are code, read them first. Needed for a harness with hooks.",
    ),
]
BaseUrl = Annotated[
    str,
    typer.Option(
        help="The endpoint's OpenAI base URL, e.g. http://127.0.0.1:8000/v1 (hsa serve prints it)."
    ),
]
Model = Annotated[
    str,
    typer.Option(
        help="The model name to send; transformers serve accepts only the exact string it was "
        "started with."
    ),
]
ApiKeyEnv = Annotated[
    str,
    typer.Option(
        help="Environment variable holding the API key (read at call time, never written "
        "anywhere); local servers need none."
    ),
]
Temperature = Annotated[float, typer.Option(min=0.0, help="Sampling temperature (0: greedy).")]
MaxTokens = Annotated[int | None, typer.Option(min=1, help="Most tokens per model answer.")]
Seed = Annotated[
    int | None,
    typer.Option(
        help="Sampling seed; each request sends one derived from it, the conversation and the "
        "request, so reruns ask the same."
    ),
]
Stream = Annotated[
    bool, typer.Option("--stream", help="Stream answers (records time to first token).")
]
MaxSteps = Annotated[int, typer.Option(min=1, help="Most model requests per conversation.")]
Faults = Annotated[
    str | None,
    typer.Option(
        help="Inject tool faults, e.g. 'timeout=0.1,malformed=0.05,permission_denied=0.05' "
        "(probability per tool call; drawn per conversation and call, reproducibly)."
    ),
]
ToolCode = Annotated[
    Path | None,
    typer.Option(
        help="A tools.py whose functions implement tools (a function per tool name, or a TOOLS "
        "dict); asked before the replay of recorded results. Needs --trust-hooks."
    ),
]


def _endpoint(
    base_url, model, api_key_env, temperature, top_p, max_tokens, seed, stream, timeout, retries
):
    from hsa.runtime import Endpoint, Sampling

    return Endpoint(
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        sampling=Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed),
        timeout_s=timeout,
        max_retries=retries,
        stream=stream,
    )


def _faults(spec: str | None, seed: int, tools: list[str]):
    from hsa.runtime import FaultPlan

    return None if spec is None else FaultPlan.parse(spec, seed=seed, tools=tuple(tools))


# ---- rollout -------------------------------------------------------------------------------


@runtime_app.command()
def rollout(
    episodes: Annotated[
        Path,
        typer.Option(
            help="Episodes JSONL (their recorded tool results answer the teacher's calls)."
        ),
    ],
    base_url: BaseUrl,
    model: Model,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Output root; the version lands in OUT/NAME/VERSION/.")
    ],
    recipe: Annotated[
        str | None,
        typer.Option(
            help="Recipe whose variants are rolled out besides the originals (a file or a shipped name, e.g. hat-train). Without it: the originals only."
        ),
    ] = None,
    variants: Annotated[
        int | None, typer.Option(min=1, help="Variants per episode instead of the recipe's count.")
    ] = None,
    harness: Annotated[
        Path | None, typer.Option(help="Default harness folder for episodes that name none.")
    ] = None,
    harness_roots: Annotated[
        list[Path],
        typer.Option(
            "--harness-root",
            help="A folder that harness paths in episodes may lead into, besides the episodes file's own folder (repeatable).",
        ),
    ] = [],
    name: Annotated[
        str | None, typer.Option(help="Dataset name; default rollout-RECIPE (or rollout).")
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            min=1,
            help="Conversations in flight at once (transformers serve answers one request at a time anyway).",
        ),
    ] = 4,
    max_steps: MaxSteps = DEFAULT_MAX_STEPS,
    temperature: Temperature = 0.0,
    top_p: Annotated[float | None, typer.Option(min=0.0, max=1.0, help="Nucleus sampling.")] = None,
    max_tokens: MaxTokens = None,
    seed: Seed = None,
    stream: Stream = False,
    timeout: Annotated[
        float, typer.Option(min=0.001, help="Seconds per request before it counts as timed out.")
    ] = 120.0,
    retries: Annotated[
        int,
        typer.Option(
            min=0,
            help="Retries (exponential backoff) on 429, 5xx, timeouts and dropped connections.",
        ),
    ] = 4,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    faults: Faults = None,
    fault_seed: Annotated[int, typer.Option(help="Seed of the fault draws.")] = 0,
    fault_tool: Annotated[
        list[str], typer.Option(help="Only these tools get faults (original names); repeatable.")
    ] = [],
    tool_code: ToolCode = None,
    split: Annotated[str, typer.Option(help="Split name of the shards.")] = "train",
    license: Annotated[str, typer.Option(help="License id for the data card.")] = "other",
    max_reject_share: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Exit 1 when more than this share of the trajectories is discarded (the version is written all the same); a run that keeps none always exits 1.",
        ),
    ] = 0.5,
    trust_hooks: TrustCode = False,
) -> None:
    """A teacher model solves episodes under their original harness and the recipe's variants;
    trajectories whose judged steps all pass the scorer are kept as rows, the others are
    rejected with the reason.

    The output is a dataset version like `hsa generate`'s (rows, rejects, manifest, card) plus
    rollouts.parquet (every trajectory with its requests' latency and token counts); its kept
    rows train with `hsa train sft` unchanged. Tool calls are answered from the episodes'
    recorded results (an unrecorded call gets an error result), skills from the harness, and the
    harness's hooks run (--trust-hooks). Finished trajectories are journaled: after a kill, the
    same command resumes without redoing them and writes the same rows. The last line printed
    is the version's path; the exit status is 1 when no trajectory, or too few, were kept.

        hsa serve ./teacher --engine vllm --port 8000 &
        hsa rollout --episodes hsa/example/episodes.jsonl --recipe hat-train --variants 2 \\
            --base-url http://127.0.0.1:8000/v1 --model ./teacher --out out --trust-hooks
    """
    from hsa.augment.recipe import load_recipe
    from hsa.cli.progress import progress_bar
    from hsa.rollout import RolloutSettings, rollout_recipe
    from hsa.rollout import rollout as run_rollout

    parsed = None if recipe is None else rollout_recipe(load_recipe(recipe), variants)
    if parsed is None and variants is not None:
        raise HsaError("--variants needs --recipe (the variants come from a recipe)")
    settings = RolloutSettings(
        endpoint=_endpoint(
            base_url,
            model,
            api_key_env,
            temperature,
            top_p,
            max_tokens,
            seed,
            stream,
            timeout,
            retries,
        ),
        concurrency=concurrency,
        max_steps=max_steps,
        faults=_faults(faults, fault_seed, fault_tool),
        tool_code=None if tool_code is None else str(tool_code),
    )
    with progress_bar("rollout", total=None, unit="trajectories") as advance:

        def on_progress(done: int, total: int, kept: int) -> None:
            advance(done, kept, total)

        result = run_rollout(
            parsed,
            episodes,
            out_dir,
            settings=settings,
            harness=harness,
            name=name,
            split=split,
            trust_hooks=trust_hooks,
            license=license,
            harness_roots=tuple(harness_roots),
            on_progress=on_progress,
        )
    manifest = result.manifest
    summary = manifest["rollout"]
    counts = manifest["counts"]
    if result.reused:
        out.print(
            f"version {manifest['version']} already exists (same inputs and settings); "
            f"nothing to do"
        )
    elif result.repaired:
        out.print(f"version {manifest['version']} was damaged ({result.repaired[0]}); rebuilt it")
    elif result.resumed:
        out.print(f"resumed: {result.resumed} trajectories were already done (journal)")
    out.print(
        f"{counts['input_lines']} input lines -> {summary['trajectories']} trajectories: "
        f"{summary['kept']} kept, {summary['discarded']} discarded"
        + (
            f" ({', '.join(f'{k} {v}' for k, v in summary['discarded_by_stage'].items())})"
            if summary["discarded_by_stage"]
            else ""
        )
        + f"; {counts['load_rejects']} lines rejected on load, "
        f"{counts['variant_rejects'] - summary['discarded']} variants rejected",
        highlight=False,
    )
    requests = summary["requests"]
    e2e = requests["e2e_s"]
    if requests["requests"]:
        line = (
            f"{requests['requests']} requests ({requests['retries']} retries), "
            f"{requests['prompt_tokens']:,} prompt + {requests['completion_tokens']:,} "
            f"completion tokens; latency P50 {e2e['p50']:.3f} s, P95 {e2e['p95']:.3f} s"
        )
        if requests["ttft_s"]["n"]:
            line += f", TTFT P50 {requests['ttft_s']['p50']:.3f} s"
        out.print(line, highlight=False)
    # As generate judges a run: the trajectories kept against those discarded, and the input
    # lines rejected on load against the lines (a file that mostly does not load is no success,
    # whatever the few that loaded gave).
    why = failure(
        summary["kept"],
        summary["discarded"],
        what="trajectories kept",
        max_reject_share=max_reject_share,
        lines=(counts["load_rejects"], counts["input_lines"]),
    )
    rejected = counts["load_rejects"] + counts["variant_rejects"]
    if rejected:
        from hsa.dataset.card import top_rejects

        print_reject_summary(top_rejects(result.path, limit=10 if why else 5), rejected)
    print(result.path)
    if why:
        err.print(
            f"FAILED: {why} (reasons in {result.path / 'rejects.parquet'})",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(1)


# ---- serve ---------------------------------------------------------------------------------


@runtime_app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def serve(
    ctx: typer.Context,
    model: Annotated[str, typer.Argument(help="A model folder or hub id.")],
    engine: Annotated[
        str,
        typer.Option(
            help="vllm (GPU; tool calling with the family's parser, LoRA) or transformers (CPU)."
        ),
    ] = "vllm",
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    tool_call_parser: Annotated[
        str | None,
        typer.Option(
            help="vLLM tool-call parser; default from the model family (hermes for Qwen2.5/Qwen3, qwen3_coder for Qwen3-Coder, llama3_json, mistral)."
        ),
    ] = None,
    chat_template: Annotated[
        Path | None,
        typer.Option(
            help="vLLM: a chat template file, for a model whose own template cannot render tools."
        ),
    ] = None,
    lora: Annotated[
        list[str],
        typer.Option(
            help="vLLM: a LoRA adapter as NAME=PATH (repeatable); clients send NAME as the model to use it."
        ),
    ] = [],
    served_model_name: Annotated[
        str | None, typer.Option(help="vLLM: the name clients send instead of MODEL.")
    ] = None,
    timeout: Annotated[float, typer.Option(min=0.001, help="Seconds to wait for /health.")] = 600.0,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the command and what clients send; start nothing."),
    ] = False,
) -> None:
    """Serve a model behind an OpenAI-compatible API with tool calling on, wait until it is
    healthy, print the base URL and the model name clients must send, and stop it on Ctrl-C.
    Arguments after `--` go to the engine as they are.

    Engines' limits: `vllm` needs a GPU and vllm installed (`pip install 'hsa[vllm]'`, a GPU
    environment). `transformers` runs on a CPU but ignores `n`, `tool_choice`, `logprobs` and
    `response_format`, answers only to the exact model string it was started with, has no LoRA
    adapters, and generates one request at a time (pass `-- --continuous-batching` to batch).

        hsa serve Qwen/Qwen3-4B --lora hsa=out/sft/adapter --dry-run
        hsa serve ./tiny-model --engine transformers --port 8011
    """
    from hsa.runtime.serve import ServerProcess, ServeSpec, command, display, parse_lora

    spec = ServeSpec(
        model=model,
        engine=engine,
        host=host,
        port=port,
        tool_call_parser=tool_call_parser,
        chat_template=None if chat_template is None else str(chat_template),
        lora=parse_lora(lora),
        served_model_name=served_model_name,
        extra=tuple(ctx.args),
    )
    argv = command(spec, display=True)
    clients = ", ".join(repr(m) for m in spec.client_models)
    if dry_run:
        print(display(argv))
        out.print(f"base URL {spec.base_url}; clients send model {clients}", highlight=False)
        return
    server = ServerProcess(spec)
    out.print(f"starting: {display(argv)}", highlight=False)
    server.start()
    try:
        server.wait_healthy(timeout)
        out.print(
            f"ready: base URL {spec.base_url}; clients send model {clients} (Ctrl-C stops it)",
            highlight=False,
        )
        code = server.run_until_stopped()
    except KeyboardInterrupt:  # during the wait for /health
        code = None
    finally:
        status = server.stop()
    if code is not None:
        raise HsaError(f"the {engine} server exited with status {code}")
    out.print(f"stopped (status {status})")


# ---- chat ----------------------------------------------------------------------------------


@runtime_app.command()
def chat(
    harness: Annotated[
        Path, typer.Option(help="Harness folder (harness.yaml, skills/, tools/, hooks.py).")
    ],
    base_url: BaseUrl,
    model: Model,
    message: Annotated[
        list[str],
        typer.Option(
            help="A user message (repeatable: the turns of one conversation). Without it: read from the terminal, an empty line ends."
        ),
    ] = [],
    replay: Annotated[
        Path | None,
        typer.Option(
            help="Episodes JSONL whose recorded tool results answer the model's calls (matched by name and arguments)."
        ),
    ] = None,
    tool_code: ToolCode = None,
    max_steps: MaxSteps = DEFAULT_MAX_STEPS,
    temperature: Temperature = 0.0,
    max_tokens: MaxTokens = None,
    seed: Seed = None,
    stream: Stream = False,
    timeout: Annotated[float, typer.Option(min=0.001, help="Seconds per request.")] = 120.0,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    faults: Faults = None,
    trust_hooks: TrustCode = False,
) -> None:
    """Talk to a model under a harness: skill loads, tool calls, hook verdicts and timings are
    shown as they happen. Tools run by --tool-code (or the harness's own tools.py), then by the
    replay of recorded results (--replay); a call neither answers gets an error result.

    Exits 0 when every message got a reply the hooks accepted, 1 when the conversation ended
    otherwise (step limit, a hook error).

        hsa chat --harness hsa/example/harness --replay hsa/example/episodes.jsonl \\
            --base-url http://127.0.0.1:8000/v1 --model ./model --trust-hooks --message "3号链接多少钱？"
    """
    from hsa.model.episode import Episode, read_episodes
    from hsa.model.harness import load_harness
    from hsa.runtime import (
        ChatClient,
        CodeTools,
        Conversation,
        End,
        FaultInjector,
        ReplayTools,
        ToolBelt,
    )
    from hsa.runtime.records import DONE
    from hsa.runtime.tools import in_daemon_thread
    from hsa.runtime.transcript import Transcript

    loaded = load_harness(harness, trust_hooks=trust_hooks)
    executors = []
    code = tool_code if tool_code is not None else (harness / "tools.py")
    if tool_code is not None or code.is_file():
        executors.append(CodeTools.load(code, trust=trust_hooks))
    if replay is not None:
        read = list(read_episodes(replay, harness=loaded, trust_hooks=trust_hooks))
        recorded = [e for e in read if isinstance(e, Episode)]
        if not recorded:
            raise HsaError("no episode of the replay file loads", file=str(replay))
        skipped = [r for r in read if not isinstance(r, Episode)]
        if skipped:  # their recorded results answer nothing: said, not dropped in silence
            err.print(
                f"warning: {len(skipped)} line(s) of {replay} do not load, and their recorded "
                f"results are not replayed; first: {skipped[0]}",
                markup=False,
                highlight=False,
            )
        executors.append(ReplayTools.from_episodes(recorded, harness=loaded))
    tools = ToolBelt(*executors)
    plan = _faults(faults, 0, [])
    endpoint = _endpoint(
        base_url, model, api_key_env, temperature, None, max_tokens, seed, stream, timeout, 2
    )

    async def users():
        if message:
            for text in message:
                yield {"role": "user", "content": text}
            return
        while True:
            # A daemon thread: one blocked on stdin must not hold the process open after a
            # SIGTERM or the end of the run (the default executor's threads are joined).
            text = await in_daemon_thread(_read_line, {})
            if not text:
                return
            yield {"role": "user", "content": text}

    async def talk() -> str:
        async with ChatClient(endpoint) as client:
            await client.check_model()
            conversation = Conversation(
                loaded,
                client,
                tools if plan is None else FaultInjector(tools, plan),
                max_steps=max_steps,
            )
            status, transcript = DONE, Transcript()
            async for record in conversation.run(users()):
                for line in transcript.lines(record):
                    out.print(line, markup=False, highlight=False)
                if isinstance(record, End):
                    status = record.status
            return status

    if asyncio.run(talk()) != DONE:
        raise typer.Exit(1)


def _read_line() -> str:
    try:
        return input("you> ").strip() if sys.stdin.isatty() else sys.stdin.readline().strip()
    except EOFError:
        return ""
