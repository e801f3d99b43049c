"""One evaluation run: ask for every item not yet answered, judge them all, write the report.

Answers go to the journal as they arrive (hsa.eval.journal), so a killed run resumes without
asking again; judging and the report are recomputed from the journal every time, in item order,
so the same answers always give the same report (every section but ``latency``, which measures
the run). Each message is judged with the one scorer (:func:`hsa.model.scorer.judge`) against its gold
turn under its own harness; hook compliance runs the harness's hooks on it (trusted harnesses
only).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hsa import __version__
from hsa.dataset.harness_variants import listed_lineages
from hsa.errors import HsaError
from hsa.eval.backends import Answer
from hsa.eval.items import ORIGINAL, Item, ItemSet, VariantSet
from hsa.eval.journal import PREDICTIONS_FILE, Journal, check_run
from hsa.eval.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    LEVEL,
    Result,
    summarize_original,
    summarize_set,
)
from hsa.model.scorer import judge

REPORT_VERSION = 1
NO_ANSWER = "no_answer"  # the rule of an item without a message (see backends.Answer)


@dataclass
class Settings:
    """How the report is computed (not what the model is asked)."""

    trust_hooks: bool = False
    resamples: int = BOOTSTRAP_RESAMPLES
    bootstrap_seed: int = BOOTSTRAP_SEED
    inputs: dict = field(default_factory=dict)  # what was evaluated, for the report's header


def judge_item(item: Item, answer: dict, runners: dict) -> Result:
    """The scorer's verdict on one answer, with skill selection and hook compliance."""
    base: dict[str, Any] = {
        "key": item.key,
        "set": item.set,
        "source_id": item.source_id,
        "variant": item.variant,
        "at": item.at,
        "category": item.category,
        "families": item.families,
        "harness_variant": item.harness_variant,
    }
    message = answer.get("message")
    if message is None:
        return Result(
            **base, correct=False, rule=NO_ANSWER, skills=False if item.gold.skills else None
        )
    judgement = judge(message, item.gold, item.harness)
    skills = judgement.partial.get("skills")
    hooks = None
    if id(item.harness) in runners:
        from hsa.model.hook_runner import HookError, complies

        try:
            hooks = complies(runners[id(item.harness)], item.conversation, message)
        except HookError:  # a hook that cannot judge the message does not accept it
            hooks = False
    return Result(
        **base,
        correct=judgement.correct,
        rule=judgement.verdict.rule,
        skills=None if skills is None else skills == 1.0,
        hooks=hooks,
    )


def _runners(items: list[Item], trust_hooks: bool) -> dict:
    if not trust_hooks:
        return {}
    from hsa.model.hook_runner import HookRunner

    runners: dict = {}
    for item in items:
        if item.harness.hooks and id(item.harness) not in runners:
            runners[id(item.harness)] = HookRunner(item.harness)
    return runners


def _latency(answers: list[dict], wall_s: float) -> dict:
    from hsa.runtime.records import RequestRecord, summarize_requests

    fields = RequestRecord.__slots__
    records = [
        RequestRecord(**{k: v for k, v in a["record"].items() if k in fields})
        for a in answers
        if a.get("record")
    ]
    summary = summarize_requests(records, wall_s or None)
    summary["wall_s"] = wall_s
    # Sorted samples for the histogram: the order answers arrived in says nothing.
    summary["e2e_samples_s"] = sorted(r.latency_s for r in records)
    summary["ttft_samples_s"] = sorted(r.ttft_s for r in records if r.ttft_s is not None)
    return summary


def build_report(
    itemset: ItemSet,
    sets: list[VariantSet],
    results: list[Result],
    answers: list[dict],
    backend: dict,
    settings: Settings,
    wall_s: float,
) -> dict:
    """The report as JSON-ready data (see hsa.eval.stats for every definition)."""
    by_set: dict[str, list[Result]] = {}
    for r in results:
        by_set.setdefault(r.set, []).append(r)
    original = by_set.get(ORIGINAL, [])
    summaries = {}
    for variant_set in sets:
        summary = summarize_set(
            original,
            by_set.get(variant_set.name, []),
            resamples=settings.resamples,
            seed=settings.bootstrap_seed,
        )
        ranked = summary["by_harness_variant"]["variants"]
        for name, lineages in listed_lineages(variant_set.version_dir, set(ranked)).items():
            ranked[name]["lineages"] = lineages
        summaries[variant_set.name] = {
            "family": variant_set.family,
            **summary,
            "unchanged_rows": itemset.unchanged.get(variant_set.name, 0),
            "episodes_without_variants": itemset.missing.get(variant_set.name, 0),
            "dataset": variant_set.to_dict(),
        }
    return {
        "report_version": REPORT_VERSION,
        "hsa_version": __version__,
        "run": {
            "backend": backend,
            "inputs": settings.inputs,
            "episodes": len(itemset.episodes),
            "items": len(itemset.items),
            "items_sha256": itemset.sha256(),
            "hooks_checked": settings.trust_hooks,
            "bootstrap": {
                "resamples": settings.resamples,
                "seed": settings.bootstrap_seed,
                "level": LEVEL,
                "unit": "episode",
            },
        },
        "original": summarize_original(original),
        "sets": summaries,
        "latency": _latency(answers, wall_s),
        "requests": len(answers),
        "no_answer": sorted(a["key"] for a in answers if a.get("error")),
        "results": [r.to_dict() for r in sorted(results, key=lambda r: r.key)],
    }


def run_eval(
    itemset: ItemSet,
    sets: list[VariantSet],
    backend,
    out: Path,
    settings: Settings,
    *,
    on_answer=None,
) -> dict:
    """Answer what the journal in ``out`` lacks, then judge everything and write the report."""
    from hsa.eval.report import write_report

    out = Path(out)
    check_run(
        out,
        {
            "report_version": REPORT_VERSION,
            "items_sha256": itemset.sha256(),
            "items": len(itemset.items),
            **backend.identity(),
        },
    )
    journal = Journal(out / PREDICTIONS_FILE)
    distinct = {i.fingerprint: i for i in reversed(itemset.items)}  # first item of each prompt
    # An answer that is an error (the server refused the prompt, or failed it on every retry)
    # is asked again: a busy server's 500 passes, and a prompt the server cannot serve fails
    # the same way again.
    todo = sorted(
        (i for f, i in distinct.items() if journal.answers.get(f, {"error": True}).get("error")),
        key=lambda i: i.key,
    )
    answered = 0

    def record(answer: Answer) -> None:
        nonlocal answered
        journal.add(answer.to_dict())
        answered += 1
        if on_answer:
            on_answer(answered, len(todo))

    began = time.perf_counter()
    try:
        backend.answer(todo, record)
    except HsaError as exc:
        from hsa.runtime.endpoint import EndpointError, refused_settings

        if isinstance(exc, EndpointError) and exc.setup:  # the URL or key: fails alike again
            raise HsaError(
                refused_settings(exc) + (f" ({answered} answers were saved)" if answered else "")
            ) from None
        if not answered and not getattr(exc, "retryable", True):
            raise  # an answer no rerun would change (not a chat completion): nothing to resume
        raise HsaError(
            f"{exc}; {answered} of {len(todo)} answers were saved: rerun the same command to resume"
        ) from None
    finally:
        if answered:
            journal.end_session(time.perf_counter() - began, answered)
        journal.close()
    runners = _runners(itemset.items, settings.trust_hooks)
    results = [
        judge_item(item, journal.answers[item.fingerprint], runners) for item in itemset.items
    ]
    answers = [journal.answers[f] for f in sorted(distinct)]  # each request once
    report = build_report(
        itemset, sets, results, answers, backend.describe(), settings, journal.wall_s
    )
    write_report(report, out)
    return report
