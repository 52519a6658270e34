"""The image masker: the players of an image are its patches (a grid) or any segments.

A coalition keeps the pixels of the patches it holds; the other pixels take a fill: a constant
(the baseline value), a blurred copy of the image, or background images, whose model outputs
are averaged (the interventional game). Masked images are built and scored through
:class:`ferroshap.query.games.TabularGame`, in the image's own array library and on its device.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ferroshap._core import InvalidArgumentError, InvalidTypeError
from ferroshap.query.backend import DEFAULT_MAX_BYTES, ArrayBackend, check_finite, to_numpy
from ferroshap.query.games import TabularGame, as_model_function
from ferroshap.query.loop import QueryOptions
from ferroshap.validation import check_real

__all__ = ["Image", "grid_segments"]

EXPAND_BYTES = 64 * 2**20
"""Most bytes of pixel masks expanded from coalitions at once."""


def grid_segments(height: int, width: int, patch_size: int | tuple[int, int]) -> np.ndarray:
    """``int[height, width]``: the patch of each pixel in a grid of ``patch_size`` patches,
    numbered row by row. Patches that do not tile the image leave the last row and column of
    patches smaller.

    Examples
    --------
    >>> grid_segments(3, 5, 2)
    array([[0, 0, 1, 1, 2],
           [0, 0, 1, 1, 2],
           [3, 3, 4, 4, 5]])
    """
    ph, pw = _patch_shape(patch_size)
    if ph > height or pw > width:
        raise InvalidArgumentError(
            f"patch_size {(ph, pw)} exceeds the {height} x {width} pixels of the image x; pass "
            "a patch size at most the image size",
            argument="x",
        )
    columns = -(-width // pw)
    return (np.arange(height)[:, None] // ph) * columns + np.arange(width)[None, :] // pw


def _patch_shape(patch_size: Any) -> tuple[int, int]:
    sizes = (patch_size, patch_size) if isinstance(patch_size, numbers.Integral) else patch_size
    try:
        ph, pw = (int(s) for s in sizes)
        valid = all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in sizes)
    except (TypeError, ValueError):
        valid = False
    if not valid or ph < 1 or pw < 1:
        raise InvalidArgumentError(
            f"patch_size must be a positive int or a pair of them (height, width), got "
            f"{patch_size!r}",
            argument="patch_size",
        )
    return ph, pw


class Image:
    """Players are the patches (or segments) of one image.

    ``v(S) = mean_b f(x_S, b_notS)``: pixels of the patches in ``S`` come from the image ``x``,
    the others from each fill image ``b``. The model receives a batch ``[batch, *x.shape]`` in
    the image's array library (a NumPy image for a ``torch.nn.Module`` is moved to its device
    and dtype) and returns ``[batch]`` scores, or ``[batch, k]`` (every column explained by
    :class:`ferroshap.Explainer`; :class:`ferroshap.ProxySPEX` needs one, picked with
    ``output_index``). Use it as the ``masker`` of :class:`ferroshap.Explainer` or
    :class:`ferroshap.ProxySPEX`; :meth:`game` gives the game for
    :func:`ferroshap.shapley_values`.

    Parameters
    ----------
    patch_size
        Height and width of the grid's patches (an int for squares). Patches that do not tile
        the image leave the last row and column of patches smaller; a patch larger than the
        image is an error.
    segments
        Instead of a grid: an integer label map ``[H, W]`` (superpixels, regions of interest);
        each distinct label is one player, in increasing order.
    fill
        What a masked pixel becomes: a finite number (the baseline value, default 0),
        ``"blur"`` (a Gaussian blur of the image, ``blur_sigma`` pixels), ``"mean"`` (the
        image's mean per channel), or background images ``[B, *x.shape]`` of finite numbers
        (each coalition then costs ``B`` model rows).
    blur_sigma
        Standard deviation in pixels of ``fill="blur"`` (default: the larger patch side).
    channel_axis
        For a 3-D image, the axis of its channels: ``-1`` for ``[H, W, C]`` (the default),
        ``0`` for ``[C, H, W]`` (PyTorch's layout). A 2-D image ``[H, W]`` has none.
    batch_size, max_bytes, progress
        Model rows per call, the cap on the bytes of masked images built at once, and a tqdm
        progress bar, as for :class:`ferroshap.Explainer`.

    Examples
    --------
    >>> import numpy as np, ferroshap as fs
    >>> masker = fs.maskers.Image(patch_size=2)
    >>> game, n = masker.game(lambda b: b.reshape(len(b), -1).sum(1), np.ones((4, 4)))
    >>> n, game(np.array([[True, False, False, True]]))
    (4, array([8.]))
    """

    def __init__(
        self,
        patch_size: int | tuple[int, int] = 4,
        *,
        segments: Any = None,
        fill: Any = 0.0,
        blur_sigma: float | None = None,
        channel_axis: int = -1,
        batch_size: int | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        progress: bool = False,
    ) -> None:
        self.patch_size = _patch_shape(patch_size)
        self.segments = None if segments is None else _check_segments(segments)
        self.fill = _check_fill(fill)
        self.blur_sigma = (
            None if blur_sigma is None else check_real(blur_sigma, "blur_sigma", above=0)
        )
        if (
            isinstance(channel_axis, bool)
            or not isinstance(channel_axis, numbers.Integral)
            or channel_axis not in (-1, 0, 2)
        ):
            raise InvalidArgumentError(
                f"channel_axis must be -1 (or 2) for [H, W, C] or 0 for [C, H, W], got "
                f"{channel_axis!r}",
                argument="channel_axis",
            )
        self.channel_axis = int(channel_axis)
        self.options = QueryOptions.checked(batch_size, max_bytes, progress)

    def labels(self, x: Any) -> np.ndarray:
        """``int[H, W]``: the player (0 .. n-1) of each pixel of image ``x``."""
        height, width = self._spatial_shape(x)
        if self.segments is None:
            return grid_segments(height, width, self.patch_size)
        if self.segments.shape != (height, width):
            raise InvalidArgumentError(
                f"segments has shape {self.segments.shape} but the image is {height} x {width} "
                "pixels",
                argument="segments",
            )
        return np.unique(self.segments, return_inverse=True)[1].reshape(height, width)

    def player_names(self, x: Any) -> list[str]:
        """``"patch r,c"`` for a grid (its row and column of patches), ``"segment l"`` for
        the labels of a label map."""
        if self.segments is not None:
            self.labels(x)  # checks the shape
            return [f"segment {label}" for label in np.unique(self.segments)]
        height, width = self._spatial_shape(x)
        rows, columns = (-(-height // self.patch_size[0]), -(-width // self.patch_size[1]))
        return [f"patch {r},{c}" for r in range(rows) for c in range(columns)]

    def game(self, model: Any, x: Any) -> tuple[Callable[[np.ndarray], np.ndarray], int]:
        """The game of ``model`` on image ``x`` and its number of players (patches)."""
        function = as_model_function(model)
        labels = self.labels(x)
        n = int(labels.max()) + 1
        shape = tuple(int(s) for s in x.shape)
        _check_numbers(x, "x")
        pixel_player = self._broadcast(labels, shape).reshape(-1)
        image = function.place(x)
        fills = function.place(self._fills(x, shape))
        backend = ArrayBackend.of(image)
        if not backend.same_as(ArrayBackend.of(fills)):
            raise InvalidArgumentError(
                f"fill images are {ArrayBackend.of(fills).describe()} but the image is "
                f"{backend.describe()}; pass both from the same library and device",
                argument="fill",
            )

        def flat_model(batch: Any) -> Any:
            return function.function(batch.reshape((batch.shape[0], *shape)))

        tabular = TabularGame(
            flat_model,
            fills.reshape((fills.shape[0], -1)),
            image.reshape((1, -1)),
            options=self.options,
        )
        per_chunk = max(1, EXPAND_BYTES // pixel_player.size)

        def game(masks: np.ndarray) -> np.ndarray:
            masks = np.asarray(masks, dtype=bool)
            if masks.ndim != 2 or masks.shape[1] != n:
                raise InvalidArgumentError(
                    f"masks must have shape [k, {n}] (one column per patch), got {masks.shape}",
                    argument="masks",
                )
            values = np.concatenate(
                [
                    tabular.evaluate(masks[start : start + per_chunk][:, pixel_player])
                    for start in range(0, len(masks), per_chunk)
                ]
            )
            return values[:, 0] if tabular.output_shape in ((), (1,)) else values

        return game, n

    def _spatial_shape(self, x: Any) -> tuple[int, int]:
        shape = tuple(getattr(x, "shape", ()))
        if not hasattr(x, "shape") or len(shape) not in (2, 3):
            raise InvalidArgumentError(
                f"x must be an image array [H, W] or [H, W, C] (or [C, H, W] with "
                f"channel_axis=0), got {type(x).__name__} of shape {shape}",
                argument="x",
            )
        if 0 in shape:
            raise InvalidArgumentError(
                f"x must be a non-empty image, got shape {shape}", argument="x"
            )
        if len(shape) == 2:
            return int(shape[0]), int(shape[1])
        return (
            (int(shape[1]), int(shape[2]))
            if self.channel_axis == 0
            else (
                int(shape[0]),
                int(shape[1]),
            )
        )

    def _broadcast(self, labels: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """``labels [H, W]`` repeated over the channels of an image of ``shape``."""
        if len(shape) == 2:
            return labels
        if self.channel_axis == 0:
            return np.broadcast_to(labels[None], shape)
        return np.broadcast_to(labels[:, :, None], shape)

    def _fills(self, x: Any, shape: tuple[int, ...]) -> Any:
        """The fill images ``[B, *shape]``, in ``x``'s library (and on its device)."""
        backend = ArrayBackend.of(x)
        if not isinstance(self.fill, str) and hasattr(self.fill, "shape"):
            images = self.fill
            if tuple(images.shape) == shape:
                images = images[None]
            if tuple(images.shape[1:]) != shape or images.shape[0] == 0:
                raise InvalidArgumentError(
                    f"fill images must have shape [B, {', '.join(map(str, shape))}] like the "
                    f"image, got {tuple(images.shape)}",
                    argument="fill",
                )
            return images
        host = to_numpy(x)
        dtype = host.dtype if host.dtype.kind == "f" else np.float64
        if self.fill == "blur":
            filled = _blurred(host.astype(dtype), self._spatial_axes(shape), self._sigma())
        elif self.fill == "mean":
            axes = self._spatial_axes(shape)
            filled = np.broadcast_to(host.mean(axis=axes, keepdims=True), shape).astype(dtype)
        else:
            filled = np.full(shape, self.fill, dtype=dtype)
        return backend.asarray(filled[None], dtype=None)

    def _spatial_axes(self, shape: tuple[int, ...]) -> tuple[int, int]:
        return (1, 2) if len(shape) == 3 and self.channel_axis == 0 else (0, 1)

    def _sigma(self) -> float:
        return (
            float(self.blur_sigma) if self.blur_sigma is not None else float(max(self.patch_size))
        )


def _blurred(image: np.ndarray, axes: tuple[int, int], sigma: float) -> np.ndarray:
    """A Gaussian blur of ``image`` over its spatial ``axes`` (SciPy, which LightGBM needs)."""
    from scipy.ndimage import gaussian_filter  # type: ignore[import-untyped]

    sigmas = [sigma if axis in axes else 0.0 for axis in range(image.ndim)]
    return gaussian_filter(image, sigma=sigmas, mode="nearest")


def _check_fill(fill: Any) -> Any:
    """``fill`` if it is a finite number, ``"blur"``, ``"mean"`` or images of finite numbers
    (their shape is checked against each explained image); errors name ``fill``."""
    if isinstance(fill, str):
        if fill not in ("blur", "mean"):
            raise InvalidArgumentError(
                f"fill must be a number, 'blur', 'mean' or background images, got {fill!r}",
                argument="fill",
            )
        return fill
    if hasattr(fill, "shape") and getattr(fill, "ndim", 0) > 0:
        _check_numbers(fill, "fill")
        return fill
    if isinstance(fill, bool) or not isinstance(fill, numbers.Real):
        raise InvalidTypeError(
            f"fill must be a number, 'blur', 'mean' or images, got {type(fill).__name__}",
            argument="fill",
        )
    return check_real(fill, "fill")


def _check_numbers(images: Any, name: str) -> None:
    """Raise unless ``images`` (of any array library; read through a host copy) hold finite
    numbers."""
    host = to_numpy(images)
    if host.dtype.kind not in "biuf":
        raise InvalidTypeError(f"{name} must hold numbers, got dtype {host.dtype}", argument=name)
    check_finite(host, name)


def _check_segments(segments: Any) -> np.ndarray:
    labels = np.asarray(segments)
    if labels.ndim != 2 or labels.size == 0 or labels.dtype.kind not in "iu":
        raise InvalidArgumentError(
            f"segments must be a non-empty integer label map [H, W], got dtype {labels.dtype} "
            f"and shape {labels.shape}",
            argument="segments",
        )
    return labels
