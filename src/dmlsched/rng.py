"""Seeded randomness: one Generator per run, child streams by ``spawn``."""

from __future__ import annotations

import numpy as np

__all__ = ["make_rng", "spawn"]


def make_rng(seed: int) -> np.random.Generator:
    """The run's only source of randomness (PCG64 seeded by ``seed``)."""
    return np.random.default_rng(np.random.SeedSequence(int(seed)))


def spawn(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """``n`` independent child generators, deterministic given ``rng``'s state."""
    return list(rng.spawn(n))
