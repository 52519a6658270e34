"""The interventional game's masked inputs: compiled (float) and NumPy (other dtypes) paths agree
with a direct construction, and the compiled builder rejects misshapen input by name."""

from __future__ import annotations

import numpy as np
import pytest

from ferroshap import InvalidArgumentError, _core
from ferroshap.query.games import TabularGame
from ferroshap.query.loop import QueryOptions


def direct_values(model, background, rows, masks) -> np.ndarray:
    """``v_x(S) = mean_b f(x_S, b_notS)`` built one coalition and one row at a time."""
    out = np.empty((len(masks), len(rows)))
    for j, mask in enumerate(masks):
        for r, x in enumerate(rows):
            out[j, r] = model(np.where(mask, x, background)).mean()
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_masked_inputs_match_direct_construction(dtype) -> None:
    rng = np.random.default_rng(0)
    background = rng.integers(-5, 5, size=(7, 6)).astype(dtype)
    rows = rng.integers(-5, 5, size=(3, 6)).astype(dtype)
    masks = rng.random((11, 6)) < 0.5
    w = np.arange(1.0, 7.0)

    def model(z: np.ndarray) -> np.ndarray:
        return z.astype(np.float64) @ w + z[:, 0] * z[:, 3]

    game = TabularGame(
        model, background, rows, options=QueryOptions(batch_size=14)
    )  # 2 coalition-row pairs a call
    # Integer-valued data: every path computes the same sums exactly (float32 included).
    np.testing.assert_array_equal(
        game.evaluate(masks), direct_values(model, background, rows, masks)
    )


def test_compiled_builder_names_bad_arguments() -> None:
    masks = np.ones((2, 3), dtype=bool)
    rows = np.zeros((1, 3))
    background = np.zeros((2, 3))
    out = np.zeros((4, 3))
    index = np.array([0, 1], dtype=np.int64)
    with pytest.raises(InvalidArgumentError, match="row_index"):
        _core.fill_masked_inputs(out, masks, index, rows, index, background)
    with pytest.raises(InvalidArgumentError, match="out"):
        _core.fill_masked_inputs(out[:3], masks, index, rows, index * 0, background)
    with pytest.raises(InvalidArgumentError, match="mask_index"):
        _core.fill_masked_inputs(out, masks, -index, rows, index * 0, background)
    with pytest.raises(TypeError, match="out"):
        _core.fill_masked_inputs(out.astype(int), masks, index, rows, index * 0, background)


def test_compiled_builder_reads_strided_indices_and_names_the_first_negative_one() -> None:
    masks = np.array([[True, False, True], [False, True, False]])
    rows = np.arange(6.0).reshape(2, 3)
    background = -np.ones((1, 3))
    contiguous, strided = np.empty((2, 3)), np.empty((2, 3))
    _core.fill_masked_inputs(
        contiguous, masks, np.array([1, 0]), rows, np.array([0, 1]), background
    )
    every_other = np.array([1, 7, 0, 7], dtype=np.int64)[::2]  # a view with stride 2
    _core.fill_masked_inputs(strided, masks, every_other, rows, np.array([0, 1]), background)
    np.testing.assert_array_equal(strided, contiguous)
    np.testing.assert_array_equal(contiguous, [[-1.0, 1.0, -1.0], [3.0, -1.0, 5.0]])
    with pytest.raises(InvalidArgumentError, match=r"row_index: -3 is negative"):
        _core.fill_masked_inputs(
            strided, masks, every_other, rows, np.array([2, -3, -1])[1:], background
        )


def filler_case(dtype=np.float64, budget=20, n=5, rows=3, background=2):
    """A design with its data, and what the compiled builder fills for every pair at once."""
    rng = np.random.default_rng(1)
    design = _core.plan("leverage", n, budget, seed=0)
    data = rng.normal(size=(rows, n)).astype(dtype)
    bg = rng.normal(size=(background, n)).astype(dtype)
    pairs = design.n_coalitions * rows
    index = np.arange(pairs, dtype=np.int64)
    whole = np.empty((pairs * background, n), dtype)
    _core.fill_masked_inputs(whole, design, index // rows, data, index % rows, bg)
    return design, data, bg, whole


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_filler_fills_each_chunk_as_the_builder_does(dtype, threads) -> None:
    design, data, bg, whole = filler_case(dtype)
    pairs, chunk, start = design.n_coalitions * len(data), 7, 4
    buffers = [np.full(chunk * bg.size, np.nan, dtype) for _ in range(3)]
    filler = _core.InputFiller(
        buffers, design, data, bg, n_pairs=pairs, start=start, chunk=chunk, threads=threads
    )
    taken = []
    while (start + len(taken) * chunk) < pairs:
        slot, first, stop = filler.take()
        assert slot == len(taken) % 3 and first == start + len(taken) * chunk
        got = buffers[slot][: (stop - first) * bg.size].reshape(-1, data.shape[1])
        np.testing.assert_array_equal(got, whole[first * len(bg) : stop * len(bg)])
        taken.append(stop)
    assert taken[-1] == pairs
    with pytest.raises(InvalidArgumentError, match="no chunk left"):
        filler.take()
    filler.close()
    filler.close()  # closing twice is harmless


def test_a_closed_filler_gives_no_chunk_and_does_not_wait() -> None:
    design, data, bg, _ = filler_case()
    buffers = [np.empty(4 * bg.size) for _ in range(3)]
    pairs = design.n_coalitions * len(data)
    # many times: a chunk still being filled when close() came used to be handed out after it
    # (about 2 % of runs)
    for _ in range(300):
        filler = _core.InputFiller(buffers, design, data, bg, n_pairs=pairs, start=0, chunk=4)
        assert filler.take()[1:] == (0, 4)
        filler.close()  # chunks filled ahead meanwhile, or being filled, are dropped
        with pytest.raises(InvalidArgumentError, match="closed"):
            filler.take()


def test_the_filler_reads_one_row_per_pair() -> None:
    design, data, bg, _ = filler_case()
    m = design.n_coalitions
    row_of_pair = np.arange(m, dtype=np.int64) % len(data)
    expected = np.empty((m * len(bg), data.shape[1]))
    index = np.arange(m, dtype=np.int64)
    _core.fill_masked_inputs(expected, design, index, data, row_of_pair, bg)
    buffers = [np.empty(m * bg.size) for _ in range(2)]
    filler = _core.InputFiller(
        buffers, design, data, bg, n_pairs=m, start=0, chunk=m, row_of_pair=row_of_pair
    )
    slot, first, stop = filler.take()
    assert (slot, first, stop) == (0, 0, m)
    np.testing.assert_array_equal(buffers[0].reshape(expected.shape), expected)


def test_the_filler_names_bad_arguments() -> None:
    design, data, bg, _ = filler_case()
    pairs = design.n_coalitions * len(data)
    ok = {"n_pairs": pairs, "start": 0, "chunk": 4}
    buffers = [np.empty(4 * bg.size) for _ in range(3)]
    cases = [
        ("buffers", [buffers[0]], data, bg, ok),
        ("buffers", [b[:-1] for b in buffers], data, bg, ok),
        ("chunk", buffers, data, bg, ok | {"chunk": 0}),
        ("n_pairs", buffers, data, bg, ok | {"n_pairs": pairs + 1}),
        ("background", buffers, data, bg[:, :3], ok),
        ("row_of_pair", buffers, data, bg, ok | {"row_of_pair": np.array([0, 3, 0])}),
        ("player_of_feature", buffers, data, bg, ok | {"player_of_feature": np.arange(1, 6)}),
    ]
    for name, bufs, rows, background, kwargs in cases:
        with pytest.raises(InvalidArgumentError, match=name):
            _core.InputFiller(bufs, design, rows, background, **kwargs)
    with pytest.raises(TypeError, match="background"):
        _core.InputFiller(buffers, design, data, bg.astype(np.float32), **ok)
    with pytest.raises(TypeError, match="rows"):
        _core.InputFiller(buffers, design, data.astype(int), bg, **ok)
