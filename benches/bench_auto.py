"""The accuracy suite of ``method="auto"``: small-n models and sums of unanimity games.

Cells: (case, background rows, budget). Tabular cases (n = 10-12: a random forest on
diabetes, an MLP on diabetes, an RBF SVM on wine) explain 4 rows with 1 or 50 background rows;
their games are tabulated over all ``2**n`` coalitions once, so every estimator queries the
same values and the truth is exact enumeration. Sums of unanimity games (orders 1-4, n = 30 and
100) have closed-form Shapley values; 4 random games form the 4 columns. Budgets are 5n, 20n
and 60n. Error: ``sum((phi_hat - phi)**2) / sum(phi**2)`` per column, mean over columns,
median over seeds.

Estimators: ferroshap's recipes (``ferroshap.sampling.auto.RECIPES`` plus ``auto``) and shapiq 1.8's
KernelSHAP (paired), LeverageSHAP, OddSHAP, PolySHAP and RegressionMSR, one approximator per
column with ``random_state=seed``.

Usage::

    python benches/bench_auto.py [--seeds 0:20] [--cases rf,mlp,svm,soum] [--out DIR]
    python benches/bench_auto.py --breast-cancer 256,512,2048 [--seeds 0:20]

``--breast-cancer`` runs ``Explainer(method="auto")`` on the breast-cancer protocol of
``protocols.py accuracy`` instead (median error and seconds per row per budget).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

import ferroshap as fs
from ferroshap import _core
from ferroshap.sampling import auto
from ferroshap.sampling.proxy_adjusted import adjust, minimum_budget

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ROWS = 4
FACTORS = (5, 20, 60)

Game = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Case:
    """One game family: its columns' game ``[m, n] -> [m, R]`` and exact values ``[R, n]``."""

    name: str
    n: int
    background: int
    game: Game
    truth: np.ndarray


def _tabulated(name: str, predict: Callable, X: np.ndarray, n_background: int) -> Case:
    rng = np.random.default_rng(7)
    picked = rng.choice(len(X), n_background + ROWS, replace=False)
    background, rows = X[picked[:n_background]], X[picked[n_background:]]
    n = X.shape[1]
    masks = (np.arange(2**n)[:, None] >> np.arange(n)) & 1 == 1
    game = fs.query.games.TabularGame(predict, background, rows)
    table = game.evaluate(masks)  # [2**n, ROWS]
    powers = 1 << np.arange(n)

    def lookup(m: np.ndarray) -> np.ndarray:
        return table[np.asarray(m, dtype=np.int64) @ powers]

    truth = fs.shapley_values(lookup, n, method="exact")
    return Case(f"{name} B={n_background}", n, n_background, lookup, truth)


def tabular_cases(names: set[str]) -> list[Case]:
    """The random forest, MLP and SVM cases, with 1 and 50 background rows."""
    from sklearn.datasets import load_diabetes, load_wine
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.neural_network import MLPRegressor
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR

    cases = []
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    if "rf" in names:
        rf = RandomForestRegressor(n_estimators=50, max_depth=8, random_state=0, n_jobs=1)
        rf.fit(X, y)
        cases += [_tabulated("rf-diabetes n=10", rf.predict, X, b) for b in (1, 50)]
    if "mlp" in names:
        mlp = MLPRegressor(hidden_layer_sizes=(64, 64), max_iter=2000, random_state=0).fit(
            X, y / y.std()
        )
        cases += [_tabulated("mlp-diabetes n=10", mlp.predict, X, b) for b in (1, 50)]
    if "svm" in names:
        W, _ = load_wine(return_X_y=True)
        W = StandardScaler().fit_transform(W)
        svr = SVR(kernel="rbf", gamma=0.2).fit(W[:, 1:], W[:, 0])
        cases += [_tabulated("svm-wine n=12", svr.predict, W[:, 1:], b) for b in (1, 50)]
    return cases


def soum_cases() -> list[Case]:
    """Sums of unanimity games, orders 1-4, n = 30 and 100, 4 random games as columns."""
    cases = []
    for n in (30, 100):
        rng = np.random.default_rng(n)
        terms, coefs = [], []
        for _ in range(ROWS):
            t = np.zeros((2 * n, n), dtype=bool)
            for row in t:
                row[rng.choice(n, size=rng.integers(1, 5), replace=False)] = True
            terms.append(t)
            coefs.append(rng.uniform(-1, 1, 2 * n))
        truth = np.stack([(c / t.sum(1)) @ t for t, c in zip(terms, coefs, strict=True)])

        def game(m: np.ndarray, terms=terms, coefs=coefs) -> np.ndarray:
            m = np.asarray(m, dtype=bool)
            cols = [
                (~(t[None] & ~m[:, None])).all(axis=2) @ c
                for t, c in zip(terms, coefs, strict=True)
            ]
            return np.stack(cols, axis=1)

        cases.append(Case(f"soum n={n}", n, 0, game, truth))
    return cases


# -- estimators: (game, n, budget, seed, background rows) -> phi [R, n] ----------------------


def ferroshap_recipe(name: str) -> Callable:
    """One recipe of ``auto.RECIPES``, or ``auto``'s choice for the case (the choice an
    :class:`~ferroshap.Explainer` makes with that background; ``None`` for a raw game)."""

    def run(game: Game, n: int, budget: int, seed: int, n_background: int | None) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if name == "auto":
                recipe = auto.choose(n, budget, n_background=n_background)
            else:
                recipe = auto.RECIPES[name]
            return run_recipe(recipe, game, n, budget, seed)

    return run


def run_recipe(recipe: auto.Recipe, game: Game, n: int, budget: int, seed: int) -> np.ndarray:
    """Plan, query and estimate one recipe directly (every recipe, not only auto's choice)."""
    design = _core.plan(recipe.planned, n, budget, seed)
    values = np.ascontiguousarray(game(design.masks()), dtype=np.float64)
    phi = design.estimate(values)
    if recipe.proxy is not None and budget >= minimum_budget(n):
        phi = adjust(recipe.proxy, design, values, phi)
    return phi


def shapiq_peer(name: str) -> Callable:
    """A shapiq 1.8 approximator, one per column, ``random_state=seed``."""
    from shapiq import approximator as ap

    make = {
        "KernelSHAP": lambda n, s: ap.KernelSHAP(n, pairing_trick=True, random_state=s),
        "LeverageSHAP": lambda n, s: ap.LeverageSHAP(n, random_state=s),
        "OddSHAP": lambda n, s: ap.OddSHAP(n, random_state=s),
        "PolySHAP": lambda n, s: ap.PolySHAP(n, random_state=s),
        "RegressionMSR": lambda n, s: ap.RegressionMSR(n, "SV", random_state=s),
    }[name]

    def run(game: Game, n: int, budget: int, seed: int, n_background: int | None) -> np.ndarray:
        del n_background  # shapiq sees the game only
        out = []
        for j in range(ROWS):
            column = lambda m, j=j: game(m)[:, j]  # noqa: E731
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    values = make(n, seed).approximate(budget, column)
                    out.append(values.get_n_order_values(1))
                except ValueError:  # below the estimator's minimum budget
                    out.append(np.full(n, np.nan))
        return np.stack(out)

    return run


PEERS = ("KernelSHAP", "LeverageSHAP", "OddSHAP", "PolySHAP", "RegressionMSR")


def error(phi: np.ndarray, truth: np.ndarray) -> float:
    """Mean over columns of ``sum((phi - truth)**2) / sum(truth**2)``."""
    return float(np.mean(((phi - truth) ** 2).sum(axis=1) / (truth**2).sum(axis=1)))


def run_suite(
    cases: list[Case], seeds: range, names: list[str], checkpoint: Path | None = None
) -> pl.DataFrame:
    """Long table: case, budget, estimator, seed, error, seconds (rewritten to ``checkpoint``
    after every cell)."""
    runners = {
        **{f"ferroshap {r}": ferroshap_recipe(r) for r in names if r in auto.RECIPES},
        **({"ferroshap auto": ferroshap_recipe("auto")} if "auto" in names else {}),
        **{f"shapiq {p}": shapiq_peer(p) for p in PEERS if p in names},
    }
    records = []
    for case in cases:
        for factor in FACTORS:
            budget = factor * case.n
            for name, run in runners.items():
                for seed in seeds:
                    start = time.perf_counter()
                    phi = run(case.game, case.n, budget, seed, case.background or None)
                    records.append(
                        {
                            "case": case.name,
                            "n": case.n,
                            "background": case.background,
                            "budget": budget,
                            "estimator": name,
                            "seed": seed,
                            "error": error(phi, case.truth),
                            "seconds": time.perf_counter() - start,
                        }
                    )
            print(f"{case.name} budget {budget} done", file=sys.stderr, flush=True)
            if checkpoint is not None:
                pl.DataFrame(records).write_parquet(checkpoint)
    return pl.DataFrame(records)


def summarize(long: pl.DataFrame) -> pl.DataFrame:
    """Median error per cell and estimator, and each one's ratio to the best shapiq peer."""
    med = long.group_by("case", "budget", "estimator").agg(pl.col("error").median())
    best = (
        med.filter(pl.col("estimator").str.starts_with("shapiq"))
        .group_by("case", "budget")
        .agg(pl.col("error").min().alias("best_peer"))
    )
    return (
        med.join(best, on=["case", "budget"])
        .with_columns((pl.col("error") / pl.col("best_peer")).alias("ratio"))
        .sort("case", "budget", "error")
    )


def breast_cancer(seeds: range, budgets: tuple[int, ...]) -> pl.DataFrame:
    """``Explainer(method="auto")`` on the breast-cancer protocol of ``protocols.accuracy``
    (LightGBM, n = 30, 50 background rows, 8 rows, exact interventional TreeSHAP truth)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from protocols import exact_tree_shap, lightgbm_problem, relative_error

    problem = lightgbm_problem()
    exact = exact_tree_shap(problem)
    records = []
    for budget in budgets:
        for seed in seeds:
            start = time.perf_counter()
            ex = fs.Explainer(problem.model.predict, problem.background, budget=budget, seed=seed)
            explanation = ex(problem.rows)
            records.append(
                {
                    "budget": budget,
                    "seed": seed,
                    "estimator": explanation.estimator,
                    "error": relative_error(explanation.values, exact),
                    "seconds_per_row": (time.perf_counter() - start) / len(problem.rows),
                }
            )
        print(f"breast cancer budget {budget} done", file=sys.stderr, flush=True)
    return pl.DataFrame(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0:20", help="start:stop")
    parser.add_argument("--cases", default="rf,mlp,svm,soum")
    parser.add_argument(
        "--estimators", default=",".join(["auto", *auto.RECIPES, *PEERS]), help="names"
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument(
        "--breast-cancer", default="", help="budgets (e.g. 256,512,2048): run that protocol"
    )
    args = parser.parse_args()
    start, stop = map(int, args.seeds.split(":"))
    if args.breast_cancer:
        budgets = tuple(int(b) for b in args.breast_cancer.split(","))
        runs = breast_cancer(range(start, stop), budgets)
        args.out.mkdir(parents=True, exist_ok=True)
        runs.write_parquet(args.out / f"auto_breast_cancer_{start}_{stop}.parquet")
        print(
            runs.group_by("budget", "estimator")
            .agg(pl.col("error").median(), pl.col("seconds_per_row").median())
            .sort("budget")
        )
        return
    names = set(args.cases.split(","))
    cases = tabular_cases(names) + [c for c in soum_cases() if c.name.split()[0] in names]
    args.out.mkdir(parents=True, exist_ok=True)
    checkpoint = args.out / f"auto_suite_{start}_{stop}.parquet"
    long = run_suite(cases, range(start, stop), args.estimators.split(","), checkpoint)
    table = summarize(long)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=40):
        print(table)
    auto_rows = table.filter(pl.col("estimator") == "ferroshap auto")
    if len(auto_rows):
        ratios = auto_rows["ratio"]
        print(
            f"auto vs best peer: median ratio {ratios.median():.3f}, "
            f"<= 1.0 in {(ratios <= 1.0).mean():.0%} of cells, max {ratios.max():.3f}"
        )


if __name__ == "__main__":
    main()
