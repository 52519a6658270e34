# ruff: noqa: E402 -- thread variables must be set before NumPy and LightGBM are imported
"""The accuracy suite (``ferroshap.bench.suite``): every estimator of ours and every peer on a grid
of games with exact truth, resumable seed by seed.

Usage::

    python benches/suite.py [--out DIR] [--smoke] [--games a,b] [--methods a,b] [--seeds K]
                            [--first-seed S] [--factors 3,5,20,60] [--jobs J]
                            [--peer-cache DIR | --no-peer-cache]

Writes ``DIR/cells/*.parquet`` (one per cell, rewritten after each of its seeds; rerun to resume
or to add seeds and estimators; the peers' runs are taken from and written back to the committed
``benches/peer-cache/``, so a rerun computes only ours once the cache holds the peers),
``DIR/suite.parquet`` (every run of the requested seeds and estimators),
``DIR/suite_summary.parquet``, ``DIR/suite.md`` and ``DIR/suite.png``.
"""

from __future__ import annotations

import os

os.environ.setdefault("FERROSHAP_BENCH_THREADS", str(os.cpu_count() or 1))
for _variable in (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "RAYON_NUM_THREADS",
):
    os.environ.setdefault(_variable, os.environ["FERROSHAP_BENCH_THREADS"])

import argparse
import sys
import time
import warnings
from pathlib import Path

import polars as pl

from ferroshap.bench import suite, suite_summary
from ferroshap.bench.timing import fix_threads

RESULTS = Path(__file__).resolve().parent / "results" / "suite"
PEER_CACHE = Path(__file__).resolve().parent / "peer-cache"
"""The peers' runs, committed: a rerun computes only ours and the peer runs it lacks."""


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    """Run (or resume) the suite and write its tables and plot."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="2 games, 2 seeds, 1-row background")
    parser.add_argument("--games", type=_names, help=f"subset of {', '.join(suite.SUITE_GAMES)}")
    parser.add_argument("--methods", type=_names, help="estimators (default: all but slow peers)")
    parser.add_argument("--seeds", type=int, help="seeds 0 .. K-1 (default 20; smoke 2)")
    parser.add_argument("--first-seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument(
        "--factors",
        type=lambda text: [int(part) for part in _names(text)],
        help="budgets as multiples of n (default 3,5,20,60; smoke 5,20)",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="worker processes, one (game, background) each"
    )
    parser.add_argument(
        "--peer-cache",
        type=Path,
        default=PEER_CACHE,
        help="folder of cached peer runs, read and updated (default: benches/peer-cache)",
    )
    parser.add_argument("--no-peer-cache", action="store_true", help="neither read nor update it")
    args = parser.parse_args(argv)
    fix_threads()
    warnings.filterwarnings("ignore", category=FutureWarning)
    count = args.seeds if args.seeds is not None else (2 if args.smoke else len(suite.SEEDS))
    grid = {
        "games": args.games or (suite.SMOKE_GAMES if args.smoke else suite.GRID_GAMES),
        "backgrounds": (1,) if args.smoke else suite.BACKGROUNDS,
        "factors": args.factors or ((5, 20) if args.smoke else suite.BUDGET_FACTORS),
    }
    start = time.perf_counter()
    runs = suite.run_suite(
        args.out,
        methods=args.methods or suite.default_methods(smoke=args.smoke),
        seeds=range(args.first_seed, args.first_seed + count),
        progress=lambda line: print(line, file=sys.stderr, flush=True),
        jobs=args.jobs,
        peer_cache=None if args.no_peer_cache else args.peer_cache,
        **grid,
    )
    summary = suite_summary.summarize_suite(runs)
    overview = suite_summary.ours_overview(summary)
    runs.write_parquet(args.out / "suite.parquet")
    summary.write_parquet(args.out / "suite_summary.parquet")
    with pl.Config(tbl_rows=200, tbl_cols=20, tbl_width_chars=200, float_precision=3):
        text = f"{overview}\n\n{summary.drop('library', 'exact')}"
    (args.out / "suite.md").write_text(text + "\n")
    print(text)
    suite_summary.plot_suite(summary, args.out / "suite.png")
    print(f"\n{runs.height} runs; {time.perf_counter() - start:.0f} s; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
