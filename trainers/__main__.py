"""``python -m hsa.trainers ARGS`` runs ``hsa train ARGS``: the form ``accelerate launch -m hsa.trainers``
needs for multi-GPU training."""

import sys

from hsa.cli import main

sys.exit(main(["train", *sys.argv[1:]]))
