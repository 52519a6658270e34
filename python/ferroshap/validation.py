"""Validation of what the public entry points take, before any work starts: the arguments
(counts, budgets, seeds, flags, choices, numbers, names, callables) and the memory the work will
need.

Each check runs where an argument enters a public function and raises an
:class:`~ferroshap.InvalidTypeError` (wrong type; ``bool`` is never taken for an int) or an
:class:`~ferroshap.InvalidArgumentError` (wrong value) whose message and ``.argument``
name the argument.

Every engine's peak memory is estimated and checked against ``max_memory``
(:func:`check_memory`) before anything large is allocated.
Each estimate adds up the big buffers an engine holds at its peak, from its arguments and the
chunking its game will use: the bit-packed design and the coalition index built while planning
and the coalition values for the whole run; then the larger of the query phase (one model call's
masks, masked inputs and outputs, in chunks of the size the query loop itself picks, e.g. about
4 MiB of inputs on a CPU, see :meth:`ferroshap.query.backend.ArrayBackend.chunk_bytes`; masks held
whole where an engine needs them all) and the estimate phase (the compiled solver's matrices:
the SVD's ``m x n`` design and ``n x m`` operator, or the normal equations' bit sets and
``n x n`` matrices; the results). Small objects count as one fixed allowance
(:data:`SMALL_BYTES`) and the interpreter not at all, so the estimate is the memory an engine
adds on top of what the process already uses; what a model allocates is assumed to be at most
the size of its input chunk. ``tests/test_memory_estimates.py`` checks on a grid of calls that
the estimate covers the measured peak and exceeds it at most ``2 x peak + 64 MiB``.

Examples
--------
>>> from ferroshap import validation
>>> est = validation.sampling_estimate("leverage", n=784, budget=20000, rows=10)
>>> 20 * 2**20 < est.total < 2**30
True
>>> validation.check_memory("shapley_values", est, max_memory=2**40, n=784, budget=20000)
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from ferroshap import _core
from ferroshap._core import InvalidArgumentError, InvalidTypeError

__all__ = [
    "BUDGET_LIMIT", "ORDER_LIMIT", "ROWS_LIMIT", "Estimate", "Seed", "available_memory",
    "check_callable", "check_choice", "check_flag", "check_int", "check_int_seed", "check_memory",
    "check_names", "check_output_index", "check_real", "check_seed", "draw_seed", "exact_estimate",
    "one_spelling", "planned_coalitions", "proxyspex_estimate", "resolve_max_memory",
    "sampling_estimate", "sketch_estimate",
]  # fmt: skip

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


FLOAT = 8
"""Bytes of a float64."""

WORD = 8
"""Bytes of one packed coalition word (64 players)."""

INDEX_ENTRY = 96
"""Bytes the planner's coalition index spends per coalition besides the packed words."""

MODEL_FACTOR = 2
"""One chunk of masked inputs plus what a model allocates on it (its output, temporaries)."""

HEAP_RETAINED = 64 * 2**20
"""Freed memory that glibc's heap may keep resident for later allocations: its trim threshold (twice
the 32 MiB block of :func:`ferroshap.query.loop.warm_heap`) once that has run. A phase's freed
buffers can still count while the next phase runs, up to this much."""

SMALL_BYTES = 8 * 2**20
"""Everything an engine allocates besides its big buffers, in one allowance: Python objects,
index arrays, the pages of thread stacks and heaps that the compiled core's parallel loops
touch."""

PROXY_BYTES = (16 * 2**20, 64 * 2**10)
"""What LightGBM holds while fitting a proxy (``proxy-leverage``, ``tree-msr``, ``odd-*``)
besides its training data, as a fixed part and a part per player: with 200 rounds (more than
the 120 it runs now), the measured peaks exceed the rest of the estimate by 0 to 13 MiB at 20 to
500 players (tests/test_memory_estimates.py)."""

COUNT_CAP = 2**64 - 1
"""Largest count the core's estimates take (a u64); they saturate there, far past any
``max_memory``."""


@dataclass
class Estimate:
    """The big buffers of an engine, in bytes by name: ``held`` for the whole run, and per
    phase (query, estimate) those that live only while that phase runs."""

    held: dict[str, int] = field(default_factory=dict)
    phases: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def parts(self) -> dict[str, int]:
        """Every buffer by name."""
        merged = dict(self.held)
        for phase in self.phases.values():
            merged.update(phase)
        return merged

    @property
    def total(self) -> int:
        """The estimated peak in bytes: what is held plus the largest phase, with what the
        phases before it freed but the heap keeps resident (at most :data:`HEAP_RETAINED`),
        plus :data:`SMALL_BYTES`."""
        peak = retained = 0
        for phase in self.phases.values():
            size = sum(phase.values())
            peak = max(peak, retained + size)
            retained = min(HEAP_RETAINED, retained + size)
        return SMALL_BYTES + sum(self.held.values()) + peak

    def largest(self) -> str:
        """The largest buffer, as ``name (size)``."""
        parts = self.parts
        name = max(parts, key=parts.__getitem__)
        return f"{name} ({format_bytes(parts[name])})"


def format_bytes(count: float) -> str:
    """``count`` bytes in the largest unit that keeps the number at least 1 (``"1.5 GiB"``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(count) < 1024 or unit == "PiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.3g} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def available_memory() -> int:
    """Bytes of memory available to new allocations (``MemAvailable`` on Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def resolve_max_memory(max_memory: int | None) -> int:
    """``max_memory`` checked (a positive int), or half of :func:`available_memory` if ``None``."""
    if max_memory is None:
        return available_memory() // 2
    return check_int(max_memory, "max_memory", 1)


def check_memory(
    engine: str, estimate: Estimate, max_memory: int | None, **arguments: object
) -> None:
    """Raise ``InvalidArgumentError`` (``.argument`` ``"max_memory"``) if ``estimate`` exceeds
    ``max_memory`` (see :func:`resolve_max_memory`); the message names ``engine``, the
    ``arguments`` it was sized from, the estimate and its largest part."""
    limit = resolve_max_memory(max_memory)
    if estimate.total <= limit:
        return
    named = ", ".join(f"{name}={value!r}" for name, value in arguments.items())
    raise InvalidArgumentError(
        f"{engine} with {named} would need about {format_bytes(estimate.total)} of memory "
        f"(estimate; largest part: {estimate.largest()}), more than max_memory={limit} "
        f"({format_bytes(limit)}); lower n or budget, or raise max_memory",
        argument="max_memory",
    )


def design_bytes(n: int, m: int) -> int:
    """The packed coalitions and the planner's index of them, for ``m`` coalitions."""
    words = math.ceil(n / 64) * WORD
    return m * (2 * words + INDEX_ENTRY)


def planned_coalitions(method: str, n: int, budget: int) -> int:
    """:func:`ferroshap._core.planned_coalitions` for any ``n`` (more players than
    :data:`COUNT_CAP` are counted as that many: the estimate saturates all the same).

    Examples
    --------
    >>> planned_coalitions("exact", 4, 2), planned_coalitions("leverage", 2**70, 500)
    (16, 500)
    """
    return _core.planned_coalitions(method, min(n, COUNT_CAP), budget)


def sampling_estimate(
    method: str,
    n: int,
    budget: int,
    rows: int = 1,
    outputs: int = 1,
    query: Mapping[str, int] | None = None,
    designs: int = 1,
    solver: str = "auto",
    proxy: bool = False,
    whole_masks: bool = False,
) -> Estimate:
    """Peak of a sampling engine (:class:`~ferroshap.Explainer`,
    :func:`~ferroshap.shapley_values`) on ``rows`` explained rows of ``outputs`` model outputs.

    Held for the whole run: ``designs`` designs (one per row with ``per_row_design``) and the
    values of ``rows x outputs`` games on them, with the solver's copy. The query phase holds
    ``query``, the buffers of one model call by name as the game cuts its calls
    (:meth:`~ferroshap.query.games.TabularGame.query_bytes`,
    :meth:`~ferroshap.query.games.RawGame.query_bytes`), and with ``whole_masks`` every
    design's masks as one ``bool`` array, twice (the copy embedding them in the features'
    masks), with a row index per mask. The estimate phase holds the solvers' matrices, the
    Shapley values with their copies, and with ``proxy`` (a proxy adjustment follows) the masks,
    the proxy's float64 copy of them and LightGBM's working memory."""
    m = planned_coalitions(method, n, budget)
    columns = rows * outputs
    whole = designs * (2 * m * n + m * FLOAT) if whole_masks else 0
    return Estimate(
        held={
            "design": designs * design_bytes(n, m),
            # the query's table and the solver's copy; values gathered row by row, once more
            "values": (3 if whole_masks else 2) * m * columns * FLOAT,
        },
        phases={
            "query": {"masks": whole, **(query or {})},
            "estimate": {
                "solver": designs * _core.solver_bytes(method, min(n, COUNT_CAP), m, solver),
                "proxy training data": (
                    designs * (m * n + 2 * m * n * FLOAT) + PROXY_BYTES[0] + n * PROXY_BYTES[1]
                    if proxy
                    else 0
                ),
                "results": 4 * columns * n * FLOAT,
            },
        },
    )


def exact_estimate(n: int, outputs: int = 1) -> Estimate:
    """Peak of :func:`~ferroshap.exact_interactions`: all ``2**n`` masks, the value table and the
    core's transforms of it."""
    m = 2**n
    return Estimate(held={"masks": m * n, "values": 4 * m * outputs * FLOAT})


def proxyspex_estimate(n: int, budget: int) -> Estimate:
    """Peak of :class:`~ferroshap.ProxySPEX`: the ``budget x n`` masks, the proxy's training
    data (float64) and the values."""
    return Estimate(
        held={
            "masks": budget * n,
            "proxy training data": 2 * budget * n * FLOAT,
            "values": 2 * budget * FLOAT,
        }
    )


def sketch_estimate(length: int, budget: int, query: Mapping[str, int]) -> Estimate:
    """Peak of :meth:`~ferroshap.FourierSketch.fit`: the ``budget x length`` query codes, their
    values and ``query``, the buffers of one model call by name."""
    return Estimate(
        held={"queries": 2 * budget * length, "values": 2 * budget * FLOAT},
        phases={"query": dict(query)},
    )
