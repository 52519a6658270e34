"""Runs estimators x budgets x seeds x games and records accuracy, time and model cost."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ferroshap.bench.estimators import (
    check_estimators,
    library_of,
    make_estimator,
    producer_version,
)
from ferroshap.bench.games import BenchGame, make_game
from ferroshap.bench.metrics import (
    kendall,
    mean_relative_squared_error,
    spearman,
    top_k_precision,
)
from ferroshap.bench.peers import PEERS, unavailable_reason
from ferroshap.bench.timing import TimedModel, engine_time

__all__ = ["TIMING_COLUMNS", "run_benchmark", "run_one", "summarize"]

TIMING_COLUMNS = ["wall_s", "model_in_call_s", "engine_s"]
"""Result columns that vary between identical runs; every other column is reproducible."""

TOP_K = 5


def run_one(
    game: BenchGame, method: str, budget: int, seed: int, timing_rounds: int = 0
) -> dict[str, Any]:
    """One run of ``method`` on ``game``: accuracy, model rows, wall time and (with
    ``timing_rounds``) engine time by :func:`ferroshap.bench.timing.engine_time`.

    A peer that cannot run here is recorded with NaN metrics and the reason in ``note``, as is a
    run that raised a ``ValueError`` (e.g. a budget below the method's minimum). ``exact`` marks a
    budget that reaches ``2**n``, where every estimator may enumerate.
    """
    reason = unavailable_reason(method) if method in PEERS else None
    timed = TimedModel(game.model)
    start = time.perf_counter()
    note, ok = "", reason is None
    phi = np.full_like(game.truth, np.nan)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if reason is not None:
            note = f"skipped: {reason}"
        else:
            estimator = make_estimator(method)
            try:
                phi = estimator(timed, game.background, game.X, budget, seed)
            except ValueError as err:  # e.g. a budget below the method's minimum
                note, ok = f"{type(err).__name__}: {err}", False
    wall = time.perf_counter() - start
    engine = None
    if ok and timing_rounds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engine = engine_time(
                lambda model: estimator(model, game.background, game.X, budget, seed),
                game.model,
                timing_rounds,
            )["engine_s"]
    note = "; ".join([note, *sorted({str(w.message) for w in caught})]).strip("; ")
    return {
        "game": game.name,
        "n": game.n,
        "method": method,
        "library": library_of(method),
        "version": producer_version(method),
        "budget": budget,
        "exact": budget >= 2**game.n,
        "seed": seed,
        "rel_error": mean_relative_squared_error(phi, game.truth) if ok else float("nan"),
        "spearman": spearman(phi, game.truth) if ok else float("nan"),
        "kendall": kendall(phi, game.truth) if ok else float("nan"),
        f"top{TOP_K}": top_k_precision(phi, game.truth, TOP_K) if ok else float("nan"),
        "model_rows": timed.rows,
        "coalitions_per_row": timed.rows / (len(game.background) * len(game.X)),
        "wall_s": wall,
        "model_in_call_s": timed.seconds,
        "engine_s": engine,
        "note": note,
    }


def run_benchmark(
    games: Iterable[str | BenchGame],
    methods: Sequence[str],
    budgets: Sequence[int],
    seeds: Sequence[int],
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
    timing_rounds: int = 0,
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
    timing_rounds
        With a positive count (at least 5), the first seed's run of every (game, method, budget)
        also measures ``engine_s`` by :func:`ferroshap.bench.timing.engine_time` with that many
        rounds; otherwise ``engine_s`` is null.

    Returns
    -------
    polars.DataFrame
        One row per (game, budget, seed, method), in that loop order: accuracy (``rel_error``,
        ``spearman``, ``kendall``, ``top5``), cost (``model_rows``, ``coalitions_per_row``) and
        time (``wall_s`` of the call, ``model_in_call_s`` spent inside the model during it,
        ``engine_s`` by the one definition of engine time, null where not measured). A run that
        raised a ``ValueError`` (such as a budget below the method's minimum) or a peer that
        cannot run here has NaN metrics and the message in ``note``; warnings an estimator raised
        (rank-deficient design, ...) are recorded in ``note`` too instead of being printed.

    Examples
    --------
    >>> from ferroshap.bench import run_benchmark
    >>> df = run_benchmark(["linear"], ["leverage"], budgets=[64], seeds=[0], quick=True)
    >>> float(df["rel_error"][0]) < 1e-20
    True
    """
    import polars as pl

    check_estimators(list(methods))
    records = []
    for spec in games:
        game = make_game(spec, quick) if isinstance(spec, str) else spec
        if progress is not None:
            progress(f"{game.name}: n = {game.n}, {len(game.X)} rows")
        for budget in budgets:
            for i, seed in enumerate(seeds):
                rounds = timing_rounds if i == 0 else 0
                records.extend(run_one(game, method, budget, seed, rounds) for method in methods)
    return pl.DataFrame(records)


def summarize(results: Any) -> Any:
    """Medians over seeds per (game, method, budget), with ``best`` marking the lowest median
    error at each (game, budget) and ``skip`` the reason a peer could not run (else null).

    Examples
    --------
    >>> from ferroshap.bench import run_benchmark, summarize
    >>> df = run_benchmark(["soum"], ["leverage", "unbiased"], [192], [0, 1], quick=True)
    >>> summarize(df).filter(best=True)["method"].to_list()
    ['leverage']
    """
    import polars as pl

    metrics = ["rel_error", "spearman", f"top{TOP_K}"]
    summary = (
        results.with_columns(pl.col(metrics).fill_nan(None))
        .group_by(["game", "n", "method", "library", "budget"], maintain_order=True)
        .agg(
            pl.col("rel_error").median(),
            pl.col("spearman").median(),
            pl.col(f"top{TOP_K}").median(),
            pl.col("wall_s").median(),
            pl.col("engine_s").median(),
            pl.col("model_in_call_s").median(),
            pl.col("coalitions_per_row").median(),
            pl.len().alias("seeds"),
            pl.col("note").filter(pl.col("note").str.starts_with("skipped")).first().alias("skip"),
        )
        .with_columns(
            best=pl.col("rel_error") == pl.col("rel_error").min().over(["game", "budget"]),
        )
    )
    return summary
