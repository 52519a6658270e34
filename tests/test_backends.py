"""Model queries on other array libraries: array-API (strict), PyTorch (when installed), model
adapters, link functions, out-of-memory retries and no per-coalition host-device copies."""

from __future__ import annotations

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import DeviceMemoryError, InvalidArgumentError, InvalidTypeError
from ferroshap.query.backend import ArrayBackend

xps = pytest.importorskip("array_api_strict", reason="array-api-strict is not installed")
try:
    import torch
except ImportError:  # CI does not install PyTorch; these tests run where it is installed
    torch = None

requires_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

N = 6


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(9, N)), rng.normal(size=(4, N)), rng.normal(size=N)


def numpy_model(w):
    def model(z):
        return np.tanh(z @ w) + z[:, 0] * z[:, 2]

    return model


def strict_model(w):
    w_strict = xps.asarray(w)

    def model(z):
        return xps.tanh(xps.sum(z * w_strict, axis=1)) + z[:, 0] * z[:, 2]

    return model


def test_array_api_matches_numpy(data) -> None:
    background, X, w = data
    expected = fs.Explainer(numpy_model(w), background, budget=40, seed=3, method="leverage")(X)
    got = fs.Explainer(
        strict_model(w), xps.asarray(background), budget=40, seed=3, method="leverage"
    )(xps.asarray(X))
    # Same design, same game; only the order of float operations in the model differs.
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.base_values, expected.base_values, rtol=1e-12)
    np.testing.assert_allclose(got.data, X)


def test_inputs_cross_to_the_device_once_per_design_not_per_coalition(data, monkeypatch) -> None:
    background, X, w = data
    transfers = []
    original = ArrayBackend.asarray

    def counting(self, array, dtype=None):
        transfers.append(np.asarray(array).shape)
        return original(self, array, dtype)

    monkeypatch.setattr(ArrayBackend, "asarray", counting)
    for budget in (16, 60):
        transfers.clear()
        fs.Explainer(
            strict_model(w), xps.asarray(background), budget=budget, batch_size=9, method="leverage"
        )(xps.asarray(X))
        # Exactly one host-to-device copy: the design's masks, whatever the number of
        # coalitions and chunks (batch_size=9 forces one coalition per model call).
        assert len(transfers) == 1 and transfers[0][1] == N


def test_mismatched_libraries_name_both(data) -> None:
    background, X, w = data
    explainer = fs.Explainer(strict_model(w), xps.asarray(background), budget=16, method="leverage")
    with pytest.raises(InvalidArgumentError, match=r"X is a numpy array but background"):
        explainer(X)


def test_out_of_memory_halves_the_chunk_then_names_it(data) -> None:
    background, X, w = data
    model = numpy_model(w)

    class OutOfMemoryError(RuntimeError):
        """Stands in for torch.cuda.OutOfMemoryError / cupy's."""

    def picky(z):
        if len(z) > 4 * len(background):
            raise OutOfMemoryError("CUDA out of memory")
        return model(z)

    expected = fs.Explainer(model, background, budget=30, seed=0, method="leverage")(X).values
    got = fs.Explainer(picky, background, budget=30, seed=0, batch_size=10**6, method="leverage")(
        X
    ).values
    np.testing.assert_array_equal(got, expected)

    calls = []

    def hopeless(z):
        calls.append(len(z))
        if len(calls) > 1:  # v(∅) on the background works, nothing after it
            raise OutOfMemoryError("CUDA out of memory")
        return model(z)

    with pytest.raises(DeviceMemoryError, match="batch_size"):
        fs.Explainer(hopeless, background, budget=30, method="leverage")(X)


def test_keyboard_interrupt_is_not_swallowed(data) -> None:
    background, X, w = data
    calls = []

    def interrupted(z):
        calls.append(len(z))
        if len(calls) > 2:
            raise KeyboardInterrupt
        return numpy_model(w)(z)

    with pytest.raises(KeyboardInterrupt):
        fs.Explainer(interrupted, background, budget=30, batch_size=9, method="leverage")(X)


def test_predict_proba_with_logit_link_equals_decision_function() -> None:
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    X_all = rng.normal(size=(200, N))
    y = (X_all[:, 0] + X_all[:, 1] * X_all[:, 2] > 0).astype(int)
    classifier = LogisticRegression().fit(X_all, y)
    baseline, rows = X_all[:1], X_all[1:4]  # one baseline row: link and mean commute
    by_proba = fs.Explainer(
        classifier,
        baseline,
        method="exact",
        model_output="predict_proba",
        output_index=1,
        link="logit",
    )(rows)
    by_margin = fs.Explainer(
        classifier, baseline, method="exact", model_output="decision_function"
    )(rows)
    np.testing.assert_allclose(by_proba.values, by_margin.values, atol=1e-9)
    np.testing.assert_allclose(by_proba.base_values, by_margin.base_values, atol=1e-9)


def test_bad_model_options_are_named(data) -> None:
    background, X, w = data
    with pytest.raises(InvalidArgumentError, match="model_output"):
        fs.Explainer(numpy_model(w), background, model_output="logits", method="leverage")
    with pytest.raises(InvalidTypeError, match="predict_proba"):
        fs.Explainer(numpy_model(w), background, model_output="predict_proba", method="leverage")
    with pytest.raises(InvalidArgumentError, match="link"):
        fs.Explainer(numpy_model(w), background, link="probit", method="leverage")
    with pytest.raises(InvalidArgumentError, match="output_index"):
        fs.Explainer(numpy_model(w), background, output_index=1, budget=16, method="leverage")(X)
    with pytest.raises(InvalidArgumentError, match="logit"):
        fs.Explainer(numpy_model(w), background, link="logit", budget=16, method="leverage")(X)


@pytest.mark.torch
@requires_torch
class TestTorch:
    """PyTorch on the CPU (CI does not install torch; these run where it is installed)."""

    def mlp(self):
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(N, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2)
        ).double()

    def test_module_with_numpy_data_matches_a_numpy_wrapper(self, data) -> None:
        background, X, _ = data
        module = self.mlp()

        def as_numpy(z):
            with torch.no_grad():
                return module(torch.from_numpy(z)).numpy()

        expected = fs.Explainer(as_numpy, background, budget=40, seed=1, method="leverage")(X)
        got = fs.Explainer(module, background, budget=40, seed=1, method="leverage")(X)
        assert got.values.shape == (len(X), N, 2)
        np.testing.assert_allclose(got.values, expected.values, rtol=1e-9, atol=1e-12)

    def test_tensor_inputs_and_outputs_with_gradients(self, data) -> None:
        background, X, w = data
        weights = torch.tensor(w, requires_grad=True)

        def model(z):
            return torch.tanh(z @ weights) + z[:, 0] * z[:, 2]

        expected = fs.Explainer(numpy_model(w), background, budget=40, seed=2, method="leverage")(X)
        got = fs.Explainer(
            model, torch.from_numpy(background), budget=40, seed=2, method="leverage"
        )(torch.from_numpy(X))
        np.testing.assert_allclose(got.values, expected.values, rtol=1e-10, atol=1e-12)
        assert isinstance(got.data, np.ndarray)

    def test_float32_module(self, data) -> None:
        background, X, _ = data
        module = self.mlp().float()
        got = fs.Explainer(module, background, budget=40, output_index=0, method="leverage")(X)
        assert got.values.shape == (len(X), N) and np.isfinite(got.values).all()


def test_jax_arrays_match_numpy(data) -> None:
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    background, X, w = data
    expected = fs.Explainer(numpy_model(w), background, budget=40, seed=4, method="leverage")(X)

    def model(z):
        return jnp.tanh(z @ w) + z[:, 0] * z[:, 2]

    got = fs.Explainer(model, jnp.asarray(background), budget=40, seed=4, method="leverage")(
        jnp.asarray(X)
    )
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-10, atol=1e-12)
