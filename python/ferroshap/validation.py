"""Validation of the scalar arguments every explainer takes (counts, budgets, seeds)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ferroshap.errors import InvalidArgumentError, InvalidTypeError

__all__ = ["Seed", "check_int", "check_seed", "draw_seed"]

Seed = int | np.random.Generator
"""A seed argument: an int in ``[0, 2**64)`` or a NumPy ``Generator``."""


def check_int(value: Any, name: str, minimum: int) -> int:
    """``value`` as an int of at least ``minimum``; errors name the argument ``name``.

    Examples
    --------
    >>> check_int(np.int64(3), "budget", 2)
    3
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidTypeError(f"{name} must be an int, got {type(value).__name__}")
    if int(value) < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def check_seed(seed: Any) -> Seed:
    """Validate a seed argument (an int in ``[0, 2**64)`` or a ``numpy.random.Generator``)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise InvalidTypeError(
            f"seed must be an int or a numpy.random.Generator, got {type(seed).__name__}"
        )
    if not 0 <= int(seed) < 2**64:
        raise InvalidArgumentError(f"seed must be in [0, 2**64), got {seed}")
    return int(seed)


def draw_seed(seed: Seed) -> int:
    """The u64 seed of one call: the int itself, or one draw from a ``Generator``."""
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**63))
    return seed
