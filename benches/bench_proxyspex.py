"""ProxySPEX: ferroshap against shapiq.ProxySPEX on the same game and budget (issue 4).

Game: sum of 40 unanimity terms of order 1-4 on n = 64 players (``--players``), Gaussian noise
with sigma = 0.05 std(v) over uniform masks (``--noise``). Reported per implementation and
budget: wall time (game calls, proxy fit, extraction + refit), faithfulness R² on 1 000 held-out
uniform masks against the noiseless game, Shapley relative error against the closed form, terms
returned. Then the extraction time alone for 1 000 depth-5 trees at n = 128 (model text →
summed coefficients).

    python benches/bench_proxyspex.py [--quick] [--budgets 1000 4000] [--seeds 0 1 2] [--players 96]
    python benches/bench_proxyspex.py --large --seeds 0 1 2 3 4 5 6 7 8 9   # n = 1000
    python benches/bench_proxyspex.py --large --terms 300 --order 4          # another sparse game
"""

from __future__ import annotations

import argparse
import time

import lightgbm as lgb
import numpy as np
import shapiq

import ferroshap as fs
from ferroshap import _core
from ferroshap.bench.games import SumOfUnanimity
from ferroshap.bench.metrics import r_squared, relative_l2_error
from ferroshap.interactions.proxy import proxy_threads


class TimedGame:
    """The noisy game, counting the seconds spent inside it."""

    def __init__(self, soum: SumOfUnanimity, sd: float, seed: int) -> None:
        self.soum, self.sd, self.rng, self.seconds = soum, sd, np.random.default_rng(seed), 0.0

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        values = self.soum(np.asarray(masks, dtype=bool))
        values = values + self.rng.normal(0.0, self.sd, len(values))
        self.seconds += time.perf_counter() - start
        return values


def score(
    surrogate: _core.SparseFunction, soum: SumOfUnanimity, test: np.ndarray
) -> tuple[float, float]:
    r2 = r_squared(soum(test), surrogate.evaluate(test))
    return r2, relative_l2_error(surrogate.shapley_values(), soum.shapley)


def run(budget: int, seed: int, n: int = 64, noise: float = 0.05) -> list[str]:
    soum = SumOfUnanimity.random(n, 40, 4, seed)
    rng = np.random.default_rng(seed + 1000)
    sd = noise * soum(rng.random((5000, n)) < 0.5).std()
    test = rng.random((1000, n)) < 0.5
    rows = []

    game = TimedGame(soum, sd, seed)
    start = time.perf_counter()
    iv = fs.ProxySPEX(
        game, n_players=n, budget=budget, max_order=4, index="Moebius", seed=seed
    ).explain()
    total = time.perf_counter() - start
    d = iv.diagnostics
    r2, err = score(iv.surrogate, soum, test)
    rows.append(
        f"| ferroshap | {budget} | {seed} | {total:.2f} | {game.seconds:.3f} | "
        f"{d['seconds_proxy']:.2f} | {d['seconds_extraction'] + d['seconds_refit']:.2f} | "
        f"{total - game.seconds:.2f} | {r2:.4f} | {err:.2e} | {len(iv.surrogate) - 1} |"
    )

    game = TimedGame(soum, sd, seed)
    start = time.perf_counter()
    # shapiq's ProxySPEX offers no Moebius output; FBII at order 5 equals the Moebius transform
    # of its surrogate, whose trees (depth <= 5 in its grid) hold no term above order 5.
    approximator = shapiq.ProxySPEX(n=n, index="FBII", max_order=5, random_state=seed)
    result = approximator.approximate(budget, game)
    total = time.perf_counter() - start
    keys = [k for k, v in result.dict_values.items() if v != 0.0]
    surrogate = _core.SparseFunction(
        "Moebius", n, keys, np.array([result.dict_values[k] for k in keys])
    )
    r2, err = score(surrogate, soum, test)
    rows.append(
        f"| shapiq {shapiq.__version__} | {budget} | {seed} | {total:.2f} | {game.seconds:.3f} | "
        f"(grid search) | — | {total - game.seconds:.2f} | {r2:.4f} | {err:.2e} | "
        f"{len(keys) - int(() in keys)} |"
    )
    return rows


def large(
    seed: int, n: int = 1000, budget: int = 5000, terms: int = 100, order: int = 3
) -> dict[str, float]:
    """ProxySPEX at ``n`` players: ``terms`` unanimity terms of orders 1-``order`` with N(0, 1)
    coefficients, noiseless; wall time with the game's included, and R² on 1 000 uniform
    held-out masks."""
    soum = SumOfUnanimity.random(n, terms, order, seed, normal=True)
    test = np.random.default_rng(seed + 1000).random((1000, n)) < 0.5
    game = TimedGame(soum, 0.0, seed)
    start = time.perf_counter()
    iv = fs.ProxySPEX(game, n_players=n, budget=budget, max_order=order, seed=seed).explain()
    total = time.perf_counter() - start
    d = iv.diagnostics
    y = soum(test)
    return {
        "total": total,
        "game": game.seconds,
        "proxy": d["seconds_proxy"],
        "extraction": d["seconds_extraction"],
        "refit": d["seconds_refit"],
        "r2": r_squared(y, iv.predict(test)),
        "trees": d["n_trees"],
        "support": d["support"],
    }


def large_table(
    seeds: list[int], n: int = 1000, budget: int = 5000, terms: int = 100, order: int = 3
) -> list[str]:
    """Markdown rows of :func:`large` per seed, then the medians."""
    rows = ["| seed | total s | game s | proxy fit s | extraction s | refit s | R² | trees |"]
    rows.append("|---|---|---|---|---|---|---|---|")
    runs = []
    for seed in seeds:
        r = large(seed, n, budget, terms, order)
        runs.append(r)
        rows.append(
            f"| {seed} | {r['total']:.2f} | {r['game']:.3f} | {r['proxy']:.2f} | "
            f"{r['extraction']:.3f} | {r['refit']:.2f} | {r['r2']:.4f} | {r['trees']} |"
        )
        print(rows[-1], flush=True)
    med = {k: float(np.median([r[k] for r in runs])) for k in runs[0]}
    rows.append(
        f"| median | {med['total']:.2f} | {med['game']:.3f} | {med['proxy']:.2f} | "
        f"{med['extraction']:.3f} | {med['refit']:.2f} | {med['r2']:.4f} | {med['trees']:.0f} |"
    )
    return rows


def extraction(n: int = 128, trees: int = 1000, repeats: int = 5) -> str:
    rng = np.random.default_rng(0)
    x = (rng.random((2000, n)) < 0.5).astype(np.float64)
    y = x[:, :16].sum(1) + x[:, 0] * x[:, 5] * x[:, 9] + rng.normal(0, 0.5, 2000)
    params = {"max_depth": 5, "num_leaves": 31, "verbosity": -1, "num_threads": 2}
    booster = lgb.train(params, lgb.Dataset(x, y), num_boost_round=trees)
    text = booster.model_to_string()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        spectrum = _core.lightgbm_fourier(text, n)
        times.append(time.perf_counter() - start)
    masks = rng.random((1000, n)) < 0.5
    gap = np.abs(spectrum.evaluate(masks) - booster.predict(masks.astype(np.float64))).max()
    return (
        f"extraction: {booster.num_trees()} depth-5 trees, n = {n}: median "
        f"{1e3 * np.median(times):.1f} ms (min {1e3 * min(times):.1f} ms) over {repeats} runs, "
        f"{len(spectrum)} Fourier terms, max |synthesis - predict| = {gap:.1e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="budget 1000, one seed")
    parser.add_argument("--budgets", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--players", type=int, default=64, help="n of the noisy game")
    parser.add_argument("--noise", type=float, default=0.05, help="its noise, in std of v")
    parser.add_argument("--terms", type=int, default=100, help="unanimity terms (--large)")
    parser.add_argument("--order", type=int, default=3, help="their largest order (--large)")
    parser.add_argument(
        "--large",
        action="store_true",
        help="only the n = 1000, budget 5000 game (100 terms of orders 1-3), over --seeds",
    )
    args = parser.parse_args()
    if args.large:
        print(
            f"ProxySPEX, n = 1000, budget 5000, {args.terms} terms of order <= {args.order}, "
            f"{proxy_threads(4000 * 1000)} LightGBM threads"
        )
        print("\n".join(large_table(args.seeds, terms=args.terms, order=args.order)))
        return
    budgets, seeds = ([1000], [0]) if args.quick else (args.budgets, args.seeds)
    print(
        "| implementation | budget | seed | total s | game s | proxy fit s | extraction + "
        "refit s | total - game s | R² (1 000 held-out) | SV rel. error | terms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for budget in budgets:
        for seed in seeds:
            for row in run(budget, seed, args.players, args.noise):
                print(row, flush=True)
    print(extraction(trees=200 if args.quick else 1000))


if __name__ == "__main__":
    main()
