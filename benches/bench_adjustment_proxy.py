"""The proxy-adjusted estimators' LightGBM proxy: accuracy of its rounds, rate and penalty.

Runs one estimator (``odd-sparse``, ``proxy-leverage``, ``odd-msr``, ...) on suite games with
the proxy's ``ADJUSTMENT_ROUNDS`` and learning rate set to each configuration, and prints per
cell (game, background rows, budget) the median relative squared error over the seeds, then per
configuration the geometric mean over cells of its ratio to the first configuration's. The
evidence behind ``ferroshap.interactions.proxy.ADJUSTMENT_PARAMS`` (docs/proxy-adjusted.md).
With ``--small-l2`` the configurations are instead the L2 penalties of ``auto``'s small-budget
proxy of the game (``SMALL_BUDGET_PARAMS["lambda_l2"]``, docs/auto.md), rounds and rate as set.

Usage::

    python benches/bench_adjustment_proxy.py odd-sparse --games rf-diabetes,mlp-diabetes,svm-wine \\
        --seeds 100:110 --factors 40,60
    python benches/bench_adjustment_proxy.py auto --games hgb-cancer,svm-wine --seeds 100:120 \\
        --factors 3,5 --small-l2 0,1,2,4,8
"""

from __future__ import annotations

import argparse

import numpy as np

from ferroshap.bench.harness import run_one
from ferroshap.bench.suite import BACKGROUNDS, SUITE_GAMES
from ferroshap.bench.timing import fix_threads
from ferroshap.interactions import proxy

CONFIGS = {
    "800@0.05": (800, 0.05),
    "200@0.2": (200, 0.2),
    "120@0.3": (120, 0.3),
    "100@0.3": (100, 0.3),
    "300@0.12": (300, 0.12),
}
"""Rounds and learning rate of each configuration (``--configs`` picks some, the first of them
the reference)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("estimator")
    parser.add_argument("--games", default="rf-diabetes,mlp-diabetes,svm-wine")
    parser.add_argument("--seeds", default="100:110", help="first:stop")
    parser.add_argument("--factors", default="40,60", help="budgets as multiples of n")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="names of CONFIGS, in order")
    parser.add_argument(
        "--small-l2",
        type=penalties,
        help="L2 penalties of the small-budget proxy to compare, the first the reference",
    )
    args = parser.parse_args()
    fix_threads()  # FERROSHAP_BENCH_THREADS=1 for the figures in docs/proxy-adjusted.md
    first, stop = map(int, args.seeds.split(":"))
    reference: dict[tuple[str, int, int], float] = {}
    saved = (
        proxy.ADJUSTMENT_ROUNDS,
        proxy.ADJUSTMENT_PARAMS["learning_rate"],
        proxy.SMALL_BUDGET_PARAMS["lambda_l2"],
    )
    if args.small_l2:
        configs = {f"l2={p:g}": (*saved[:2], p) for p in args.small_l2}
    else:
        configs = {name: (*CONFIGS[name], saved[2]) for name in args.configs.split(",")}
    ratios: dict[str, list[float]] = {name: [] for name in configs}
    for name in args.games.split(","):
        n, build = SUITE_GAMES[name]
        for background in BACKGROUNDS:
            game = build(background)
            for factor in map(int, args.factors.split(",")):
                budget = min(factor * n, 2**n - 2)
                for config, settings in configs.items():
                    set_proxy(*settings)
                    runs = [run_one(game, args.estimator, budget, s) for s in range(first, stop)]
                    error = float(np.median([run["rel_error"] for run in runs]))
                    cell = (name, background, budget)
                    reference.setdefault(cell, error)
                    if reference[cell] > 0:  # else every configuration is exact here
                        ratios[config].append(error / reference[cell])
                    print(
                        f"{name:13s} bg {background:2d} budget {budget:5d} {config:9s} {error:.3e}"
                    )
    set_proxy(*saved)
    for config, values in ratios.items():
        print(
            f"{config:9s} geometric mean ratio {np.exp(np.mean(np.log(values))):.3f} "
            f"(worst {max(values):.3f}, {len(values)} cells)"
        )


def penalties(text: str) -> list[float]:
    """``--small-l2``: comma-separated L2 penalties, each a number >= 0."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(value >= 0 for value in values):
        raise argparse.ArgumentTypeError(f"expected numbers >= 0 separated by commas; got {text!r}")
    return values


def set_proxy(rounds: int, rate: float, small_l2: float) -> None:
    """Every proxy of the proxy-adjusted estimators (``auto``'s small-budget one included) with
    ``rounds`` rounds at learning rate ``rate``; the small-budget one with L2 penalty
    ``small_l2``."""
    proxy.ADJUSTMENT_ROUNDS = rounds
    proxy.ADJUSTMENT_PARAMS["learning_rate"] = rate
    proxy.SMALL_BUDGET_PARAMS["learning_rate"] = rate
    proxy.SMALL_BUDGET_PARAMS["lambda_l2"] = small_l2


if __name__ == "__main__":
    main()
