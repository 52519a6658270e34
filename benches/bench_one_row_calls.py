"""One explained row per call, in a loop: the engine's fixed cost per call.

The near-free model of ``benches/protocols.py overhead`` (n = 100, one background row). One
explainer per method explains ``--rows`` rows one call each, after a one-row warm-up; the
fastest of five passes is reported in milliseconds per row. An explainer keeps the design it
planned for its next calls with the same settings and seed, so a call after the first plans
nothing and reuses the design's solver.

Usage::

    python benches/bench_one_row_calls.py [--rows 50] [--budget 4096]
"""

from __future__ import annotations

import argparse
import time

import ferroshap as fs
from ferroshap.bench.games import near_free_problem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=50)
    parser.add_argument("--budget", type=int, default=4096)
    parser.add_argument("--methods", default="leverage,kernel")
    args = parser.parse_args()
    model, background, X = near_free_problem(100, args.rows)
    for method in args.methods.split(","):
        explainer = fs.Explainer(model, background, method=method, budget=args.budget, seed=0)
        explainer(X[:1])
        passes = []
        for _ in range(5):
            start = time.perf_counter()
            for i in range(args.rows):
                explainer(X[i : i + 1])
            passes.append((time.perf_counter() - start) / args.rows)
        print(f"{method:<10} {min(passes) * 1e3:7.2f} ms per row", flush=True)


if __name__ == "__main__":
    main()
