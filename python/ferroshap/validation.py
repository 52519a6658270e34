"""Validation of the scalar arguments every explainer takes (counts, budgets, seeds)."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ferroshap.errors import InvalidArgumentError, InvalidTypeError

__all__ = [
    "Seed",
    "check_int",
    "check_int_seed",
    "check_seed",
    "draw_seed",
    "one_spelling",
]

F = TypeVar("F", bound=Callable[..., Any])

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
        raise InvalidTypeError(f"{name} must be an int, got {type(value).__name__}", argument=name)
    if int(value) < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {value}", argument=name)
    return int(value)


def check_seed(seed: Any) -> Seed:
    """Validate a seed argument (an int in ``[0, 2**64)`` or a ``numpy.random.Generator``)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise InvalidTypeError(
            f"seed must be an int or a numpy.random.Generator, got {type(seed).__name__}",
            argument="seed",
        )
    if not 0 <= int(seed) < 2**64:
        raise InvalidArgumentError(f"seed must be in [0, 2**64), got {seed}", argument="seed")
    return int(seed)


def draw_seed(seed: Seed) -> int:
    """The u64 seed of one call: the int itself, or one draw from a ``Generator``."""
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**63))
    return seed


def check_int_seed(engine: Any) -> None:
    """Datasets need one design (or mask set) for every chunk: ``engine.seed`` must be an int."""
    if not isinstance(engine.seed, int):
        raise InvalidArgumentError(
            f"seed: datasets need a {type(engine).__name__} with an int seed (one design for "
            f"every chunk), got {type(engine.seed).__name__}",
            argument="seed",
        )


def one_spelling(value: Any, name: str, synonym: Any, synonym_name: str) -> Any:
    """The value of an argument that has a second name (``ProxySPEX(n=)``,
    ``FourierSketch.fit(length=)``): ``synonym`` when only it is given, else ``value``.

    >>> one_spelling(None, "n_players", 8, "n")
    8
    """
    if synonym is None:
        return value
    if value is not None:
        raise InvalidTypeError(
            f"{name} and {synonym_name} are the same argument; pass one of them",
            argument=name,
        )
    return synonym
