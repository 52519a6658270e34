"""What ``method="auto"`` costs beside a cheap model: issue 29's XGBoost case.

An XGBoost classifier (100 trees of depth 4, one thread) on breast cancer (n = 30), 50
background rows, 20 explained rows. For ``leverage`` and ``auto`` at each budget: wall seconds
per row, the model's own seconds inside the call, and the engine's time (the difference) as a
multiple of the model's. Each configuration is warmed up on one row, then the faster of two
runs is kept. Run it on one core with ``taskset -c 0`` for the one-thread figure.

``--against-oddshap``: instead, the engine time (:func:`ferroshap.bench.timing.engine_time`, 5
rounds) of ``auto`` and of shapiq's OddSHAP on the suite's tree games (``lightgbm``, ``forest``)
at 20n and 60n with 1 and 50 background rows, seed 0, with their errors.

Usage::

    OMP_NUM_THREADS=1 taskset -c 0 python benches/bench_auto_cost.py [--budgets 300 2048]
    FERROSHAP_BENCH_THREADS=1 python benches/bench_auto_cost.py --against-oddshap
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import xgboost as xgb
from sklearn.datasets import load_breast_cancer

import ferroshap as fs
from ferroshap.bench.harness import run_one
from ferroshap.bench.suite import BACKGROUNDS, SUITE_GAMES
from ferroshap.bench.timing import MIN_ROUNDS, fix_threads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[300, 2048])
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--against-oddshap", action="store_true")
    args = parser.parse_args()
    if args.against_oddshap:
        against_oddshap()
        return
    X, y = load_breast_cancer(return_X_y=True)
    booster = xgb.XGBClassifier(n_estimators=100, max_depth=4, n_jobs=1).fit(X, y)
    spent = [0.0]

    def model(z: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        out = booster.predict_proba(z)
        spent[0] += time.perf_counter() - start
        return out

    rows = X[100 : 100 + args.rows]
    for budget in args.budgets:
        for method in ("leverage", "auto"):
            explainer = fs.Explainer(model, X[:50], method=method, budget=budget, seed=0)
            explainer(rows[:1])
            runs = []
            for _ in range(2):
                spent[0] = 0.0
                start = time.perf_counter()
                result = explainer(rows)
                runs.append((time.perf_counter() - start, spent[0], result.estimator))
            wall, inside, estimator = min(runs)
            print(
                f"budget {budget} {method} ({estimator}): {wall / len(rows):.4f} s per row, "
                f"model {inside / len(rows):.4f}, engine {(wall - inside) / len(rows):.4f} "
                f"= {(wall - inside) / inside:.2f}x the model"
            )


def against_oddshap() -> None:
    """``auto``'s engine time over OddSHAP's on the suite's tree games."""
    fix_threads()
    for name in ("lightgbm", "forest"):
        n, build = SUITE_GAMES[name]
        for background in BACKGROUNDS:
            game = build(background)
            for factor in (20, 60):
                budget = min(factor * n, 2**n - 2)
                ours, peer = (
                    run_one(game, method, budget, 0, timing_rounds=MIN_ROUNDS)
                    for method in ("auto", "shapiq-oddshap")
                )
                print(
                    f"{name} bg={background} budget={budget}: engine auto {ours['engine_s']:.3f} s,"
                    f" OddSHAP {peer['engine_s']:.3f} s, ratio "
                    f"{ours['engine_s'] / peer['engine_s']:.2f}; errors {ours['rel_error']:.2e}"
                    f" and {peer['rel_error']:.2e}"
                )


if __name__ == "__main__":
    main()
