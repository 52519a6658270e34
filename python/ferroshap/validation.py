"""Validation of the scalar arguments every explainer takes (counts, budgets, seeds), and the
one-release aliases of their old spellings."""

from __future__ import annotations

import functools
import inspect
import numbers
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from ferroshap.errors import InvalidArgumentError, InvalidTypeError

__all__ = [
    "Seed",
    "check_int",
    "check_int_seed",
    "check_seed",
    "deprecated_spellings",
    "draw_seed",
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


def deprecated_spellings(
    positional: Sequence[str] = (), renamed: Mapping[str, str] | None = None
) -> Callable[[F], F]:
    """Accept, for one release, the old spellings of a function's arguments, each with a
    ``DeprecationWarning``: extra positional arguments (taken as ``positional``, in order) and
    old keyword names (``renamed``: old name → new name).

    Examples
    --------
    >>> import warnings
    >>> @deprecated_spellings(positional=["budget"], renamed={"n": "n_players"})
    ... def f(game, *, n_players=1, budget=2):
    ...     return n_players, budget
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     f(None, 8, n=3)
    (3, 8)
    """
    renamed = dict(renamed or {})

    def decorate(function: F) -> F:
        parameters = inspect.signature(function).parameters.values()
        n_positional = sum(p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters)
        name = function.__qualname__.replace(".__init__", "")

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            extra = args[n_positional:]
            if len(extra) > len(positional):
                raise InvalidTypeError(
                    f"{name}() takes {n_positional} positional arguments but {len(args)} were "
                    "given; pass the others as keywords"
                )
            moved: dict[str, Any] = dict(zip(positional, extra, strict=False))
            old_names = [key for key in kwargs if key in renamed]
            twice = sorted(
                {renamed[old] for old in old_names} & (set(moved) | set(kwargs))
                | set(moved) & set(kwargs)
            )
            if twice:
                raise InvalidTypeError(f"{name}() got {', '.join(twice)} twice")
            if extra:
                _warn(f"passing {', '.join(moved)} to {name}() by position")
            for old in old_names:
                _warn(f"{name}({old}=...), now {renamed[old]}=...,")
                moved[renamed[old]] = kwargs.pop(old)
            return function(*args[:n_positional], **kwargs, **moved)

        return wrapper  # type: ignore[return-value]

    return decorate


def _warn(what: str) -> None:
    warnings.warn(
        f"{what} is deprecated and will be removed in the next release; use the keyword "
        "arguments of the documented signature",
        DeprecationWarning,
        stacklevel=3,
    )
