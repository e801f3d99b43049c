"""Harness-robustness evaluation: the same judged turns under the original harness and under
held-out harness variants, per transform family, with intervals, consistency, failure rules,
skill selection, hook compliance and latency; and paired comparison of reports.

* :mod:`hsa.eval.items`: the items (judged turns) and the variant sets they come from;
* :mod:`hsa.eval.backends`: answers from an endpoint (the runtime's client) or a local model;
* :mod:`hsa.eval.journal`: resumable runs; :mod:`hsa.eval.run`: ask, judge, report;
* :mod:`hsa.eval.stats`: the arithmetic; :mod:`hsa.eval.report` and :mod:`hsa.eval.plots`: the
  report folder; :mod:`hsa.eval.compare`: reports side by side with paired tests.

Nothing here imports torch or the openai client until a backend needs it.
"""

from hsa.eval.compare import compare_reports
from hsa.eval.items import (
    ALL,
    ORIGINAL,
    Item,
    ItemSet,
    VariantSet,
    build_items,
    dataset_sets,
    family_recipe,
    make_variant_sets,
)
from hsa.eval.report import read_report
from hsa.eval.run import Settings, run_eval

__all__ = [
    "ALL",
    "ORIGINAL",
    "Item",
    "ItemSet",
    "Settings",
    "VariantSet",
    "build_items",
    "compare_reports",
    "dataset_sets",
    "family_recipe",
    "make_variant_sets",
    "read_report",
    "run_eval",
]
