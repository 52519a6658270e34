"""ferroshap: Rust-accelerated Shapley values, driven from Python.

Every estimator follows plan → query → estimate: the compiled core plans the coalitions to
evaluate, Python evaluates the model on them in large batches, and the core turns the values
into Shapley values.

Examples
--------
>>> import numpy as np, ferroshap as fs
>>> rng = np.random.default_rng(0)
>>> background, X = rng.normal(size=(100, 8)), rng.normal(size=(5, 8))
>>> ex = fs.Explainer(lambda z: np.sin(z).sum(1), background, budget=128)(X)
>>> ex.values.shape
(5, 8)

Raw games take boolean coalition masks ``[k, n]``:

>>> fs.shapley_values(lambda masks: masks.sum(axis=1) ** 2.0, 4, method="exact")
array([4., 4., 4., 4.])
"""

from ferroshap import _core, maskers
from ferroshap._core import (
    DeviceMemoryError,
    FerroshapError,
    InvalidArgumentError,
    InvalidTypeError,
    __version__,
)
from ferroshap.interactions.exact import exact_interactions
from ferroshap.interactions.proxyspex import ProxySPEX
from ferroshap.results.explanation import Explanation
from ferroshap.results.interactions import INDICES, Interactions
from ferroshap.sampling.auto import AUTO, PROXY_METHODS
from ferroshap.sampling.engine import shapley_values
from ferroshap.sampling.explainer import Explainer
from ferroshap.sketch.sketch import FourierSketch, SequenceInteractions

METHODS: list[str] = [AUTO, *_core.METHODS]
"""Every sampling method name: ``"auto"`` (the default) and the compiled core's methods."""

__all__ = [
    "INDICES",
    "METHODS",
    "PROXY_METHODS",
    "DeviceMemoryError",
    "Explainer",
    "Explanation",
    "FerroshapError",
    "FourierSketch",
    "Interactions",
    "InvalidArgumentError",
    "InvalidTypeError",
    "ProxySPEX",
    "SequenceInteractions",
    "__version__",
    "exact_interactions",
    "maskers",
    "shapley_values",
]
