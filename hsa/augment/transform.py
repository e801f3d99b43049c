"""The transform protocol: a frozen value that samples parameters, then applies them purely.

Subclass :class:`Transform` as a frozen dataclass, set ``name`` (stable snake_case, not the name of
a composition), ``version`` (bump whenever the output for the same params changes: the golden files
under tests/golden/ fail until you do), ``family`` and a docstring whose first line is the
transform's promise; implement ``sample_params`` (the only place randomness lives; JSON-only return
value) and ``apply`` (pure: the same episode and params always give the same output, and nothing
but the params may steer it, so that a lineage replays on a default instance). Transforms that
rename identifiers also implement ``mapping`` so verification can prove the task is preserved.
Register with :func:`hsa.augment.registry.register`, which refuses a class that breaks these rules.
The driver that draws ``p``, samples, applies and records lineage lives in
:mod:`hsa.augment.compose` and is not overridden.

A transform also declares its ``scope``: ``"harness"`` when its params and the harness it
returns depend only on the episode's harness (skill ids and content, tool names, order,
descriptions, prompt layout, hook implementations), so that one draw serves every episode that
shares the harness; ``"episode"`` when it needs the conversation (the hook retry policy reads the
retry sequences in the messages). The contract tests hold a
harness-scoped transform to it: two episodes under one harness get the same params and the same
harness. Undeclared, a transform is episode-scoped, which is always safe.

In a pool of harness variants the harness a harness-scoped transform returns is made once per
harness variant; every other episode of the variant then needs only the conversation's part of
``apply``: :meth:`Transform.apply_to_conversation` does that part, given the harness and the
mapping. A transform
declares what ``apply`` does to the conversation in ``conversation``: ``"kept"`` (messages and
gold come out as they went in, and no check reads them), ``"renamed"`` (they move through the
rename kernel by the transform's ``mapping`` alone), or ``"own"`` (the default: its own work,
and no shortcut unless it overrides the method, so it is applied whole for every episode: always
correct, only slower). The contract tests hold each shortcut to equal ``apply``.

Options (the dataclass fields) are what a recipe sets, and every one of them enters the dataset
version, except those a transform lists in ``row_neutral``: options that cannot change any row,
such as how a service is reached (a cache folder, a timeout, the name of the variable holding an
API key). Declare them there, and only them: a row-neutral option that does change rows would give
two different datasets one version id.
"""

from __future__ import annotations

import dataclasses
import random
import types
import typing
from typing import Annotated, Any, ClassVar, Literal, get_args, get_origin

from hsa.augment.mapping import EMPTY, Mapping
from hsa.augment.rename import rename_conversation
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.harness import Harness

# An option that is a probability or a share: checked to lie in [0, 1] for every transform, so
# transforms declare `fraction: Share = 1.0` instead of checking it themselves.
UNIT_INTERVAL = "in [0, 1]"
Share = Annotated[float, UNIT_INTERVAL]

# What a transform's params may depend on (see the module docstring).
SCOPES = ("harness", "episode")
# What a transform's apply does to the conversation (see the module docstring).
CONVERSATION_KINDS = ("kept", "renamed", "own")


@dataclasses.dataclass(frozen=True)
class Transform:
    """Base class of every transform (see the module docstring)."""

    name: ClassVar[str]
    version: ClassVar[str]
    family: ClassVar[str]  # declared by each transform (or its family's base class)
    # Options that cannot change a row: left out of the dataset version (see the module docstring).
    row_neutral: ClassVar[tuple[str, ...]] = ()
    # "harness" or "episode": what the params may depend on (see the module docstring).
    scope: ClassVar[str] = "episode"
    # What ``apply`` does to the messages and gold: "kept", "renamed" or "own" (see the module
    # docstring and :meth:`apply_to_conversation`).
    conversation: ClassVar[str] = "own"

    p: Share = 1.0

    def __post_init__(self) -> None:
        check_options(type(self), {f.name: getattr(self, f.name) for f in dataclasses.fields(self)})

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        """Draw everything ``apply`` needs, as JSON-only data. Default: nothing to draw."""
        return {}

    def apply(self, episode: Episode, params: dict) -> Episode:
        raise NotImplementedError(f"{type(self).__name__}.apply")

    def mapping(self, episode: Episode, params: dict) -> Mapping:
        """The identifiers ``apply`` renames with these params (input side: ``episode``)."""
        return EMPTY

    def apply_to_conversation(
        self, episode: Episode, params: dict, harness: Harness, mapping: Mapping
    ) -> Episode | None:
        """``apply(episode, params)`` when the harness it returns and the identifiers it renames
        are known already (``harness`` and ``mapping``, made once per harness variant of a pool):
        only the conversation's part of the work, and every check that reads the conversation.
        None when the transform has no such shortcut (the pipeline then calls ``apply``).
        Harness-scoped transforms only."""
        if self.conversation == "kept":
            return episode.with_harness(harness)
        if self.conversation == "renamed":
            return rename_conversation(episode, mapping, harness)
        return None

    @property
    def keeps_conversation(self) -> bool:
        """Whether :meth:`apply_to_conversation` only puts the known harness under the episode:
        ``conversation = "kept"`` and no shortcut of the transform's own."""
        return (
            self.conversation == "kept"
            and type(self).apply_to_conversation is Transform.apply_to_conversation
        )

    # ---- options (constructor arguments) ---------------------------------------------------

    @classmethod
    def options(cls) -> dict[str, Any]:
        """Every constructor option with its default: what a recipe may set."""
        return {f.name: _default(f) for f in dataclasses.fields(cls)}

    def to_options(self) -> dict[str, Any]:
        return {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def version_options(self) -> dict[str, Any]:
        """The options that can change rows: :meth:`to_options` less ``row_neutral``, what a
        dataset version is a hash of."""
        return {k: v for k, v in self.to_options().items() if k not in self.row_neutral}

    @classmethod
    def promise(cls) -> str:
        """The docstring's first paragraph, on one line: what it changes and what it keeps."""
        doc = (cls.__doc__ or "").strip()
        return " ".join(doc.split("\n\n")[0].split())


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return _jsonable(f.default)
    if f.default_factory is not dataclasses.MISSING:
        return _jsonable(f.default_factory())
    raise HsaError(f"option {f.name!r} needs a default so that '- name: {{}}' works")


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def check_options(cls: type[Transform], values: dict[str, Any]) -> None:
    """Raise a clear error for an option of the wrong type or a probability outside [0, 1]."""
    hints = typing.get_type_hints(cls, include_extras=True)
    for key, value in values.items():
        expected = hints.get(key)
        if expected is None:
            continue
        bounds: list[Any] = []
        if get_origin(expected) is Annotated:
            expected, *bounds = get_args(expected)
        if not _fits(value, expected):
            raise HsaError(
                f"transform {cls.name!r}: option {key!r} must be "
                f"{_describe(expected)}, got {value!r}"
            )
        if UNIT_INTERVAL in bounds and not 0.0 <= value <= 1.0:
            what = "probability p" if key == "p" else key
            raise HsaError(f"transform {cls.name!r}: {what} must be in [0, 1], got {value!r}")


def _fits(value: Any, expected: Any) -> bool:
    origin = get_origin(expected)
    if expected is Any:
        return True
    if origin is Literal:
        return value in get_args(expected)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in get_args(expected))
    if expected is type(None):
        return value is None
    if expected is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (tuple, list):
        args = [a for a in get_args(expected) if a is not Ellipsis]
        return (
            isinstance(value, tuple | list) and all(_fits(v, args[0]) for v in value)
            if args
            else isinstance(value, tuple | list)
        )
    if origin is dict or expected is dict:
        return isinstance(value, dict)
    if isinstance(expected, type):
        return isinstance(value, expected)
    return True


def _describe(expected: Any) -> str:
    origin = get_origin(expected)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(expected))
    if origin in (tuple, list):
        args = [a for a in get_args(expected) if a is not Ellipsis]
        return f"a list of {_describe(args[0])}" if args else "a list"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in get_args(expected))
    return getattr(expected, "__name__", str(expected))
