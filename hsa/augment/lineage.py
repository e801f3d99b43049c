"""Lineage: what a pipeline did to one variant, step by step, precise enough to replay it.

Each step records the node's name (a transform, or a composition such as ``one_of``), its version,
its path in the pipeline (``"1.0"``: first child of the second node), whether it fired, and its
params. :func:`replay` rebuilds a variant from the original episode by applying the fired transform
steps with their recorded params; nothing is sampled.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from hsa.augment.compose import COMPOSITIONS, TransformNode
from hsa.augment.mapping import EMPTY, Mapping
from hsa.augment.registry import registered

# The step record has a module of its own so that the pipeline nodes (which write steps) and
# this module (which reads their names) import without a cycle; it is lineage's to export.
from hsa.augment.step import Step as Step
from hsa.errors import HsaError
from hsa.model.episode import Episode


def fired_steps(lineage: Iterable[Step]) -> Iterator[Step]:
    """The steps of ``lineage`` where a transform (not a composition) fired: what changed the
    episode, in order."""
    # Composition nodes appear in lineage (their choices explain a variant) but apply nothing.
    return (s for s in lineage if s.fired and s.transform not in COMPOSITIONS)


# The transform of each class with its default options, as a pipeline node, made once: a lineage
# step's params hold all it applies, and checking the options of a new instance for every step
# of every row was a sixth of ``hsa demo``.
_REPLAYING: dict[type, TransformNode] = {}


def _replaying(cls: type) -> TransformNode:
    node = _REPLAYING.get(cls)
    if node is None:
        node = _REPLAYING[cls] = TransformNode(cls())
    return node


def replay(
    original: Episode, lineage: list[Step] | tuple[Step, ...], *, trail: list | None = None
) -> tuple[Episode, Mapping]:
    """Apply the fired transform steps of ``lineage`` to ``original``; return it and its mapping.
    ``trail``, when given, receives (family, episode before, episode after) of each step, as the
    pipeline records it (:class:`hsa.augment.variant.Variant`).

    A harness-scoped step's harness part is a function of its params and input harness, so it
    is made once for every row that takes it from the same harness (:meth:`TransformNode.shared_step`): the rows of a
    harness variant (a pool's) replay only their conversations' part, as generation makes them,
    and ``hsa verify`` rebuilds a pooled version at about generation's speed, not a whole
    pipeline per row.

    A step recorded under another version than the installed transform's is refused: its output
    could differ, and a silent difference is what lineage exists to prevent."""
    episode, mapping = original, EMPTY
    known = registered()
    # What fixes the current harness, as generation's harness stage keys it: the exact
    # fingerprint of the harness the harness-scoped steps started from, and those steps with
    # their params. Intermediate harnesses are never hashed (where no two rows share a harness,
    # that hashing was all the memo added); an episode-scoped step, whose harness may depend on
    # the conversation, starts it again from the harness it leaves.
    chain: tuple | None = None
    for step in fired_steps(lineage):
        if step.transform not in known:
            raise HsaError(
                f"lineage step {step.path} names transform {step.transform!r}, which "
                f"is not installed"
            )
        cls = known[step.transform]
        if cls.version != step.version:
            raise HsaError(
                f"lineage step {step.path} was made by {step.transform} version "
                f"{step.version}; the installed version is {cls.version}"
            )
        node = _replaying(cls)
        transform = node.transform
        params: Any = step.params or {}
        try:
            if transform.scope == "harness":
                chain = (
                    (episode.harness.exact_fingerprint,) if chain is None else chain,
                    step.transform,
                    step.version,
                    orjson.dumps(params, option=orjson.OPT_SORT_KEYS),
                )
                made, out = node.shared_step(episode, params, ("lineage", chain))
                step_mapping = made.mapping
            else:
                chain = None
                step_mapping = transform.mapping(episode, params)
                out = transform.apply(episode, params)
            mapping = mapping.then(step_mapping)
            before, episode = episode, out
        except Exception as exc:  # params edited or made elsewhere: the row's error, not hsa's
            detail = exc.reason if isinstance(exc, HsaError) else f"{type(exc).__name__}: {exc}"
            raise HsaError(
                f"lineage step {step.path} ({step.transform}) does not replay with its "
                f"recorded params: {detail}"
            ) from exc
        if trail is not None:
            trail.append((cls.family, before, episode))
    return episode, mapping
