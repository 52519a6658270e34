"""Resumable Parquet output: a rerun resumes only with the settings the folder was written with,
``overwrite=True`` starts over, and ``kill -9`` at any moment never loses or duplicates rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from collections import deque
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ferroshap as fs
from ferroshap.datasets.parquet import MANIFEST, explain_parquet

N, ROWS = 5, 600
COLUMNS = [f"f{i}" for i in range(N)]


def model(z: np.ndarray) -> np.ndarray:
    return np.tanh(z[:, 0] - z[:, 1]) + z[:, 2] * z[:, 3] + 0.5 * z[:, 4]


def background(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(8, N))


def make_explainer(**settings) -> fs.Explainer:
    options = {"budget": 24, "seed": 7, "method": "leverage", **settings}
    return fs.Explainer(model, options.pop("background", background()), **options)


def write_table(path: Path, rows: int = ROWS) -> Path:
    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"id": np.arange(rows)}).hstack(
        [pl.Series(c, rng.normal(size=rows)) for c in COLUMNS]
    )
    frame.write_parquet(path)
    return path


def read_output(out: Path) -> pl.DataFrame:
    return pl.read_parquet(out / "*.parquet").sort("id")


def parts(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("part-*.parquet"))


@pytest.fixture
def rows(tmp_path: Path) -> Path:
    return write_table(tmp_path / "rows.parquet")


def interrupted_run(rows: Path, out: Path, kept_parts: int = 4, **settings) -> None:
    """A run at ``chunk_size=50`` stopped after ``kept_parts`` parts (the later ones deleted)."""
    explain_parquet(rows, out, make_explainer(), COLUMNS, keys=["id"], chunk_size=50, **settings)
    for name in parts(out)[kept_parts:]:
        (out / name).unlink()


def test_a_rerun_with_the_same_settings_resumes(rows, tmp_path) -> None:
    out, clean = tmp_path / "out", tmp_path / "clean"
    interrupted_run(rows, out)
    written = {name: (out / name).stat().st_mtime_ns for name in parts(out)}
    calls = []

    def counted(z: np.ndarray) -> np.ndarray:
        calls.append(len(z))
        return model(z)

    # Another model object with the same settings resumes (the model itself is not recorded).
    resumed = fs.Explainer(counted, background(), budget=24, seed=7, method="leverage")
    explain_parquet(rows, out, resumed, COLUMNS, keys=["id"], chunk_size=50)
    assert all((out / name).stat().st_mtime_ns == t for name, t in written.items())
    assert len(parts(out)) == ROWS // 50
    explain_parquet(rows, clean, make_explainer(), COLUMNS, keys=["id"], chunk_size=50)
    assert_frame_equal(read_output(out), read_output(clean), check_exact=True)
    assert read_output(out)["id"].to_list() == list(range(ROWS))
    calls.clear()
    explain_parquet(rows, out, resumed, COLUMNS, keys=["id"], chunk_size=50)  # complete: no work
    assert calls == []


@pytest.mark.parametrize("chunk_size", [80, 30])
def test_another_chunk_size_is_refused(rows, tmp_path, chunk_size) -> None:
    # The case: 600 rows, 4 parts of 50 written; resuming at 80 lost ids 200-319 and at
    # 30 wrote ids 120-199 twice.
    out = tmp_path / "out"
    interrupted_run(rows, out)
    with pytest.raises(fs.InvalidArgumentError) as caught:
        explain_parquet(rows, out, make_explainer(), COLUMNS, keys=["id"], chunk_size=chunk_size)
    assert caught.value.argument == "chunk_size"
    assert f"chunk_size: the output folder was written with 50, this call has {chunk_size}" in str(
        caught.value
    )
    assert "overwrite=True" in str(caught.value)
    assert len(parts(out)) == 4  # untouched


REFUSED = {
    "budget": ({"explainer": make_explainer(budget=26)}, "explainer", "explainer.budget"),
    "seed": ({"explainer": make_explainer(seed=8)}, "explainer", "explainer.seed"),
    "method": ({"explainer": make_explainer(method="kernel")}, "explainer", "explainer.method"),
    "paired": ({"explainer": make_explainer(paired=False)}, "explainer", "explainer.paired"),
    "background": (
        {"explainer": make_explainer(background=background(2))},
        "explainer",
        "explainer.background",
    ),
    "background dtype": (
        {"explainer": make_explainer(background=background().astype(np.float32))},
        "explainer",
        "explainer.background",
    ),
    "columns": ({"columns": COLUMNS[::-1]}, "columns", "columns"),
    "keys": ({"keys": []}, "keys", "keys"),
}


@pytest.mark.parametrize("change", REFUSED, ids=list(REFUSED))
def test_each_other_setting_is_refused_by_name(rows, tmp_path, change) -> None:
    out = tmp_path / "out"
    interrupted_run(rows, out)
    manifest = (out / MANIFEST).read_text()
    arguments, blamed, entry = REFUSED[change]
    call = {"explainer": make_explainer(), "columns": COLUMNS, "keys": ["id"], **arguments}
    with pytest.raises(fs.InvalidArgumentError, match=f"{entry}: the output folder") as caught:
        explain_parquet(rows, out, chunk_size=50, **call)
    assert caught.value.argument == blamed
    assert (out / MANIFEST).read_text() == manifest
    assert len(parts(out)) == 4


def test_another_input_file_is_refused(rows, tmp_path) -> None:
    out = tmp_path / "out"
    interrupted_run(rows, out)
    longer = write_table(tmp_path / "longer.parquet", ROWS + 10)
    with pytest.raises(fs.InvalidArgumentError, match=r"path_in\.rows: .* 600, .* 610") as caught:
        explain_parquet(longer, out, make_explainer(), COLUMNS, keys=["id"], chunk_size=50)
    assert caught.value.argument == "path_in"


def test_a_sketch_cannot_resume_an_explainers_folder(tmp_path) -> None:
    sequences = tmp_path / "sequences.parquet"
    pl.DataFrame({"id": [0, 1, 2], "s": ["ACCA", "CCAA", "AAAC"]}).write_parquet(sequences)

    def sketch(letter: str) -> fs.FourierSketch:
        counts = lambda batch: np.array([float(s.count(letter)) for s in batch])  # noqa: E731
        return fs.FourierSketch.fit(counts, 4, "AC", budget=200)

    out = tmp_path / "out"
    explain_parquet(sequences, out, sketch("A"), ["s"], keys=["id"], chunk_size=2)
    with pytest.raises(fs.InvalidArgumentError, match=r"explainer\.coefficients"):
        explain_parquet(sequences, out, sketch("C"), ["s"], keys=["id"], chunk_size=2)
    explain_parquet(sequences, out, sketch("A"), ["s"], keys=["id"], chunk_size=2)  # resumes


def test_proxyspex_settings_are_checked(tmp_path) -> None:
    few = write_table(tmp_path / "few.parquet", 3)
    out = tmp_path / "out"

    def spex(seed: int) -> fs.ProxySPEX:
        return fs.ProxySPEX(model, masker=fs.maskers.Baseline(background()), budget=64, seed=seed)

    # With 5 features the budget covers every coalition: exact values, one warning per row.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        explain_parquet(few, out, spex(3), COLUMNS, keys=["id"], chunk_size=2)
        explain_parquet(few, out, spex(3), COLUMNS, keys=["id"], chunk_size=2)  # resumes
    with pytest.raises(fs.InvalidArgumentError, match=r"explainer\.seed: .* 3, .* 4"):
        explain_parquet(few, out, spex(4), COLUMNS, keys=["id"], chunk_size=2)


def test_overwrite_starts_over(rows, tmp_path) -> None:
    out, clean = tmp_path / "out", tmp_path / "clean"
    interrupted_run(rows, out)
    (out / "part-000004.parquet.partial").write_bytes(b"left by a crash")
    explain_parquet(
        rows, out, make_explainer(), COLUMNS, keys=["id"], chunk_size=80, overwrite=True
    )
    assert parts(out) == [f"part-{i:06d}.parquet" for i in range(-(-ROWS // 80))]
    assert sorted(p.name for p in out.iterdir() if "part-" not in p.name) == [MANIFEST]
    assert json.loads((out / MANIFEST).read_text())["chunk_size"] == 80
    explain_parquet(rows, clean, make_explainer(), COLUMNS, keys=["id"], chunk_size=80)
    assert_frame_equal(read_output(out), read_output(clean), check_exact=True)


def test_parts_without_a_manifest_are_refused(rows, tmp_path) -> None:
    out = tmp_path / "out"
    interrupted_run(rows, out)
    (out / MANIFEST).unlink()  # as an older ferroshap left it
    with pytest.raises(fs.InvalidArgumentError, match=r"no manifest\.json") as caught:
        explain_parquet(rows, out, make_explainer(), COLUMNS, keys=["id"], chunk_size=50)
    assert caught.value.argument == "path_out"
    (out / MANIFEST).write_text("not json")
    with pytest.raises(fs.InvalidArgumentError, match="not a ferroshap manifest"):
        explain_parquet(rows, out, make_explainer(), COLUMNS, keys=["id"], chunk_size=50)
    explain_parquet(
        rows, out, make_explainer(), COLUMNS, keys=["id"], chunk_size=50, overwrite=True
    )
    assert read_output(out)["id"].to_list() == list(range(ROWS))


# ---- kill -9 at random moments --------------------------------------------------------------

CHILD = """
import io, os, signal, sys

import polars as pl
import pyarrow.parquet

sys.path.insert(0, {tests!r})
from test_resume import COLUMNS, make_explainer
from ferroshap.datasets.parquet import explain_parquet, frame_explainer

path_in, path_out, hook = sys.argv[1:]
if hook:  # "before:k" / "after:k": SIGKILL itself around the k-th file it publishes
    when, k = hook.split(":")
    replace, published = os.replace, []

    def replace_then_die(source, target):
        published.append(target)
        if when == "before" and len(published) == int(k):
            os.kill(os.getpid(), signal.SIGKILL)
        replace(source, target)
        if when == "after" and len(published) == int(k):
            os.kill(os.getpid(), signal.SIGKILL)

    os.replace = replace_then_die
explainer = make_explainer()
# Warm up (first model call, Parquet writer) so that the run starts at once on "go".
first = pl.read_parquet(path_in, n_rows={chunk_size})
frame_explainer(explainer, COLUMNS, keys=["id"])(first).write_parquet(io.BytesIO())
print("ready", flush=True)
sys.stdin.readline()
explain_parquet(path_in, path_out, explainer, COLUMNS, keys=["id"], chunk_size={chunk_size})
"""


@pytest.fixture
def children():
    """The test's child processes; any left running (after a failure) are killed."""
    started: list[subprocess.Popen] = []
    yield started
    for child in started:
        if child.poll() is None:
            child.kill()
            child.wait()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()


@pytest.mark.slow
def test_kill_9_at_random_moments_loses_and_duplicates_nothing(rows, tmp_path, children) -> None:
    chunk_size, timed_kills = 10, 21
    out, clean = tmp_path / "out", tmp_path / "clean"
    started = time.perf_counter()
    explain_parquet(rows, clean, make_explainer(), COLUMNS, keys=["id"], chunk_size=chunk_size)
    seconds = time.perf_counter() - started
    expected = {name: pl.read_parquet(clean / name) for name in parts(clean)}

    script = tmp_path / "child.py"
    script.write_text(CHILD.format(tests=str(Path(__file__).parent), chunk_size=chunk_size))
    package = str(Path(fs.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([package, os.environ.get("PYTHONPATH", "")])}

    def start(hook: str = "") -> subprocess.Popen:
        """A child that imports and builds its explainer, says "ready", waits for a line."""
        child = subprocess.Popen(
            [sys.executable, str(script), str(rows), str(out), hook],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        children.append(child)
        return child

    def go(child: subprocess.Popen) -> None:
        """Once ``child`` is ready, let it run."""
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        assert child.stdin is not None
        child.stdin.write(b"go\n")
        child.stdin.flush()

    def finish(child: subprocess.Popen) -> int:
        """Wait for ``child`` and close its pipes; its exit status (-9 when killed)."""
        status = child.wait(timeout=120)
        for pipe in (child.stdin, child.stdout):
            assert pipe is not None
            pipe.close()
        return status

    def check_folder() -> None:
        """Whatever a kill left: parts only under a manifest, each complete and correct."""
        written = parts(out)
        assert not written or (out / MANIFEST).exists()
        for name in written:
            assert_frame_equal(pl.read_parquet(out / name), expected[name], check_exact=True)

    # Children start a few ahead of their turn, so that Python's startup (about 1 s) overlaps
    # the runs instead of adding up.
    hooks = ["before:1", "after:1", "before:1"]
    hooked = [start(hook) for hook in hooks]
    waiting = deque(start() for _ in range(3))

    # Deterministic kills around the first files published: just before and after the
    # manifest's rename (the manifest write itself interrupted), then before the first part's.
    leftovers = [[f"{MANIFEST}.partial"], [MANIFEST], [MANIFEST, "part-000000.parquet.partial"]]
    for child, left in zip(hooked, leftovers, strict=True):
        go(child)
        assert finish(child) == -9
        assert sorted(p.name for p in out.iterdir()) == left
        check_folder()

    # Kills at random moments, each child resuming the folder its predecessors left: the first
    # ones right at the start (during the manifest check), then once the run has written a
    # random number (0-3) of further parts, after a random fraction of the time one part takes.
    # Waiting for parts rather than for a fixed time keeps the kills spread over the run
    # however loaded the machine is.
    rng = np.random.default_rng(2024)
    per_part = seconds / len(expected)
    alive_at_kill, progress = 0, []
    for kill in range(timed_kills):
        child = waiting.popleft()
        go(child)
        waiting.append(start())
        if kill >= 3:
            target = min(len(parts(out)) + int(rng.integers(0, 4)), len(expected) - 3)
            while len(parts(out)) < target and child.poll() is None:
                time.sleep(0.002)
            time.sleep(rng.uniform(0.0, per_part))
        alive_at_kill += child.poll() is None
        child.kill()
        finish(child)
        progress.append(len(parts(out)))
        check_folder()
    for child in waiting:  # the first finishes the run, the others find it complete
        go(child)
        assert finish(child) == 0

    result = read_output(out)
    assert result["id"].to_list() == list(range(ROWS))  # each id exactly once
    assert_frame_equal(result, read_output(clean), check_exact=True)
    assert alive_at_kill == timed_kills, progress  # no kill came after the run had ended
    assert len(set(progress)) >= 5, progress  # the kills spread over the run
