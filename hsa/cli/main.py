"""The ``hsa`` command line: the root app, its command groups, and :func:`main`, under which user
errors exit with status 2 and one clear message, no traceback.

Each command group lives in its own thin module (:mod:`hsa.cli.dataset`, :mod:`hsa.cli.score`,
:mod:`hsa.cli.importers`, :mod:`hsa.cli.harness`, :mod:`hsa.cli.eval`, :mod:`hsa.cli.runtime`);
other packages add groups through the ``hsa.commands`` entry points (``hsa train``).
"""

from __future__ import annotations

import os
import re
import signal
import threading
from typing import Annotated

import click
import typer

from hsa import __version__
from hsa.cli import dataset
from hsa.cli.console import err, out
from hsa.cli.eval import eval_app
from hsa.cli.harness import harness_app
from hsa.cli.importers import import_app
from hsa.cli.runtime import runtime_app
from hsa.cli.score import score
from hsa.errors import HsaError

app = typer.Typer(
    name="hsa",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    help="Harness-State Augmentation: task-preserving harness variants for tool-calling agents.\n\n"
    "Load episodes and the harness they run in (skills, tools, prompt layout, hooks), check "
    "them, score model answers with BFCL's AST rules, and list the registered transforms.\n\n"
    "Start with `hsa demo`; see `hsa COMMAND --help` for each command.",
)

# `hsa --help` lists the commands in this order: the main job first, then the data flow.
for command in (
    dataset.demo,
    score,
    dataset.augment,
    dataset.generate,
    dataset.verify,
    dataset.replay,
    dataset.card,
    dataset.push,
    dataset.bench,
    dataset.transforms,
):
    app.command()(command)
app.add_typer(import_app, name="import")  # hsa import bfcl|openai|mcp|skills (hsa.cli.importers)
app.add_typer(harness_app, name="harness")  # hsa harness validate (hsa.cli.harness)
app.add_typer(eval_app, name="eval")  # hsa eval, hsa eval compare (hsa.cli.eval)
app.add_typer(runtime_app)  # rollout, serve, chat (hsa.cli.runtime)


def _version(value: bool) -> None:
    if value:
        out.print(f"hsa {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
):
    pass


# ---- command plugins -----------------------------------------------------------------------

COMMANDS_GROUP = "hsa.commands"


def _add_plugin_commands() -> None:
    """Add the command groups other packages register under the ``hsa.commands`` entry-point
    group (each a typer app, added under the entry point's name): `hsa train` comes from the
    trainers this way, so hsa never imports a layer above it. A group that fails to load stays
    listed and says why when it is run, instead of breaking every other command."""
    from importlib.metadata import entry_points

    for entry in entry_points(group=COMMANDS_GROUP):
        try:
            group = entry.load()
        except Exception as exc:  # a broken plugin must not take `hsa --help` down with it
            reason = (
                f"command group {entry.name!r} ({entry.value}) failed to load: "
                f"{type(exc).__name__}: {exc}"
            )
            group = typer.Typer(help=f"(unavailable: {reason})")

            @group.callback(invoke_without_command=True)
            def _unavailable(reason: str = typer.Option(reason, hidden=True)) -> None:
                raise HsaError(reason)

        app.add_typer(group, name=entry.name)


_add_plugin_commands()


_PLACEHOLDER = re.compile(r"(?<!\\)<(?=[A-Za-z])")


def _keep_placeholders(text: str | None) -> str | None:
    """Help is rendered as Markdown, where a placeholder such as ``<row id>`` reads as an HTML tag
    and vanishes: escape its ``<`` everywhere except in code (backtick spans, indented or fenced
    blocks), where Markdown keeps it as written."""
    if not text:
        return text
    lines, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or line.startswith(("    ", "\t")):
            lines.append(line)
            continue
        parts = line.split("`")
        lines.append(
            "`".join(
                _PLACEHOLDER.sub(r"\\<", part) if i % 2 == 0 else part
                for i, part in enumerate(parts)
            )
        )
    return "\n".join(lines)


def _command() -> click.Command:
    """The click command tree of the app, every help text with its placeholders kept."""
    root = typer.main.get_command(app)
    stack = [root]
    while stack:
        command = stack.pop()
        command.help = _keep_placeholders(command.help)
        for param in command.params:
            if isinstance(getattr(param, "help", None), str):
                param.help = _keep_placeholders(param.help)
        stack.extend(getattr(command, "commands", {}).values())
    return root


_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
_TERMINATED = 143  # 128 + SIGTERM


def _say_interrupted(how: str = "interrupted") -> None:
    err.print(
        f"{how}: nothing half-written is published (a version or model appears whole or not "
        f"at all); eval and rollout keep the answers they journaled, and the same command "
        f"resumes",
        markup=False,
        highlight=False,
    )


def _on_sigterm(main_pid: int):
    """SIGTERM (a scheduler's kill, ``timeout``, a container stop) as an exception in the
    command's process, so that what it was writing is cleaned up as on Ctrl-C; by default
    Python dies at once and leaves its staging folder behind. A worker forked from it inherits
    the handler and dies as it would have."""

    def handler(signum, frame) -> None:
        if os.getpid() != main_pid:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise SystemExit(_TERMINATED)

    return handler


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; an HsaError becomes one line on stderr and exit status 2, and
    nothing else reaches the user as a traceback either."""
    # Click handles its own usage errors (exit 2 with a hint) and exits through SystemExit;
    # only our own user errors reach the except clause.
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm(os.getpid())) if in_main_thread else None
    try:
        return _run(argv)
    finally:
        if in_main_thread and previous is not None:  # None: not set from Python, left alone
            signal.signal(signal.SIGTERM, previous)


def _run(argv: list[str] | None) -> int:
    try:
        _command()(args=argv, prog_name="hsa")
    except HsaError as exc:
        err.print(f"error: {exc}", markup=False, highlight=False)
        return 2
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if code == _INTERRUPTED:  # typer turns Ctrl-C into exit 130 without a word
            _say_interrupted()
        elif code == _TERMINATED:
            _say_interrupted("terminated")
        return code
    except KeyboardInterrupt:
        _say_interrupted()
        return _INTERRUPTED
    except OSError as exc:  # the machine, not the input: a full disk, a missing permission
        where = f"{exc.filename}: " if exc.filename else ""
        err.print(f"error: {where}{exc.strerror or exc}", markup=False, highlight=False)
        return 2
    except Exception as exc:
        if os.environ.get("HSA_DEBUG"):
            raise
        err.print(
            f"error: unexpected {type(exc).__name__}: {exc}\n(a bug in hsa: rerun with "
            f"HSA_DEBUG=1 for the traceback and report it)",
            markup=False,
            highlight=False,
        )
        return 1
    return 0
