"""Augmentation: the transform protocol and registry, compositions, recipes, per-variant randomness,
the identifier mapping and the rename kernel, and the lineage that replays a variant."""
