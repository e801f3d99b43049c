"""Hooks: checks that run around model calls, declared in harness.yaml and implemented in hooks.py.

A hook names an ``event`` it runs on, the ``function`` in the harness's ``hooks.py`` that implements
it, and its ``config``. hooks.py is code: reading the declaration is always safe, importing the
module is only done after an explicit opt-in (``trust_hooks=True`` / ``--trust-hooks``), the way
``trust_remote_code`` works in transformers. Without trust, ``hooks.py`` is parsed (never run) so
that references to its functions can still be checked.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
import signal
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from hsa.errors import HarnessError, HooksNotTrustedError
from hsa.model.message import answered_calls

# When a hook runs in the agent loop. "user_message": a viewer/user message arrived;
# "tool_call": the model asked for a tool call (before it runs); "tool_result": a tool returned;
# "reply": the model produced a final reply (before it is shown).
HOOK_EVENTS = ("user_message", "tool_call", "tool_result", "reply")
# A message carrying a hook's feedback is named "hook.<hook name>".
HOOK_MESSAGE_PREFIX = "hook."


def hook_feedback(message: dict) -> bool:
    """Whether ``message`` carries a hook's feedback (it is named ``hook.<hook name>``)."""
    name = message.get("name")
    return isinstance(name, str) and name.startswith(HOOK_MESSAGE_PREFIX)


def from_user(message: dict) -> bool:
    """Whether ``message`` is the user's own: a ``user`` message that is no hook's feedback
    (which also comes as a user message)."""
    return message.get("role") == "user" and not hook_feedback(message)


def spoken(message: dict) -> bool:
    """Whether ``message`` holds what a person says: the user's words or the assistant's (no
    tool's result, no hook's feedback). A plain word glued to Chinese or Japanese there is a
    word of theirs (hsa.text.mentions.find_name_mentions)."""
    return message.get("role") in ("user", "assistant") and not hook_feedback(message)


def tool_result(message: dict) -> bool:
    """Whether ``message`` is a tool's result: a ``tool`` message that is no hook's feedback
    (which also comes as a tool message, answering a call the hook blocked)."""
    return message.get("role") == "tool" and not hook_feedback(message)


def blocked_calls(messages) -> set[int]:
    """The calls a hook sent back (answered by a hook's feedback, so they never ran), as
    ``id(call)`` of the call dicts in ``messages``: paired by ``tool_call_id``, or in call order
    where the data has no ids."""
    return {id(call) for _, call, result in answered_calls(messages) if hook_feedback(result)}


def hook_rejected(messages) -> list[int]:
    """Indexes of the assistant messages a hook rejected: one whose tool call is answered by
    hook feedback (a ``tool`` message named ``hook.<name>``), or a reply that hook feedback from
    the user side follows at once (a ``user`` message named ``hook.<name>``, after it or after
    its rejected calls' feedback). They are the recorded mistakes of fail -> hook -> recover
    lessons: the context of the recovery, not something to learn to say."""
    rejected: set[int] = set()
    messages = list(messages)
    # The assistant message a tool message answers: by its tool_call_id, or in call order.
    answering = {id(result): at for at, _, result in answered_calls(messages)}
    anchor = None  # the assistant message hook feedback right now would be about
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            anchor = i
        elif hook_feedback(message):
            if role == "tool" and id(message) in answering:
                rejected.add(answering[id(message)])
            elif role == "user" and anchor is not None:
                rejected.add(anchor)
        else:  # a tool's own result, or the user speaking: feedback after it is about that
            anchor = None
    return sorted(rejected)


@dataclass(frozen=True, slots=True)
class Hook:
    """One check in the agent loop: where it runs, what implements it, and how it is configured."""

    name: str
    event: str
    function: str
    description: str = ""
    config: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "event": self.event, "function": self.function}
        if self.description:
            out["description"] = self.description
        if self.config:
            out["config"] = dict(self.config)
        return out

    @classmethod
    def from_dict(cls, data: Any, *, where: str) -> Hook:
        if not isinstance(data, dict):
            raise HarnessError(f"expected a mapping, got {type(data).__name__}", field=where)
        unknown = set(data) - {"name", "event", "function", "description", "config"}
        if unknown:
            raise HarnessError(
                f"unknown keys {sorted(unknown)}; allowed: name, event, function, "
                f"description, config",
                field=where,
            )
        for key in ("name", "event", "function"):
            if not isinstance(data.get(key), str) or not data[key]:
                raise HarnessError(f"'{key}' must be a non-empty string", field=f"{where}.{key}")
        if data["event"] not in HOOK_EVENTS:
            raise HarnessError(
                f"unknown event {data['event']!r}; expected one of {', '.join(HOOK_EVENTS)}",
                field=f"{where}.event",
            )
        config = data.get("config") or {}
        if not isinstance(config, dict):
            raise HarnessError("config must be a mapping", field=f"{where}.config")
        description = data.get("description") or ""  # ``description:`` left empty is None
        if not isinstance(description, str):
            raise HarnessError("description must be a string", field=f"{where}.description")
        return cls(
            name=data["name"],
            event=data["event"],
            function=data["function"],
            description=description,
            config=dict(config),
        )


def _parsed(source: str, file: str) -> ast.Module:
    """hooks.py's syntax tree (parsing runs nothing); a harness error at its line otherwise."""
    try:
        return ast.parse(source, filename=file)
    except SyntaxError as exc:
        raise HarnessError(
            f"hooks.py does not parse: {exc.msg}", file=file, line=exc.lineno
        ) from None


def defined_functions(source: str, *, file: str) -> set[str]:
    """Names of the top-level functions in hooks.py, found by parsing it (nothing is executed)."""
    tree = _parsed(source, file)
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


# A replacement field of a str.format template ("{order_id}", "{amount:.2f}", "{0}", "{user.name}")
# and the escaped braces around it ("{{", "}}").
_FORMAT_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")


def outside_format_fields(text: str, rewrite: Callable[[str], str]) -> str:
    """``text`` (a hook's template, filled by its code with ``str.format``) with ``rewrite``
    applied to what lies outside its replacement fields: a field's name is the code's keyword
    (``.format(order_id=...)``), which a rename of the text must not move."""
    if "{" not in text:
        return rewrite(text)
    parts, last = [], 0
    for placeholder in _FORMAT_FIELD.finditer(text):
        parts += [
            rewrite(text[last : placeholder.start()]) if placeholder.start() > last else "",
            placeholder.group(),
        ]
        last = placeholder.end()
    return "".join(parts) + (rewrite(text[last:]) if last < len(text) else "")


def names_in_code(source: str, names: dict[str, str], *, file: str) -> list[tuple[int, str, str]]:
    """(line, kind, name) for every string literal of hooks.py that is exactly one of ``names``
    (name -> its kind: tool, skill, hook, parameter), in line order; found by parsing, nothing is
    executed. The renaming transforms move names through the harness, its texts and hook
    configuration, but never through code: a hook that compares ``tool_name == "applyPatch"``
    stops firing in a variant that renames the tool, while the variant still shows what it said."""
    tree = _parsed(source, file)
    found = {
        (node.lineno, names[node.value], node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    }
    return sorted(found)


# The words of a configuration key that say its value names a tool, skill or hook
# (``tools``, ``source_tool``, ``skill_ids``, ``after_function``).
_NAMING_KEY_WORDS = frozenset(
    {"tool", "tools", "skill", "skills", "hook", "hooks", "function", "functions"}
)


def configured_names(config: Any, names) -> tuple[frozenset[str], tuple[str, ...]]:
    """(the ``names`` of the harness a hook's configuration lists as names, its other strings).

    A string equal to a name is that name where the configuration says so: in a list of names
    alone (``tools: [search, book]``), as a key among keys that are names alone (``limits:
    {search: 5, book: 2}``), either of them one alone only under a key that says it names one
    (``tools: [search]``, not ``blocked_words: [transfer]``), or as the value of such a key
    (``source_tool: search``). Elsewhere it is a word the hook reads, though a tool is named so
    (``protected_branches: [main, release]``, ``banned_words: [guaranteed, refund]``): renamed,
    the hook would no longer protect the branch nor refuse the word."""
    names = frozenset(names)
    found: set[str] = set()
    words: list[str] = []

    def naming(key: Any) -> bool:
        parts = re.split(r"[^a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", str(key)).lower())
        return bool(_NAMING_KEY_WORDS.intersection(parts))

    def siblings(strings: list[str], key: Any) -> None:
        # a list's strings, or an object's keys: names when every one is a name, and they are
        # several or the key says so (`blocked_words: [transfer]` is a list of one word)
        if strings and all(v in names for v in strings) and (len(strings) > 1 or naming(key)):
            found.update(strings)
        else:
            words.extend(strings)

    def walk(value: Any, key: Any) -> None:
        if isinstance(value, str):
            (found.add if value in names and naming(key) else words.append)(value)
        elif isinstance(value, list):
            siblings([v for v in value if isinstance(v, str)], key)
            for item in value:
                if not isinstance(item, str):
                    walk(item, key)
        elif isinstance(value, dict):
            siblings([k for k in value if isinstance(k, str)], key)
            for k, item in value.items():
                walk(item, k)

    walk(config, None)
    return frozenset(found), tuple(words)


def written_in_code(source: str | None, names) -> frozenset[str]:
    """Which of ``names`` hooks.py (``source``) writes as string literals: names its code reads
    or compares by what they are called, which a rename must leave (parsed, never run)."""
    if not source:
        return frozenset()
    return _literals(source, tuple(sorted(names)))


@lru_cache(maxsize=1024)
def _literals(source: str, names: tuple[str, ...]) -> frozenset[str]:
    """Cached: every draw of a harness's renames asks it of the same hooks.py."""
    found = names_in_code(source, dict.fromkeys(names, "name"), file="hooks.py")
    return frozenset(name for _, _, name in found)


@lru_cache(maxsize=256)
def printed_strings(source: str | None) -> tuple[str, ...]:
    """The strings hooks.py (``source``) may print, an f-string's own text too ("confira o
    passageiro_id no resultado anterior"): every string of its code but its docstrings (a
    string standing as a statement is never printed). Parsed, never run."""
    if not source:
        return ()
    tree = _parsed(source, "hooks.py")
    standing = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return tuple(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in standing
    )


def formatted_values(source: str | None, text: str) -> list[tuple[int, int]] | None:
    """Where ``text`` holds what hooks.py (``source``) formatted into one of its strings, when
    one of them writes the whole text: ``f"{field} {amount} is over the limit; lower the
    amount."`` writes "amount 26000 is over the limit; lower the amount." with its values at
    (0, 6) and (7, 12), and its own words around them, which the variant's hook prints as they
    are. [] for a text a string of hooks.py holds as it is; None where none writes it (another
    way of building it, or no code): the text cannot be told apart. Parsed, never run; the
    string with the most words of its own that fits is the one read."""
    if not source:
        return None
    for pattern in _templates(source):
        match = pattern.fullmatch(text)
        if match:
            return [match.span(g) for g in range(1, pattern.groups + 1)]
    return None


@lru_cache(maxsize=256)
def _templates(source: str) -> tuple[re.Pattern, ...]:
    """hooks.py's strings as patterns of the texts they write, the most of their own words
    first: a constant as it is, an f-string with each formatted value a group."""
    made: list[tuple[int, re.Pattern]] = []
    for node in ast.walk(_parsed(source, "hooks.py")):
        if isinstance(node, ast.JoinedStr):
            parts, own = [], 0
            for value in node.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    parts.append(re.escape(value.value))
                    own += len(value.value.strip())
                else:
                    parts.append("(.*?)")
            if own:
                made.append((own, re.compile("".join(parts), re.DOTALL)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip():
            made.append((len(node.value), re.compile(re.escape(node.value))))
    return tuple(pattern for _, pattern in sorted(made, key=lambda m: -m[0]))


def import_hooks(source: str, *, file: str, trust_hooks: bool) -> dict[str, Callable[..., Any]]:
    """Import hooks.py and return its top-level callables; refuses unless ``trust_hooks``."""
    return import_code(source, file=file, trust=trust_hooks)


def import_code(source: str, *, file: str, trust: bool) -> dict[str, Callable[..., Any]]:
    """Import a harness's Python file (hooks.py, tools.py) and return its top-level public
    callables; refuses unless ``trust``. One opt-in for every file of harness code."""
    return {
        name: obj
        for name, obj in vars(import_module(source, file=file, trust=trust)).items()
        if callable(obj) and not name.startswith("_")
    }


def import_module(source: str, *, file: str, trust: bool) -> types.ModuleType:
    """The module a harness's Python file defines (imported once per text); refuses unless
    ``trust``."""
    if not trust:
        raise HooksNotTrustedError(
            f"{file.rsplit('/', 1)[-1]} is Python code and is not imported without an explicit "
            f"opt-in: pass --trust-hooks on the command line or trust_hooks=True in Python, "
            f"after reading it",
            file=file,
        )
    digest = hashlib.blake2b(source.encode(), digest_size=8).hexdigest()
    module_name = f"hsa_harness_code_{digest}"
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_loader(module_name, loader=None, origin=file)
        assert spec is not None  # with no loader it always builds a ModuleSpec
        module = importlib.util.module_from_spec(spec)
        module.__file__ = file
        try:
            with _import_deadline(file):
                exec(compile(source, file, "exec"), module.__dict__)
        except HarnessError:
            raise
        except (Exception, SystemExit) as exc:  # sys.exit() in harness code ends no hsa command
            raise HarnessError(
                f"{file.rsplit('/', 1)[-1]} failed to import: {type(exc).__name__}: {exc}",
                file=file,
                line=_line_in(exc, file),
            ) from exc
        sys.modules[module_name] = module
    return module


# How long a harness's Python file may take to import: its top level defines functions, and one
# that runs on (a loop, a wait on the network) would hang every command that imports it.
IMPORT_SECONDS = 30


# How long one hook may take to decide: a check reads a payload and its config, and one that
# runs on would hang the conversation, and with it every rollout and evaluation that runs it.
HOOK_SECONDS = 10


@contextmanager
def deadline(seconds: float, expired: Callable[[], BaseException]) -> Iterator[None]:
    """Raise ``expired()`` when the block runs past ``seconds`` (by SIGALRM: only in the main
    thread of a process that has no alarm of its own set; elsewhere, as in a Ray worker's
    thread, the block runs unbounded). For the harness's own code, which may loop."""
    usable = (
        hasattr(signal, "SIGALRM")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    )
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise expired()

    before = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def _import_deadline(file: str):
    """:func:`deadline` of :data:`IMPORT_SECONDS` on importing ``file``."""
    return deadline(
        IMPORT_SECONDS,
        lambda: HarnessError(
            f"{file.rsplit('/', 1)[-1]} did not finish importing in {IMPORT_SECONDS} s (does "
            f"its top level loop or wait?)",
            file=file,
        ),
    )


def _line_in(exc: BaseException, file: str) -> int | None:
    """The line of ``file`` (a harness's code) where ``exc`` was raised: the deepest frame of
    its traceback in that file, or where Python reports a syntax error."""
    if isinstance(exc, SyntaxError) and exc.filename == file:
        return exc.lineno
    line, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == file:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
