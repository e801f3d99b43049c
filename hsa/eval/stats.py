"""The report's arithmetic: accuracies, the drop with a bootstrap interval, consistency, pass^k,
paired tests. Pure functions of judged results; no I/O.

Definitions (a *turn* is one judged assistant message; an episode is *solved* under a harness when
every one of its turns is correct):

* accuracy: correct turns / turns, pooled over episodes;
* drop: accuracy on the originals minus accuracy on the variants, over the episodes that have
  variants in the set (paired: both sides on the same episodes);
* 95% interval: percentile bootstrap over episodes (the unit that was sampled; turns of one
  episode are not independent): ``resamples`` draws of as many episodes with replacement, the
  statistic recomputed on each, from a generator seeded with ``seed`` (numpy's PCG64), so the
  interval is the same on every run;
* consistency: the share of episodes solved under every one of their variants;
* pass^k (tau-bench): per episode with n variants of which c are solved, C(c, k) / C(n, k), the
  chance that k variants drawn without replacement are all solved; averaged over episodes with
  n >= k. pass^1 is the mean solve rate; with every episode at n = k it equals consistency;
* McNemar's test on paired turns: the exact two-sided binomial test on the discordant pairs;
* per harness variant (a recipe with a pool, ``harness_variants: N``, gives many episodes one
  harness variant): the accuracy of the variant's turns, and its drop against the originals on
  the same episodes with the same bootstrap, so a harness variant that easy episodes happened to
  draw does not look robust for it. Only variants taken by :data:`SHARED_BY` episodes or more are
  listed: one episode says how the model did on that episode, not under that harness.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import comb
from statistics import median

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261201
LEVEL = 0.95
SHARED_BY = 2  # episodes a harness variant needs to be listed in by_harness_variant


@dataclass(frozen=True, slots=True)
class Result:
    """One judged item: where it comes from and what the scorer and the hooks said."""

    key: str
    set: str
    source_id: str
    variant: int | None
    at: int
    correct: bool
    rule: str | None = None
    category: str = "uncategorized"
    families: tuple[str, ...] = ()
    skills: bool | None = None  # the gold's skills loaded exactly (None: the turn names none)
    hooks: bool | None = None  # every hook accepts the message (None: not measured)
    harness_variant: str | None = None  # the item's harness variant of the recipe's pool

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "set": self.set,
            "source_id": self.source_id,
            "variant": self.variant,
            "at": self.at,
            "correct": self.correct,
            "rule": self.rule,
            "category": self.category,
            "families": list(self.families),
            "skills": self.skills,
            "hooks": self.hooks,
            "harness_variant": self.harness_variant,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Result:
        return cls(**{**data, "families": tuple(data.get("families", ()))})


Counts = Mapping[str, tuple[int, int]]  # episode -> (correct turns, turns)


def rate(flags: Iterable[bool | None]) -> dict:
    """Share of True among the flags that are not None."""
    seen = [f for f in flags if f is not None]
    return {"n": len(seen), "rate": sum(seen) / len(seen) if seen else None}


def accuracy(results: Iterable[Result]) -> dict:
    results = list(results)
    correct = sum(r.correct for r in results)
    return {
        "turns": len(results),
        "correct": correct,
        "accuracy": correct / len(results) if results else None,
    }


def turn_counts(results: Iterable[Result]) -> dict[str, tuple[int, int]]:
    """Per episode: (correct turns, turns)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in results:
        out[r.source_id][0] += r.correct
        out[r.source_id][1] += 1
    return {k: (c, n) for k, (c, n) in out.items()}


def solved(results: Iterable[Result]) -> dict[str, dict]:
    """Per episode, per variant (None: the original): every turn correct?"""
    out: dict[str, dict] = defaultdict(dict)
    for r in results:
        out[r.source_id][r.variant] = out[r.source_id].get(r.variant, True) and r.correct
    return dict(out)


def consistency(variant_solved: Mapping[str, Mapping]) -> float | None:
    """Share of episodes solved under every variant they have."""
    flags = [all(v.values()) for v in variant_solved.values() if v]
    return sum(flags) / len(flags) if flags else None


def pass_hat_k(variant_solved: Mapping[str, Mapping], k: int) -> float | None:
    """tau-bench's pass^k over episodes with at least k variants (None if there are none)."""
    values = [
        comb(sum(v.values()), k) / comb(len(v), k) for v in variant_solved.values() if len(v) >= k
    ]
    return sum(values) / len(values) if values else None


def _interval(values: np.ndarray, level: float) -> list[float]:
    tail = (1 - level) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return [float(low), float(high)]


def paired_bootstrap(
    a: Counts,
    b: Counts,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = LEVEL,
) -> dict:
    """Pooled accuracies of ``a`` and ``b`` on the episodes both have, their difference
    ``a - b``, and percentile intervals of all three from one bootstrap over those episodes.

    Episodes are taken in sorted order, so the interval does not depend on input order."""
    episodes = sorted(set(a) & set(b))
    if not episodes:
        return {
            "episodes": 0,
            "a": None,
            "b": None,
            "diff": None,
            "a_ci": None,
            "b_ci": None,
            "diff_ci": None,
        }
    ca, na, cb, nb = (
        np.array([side[e][i] for e in episodes], dtype=np.float64)
        for side in (a, b)
        for i in (0, 1)
    )
    acc_a, acc_b = ca.sum() / na.sum(), cb.sum() / nb.sum()
    draws = np.random.default_rng(seed).integers(0, len(episodes), size=(resamples, len(episodes)))
    boot_a = ca[draws].sum(axis=1) / na[draws].sum(axis=1)
    boot_b = cb[draws].sum(axis=1) / nb[draws].sum(axis=1)
    return {
        "episodes": len(episodes),
        "a": float(acc_a),
        "b": float(acc_b),
        "diff": float(acc_a - acc_b),
        "a_ci": _interval(boot_a, level),
        "b_ci": _interval(boot_b, level),
        "diff_ci": _interval(boot_a - boot_b, level),
    }


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: b and c are the discordant pairs (only the first right,
    only the second right); under no difference each is Binomial(b + c, 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


def discordant(a: Mapping[str, bool], b: Mapping[str, bool]) -> tuple[int, int]:
    """(only ``a`` correct, only ``b`` correct) over the keys both judged."""
    keys = set(a) & set(b)
    return (sum(a[k] and not b[k] for k in keys), sum(b[k] and not a[k] for k in keys))


def failures_by_rule(results: Iterable[Result]) -> dict[str, int]:
    counts = Counter(r.rule or "unknown" for r in results if not r.correct)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def by_key(results: Iterable[Result], key) -> dict[str, dict]:
    groups: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        for name in key(r):
            groups[name].append(r)
    return {name: accuracy(rs) for name, rs in sorted(groups.items())}


def harness_variant_groups(results: Iterable[Result]) -> dict[str, list[Result]]:
    """The results of each harness variant (those of no pool's variant left out)."""
    groups: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        if r.harness_variant is not None:
            groups[r.harness_variant].append(r)
    return dict(groups)


def by_harness_variant(
    original: list[Result],
    variants: list[Result],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict:
    """How the model does under each harness variant the set's rows took (see the module
    docstring): how many there are, how many episodes each took (median), the median and the
    largest drop over the variants ranked, and, for each taken by
    :data:`SHARED_BY` episodes or more, worst drop first, its episodes, turns, accuracy, the
    originals' accuracy on its episodes, the drop and its interval."""
    groups = harness_variant_groups(variants)
    counts = {name: turn_counts(rs) for name, rs in groups.items()}  # per episode
    original_counts = turn_counts(original)
    listed = []
    for name, rs in groups.items():
        if len(counts[name]) < SHARED_BY:
            continue
        paired = paired_bootstrap(original_counts, counts[name], resamples=resamples, seed=seed)
        listed.append(
            (
                name,
                {
                    **accuracy(rs),
                    "episodes": len(counts[name]),
                    "original_accuracy": paired["a"],
                    "drop": paired["diff"],
                    "drop_ci95": paired["diff_ci"],
                },
            )
        )
    # Worst first; a drop not measured (no original of its episodes judged) last; then by name,
    # so the order is the same in every run.
    listed.sort(key=lambda kv: (kv[1]["drop"] is None, -(kv[1]["drop"] or 0.0), kv[0]))
    drops = [entry["drop"] for _, entry in listed if entry["drop"] is not None]
    return {
        "harness_variants": len(groups),
        "episodes_per_variant": median(map(len, counts.values())) if counts else None,
        "shared_by": SHARED_BY,
        "median_drop": median(drops) if drops else None,
        "worst_drop": max(drops, default=None),
        "variants": dict(listed),
    }


def summarize_set(
    original: list[Result],
    variants: list[Result],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict:
    """Everything the report says about one set of variants against the originals."""
    variant_solved = solved(variants)
    original_solved = solved(original)
    paired = paired_bootstrap(
        turn_counts(original), turn_counts(variants), resamples=resamples, seed=seed
    )
    most = max((len(v) for v in variant_solved.values()), default=0)
    robust = [
        original_solved.get(e, {}).get(None, False) and all(v.values())
        for e, v in variant_solved.items()
    ]
    return {
        **accuracy(variants),
        "episodes": len(variant_solved),
        "variants": sum(len(v) for v in variant_solved.values()),
        "original_accuracy": paired["a"],
        "original_ci95": paired["a_ci"],
        "accuracy_ci95": paired["b_ci"],
        "drop": paired["diff"],
        "drop_ci95": paired["diff_ci"],
        "consistency": consistency(variant_solved),
        "robust": sum(robust) / len(robust) if robust else None,
        "pass_k": {str(k): pass_hat_k(variant_solved, k) for k in range(1, most + 1)},
        "failures_by_rule": failures_by_rule(variants),
        "skill_selection": rate(r.skills for r in variants),
        "hook_compliance": rate(r.hooks for r in variants),
        "by_family_changed": by_key(variants, lambda r: r.families),
        "by_category": by_key(variants, lambda r: (r.category,)),
        "by_harness_variant": by_harness_variant(
            original, variants, resamples=resamples, seed=seed
        ),
    }


def summarize_original(original: list[Result]) -> dict:
    return {
        **accuracy(original),
        "episodes": len(solved(original)),
        "episodes_solved": rate(v[None] for v in solved(original).values())["rate"],
        "failures_by_rule": failures_by_rule(original),
        "skill_selection": rate(r.skills for r in original),
        "hook_compliance": rate(r.hooks for r in original),
        "by_category": by_key(original, lambda r: (r.category,)),
    }
