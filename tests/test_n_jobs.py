"""``n_jobs``: the engines' thread limit is checked where it enters, bounds the thread pool, the
compiled core and LightGBM, and does not change a result (ProxySPEX's beyond rounding)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import _core
from ferroshap.bench.games import SumOfUnanimity
from ferroshap.interactions.proxy import MAX_PROXY_THREADS, proxy_threads
from ferroshap.query import backend
from ferroshap.query.backend import available_cpus, check_n_jobs, in_threads, limited, workers
from ferroshap.sampling import proxy_adjusted


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_bad_n_jobs_is_named(bad):
    with pytest.raises(fs.FerroshapError, match="n_jobs") as raised:
        fs.Explainer(lambda z: z.sum(1), np.zeros((2, 3)), n_jobs=bad)
    assert raised.value.argument == "n_jobs"
    with pytest.raises(fs.FerroshapError, match="n_jobs"):
        fs.ProxySPEX(lambda m: m.sum(1) * 1.0, n_players=4, n_jobs=bad)
    with pytest.raises(fs.FerroshapError, match="n_jobs"):
        fs.shapley_values(lambda m: m.sum(1) * 1.0, 4, n_jobs=bad)


def test_every_cpu_spellings():
    assert check_n_jobs(None) is None and check_n_jobs(-1) is None
    assert check_n_jobs(np.int64(3)) == 3


def test_limit_bounds_pool_core_and_lightgbm():
    with limited(1):
        assert workers() == 1
        assert proxy_threads(10**9) == 1
        seen = in_threads([threading.get_ident for _ in range(8)])
        assert len(set(seen)) == 1
        # the pool's threads carry the limit to the compiled core
        assert in_threads([lambda: _core.set_thread_limit(1)]) == [1]
        assert _core.set_thread_limit(1) == 1
    assert _core.set_thread_limit(0) == 0
    assert workers() == available_cpus()
    assert proxy_threads(10**9) == min(MAX_PROXY_THREADS, available_cpus())


def test_values_do_not_depend_on_n_jobs():
    rng = np.random.default_rng(3)
    background, X = rng.normal(size=(8, 12)), rng.normal(size=(4, 12))

    def model(z):
        return z[:, 0] * z[:, 1] + np.sin(z[:, 2]) * z[:, 3] + z @ np.linspace(-1, 1, 12)

    runs = [
        fs.Explainer(model, background, budget=300, seed=5, n_jobs=jobs)(X) for jobs in (None, 1, 2)
    ]
    assert runs[0].estimator != "exact"
    for run in runs[1:]:
        np.testing.assert_array_equal(run.values, runs[0].values)
        np.testing.assert_array_equal(run.standard_errors, runs[0].standard_errors)
    game = SumOfUnanimity.random(30, 12, 3, seed=4)
    first, second = (
        fs.ProxySPEX(game, n_players=30, budget=800, seed=1, n_jobs=jobs).explain()
        for jobs in (None, 1)
    )
    # its linear algebra splits work by thread count: equal to rounding, as across machines
    assert first.values.keys() == second.values.keys()
    np.testing.assert_allclose(
        list(first.values.values()), list(second.values.values()), rtol=1e-9, atol=1e-15
    )
    one = fs.shapley_values(game, 30, budget=600, seed=2, n_jobs=1)
    np.testing.assert_array_equal(one, fs.shapley_values(game, 30, budget=600, seed=2))


def test_standard_errors_read_later_keep_the_limit(monkeypatch):
    # a proxy method's standard errors fit held-out proxies when first read, after the call:
    # they still run within the explainer's n_jobs (the pool and the compiled core)
    seen = []
    real = proxy_adjusted.held_out_errors
    monkeypatch.setattr(
        proxy_adjusted,
        "held_out_errors",
        lambda *args: seen.append((workers(), backend._LIMIT.get())) or real(*args),
    )
    rng = np.random.default_rng(4)
    background, X = rng.normal(size=(6, 10)), rng.normal(size=(3, 10))

    def model(z):
        return np.tanh(z[:, 0] * z[:, 1] * z[:, 2]) + z @ np.linspace(-1, 1, 10)

    ex = fs.Explainer(model, background, method="proxy-leverage", budget=200, seed=1, n_jobs=1)
    result = ex(X)
    assert seen == [] and backend._LIMIT.get() is None
    assert result.standard_errors.shape == result.values.shape
    assert seen and set(seen) == {(1, 1)}
