"""The bit-aware normal-equations solver through the Python API: the same values as the SVD
path on full-rank designs, exact on additive games, and the automatic choice."""

from __future__ import annotations

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import InvalidArgumentError, _core


def relative_l2(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.linalg.norm(a - b, axis=-1) / np.linalg.norm(b, axis=-1)))


@pytest.mark.parametrize(("n", "budget"), [(8, 150), (50, 1500), (300, 6000)])
@pytest.mark.parametrize("method", ["leverage", "kernel-wor"])
def test_normal_equations_match_the_svd(n, budget, method):
    designs = {s: _core.plan(method, n, budget, 3, solver=s) for s in ("svd", "normal")}
    rng = np.random.default_rng(n)
    values = rng.normal(size=(designs["svd"].n_coalitions, 5))
    phi = {s: d.estimate(values) for s, d in designs.items()}
    assert designs["normal"].solver() == "normal"
    assert designs["svd"].solver() == "svd"
    assert designs["normal"].rank() == n - 1
    assert relative_l2(phi["normal"], phi["svd"]) < 1e-9


def test_additive_games_are_recovered_exactly_at_high_dimension():
    n = 784
    weights = np.random.default_rng(0).normal(size=n)
    phi = fs.shapley_values(lambda masks: masks @ weights, n, budget=4000)
    np.testing.assert_allclose(phi, weights, rtol=1e-9, atol=1e-9)


def test_auto_switches_at_the_crossover():
    below = _core.plan("leverage", _core.CROSSOVER_PLAYERS - 1, 400, 0)
    above = _core.plan("leverage", _core.CROSSOVER_PLAYERS, 400, 0)
    for design in (below, above):
        assert design.solver() is None
        design.estimate(np.zeros(design.n_coalitions))
    assert below.solver() == "svd"
    assert above.solver() == "normal"
    assert _core.SOLVERS == ["auto", "svd", "normal"]


def test_rank_deficient_designs_keep_the_svd_warning():
    with pytest.warns(UserWarning, match="rank-deficient"):
        fs.shapley_values(lambda masks: masks.sum(1) * 1.0, 300, budget=100)


def test_unknown_solvers_are_refused():
    with pytest.raises(InvalidArgumentError, match="solver"):
        _core.plan("leverage", 10, 100, 0, solver="qr")


class CountingDesign:
    """A planned design that records which rows of masks are asked for."""

    def __init__(self, design: _core.Design) -> None:
        self.design, self.requests = design, []
        self.n_coalitions = design.n_coalitions

    def masks(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        self.requests.append((start, stop))
        return self.design.masks(start, stop)


def test_masked_inputs_read_the_design_a_chunk_at_a_time():
    """A model's masked inputs come from the design's bits chunk by chunk (no m x n array of
    masks), with the same values as from the whole mask array."""
    from ferroshap.query.games import TabularGame
    from ferroshap.query.loop import DesignMasks, QueryOptions

    n, rows = 40, 3
    design = CountingDesign(_core.plan("leverage", n, 500, 0))
    rng = np.random.default_rng(0)
    weights = rng.normal(size=n)
    game = TabularGame(
        lambda z: np.tanh(z @ weights),
        rng.normal(size=(1, n)),
        rng.normal(size=(rows, n)),
        options=QueryOptions(batch_size=64),
    )
    chunked = game.evaluate(DesignMasks(design))
    np.testing.assert_array_equal(chunked, game.evaluate(design.design.masks()))
    starts = [start for start, _ in design.requests]
    assert len(starts) > 10 and starts == sorted(starts)
    assert max(stop - start for start, stop in design.requests) <= 64 // rows + 1
    memory_part = fs.validation.sampling_estimate("leverage", 4096, 40000).parts["masks"]
    assert memory_part == 0  # read in chunks: not 4096 x 40000


def test_ill_conditioned_designs_fall_back_to_the_svd_with_a_warning():
    """A full-rank design whose normal equations are too ill-conditioned (found by search:
    modified-l2, n = 30, 31 coalitions, seed 1, unpaired) is solved by the SVD, said in a
    warning, with the SVD's values."""
    normal = _core.plan("modified-l2", 30, 31, 1, paired=False, solver="normal")
    svd = _core.plan("modified-l2", 30, 31, 1, paired=False, solver="svd")
    values = np.random.default_rng(0).normal(size=normal.n_coalitions)
    with pytest.warns(UserWarning, match="ill-conditioned design"):
        phi = normal.estimate(values)
    assert normal.solver() == "svd" and normal.rank() == 29
    np.testing.assert_allclose(phi, svd.estimate(values), rtol=1e-12, atol=1e-12)
