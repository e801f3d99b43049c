"""Run a recipe over episodes: every variant is made, verified, and either kept or rejected.

For each episode, variant ``0`` is the original when the recipe keeps it, and variants
``1..variants_per_episode`` run the pipeline with their own derived generators. With a pool of
harness variants (the recipe's ``harness_variants: N``), variant ``i`` of episode ``e`` takes slot
``(derive(seed, e, 0) + i - 1) mod N`` of its harness's pool, and the harness-scoped nodes draw from
that slot's generators, so every episode under one harness that takes the slot gets the same
harness variant; episode-scoped nodes still draw per variant. A transform that
raises rejects that variant (stage ``transform:<name>``); a verification failure rejects it with
the failed check (stage ``verify:<check>``); either way with its lineage so far. Nothing is
dropped: every input row and every variant is either output or a reject.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

from hsa.augment.compose import RunState, TransformFailed
from hsa.augment.mapping import EMPTY
from hsa.augment.recipe import Recipe
from hsa.augment.rng import derive_seed
from hsa.augment.stage import run_pipeline
from hsa.augment.variant import Variant, VariantReject
from hsa.dataset.outcome import Tally
from hsa.errors import EpisodeError, HarnessError, Reject
from hsa.files.jsonl import write_jsonl
from hsa.model.episode import Episode, duplicate_id
from hsa.render import available_layouts, placement, prompt_parts
from hsa.verify import VerificationFailed, refused_turn, verify_variant


def harness_variant(seed: int, pool: int | None, episode: Episode, index: int) -> str | None:
    """The harness variant that variant ``index`` of ``episode`` takes from a pool of ``pool``
    per source harness (``"<source harness fingerprint>:<slot>"``); None without a pool, and for
    the original (index 0), which keeps the source harness."""
    if pool is None or index == 0:
        return None
    # An episode's variants take consecutive slots from a drawn start: while the pool is at
    # least as large as the variants, no two variants of one episode share a harness variant
    # (an episode under a harness of its own, as in BFCL, would get duplicate rows), and
    # across episodes the starts spread the rows over the pool.
    slot = (derive_seed(seed, episode.id, 0, "harness_variants") + index - 1) % pool
    return f"{episode.harness.fingerprint}:{slot}"


def check_source_renders(episode: Episode) -> None:
    """Raise an :class:`EpisodeError` (a load reject) when ``episode``'s harness does not render
    (its own layout does not parse or render, a placement names no section): each of its
    variants, and its original, would be rejected one by one at render, naming no harness.

    Only what can fail is rendered: a shipped layout renders every harness that loads (were it
    not to, the bug would be hsa's), so a harness's prompt is rendered here only when its layout
    is its own or no layout's name (once per harness: the rows reuse the prompt). Most harnesses
    pay only the check of their placement."""
    harness = episode.harness
    try:
        placement(harness)
        if harness.prompt.layout in harness.layouts or (
            harness.prompt.layout not in available_layouts()
        ):
            prompt_parts(harness)
    except HarnessError as exc:
        # named as the episode names it, or by its folder's name (rejects travel with the
        # dataset: no local path); only a harness the episode carries is inline
        if episode.harness_ref:
            where = f"harness {episode.harness_ref!r}"
        elif harness.folder:
            where = f"harness {Path(harness.folder).name!r}"
        else:
            where = "inline harness"
        line = f" (line {exc.line} of layouts/{harness.prompt.layout}.j2)" if exc.line else ""
        raise EpisodeError(
            f"the prompt of its {where} does not render{line}: {exc.reason}", field=exc.field
        ) from None


def check_source(episode: Episode) -> None:
    """Raise an :class:`EpisodeError` when ``episode`` cannot be a source of variants: its
    harness does not render (:func:`check_source_renders`, a load reject), or its trusted hooks
    refuse the recorded message of a judged turn (``check:hooks``, hsa.verify.refused_turn)."""
    check_source_renders(episode)
    refused = refused_turn(episode)
    if refused is not None:
        at, reason = refused
        raise EpisodeError(reason, field=f"messages[{at}]", stage="check:hooks")


def augment_episode(recipe: Recipe, episode: Episode) -> list[Variant | VariantReject]:
    """All variants of one episode, in index order."""
    out: list[Variant | VariantReject] = []
    for index in recipe.variant_indices:
        if index == 0:
            out.append(Variant(episode.id, 0, episode, (), EMPTY))
            continue
        state = RunState(
            recipe.seed,
            episode.id,
            index,
            harness_variant=harness_variant(recipe.seed, recipe.harness_variants, episode, index),
        )
        try:
            variant = run_pipeline(recipe.pipeline, episode, state)
        except TransformFailed as exc:
            out.append(
                VariantReject(
                    episode.id,
                    index,
                    f"transform:{exc.transform}",
                    exc.reason,
                    tuple(state.lineage),
                )
            )
            continue
        try:
            verify_variant(episode, variant, state.mapping)
        except VerificationFailed as exc:
            out.append(
                VariantReject(
                    episode.id, index, f"verify:{exc.check}", exc.reason, tuple(state.lineage)
                )
            )
            continue
        except Exception as exc:  # a check that cannot run on this variant rejects it too
            out.append(
                VariantReject(
                    episode.id,
                    index,
                    "verify:error",
                    f"{type(exc).__name__}: {exc}",
                    tuple(state.lineage),
                )
            )
            continue
        out.append(
            Variant(
                episode.id,
                index,
                variant,
                tuple(state.lineage),
                state.mapping,
                trail=tuple(state.trail),
                harness_variant=state.harness_variant,
                stage_steps=state.stage_steps,
            )
        )
    return out


def augment(
    recipe: Recipe,
    items: Iterable[Episode | Reject],
    *,
    batch_size: int = 256,
    sources_checked: bool = False,
) -> Iterator[Variant | VariantReject | Reject]:
    """Stream variants (and rejects) in input order, ``batch_size`` episodes at a time.

    Input rows that already failed to load pass through as rejects; a repeated episode id is
    rejected, because variants are identified (and their randomness derived) by id. Each
    episode is checked as a source (:func:`check_source`) unless ``sources_checked``: the
    reader did it, where the rejects can name their lines
    (hsa.model.episode.distinct_episodes)."""
    seen: set[str] = set()
    iterator = iter(items)
    while batch := list(islice(iterator, batch_size)):
        for item in batch:
            if isinstance(item, Reject):
                yield item
            elif item.id in seen:
                yield Reject(
                    source="episodes",
                    line=None,
                    id=item.id,
                    field="id",
                    reason=duplicate_id(None),
                )
            else:
                seen.add(item.id)
                if not sources_checked:
                    try:
                        check_source(item)
                    except EpisodeError as exc:
                        yield Reject.from_error(exc, source="episodes", id=item.id)
                        continue
                yield from augment_episode(recipe, item)


def write_variants(
    recipe: Recipe,
    items: Iterable[Episode | Reject],
    out_path: str | os.PathLike,
    rejects_path: str | os.PathLike,
    *,
    batch_size: int = 256,
    sources_checked: bool = False,
) -> Tally:
    """Run ``recipe`` over ``items`` into two JSONL files (what ``hsa augment`` writes): the
    variants, one ``{source_id, variant, episode, lineage, mapping}`` per line, and the rejects,
    one per episode or variant (``kind``) that did not make it, with its stage and reason. Each
    file is written atomically, the variants streamed; the tally counts both.
    ``sources_checked``: as :func:`augment`'s."""
    tally = Tally()
    reject_rows: list[dict] = []

    def counted() -> Iterator[Episode | Reject]:
        for item in items:
            tally.lines += 1
            tally.lines_rejected += isinstance(item, Reject)
            yield item

    def variants() -> Iterator[dict]:
        for item in augment(
            recipe, counted(), batch_size=batch_size, sources_checked=sources_checked
        ):
            if isinstance(item, Variant):
                tally.keep()
                yield item.to_dict()
                continue
            row = (
                {"kind": "variant", **item.to_dict()}
                if isinstance(item, VariantReject)
                else {"kind": "episode", **item.to_dict(), "stage": item.stage}
            )
            tally.reject(row["stage"], row["reason"])
            reject_rows.append(row)

    write_jsonl(out_path, variants())
    write_jsonl(rejects_path, reject_rows)
    return tally
