"""The memory estimate against what a call really allocates, on a grid of small and large calls,
and the order of the checks (the memory check comes before any grouping of rows).

Each case runs in a fresh Python process (one process per case: the peak resident set is a
process-wide high-water mark, and glibc keeps freed blocks of an earlier call for later ones).
There the engine is warmed up on a tiny call of the same kind (imports, thread pools, glibc's
heap thresholds), then the peak is measured over the call two ways: ``tracemalloc``'s peak
(NumPy's and Python's allocations, touched or not) and the growth of the peak resident set
(Linux's ``VmHWM``, reset just before the call, less ``tracemalloc``'s own bookkeeping), which
also sees the compiled core's allocations. The larger of the two is the measured peak. The
estimate is the one the engine itself checks against ``max_memory`` (captured from
:func:`ferroshap.validation.check`). It must cover the measured peak and exceed it at most
``2 x peak + 64 MiB``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import InvalidArgumentError

SLACK = 64 * 2**20
"""The fixed allowance on top of twice the measured peak."""

MEASURE = textwrap.dedent(
    """
    import ctypes, json, sys, tracemalloc
    import numpy as np
    import ferroshap as fs
    from ferroshap import validation

    def status(field):
        with open("/proc/self/status") as lines:
            for line in lines:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024

    case = json.loads(sys.argv[1])
    engine = case.pop("engine")
    rng = np.random.default_rng(0)

    def explainer_call(n, background, rows, outputs=1, null=0, **options):
        weights = rng.normal(size=(n, outputs)) if outputs > 1 else rng.normal(size=n)
        bg = rng.normal(size=(background, n))
        X = rng.normal(size=(rows, n))
        if null:  # the first `null` features of every row at the (one) background row's value
            X[:, :null] = bg[0, :null]
        return lambda: fs.Explainer(lambda z: z @ weights, bg, **options)(X)

    def game_call(n, **options):
        return lambda: fs.shapley_values(lambda m: m.sum(1, dtype=np.float64), n, **options)

    def sketch_call(length, **options):
        if options.get("input") == "codes":
            model = lambda codes: codes.sum(1, dtype=np.float64)
        else:
            model = lambda seqs: np.array([s.count("A") for s in seqs], dtype=np.float64)
        return lambda: fs.FourierSketch.fit(model, length, "ACGT", **options)

    build = {"explainer": explainer_call, "game": game_call, "sketch": sketch_call}[engine]
    # warm-up on one row (same players, budget and method: same recipe, imports, thread pools,
    # heap thresholds), then the heap's free memory goes back to the system
    build(**{**case, **{key: 1 for key in ("background", "rows") if key in case}})()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    call = build(**case)

    estimates = []
    check = validation.check_memory

    def capture(name, estimate, *args, **kwargs):
        estimates.append(estimate.total)
        return check(name, estimate, *args, **kwargs)

    validation.check_memory = capture
    tracemalloc.start()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets the peak (VmHWM) to the current resident set
    before = status("VmRSS:")
    call()
    resident = status("VmHWM:") - before - tracemalloc.get_tracemalloc_memory()
    traced = tracemalloc.get_traced_memory()[1]
    print(json.dumps({"estimate": estimates[0], "resident": resident, "traced": traced}))
    """
)


def explainer(n: int, background: int, rows: int, **options: object) -> dict:
    """A case of ``Explainer`` on a linear model: ``n`` features, ``background`` rows,
    ``rows`` explained rows, ``outputs`` outputs, the first ``null`` features null players."""
    return {"engine": "explainer", "n": n, "background": background, "rows": rows, **options}


CASES = [
    explainer(6, 10, 10),  # the false refusal; auto: exact
    explainer(20, 10, 2, budget=300),  # auto: a LightGBM proxy
    explainer(500, 4, 2, budget=10000, method="proxy-leverage"),  # LightGBM on many players
    explainer(12, 20, 10, method="exact", outputs=4),
    explainer(200, 20, 2, budget=6000, method="kernel"),
    explainer(1200, 1, 1, budget=8000, method="leverage"),  # the solver dominates
    explainer(30, 10, 8, budget=1000, method="leverage", per_row_design=True),
    explainer(60, 1, 30, budget=3000, method="leverage", null=20),  # whole masks per row
    explainer(100, 20, 5, budget=2000, method="leverage", outputs=3),  # many model rows
    {"engine": "game", "n": 784, "budget": 20000, "method": "leverage"},
    {"engine": "game", "n": 500, "budget": 20000, "method": "unbiased"},
    {"engine": "game", "n": 16, "budget": 30000, "method": "kernel"},
    {"engine": "sketch", "length": 20, "budget": 5000},
    {"engine": "sketch", "length": 60, "budget": 30000, "input": "codes"},
]


def measure(case: dict) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", MEASURE, json.dumps(case)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", CASES, ids=lambda case: "-".join(map(str, case.values())))
def test_the_estimate_covers_the_measured_peak_and_at_most_doubles_it(case):
    measured = measure(case)
    peak = max(measured["resident"], measured["traced"])
    estimate = measured["estimate"]
    assert peak <= estimate <= 2 * peak + SLACK, measured


def test_a_small_explainer_fits_a_small_cap():
    rng = np.random.default_rng(0)
    ex = fs.Explainer(lambda z: z.sum(1), rng.random((10, 6)), max_memory=256 * 2**20)
    assert ex(rng.random((5, 6))).values.shape == (5, 6)


def test_a_small_sketch_fits_a_small_cap():
    sketch = fs.FourierSketch.fit(
        lambda s: np.zeros(len(s)), 10, "AC", budget=200, max_memory=64 * 2**20
    )
    assert sketch.length == 10


def test_a_million_features_are_refused_before_rows_are_grouped():
    n = 10**6
    explainer = fs.Explainer(lambda z: z.sum(1), np.zeros((1, n)), max_memory=2**30)
    started = time.perf_counter()
    with pytest.raises(InvalidArgumentError, match="Explainer with n=1000000"):
        explainer(np.ones((1, n)))
    assert time.perf_counter() - started < 2.0
