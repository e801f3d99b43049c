"""Thin wrappers over TRL for the three stages of HSA training, and the pieces they share.

TRL does the training; this package supplies what a dataset version needs around it:

* :mod:`trainers.version`: provenance check, rows as a ``datasets.Dataset`` with decoded
  conversations, judged turns and each row's harness variant rebuilt from its lineage;
* :mod:`trainers.chat`: per-row prompt rendering (the row's own tools), completion parsing, and
  the tokenizer / embedding / vocabulary checks;
* :mod:`trainers.rewards`: reward functions for ``GRPOTrainer`` on the one scorer;
* :mod:`trainers.lengths`: token lengths before SFT, ``max_length``, the loss mask shown;
* :mod:`trainers.recipe`: YAML recipes and ``--set`` overrides;
* :mod:`trainers.sft`, :mod:`trainers.opd`, :mod:`trainers.rl`: the stages (``hsa train ...``);
* :mod:`trainers.tiny`: a tiny local model and tokenizer for tests and CPU demos.

Importing this package imports neither torch nor TRL; the modules that need them import them.
"""
