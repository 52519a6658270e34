"""pytest-benchmark suites for ferroshap's hot paths (no timing assertions).

Run ``pytest benches/`` for timings, ``pytest benches/ --benchmark-disable`` for a quick smoke
run (each benchmark body runs once). The test suite's ``testpaths`` does not include benches/.
"""

from __future__ import annotations

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import _core
from ferroshap.bench.games import near_free_problem

PLAN_CASES = [(100, 4096), (784, 20000)]


@pytest.mark.parametrize("method", ["leverage", "kernel"])
@pytest.mark.parametrize(("n", "budget"), PLAN_CASES, ids=[f"n{n}-m{m}" for n, m in PLAN_CASES])
def test_plan(benchmark, method: str, n: int, budget: int) -> None:
    """``_core.plan``: sampling a design (no factorization)."""
    design = benchmark(_core.plan, method, n, budget, 0)
    assert design.n_coalitions <= budget


@pytest.fixture(scope="module")
def leverage_design() -> _core.Design:
    """A factorized leverage design, n = 100, budget 4096."""
    design = _core.plan("leverage", 100, 4096, 0)
    design.estimate(np.zeros(design.n_coalitions))
    return design


@pytest.mark.parametrize("columns", [1, 100, 10_000])
def test_estimate(benchmark, leverage_design: _core.Design, columns: int) -> None:
    """``Design.estimate`` on an already factorized design, for 1 / 100 / 10 000 value columns."""
    values = np.random.default_rng(0).normal(size=(leverage_design.n_coalitions, columns))
    phi = benchmark(leverage_design.estimate, values)
    assert phi.shape == (columns, 100)


@pytest.mark.parametrize("method", ["leverage", "kernel"])
def test_factorize(benchmark, method: str) -> None:
    """Plan plus the first ``estimate`` (which factorizes the design), n = 100, budget 4096."""

    def plan_and_estimate() -> np.ndarray:
        design = _core.plan(method, 100, 4096, 0)
        return design.estimate(np.zeros(design.n_coalitions))

    benchmark(plan_and_estimate)


@pytest.mark.parametrize("method", ["leverage", "kernel"])
def test_explainer_end_to_end(benchmark, method: str) -> None:
    """``Explainer`` on the near-free model: n = 100, one baseline row, budget 4096, 20 rows."""
    model, background, X = near_free_problem(100, 20)
    explainer = fs.Explainer(model, background, method=method, budget=4096, seed=0)
    explanation = benchmark(explainer, X)
    assert explanation.values.shape == (20, 100)
