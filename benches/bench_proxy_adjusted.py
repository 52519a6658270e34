"""Proxy-adjusted estimators on the breast-cancer protocol (``benches/protocols.py accuracy``).

``LGBMRegressor(200 trees, 31 leaves)`` on breast cancer (n = 30), 50 background rows, 8 rows,
budgets 256 / 512 / 2048: relative error against exact interventional TreeSHAP, median over
seeds, for ``proxy-leverage``, ``leverage``, ``tree-msr`` (same samples; ``--cross-fit`` adds
the 4-fold cross-fitted variant, four proxy fits per row), ``auto`` when this version has it, and
every peer of ``ferroshap.bench.protocols.ACCURACY_PEERS`` (shap 0.54, shapiq 1.8); plus the
seconds per explained row each estimator took (the proxy's added time is its difference to
``leverage``).

Usage::

    python benches/bench_proxy_adjusted.py [--seeds K] [--cross-fit] [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

import ferroshap as fs
from ferroshap.bench.protocols import (
    ACCURACY_PEERS,
    accuracy,
    summarize_accuracy,
)
from ferroshap.bench.report import to_markdown
from ferroshap.bench.timing import fix_threads

RESULTS_DIR = Path(__file__).resolve().parent / "results"
NAMES = [
    *(["auto"] if "auto" in fs.METHODS else []),
    "proxy-leverage",
    "leverage",
    "tree-msr",
    *ACCURACY_PEERS,
]
BUDGETS = (256, 512, 2048)
ROWS = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--cross-fit", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()
    fix_threads()
    args.out.mkdir(parents=True, exist_ok=True)
    names = [*NAMES, "tree-msr cross-fit 4"] if args.cross_fit else NAMES
    long = accuracy(
        range(args.seeds), BUDGETS, names, checkpoint=args.out / "proxy_adjusted_long.parquet"
    )
    seconds = long.group_by("estimator", "budget").agg(
        (pl.col("seconds").median() / ROWS).alias("seconds_per_row")
    )
    table = (
        summarize_accuracy(long)
        .drop("vs_shap", "best")
        .join(seconds, on=["estimator", "budget"])
        .sort("budget", "median_rel_error")
    )
    (args.out / "proxy_adjusted.md").write_text(to_markdown(table) + "\n")
    print(to_markdown(table))


if __name__ == "__main__":
    main()
