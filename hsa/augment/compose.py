"""Pipeline nodes: transforms (leaves) and the compositions sequence, one_of, some_of and maybe.

The leaf's :meth:`TransformNode.run` is the closed driver every transform goes through: derive the
node's generator, draw ``p``, sample params, check they are JSON-only, apply, record the lineage
step and the identifier mapping. Transforms never override it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import orjson

from hsa.augment.mapping import EMPTY, Mapping
from hsa.augment.rng import derive_harness_rng, derive_rng
from hsa.augment.step import Step
from hsa.augment.transform import Transform
from hsa.augment.variant import HarnessChange
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.model.harness import Harness
from hsa.model.memo import BoundedMemo

COMPOSITION_VERSION = "1"

# The params of harness-scoped transforms in a harness-variant pool, by (seed, transform and
# options, node, harness variant, input harness): a pure function of that key (the generator is
# the harness variant's and the transform reads the harness alone), so the memo changes no
# output, only how often a harness variant's draw is made. Bounded, one per process (worker).
# 4096 holds every harness-scoped node of a 15-node recipe for a pool of 64 over four
# harnesses at once; the largest params seen on the bench's harness were under 2 KB (skill
# rewrites).
PARAMS_MEMO: BoundedMemo[dict] = BoundedMemo(4096)
# What such a node makes of the harness variant, by the same key and whether hooks are trusted:
# the harness it returns and the identifiers it renames are functions of the input harness and
# the params too (what the scope promises). Every other episode of the variant then gets this
# harness object (what later nodes and the renderer derive from it, its fingerprint and rendered
# prompt, is made once) and only the conversation's part of the work
# (``Transform.apply_to_conversation``).
STEP_MEMO: BoundedMemo[HarnessStep] = BoundedMemo(4096)


@dataclass(frozen=True)
class HarnessStep:
    """A harness-scoped node's work on one harness variant (see ``STEP_MEMO``)."""

    harness: Harness
    mapping: Mapping
    # Whether ``apply`` handed back the input harness itself (a draw that changes nothing):
    # then the episode keeps the reference to the folder its harness was loaded from, as
    # ``apply`` leaves it.
    unchanged: bool


@dataclass
class RunState:
    """Where one variant is in the pipeline: its coordinates, lineage so far and mapping, and
    its trail: (family, episode before, episode after) of every fired transform, or (family,
    :class:`HarnessChange`, episode) of one a harness stage's replay knows changed the harness
    alone, so that rows can tell which families changed what the model reads (no copies:
    episodes are frozen)."""

    seed: int
    episode_id: str
    variant: int
    lineage: list[Step] = field(default_factory=list)
    mapping: Mapping = EMPTY
    trail: list[tuple[str, Episode | HarnessChange, Episode]] = field(default_factory=list)
    # The harness variant this variant drew from the recipe's pool ("<fingerprint>:<slot>"), or
    # None when the recipe has no pool (every variant draws its own harness).
    harness_variant: str | None = None
    # While a harness stage is being made (hsa.augment.stage), every fired harness-scoped step
    # as (node, params, its HarnessStep, lineage length before it), so that other episodes of
    # the harness variant can replay the conversation's part alone; None otherwise.
    fired: list | None = None
    # How many leading lineage steps are the harness stage's (hsa.augment.stage): the steps every
    # variant of the harness variant shares, which the version's harness-variant listing names.
    stage_steps: int = 0

    def shared_by(self, node: Node) -> str | None:
        """The harness variant ``node`` draws for (a pool, and a harness-scoped node), or None
        when it draws for this variant alone."""
        return self.harness_variant if node.harness_scoped else None

    def rng(self, node: Node) -> random.Random:
        """``node``'s generator: its harness variant's (:meth:`shared_by`), or the variant's own."""
        shared = self.shared_by(node)
        if shared is not None:
            return derive_harness_rng(self.seed, shared, node.path)
        return derive_rng(self.seed, self.episode_id, self.variant, node.path)


class TransformFailed(HsaError):
    """A transform raised on one episode: the variant is rejected, the run goes on."""

    def __init__(self, transform: str, path: str, exc: BaseException):
        self.transform, self.path = transform, path
        detail = exc.reason if isinstance(exc, HsaError) else f"{type(exc).__name__}: {exc}"
        super().__init__(f"{transform} (node {path}) failed: {detail}")


class Node:
    """A pipeline node; ``path`` is its position, e.g. ``"2.0"``."""

    path: str
    # Compositions only: the key a recipe and a lineage step name it by, and its recipe options.
    name: ClassVar[str]
    keys: ClassVar[frozenset[str]]

    def run(self, episode: Episode, state: RunState) -> Episode:
        raise NotImplementedError

    def to_dict(self, *, row_neutral: bool = True) -> dict:
        """The node as a recipe writes it; without the transforms' row-neutral options when
        ``row_neutral`` is false (what a dataset version is a hash of)."""
        raise NotImplementedError

    def transforms(self):
        """Every transform node below (and including) this one."""
        raise NotImplementedError

    @cached_property
    def harness_scoped(self) -> bool:
        """Whether every transform below reads the harness alone (``Transform.scope``): then
        this node's draws may be shared by every episode in one harness variant. Read once per
        node: a parsed pipeline does not change."""
        return all(node.transform.scope == "harness" for node in self.transforms())


@dataclass
class TransformNode(Node):
    transform: Transform
    path: str = ""

    def run(self, episode: Episode, state: RunState) -> Episode:
        t = self.transform
        rng = state.rng(self)
        # Always draw, even for p == 1, so a recipe's p never shifts the params' random stream.
        if rng.random() >= t.p:
            state.lineage.append(Step(t.name, t.version, self.path, False, None))
            return episode
        try:
            if state.fired is not None:
                # Making a harness stage (hsa.augment.stage): the stage is remembered whole, so
                # its steps are drawn and applied as they are, not looked up one by one.
                params = self._sampled(episode, rng)
                step_mapping = t.mapping(episode, params)
                out = t.apply(episode, params)
                made = HarnessStep(out.harness, step_mapping, out.harness is episode.harness)
                state.fired.append((self, params, made, len(state.lineage)))
            elif (key := self._memo_key(episode, state)) is None:
                params = self._sampled(episode, rng)
                step_mapping = t.mapping(episode, params)
                out = t.apply(episode, params)
            else:
                params = PARAMS_MEMO.get(key, lambda: self._sampled(episode, rng))
                made, out = self.shared_step(episode, params, key)
                step_mapping = made.mapping
        except TransformFailed:
            raise
        except Exception as exc:  # one bad episode must not stop the run: it becomes a reject
            raise TransformFailed(t.name, self.path, exc) from exc
        state.lineage.append(Step(t.name, t.version, self.path, True, params))
        state.mapping = state.mapping.then(step_mapping)
        state.trail.append((t.family, episode, out))
        return out

    def shared_step(
        self, episode: Episode, params: dict, key: tuple
    ) -> tuple[HarnessStep, Episode]:
        """(the harness variant's step, output) of a harness-scoped step whose harness part is
        a function of ``key`` (which must fix the params and the input harness): that part made
        once (``STEP_MEMO``), the conversation's part for this episode. A draw shared by a
        harness variant, and a lineage step replayed (hsa.augment.lineage), go through it."""
        t = self.transform
        memo_key = (key, episode.harness.trust_hooks)
        made = STEP_MEMO.peek(memo_key)
        if made is not None:
            return made, self.replay(episode, params, made)
        # First sight of the harness variant: the whole transform, remembered.
        step_mapping = t.mapping(episode, params)
        whole = t.apply(episode, params)
        made = STEP_MEMO.get(
            memo_key,
            lambda: HarnessStep(whole.harness, step_mapping, whole.harness is episode.harness),
        )
        return made, (
            whole if made.harness is whole.harness else replace(whole, harness=made.harness)
        )

    def replay(self, episode: Episode, params: dict, made: HarnessStep) -> Episode:
        """This node's output for ``episode`` when its harness variant's step (``made``) is
        known: the conversation's part alone (``Transform.apply_to_conversation``), or the
        whole transform for one without that shortcut, under the known harness."""
        t = self.transform
        out = t.apply_to_conversation(episode, params, made.harness, made.mapping)
        if out is None:
            whole = t.apply(episode, params)
            return whole if made.harness is whole.harness else replace(whole, harness=made.harness)
        if made.unchanged:
            out = replace(out, harness_ref=episode.harness_ref)
        return out

    def _memo_key(self, episode: Episode, state: RunState) -> tuple | None:
        """What fixes this node's params and harness when the draw is a harness variant's (see
        ``PARAMS_MEMO``); None when the variant draws alone."""
        shared = state.shared_by(self)
        if shared is None:
            return None
        return (state.seed, self._identity, self.path, shared, episode.harness.exact_fingerprint)

    def _sampled(self, episode: Episode, rng: random.Random) -> dict:
        """The transform's params, checked to be JSON-only."""
        params = self.transform.sample_params(episode, rng)
        if not isinstance(params, dict) or orjson.loads(orjson.dumps(params)) != params:
            raise HsaError(
                f"sample_params must return JSON-only data (dicts, lists, str, "
                f"numbers, bools, null), got {params!r:.200}"
            )
        return params

    @cached_property
    def _identity(self) -> bytes:
        """The transform, its version and every option, as bytes (options may hold dicts)."""
        t = self.transform
        return orjson.dumps([t.name, t.version, t.to_options()], option=orjson.OPT_SORT_KEYS)

    def to_dict(self, *, row_neutral: bool = True) -> dict:
        t = self.transform
        return {t.name: t.to_options() if row_neutral else t.version_options()}

    def transforms(self):
        yield self


@dataclass
class Sequence(Node):
    name: ClassVar[str] = "sequence"
    keys: ClassVar[frozenset[str]] = frozenset({"pipeline"})  # what a recipe may set

    children: list[Node]
    path: str = ""

    def run(self, episode: Episode, state: RunState) -> Episode:
        if self.path:  # the root sequence is implicit and not recorded
            state.lineage.append(Step(self.name, COMPOSITION_VERSION, self.path, True, {}))
        for child in self.children:
            episode = child.run(episode, state)
        return episode

    def to_dict(self, *, row_neutral: bool = True) -> dict:
        return {
            self.name: {"pipeline": [c.to_dict(row_neutral=row_neutral) for c in self.children]}
        }

    @cached_property
    def identity(self) -> bytes:
        """The pipeline with every option, as canonical bytes: what memos name it by."""
        return orjson.dumps(self.to_dict(), option=orjson.OPT_SORT_KEYS)

    @cached_property
    def stage_length(self) -> int:
        """How many leading children are harness-scoped: the harness stage of a root pipeline
        (hsa.augment.stage)."""
        count = 0
        for child in self.children:
            if not child.harness_scoped:
                break
            count += 1
        return count

    def transforms(self):
        for child in self.children:
            yield from child.transforms()


@dataclass
class OneOf(Node):
    name: ClassVar[str] = "one_of"
    keys: ClassVar[frozenset[str]] = frozenset({"pipeline", "weights"})

    children: list[Node]
    weights: list[float]
    path: str = ""

    def run(self, episode: Episode, state: RunState) -> Episode:
        chosen = state.rng(self).choices(range(len(self.children)), weights=self.weights)[0]
        state.lineage.append(
            Step(self.name, COMPOSITION_VERSION, self.path, True, {"chosen": chosen})
        )
        return self.children[chosen].run(episode, state)

    def to_dict(self, *, row_neutral: bool = True) -> dict:
        return {
            self.name: {
                "weights": list(self.weights),
                "pipeline": [c.to_dict(row_neutral=row_neutral) for c in self.children],
            }
        }

    def transforms(self):
        for child in self.children:
            yield from child.transforms()


@dataclass
class SomeOf(Node):
    name: ClassVar[str] = "some_of"
    keys: ClassVar[frozenset[str]] = frozenset({"pipeline", "n"})

    children: list[Node]
    n: int
    path: str = ""

    def run(self, episode: Episode, state: RunState) -> Episode:
        chosen = sorted(state.rng(self).sample(range(len(self.children)), self.n))
        state.lineage.append(
            Step(self.name, COMPOSITION_VERSION, self.path, True, {"chosen": chosen})
        )
        for index in chosen:  # in pipeline order, so the order of effects is the recipe's
            episode = self.children[index].run(episode, state)
        return episode

    def to_dict(self, *, row_neutral: bool = True) -> dict:
        return {
            self.name: {
                "n": self.n,
                "pipeline": [c.to_dict(row_neutral=row_neutral) for c in self.children],
            }
        }

    def transforms(self):
        for child in self.children:
            yield from child.transforms()


@dataclass
class Maybe(Node):
    name: ClassVar[str] = "maybe"
    keys: ClassVar[frozenset[str]] = frozenset({"pipeline", "p"})

    children: list[Node]
    p: float
    path: str = ""

    def run(self, episode: Episode, state: RunState) -> Episode:
        fired = state.rng(self).random() < self.p
        state.lineage.append(Step(self.name, COMPOSITION_VERSION, self.path, fired, {}))
        if fired:
            for child in self.children:
                episode = child.run(episode, state)
        return episode

    def to_dict(self, *, row_neutral: bool = True) -> dict:
        return {
            self.name: {
                "p": self.p,
                "pipeline": [c.to_dict(row_neutral=row_neutral) for c in self.children],
            }
        }

    def transforms(self):
        for child in self.children:
            yield from child.transforms()


# The compositions by the name a recipe and a lineage step use: the one home of these names (the
# recipe parser, the lineage and the registry's reserved names read them from here).
COMPOSITIONS: dict[str, type[Node]] = {c.name: c for c in (Sequence, OneOf, SomeOf, Maybe)}
