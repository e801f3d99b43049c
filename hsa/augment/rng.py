"""Per-variant randomness: one generator per (seed, episode, variant, pipeline node), or, for the
harness-scoped nodes of a recipe with a harness-variant pool, per (seed, harness variant, node).

Deriving every generator from a cryptographic hash of where it is used (rather than sharing one
stream) is what makes output independent of row order, batch size, worker count and engine: no
draw depends on what was drawn before for another row or another node.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(seed: int, episode_id: str, variant: int, path: str) -> int:
    """A 64-bit seed from blake2b over the four coordinates (unambiguously separated)."""
    key = f"{seed}\x1f{episode_id}\x1f{variant}\x1f{path}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


def derive_rng(seed: int, episode_id: str, variant: int, path: str) -> random.Random:
    return random.Random(derive_seed(seed, episode_id, variant, path))


def derive_harness_rng(seed: int, harness_variant: str, path: str) -> random.Random:
    """The generator of a harness-scoped node in harness variant ``harness_variant`` (source
    harness fingerprint and pool slot): the same for every episode that drew that slot, which is
    what makes them share the variant. Tagged, so it never meets an episode's coordinates."""
    key = f"{seed}\x1fharness\x1f{harness_variant}\x1f{path}".encode()
    return random.Random(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big"))
