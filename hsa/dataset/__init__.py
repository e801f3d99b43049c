"""Dataset versions: the per-episode pipeline (augment, verify), the batch function and engines,
rendered rows, the atomic writer, fingerprints and version ids, generate, audit, card and hub."""
