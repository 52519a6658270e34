"""Validation of the arguments the public entry points take (counts, budgets, seeds, flags,
choices, numbers, names, callables).

Each check runs where an argument enters a public function and raises an
:class:`~ferroshap.InvalidTypeError` (wrong type; ``bool`` is never taken for an int) or an
:class:`~ferroshap.InvalidArgumentError` (wrong value) whose message and ``.argument``
name the argument.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

import numpy as np

from ferroshap._core import InvalidArgumentError, InvalidTypeError

__all__ = [
    "BUDGET_LIMIT",
    "ORDER_LIMIT",
    "ROWS_LIMIT",
    "Seed",
    "check_callable",
    "check_choice",
    "check_flag",
    "check_int",
    "check_int_seed",
    "check_names",
    "check_output_index",
    "check_real",
    "check_seed",
    "draw_seed",
    "one_spelling",
]

F = TypeVar("F", bound=Callable[..., Any])

Seed = int | np.random.Generator
"""A seed argument: an int in ``[0, 2**64)`` or a NumPy ``Generator``."""


BUDGET_LIMIT = 2**64
"""Budgets (coalitions, queries) are below this: the core counts them in a u64."""

ROWS_LIMIT = 2**63
"""Row counts (``chunk_size``) are below this: Arrow and polars count rows in an int64."""

ORDER_LIMIT = 2**31
"""Interaction orders are below this (LightGBM reads a proxy's ``max_depth`` as a C int); an
order above the number of players means all of them."""


def check_int(value: Any, name: str, minimum: int, below: int | None = None) -> int:
    """``value`` as an int of at least ``minimum`` (and below ``below`` when given); a ``bool``
    is refused. Errors name the argument ``name``.

    Examples
    --------
    >>> check_int(np.int64(3), "budget", 2)
    3
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidTypeError(f"{name} must be an int, got {type(value).__name__}", argument=name)
    if int(value) < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {value}", argument=name)
    if below is not None and int(value) >= below:
        power = below.bit_length() - 1
        bound = f"2**{power}" if below == 2**power and power > 10 else str(below)
        raise InvalidArgumentError(f"{name} must be below {bound}, got {value}", argument=name)
    return int(value)


def check_flag(value: Any, name: str) -> bool:
    """``value`` as a bool: ``True`` or ``False`` (or a NumPy bool). Anything else (``1``,
    ``"yes"``, ``None``) is refused rather than read as truthy.

    Examples
    --------
    >>> check_flag(np.bool_(True), "paired")
    True
    """
    if not isinstance(value, bool | np.bool_):
        raise InvalidTypeError(
            f"{name} must be True or False, got {type(value).__name__} {value!r:.60}",
            argument=name,
        )
    return bool(value)


def check_choice(value: Any, name: str, choices: Collection[str]) -> str:
    """``value`` if it is one of the strings ``choices``, else an error listing them.

    Examples
    --------
    >>> check_choice("logit", "link", ("identity", "logit"))
    'logit'
    """
    if not isinstance(value, str) or value not in choices:
        raise InvalidArgumentError(
            f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}",
            argument=name,
        )
    return value


def check_real(
    value: Any, name: str, *, above: float | None = None, below: float | None = None
) -> float:
    """``value`` as a finite float (a real number, not a ``bool``), strictly above ``above``
    and below ``below`` when they are given.

    Examples
    --------
    >>> check_real(0.25, "validation_fraction", above=0.0, below=1.0)
    0.25
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidTypeError(
            f"{name} must be a number, got {type(value).__name__}", argument=name
        )
    number = float(value)
    low = -math.inf if above is None else above
    high = math.inf if below is None else below
    if not (math.isfinite(number) and low < number < high):
        bounds = [f"above {above}"] * (above is not None) + [f"below {below}"] * (below is not None)
        raise InvalidArgumentError(
            f"{name} must be a finite number{' ' if bounds else ''}{' and '.join(bounds)}, "
            f"got {value!r}",
            argument=name,
        )
    return number


def check_output_index(value: Any) -> int | None:
    """``output_index``: ``None`` or an int (a column of the model's ``[rows, k]`` output;
    negative counts from the end). The column is checked against ``k`` when the model runs.

    Examples
    --------
    >>> check_output_index(np.int64(1)), check_output_index(None)
    (1, None)
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidTypeError(
            "output_index must be an int (a column of the model's [rows, k] output) or None, "
            f"got {type(value).__name__} {value!r}",
            argument="output_index",
        )
    return int(value)


def check_callable(value: Any, name: str) -> Any:
    """``value`` if it can be called, else an :class:`InvalidTypeError` naming ``name``."""
    if not callable(value):
        raise InvalidTypeError(
            f"{name} must be callable, got {type(value).__name__}", argument=name
        )
    return value


def check_names(value: Any, name: str) -> list[str]:
    """``value`` (a list, tuple or array of names; not one string) as a list of strings.

    Examples
    --------
    >>> check_names(("a", 1), "feature_names")
    ['a', '1']
    """
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise InvalidTypeError(
            f"{name} must be a list of names, got {type(value).__name__} {value!r:.60}",
            argument=name,
        )
    return [str(item) for item in value]


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
