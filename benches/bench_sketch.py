"""Benchmark of the SHAP zero sketch (``fs.FourierSketch``): records, never asserts.

Cases (issue 3, on random exactly sparse q-ary functions, q = 4):

1. *reference*: n = 20, 50 conjugate pairs of degree 1-3 (≈ 100 coefficients) at budget
   12 096 (shapzero 0.0.4's sketch query count on this kind of function): queries used, sketch
   time outside the model, NMSE on 10 000 held-out random sequences, explain time per sequence
   over 10 000 sequences, and the break-even number of sequences against our KernelSHAP under
   the same uniform background (Monte-Carlo fills);
2. *scale*: n = 40 with 500 conjugate pairs of degree 1-4 (1 000 coefficients): the same
   figures, plus Shapley values and pairwise (k-SII) interactions of 10 000 sequences.

Optionally ``--shapzero PYTHON`` runs the reference case through shapzero 0.0.4 at budget
15 000 in another interpreter (a throwaway venv with ``pip install shapzero``): its model
queries (sketch and its own test set), sketch time, held-out NMSE and explain time.

Run: ``python benches/bench_sketch.py [--quick] [--shapzero /tmp/shapzero-venv/bin/python]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

import ferroshap as fs
from ferroshap.bench.fourier import SparseQaryFunction


def best_of(repeats: int, fn: object) -> float:
    """Smallest wall time of ``repeats`` calls of ``fn()``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def kernelshap_seconds(f: SparseQaryFunction, n: int, fills: int, budget: int) -> tuple[float, int]:
    """Wall time and model evaluations of our KernelSHAP (leverage) for one sequence under the
    uniform background approximated by ``fills`` random sequences."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=n)
    background = rng.integers(0, 4, size=(fills, n))
    start = time.perf_counter()
    fs.Explainer(f, background, method="leverage", budget=budget, seed=0)(x)
    return time.perf_counter() - start, budget * fills


def case(name: str, n: int, pairs: int, degree: int, budget: int, repeats: int) -> dict:
    f = SparseQaryFunction(4, n, pairs, degree, seed=1)
    model_time = 0.0

    def model(codes: np.ndarray) -> np.ndarray:
        nonlocal model_time
        start = time.perf_counter()
        out = f(codes)
        model_time += time.perf_counter() - start
        return out

    start = time.perf_counter()
    sketch = fs.FourierSketch.fit(model, n, "ACGT", budget=budget, seed=0, input="codes")
    total = time.perf_counter() - start
    rng = np.random.default_rng(7)
    held_out = rng.integers(0, 4, size=(10_000, n)).astype(np.uint8)
    truth = f(held_out)
    nmse = float(
        ((sketch.predict(held_out) - truth) ** 2).sum() / ((truth - truth.mean()) ** 2).sum()
    )
    values = best_of(repeats, lambda: sketch.shapley_values(held_out))
    pairs_time = best_of(repeats, lambda: sketch.interactions(held_out, max_order=2))
    kernel_seconds, kernel_evaluations = kernelshap_seconds(f, n, fills=100, budget=1024)
    return {
        "case": name,
        "n": n,
        "coefficients": len(f.keys),
        "budget": budget,
        "queries": sketch.n_queries,
        "b/groups": f"{sketch.info['b']}/{sketch.info['groups']}",
        "sketch s (excl. model)": round(total - model_time, 4),
        "model s": round(model_time, 4),
        "held-out NMSE": f"{nmse:.1e}",
        "recovered": len(sketch.keys),
        "values µs/seq (10k)": round(1e6 * values / len(held_out), 2),
        "values+pairs s (10k)": round(values + pairs_time, 3),
        "KernelSHAP evals/seq": kernel_evaluations,
        "KernelSHAP s/seq": round(kernel_seconds, 3),
        "break-even seqs (evals)": round(sketch.n_queries / kernel_evaluations, 3),
    }


SHAPZERO_SCRIPT = """
import contextlib, io, json, sys, tempfile, time
import numpy as np
from shapzero.main import Explainer
spec = json.loads(sys.argv[1])
keys = np.array(spec["keys"]); values = np.array(spec["re"]) + 1j * np.array(spec["im"])
calls = {"rows": 0, "seconds": 0.0}
def f(codes):
    start = time.perf_counter()
    codes = np.asarray(codes, dtype=np.int64)
    phases = (codes @ keys.T) % 4
    out = spec["mean"] + (np.exp(2j * np.pi * phases / 4) @ values).real
    calls["rows"] += len(codes); calls["seconds"] += time.perf_counter() - start
    return out
with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
    ex = Explainer(4, 20, tmp, f, None, None)
    start = time.perf_counter()
    ft = ex.compute_fourier_transform(budget=spec["budget"], verbose=False)
    total = time.perf_counter() - start
    rng = np.random.default_rng(7)
    held = rng.integers(0, 4, size=(10000, 20))
    truth = f(held)
    k = np.array([list(key) for key in ft]); c = np.array(list(ft.values()))
    pred = (np.exp(2j * np.pi * ((held @ k.T) % 4) / 4) @ c).real
    nmse = float(((pred - truth) ** 2).sum() / ((truth - truth.mean()) ** 2).sum())
    seqs = ["".join("ACGT"[v] for v in row) for row in held[:50]]
    start = time.perf_counter()
    ex.explain(seqs, "shap_value")
    explain = (time.perf_counter() - start) / len(seqs)
print(json.dumps({"version": "0.0.4", "queries": calls["rows"], "sketch_s": total,
                  "model_s": calls["seconds"], "nmse": nmse, "coefficients": len(ft),
                  "explain_s_per_seq": explain}))
"""


def shapzero_reference(python: str, budget: int) -> str:
    """shapzero on the reference function, run by ``python`` (a venv with shapzero)."""
    f = SparseQaryFunction(4, 20, 50, 3, seed=1)
    spec = {
        "keys": f.keys.tolist(),
        "re": f.values.real.tolist(),
        "im": f.values.imag.tolist(),
        "mean": f.mean,
        "budget": budget,
    }
    result = subprocess.run(
        [python, "-c", SHAPZERO_SCRIPT, json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    return (
        result.stdout.strip().splitlines()[-1] if result.returncode == 0 else result.stderr[-3000:]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reference case only")
    parser.add_argument("--shapzero", help="python of a venv with shapzero installed")
    args = parser.parse_args()
    rows = [case("reference", 20, 50, 3, 12_096, repeats=3)]
    if not args.quick:
        rows.append(case("scale", 40, 500, 4, 150_000, repeats=3))
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in columns) + " |")
    if args.shapzero:
        print("shapzero (budget 15000):", shapzero_reference(args.shapzero, 15_000))
    print(f"python {sys.version.split()[0]}, ferroshap {fs.__version__}")


if __name__ == "__main__":
    main()
