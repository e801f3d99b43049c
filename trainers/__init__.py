"""Thin wrappers over TRL for the three stages of HSA training, and the pieces they share.

TRL does the training; this package supplies what a dataset version needs around it:

* :mod:`hsa.trainers.version`: provenance check, rows as a ``datasets.Dataset`` with decoded
  conversations, judged turns and each row's harness variant rebuilt from its lineage;
* :mod:`hsa.trainers.chat`: per-row prompt rendering (the row's own tools), completion parsing, and
  the tokenizer / embedding / vocabulary checks;
* :mod:`hsa.trainers.rewards`: reward functions for ``GRPOTrainer`` on the one scorer;
* :mod:`hsa.trainers.lengths`: token lengths before SFT, ``max_length``, the loss mask shown;
* :mod:`hsa.trainers.recipe`: YAML recipes and ``--set`` overrides;
* :mod:`hsa.trainers.sft`, :mod:`hsa.trainers.opd`, :mod:`hsa.trainers.rl`: the stages (``hsa train ...``);
* :mod:`hsa.trainers.tiny`: a tiny local model and tokenizer for tests and CPU demos.

Importing this package imports neither torch nor TRL; the modules that need them import them.
"""
