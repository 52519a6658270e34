"""Coverage of the standard errors: how often ``value ± 1.96 SE`` holds the exact Shapley value.

Games (n = 10-12, so the truth comes by enumeration): a random forest and a LightGBM model on
diabetes (n = 10, 50 background rows, 4 explained rows), an RBF SVM on wine (n = 12, 4 rows),
and sums of unanimity games (n = 10 and 12, orders 1-4, 4 random games as columns). Each game
is tabulated over all ``2**n`` coalitions once, so every estimator queries the same values.
Budgets ``3n .. 60n``. A cell (estimator, budget) pools every (feature, row, seed) pair of
every game; coverage is the share of pairs with ``|phi_hat - phi| <= 1.96 SE`` (up to
floating-point rounding: :data:`ROUNDING`).

Calibration used seeds 100-119; the figures reported in ``docs/standard-errors.md`` are
seeds 0-19 (the default).

With ``--suite`` the games are those of ``benches/suite.py`` instead (``grid``: both halves of
its grid, or named ones), each with 1 and 50 background rows (``--backgrounds``), explained
through ``fs.Explainer`` as a user would (constant features of a one-row background dropped);
coverage is reported per budget for the tuning half, the held-out half and all games, with the
game of lowest and highest coverage.

Usage::

    python benches/bench_standard_errors.py [--seeds 0:20] [--methods kernel,leverage,...]
        [--factors 3,6,20,60] [--cases rf,lgbm,svm,soum]
    python benches/bench_standard_errors.py --suite grid [--backgrounds 1,50] [--jobs 2]
        [--methods auto] [--factors 3,5,20,60] [--seeds 0:20] [--by-game]
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
ROUNDING = 1e-9
"""Errors below this share of the largest exact value count as covered whatever the standard
error: an estimate that is exact but for floating-point rounding (an error of 1e-15 where the
standard error is 0, or 1e-17) is not a miss."""


def covered(err: np.ndarray, se: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Whether ``|err| <= 1.96 se``, up to :data:`ROUNDING`."""
    return np.abs(err) <= Z * se + ROUNDING * np.abs(truth).max()


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
        hits += int(np.sum(covered(err, se, truth)))
        total += err.size
        rms = np.sqrt(np.mean(err**2, axis=0))
        ratios.append(np.median(np.mean(se, axis=0) / np.where(rms > 0, rms, np.nan)))
    return hits / max(total, 1), float(np.nanmedian(ratios)), total


def suite_counts(
    game_name: str, background: int, methods: list[str], factors: list[int], seeds: range
) -> list[tuple[str, str, int, int, int, float]]:
    """``(game, method, factor, hits, pairs, SE / RMS error)`` of one suite game with
    ``background`` rows, explained through ``fs.Explainer`` (the SE ratio is the mean SE over
    the RMS error, pooled over features, rows and seeds)."""
    from ferroshap.bench.suite import SUITE_GAMES

    game = SUITE_GAMES[game_name][1](background)
    out = []
    for method in methods:
        for factor in factors:
            errors, ses = [], []
            for seed in seeds:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    explainer = fs.Explainer(
                        game.model,
                        game.background,
                        method=method,
                        budget=factor * game.n,
                        seed=seed,
                    )
                    ex = explainer(game.X)
                errors.append(ex.values - game.truth)
                ses.append(ex.standard_errors)
            err, se = np.stack(errors), np.stack(ses)
            hits = int(np.sum(covered(err, se, game.truth)))
            rms = float(np.sqrt(np.mean(err**2)))
            ratio = float(np.mean(se)) / rms if rms > 0 else float("nan")
            out.append((f"{game_name}/{background}", method, factor, hits, err.size, ratio))
    return out


def suite_main(args: argparse.Namespace, seeds: range, factors: list[int]) -> None:
    """Coverage on the suite's games (``--suite``), per budget and half of the games."""
    from concurrent.futures import ProcessPoolExecutor

    from ferroshap.bench.suite import GRID_GAMES, SUITE_GAMES, TUNING_GAMES

    names = GRID_GAMES if args.suite == "grid" else tuple(args.suite.split(","))
    unknown = [name for name in names if name not in SUITE_GAMES]
    if unknown:
        raise SystemExit(
            f"--suite: unknown games {unknown}; expected 'grid' or {list(SUITE_GAMES)}"
        )
    methods = args.methods.split(",")
    tasks = [
        (g, int(b), methods, factors, seeds) for g in names for b in args.backgrounds.split(",")
    ]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = [r for part in pool.map(suite_counts, *zip(*tasks, strict=True)) for r in part]
    print(
        f"suite games: {', '.join(names)}; backgrounds {args.backgrounds}; seeds "
        f"{seeds.start}-{seeds.stop - 1}"
    )
    for method in methods:
        for factor in factors:
            cell = [r for r in rows if r[1] == method and r[2] == factor]
            parts = []
            for half, keep in (
                ("tuning", lambda g: g.split("/")[0] in TUNING_GAMES),
                ("held-out", lambda g: g.split("/")[0] not in TUNING_GAMES),
                ("all", lambda g: True),
            ):
                picked = [r for r in cell if keep(r[0])]
                if picked:  # a half with no game named has no coverage
                    share = sum(r[3] for r in picked) / sum(r[4] for r in picked)
                    parts.append(f"{half} {share:.3f}")
            by_game = sorted(cell, key=lambda r: r[3] / r[4])
            low, high = by_game[0], by_game[-1]
            ratio = np.nanmedian([r[5] for r in cell])
            print(
                f"{method} {factor}n: {', '.join(parts)}; median SE/RMS {ratio:.2f}; "
                f"lowest {low[0]} {low[3] / low[4]:.3f}, highest {high[0]} {high[3] / high[4]:.3f}",
                flush=True,
            )
            if args.by_game:
                for name, _, _, hits, pairs, ratio in cell:
                    print(f"    {name:<20} {hits / pairs:.3f} (SE/RMS {ratio:.2f})")


def _positive(text: str) -> int:
    """An ``argparse`` type: an integer of at least 1 (``--jobs``)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:20")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--factors", default="3,6,20,60")
    parser.add_argument("--cases", default="rf,lgbm,svm,soum")
    parser.add_argument("--suite", default=None, help="grid, or suite game names")
    parser.add_argument("--backgrounds", default="1,50")
    parser.add_argument("--jobs", type=_positive, default=1, help="processes (with --suite)")
    parser.add_argument("--by-game", action="store_true", help="with --suite: every game's")
    args = parser.parse_args()
    start, stop = map(int, args.seeds.split(":"))
    if args.suite is not None:
        suite_main(args, range(start, stop), [int(f) for f in args.factors.split(",")])
        return
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
