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
