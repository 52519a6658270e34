"""The accuracy suite: every estimator of ours and every peer on a grid of games with exact truth.

Grid: games (:data:`GRID_GAMES`, or any of :data:`SUITE_GAMES`) x budgets ``{3n, 5n, 20n, 60n}``
(capped below ``2**n``; a cell whose budget reaches ``2**n`` is run all the same and marked
``exact``) x backgrounds of :data:`BACKGROUNDS` rows, :data:`ROWS` explained rows, seeds ``0 ..
19``. A *cell* is one (game, background, budget); each cell has its own Parquet file under
``<out>/cells/``, rewritten (through a temporary file) after every seed of it, so an interrupted
suite loses at most the seed it was running and resumes there, and no run is counted twice. A rerun
with more estimators or more seeds runs only the (seed, estimator) pairs a cell lacks, so the seeds
of a long grid can be gathered over several runs (``--first-seed`` / ``--seeds``). A run recorded
by another version of its producer (:func:`~ferroshap.bench.estimators.producer_version`: a peer's
library version; ferroshap's version and a digest of its files) counts as missing and is replaced:
peers run once per library version, ferroshap's estimators again after each change of its code.
The summary (:mod:`ferroshap.bench.suite_summary`) gives, per cell and estimator, the median
error over seeds, the ratio to the best peer's with the seeds' noise on it, and the wall seconds
per explained row.

Estimators are every name of :func:`ferroshap.bench.estimators.all_estimators`, so besides the
methods and peers the suite runs, when named, the recipes of ``method="auto"`` that no method
name reaches (:func:`ferroshap.bench.estimators.recipes`), e.g. ``--games
rf-diabetes,mlp-diabetes,svm-wine,soum30,soum100 --methods
auto,odd-sparse,odd-blend,odd-msr,...,shapiq-kernel,...``.

Run it with ``python benches/suite.py`` (``--smoke`` for the small grid the tests run).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ferroshap._core import InvalidArgumentError, covers_all
from ferroshap.bench.estimators import (
    available_estimators,
    check_estimators,
    library_of,
    producer_version,
)
from ferroshap.bench.games import (
    BenchGame,
    boosted_classifier_game,
    forest_game,
    knn_game,
    lightgbm_digits_game,
    lightgbm_game,
    logistic_interactions_game,
    mlp_game,
    soum_game,
    svm_game,
    tuning_forest_game,
    tuning_mlp_game,
    tuning_svm_game,
    xgboost_game,
)
from ferroshap.bench.harness import run_one
from ferroshap.bench.unseen_games import UNSEEN_BUILDERS

__all__ = [
    "BACKGROUNDS",
    "BUDGET_FACTORS",
    "GRID_GAMES",
    "HELD_OUT_GAMES",
    "ROWS",
    "SLOW_PEERS",
    "SUITE_GAMES",
    "TUNING_GAMES",
    "UNSEEN_GAMES",
    "Cell",
    "cells",
    "run_suite",
]

ROWS = 4
"""Explained rows per game."""

BUDGET_FACTORS = (3, 5, 20, 60)
"""Budgets of the grid, as multiples of n."""

BACKGROUNDS = (1, 50)
"""Background rows of the grid (one row: the single-baseline game)."""

SEEDS = tuple(range(20))
"""Seeds of a full run."""

SUITE_GAMES: dict[str, tuple[int, Callable[[int], BenchGame]]] = {
    "lightgbm": (30, lambda bg: lightgbm_game(rows=ROWS, n_background=bg)),
    "digits": (64, lambda bg: lightgbm_digits_game(rows=ROWS, n_background=bg)),
    "forest": (10, lambda bg: forest_game(rows=ROWS, n_background=bg)),
    "mlp": (12, lambda bg: mlp_game(rows=ROWS, n_background=bg)),
    "svm": (14, lambda bg: svm_game(rows=ROWS, n_background=bg)),
    "soum30": (30, lambda bg: soum_game(n=30, rows=ROWS, n_background=bg)),
    "soum100": (100, lambda bg: soum_game(n=100, rows=ROWS, n_background=bg)),
    "rf-diabetes": (10, lambda bg: tuning_forest_game(n_background=bg, rows=ROWS)),
    "mlp-diabetes": (10, lambda bg: tuning_mlp_game(n_background=bg, rows=ROWS)),
    "svm-wine": (12, lambda bg: tuning_svm_game(n_background=bg, rows=ROWS)),
    "hgb-cancer": (12, lambda bg: boosted_classifier_game(rows=ROWS, n_background=bg)),
    "logit-cancer": (12, lambda bg: logistic_interactions_game(rows=ROWS, n_background=bg)),
    "knn-diabetes": (10, lambda bg: knn_game(rows=ROWS, n_background=bg)),
    "xgb-friedman": (14, lambda bg: xgboost_game(rows=ROWS, n_background=bg)),
    **{
        name: (n, lambda bg, make=make: make(ROWS, bg))
        for name, (n, make) in UNSEEN_BUILDERS.items()
    },
}
"""Games by name: the number of players (the budgets need it before a game is built) and the
builder taking the background size: LightGBM on breast cancer (n = 30) and on
digits (n = 64) with exact interventional TreeSHAP; a random forest (n = 10), an MLP (n = 12) and
an RBF SVM (n = 14) with truth by enumeration; sums of unanimity models of order up to 4 at
n = 30 and 100 in closed form; the three tabular cases ``method="auto"``'s former thresholds
were tuned on (a random forest and an MLP on standardized diabetes, n = 10, an RBF SVM on wine,
n = 12; truth by enumeration); and four kinds added later: a gradient-boosting classifier's
and a logistic regression with pairwise interactions' probabilities (breast cancer, n = 12), a
nearest-neighbour regressor (diabetes, n = 10) and XGBoost on Friedman's first problem (n = 14;
needs ``xgboost``). :data:`TUNING_GAMES` and :data:`HELD_OUT_GAMES` split the grid's in halves;
:data:`UNSEEN_GAMES` are outside the grid."""

TUNING_GAMES = (
    "rf-diabetes",
    "mlp-diabetes",
    "svm-wine",
    "hgb-cancer",
    "logit-cancer",
    "xgb-friedman",
    "soum30",
)
"""The tuning half of :data:`SUITE_GAMES`: ``auto`` is tuned on these games' seeds 100-119 only
(the first three since the start, the other four since 2026-12-07; docs/auto.md)."""

UNSEEN_GAMES = tuple(UNSEEN_BUILDERS)
"""Games outside the grid (:mod:`ferroshap.bench.unseen_games`), named with ``--games`` only:
run once, on 2026-12-07, to check ``auto`` on kinds of model it was never tuned on."""

HELD_OUT_GAMES = tuple(g for g in SUITE_GAMES if g not in TUNING_GAMES + UNSEEN_GAMES)
"""The held-out half: never tuned on, reported apart (:func:`ours_overview`)."""

GRID_GAMES = TUNING_GAMES + HELD_OUT_GAMES
"""The games of the default grid: both halves."""

SMOKE_GAMES = ("soum30", "forest")

SLOW_PEERS = ("shapiq-proxyspex", "shapiq-spex")
"""Peers left out unless named: interaction estimators that take 30-75 s per explained row at
budget 20n on the breast-cancer game (measured here), hours over the grid."""


@dataclass(frozen=True)
class Cell:
    """One (game, background rows, budget) of the grid."""

    game: str
    background: int
    budget: int
    n: int

    @property
    def exact(self) -> bool:
        """The budget reaches ``2**n``: every estimator may enumerate."""
        return covers_all(self.n, self.budget)

    @property
    def key(self) -> str:
        """File stem of the cell's checkpoint."""
        return f"{self.game}_bg{self.background}_b{self.budget}"


Todo = list[tuple[int, list[str]]]
"""The runs a cell lacks: ``(seed, methods)`` pairs in seed order."""


def cells(
    games: Iterable[str] = GRID_GAMES,
    backgrounds: Iterable[int] = BACKGROUNDS,
    factors: Iterable[int] = BUDGET_FACTORS,
) -> list[Cell]:
    """The grid's cells in run order; budgets ``factor * n`` capped at ``2**n - 2`` (an even
    budget below ``2**n``, so paired designs stay sampling designs).

    Examples
    --------
    >>> [c.budget for c in cells(["forest"], [1])]
    [30, 50, 200, 600]
    """
    grid = []
    for game in games:
        if game not in SUITE_GAMES:
            raise InvalidArgumentError(
                f"games: unknown suite game {game!r}; expected some of {', '.join(SUITE_GAMES)}"
            )
        n = SUITE_GAMES[game][0]
        for background in backgrounds:
            for factor in factors:
                grid.append(Cell(game, background, min(factor * n, 2**n - 2), n))
    return grid


def default_methods(smoke: bool = False) -> list[str]:
    """Every estimator that can run here but :data:`SLOW_PEERS`; with ``smoke``, only the fast
    peers and ferroshap's regression methods."""
    names = available_estimators(fast_only=smoke)
    if smoke:
        keep = ("leverage", "kernel", "auto", "proxy-leverage")
        names = [m for m in names if library_of(m) != "ferroshap" or m in keep]
    return [m for m in names if m not in SLOW_PEERS]


def run_suite(
    out: str | Path,
    games: Sequence[str] = GRID_GAMES,
    methods: Sequence[str] | None = None,
    seeds: Sequence[int] = SEEDS,
    backgrounds: Sequence[int] = BACKGROUNDS,
    factors: Sequence[int] = BUDGET_FACTORS,
    progress: Callable[[str], None] | None = None,
    jobs: int = 1,
    peer_cache: str | Path | None = None,
) -> Any:
    """Run the (cell, seed, estimator) runs that ``out/cells`` does not hold yet and return every
    run of the grid for ``methods`` and ``seeds``.

    Parameters
    ----------
    out
        Output folder: ``cells/<game>_bg<rows>_b<budget>.parquet`` per cell, rewritten after
        each of its seeds.
    games, backgrounds, factors, seeds
        The grid (defaults: the full suite).
    methods
        Estimator names (default :func:`default_methods`).
    progress
        Called with a line per cell.
    jobs
        Worker processes. Each runs the cells of one (game, background) at a time (the game is
        built once per worker and task; tasks start largest first, by players x budget x
        runs) with ``$FERROSHAP_BENCH_THREADS / jobs`` threads (at least one), so the wall
        seconds per row stay comparable within a run. Accuracy does not depend on it; a cell's
        file is only written by the process that runs the cell.
    peer_cache
        A folder of peers' runs, ``<cell>.parquet`` per cell (``benches/peer-cache`` in the
        repository): before running, a cell takes the cached runs it lacks (only those recorded
        by the installed version of their library); afterwards every peer run of the cell is
        written back, so peers run once per library version, wherever the suite runs.

    Returns
    -------
    polars.DataFrame
        One row per (cell, seed, method): :func:`ferroshap.bench.harness.run_one`'s columns plus
        ``background`` and ``cell``.
    """
    import polars as pl

    methods = list(methods) if methods is not None else default_methods()
    check_estimators(methods)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InvalidArgumentError(f"jobs must be a positive integer, got {jobs!r}")
    folder = Path(out) / "cells"
    folder.mkdir(parents=True, exist_ok=True)
    grid = cells(games, backgrounds, factors)
    if peer_cache is not None:
        for cell in grid:
            _merge_peer_runs(
                Path(peer_cache) / f"{cell.key}.parquet", folder / f"{cell.key}.parquet"
            )
    tasks: dict[tuple[str, int], list[tuple[Cell, Todo]]] = {}
    for cell in grid:
        todo = _missing_runs(folder / f"{cell.key}.parquet", methods, seeds)
        if todo:
            tasks.setdefault((cell.game, cell.background), []).append((cell, todo))
    report = progress or (lambda line: None)
    if jobs == 1 or len(tasks) <= 1:
        for work in tasks.values():
            _run_cells(folder, work, report)
    else:
        # Largest first (players x budget x runs, a rough cost), so the long unanimity cells at
        # n = 100 do not start last on one worker while the other sits idle.
        work = sorted(tasks.values(), key=lambda task: -sum(map(_cost, task)))
        _run_in_processes(folder, work, jobs, report)
    if peer_cache is not None:
        Path(peer_cache).mkdir(parents=True, exist_ok=True)
        for cell in grid:
            _merge_peer_runs(
                folder / f"{cell.key}.parquet", Path(peer_cache) / f"{cell.key}.parquet"
            )
    wanted = [folder / f"{c.key}.parquet" for c in grid]
    runs = pl.concat([_read_cell(p) for p in wanted], how="diagonal_relaxed")
    runs = runs.filter(pl.col("method").is_in(methods), pl.col("seed").is_in(list(seeds)))
    return _current_runs(runs)


def _cost(work: tuple[Cell, Todo]) -> int:
    """A rough cost of a cell's missing runs: players x budget x runs."""
    cell, todo = work
    return cell.n * cell.budget * sum(len(methods) for _, methods in todo)


def _missing_runs(path: Path, methods: Sequence[str], seeds: Sequence[int]) -> Todo:
    """The ``(seed, methods)`` runs that the checkpoint at ``path`` lacks (all of them without
    one), seeds in the given order, a seed only where some method is missing. A run recorded by
    another version of its producer (:func:`~ferroshap.bench.estimators.producer_version`)
    counts as missing."""
    done = set(_current_runs(_read_cell(path)).select("seed", "method").iter_rows())
    todo = [(seed, [m for m in methods if (seed, m) not in done]) for seed in seeds]
    return [(seed, missing) for seed, missing in todo if missing]


def _merge_peer_runs(source: Path, target: Path) -> None:
    """Add to the cell file ``target`` the current peer runs of ``source`` (a cell file of the
    same cell) that it lacks, by (seed, method); runs of stale producer versions are dropped
    from both. Written through a temporary file, and only when something changed."""
    import polars as pl

    offered = _current_runs(_read_cell(source))
    peers = [m for m in offered["method"].unique().to_list() if library_of(m) != "ferroshap"]
    offered = offered.filter(pl.col("method").is_in(peers))
    held = _read_cell(target)
    current = _current_runs(held)
    merged = pl.concat([current, offered], how="diagonal_relaxed").unique(
        ["seed", "method"], keep="first", maintain_order=True
    )
    if merged.height == held.height and current.height == held.height:
        return
    partial = target.with_suffix(".parquet.tmp")
    merged.write_parquet(partial)
    os.replace(partial, target)


def _read_cell(path: Path) -> Any:
    """The runs of a cell's checkpoint (an empty frame without one; ``version`` is empty in
    checkpoints written before runs recorded it)."""
    import polars as pl

    if not path.exists():
        return pl.DataFrame(schema={"seed": pl.Int64, "method": pl.String, "version": pl.String})
    frame = pl.read_parquet(path)
    if "version" not in frame.columns:
        frame = frame.with_columns(version=pl.lit(""))
    return frame


def _current_runs(frame: Any) -> Any:
    """The rows of ``frame`` recorded by the installed version of their producer."""
    import polars as pl

    versions = {m: producer_version(m) for m in frame["method"].unique().to_list()}
    current = pl.col("method").replace_strict(versions, default="") == pl.col("version")
    return frame.filter(current)


def _run_cells(
    folder: Path,
    work: list[tuple[Cell, Todo]],
    report: Callable[[str], None] | None = None,
) -> list[str]:
    """Run the missing runs of the cells of one (game, background), adding each seed's runs to
    its cell's checkpoint (through a temporary file) as soon as they are done; returns one
    progress line per cell, each also passed to ``report`` when its cell is complete."""
    import polars as pl

    lines = []
    game: BenchGame | None = None
    for cell, todo in work:
        start = time.perf_counter()
        if game is None:
            game = SUITE_GAMES[cell.game][1](cell.background)
            assert game.n == cell.n, f"{cell.game} has {game.n} players, SUITE_GAMES says {cell.n}"
        path = folder / f"{cell.key}.parquet"
        # read once, then kept here; runs of other producer versions are dropped (replaced)
        frame = _current_runs(_read_cell(path))
        for seed, methods in todo:
            records = [
                run_one(game, method, cell.budget, seed) | {"background": cell.background}
                for method in methods
            ]
            new = pl.DataFrame(records).with_columns(cell=pl.lit(cell.key), game=pl.lit(cell.game))
            frame = pl.concat([frame, new], how="diagonal_relaxed")
            partial = path.with_suffix(".parquet.tmp")
            frame.write_parquet(partial)
            os.replace(partial, path)
        runs = sum(len(methods) for _, methods in todo)
        lines.append(f"{cell.key}: {runs} runs in {time.perf_counter() - start:.1f} s")
        if report is not None:
            report(lines[-1])
    return lines


def _run_in_processes(
    folder: Path,
    tasks: list[list[tuple[Cell, Todo]]],
    jobs: int,
    report: Callable[[str], None],
) -> None:
    """:func:`_run_cells` of every task on ``jobs`` spawned processes, each with its share of
    the threads (set in the environment the workers start from)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from ferroshap.bench.timing import THREAD_VARIABLES

    total = int(os.environ.get("FERROSHAP_BENCH_THREADS", os.cpu_count() or 1))
    share = str(max(1, total // jobs))
    saved = {name: os.environ.get(name) for name in ("FERROSHAP_BENCH_THREADS", *THREAD_VARIABLES)}
    os.environ.update(dict.fromkeys(saved, share))
    try:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(jobs, mp_context=context) as pool:
            futures = [pool.submit(_run_cells, folder, work) for work in tasks]
            for future in as_completed(futures):
                for line in future.result():
                    report(line)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
