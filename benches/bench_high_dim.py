"""Benchmark of high-dimensional games (issue 16): records, never asserts.

Three parts, each printed as a markdown table plus one JSON line:

``targets``
    n = 784, budget 20 000, ``method="leverage"``, the near-free model of
    ``ferroshap.bench.protocols``
    (one baseline row): ferroshap explains 10 rows together (one-row warm-up, best of
    ``--repeat`` runs), shap's ``KernelExplainer`` one row (``nsamples = budget - 2``, no
    warm-up) in the same process; plus the core's plan and first/second estimate seconds.
``large``
    n = 4096, budget 40 000, one row, in a fresh process: wall seconds, CPU seconds (all
    threads) and peak RSS (``ru_maxrss``); then the same process times the parts separately
    (plan, the boolean masks, the first estimate on random values) so that what remains of
    the wall time is the masked inputs and the model.
``crossover``
    the core's first estimate (factorization and solve) with ``solver="svd"`` and
    ``solver="normal"`` on leverage designs of budget ``20 n`` for growing n.
``agreement``
    the largest per-row relative l2 difference between the two solvers on the benchmarks'
    designs (n = 30, budget 2048; n = 784, budget 20 000), every regression method.

Run: ``python benches/bench_high_dim.py {targets,large,crossover,agreement,all} [--repeat K]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

import ferroshap as fs
from ferroshap import _core
from ferroshap.bench.protocols import (
    SHAP,
    engine_breakdown,
    estimators,
    near_free_problem,
)
from ferroshap.bench.report import to_markdown
from ferroshap.bench.timing import timed


def targets(repeat: int) -> list[dict]:
    """n = 784: ferroshap on 10 rows against shap's KernelExplainer on one, same process."""
    n, budget, rows = 784, 20000, 10
    model, background, X = near_free_problem(n, rows)
    explain = lambda x: fs.Explainer(model, background, budget=budget, method="leverage")(x)  # noqa: E731
    explain(X[:1])
    cpu = time.process_time()
    ferro = min(timed(lambda: explain(X)) for _ in range(repeat))
    cpu = (time.process_time() - cpu) / repeat
    shap_row = timed(lambda: estimators([SHAP])[SHAP](model, background, X[:1], budget, 0))
    parts = engine_breakdown("leverage", n, budget, rows)
    return [
        {
            "engine": "ferroshap leverage",
            "rows": rows,
            "s_total": ferro,
            "s_per_row": ferro / rows,
            "cpu_s_per_run": cpu,
            "vs_shap": shap_row / (ferro / rows),
        }
        | parts,
        {"engine": SHAP, "rows": 1, "s_total": shap_row, "s_per_row": shap_row},
    ]


LARGE = """
import json, resource, time
import ferroshap as fs
from ferroshap.bench.games import near_free_problem
from ferroshap.bench.protocols import engine_breakdown
n, budget = 4096, 40000
model, background, X = near_free_problem(n, 1)
start, cpu = time.perf_counter(), time.process_time()
fs.Explainer(model, background, budget=budget, method="leverage")(X)
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"n": n, "budget": budget, "wall_s": wall, "cpu_s": cpu,
                  "peak_rss_gb": peak / 1e9} | engine_breakdown("leverage", n, budget, 1)))
"""


def large() -> list[dict]:
    """n = 4096, budget 40 000, one row, in a fresh process."""
    out = subprocess.run([sys.executable, "-c", LARGE], capture_output=True, text=True, check=True)
    record = json.loads(out.stdout.strip().splitlines()[-1])
    core = record["plan_s"] + record["masks_s"] + record["estimate_first_s"]
    record["rest_s (masked inputs, model, chunk loop)"] = record["wall_s"] - core
    return [record]


def crossover(repeat: int) -> list[dict]:
    """First estimate with either solver on leverage designs of budget 20 n."""
    records = []
    for n in (8, 12, 16, 20, 24, 32, 48, 64, 128, 256):
        budget = min(20 * n, 2**n - 2)
        row: dict = {"n": n, "budget": budget}
        for solver in ("svd", "normal"):
            times = []
            for _ in range(repeat):
                design = _core.plan("leverage", n, budget, 0, solver=solver)
                values = np.zeros((design.n_coalitions, 1))
                times.append(timed(lambda d=design, v=values: d.estimate(v)))
            row[f"{solver}_s"] = min(times)
        row["svd_over_normal"] = row["svd_s"] / row["normal_s"]
        records.append(row)
    return records


def agreement() -> list[dict]:
    """Per-row relative l2 difference of the two solvers on the benchmarks' designs (random
    values, 10 columns), for every regression method."""
    records = []
    for n, budget in ((30, 2048), (784, 20000)):
        for method in ("kernel", "kernel-wor", "leverage", "modified-l2"):
            phi = {}
            for solver in ("svd", "normal"):
                design = _core.plan(method, n, budget, 0, solver=solver)
                values = np.random.default_rng(1).normal(size=(design.n_coalitions, 10))
                phi[solver] = (design.estimate(values), design.solver())
            (svd, _), (normal, used) = phi["svd"], phi["normal"]
            diff = np.linalg.norm(normal - svd, axis=1) / np.linalg.norm(svd, axis=1)
            records.append(
                {
                    "n": n,
                    "budget": budget,
                    "method": method,
                    "solver": used,
                    "max_rel_l2": float(diff.max()),
                }
            )
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("targets", "large", "crossover", "agreement", "all"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    every = ("targets", "large", "crossover", "agreement")
    parts = every if args.part == "all" else (args.part,)
    for part in parts:
        started = time.strftime("%Y-%m-%d %H:%M")
        load = " ".join(f"{x:.1f}" for x in __import__("os").getloadavg())
        if part == "targets":
            records = targets(args.repeat)
        elif part == "large":
            records = large()
        elif part == "agreement":
            records = agreement()
        else:
            records = crossover(args.repeat)
        print(f"\n### {part} ({started}, load {load})\n")
        import polars as pl

        print(to_markdown(pl.DataFrame(records)))
        print(json.dumps(records))
    print(f"\npeak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} KiB")


if __name__ == "__main__":
    main()
