"""Coverage of the standard errors: how often ``value ± 1.96 SE`` holds the exact Shapley value.

Games (n = 10-12, so the truth comes by enumeration): a random forest and a LightGBM model on
diabetes (n = 10, 50 background rows, 4 explained rows), an RBF SVM on wine (n = 12, 4 rows),
and sums of unanimity games (n = 10 and 12, orders 1-4, 4 random games as columns). Each game
is tabulated over all ``2**n`` coalitions once, so every estimator queries the same values.
Budgets ``3n .. 60n``. A cell (estimator, budget) pools every (feature, row, seed) pair of
every game; coverage is the share of pairs with ``|phi_hat - phi| <= 1.96 SE``.

Calibration used seeds 100-119; the figures reported in ``docs/standard-errors.md`` are
seeds 0-19 (the default).

Usage::

    python benches/bench_standard_errors.py [--seeds 0:20] [--methods kernel,leverage,...]
        [--factors 3,6,20,60] [--cases rf,lgbm,svm,soum]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import warnings
from collections.abc import Callable

import numpy as np

import ferroshap as fs
from ferroshap.query.games import RawGame, TabularGame
from ferroshap.sampling.engine import game_values

ROWS = 4
Z = 1.959963984540054
METHODS = (
    "kernel",
    "kernel-wor",
    "leverage",
    "modified-l2",
    "unbiased",
    "permutation",
    "auto",
    "proxy-leverage",
    "tree-msr",
)

Case = tuple[str, int, Callable[[np.ndarray], np.ndarray], np.ndarray]


def _tabulated(name: str, predict: Callable, X: np.ndarray) -> Case:
    rng = np.random.default_rng(7)
    picked = rng.choice(len(X), 50 + ROWS, replace=False)
    background, rows = X[picked[:50]], X[picked[50:]]
    n = X.shape[1]
    masks = (np.arange(2**n)[:, None] >> np.arange(n)) & 1 == 1
    table = TabularGame(predict, background, rows).evaluate(masks)  # [2**n, ROWS]
    powers = 1 << np.arange(n)

    def lookup(m: np.ndarray) -> np.ndarray:
        return table[np.asarray(m, dtype=np.int64) @ powers]

    return name, n, lookup, fs.shapley_values(lookup, n, method="exact")


def cases(names: set[str]) -> list[Case]:
    """The games named in ``names`` (rf, lgbm, svm, soum)."""
    from sklearn.datasets import load_diabetes, load_wine
    from sklearn.preprocessing import StandardScaler

    out = []
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    if "rf" in names:
        from sklearn.ensemble import RandomForestRegressor

        rf = RandomForestRegressor(n_estimators=50, max_depth=8, random_state=0, n_jobs=1)
        out.append(_tabulated("rf-diabetes n=10", rf.fit(X, y).predict, X))
    if "lgbm" in names:
        import lightgbm as lgb

        model = lgb.LGBMRegressor(n_estimators=100, num_leaves=15, n_jobs=1, verbose=-1)
        out.append(_tabulated("lgbm-diabetes n=10", model.fit(X, y).predict, X))
    if "svm" in names:
        from sklearn.svm import SVR

        W = StandardScaler().fit_transform(load_wine(return_X_y=True)[0])
        svr = SVR(kernel="rbf", gamma=0.2).fit(W[:, 1:], W[:, 0])
        out.append(_tabulated("svm-wine n=12", svr.predict, W[:, 1:]))
    if "soum" in names:
        for n in (10, 12):
            rng = np.random.default_rng(n)
            terms = [np.zeros((2 * n, n), dtype=bool) for _ in range(ROWS)]
            for t in terms:
                for row in t:
                    row[rng.choice(n, size=rng.integers(1, 5), replace=False)] = True
            coefs = [rng.uniform(-1, 1, 2 * n) for _ in range(ROWS)]
            truth = np.stack([(c / t.sum(1)) @ t for t, c in zip(terms, coefs, strict=True)])

            def game(m: np.ndarray, terms=terms, coefs=coefs) -> np.ndarray:
                m = np.asarray(m, dtype=bool)
                return np.stack(
                    [
                        (~(t[None] & ~m[:, None])).all(axis=2) @ c
                        for t, c in zip(terms, coefs, strict=True)
                    ],
                    axis=1,
                )

            out.append((f"soum n={n}", n, game, truth))
    return out


def coverage(method: str, factor: int, games: list[Case], seeds: range) -> tuple[float, float, int]:
    """Coverage, median SE / RMS error ratio and the number of (feature, row, seed) pairs."""
    hits, ratios, total = 0, [], 0
    for _, n, game, truth in games:
        budget = factor * n
        if method == "permutation" and budget < 2 * n:
            continue
        errors, ses = [], []
        for seed in seeds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                phi, se, *_ = game_values(
                    RawGame(game, n), None, method, budget, seed, True, None, None, "bench"
                )
            errors.append(phi - truth)
            ses.append(se())
        err, se = np.stack(errors), np.stack(ses)
        hits += int(np.sum(np.abs(err) <= Z * se))
        total += err.size
        rms = np.sqrt(np.mean(err**2, axis=0))
        ratios.append(np.median(np.mean(se, axis=0) / np.where(rms > 0, rms, np.nan)))
    return hits / max(total, 1), float(np.nanmedian(ratios)), total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:20")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--factors", default="3,6,20,60")
    parser.add_argument("--cases", default="rf,lgbm,svm,soum")
    args = parser.parse_args()
    start, stop = map(int, args.seeds.split(":"))
    games = cases(set(args.cases.split(",")))
    factors = [int(f) for f in args.factors.split(",")]
    print(f"games: {', '.join(g[0] for g in games)}; seeds {start}-{stop - 1}")
    print("method           " + "".join(f"{f'{f}n':>18}" for f in factors))
    for method in args.methods.split(","):
        cells = []
        for factor in factors:
            cover, ratio, count = coverage(method, factor, games, range(start, stop))
            cells.append(f"{cover:7.3f} ({ratio:4.2f}) " if count else f"{'-':>18}")
        print(f"{method:<17}" + "".join(f"{c:>18}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
