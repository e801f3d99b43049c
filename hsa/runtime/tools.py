"""Tool executors: what answers the model's tool calls in the runtime.

An executor is an async callable ``(name, arguments, context) -> ToolResult | None``; None means
"not mine", and the next executor of a :class:`ToolBelt` is asked. Three kinds exist:

* :class:`CodeTools`: Python implementations a harness ships in ``tools.py`` (code: imported only
  with the trust flag, like hooks.py);
* :class:`hsa.runtime.replay.ReplayTools`: the results recorded in episodes;
* :class:`hsa.runtime.faults.FaultInjector`: wraps another executor and injects faults on request.

The skill loader is not a tool executor: the conversation answers it from the harness itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import orjson

from hsa.augment.mapping import EMPTY, Mapping
from hsa.augment.rename import rename_result
from hsa.augment.user_data import strings_in
from hsa.errors import HsaError
from hsa.files.textfile import read_text
from hsa.model.harness import Harness
from hsa.model.hook import import_module
from hsa.transforms.tool_schema.parameters import renamed_call_result


def in_daemon_thread(function: Callable[..., Any], kwargs: dict) -> asyncio.Future:
    """``function(**kwargs)`` in a daemon thread of its own, as a future of this loop. Not
    ``asyncio.to_thread``: the default executor's threads are joined when the loop and the
    interpreter close, so a tool that hangs would keep ``hsa chat`` from ever exiting. What the
    tool raises, ``SystemExit`` included, is the future's exception (a result the model sees),
    never the process's."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future = loop.create_future()

    def settle(value: Any = None, error: BaseException | None = None) -> None:
        if future.done():  # timed out meanwhile: the late answer is dropped
            return
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)

    def answer(*outcome: Any) -> None:
        # RuntimeError: the run ended (its loop closed) before this late answer.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, *outcome)

    def run() -> None:
        try:
            value = function(**kwargs)
        except BaseException as exc:  # sys.exit() in tool code is the tool's error too
            if not isinstance(exc, Exception):
                exc = RuntimeError(f"raised {type(exc).__name__}({exc})")
            answer(None, exc)
            return
        answer(value)

    threading.Thread(target=run, name="hsa-tool", daemon=True).start()
    return future


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The text the model sees as the tool's result, who produced it, and whether it is an error."""

    content: str
    source: str
    error: bool = False


@dataclass(frozen=True, slots=True)
class CallContext:
    """Where a call happens: the conversation and the call's 0-based index among its tool calls
    (skill loads not counted), so that what is drawn for a call (a fault) does not depend on
    timing or on other conversations."""

    conversation_id: str
    index: int


class ToolExecutor(Protocol):
    def __call__(
        self, name: str, arguments: dict, context: CallContext
    ) -> Awaitable[ToolResult | None]: ...


def error_result(kind: str, message: str, source: str = "error") -> ToolResult:
    """An error as the model sees it: ``{"error": kind, "message": ...}``."""
    return ToolResult(orjson.dumps({"error": kind, "message": message}).decode(), source, True)


def result_text(value: Any) -> str:
    """A tool's return value as result text: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def variant_result(
    text: str, harness: Harness, mapping: Mapping, name: str, arguments: dict
) -> str:
    """``text``, the result of the call ``name(arguments)`` in the names of ``harness``, as a
    variant under ``mapping`` writes a recorded result: through the rename kernel (skill, tool
    and hook names where mentioned), then the parameter renames (an echoed argument's key,
    parameters written as code), in the order a recipe's pipeline renames them. The strings the
    call passes are data, as in a recorded episode (hsa.augment.user_data.conversation_data):
    where the result echoes one, it stays as written."""
    passed = () if name == harness.skill_loader else tuple(strings_in(list(arguments.values())))

    def keep() -> tuple[str, ...]:
        return passed

    renamed = rename_result(text, mapping, keep)
    return renamed_call_result(renamed, harness, mapping, name, arguments, keep)


class ToolBelt:
    """Executors asked in order; a call none of them answers gets an error result."""

    def __init__(self, *executors: ToolExecutor):
        self.executors = executors

    async def __call__(self, name: str, arguments: dict, context: CallContext) -> ToolResult:
        for executor in self.executors:
            result = await executor(name, arguments, context)
            if result is not None:
                return result
        return error_result(
            "unavailable",
            f"tool {name!r} cannot run here: it has no implementation and no recorded result",
        )


class CodeTools:
    """Python implementations of tools, from a harness's ``tools.py``.

    A tool is implemented by a top-level function with its name, or by an entry of a top-level
    ``TOOLS`` dict (for names that are not Python identifiers, such as ``math.factorial``). It is
    called with the call's arguments as keyword arguments in a worker thread; a string result is
    the content as is, anything else is written as JSON; an exception or a run past ``timeout_s``
    becomes an error result the model sees. Under a harness variant, tool and parameter names are
    mapped back through the variant's mapping to the names the code knows."""

    def __init__(
        self,
        functions: dict[str, Callable[..., Any]],
        *,
        mapping: Mapping = EMPTY,
        harness: Harness | None = None,
        timeout_s: float = 30.0,
    ):
        self.functions = functions
        self.mapping = mapping
        self.back = mapping.inverse()
        self.harness = harness  # the input side of ``mapping``: the harness the code knows
        self.timeout_s = timeout_s

    @classmethod
    def load(cls, path: str | Path, *, trust: bool, timeout_s: float = 30.0) -> CodeTools:
        """Import ``tools.py`` (refused without ``trust``: it is code)."""
        path = Path(path)
        if not path.is_file():
            raise HsaError("tool code file does not exist", file=str(path))
        module = import_module(read_text(path), file=str(path), trust=trust)
        functions = {
            name: fn
            for name, fn in vars(module).items()
            if inspect.isfunction(fn)
            and not name.startswith("_")
            and fn.__module__ == module.__name__
        }
        table = getattr(module, "TOOLS", None)
        if table is not None:
            if not isinstance(table, dict) or not all(callable(f) for f in table.values()):
                raise HsaError(
                    "TOOLS must map tool names to functions", file=str(path), field="TOOLS"
                )
            functions.update(table)
        return cls(functions, timeout_s=timeout_s)

    def for_variant(self, mapping: Mapping, harness: Harness) -> CodeTools:
        """The same implementations, called under a variant's names: ``mapping`` goes from
        ``harness`` (the names the code knows) to the variant's."""
        return CodeTools(self.functions, mapping=mapping, harness=harness, timeout_s=self.timeout_s)

    async def __call__(self, name: str, arguments: dict, context: CallContext) -> ToolResult | None:
        old_name = self.back.tool(name)
        function = self.functions.get(old_name)
        if function is None:
            return None
        kwargs = {self.back.parameter(name, key): value for key, value in arguments.items()}
        result = await self._run(function, name, kwargs)
        if not self.mapping or self.harness is None:
            return result
        # The code knows the old names and writes them in its results; the variant's rows
        # have every recorded result renamed, and so must what the model reads here.
        text = variant_result(result.content, self.harness, self.mapping, old_name, kwargs)
        return result if text == result.content else replace(result, content=text)

    async def _run(self, function: Callable[..., Any], name: str, kwargs: dict) -> ToolResult:
        """``function(**kwargs)`` as a result the model reads (``name``: the call's name)."""
        try:
            value = await asyncio.wait_for(in_daemon_thread(function, kwargs), self.timeout_s)
        except TimeoutError:
            # The thread cannot be stopped; its late answer is dropped, and as a daemon thread
            # it does not hold the process open when the run ends.
            return error_result(
                "timeout", f"{name} did not answer within {self.timeout_s:g} s", "code"
            )
        except Exception as exc:  # the tool's own error is a result the model must handle
            return error_result("exception", f"{name} failed: {type(exc).__name__}: {exc}", "code")
        try:
            return ToolResult(result_text(value), "code")
        except TypeError as exc:
            return error_result(
                "exception", f"{name} returned a value that is not JSON: {exc}", "code"
            )
