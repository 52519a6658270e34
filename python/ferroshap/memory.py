"""Peak-memory estimates of every engine, checked against ``max_memory`` before anything large
is allocated.

Each estimate adds up the big buffers an engine holds at its peak, from its arguments alone: the
bit-packed design and the coalition index built while planning and the coalition values for the
whole run; then the larger of the query phase (the boolean masks, one chunk of masked model
inputs of ``max_bytes``) and the estimate phase (the solver's matrices: the SVD's ``m x n``
design and ``n x m`` operator, or the normal equations' bit sets and ``n x n`` matrices; the
results). Small objects and the interpreter are left out, so the estimate is the memory an
engine adds on top of what the process already uses.

Examples
--------
>>> from ferroshap import memory
>>> est = memory.sampling_estimate("leverage", n=784, budget=20000, rows=10)
>>> 50 * 2**20 < est.total < 2**30
True
>>> memory.check("shapley_values", est, max_memory=2**40, n=784, budget=20000)
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from ferroshap import _core
from ferroshap.errors import InvalidArgumentError
from ferroshap.query.backend import DEFAULT_MAX_BYTES
from ferroshap.validation import check_int

FLOAT = 8
"""Bytes of a float64."""

WORD = 8
"""Bytes of one packed coalition word (64 players)."""

INDEX_ENTRY = 96
"""Bytes the planner's coalition index spends per coalition besides the packed words."""

MODEL_FACTOR = 2
"""One chunk of masked inputs plus what a model allocates on it (its output, temporaries)."""


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
        """The estimated peak in bytes: what is held plus the largest phase."""
        phases = [sum(phase.values()) for phase in self.phases.values()]
        return sum(self.held.values()) + max(phases, default=0)

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


def check(engine: str, estimate: Estimate, max_memory: int | None, **arguments: object) -> None:
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


def covers_all(n: int, budget: int) -> bool:
    """Whether ``budget`` coalitions cover all ``2**n`` of ``n`` players, so that a design
    enumerates them (the core's rule; no budget, a u64, covers 64 players or more).

    Examples
    --------
    >>> covers_all(3, 8), covers_all(3, 7), covers_all(64, 2**64)
    (True, False, False)
    """
    return n < 64 and budget >= 2**n


def design_rows(n: int, budget: int) -> int:
    """Coalitions of a sampled design: the budget, or all ``2**n`` when it covers them."""
    return 2**n if covers_all(n, budget) else budget


def design_bytes(n: int, m: int) -> int:
    """The packed coalitions and the planner's index of them, for ``m`` coalitions."""
    words = math.ceil(n / 64) * WORD
    return m * (2 * words + INDEX_ENTRY)


def solver_bytes(method: str, n: int, m: int, solver: str = "auto") -> int:
    """The estimate phase's matrices for ``m`` coalitions of ``n`` players.

    Regression methods on the normal equations keep bit sets (``n`` columns of about ``m / 64``
    words plus one per weight group) and three ``n x n`` matrices while building the factor; on
    the SVD, the ``m x n`` design, its thin factors and the ``n x m`` operator. Other sampling
    methods hold an ``n x m`` operator. Exact enumeration holds the table only.
    """
    if method == "exact" or covers_all(n, m):
        return m * FLOAT
    regression = method in ("kernel", "kernel-wor", "leverage", "modified-l2")
    normal = solver == "normal" or (solver == "auto" and n >= _core.CROSSOVER_PLAYERS)
    if regression and normal and m + 1 >= n:
        column_words = n * (m // 64 + n // 2 + 2) * WORD
        return column_words + m * math.ceil(n / 64) * WORD + 3 * n * n * FLOAT
    if regression:
        rank = min(m, n)
        return (3 * m * n + (m + n) * rank) * FLOAT
    return 2 * m * n * FLOAT


def sampling_estimate(
    method: str,
    n: int,
    budget: int,
    rows: int = 1,
    outputs: int = 1,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
    designs: int = 1,
    solver: str = "auto",
    proxy: bool = False,
    coalition_bytes: int | None = None,
) -> Estimate:
    """Peak of a sampling engine (:class:`~ferroshap.Explainer`,
    :func:`~ferroshap.shapley_values`): ``designs`` designs (one per row with
    ``per_row_design``), each with its solver, the masks (one chunk of them and of model input
    for a model; all of them for a raw game, ``max_bytes=None``), the values of
    ``rows x outputs`` games and their Shapley values; with ``proxy`` (a proxy adjustment
    follows) also the proxy's float64 copy of the masks. ``coalition_bytes``, the model input
    of one coalition for every row, bounds the chunk of model input by all of it."""
    m = 2**n if method == "exact" else design_rows(n, budget)
    columns = rows * outputs
    # a model's masked inputs are built from one shared design a chunk at a time; a raw game
    # (max_bytes=None), per-row designs and proxy adjustments hold every mask
    whole = max_bytes is None or proxy or designs > 1
    masks = m * n if whole else min(m * n, max_bytes)
    return Estimate(
        held={"design": designs * design_bytes(n, m), "values": 2 * m * columns * FLOAT},
        phases={
            "query": {
                "masks": designs * masks,
                "model input chunk": 0
                if max_bytes is None
                else MODEL_FACTOR * _chunk_bytes(max_bytes, m, coalition_bytes),
            },
            "estimate": {
                "solver": designs * solver_bytes(method, n, m, solver),
                "proxy training data": designs * 2 * m * n * FLOAT if proxy else 0,
                "results": 2 * columns * n * FLOAT,
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


def sketch_estimate(
    length: int, budget: int, max_bytes: int = DEFAULT_MAX_BYTES, query_bytes: int | None = None
) -> Estimate:
    """Peak of :meth:`~ferroshap.FourierSketch.fit`: the ``budget x length`` query codes, their
    values and one chunk of model input (of at most ``budget`` queries of ``query_bytes``)."""
    return Estimate(
        held={
            "queries": 2 * budget * length,
            "values": 2 * budget * FLOAT,
            "model input chunk": MODEL_FACTOR * _chunk_bytes(max_bytes, budget, query_bytes),
        }
    )


def _chunk_bytes(max_bytes: int, units: int, unit_bytes: int | None) -> int:
    """Bytes of one chunk of model input: ``max_bytes``, or all ``units`` of ``unit_bytes``
    when they are fewer (a cap above the whole input allocates only the input)."""
    return max_bytes if unit_bytes is None else min(max_bytes, units * unit_bytes)


__all__ = [
    "Estimate",
    "available_memory",
    "check",
    "covers_all",
    "exact_estimate",
    "proxyspex_estimate",
    "resolve_max_memory",
    "sampling_estimate",
    "sketch_estimate",
]
