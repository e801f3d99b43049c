"""``hsa serve``: start an OpenAI-compatible model server for the runtime, with tool calling on.

Two engines:

* ``vllm`` (a GPU environment: ``pip install 'hsa[vllm]'``): ``vllm serve MODEL
  --enable-auto-tool-choice --tool-call-parser P`` (both are needed for tool calls to come back
  parsed), with the parser of the model's family (:data:`TOOL_CALL_PARSERS`), a chat template
  when given, and LoRA adapters as ``--enable-lora --lora-modules NAME=PATH`` (with
  ``--max-lora-rank`` raised to the adapters' rank when a local adapter says it is above vLLM's
  default). Clients send the model name, or an adapter's name to use that adapter.
* ``transformers`` (CPU): ``transformers serve MODEL``, pinned to that model: clients must send
  exactly the string it was started with. It ignores ``n``, ``tool_choice``, ``logprobs`` and
  ``response_format`` (with a warning), has no LoRA adapters, and without
  ``--continuous-batching`` generates one request at a time.

:class:`ServerProcess` starts the command, waits until ``GET /health`` answers, and stops it
(SIGINT, then SIGTERM, then SIGKILL) on Ctrl-C or SIGTERM; a server whose ``hsa serve`` dies
anyway (SIGKILL) is sent SIGTERM by the kernel (Linux).
"""

from __future__ import annotations

import ctypes
import importlib.util
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from hsa.errors import HsaError
from hsa.files.paths import missing_local

ENGINES = ("vllm", "transformers")
ENGINE_LIMITS = {
    "vllm": "needs a GPU and vllm installed (pip install 'hsa[vllm]'); tool calls are parsed by "
    "--tool-call-parser, so the parser must match the model family",
    "transformers": "CPU; ignores n, tool_choice, logprobs and response_format; answers only to "
    "the exact model string it was started with; no LoRA adapters; one request "
    "at a time unless --continuous-batching is passed through",
}
# vLLM tool-call parsers by model family: (substring of the model name or model_type, parser),
# first match wins. Qwen2.5 and Qwen3 write Hermes-style <tool_call> JSON; Qwen3-Coder writes XML.
TOOL_CALL_PARSERS: tuple[tuple[str, str], ...] = (
    ("qwen3-coder", "qwen3_coder"),
    ("qwen3_coder", "qwen3_coder"),
    ("qwen3", "hermes"),
    ("qwen2", "hermes"),
    ("hermes", "hermes"),
    ("llama-3", "llama3_json"),
    ("llama3", "llama3_json"),
    ("mistral", "mistral"),
)
VLLM_DEFAULT_MAX_LORA_RANK = 16
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
ENGINE_MODULES = {"vllm": ("vllm",), "transformers": ("transformers", "fastapi", "uvicorn")}
ENGINE_INSTALL = {
    "vllm": "vllm is not installed: it needs a GPU, pip install 'hsa[vllm]' there",
    "transformers": "pip install 'hsa[train]' (transformers[serving])",
}


@dataclass(frozen=True)
class ServeSpec:
    """What to serve, where, and how."""

    model: str
    engine: str = "vllm"
    host: str = "127.0.0.1"
    port: int = 8000
    tool_call_parser: str | None = None  # vllm; None: from the model family
    chat_template: str | None = None  # vllm: a Jinja file for models without a usable one
    lora: tuple[tuple[str, str], ...] = ()  # vllm: (name, adapter path)
    served_model_name: str | None = None  # vllm
    extra: tuple[str, ...] = ()  # passed to the engine as they are

    @property
    def base_url(self) -> str:
        """Where a client on this machine reaches the server (a wildcard address listens on
        every interface, the loopback one included)."""
        host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        if ":" in host:  # an IPv6 address is bracketed in a URL
            host = f"[{host}]"
        return f"http://{host}:{self.port}/v1"

    @property
    def client_models(self) -> list[str]:
        """The model names clients may send: the model (or its served name), then adapters."""
        if self.engine == "transformers":
            return [self.model]
        return [self.served_model_name or self.model] + [name for name, _ in self.lora]


def _family_text(model: str) -> str:
    """The model's name, plus its config's model_type and architectures when it is a folder."""
    text = model.lower()
    config = Path(model) / "config.json"
    if config.is_file():
        try:
            data = json.loads(config.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        text += " " + str(data.get("model_type", "")).lower()
        text += " " + " ".join(map(str, data.get("architectures") or [])).lower()
        text += " " + str(data.get("_name_or_path", "")).lower()
    return text


def tool_call_parser(model: str) -> str:
    """vLLM's tool-call parser for ``model`` (a hub id or a local folder)."""
    text = _family_text(model)
    for needle, parser in TOOL_CALL_PARSERS:
        if needle in text:
            return parser
    raise HsaError(
        f"cannot tell the tool-call format of {model!r}; pass --tool-call-parser "
        f"(e.g. hermes for Qwen2.5/Qwen3, qwen3_coder for Qwen3-Coder, llama3_json, "
        f"mistral; `vllm serve --help` lists them)"
    )


def _lora_rank(path: str) -> int | None:
    config = Path(path) / "adapter_config.json"
    try:
        return int(json.loads(config.read_text(encoding="utf-8"))["r"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _executable(name: str, module: str) -> list[str]:
    """The engine's console script beside this interpreter, on PATH, or ``python -m``."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return [str(beside)]
    found = shutil.which(name)
    return [found] if found else [sys.executable, "-m", module]


def command(spec: ServeSpec, *, display: bool = False) -> list[str]:
    """The command line that starts ``spec``; ``display`` names the engine plainly (dry runs)."""
    if spec.engine not in ENGINES:
        raise HsaError(f"unknown engine {spec.engine!r}; choose one of {', '.join(ENGINES)}")
    _check(spec)
    if spec.engine == "transformers":
        for what, value, instead in (
            ("LoRA adapters", spec.lora, ", or merge the adapter into the model first"),
            ("--tool-call-parser", spec.tool_call_parser, ""),
            ("--chat-template", spec.chat_template, ""),
            ("--served-model-name", spec.served_model_name, ""),
        ):
            if value is not None and value != ():
                raise HsaError(
                    f"{what}: transformers serve has no such option (it parses tool "
                    f"calls with the tokenizer's response template and serves the "
                    f"model under the name given); use --engine vllm{instead}"
                )
        head = (
            ["transformers"]
            if display
            else _executable("transformers", "transformers.cli.transformers")
        )
        return [
            *head,
            "serve",
            spec.model,
            "--host",
            spec.host,
            "--port",
            str(spec.port),
            *spec.extra,
        ]
    head = ["vllm"] if display else _executable("vllm", "vllm.entrypoints.cli.main")
    argv = [
        *head,
        "serve",
        spec.model,
        "--host",
        spec.host,
        "--port",
        str(spec.port),
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        spec.tool_call_parser or tool_call_parser(spec.model),
    ]
    if spec.served_model_name:
        argv += ["--served-model-name", spec.served_model_name]
    if spec.chat_template:
        if not Path(spec.chat_template).is_file():
            raise HsaError("chat template file does not exist", file=spec.chat_template)
        argv += ["--chat-template", spec.chat_template]
    if spec.lora:
        argv += ["--enable-lora", "--lora-modules", *(f"{name}={path}" for name, path in spec.lora)]
        ranks = [r for r in (_lora_rank(path) for _, path in spec.lora) if r is not None]
        if ranks and max(ranks) > VLLM_DEFAULT_MAX_LORA_RANK:
            argv += ["--max-lora-rank", str(max(ranks))]
    return argv + list(spec.extra)


# Options hsa serve sets itself and prints (the base URL, the names clients send): passed through
# after "--" they would be silently overridden, or override what was printed.
_OWN_OPTIONS = {
    "--host": "--host",
    "--port": "--port",
    "--served-model-name": "--served-model-name",
    "--lora-modules": "--lora",
    "--tool-call-parser": "--tool-call-parser",
    "--chat-template": "--chat-template",
}
_HOST_NAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)


def _is_host(host: str) -> bool:
    """A host name or an IP address (IPv6 unbracketed, as ``--host`` takes it)."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(_HOST_NAME.fullmatch(host))


def _check(spec: ServeSpec) -> None:
    """Refuse what would serve somewhere or under names other than those printed."""
    if not 1 <= spec.port <= 65535:
        raise HsaError(f"--port must be from 1 to 65535, got {spec.port}")
    if not _is_host(spec.host):
        raise HsaError(f"--host must be a host name or an IP address, got {spec.host!r}")
    for arg in spec.extra:
        option = arg.split("=", 1)[0]
        if option.startswith("--"):  # argparse takes --served_model_name for the dash spelling
            option = "--" + option[2:].replace("_", "-")
        if option in _OWN_OPTIONS:
            raise HsaError(
                f"{option} after --: give it as hsa serve's own {_OWN_OPTIONS[option]}, so "
                f"that the base URL and the model names it prints are the ones served"
            )
    if spec.served_model_name is not None and not spec.served_model_name.strip():
        raise HsaError("--served-model-name must not be empty")
    names = spec.client_models
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise HsaError(
            f"the names clients send must differ: {', '.join(map(repr, repeated))} names two "
            f"models (the model's served name and LoRA adapters)"
        )
    for name, path in spec.lora:
        if missing_local(path):  # any other path may be a Hub adapter id
            raise HsaError(f"--lora {name}: the adapter folder does not exist", file=path)


def parse_lora(values: list[str]) -> tuple[tuple[str, str], ...]:
    """``NAME=PATH`` pairs (the form ``--lora-modules`` takes)."""
    out = []
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise HsaError(f"--lora {value!r}: expected NAME=PATH")
        out.append((name, path))
    return tuple(out)


def display(argv: list[str]) -> str:
    return shlex.join(argv)


def _stop_with_parent(parent: int):
    """A pre-exec hook: on Linux the kernel sends the server SIGTERM when ``parent`` dies
    (prctl PR_SET_PDEATHSIG), so a killed ``hsa serve`` leaves no server behind."""

    def arm() -> None:
        if not sys.platform.startswith("linux"):
            return
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # it died before we asked
            os._exit(1)

    return arm


def healthy(base_url: str, timeout_s: float = 2.0) -> bool:
    """Does ``GET /health`` (beside the ``/v1`` base URL) answer 200?"""
    root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
    try:
        with urllib.request.urlopen(f"{root}/health", timeout=timeout_s) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


class ServerProcess:
    """A running server: started by :meth:`start`, ready after :meth:`wait_healthy`, stopped
    by :meth:`stop` (or the context manager)."""

    def __init__(self, spec: ServeSpec, *, log: str | os.PathLike | None = None):
        self.spec = spec
        self.log = log
        self.process: subprocess.Popen | None = None

    def start(self) -> ServerProcess:
        argv = command(self.spec)
        missing = [
            m for m in ENGINE_MODULES[self.spec.engine] if importlib.util.find_spec(m) is None
        ]
        if missing and not (self.spec.engine == "vllm" and shutil.which("vllm")):
            raise HsaError(
                f"{self.spec.engine} serving is not installed in this environment "
                f"(missing: {', '.join(missing)}); {ENGINE_INSTALL[self.spec.engine]}; "
                f"--dry-run prints the command"
            )
        env = {**os.environ, "HF_HUB_DISABLE_UPDATE_CHECK": "1"}
        output = open(self.log, "ab") if self.log is not None else None  # noqa: SIM115
        try:
            # Its own session: Ctrl-C reaches this process, which then stops the server in order;
            # and it is told to stop if this process dies without doing so (even by SIGKILL).
            self.process = subprocess.Popen(
                argv,
                env=env,
                stdout=output,
                stderr=output,
                start_new_session=True,
                preexec_fn=_stop_with_parent(os.getpid()),
            )
        finally:
            if output is not None:
                output.close()
        return self

    def wait_healthy(self, timeout_s: float = 600.0) -> None:
        """Return once ``/health`` answers; HsaError if the server exits or takes too long."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                where = f" (its output: {self.log})" if self.log is not None else ""
                raise HsaError(
                    f"the {self.spec.engine} server exited with status {code} before "
                    f"it was healthy{where}"
                )
            if healthy(self.spec.base_url):
                return
            time.sleep(0.25)
        self.stop()
        raise HsaError(
            f"the {self.spec.engine} server was not healthy after {timeout_s:g} s; stopped it"
        )

    def run_until_stopped(self) -> int | None:
        """Wait for the server; Ctrl-C (SIGINT) or SIGTERM stop it in order. Returns its exit
        status when it ended by itself, None when it was stopped."""

        def stop_now(signum, frame):
            raise KeyboardInterrupt

        previous = signal.signal(signal.SIGTERM, stop_now)
        try:
            return self.process.wait()
        except KeyboardInterrupt:
            return None
        finally:
            signal.signal(signal.SIGTERM, previous)

    def stop(self, grace_s: float = 10.0) -> int | None:
        """Stop the server: SIGINT, then SIGTERM, then SIGKILL; return its exit status."""
        process = self.process
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                return process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                continue
        return process.wait()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
