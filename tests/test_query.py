"""The query layer under every engine: chunks, out-of-memory halving, the shared keywords, and
the one-release aliases of the old spellings."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import DeviceMemoryError, InvalidTypeError
from ferroshap.query import loop as heap
from ferroshap.query.loop import QueryOptions, query, units_per_call

N = 6


class Counting:
    """A linear model that records its batch sizes and runs out of memory above ``limit`` rows."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit, self.sizes = limit, []
        self.w = np.arange(1.0, N + 1.0)

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        self.sizes.append(len(batch))
        if self.limit is not None and len(batch) > self.limit:
            raise MemoryError(f"{len(batch)} rows")
        return np.asarray(batch, dtype=np.float64) @ self.w


def test_query_halves_chunks_on_out_of_memory() -> None:
    sizes: list[int] = []

    def values(start: int, stop: int) -> np.ndarray:
        sizes.append(stop - start)
        if stop - start > 3:
            raise MemoryError
        return np.arange(start, stop, dtype=float)[:, None]

    out = query(20, 16, values, progress=False, desc="")
    np.testing.assert_array_equal(out[:, 0], np.arange(20.0))
    assert sizes[:3] == [16, 8, 4] and max(sizes[3:]) == 2
    with pytest.raises(DeviceMemoryError, match="one unit"):
        query(4, 4, lambda a, b: (_ for _ in ()).throw(MemoryError()), progress=False, desc="")


def test_units_per_call_sizes_by_bytes_or_batch_size() -> None:
    assert units_per_call(QueryOptions(max_bytes=1000), unit_bytes=100, unit_rows=5) == 10
    assert units_per_call(QueryOptions(batch_size=12), unit_bytes=100, unit_rows=5) == 2
    assert units_per_call(QueryOptions(batch_size=1), unit_bytes=100, unit_rows=5) == 1


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(5, N)), rng.normal(size=(2, N))


def test_explainer_chunks_and_halves(data) -> None:
    background, X = data
    truth = fs.Explainer(Counting(), background, method="exact")(X).values
    model = Counting()
    chunked = fs.Explainer(model, background, method="exact", batch_size=10)(X)
    assert max(model.sizes[1:]) == 10  # two (coalition, row) pairs of 5 background rows
    np.testing.assert_allclose(chunked.values, truth, rtol=0, atol=1e-12)
    model = Counting(limit=40)
    halved = fs.Explainer(model, background, method="exact", batch_size=160)(X)
    assert 160 in model.sizes and max(s for s in model.sizes[1:] if s <= 40) == 40
    np.testing.assert_allclose(halved.values, truth, rtol=0, atol=1e-12)


class Recording(Counting):
    """:class:`Counting` that also keeps a copy of every batch it is given."""

    def __init__(self, limit: int | None = None) -> None:
        super().__init__(limit)
        self.batches: list[np.ndarray] = []

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        self.batches.append(batch.copy())
        return super().__call__(batch)


@pytest.mark.parametrize(
    ("limit", "groups", "dtype"),
    [(None, None, np.float64), (40, None, np.float64), (None, [[0, 2], [1, 3, 4]], np.float32)],
)
def test_inputs_filled_ahead_are_the_inputs_of_their_chunk(data, limit, groups, dtype) -> None:
    # with two workers the next chunks are filled on the core's thread while the model runs; one
    # worker fills each chunk when asked: the model must see the same batches either way, also
    # when a chunk runs out of memory and is halved (the chunks filled ahead are then dropped)
    background, X = (a.astype(dtype) for a in data)
    runs = {}
    for n_jobs in (1, 2):
        model = Recording(limit)
        ex = fs.Explainer(
            model,
            background,
            method="leverage",
            budget=40 if groups is None else 6,
            n_jobs=n_jobs,
            batch_size=80 if groups is None else 10,
            groups=groups,
        )
        runs[n_jobs] = model, ex(X).values
    (one, values_one), (two, values_two) = runs[1], runs[2]
    assert len(one.batches) == len(two.batches) > 4
    for a, b in zip(one.batches, two.batches, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(values_one, values_two)


def _os_threads() -> int | None:
    """Threads of this process, the core's own included (``None`` where /proc is missing)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def test_a_model_error_mid_query_leaves_no_filling_thread(data) -> None:
    import threading

    background, X = data
    calls = []

    def failing(batch: np.ndarray) -> np.ndarray:
        calls.append(len(batch))
        if len(calls) == 3:
            raise RuntimeError("model failed")
        return batch.sum(axis=1)

    settings = {"method": "leverage", "budget": 40, "n_jobs": 2, "batch_size": 20}
    fs.Explainer(lambda b: b.sum(axis=1), background, **settings)(X)  # pools the core keeps
    ex = fs.Explainer(failing, background, **settings)
    before, os_before = threading.active_count(), _os_threads()
    with pytest.raises(RuntimeError, match="model failed"):
        ex(X)
    assert threading.active_count() == before
    # the filler is a thread of the core's, unknown to `threading`: none left behind (a thread
    # of another test's may have ended meanwhile)
    if os_before is not None:
        assert _os_threads() <= os_before


def test_shapley_values_chunks_and_halves_a_raw_game() -> None:
    weights = np.arange(1.0, N + 1.0)
    sizes: list[int] = []

    def game(masks: np.ndarray) -> np.ndarray:
        sizes.append(len(masks))
        if len(masks) > 16:
            raise MemoryError
        return masks @ weights

    phi = fs.shapley_values(game, N, method="exact", batch_size=64)
    np.testing.assert_allclose(phi, weights, rtol=0, atol=1e-12)
    assert sizes[0] == 64 and max(sizes[2:]) == 16


def test_proxyspex_masker_chunks_and_halves(data) -> None:
    background, X = data
    model = Counting(limit=50)
    masker = fs.maskers.Baseline(background, batch_size=200)
    iv = fs.ProxySPEX(model, masker=masker, budget=60, max_order=1, index="SII").explain(X[0])
    assert 200 in model.sizes and max(s for s in model.sizes[1:] if s <= 50) <= 50
    truth = model.w * (X[0] - background.mean(axis=0))  # additive game: exact Shapley values
    np.testing.assert_allclose(iv.shapley_values().values[0], truth, atol=1e-9)


def test_fourier_sketch_chunks_and_halves() -> None:
    sizes: list[int] = []

    def model(codes: np.ndarray) -> np.ndarray:
        sizes.append(len(codes))
        if len(codes) > 100:
            raise MemoryError
        return (codes == 2).sum(axis=1).astype(np.float64)

    sketch = fs.FourierSketch.fit(
        model, 5, "ACGT", budget=2000, seed=0, input="codes", batch_size=400
    )
    assert sizes[0] == 400 and max(sizes[2:]) <= 100
    np.testing.assert_allclose(sketch.predict(["GGAGT"]), [3.0], atol=1e-9)


def test_torch_modules_get_tensors_on_their_device(data) -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    background, X = data
    seen: list[object] = []

    class Linear(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.arange(1.0, N + 1.0, dtype=torch.float64))

        def forward(self, z):
            seen.append(z)
            return z @ self.w

    module = Linear()
    game, n = fs.maskers.Baseline(background).game(module, X[0])
    game(np.ones((3, N), dtype=bool))
    codes = fs.FourierSketch.fit(lambda c: c.sum(1) * 1.0, 4, "AC", budget=200, input="codes")
    assert codes.n_players == 4
    assert n == N and all(isinstance(z, torch.Tensor) for z in seen)


def test_unknown_keywords_and_positional_extras_are_refused() -> None:
    with pytest.raises(TypeError):
        fs.Explainer(Counting(), np.zeros((1, N)), bach_size=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional argument"):
        fs.maskers.Baseline(np.zeros((1, N)), 2**20, 3)  # type: ignore[misc]


def test_options_by_position_and_old_names_are_refused() -> None:
    weights = np.arange(1.0, N + 1.0)
    game = lambda masks: masks @ weights  # noqa: E731
    background = np.zeros((1, N))
    for call in (
        lambda: fs.shapley_values(game, N, "exact"),
        lambda: fs.shapley_values(game, n=N, method="exact"),
        lambda: fs.Explainer(Counting(), background, "exact"),
        lambda: fs.maskers.Tokens(0, 8),
        lambda: fs.exact_interactions(game, N, "SV"),
    ):
        with pytest.raises(TypeError):
            call()
    assert not hasattr(fs.Explainer(Counting(), background), "n_features")
    assert not hasattr(fs.exact_interactions(game, N, index="SV"), "baseline_value")


def test_the_designs_spellings_of_the_player_count() -> None:
    weights = np.arange(1.0, N + 1.0)
    game = lambda masks: masks @ weights  # noqa: E731
    assert fs.ProxySPEX(game, n=N).n_players == N
    with pytest.raises(InvalidTypeError, match="same argument") as raised:
        fs.ProxySPEX(game, N, n=N)
    assert raised.value.argument == "n_players"
    sketch = fs.FourierSketch.fit(lambda s: [1.0] * len(s), length=3, alphabet="AC", budget=100)
    assert sketch.n_players == 3
    with pytest.raises(InvalidTypeError, match="alphabet"):
        fs.FourierSketch.fit(len, 3, budget=100)


FRESH_COPIES = """
import resource, numpy as np
from ferroshap.query.loop import query
query(1, 1, lambda a, b: np.zeros((1, 1)), progress=False, desc="")  # the first query
def model():  # makes three 2.4 MB arrays per call and frees them when it returns
    a = np.ones(300_000); b = a * 2.0; c = a + b
    return float(c[0])
start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(30):
    model()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start)
"""


@pytest.mark.skipif(not heap._is_glibc(), reason="the heap thresholds are glibc's")
def test_the_first_query_lets_glibc_reuse_pages_for_model_copies() -> None:
    """Without the warm-up every fresh multi-megabyte copy faults in new pages; with it, only
    the first ones do."""

    def faults(warmup: str) -> int:
        env = {**os.environ, "FERROSHAP_HEAP_WARMUP": warmup}
        run = subprocess.run(
            [sys.executable, "-c", FRESH_COPIES], env=env, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        return int(run.stdout)

    cold, warm = faults("0"), faults("1")
    assert cold > 30 * 3 * 500  # every array on fresh pages (~586 pages each)
    assert warm < cold / 5


def test_warm_heap_runs_once_per_process(monkeypatch) -> None:
    monkeypatch.setattr(heap, "_warmed", False)
    monkeypatch.setenv("FERROSHAP_HEAP_WARMUP", "0")
    assert not heap.warm_heap()  # turned off
    monkeypatch.setattr(heap, "_warmed", False)
    monkeypatch.delenv("FERROSHAP_HEAP_WARMUP")
    assert heap.warm_heap() == heap._is_glibc()
    assert not heap.warm_heap()  # once
