"""ferroshap demo: explain a LightGBM model with several estimators and score each one.

A LightGBM regressor is trained on scikit-learn's bundled breast-cancer data (30 features). Each
ferroshap estimator explains 8 rows against a 50-row background at a few budgets; the table shows
each one's relative error against exact interventional Shapley values (exact TreeSHAP from
``shap``, the same game) and its wall time. ``proxy-leverage`` corrects LeverageSHAP with a
LightGBM proxy read exactly from its trees, at no extra model query.

Run: ``bash scripts/demo.sh`` (sets everything up), or ``python examples/demo.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_breast_cancer

import ferroshap as fs
from ferroshap.bench.games import lightgbm_game
from ferroshap.bench.metrics import mean_relative_squared_error

METHODS = [
    "proxy-leverage",
    "leverage",
    "kernel",
    "kernel-wor",
    "modified-l2",
    "unbiased",
    "permutation",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small budget (for tests)")
    args = parser.parse_args()
    budgets = [256] if args.quick else [256, 1024]

    # The benchmark game of `ferroshap bench`: LightGBM (200 trees, 31 leaves) on breast cancer,
    # disjoint random background and explained rows, truth by shap's exact TreeExplainer.
    game = lightgbm_game(rows=8, n_background=50)
    model, background, rows, truth = game.model, game.background, game.X, game.truth
    feature_names = load_breast_cancer().feature_names
    print(
        f"LightGBM on breast cancer: n = {game.n} features, {len(background)} background "
        f"rows, {len(rows)} explained rows; truth = exact interventional TreeSHAP"
    )
    print(f"{'method':<16}{'budget':>8}{'rel. error':>13}{'seconds':>10}")
    for budget in budgets:
        for method in METHODS:
            start = time.perf_counter()
            explainer = fs.Explainer(model, background, method=method, budget=budget, seed=0)
            explanation = explainer(rows)
            seconds = time.perf_counter() - start
            error = mean_relative_squared_error(explanation.values, truth)
            print(f"{method:<16}{budget:>8}{error:>13.2e}{seconds:>10.2f}")
    top = np.argsort(-np.abs(explanation.values[0]))[:3]
    names = ", ".join(f"{feature_names[i]} ({explanation.values[0, i]:+.3f})" for i in top)
    print(f"row 0 ({method}, budget {budget}): largest contributions: {names}")


if __name__ == "__main__":
    main()
