"""The transform registry: stable snake_case names, duplicates refused, plugins by entry point.

:func:`register` checks the transform protocol (hsa.augment.transform) where it can be checked
before any episode: a frozen dataclass subclassing ``Transform``, a snake_case ``name`` that is no
composition's, a ``version``, a declared ``family``, ``row_neutral`` naming options, a ``scope``
among ``SCOPES`` and a ``conversation`` among ``CONVERSATION_KINDS``. A class that breaks one is
refused with an :class:`HsaError` naming the class and what to do.

Built-in transforms register with :func:`register` when their ``transforms/`` module is imported;
third-party packages add theirs through the ``hsa.transforms`` entry-point group (each entry point
names a module or an object to import, whose import registers the transforms).
"""

from __future__ import annotations

import dataclasses
import re
from importlib.metadata import entry_points
from typing import TypeVar

from hsa.augment.compose import COMPOSITIONS
from hsa.augment.transform import CONVERSATION_KINDS, SCOPES, Transform
from hsa.errors import HsaError

ENTRY_POINT_GROUP = "hsa.transforms"
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
_REGISTRY: dict[str, type[Transform]] = {}
_plugins_loaded = False

T = TypeVar("T", bound=type)


def register(cls: T) -> T:
    """Class decorator: register a transform under its ``name`` once its class keeps the protocol
    (see the module docstring); a duplicate name is an error."""
    what = f"transform class {cls.__module__}.{cls.__qualname__}"
    if not (isinstance(cls, type) and issubclass(cls, Transform)):
        raise HsaError(f"{what} must subclass hsa.augment.transform.Transform")
    # The class's own parameters: a subclass left undecorated inherits its base's and would
    # silently turn its annotated options into plain class attributes.
    params = cls.__dict__.get("__dataclass_params__")
    if params is None or not params.frozen:
        raise HsaError(
            f"{what} must be a frozen dataclass (a transform is a value): decorate it "
            f"with @dataclass(frozen=True), written below @register"
        )
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME.match(name):
        raise HsaError(f"{what} needs a snake_case 'name' (name = \"my_transform\"), got {name!r}")
    if name in COMPOSITIONS:
        raise HsaError(
            f"{what} may not be named {name!r}: a recipe reads that name as a "
            f"composition ({', '.join(COMPOSITIONS)}); choose another name"
        )
    version = getattr(cls, "version", None)
    if not isinstance(version, str) or not version:
        raise HsaError(f"{what} needs a string 'version' (version = \"1\"), got {version!r}")
    family = getattr(cls, "family", None)
    if not isinstance(family, str) or not _NAME.match(family):
        raise HsaError(
            f"{what} needs a snake_case 'family' (the family it belongs to, e.g. "
            f'family = "tool_schema"; statistics and evaluation group by it), '
            f"got {family!r}"
        )
    options = {f.name for f in dataclasses.fields(cls)}
    neutral = cls.row_neutral
    if (
        not isinstance(neutral, tuple)
        or "p" in neutral
        or not all(isinstance(o, str) and o in options for o in neutral)
    ):
        raise HsaError(
            f"{what}: 'row_neutral' must be a tuple of its option names other than "
            f"p (options: {', '.join(sorted(options))}), got {neutral!r}"
        )
    if cls.scope not in SCOPES:
        raise HsaError(
            f"{what}: 'scope' must be one of {', '.join(repr(s) for s in SCOPES)} (\"harness\" "
            f"when its params and harness output depend on the harness alone), got {cls.scope!r}"
        )
    if cls.conversation not in CONVERSATION_KINDS:
        raise HsaError(
            f"{what}: 'conversation' must be one of "
            f"{', '.join(repr(k) for k in CONVERSATION_KINDS)} (what apply does to the messages "
            f"and gold), got {cls.conversation!r}"
        )
    existing = _REGISTRY.get(name)
    if existing is not None and existing is not cls:
        raise HsaError(
            f"{what}: the name {name!r} is already registered by "
            f"{existing.__module__}.{existing.__qualname__}; choose another name"
        )
    _REGISTRY[name] = cls
    return cls


def load_plugins() -> None:
    """Import every ``hsa.transforms`` entry point, once: the built-in families (``hsa.transforms``,
    a layer above this registry) come in the same way as a third-party package's."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry.load()
        except Exception as exc:
            raise HsaError(
                f"transform plugin {entry.name!r} ({entry.value}) failed to load: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    if not _REGISTRY:
        raise HsaError(
            f"no transform is registered: the {ENTRY_POINT_GROUP!r} entry points are "
            f"missing, so hsa is not installed as a package (pip install -e .)"
        )
    # Only now: a family or plugin that fails to import must fail every lookup, not leave a
    # silently partial registry behind for the next caller.
    _plugins_loaded = True


def registered() -> dict[str, type[Transform]]:
    """Every registered transform by name, sorted by name."""
    load_plugins()
    return dict(sorted(_REGISTRY.items()))


def families() -> dict[str, str]:
    """Transform name -> family, for every registered transform."""
    return {name: cls.family for name, cls in registered().items()}
