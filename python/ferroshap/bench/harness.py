"""Runs estimators x budgets x seeds x games and records accuracy, time and model cost."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ferroshap.bench.estimators import library_of, make_estimator
from ferroshap.bench.games import BenchGame, make_game
from ferroshap.bench.metrics import kendall, relative_error, spearman, top_k_precision

__all__ = ["TIMING_COLUMNS", "run_benchmark", "summarize"]

TIMING_COLUMNS = ["wall_s", "model_s", "engine_s"]
"""Result columns that vary between identical runs; every other column is reproducible."""

TOP_K = 5


class _TimedModel:
    """Wraps a model; accumulates the seconds spent in it and the rows it was called on."""

    def __init__(self, model: Callable[[np.ndarray], Any]) -> None:
        self.model = model
        self.seconds = 0.0
        self.rows = 0

    def __call__(self, z: np.ndarray) -> Any:
        start = time.perf_counter()
        out = self.model(z)
        self.seconds += time.perf_counter() - start
        self.rows += len(z)
        return out


def _run_one(game: BenchGame, method: str, budget: int, seed: int) -> dict[str, Any]:
    timed = _TimedModel(game.model)
    estimator = make_estimator(method)
    start = time.perf_counter()
    note, ok = "", True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            phi = estimator(timed, game.background, game.X, budget, seed)
        except ValueError as err:  # e.g. a budget below the method's minimum
            phi, note, ok = np.full_like(game.truth, np.nan), f"{type(err).__name__}: {err}", False
    wall = time.perf_counter() - start
    note = "; ".join([note, *sorted({str(w.message) for w in caught})]).strip("; ")
    return {
        "game": game.name,
        "n": game.n,
        "method": method,
        "library": library_of(method),
        "budget": budget,
        "seed": seed,
        "rel_error": relative_error(phi, game.truth) if ok else float("nan"),
        "spearman": spearman(phi, game.truth) if ok else float("nan"),
        "kendall": kendall(phi, game.truth) if ok else float("nan"),
        f"top{TOP_K}": top_k_precision(phi, game.truth, TOP_K) if ok else float("nan"),
        "model_rows": timed.rows,
        "coalitions_per_row": timed.rows / (len(game.background) * len(game.X)),
        "wall_s": wall,
        "model_s": timed.seconds,
        "engine_s": wall - timed.seconds,
        "note": note,
    }


def run_benchmark(
    games: Iterable[str | BenchGame],
    methods: Sequence[str],
    budgets: Sequence[int],
    seeds: Sequence[int],
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Any:
    """Run every method at every budget and seed on every game.

    Parameters
    ----------
    games
        Game names (see :func:`ferroshap.bench.available_games`) or :class:`BenchGame` objects.
    methods
        ferroshap methods and baselines (see :func:`ferroshap.bench.available_estimators`).
    budgets
        Distinct coalitions per explained row, ∅ and N included.
    seeds
        One independent design per seed.
    quick
        Build the small instance of each named game.
    progress
        Called with a short message before each game.

    Returns
    -------
    polars.DataFrame
        One row per (game, budget, seed, method), in that loop order: accuracy (``rel_error``,
        ``spearman``, ``kendall``, ``top5``), cost (``model_rows``, ``coalitions_per_row``) and
        time (``wall_s``, ``model_s``, ``engine_s = wall_s - model_s``). A run that raised a
        ``ValueError`` (such as a budget below the method's minimum) has NaN metrics and the
        message in ``note``; warnings an estimator raised (rank-deficient design, ...) are
        recorded in ``note`` too instead of being printed.

    Examples
    --------
    >>> from ferroshap.bench import run_benchmark
    >>> df = run_benchmark(["linear"], ["leverage"], budgets=[64], seeds=[0], quick=True)
    >>> float(df["rel_error"][0]) < 1e-20
    True
    """
    import polars as pl

    records = []
    for spec in games:
        game = make_game(spec, quick) if isinstance(spec, str) else spec
        if progress is not None:
            progress(f"{game.name}: n = {game.n}, {len(game.X)} rows")
        for budget in budgets:
            for seed in seeds:
                records.extend(_run_one(game, method, budget, seed) for method in methods)
    return pl.DataFrame(records)


def summarize(results: Any) -> Any:
    """Medians over seeds per (game, method, budget), with ``best`` marking the lowest median
    error at each (game, budget).

    Examples
    --------
    >>> from ferroshap.bench import run_benchmark, summarize
    >>> df = run_benchmark(["soum"], ["leverage", "unbiased"], [192], [0, 1], quick=True)
    >>> summarize(df).filter(best=True)["method"].to_list()
    ['leverage']
    """
    import polars as pl

    summary = (
        results.group_by(["game", "n", "method", "library", "budget"], maintain_order=True)
        .agg(
            pl.col("rel_error").median(),
            pl.col("spearman").median(),
            pl.col(f"top{TOP_K}").median(),
            pl.col("wall_s").median(),
            pl.col("engine_s").median(),
            pl.col("model_s").median(),
            pl.col("coalitions_per_row").median(),
            pl.len().alias("seeds"),
        )
        .with_columns(
            best=pl.col("rel_error") == pl.col("rel_error").min().over(["game", "budget"]),
        )
    )
    return summary
