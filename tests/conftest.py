"""Shared test oracles: brute-force Shapley values and an additive game; and a loader for the
scripts in ``benches/`` (not a package), whose functions some tests call.

The games with closed-form values that benchmarks use too live in :mod:`ferroshap.bench.games`
(:class:`~ferroshap.bench.games.SumOfUnanimity`), the metrics in :mod:`ferroshap.bench.metrics`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from math import comb
from pathlib import Path
from types import ModuleType

import numpy as np

Game = Callable[[np.ndarray], np.ndarray]


def all_masks(n: int) -> np.ndarray:
    """All ``2**n`` coalitions as ``bool[2**n, n]``; row ``r`` has player ``i`` iff bit ``i``."""
    return (np.arange(2**n)[:, None] >> np.arange(n)) & 1 == 1


def brute_force_shapley(game: Game, n: int) -> np.ndarray:
    """Exact Shapley values by enumeration (n ≤ 12): ``[n]`` or ``[r, n]`` like the game.

    φ_i = Σ_{S ⊆ N \\ {i}} s!(n-s-1)!/n! · (v(S + i) - v(S)).
    """
    assert n <= 12, "brute force is for small games"
    values = np.asarray(game(all_masks(n)), dtype=np.float64)
    codes = np.arange(2**n)
    sizes = np.array([bin(c).count("1") for c in codes])
    weight = np.array([1.0 / (n * comb(n - 1, s)) for s in range(n)])
    phi = np.zeros((n, *values.shape[1:]))
    for i in range(n):
        without = codes[(codes >> i) & 1 == 0]
        w = weight[sizes[without]].reshape(-1, *[1] * (values.ndim - 1))
        phi[i] = (w * (values[without | (1 << i)] - values[without])).sum(axis=0)
    return phi.T


class Additive:
    """Additive game ``v(S) = Σ_{i ∈ S} a_i``, whose Shapley values are ``a``."""

    def __init__(self, n: int, seed: int) -> None:
        self.shapley = np.random.default_rng(seed).normal(size=n)

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        return masks @ self.shapley


def bench_script(name: str) -> ModuleType:
    """The script ``benches/<name>.py`` loaded as a module (its ``main`` guard not run)."""
    path = Path(__file__).resolve().parents[1] / "benches" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
