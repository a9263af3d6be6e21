"""Seeds drawn from names, without torch: the plan records a monolingual model's seed in its settings, the
trainer (xling.models.mlm_data, bert) draws its streams with the same function."""

from __future__ import annotations

import hashlib


def seed_of(*parts) -> int:
    """A 63-bit seed from any parts, stable across processes (unlike hash())."""
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "little") >> 1
