"""The memory estimate and the ``max_memory`` cap of every engine: the error comes before any
large allocation (``n = 10**9`` included), bad caps are refused, and the estimate covers the
peak measured in a fresh process (Linux's ``VmHWM``, reset just before the call) on four sizes,
at most doubling it (plus 64 MiB; more cases in ``test_memory_estimates.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import InvalidArgumentError, InvalidTypeError, validation
from ferroshap.query.games import RawGame


def additive(masks: np.ndarray) -> np.ndarray:
    return masks.sum(axis=1, dtype=np.float64)


def test_a_billion_players_fail_at_once_naming_the_arguments():
    with pytest.raises(InvalidArgumentError) as info:
        fs.shapley_values(additive, 10**9, budget=64)
    message = str(info.value)
    for part in ("shapley_values", "n=1000000000", "budget=64", "max_memory=", "GiB"):
        assert part in message, message


def test_every_engine_checks_its_cap():
    tiny = 1024
    background = np.zeros((1, 30))
    with pytest.raises(InvalidArgumentError, match="Explainer with n=30, budget=512, rows=2"):
        fs.Explainer(lambda z: z.sum(1), background, budget=512, max_memory=tiny)(np.ones((2, 30)))
    with pytest.raises(InvalidArgumentError, match="shapley_values with n=30"):
        fs.shapley_values(additive, 30, budget=512, max_memory=tiny)
    with pytest.raises(InvalidArgumentError, match="exact_interactions with n=10"):
        fs.exact_interactions(additive, 10, max_memory=tiny)
    with pytest.raises(InvalidArgumentError, match="ProxySPEX with n=30, budget=500"):
        fs.ProxySPEX(additive, n_players=30, budget=500, max_memory=tiny).explain()
    with pytest.raises(InvalidArgumentError, match=r"FourierSketch\.fit with length=10"):
        fs.FourierSketch.fit(lambda s: np.zeros(len(s)), 10, "AC", budget=200, max_memory=tiny)


def test_a_generous_cap_changes_nothing():
    default = fs.shapley_values(additive, 30, budget=512)
    capped = fs.shapley_values(additive, 30, budget=512, max_memory=2**40)
    np.testing.assert_array_equal(default, capped)


@pytest.mark.parametrize("bad", [0, -5])
def test_caps_must_be_positive(bad):
    with pytest.raises(InvalidArgumentError, match="max_memory must be at least 1"):
        fs.shapley_values(additive, 30, budget=512, max_memory=bad)
    with pytest.raises(InvalidArgumentError, match="max_memory"):
        fs.Explainer(lambda z: z.sum(1), np.zeros((1, 3)), max_memory=bad)
    with pytest.raises(InvalidArgumentError, match="max_memory"):
        fs.ProxySPEX(additive, n_players=30, budget=500, max_memory=bad)


@pytest.mark.parametrize("bad", [1.5, "1GB", True])
def test_caps_must_be_ints(bad):
    with pytest.raises(InvalidTypeError, match="max_memory must be an int"):
        fs.shapley_values(additive, 30, budget=512, max_memory=bad)
    with pytest.raises(InvalidTypeError, match="max_memory must be an int"):
        fs.exact_interactions(additive, 4, max_memory=bad)


def test_the_default_cap_is_half_the_available_memory():
    assert validation.resolve_max_memory(None) == validation.available_memory() // 2
    assert validation.available_memory() > 0


MEASURE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import ferroshap as fs

    def status(field):
        with open("/proc/self/status") as lines:
            for line in lines:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024

    method, n, budget = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    fs.shapley_values(lambda m: m.sum(1, dtype=np.float64), 8, budget=64, method=method)
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets the peak (VmHWM) to the current resident set
    before = status("VmRSS:")
    fs.shapley_values(lambda m: m.sum(1, dtype=np.float64), n, budget=budget, method=method)
    print(json.dumps({"added": status("VmHWM:") - before}))
    """
)


@pytest.mark.parametrize(
    ("method", "n", "budget"),
    [
        ("leverage", 784, 20000),
        ("leverage", 2048, 12000),
        ("unbiased", 500, 20000),
        ("kernel", 16, 30000),
    ],
)
def test_the_estimate_is_within_twice_the_measured_peak(method, n, budget):
    result = subprocess.run(
        [sys.executable, "-c", MEASURE, method, str(n), str(budget)],
        capture_output=True,
        text=True,
        check=True,
    )
    added = json.loads(result.stdout)["added"]
    query = RawGame(additive, n).query_bytes(validation.planned_coalitions(method, n, budget))
    estimate = validation.sampling_estimate(method, n, budget, query=query).total
    assert added <= estimate <= 2 * added + 64 * 2**20, (added, estimate)


def test_exact_enumeration_is_sized_by_two_to_the_n_not_the_budget():
    small = validation.sampling_estimate("exact", 20, budget=16)
    assert small.parts["values"] == 2 * 2**20 * validation.FLOAT
