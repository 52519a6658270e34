"""Ctrl-C interrupts the compiled core within a second and leaves the process usable.

Each test starts a call whose compiled part runs for seconds, sends SIGINT to the process from a
timer thread a fifth of a second in, and checks that ``KeyboardInterrupt`` arrives within a second
of the signal and that a small call of the same kind succeeds afterwards.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from ferroshap import _core

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is POSIX"),
    pytest.mark.skipif(
        threading.current_thread() is not threading.main_thread(),
        reason="signals reach Python's main thread only",
    ),
]

#: Seconds from the start of the call to the signal, and the most the interrupt may take.
DELAY, WITHIN = 0.2, 1.0


@pytest.fixture(autouse=True)
def python_handles_sigint() -> Iterator[None]:
    """Python's own SIGINT handler for each test: a process started in the background by a
    non-interactive shell (``nohup ... &``) inherits SIGINT ignored, and Python then installs
    no handler of its own."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupt_latency(call: Callable[[], Any]) -> float:
    """Seconds from a SIGINT sent ``DELAY`` s into ``call`` to its ``KeyboardInterrupt``."""
    sent: list[float] = []

    def fire() -> None:
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(DELAY, fire)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
        return time.perf_counter() - sent[0]
    finally:
        timer.cancel()
        timer.join()


def check(call: Callable[[], Any]) -> None:
    latency = interrupt_latency(call)
    print(f"interrupted {latency:.3f} s after SIGINT")
    assert latency < WITHIN


def test_planning_is_interruptible() -> None:
    check(lambda: _core.plan("kernel", 4096, 400_000, 0))
    assert _core.plan("kernel", 4096, 1000, 0).n_coalitions == 1000


def test_the_normal_equations_are_interruptible() -> None:
    design = _core.plan("leverage", 2048, 10_000, 0)
    values = np.random.default_rng(0).normal(size=design.n_coalitions)
    check(lambda: design.estimate(values))
    assert design.solver() is None  # nothing was cached: the next call factorizes afresh
    small = _core.plan("leverage", 30, 200, 0)
    assert small.estimate(np.arange(200.0)).shape == (30,)
    assert small.solver() == "normal"


def test_solving_many_rows_is_interruptible() -> None:
    design = _core.plan("leverage", 1024, 4000, 0)
    design.estimate(np.zeros(design.n_coalitions))
    values = np.random.default_rng(1).normal(size=(design.n_coalitions, 4000))
    check(lambda: design.estimate(values))
    assert design.estimate(values[:, :3]).shape == (3, 1024)


@pytest.fixture(scope="module")
def big_model() -> tuple[str, int, np.ndarray, np.ndarray]:
    """A deep LightGBM model's text on 0/1 inputs, with its players, inputs and targets."""
    lightgbm = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    n = 60
    x = rng.integers(0, 2, size=(3000, n)).astype(float)
    y = x @ rng.normal(size=n) + np.sin(x[:, :10].sum(1)) * x[:, 10:20].sum(1)
    params = {
        "objective": "regression",
        "num_leaves": 128,
        "max_depth": 12,
        "min_data_in_leaf": 1,
        "verbose": -1,
        "num_threads": 1,
    }
    booster = lightgbm.train(params, lightgbm.Dataset(x, y), num_boost_round=200)
    return booster.model_to_string(), n, x == 1, y


def test_tree_extraction_is_interruptible(big_model: tuple[str, int, Any, Any]) -> None:
    text, n, _, _ = big_model
    check(lambda: _core.lightgbm_fourier(text, n))
    stump = text.split("Tree=1")[0] + "end of trees\n"
    assert len(_core.lightgbm_fourier(stump, n)) > 1


def test_sketch_decoding_is_interruptible() -> None:
    plan = _core.sketch_plan(4, 40, 2_000_000, 0)
    queries = plan.queries()
    noise = np.random.default_rng(2).normal(size=len(queries))
    values = (queries[:, :5].sum(1) % 3).astype(float) + 0.5 * noise
    check(lambda: plan.decode(values))
    small = _core.sketch_plan(2, 6, 300, 0)
    small.decode(small.queries().sum(1).astype(float))


def test_proxyspex_selection_is_interruptible(big_model: tuple[str, int, Any, Any]) -> None:
    text, n, masks, values = big_model
    spectrum = _core.lightgbm_fourier(text, n)
    train = (masks[:2400], values[:2400])
    validation = (masks[2400:], values[2400:])
    # Polled between steps only: the ranking sort, the QR factorization (select_support) and
    # the eigendecomposition (select_ridge) run as single calls that the interrupt waits for
    # (about 2 s here under load).
    for select in (
        lambda: _core.select_support(spectrum, "Fourier", *train, *validation),
        lambda: _core.select_ridge(spectrum, *train, *validation),
    ):
        latency = interrupt_latency(select)
        print(f"interrupted {latency:.3f} s after SIGINT")
        assert latency < 4 * WITHIN
    k, _, _ = _core.select_support(spectrum, "Fourier", masks[:40], values[:40], *validation)
    assert k >= 1


def test_core_calls_on_worker_threads_stop_with_the_main_thread(
    big_model: tuple[str, int, Any, Any],
) -> None:
    """ProxySPEX runs its selections on a thread pool, where no signal arrives: Ctrl-C in the
    main thread, waiting for them, tells them to stop (``_core.interrupt``), so the interrupt
    takes a poll of theirs, not their whole run."""
    from ferroshap.query.backend import in_threads

    text, n, masks, values = big_model
    spectrum = _core.lightgbm_fourier(text, n)
    train = (masks[:2400], values[:2400])
    validation = (masks[2400:], values[2400:])
    calls = [
        lambda: _core.select_support(spectrum, "Fourier", *train, *validation),
        lambda: _core.select_support(spectrum, "Moebius", *train, *validation),
        lambda: _core.select_ridge(spectrum, *train, *validation),
    ]
    latency = interrupt_latency(lambda: in_threads(calls))
    print(f"interrupted {latency:.3f} s after SIGINT")
    assert latency < 4 * WITHIN  # the same single-call steps as above bound it
    k, _, _ = _core.select_support(spectrum, "Fourier", masks[:40], values[:40], *validation)
    assert k >= 1
