"""The harness stage of a pipeline: its leading harness-scoped nodes, made once per harness variant.

In a recipe with a pool of harness variants (``harness_variants: N``), every node whose
transforms are all harness-scoped draws from its harness variant's generators, so what such a
node does to the harness (and which steps fire, with which params, in which lineage) is the same
for every episode that takes the variant. The leading run of those nodes in the root pipeline is
the *harness stage*: the first episode of a variant runs it as any other and it is remembered as
a :class:`HarnessStage` (its lineage, mapping, harness and fired steps); every other episode of
the variant then replays only the conversation's part of each fired step
(:meth:`TransformNode.replay`), with no generator derived, no draw made and no mapping composed
again. The rest of the pipeline (from the first episode-scoped node on) runs per variant as
before. Pure: a stage is a function of its key, so output never depends on which episode made
it, on batch size, worker count or engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from hsa.augment.compose import HarnessStep, RunState, Sequence, TransformFailed, TransformNode
from hsa.augment.mapping import Mapping
from hsa.augment.step import Step
from hsa.augment.variant import HarnessChange
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.model.harness import Harness
from hsa.model.memo import BoundedMemo


@dataclass(frozen=True)
class FiredStep:
    """One fired transform of a harness stage: enough to replay its conversation's part."""

    node: TransformNode
    params: dict
    made: HarnessStep
    lineage_before: int  # lineage steps recorded before it (what a reject at it carries)


@dataclass(frozen=True)
class HarnessStage:
    """What a pipeline's harness stage made of one harness variant."""

    lineage: tuple[Step, ...]
    mapping: Mapping
    harness: Harness
    fired: tuple[FiredStep, ...]

    @cached_property
    def _kept(self) -> tuple[bool, ...]:
        """Of each fired step, whether it keeps the conversation (read once per stage)."""
        return tuple(step.node.transform.keeps_conversation for step in self.fired)

    def replay(self, episode: Episode, state: RunState) -> Episode:
        """``episode`` through the stage, recording into ``state`` what running it would.

        A step that keeps the conversation (most of a stage: orders, descriptions, shapes,
        prompt structure) only changes the harness the next step reads: a run of them puts
        the last one's harness under the episode once, and the trail records each as a
        :class:`HarnessChange`. Same output as replaying each step on its own."""
        harness, ref = episode.harness, episode.harness_ref  # what the episode is to carry
        for step, kept in zip(self.fired, self._kept, strict=True):
            family = step.node.transform.family
            if kept:
                made = step.made
                state.trail.append((family, HarnessChange(harness, made.harness), episode))
                harness = made.harness
                ref = ref if made.unchanged else None
                continue
            episode = _carrying(episode, harness, ref)
            try:
                out = step.node.replay(episode, step.params, step.made)
            except Exception as exc:  # as TransformNode.run: the variant becomes a reject
                state.lineage.extend(self.lineage[: step.lineage_before])
                raise TransformFailed(step.node.transform.name, step.node.path, exc) from exc
            state.trail.append((family, episode, out))
            episode = out
            harness, ref = episode.harness, episode.harness_ref
        episode = _carrying(episode, harness, ref)
        state.lineage.extend(self.lineage)
        state.mapping = self.mapping
        return episode


def _carrying(episode: Episode, harness: Harness, ref: str | None) -> Episode:
    """``episode`` under ``harness``, loaded by ``ref`` (itself when it is already)."""
    if harness is episode.harness and ref == episode.harness_ref:
        return episode
    return replace(episode, harness=harness, harness_ref=ref)


# Harness stages by (seed, pipeline, harness variant, input harness and whether its hooks are
# trusted). One per process (worker); 1024 holds a pool of 64 for 16 harnesses at once.
STAGE_MEMO: BoundedMemo[HarnessStage] = BoundedMemo(1024)


def run_pipeline(pipeline: Sequence, episode: Episode, state: RunState) -> Episode:
    """``pipeline.run(episode, state)``, with its harness stage made once per harness variant
    when ``state`` has one (see the module docstring)."""
    stage_length = pipeline.stage_length if state.harness_variant is not None else 0
    if not stage_length:
        return pipeline.run(episode, state)
    key = (
        state.seed,
        pipeline.identity,
        state.harness_variant,
        episode.harness.exact_fingerprint,
        episode.harness.trust_hooks,
    )
    stage = STAGE_MEMO.peek(key)
    children = pipeline.children
    if stage is not None:
        episode = stage.replay(episode, state)
        state.stage_steps = len(stage.lineage)
    else:
        state.fired = []
        for child in children[:stage_length]:
            episode = child.run(episode, state)
        fired = tuple(FiredStep(*f) for f in state.fired)
        state.fired = None
        made = HarnessStage(tuple(state.lineage), state.mapping, episode.harness, fired)
        STAGE_MEMO.get(key, lambda: made)
        state.stage_steps = len(made.lineage)
    for child in children[stage_length:]:
        episode = child.run(episode, state)
    return episode
