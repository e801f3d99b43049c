"""Per-variant randomness: one generator per (seed, episode, variant, pipeline node), or, for the
harness-scoped nodes of a recipe with a harness-variant pool, per (seed, harness variant, node).

Deriving every generator from a cryptographic hash of where it is used (rather than sharing one
stream) is what makes output independent of row order, batch size, worker count and engine: no
draw depends on what was drawn before for another row or another node.
"""

from __future__ import annotations

import hashlib
import random


def _hashed(*coordinates: object) -> int:
    """A 64-bit seed from blake2b over the coordinates (unambiguously separated)."""
    key = "\x1f".join(str(c) for c in coordinates).encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


def derive_seed(seed: int, episode_id: str, variant: int, path: str) -> int:
    return _hashed(seed, episode_id, variant, path)


def derive_rng(seed: int, episode_id: str, variant: int, path: str) -> random.Random:
    return random.Random(derive_seed(seed, episode_id, variant, path))


def derive_harness_rng(seed: int, harness_variant: str, path: str) -> random.Random:
    """The generator of a harness-scoped node in harness variant ``harness_variant`` (source
    harness fingerprint and pool slot): the same for every episode that drew that slot, which is
    what makes them share the variant. Tagged, and a harness variant (``<fingerprint>:<slot>``)
    is never a variant index, so it never meets an episode's coordinates."""
    return random.Random(_hashed(seed, "harness", harness_variant, path))
