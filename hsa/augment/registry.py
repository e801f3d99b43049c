"""The transform registry: stable snake_case names, duplicates refused, plugins by entry point.

Built-in transforms register with :func:`register` when their ``transforms/`` module is imported;
third-party packages add theirs through the ``hsa.transforms`` entry-point group (each entry point
names a module or an object to import, whose import registers the transforms).
"""

from __future__ import annotations

import re
from importlib.metadata import entry_points
from typing import TypeVar

from hsa.errors import HsaError

ENTRY_POINT_GROUP = "hsa.transforms"
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
_REGISTRY: dict[str, type] = {}
_plugins_loaded = False

T = TypeVar("T", bound=type)


def register(cls: T) -> T:
    """Class decorator: register a transform under its ``name``; a duplicate name is an error."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME.match(name):
        raise HsaError(f"transform {cls.__qualname__} needs a snake_case 'name', got {name!r}")
    if not isinstance(getattr(cls, "version", None), str):
        raise HsaError(f"transform {name!r} needs a string 'version'")
    existing = _REGISTRY.get(name)
    if existing is not None and existing is not cls:
        raise HsaError(f"transform name {name!r} is already registered by "
                       f"{existing.__module__}.{existing.__qualname__}")
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
            raise HsaError(f"transform plugin {entry.name!r} ({entry.value}) failed to load: "
                           f"{type(exc).__name__}: {exc}") from exc
    if not _REGISTRY:
        raise HsaError(f"no transform is registered: the {ENTRY_POINT_GROUP!r} entry points are "
                       f"missing, so hsa is not installed as a package (pip install -e .)")
    # Only now: a family or plugin that fails to import must fail every lookup, not leave a
    # silently partial registry behind for the next caller.
    _plugins_loaded = True


def registered() -> dict[str, type]:
    """Every registered transform by name, sorted by name."""
    load_plugins()
    return dict(sorted(_REGISTRY.items()))


def families() -> dict[str, str]:
    """Transform name -> family, for every registered transform."""
    return {name: cls.family for name, cls in registered().items()}

