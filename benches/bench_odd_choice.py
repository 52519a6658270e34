"""``auto``'s held-out choice (``odd-choice``) against the candidates it chooses from.

On each suite game, background size and budget, every seed plans one paired ``leverage`` design,
queries the game on it once and runs each estimator on the same values: ``proxy-leverage``,
``odd-sparse``, ``odd-blend`` (their mean), ``odd-choice`` (the one with the smallest held-out
error) and, for reference, the fixed rule ``auto`` used before (``odd-sparse`` from 40n, 15n
with one background row, else ``proxy-leverage``). Printed per cell: the median relative
squared error over seeds of each, divided by the better median of ``proxy-leverage`` and
``odd-sparse``; then the geometric mean and the largest of those ratios over the cells.

Usage::

    python benches/bench_odd_choice.py --games rf-diabetes,mlp-diabetes,svm-wine --seeds 100:106
    python benches/bench_odd_choice.py --games forest,mlp,svm,soum30,lightgbm --seeds 0:10
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ferroshap import _core
from ferroshap.bench.metrics import mean_relative_squared_error
from ferroshap.bench.suite import SUITE_GAMES
from ferroshap.bench.timing import fix_threads
from ferroshap.query.games import TabularGame
from ferroshap.sampling.auto import CANDIDATES, ODD_CHOICE
from ferroshap.sampling.proxy_adjusted import adjust

ESTIMATORS = (*CANDIDATES, ODD_CHOICE)
"""The estimators run on each design's values."""


def fixed_rule(n: int, budget: int, background: int) -> str:
    """The estimator the former fixed rule ran at this size (from the proxy minimum on)."""
    factor = 15 if background == 1 else 40
    return "odd-sparse" if budget >= factor * n else "proxy-leverage"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", default="rf-diabetes,mlp-diabetes,svm-wine")
    parser.add_argument("--seeds", default="100:106", help="first:stop")
    parser.add_argument("--factors", default="10,20,40", help="budgets as multiples of n")
    parser.add_argument("--backgrounds", default="1,50")
    args = parser.parse_args()
    fix_threads()  # FERROSHAP_BENCH_THREADS=1 pins every library to one thread
    first, stop = map(int, args.seeds.split(":"))
    ratios = []
    for name in args.games.split(","):
        n, build = SUITE_GAMES[name]
        for background in map(int, args.backgrounds.split(",")):
            game = build(background)
            for factor in map(int, args.factors.split(",")):
                budget = min(factor * n, 2**n - 2)
                started = time.perf_counter()
                errors: dict[str, list[float]] = {e: [] for e in ESTIMATORS}
                for seed in range(first, stop):
                    design = _core.plan("leverage", n, budget, seed)
                    tabular = TabularGame(game.model, game.background, game.X)
                    values = np.ascontiguousarray(tabular.evaluate(design.masks()))
                    phi = design.estimate(values)
                    for estimator in ESTIMATORS:
                        estimate = adjust(estimator, design, values, phi)
                        errors[estimator].append(mean_relative_squared_error(estimate, game.truth))
                median = {e: float(np.median(v)) for e, v in errors.items()}
                median["fixed-rule"] = median[fixed_rule(n, budget, background)]
                best = min(median["proxy-leverage"], median["odd-sparse"])
                cell = {e: m / best for e, m in median.items()}
                ratios.append(list(cell.values()))
                shown = " ".join(f"{e}={r:.2f}" for e, r in cell.items())
                print(
                    f"{name} bg={background} {factor}n: {shown} (best {best:.2e}, "
                    f"{time.perf_counter() - started:.0f} s)",
                    flush=True,
                )
    table = np.array(ratios)
    names = [*ESTIMATORS, "fixed-rule"]
    summary = {"geometric mean": np.exp(np.log(table).mean(0)), "largest": table.max(0)}
    for label, row in summary.items():
        print(f"{label}:", " ".join(f"{e}={r:.3f}" for e, r in zip(names, row, strict=True)))


if __name__ == "__main__":
    main()
