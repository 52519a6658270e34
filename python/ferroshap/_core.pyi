"""Type stubs for the compiled module ``ferroshap._core`` (hand-written; checked by stubtest)."""

from typing import final

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "CROSSOVER_PLAYERS",
    "EMPTY_ROW",
    "FIRST_SAMPLED_ROW",
    "FULL_ROW",
    "INDICES",
    "INTERACTION_INDICES",
    "MAX_EXACT_PLAYERS",
    "MAX_TABLE_PLAYERS",
    "METHODS",
    "SOLVERS",
    "Design",
    "DeviceMemoryError",
    "FerroshapError",
    "InputFiller",
    "InvalidArgumentError",
    "InvalidTypeError",
    "SketchPlan",
    "SparseFunction",
    "Spectrum",
    "__version__",
    "check_plan",
    "covers_all",
    "exact_interactions",
    "fill_masked_inputs",
    "interrupt",
    "lightgbm_fourier",
    "moebius_transform",
    "plan",
    "plan_masks",
    "planned_coalitions",
    "refit_ridge",
    "refit_top",
    "select_ridge",
    "select_support",
    "set_thread_limit",
    "sketch_plan",
    "solver_bytes",
]

__version__: str

class FerroshapError(Exception):
    """Base class of every error raised by ferroshap.

    Every error a user can trigger is a ``FerroshapError`` and also a built-in ``ValueError``,
    ``TypeError`` or ``MemoryError``; messages name the argument, what was expected and what was
    received.
    """

    argument: str | None
    """Name of the offending argument as the caller spells it (``"budget"``, ``"seed"``, ...),
    ``None`` when the error is not about one argument or its name is unknown."""

    def __init__(self, *args: object, argument: str | None = None) -> None: ...

class InvalidArgumentError(FerroshapError, ValueError):
    """An argument has the right type but an invalid value (wrong shape, NaN, out of range)."""

class InvalidTypeError(FerroshapError, TypeError):
    """An argument has an unsupported type (for example a model that cannot be called)."""

class DeviceMemoryError(FerroshapError, MemoryError):
    """The model ran out of (device) memory even on the smallest chunk of inputs."""

def interrupt() -> None:
    """Stop every compiled-core call running on any thread: each raises ``KeyboardInterrupt``
    within a poll (~50 ms of its work). Signals reach Python's main thread only; a call running
    on a worker thread learns of Ctrl-C this way (calls on the main thread see it themselves)."""

def set_thread_limit(threads: int) -> int:
    """Run the parallel parts of the compiled-core calls this thread makes on ``threads``
    threads (0: rayon's global pool, one thread per CPU or ``RAYON_NUM_THREADS``); returns the
    previous limit. :func:`ferroshap.query.backend.limited` sets it for an engine's ``n_jobs``."""

# --- the sampling engine: designs and plan (rust/python/src/sampling.rs) ---

METHODS: list[str]
"""Every sampling method name that :func:`plan` accepts, in documentation order."""

MAX_EXACT_PLAYERS: int
"""Largest number of players that full enumeration accepts (24)."""

SOLVERS: list[str]
"""Regression solvers :func:`plan` accepts: ``"auto"``, ``"svd"``, ``"normal"``."""

CROSSOVER_PLAYERS: int
"""Fewest players for which ``solver="auto"`` takes the normal equations."""

EMPTY_ROW: int
"""Row of the empty coalition in every :class:`Design` and in :func:`plan_masks` (0)."""

FULL_ROW: int
"""Row of the grand coalition in every sampled :class:`Design` and in :func:`plan_masks` (1);
full enumeration has it last. The rows past it are the sampled coalitions."""

FIRST_SAMPLED_ROW: int
"""First sampled coalition's row in every sampled :class:`Design` and in :func:`plan_masks` (2):
the rows before it are ∅ and N."""

@final
class Design:
    """A planned set of coalitions plus everything needed to turn their values into Shapley values.

    Row order of :meth:`masks` is the row order that :meth:`estimate` expects. For sampled
    designs row :data:`EMPTY_ROW` is the empty coalition and row :data:`FULL_ROW` the grand
    coalition; for full enumeration row
    ``r`` is the coalition whose bit ``i`` (player ``i``) is bit ``i`` of ``r``.
    """

    @property
    def method(self) -> str:
        """The method that was planned (``"exact"`` when the budget covered every coalition)."""
    @property
    def n_players(self) -> int:
        """Number of players ``n``."""
    @property
    def n_coalitions(self) -> int:
        """Number of distinct coalitions ``m`` (rows of :meth:`masks`), empty and grand included."""
    @property
    def budget(self) -> int:
        """The budget the design was planned for, after paired rounding to an even number."""
    @property
    def exact(self) -> bool:
        """True when the design enumerates all ``2**n`` coalitions and the estimate is exact."""
    @property
    def exact_fallback(self) -> bool:
        """True when a sampling method was asked for but ``budget >= 2**n`` made it exact."""
    @property
    def seed(self) -> int:
        """The seed the design was planned from."""
    @property
    def stream(self) -> int:
        """The random stream id the design was planned from (per-row designs use one each)."""
    def masks(self, start: int = 0, stop: int | None = None) -> NDArray[np.bool_]:
        """Coalition indicators of rows ``start .. stop`` (default all), shape
        ``[stop - start, n]``, C order; the range is clipped to ``[0, m]``."""
    def sizes(self) -> NDArray[np.int64]:
        """Coalition sizes, shape ``[m]``."""
    def weights(self) -> NDArray[np.float64]:
        """Per-coalition regression weight (or matrix-vector factor / n); 0 for empty and grand."""
    def rank(self) -> int | None:
        """Numerical rank of the projected weighted design (regression methods, once factorized).

        ``None`` before the first :meth:`estimate` call and for non-regression methods. A full-rank
        design has rank ``n - 1``.
        """
    def solver(self) -> str | None:
        """The regression solver in use, ``"svd"`` or ``"normal"`` (see :data:`SOLVERS`).

        ``None`` before the first :meth:`estimate` call and for non-regression methods.
        """
    def estimate(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """Shapley values from the coalition values.

        ``values`` has shape ``[m]`` or ``[m, r]`` (one column per explained row and output,
        float64, finite). Returns ``[n]`` or ``[r, n]``. The first call factorizes the design;
        later calls reuse the factorization. Each column sums exactly (to rounding) to
        ``v(N) - v(empty)``. Releases the GIL. Warns (``UserWarning``) when an ill-conditioned
        full-rank design made the normal equations fall back to the SVD.
        """
    def standard_errors(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """Standard errors of :meth:`estimate`'s values, same shape (``[n]`` or ``[r, n]``).

        From the design's own evidence (see ``docs/standard-errors.md``): the cluster-robust,
        stratified sandwich of the regression methods (HC3-style leverage correction), the
        stratified sample variance of ``"unbiased"`` and of ``"permutation"``'s antithetic
        pairs, zero for enumeration. ``NaN`` with a single antithetic pair. Factorizes the
        design like :meth:`estimate`; releases the GIL.
        """
    def horvitz_thompson_errors(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """Standard errors ``[n]`` or ``[r, n]`` of the Horvitz-Thompson (maximum sample reuse)
        sums ``sum_S n w_S (z_S - s/n) (v(S) - v(empty))`` of a residual game's ``values``
        (``[m]`` or ``[m, r]``) over the design's sampled coalitions: the stratified sample
        variance. Releases the GIL.
        """

def plan(
    method: str,
    n_players: int,
    budget: int,
    seed: int,
    paired: bool = True,
    stream: int = 0,
    solver: str = "auto",
) -> Design:
    """Plan a design for ``method`` (one of :data:`METHODS`) on ``n_players`` players.

    ``solver`` (one of :data:`SOLVERS`) picks the regression solver: ``"auto"`` uses the
    bit-aware normal equations from a few dozen players on and the SVD below; ``"svd"`` always
    the SVD; ``"normal"`` the normal equations whenever they are accurate. Rank-deficient or
    ill-conditioned designs always use the SVD.

    ``budget`` counts distinct coalitions, empty and grand included; with ``paired=True`` an odd
    budget is rounded down. ``budget >= 2**n`` (or ``method="exact"``) gives full enumeration.
    Raises ``ValueError`` (``ferroshap.InvalidArgumentError``) naming the bad argument.
    """

def check_plan(method: str, n_players: int, budget: int | None = None) -> None:
    """Raise what :func:`plan` would raise for these arguments before it samples, without
    planning: ``n_players`` of zero, ``"exact"`` above :data:`MAX_EXACT_PLAYERS` players, a
    ``budget`` below 2, or below ``2 * n_players`` for ``"permutation"``. With ``budget=None``,
    only what does not depend on the budget is checked.

    Examples
    --------
    >>> check_plan("leverage", 30, 512) is None
    True
    >>> try:
    ...     check_plan("permutation", 4, 7)
    ... except ValueError as err:
    ...     print(err.argument)
    budget
    """

def covers_all(n_players: int, budget: int) -> bool:
    """Whether ``budget`` coalitions cover all ``2**n_players``, so that a design enumerates them
    (no budget covers 64 players or more).

    Examples
    --------
    >>> covers_all(3, 8), covers_all(3, 7), covers_all(64, 2**64 - 1)
    (True, False, False)
    """

def planned_coalitions(method: str, n_players: int, budget: int) -> int:
    """Coalitions a design of ``method`` holds for ``n_players`` and ``budget``: all
    ``2**n_players`` for ``"exact"`` or a budget that :func:`covers_all` of them (``2**64 - 1``
    from 64 players on), else ``budget``.

    Examples
    --------
    >>> planned_coalitions("exact", 4, 2), planned_coalitions("leverage", 40, 500)
    (16, 500)
    """

def solver_bytes(method: str, n_players: int, coalitions: int, solver: str = "auto") -> int:
    """Bytes of the estimate's matrices for ``coalitions`` coalitions (the memory estimate,
    saturating at ``2**64 - 1``): for a regression method on the normal equations (``solver``
    as in :func:`plan`), bit sets, the packed design and three ``n x n`` matrices; on the SVD,
    the ``m x n`` design, its thin factors and the ``n x m`` operator; for the other sampling
    methods an ``n x m`` operator; for enumeration the value table."""

# --- masked model inputs (rust/python/src/masking.rs) ---

def fill_masked_inputs(
    out: NDArray[np.float32] | NDArray[np.float64],
    masks: NDArray[np.bool_] | Design,
    mask_index: NDArray[np.int64],
    rows: NDArray[np.float32] | NDArray[np.float64],
    row_index: NDArray[np.int64],
    background: NDArray[np.float32] | NDArray[np.float64],
    player_of_feature: NDArray[np.int64] | None = None,
) -> None:
    """Write the interventional game's model inputs for ``k`` (coalition, row) pairs into ``out``.

    ``out`` is ``[k * B, n]``: block ``j`` holds ``B`` rows, row ``b`` taking ``rows[row_index[j]]``
    where coalition ``mask_index[j]`` holds the feature and ``background[b]`` elsewhere. The
    coalitions are feature indicators ``bool[m, n]``, or a :class:`Design` read in place (its
    masks never leave the core), whose players are the features or, with
    ``player_of_feature`` (``int[n]``), groups of them. ``out``, ``rows`` and ``background``
    share one float dtype; every array is C-contiguous. Runs in parallel with the GIL released.
    Raises ``InvalidArgumentError`` naming a misshapen argument or a bad index.
    """

@final
class InputFiller:
    """Fills a :class:`Design`'s masked inputs (as :func:`fill_masked_inputs` does) a chunk at a
    time ahead of the model, on a thread of its own that never takes the GIL.

    The pairs ``start .. n_pairs`` are cut into chunks of ``chunk`` pairs (the last may be
    shorter); chunk ``k`` is written to the front of ``buffers[k % len(buffers)]`` (1-D arrays of
    the data's dtype, each holding at least ``chunk * B * n`` values). Pair ``p`` is
    (coalition ``p // R``, row ``p % R``) of the ``R`` rows, or (coalition ``p``, row
    ``row_of_pair[p]``). The thread fills chunk ``k`` once the caller has taken chunk
    ``k - len(buffers) + 1``: the caller must be done with a chunk's buffer when it takes the one
    after. Each fill runs on that thread alone (``threads=1``) or on a pool of ``threads``.
    Raises ``InvalidArgumentError`` naming a misshapen argument and ``TypeError`` for a wrong
    dtype. The thread stops on :meth:`close`, when the object is dropped, after the last chunk
    or after a chunk that failed.
    """

    def __new__(
        cls,
        buffers: list[NDArray[np.float32]] | list[NDArray[np.float64]],
        design: Design,
        rows: NDArray[np.float32] | NDArray[np.float64],
        background: NDArray[np.float32] | NDArray[np.float64],
        *,
        n_pairs: int,
        start: int,
        chunk: int,
        player_of_feature: NDArray[np.int64] | None = None,
        row_of_pair: NDArray[np.int64] | None = None,
        threads: int = 1,
    ) -> InputFiller: ...
    def take(self) -> tuple[int, int, int]:
        """Wait (GIL released, Ctrl-C honoured) for the next chunk; return ``(slot, first,
        stop)``: its buffer's index and its pairs. Raises the error its fill met, or
        ``InvalidArgumentError`` when no chunk is left or the filler is closed."""
    def close(self) -> None:
        """Stop the thread after the chunk it is filling and wait for it; chunks filled ahead
        and not taken are dropped (:meth:`take` then raises)."""

# --- sparse set functions, interactions, ProxySPEX (rust/python/src/interactions.rs) ---

INDICES: list[str]
"""Interaction index names: Moebius, Fourier, SV, BV, SII, BII, k-SII, STII, FSII, FBII."""

MAX_TABLE_PLAYERS: int
"""Largest number of players :func:`exact_interactions` and :func:`moebius_transform` accept."""

_InteractionTuple = tuple[list[tuple[int, ...]], NDArray[np.float64], float, int]
"""``(keys, values, baseline, max_order)``: sorted player tuples (by size, then players) with
``1 <= len(key) <= max_order`` and exact zeros dropped, their values, the empty-set value and the
order actually used (1 for SV and BV, else ``min(max_order, n)``)."""

@final
class SparseFunction:
    """A set function on ``n_players`` players as sparse coefficients in one basis.

    ``"Fourier"``: ``f(x) = sum_K F(K) (-1)**|K & x|``;
    ``"Moebius"``: ``f(x) = sum_S m(S) [S <= x]``.
    Keys are stored sorted (by size, then players); repeated keys are summed and exact zeros
    dropped.
    """

    def __new__(
        cls,
        basis: str,
        n_players: int,
        keys: list[tuple[int, ...]],
        coefficients: NDArray[np.float64],
    ) -> SparseFunction: ...
    @property
    def basis(self) -> str:
        """``"Fourier"`` or ``"Moebius"``."""
    @property
    def n_players(self) -> int:
        """Number of players ``n``."""
    def __len__(self) -> int:
        """Number of non-zero coefficients."""
    def keys(self, positions: NDArray[np.int64] | None = None) -> list[tuple[int, ...]]:
        """The keys, sorted by size then players; given ``positions``, only the keys at those
        positions of that order (raises ``InvalidArgumentError``, argument ``positions``, for
        one outside ``0 .. len - 1``)."""
    def coefficients(self) -> NDArray[np.float64]:
        """The coefficients, in the order of :meth:`keys`."""
    def orders(self) -> NDArray[np.int64]:
        """The size of each key, in the order of :meth:`keys` (without building the keys)."""
    def to_moebius(self) -> SparseFunction:
        """The same function in the Moebius basis."""
    def to_fourier(self) -> SparseFunction:
        """The same function in the Fourier basis."""
    def evaluate(self, masks: NDArray[np.bool_]) -> NDArray[np.float64]:
        """Values on the coalitions ``masks: bool[m, n]``. Releases the GIL."""
    def interactions(self, index: str, max_order: int) -> _InteractionTuple:
        """Values of ``index`` (one of :data:`INDICES`) up to ``max_order`` by closed forms."""
    def shapley_values(self) -> NDArray[np.float64]:
        """Shapley values of the whole function, ``[n]``."""

def lightgbm_fourier(model_text: str, n_players: int) -> SparseFunction:
    """Exact Fourier spectrum on 0/1 inputs of a LightGBM regression model's text.

    ``model_text`` is ``Booster.model_to_string()``; its synthesis reproduces the raw prediction
    on every mask. Raises ``InvalidArgumentError`` (argument ``model``) for classification,
    categorical splits, linear trees, features ``>= n_players``, a path fixing more than 22
    distinct features, a tree expanding into more than ``2**22`` terms, trees expanding into more
    than ``2**26`` terms together, leaf values whose magnitudes sum past half the largest double,
    or malformed text (including nodes or leaves not reached from exactly one parent); argument
    ``n_players`` for more than ``2**32`` players.
    """

def plan_masks(n_players: int, budget: int, seed: int) -> NDArray[np.bool_]:
    """``budget`` distinct uniform random coalitions ``[budget, n]``: row 0 empty, row 1 full,
    the rest in random order (any suffix is a uniform validation split)."""

def select_support(
    spectrum: SparseFunction,
    basis: str,
    train_masks: NDArray[np.bool_],
    train_values: NDArray[np.float64],
    validation_masks: NDArray[np.bool_],
    validation_values: NDArray[np.float64],
) -> tuple[int, float, NDArray[np.float64]]:
    """How many of ``spectrum``'s largest keys in ``basis`` to keep: each support size ``k`` of
    a geometric grid is fitted by least squares on the training set and scored on the validation
    set. Returns ``(k, validation_r2, validation_fitted)``, the last the best fit's predictions on
    the validation rows (the intercept alone when no support scores)."""

def refit_top(
    spectrum: SparseFunction,
    basis: str,
    support: int,
    masks: NDArray[np.bool_],
    values: NDArray[np.float64],
    extremes: tuple[float, float] | None = None,
) -> SparseFunction:
    """The ``support`` keys of ``spectrum`` with the largest |coefficient| in ``basis``, plus the
    empty key, fitted by least squares on ``masks`` → ``values`` (a key whose column depends on
    earlier ones is left out). ``support`` must be below the number of masks. Given
    ``extremes = (v(∅), v(N))``, the least-squares fit subject to ``f(∅) = v(∅)`` and
    ``f(N) = v(N)`` (where no key tells ∅ from N, ``f(∅) = v(∅)`` and the rest of
    ``v(N) - v(∅)`` shared equally by first-order terms)."""

def select_ridge(
    spectrum: SparseFunction,
    train_masks: NDArray[np.bool_],
    train_values: NDArray[np.float64],
    validation_masks: NDArray[np.bool_],
    validation_values: NDArray[np.float64],
) -> tuple[float, float, NDArray[np.float64]]:
    """Penalty per sample of the proxy-scaled ridge: ``spectrum``'s Fourier terms (at most
    1024, the largest first), each penalised by its |coefficient| over the largest, fitted on the
    training set for each penalty of a log-spaced grid and scored on the validation set. Returns
    ``(penalty, validation_r2, validation_fitted)``."""

def refit_ridge(
    spectrum: SparseFunction,
    penalty: float,
    masks: NDArray[np.bool_],
    values: NDArray[np.float64],
    extremes: tuple[float, float] | None = None,
) -> SparseFunction:
    """``spectrum``'s Fourier terms (at most 1024, the largest first) fitted on ``masks`` →
    ``values`` by the proxy-scaled ridge with ``penalty`` per sample (``λ = penalty * rows``,
    intercept unpenalised): a Fourier function. Given ``extremes = (v(∅), v(N))``, the ridge
    subject to ``f(∅) = v(∅)`` and ``f(N) = v(N)`` (as for :func:`refit_top`)."""

def exact_interactions(
    values: NDArray[np.float64], n_players: int, index: str, max_order: int
) -> _InteractionTuple:
    """Interaction values from the full table ``values[mask]`` (bit ``i`` = player ``i``) by the
    definitions of each index (the oracle). At most :data:`MAX_TABLE_PLAYERS` players."""

def moebius_transform(values: NDArray[np.float64], n_players: int) -> SparseFunction:
    """The full Moebius transform of the table ``values[mask]``."""

# --- Fourier sketch, SHAP zero (rust/python/src/sketch.rs) ---

INTERACTION_INDICES: list[str]
"""Interaction indices :meth:`Spectrum.interactions` accepts: Moebius, k-SII, STII, FSII."""

@final
class SketchPlan:
    """The queries of a sparse q-ary Fourier sketch and how to decode the model's values on them.

    Sequences are ``uint8`` codes ``0..q``. Every random choice (subsampling matrices, delay
    offsets, held-out queries) follows from the seed.
    """

    @property
    def q(self) -> int:
        """Alphabet size."""
    @property
    def length(self) -> int:
        """Sequence length ``n``."""
    @property
    def b(self) -> int:
        """Subsampling dimension: ``q**b`` bins per group."""
    @property
    def groups(self) -> int:
        """Number of subsampling groups."""
    @property
    def offsets(self) -> int:
        """Number of random delay offsets (each brings ``n + 1`` delays)."""
    @property
    def n_holdout(self) -> int:
        """Held-out uniform random queries used to tune the noise threshold."""
    @property
    def n_queries(self) -> int:
        """Distinct queries (rows of :meth:`queries`), held-out ones included (≤ the budget)."""
    @property
    def budget(self) -> int:
        """The budget the plan was built for."""
    @property
    def seed(self) -> int:
        """The seed the plan was built from."""
    def queries(self) -> NDArray[np.uint8]:
        """The distinct query sequences ``[n_queries, length]`` to evaluate the model on."""
    def decode(self, values: NDArray[np.float64]) -> tuple[Spectrum, float, float]:
        """Decode the model's values on :meth:`queries` (``[n_queries]``, finite).

        Returns the spectrum, the chosen noise threshold (relative to the mean bin energy) and
        the held-out NMSE. Releases the GIL.
        """

def sketch_plan(q: int, length: int, budget: int, seed: int, offsets: int = 1) -> SketchPlan:
    """Plan a sketch of a function on sequences of ``length`` codes ``0..q``.

    The budget counts every distinct query, held-out ones included; a tenth of it (at most
    2000) is held out, the largest ``b`` with three groups is chosen and the rest buys more
    groups. Raises ``InvalidArgumentError`` naming the minimum budget when it is too small.
    """

@final
class Spectrum:
    """A sparse Fourier spectrum ``f(x) = mean + Re sum_k F[k] w^<x,k>``, ``w = e^(2 pi i/q)``.

    ``keys`` are distinct non-zero ``uint8`` vectors; the mean is ``F[0]``.
    """

    def __new__(
        cls,
        length: int,
        q: int,
        keys: NDArray[np.uint8],
        real: NDArray[np.float64],
        imag: NDArray[np.float64],
        mean: float,
    ) -> Spectrum: ...
    @property
    def length(self) -> int:
        """Sequence length ``n``."""
    @property
    def q(self) -> int:
        """Alphabet size."""
    @property
    def mean(self) -> float:
        """``F[0]``, the mean of the surrogate over uniform random sequences."""
    @property
    def n_coefficients(self) -> int:
        """Number of non-zero keys (the mean excluded)."""
    def keys(self) -> NDArray[np.uint8]:
        """The keys ``[K, length]``."""
    def real(self) -> NDArray[np.float64]:
        """Real parts of the coefficients ``[K]``."""
    def imag(self) -> NDArray[np.float64]:
        """Imaginary parts of the coefficients ``[K]``."""
    def predict(self, sequences: NDArray[np.uint8]) -> NDArray[np.float64]:
        """The surrogate on ``[rows, length]`` codes; returns ``[rows]``."""
    def shapley_values(
        self, sequences: NDArray[np.uint8], background: NDArray[np.uint8] | None = None
    ) -> NDArray[np.float64]:
        """Shapley values ``[rows, length]`` under the uniform background or, when given, the
        data background ``[B, length]``. Releases the GIL."""
    def base_value(self, background: NDArray[np.uint8] | None = None) -> float:
        """``v(empty)``: the mean (uniform background) or the surrogate's mean over the rows."""
    def interactions(
        self,
        sequences: NDArray[np.uint8],
        max_order: int | None = None,
        index: str = "k-SII",
    ) -> tuple[list[tuple[int, ...]], NDArray[np.float64]]:
        """Interactions under the uniform background: shared keys (player tuples of size
        ``1..max_order``) and values ``[rows, keys]``. ``max_order=None``: all orders (Moebius).
        """
